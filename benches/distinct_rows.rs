//! LAS, FTF, makespan, max-sum throughput, water-filling and hierarchical (5 `fairness` entities
//! of weights 1–5, job m in entity m mod 5; nested: the same 5 under 2 `fairness` orgs of weights
//! 1 and 2) when every job has its own throughput row (Gavel-like rows times a
//! lognormal factor, σ = 0.1, per job and type; 3 types, scale factors 1/2/4/8, n/4 GPUs of each
//! type): the price decomposition against the plain LP over classes (`method: lp`), same run.
//! FTF runs twice: on jobs that just arrived (one max-min ratio), and on jobs under way (each has
//! run up to 10 hours, 20–90% of that time in isolation), where it searches on ρ.
//!
//! With no environment this is a smoke test (`cargo test --benches`): one size, both methods, the
//! objectives agree and the decomposition certified its optimum. `ARBITER_BENCH_TABLE=1` prints the
//! markdown table of `scripts/bench-distinct`: every case runs in a child process of its own
//! (`ARBITER_BENCH_CASE=policy:jobs:method`), which reports its solve time and its peak resident
//! memory (VmHWM), so the sizes do not share a heap. The allocator is the binary's, mimalloc: with
//! glibc's, the first large allocation of the solve paid for consolidating the million small
//! blocks the instance's construction had just freed (an eighth of LAS's time at 2^20 jobs).

use arbiter::lp::Backend;
use arbiter::max_min_ratio::Method;
use arbiter::policies::{self, PolicyKind};
use arbiter::request::{EntitySpec, Request};
use arbiter::Problem;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "support/workload.rs"]
mod workload;
use workload::{cluster, distinct_jobs};

const SIZES: [usize; 5] = [2048, 16384, 65536, 262_144, 1_048_576];
/// The reference path runs up to this size (it grows super-linearly past it).
const REFERENCE_MAX: usize = 65536;
/// The reference path is stopped after this long (the table then shows a lower bound).
const REFERENCE_LIMIT: Duration = Duration::from_secs(40);
const POLICIES: [PolicyKind; 4] =
    [PolicyKind::MaxMinFairness, PolicyKind::FinishTimeFairness, PolicyKind::MinMakespan, PolicyKind::MaxSumThroughput];
/// Water-filling and hierarchical in the table (not the smoke test: their plain LPs take seconds
/// at 2,048 jobs), up to this size.
const WATER_FILLING_MAX: usize = 65536;
/// The placement-sensitive variants up to this size (every level is an LP over all the jobs).
const SPREAD_MAX: usize = 16384;
/// Hierarchical's entities: 5 `fairness` roots of these weights.
const ENTITY_WEIGHTS: [f64; 5] = [1.0, 2.0, 3.0, 4.0, 5.0];
/// The nested variant's orgs above them: weight and teams.
const ORGS: [(f64, &[usize]); 2] = [(1.0, &[0, 1]), (2.0, &[2, 3, 4])];
/// The nested variant's name in the table and in `ARBITER_BENCH_CASE`.
const NESTED: &str = "hierarchical_nested";
/// FTF on jobs under way: its name in the table and in `ARBITER_BENCH_CASE`.
const UNDER_WAY: &str = "finish_time_fairness_under_way";
/// The placement-sensitive variants' names in the table and in `ARBITER_BENCH_CASE`.
const WATER_FILLING_SPREAD: &str = "max_min_fairness_water_filling_spread";
const HIERARCHICAL_SPREAD: &str = "hierarchical_spread";
/// A multi-GPU job's throughput spread over servers, as a share of its consolidated one (drawn
/// per job).
const SPREAD: (f64, f64) = (0.5, 0.9);
/// The jobs under way have run up to this long (seconds).
const LONGEST_ELAPSED: f64 = 36_000.0;
/// σ of the per-entry lognormal noise.
const SIGMA: f64 = 0.1;
/// Agreement required between the two methods' objectives.
const OBJECTIVE_TOLERANCE: f64 = 1e-7;

/// A case: a policy, and a variant of its workload.
#[derive(Clone, Copy, PartialEq)]
struct Case {
    policy: PolicyKind,
    variant: Variant,
}

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Plain,
    /// `hierarchical`: the entities nest.
    Nested,
    /// The jobs are under way (time elapsed, some of it in isolation).
    UnderWay,
    /// Placement sensitivity: every multi-GPU job also gives its throughput spread over servers
    /// (`SPREAD` of the consolidated one). The decomposition does not formulate it, so the fast
    /// path is `method: auto`: water-filling's levels galloping on the plain LP.
    Spread,
}

impl Case {
    fn of(policy: PolicyKind) -> Case {
        Case { policy, variant: Variant::Plain }
    }

    const NESTED: Case = Case { policy: PolicyKind::Hierarchical, variant: Variant::Nested };
    const UNDER_WAY: Case = Case { policy: PolicyKind::FinishTimeFairness, variant: Variant::UnderWay };
    const SPREAD: [Case; 2] = [
        Case { policy: PolicyKind::MaxMinFairnessWaterFilling, variant: Variant::Spread },
        Case { policy: PolicyKind::Hierarchical, variant: Variant::Spread },
    ];

    /// The method timed against `method: lp`.
    fn fast(self) -> Method {
        match self.variant {
            Variant::Spread => Method::Auto,
            _ => Method::Decomposition,
        }
    }

    fn name(self) -> &'static str {
        match self.variant {
            Variant::Plain => self.policy.name(),
            Variant::Nested => NESTED,
            Variant::UnderWay => UNDER_WAY,
            Variant::Spread => match self.policy {
                PolicyKind::Hierarchical => HIERARCHICAL_SPREAD,
                _ => WATER_FILLING_SPREAD,
            },
        }
    }

    fn from_name(name: &str) -> Option<Case> {
        match name {
            NESTED => Some(Case::NESTED),
            UNDER_WAY => Some(Case::UNDER_WAY),
            WATER_FILLING_SPREAD => Some(Case::SPREAD[0]),
            HIERARCHICAL_SPREAD => Some(Case::SPREAD[1]),
            _ => PolicyKind::from_name(name).map(Case::of),
        }
    }
}

fn problem(case: Case, n: usize, method: Method) -> Problem {
    let policy = case.policy;
    let mut request = Request {
        policy: policy.name().to_string(),
        heterogeneity_aware: Some(true),
        space_sharing: Some(false),
        cluster: cluster(n),
        jobs: distinct_jobs(n, SIGMA),
        ..Request::default()
    };
    if policy == PolicyKind::Hierarchical {
        let name = |e: usize| format!("e{e}");
        let entity = |w: f64| EntitySpec { weight: Some(w), policy: Some("fairness".into()), parent: None };
        let mut entities: std::collections::BTreeMap<String, EntitySpec> =
            ENTITY_WEIGHTS.iter().enumerate().map(|(e, &w)| (name(e), entity(w))).collect();
        if case.variant == Variant::Nested {
            for (o, &(weight, teams)) in ORGS.iter().enumerate() {
                entities.insert(format!("org{o}"), entity(weight));
                for &team in teams {
                    entities.get_mut(&name(team)).expect("a team").parent = Some(format!("org{o}"));
                }
            }
        }
        request.entities = Some(entities);
        for (m, job) in request.jobs.iter_mut().enumerate() {
            job.entity = Some(name(m % ENTITY_WEIGHTS.len()));
        }
    }
    if case.variant == Variant::UnderWay {
        let mut rng = workload::Rng(0x0E1A_95ED ^ n as u64);
        for job in &mut request.jobs {
            let elapsed = rng.uniform(0.0, LONGEST_ELAPSED);
            job.time_elapsed = Some(elapsed);
            job.isolated_time_elapsed = Some(elapsed * rng.uniform(0.2, 0.9));
        }
    }
    if case.variant == Variant::Spread {
        let mut rng = workload::Rng(0x005B_8EAD ^ n as u64);
        for job in request.jobs.iter_mut().filter(|j| j.scale_factor.unwrap_or(1.0) > 1.0) {
            let share = rng.uniform(SPREAD.0, SPREAD.1);
            job.unconsolidated_throughput =
                job.throughput.iter().map(|(w, t)| (w.clone(), t.map(|t| t * share))).collect();
        }
    }
    let mut problem = Problem::from_request(&request).expect("the generated request is valid");
    problem.method = method;
    problem
}

/// One solve: its wall time, objective and the method that ran (with its fallback, if any).
struct Run {
    time: Duration,
    objective: f64,
    method: String,
}

fn run(problem: &Problem) -> Run {
    let start = Instant::now();
    let outcome = policies::solve(problem, Backend::default()).expect("the instance solves");
    let time = start.elapsed();
    let method = match &outcome.method {
        Some(report) => match &report.fallback {
            Some(why) => format!("{} (fallback: {why})", report.method),
            None => report.method.clone(),
        },
        None => "lp".into(),
    };
    Run { time, objective: outcome.objective.expect("an objective"), method }
}

/// Peak resident memory of this process, in MiB (`VmHWM`).
fn peak_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Child mode: one case, the best of three runs when a run takes under a second; prints
/// `seconds objective peak_mib method`.
fn child(spec: &str) {
    let parts: Vec<&str> = spec.split(':').collect();
    let case = Case::from_name(parts[0]).expect("a policy name");
    let n: usize = parts[1].parse().expect("a job count");
    let method = Method::from_name(parts[2]).expect("a method name");
    let problem = problem(case, n, method);
    let mut best = run(&problem);
    if best.time < Duration::from_secs(1) {
        for _ in 0..2 {
            let again = run(&problem);
            if again.time < best.time {
                best = again;
            }
        }
    }
    println!("{} {} {} {}", best.time.as_secs_f64(), best.objective, peak_mib(), best.method);
}

/// Runs one case in a child process: `(seconds, objective, peak MiB, method)`, or `None` when it
/// takes longer than `limit` (the child is then stopped).
fn spawn(case: Case, n: usize, method: Method, limit: Duration) -> Option<(f64, f64, f64, String)> {
    let exe = std::env::current_exe().expect("the bench binary's path");
    let mut child = Command::new(exe)
        .env("ARBITER_BENCH_CASE", format!("{}:{n}:{}", case.name(), method.name()))
        .env_remove("ARBITER_BENCH_TABLE")
        .stdout(Stdio::piped())
        .spawn()
        .expect("the child runs");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("the child can be waited for").is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("the child's output");
    assert!(out.status.success(), "child {} {n} {} failed", case.name(), method.name());
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default().to_string();
    let mut fields = line.splitn(4, ' ');
    let mut number = || fields.next().and_then(|f| f.parse::<f64>().ok()).unwrap_or(f64::NAN);
    let (seconds, objective, peak) = (number(), number(), number());
    let method = line.splitn(4, ' ').nth(3).unwrap_or_default().to_string();
    Some((seconds, objective, peak, method))
}

fn millis(seconds: f64) -> String {
    let ms = seconds * 1e3;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{seconds:.2} s")
    }
}

fn table() {
    let sizes: Vec<usize> = match std::env::var("ARBITER_BENCH_SIZES") {
        Ok(list) => list.split(',').filter_map(|s| s.trim().parse().ok()).collect(),
        Err(_) => SIZES.to_vec(),
    };
    println!(
        "| policy | jobs | decomposition (`_spread`: `method: auto`) | method | plain LP (`method: lp`) | speedup | objectives agree | peak memory |"
    );
    println!("|---|---:|---:|---|---:|---:|---|---:|");
    let levels = [
        Case::of(PolicyKind::MaxMinFairnessWaterFilling),
        Case::of(PolicyKind::Hierarchical),
        Case::NESTED,
        Case::SPREAD[0],
        Case::SPREAD[1],
    ];
    // `ARBITER_BENCH_POLICIES=hierarchical_spread,...` narrows the table to those cases.
    let only: Option<Vec<String>> = std::env::var("ARBITER_BENCH_POLICIES")
        .ok()
        .map(|list| list.split(',').map(|s| s.trim().to_string()).collect());
    let wanted = |case: &Case| only.as_ref().is_none_or(|names| names.iter().any(|n| n == case.name()));
    for case in cases().into_iter().chain(levels).filter(wanted) {
        let mut times = Vec::new();
        let largest = match case.variant {
            Variant::Spread => SPREAD_MAX,
            _ if levels.contains(&case) => WATER_FILLING_MAX,
            _ => usize::MAX,
        };
        for &n in sizes.iter().filter(|&&n| n <= largest) {
            let (t, objective, peak, method) =
                spawn(case, n, case.fast(), Duration::from_secs(600)).expect("the fast path finishes");
            eprintln!("{} n={n}: {} {method}", case.name(), millis(t));
            let (plain, speedup, agree) =
                match (n <= REFERENCE_MAX).then(|| spawn(case, n, Method::Lp, REFERENCE_LIMIT)) {
                    Some(Some((tl, reference, _, _))) => {
                        let relative = (objective - reference).abs() / reference.abs();
                        let agree = if relative <= OBJECTIVE_TOLERANCE { "yes" } else { "**no**" };
                        (millis(tl), format!("{:.0}×", tl / t), format!("{agree} ({relative:.1e})"))
                    }
                    Some(None) => {
                        let limit = REFERENCE_LIMIT.as_secs_f64();
                        (format!("> {limit:.0} s"), format!("> {:.0}×", limit / t), "—".into())
                    }
                    None => ("—".into(), "—".into(), "—".into()),
                };
            println!(
                "| {} | {n} | {} | {method} | {plain} | {speedup} | {agree} | {peak:.0} MiB |",
                case.name(),
                millis(t)
            );
            times.push((n, t));
        }
        if let [.., (n1, t1), (n2, t2)] = times[..] {
            let exponent = (t2 / t1).ln() / (n2 as f64 / n1 as f64).ln();
            println!("| {} | growth {n1}→{n2} | n^{exponent:.2} | | | | | |", case.name());
        }
    }
}

/// The cases of one policy each, with FTF on jobs under way after FTF.
fn cases() -> Vec<Case> {
    let mut cases: Vec<Case> = POLICIES.map(Case::of).into();
    let ftf = cases.iter().position(|c| c.policy == PolicyKind::FinishTimeFairness).map_or(cases.len(), |i| i + 1);
    cases.insert(ftf, Case::UNDER_WAY);
    cases
}

/// Smoke mode: both methods at one size agree, and the decomposition certified its optimum.
fn smoke() {
    let n = 4096;
    for case in cases() {
        let fast = run(&problem(case, n, Method::Auto));
        let reference = run(&problem(case, n, Method::Lp));
        assert_eq!(fast.method, "decomposition", "{} at {n} jobs", case.name());
        let relative = (fast.objective - reference.objective).abs() / reference.objective.abs();
        assert!(
            relative <= OBJECTIVE_TOLERANCE,
            "{} at {n}: {} vs {}",
            case.name(),
            fast.objective,
            reference.objective
        );
        eprintln!(
            "{} n={n}: decomposition {} vs lp {} (objectives within {relative:.1e})",
            case.name(),
            millis(fast.time.as_secs_f64()),
            millis(reference.time.as_secs_f64())
        );
    }
}

fn main() {
    if let Ok(spec) = std::env::var("ARBITER_BENCH_CASE") {
        child(&spec);
    } else if std::env::var_os("ARBITER_BENCH_TABLE").is_some_and(|v| v != "0" && !v.is_empty()) {
        table();
    } else {
        smoke();
    }
}
