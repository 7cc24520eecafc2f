//! Solve-time benchmarks of the exact max-min engine on Gavel-like clusters, against the plain
//! per-job LP it replaces. Only the solve is timed; instances are generated here, seeded.
//!
//! `cargo bench --bench policies` runs the criterion groups; with `ARBITER_BENCH_TABLE=1` the same
//! binary times each case itself (median of a few runs) and prints the markdown tables of
//! `scripts/bench`. Both modes check the engine's objectives against the plain LP's (untimed).

use arbiter::lp::{Backend, LinearProgram, Row, Sense};
use arbiter::policies::{self, Outcome, PolicyKind};
use arbiter::request::Request;
use arbiter::Problem;
use criterion::{black_box, BenchmarkId, Criterion};
use std::collections::HashSet;
use std::time::{Duration, Instant};

#[path = "support/workload.rs"]
mod workload;
use workload::{cluster, gavel_jobs};

const SIZES: [usize; 4] = [64, 512, 2048, 16384];
/// The plain LP grows with the job count (≈ 4n columns, 2n rows); past 2048 it takes too long.
const PLAIN_SIZES: [usize; 3] = [64, 512, 2048];
const POLICIES: [PolicyKind; 3] = [PolicyKind::MaxMinFairness, PolicyKind::MinMakespan, PolicyKind::FinishTimeFairness];
/// Agreement required between the engine and the plain LP.
const OBJECTIVE_TOLERANCE: f64 = 1e-6;
/// Sizes of the stress workload, where the engine's LP is as large as the plain one.
const DISTINCT_SIZES: [usize; 2] = [512, 2048];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    /// Jobs drawn from 26 model types × 4 scale factors, as in Gavel: at most 104 distinct
    /// (throughput row, scale factor) pairs, so the engine's LP has at most 104 classes.
    Gavel,
    /// The same jobs with every throughput perturbed by its own factor in [0.95, 1.05] (as if each
    /// job's throughputs were measured separately): every job is a class of its own.
    Distinct,
}

/// `n` jobs on `n/4` GPUs of each type (`workload::gavel_jobs`).
fn request(policy: PolicyKind, n: usize, workload: Workload) -> Request {
    let jobs = gavel_jobs(n, workload == Workload::Distinct);
    Request {
        policy: policy.name().to_string(),
        heterogeneity_aware: Some(true),
        space_sharing: Some(false),
        cluster: cluster(n),
        jobs,
        colocations: None,
        entities: None,
        max_solve_seconds: None,
        ..Request::default()
    }
}

fn problem(policy: PolicyKind, n: usize, workload: Workload) -> Problem {
    Problem::from_request(&request(policy, n, workload)).expect("the generated request is valid")
}

fn solve(problem: &Problem) -> Outcome {
    policies::solve(problem, Backend::default()).expect("the engine solves the instance")
}

/// Distinct (throughput row, scale factor) pairs: the classes the engine's LP is over.
fn classes(problem: &Problem) -> usize {
    (0..problem.num_jobs())
        .map(|m| {
            let row: Vec<u64> = problem.throughput.row(m).iter().map(|v| v.to_bits()).collect();
            (row, problem.jobs[m].scale_factor)
        })
        .collect::<HashSet<_>>()
        .len()
}

/// The demand `d_m` of `max z s.t. thr_m ≥ z·d_m` that each policy reduces to when every job has
/// just arrived (no elapsed time), recomputed here from the contract.
fn demand(problem: &Problem) -> Vec<f64> {
    match problem.policy {
        PolicyKind::MaxMinFairness => {
            let thr_equal = problem.equal_share_throughput();
            problem.jobs.iter().zip(thr_equal).map(|(job, e)| job.weight * e / job.scale_factor as f64).collect()
        }
        PolicyKind::MinMakespan => (0..problem.num_jobs()).map(|m| problem.steps_remaining(m)).collect(),
        // ρ_m = (r_m/thr_m) / (r_m/thr_iso_m) ≤ 1/z  ⟺  thr_m ≥ z·thr_iso_m
        PolicyKind::FinishTimeFairness => problem.isolated_throughput(),
        other => panic!("no plain LP for {}", other.name()),
    }
}

/// The plain per-job LP: `max z` s.t. `Σ_w (T[m][w]/d_m) X[m][w] ≥ z`, `Σ_w X[m][w] ≤ 1`,
/// `Σ_m sf_m X[m][w] ≤ count_w` (rows divided by `d_m`, as Gavel writes them in normalized
/// throughputs), one column per job and type it can run on.
fn plain_lp(problem: &Problem, demand: &[f64]) -> LinearProgram {
    let mut lp = LinearProgram::new(Sense::Maximize);
    let z = lp.add_col(1.0, 0.0, f64::INFINITY);
    let mut per_type: Vec<Vec<(usize, f64)>> = vec![Vec::new(); problem.num_types()];
    for (m, job) in problem.jobs.iter().enumerate() {
        let mut thr = Vec::with_capacity(problem.num_types() + 1);
        let mut time = Vec::with_capacity(problem.num_types());
        for (w, worker) in problem.worker_types.iter().enumerate() {
            let t = problem.throughput.get(m, w);
            if t > 0.0 && worker.count > 0.0 {
                let col = lp.add_col(0.0, 0.0, 1.0);
                thr.push((col, t / demand[m]));
                time.push((col, 1.0));
                per_type[w].push((col, job.scale_factor as f64));
            }
        }
        thr.push((z, -1.0));
        lp.add_row(Row::at_least(0.0, thr));
        lp.add_row(Row::at_most(1.0, time));
    }
    for (w, coefs) in per_type.into_iter().enumerate() {
        lp.add_row(Row::at_most(problem.worker_types[w].count, coefs));
    }
    lp
}

/// Builds and solves the plain LP; returns its `z`.
fn solve_plain(problem: &Problem) -> f64 {
    let lp = plain_lp(problem, &demand(problem));
    let solution = Backend::default().solve(lp).expect("the plain LP solves");
    solution.objective
}

/// The policy's reported objective as the plain LP's `z` gives it.
fn objective_from_z(policy: PolicyKind, z: f64) -> f64 {
    match policy {
        PolicyKind::MaxMinFairness => z,
        // makespan = max r/thr = 1/z; max ρ = 1/z
        _ => 1.0 / z,
    }
}

/// Asserts that the engine's objective is the plain LP's, to `OBJECTIVE_TOLERANCE` relative.
fn check_against_plain(policy: PolicyKind, n: usize, workload: Workload) {
    let problem = problem(policy, n, workload);
    let engine = solve(&problem).objective.expect("an objective");
    let plain = objective_from_z(policy, solve_plain(&problem));
    let relative = (engine - plain).abs() / plain.abs();
    assert!(
        relative <= OBJECTIVE_TOLERANCE,
        "{} at {n} jobs ({workload:?}): engine objective {engine} vs plain LP {plain} (relative {relative:.2e})",
        policy.name()
    );
}

/// Criterion settings per size: solves past a few ms get fewer, shorter samples.
fn configure(group: &mut criterion::BenchmarkGroup<criterion::measurement::WallTime>, n: usize) {
    let (samples, warm_up, measure) = match n {
        0..=512 => (30, 1, 3),
        513..=2048 => (10, 1, 3),
        _ => (10, 1, 5),
    };
    group
        .sample_size(samples)
        .warm_up_time(Duration::from_secs(warm_up))
        .measurement_time(Duration::from_secs(measure));
}

fn bench_engine(c: &mut Criterion) {
    for policy in POLICIES {
        let mut group = c.benchmark_group(policy.name());
        for n in SIZES {
            let problem = problem(policy, n, Workload::Gavel);
            configure(&mut group, n);
            group.bench_with_input(BenchmarkId::from_parameter(n), &problem, |b, p| b.iter(|| black_box(solve(p))));
        }
        group.finish();
    }
}

/// The baseline (LAS as a plain per-job LP), and LAS where no two jobs share a row.
fn bench_baselines(c: &mut Criterion) {
    let policy = PolicyKind::MaxMinFairness;
    let mut group = c.benchmark_group(format!("plain_lp/{}", policy.name()));
    for n in PLAIN_SIZES {
        for checked in POLICIES {
            check_against_plain(checked, n, Workload::Gavel);
        }
        let problem = problem(policy, n, Workload::Gavel);
        configure(&mut group, n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &problem, |b, p| b.iter(|| black_box(solve_plain(p))));
    }
    group.finish();

    let mut group = c.benchmark_group(format!("distinct_rows/{}", policy.name()));
    for n in DISTINCT_SIZES {
        check_against_plain(policy, n, Workload::Distinct);
        let problem = problem(policy, n, Workload::Distinct);
        configure(&mut group, n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &problem, |b, p| b.iter(|| black_box(solve(p))));
    }
    group.finish();
}

/// Median wall time of `f` over enough runs to fill about `budget` (5 to 201 runs), after one
/// untimed warm-up run.
fn median_time<T>(budget: Duration, mut f: impl FnMut() -> T) -> (Duration, usize) {
    let first = {
        let start = Instant::now();
        black_box(f());
        start.elapsed()
    };
    let runs = (budget.as_secs_f64() / first.as_secs_f64().max(1e-9)).ceil() as usize;
    let runs = runs.clamp(5, 201);
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed()
        })
        .collect();
    times.sort();
    (times[runs / 2], runs)
}

fn millis(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.2} s", ms / 1e3)
    }
}

/// The goal for one policy at one size, and whether `time` meets it (`None`: no goal).
fn goal(policy: PolicyKind, n: usize, time: Duration, las: Duration) -> (String, Option<bool>) {
    match (policy, n) {
        (PolicyKind::MaxMinFairness, 2048) => ("< 20 ms".into(), Some(time < Duration::from_millis(20))),
        (PolicyKind::MaxMinFairness, 16384) => ("< 0.5 s".into(), Some(time < Duration::from_millis(500))),
        (PolicyKind::FinishTimeFairness, _) => ("≤ 5× LAS".into(), Some(time <= las * 5)),
        _ => ("—".into(), None),
    }
}

/// One timed case of the table.
struct Case {
    policy: PolicyKind,
    n: usize,
    time: Duration,
    runs: usize,
    lp_solves: usize,
    classes: usize,
    /// The plain LP's median time, where it is run.
    plain: Option<Duration>,
}

fn measure(policy: PolicyKind, n: usize, workload: Workload, budget: Duration) -> Case {
    let problem = problem(policy, n, workload);
    let outcome = solve(&problem);
    let plain = PLAIN_SIZES.contains(&n).then(|| {
        check_against_plain(policy, n, workload);
        median_time(budget, || solve_plain(&problem)).0
    });
    let (time, runs) = median_time(budget, || solve(&problem));
    eprintln!("{} n={n} {workload:?}: {} ({runs} runs)", policy.name(), millis(time));
    Case { policy, n, time, runs, lp_solves: outcome.lp_solves, classes: classes(&problem), plain }
}

fn print_table(cases: &[Case]) {
    let las = |n: usize| {
        cases
            .iter()
            .find(|c| c.n == n && c.policy == PolicyKind::MaxMinFairness)
            .map(|c| c.time)
            .expect("LAS is timed at every size")
    };
    println!(
        "| policy | jobs | classes | LP solves | median solve | runs | goal | met | FTF/LAS | plain LP | speedup |"
    );
    println!("|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|");
    for c in cases {
        let (goal, met) = goal(c.policy, c.n, c.time, las(c.n));
        let met = match met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "",
        };
        let ratio = if c.policy == PolicyKind::FinishTimeFairness {
            format!("{:.2}", c.time.as_secs_f64() / las(c.n).as_secs_f64())
        } else {
            String::new()
        };
        let (plain, speedup) = match c.plain {
            Some(t) => {
                let speedup = t.as_secs_f64() / c.time.as_secs_f64();
                let digits = if speedup < 10.0 { 1 } else { 0 };
                (millis(t), format!("{speedup:.digits$}×"))
            }
            None => ("—".into(), "—".into()),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {goal} | {met} | {ratio} | {plain} | {speedup} |",
            c.policy.name(),
            c.n,
            c.classes,
            c.lp_solves,
            millis(c.time),
            c.runs,
        );
    }
}

/// `ARBITER_BENCH_TABLE=1`: time every case with `Instant` and print the markdown tables.
fn table() {
    let budget =
        Duration::from_secs_f64(std::env::var("ARBITER_BENCH_BUDGET").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0));
    let run = |sizes: &[usize], workload| {
        let mut cases = Vec::new();
        for &n in sizes {
            for policy in POLICIES {
                cases.push(measure(policy, n, workload, budget));
            }
        }
        cases
    };
    println!("Gavel-like workload (26 model types × 4 scale factors):");
    println!();
    print_table(&run(&SIZES, Workload::Gavel));
    println!();
    println!("Stress: every job its own class (throughputs perturbed per job; goals for reference):");
    println!();
    print_table(&run(&DISTINCT_SIZES, Workload::Distinct));
}

fn main() {
    if std::env::var_os("ARBITER_BENCH_TABLE").is_some_and(|v| v != "0" && !v.is_empty()) {
        table();
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    bench_engine(&mut c);
    bench_baselines(&mut c);
    c.final_summary();
}
