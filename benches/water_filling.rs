//! Solve-time benchmarks of water-filling (`max_min_fairness_water_filling`) and `hierarchical`
//! (flat: 5 entities; nested: 2 orgs → the same 5 teams) on Gavel-like clusters. Only the solve
//! is timed; instances are generated here, seeded.
//!
//! `cargo bench --bench water_filling` runs the criterion groups; with `ARBITER_BENCH_TABLE=1` the
//! same binary times each case itself (median of a few runs) and prints the markdown table of
//! `scripts/bench-water-filling` (and writes it as CSV to `ARBITER_BENCH_CSV` if set). With
//! `ARBITER_BENCH_EXPORT=DIR` it writes the instances and arbiter's answers as JSON for the
//! Python baseline of Gavel's own method and exits. Every mode first checks, untimed, that each
//! allocation is feasible and that the minimum level is max-min fairness's objective.
//!
//! Table mode reads `ARBITER_BENCH_SIZES` (e.g. `128,512`), `ARBITER_BENCH_CASES` (policy names
//! as printed) and `ARBITER_BENCH_BUDGET` (seconds per case, default 2). Every mode reads
//! `ARBITER_BENCH_ROWS`: `repeated` (the default: 26 model types, so jobs share rows) or
//! `distinct` (every throughput times its own lognormal factor `exp(0.1·N(0,1))`, as when each
//! job's throughputs are measured; `benches/distinct_rows.rs` draws them the same way). Criterion skips a case
//! whose one solve takes over 5 s (hierarchical at 8192 jobs) unless `ARBITER_BENCH_LARGE=1`;
//! `cargo test --benches` runs each case once up to 2048 jobs.

use arbiter::lp::Backend;
use arbiter::policies::{self, Outcome, PolicyKind};
use arbiter::request::{EntitySpec, JobSpec, Request};
use arbiter::Problem;
use criterion::{black_box, BenchmarkId, Criterion, SamplingMode};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

#[path = "support/workload.rs"]
mod workload;
use workload::{cluster, draw_job, model_types, normal, throughput_map, Rng};

const SIZES: [usize; 4] = [128, 512, 2048, 8192];
/// `cargo test --benches` runs every case once; the largest size is left to `cargo bench`.
const TEST_MODE_SIZES: [usize; 3] = [128, 512, 2048];
/// Relative agreement required between the minimum level and max-min fairness's objective.
const OBJECTIVE_TOLERANCE: f64 = 1e-6;
/// Criterion takes at least 11 solves per case (10 samples and a warm-up); cases whose one solve
/// takes longer than this are left to the table mode unless `ARBITER_BENCH_LARGE` is set.
const CRITERION_MAX_SOLVE: Duration = Duration::from_secs(5);
/// Slack allowed on the feasibility rows of a returned allocation.
const FEASIBILITY_TOLERANCE: f64 = 1e-7;

/// The teams (entities) every job belongs to: name, weight, intra-entity policy.
const TEAMS: [(&str, f64, &str); 5] = [
    ("t1", 1.0, "fairness"),
    ("t2", 2.0, "fifo"),
    ("t3", 3.0, "fairness"),
    ("t4", 4.0, "fifo"),
    ("t5", 5.0, "fairness"),
];
/// The nested variant's orgs: name, weight, policy, teams.
const ORGS: [(&str, f64, &str, &[&str]); 2] =
    [("o1", 1.0, "fairness", &["t1", "t2"]), ("o2", 2.0, "fairness", &["t3", "t4", "t5"])];

/// What is timed: a policy and, for `hierarchical`, the shape of its entity tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    /// `max_min_fairness_water_filling` with the jobs' own weights.
    WaterFilling,
    /// `hierarchical` over 5 root entities (weights 1..5, 3 `fairness` and 2 `fifo`).
    Hierarchical,
    /// `hierarchical` with 2 orgs (both `fairness`) above the same 5 teams.
    HierarchicalNested,
}

const CASES: [Case; 3] = [Case::WaterFilling, Case::Hierarchical, Case::HierarchicalNested];

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::WaterFilling => "max_min_fairness_water_filling",
            Case::Hierarchical => "hierarchical",
            Case::HierarchicalNested => "hierarchical_nested",
        }
    }
    fn policy(self) -> PolicyKind {
        match self {
            Case::WaterFilling => PolicyKind::MaxMinFairnessWaterFilling,
            Case::Hierarchical | Case::HierarchicalNested => PolicyKind::Hierarchical,
        }
    }
}

/// Whether every job's throughput row is its own (`ARBITER_BENCH_ROWS=distinct`).
fn distinct_rows() -> bool {
    match std::env::var("ARBITER_BENCH_ROWS").as_deref() {
        Ok("distinct") => true,
        Ok("repeated") | Err(_) => false,
        Ok(other) => panic!("ARBITER_BENCH_ROWS: distinct or repeated, not {other:?}"),
    }
}

/// `n` jobs on `n/4` GPUs of each type: model uniform, scale factor 1/2/4/8 with probability
/// 70/10/15/5%, weight 5 for one job in five, a team uniform among the 5, arrival = index; with
/// distinct rows, each throughput perturbed (from a stream of its own: the same jobs either way).
fn request(case: Case, n: usize) -> Request {
    let models = model_types();
    let mut rng = Rng(0x57A7_E4F1_1100 ^ (n as u64).wrapping_mul(0x9E37_79B9));
    let mut noise = Rng(0x5EE_D0FA_015E ^ n as u64);
    let distinct = distinct_rows();
    let jobs = (0..n)
        .map(|m| {
            let job = draw_job(&mut rng, &models);
            let team = TEAMS[rng.below(TEAMS.len())].0;
            JobSpec {
                id: format!("j{m}"),
                throughput: throughput_map(
                    job.row,
                    |t| if distinct { t * (0.1 * normal(&mut noise)).exp() } else { t },
                ),
                scale_factor: Some(job.scale_factor as f64),
                weight: Some(job.weight),
                arrival: Some(m as f64),
                entity: (case != Case::WaterFilling).then(|| team.to_string()),
                ..JobSpec::default()
            }
        })
        .collect();
    let entity = |weight: f64, policy: &str, parent: Option<&str>| EntitySpec {
        weight: Some(weight),
        policy: Some(policy.to_string()),
        parent: parent.map(str::to_string),
    };
    let parent_of = |team: &str| ORGS.iter().find(|o| o.3.contains(&team)).map(|o| o.0);
    let entities = match case {
        Case::WaterFilling => None,
        Case::Hierarchical => Some(TEAMS.iter().map(|&(t, w, p)| (t.to_string(), entity(w, p, None))).collect()),
        Case::HierarchicalNested => Some(
            TEAMS
                .iter()
                .map(|&(t, w, p)| (t.to_string(), entity(w, p, parent_of(t))))
                .chain(ORGS.iter().map(|&(o, w, p, _)| (o.to_string(), entity(w, p, None))))
                .collect(),
        ),
    };
    Request {
        policy: case.policy().name().to_string(),
        heterogeneity_aware: Some(true),
        space_sharing: Some(false),
        cluster: cluster(n),
        jobs,
        colocations: None,
        entities,
        max_solve_seconds: None,
        ..Request::default()
    }
}

fn problem_of(request: &Request) -> Problem {
    Problem::from_request(request).expect("the generated request is valid")
}

fn solve(problem: &Problem) -> Outcome {
    policies::solve(problem, Backend::default()).expect("the policy solves the instance")
}

/// The weights of the first water-filling level, recomputed here from the request's entity tree
/// (every job unfrozen): `fairness` splits an entity's weight over its children in proportion to
/// their own weights, `fifo` gives it all to the child holding the earliest job. 0: not raised.
fn first_level_weights(request: &Request) -> Vec<f64> {
    let Some(entities) = &request.entities else {
        return request.jobs.iter().map(|j| j.weight.unwrap_or(1.0)).collect();
    };
    /// A child of an entity: a sub-entity or a job, by index.
    #[derive(Clone, Copy)]
    enum Node {
        Entity(usize),
        Job(usize),
    }
    let names: Vec<&String> = entities.keys().collect();
    let specs: Vec<&EntitySpec> = entities.values().collect();
    let index = |name: &str| names.iter().position(|n| n.as_str() == name).expect("a known entity");
    let mut children: Vec<Vec<Node>> = vec![Vec::new(); names.len()];
    for (e, spec) in specs.iter().enumerate() {
        if let Some(parent) = &spec.parent {
            children[index(parent)].push(Node::Entity(e));
        }
    }
    for (m, job) in request.jobs.iter().enumerate() {
        if let Some(e) = &job.entity {
            children[index(e)].push(Node::Job(m));
        }
    }
    // The earliest job below a node (jobs arrive in index order); `None`: no job below it.
    fn earliest(node: Node, children: &[Vec<Node>]) -> Option<usize> {
        match node {
            Node::Job(m) => Some(m),
            Node::Entity(e) => children[e].iter().filter_map(|&c| earliest(c, children)).min(),
        }
    }
    let own = |node: Node| match node {
        Node::Job(m) => request.jobs[m].weight.unwrap_or(1.0),
        Node::Entity(e) => specs[e].weight.unwrap_or(1.0),
    };
    let mut out = vec![0.0; request.jobs.len()];
    let mut stack: Vec<(Node, f64)> = (0..specs.len())
        .filter(|&e| specs[e].parent.is_none())
        .map(|e| (Node::Entity(e), specs[e].weight.unwrap_or(1.0)))
        .collect();
    while let Some((node, weight)) = stack.pop() {
        let e = match node {
            Node::Job(m) => {
                out[m] = weight;
                continue;
            }
            Node::Entity(e) => e,
        };
        let live: Vec<Node> = children[e].iter().copied().filter(|&c| earliest(c, &children).is_some()).collect();
        if specs[e].policy.as_deref() == Some("fifo") {
            if let Some(&first) = live.iter().min_by_key(|&&c| earliest(c, &children)) {
                stack.push((first, weight));
            }
        } else {
            let total: f64 = live.iter().map(|&c| own(c)).sum();
            stack.extend(live.iter().map(|&c| (c, weight * own(c) / total)));
        }
    }
    out
}

/// Asserts that `X` is feasible: `X ≥ 0`, nothing on a type the job cannot run on, every job's
/// time `Σ_w X ≤ 1`, every type's `Σ_m sf_m X ≤ count_w`.
fn check_feasible(label: &str, problem: &Problem, outcome: &Outcome) {
    let x = &outcome.allocation;
    let mut used = vec![0.0; problem.num_types()];
    for (m, job) in problem.jobs.iter().enumerate() {
        let mut time = 0.0;
        for (w, total) in used.iter_mut().enumerate() {
            let v = x.get(m, w);
            assert!(v >= -FEASIBILITY_TOLERANCE, "{label}: X[{m}][{w}] = {v} < 0");
            assert!(
                v <= FEASIBILITY_TOLERANCE || problem.measured.get(m, w) > 0.0,
                "{label}: job {m} runs on type {w}"
            );
            time += v;
            *total += job.scale_factor as f64 * v;
        }
        assert!(time <= 1.0 + FEASIBILITY_TOLERANCE, "{label}: job {m} has time {time} > 1");
    }
    for (w, total) in used.iter().enumerate() {
        let count = problem.worker_types[w].count;
        assert!(total <= &(count * (1.0 + FEASIBILITY_TOLERANCE)), "{label}: type {w} uses {total} > {count} GPUs");
    }
}

/// `max_min_fairness`'s objective on the jobs raised at the first level, with their first-level
/// weights. That level is LAS over those jobs (the rest have no floor yet), and no later level
/// lowers a frozen job, so it is water-filling's minimum. Jobs left out do not change
/// `thr_equal`, which depends on the cluster only.
fn las_objective(request: &Request) -> f64 {
    let weights = first_level_weights(request);
    let mut las = request.clone();
    las.policy = PolicyKind::MaxMinFairness.name().to_string();
    las.entities = None;
    las.jobs = request
        .jobs
        .iter()
        .zip(&weights)
        .filter(|&(_, &w)| w > 0.0)
        .map(|(job, &w)| JobSpec { weight: Some(w), entity: None, ..job.clone() })
        .collect();
    solve(&problem_of(&las)).objective.expect("LAS has an objective")
}

/// The checks of one case: feasible, the minimum level equal to LAS's objective, and every job
/// raised at the first level at or above it. Returns the problem, the outcome and the time of
/// that one (cold) solve, which serves as the timing's warm-up run.
fn check(case: Case, n: usize) -> (Problem, Outcome, Duration) {
    let request = request(case, n);
    let problem = problem_of(&request);
    let start = Instant::now();
    let outcome = solve(&problem);
    let first = start.elapsed();
    let label = format!("{} at {n} jobs", case.name());
    check_feasible(&label, &problem, &outcome);
    let objective = outcome.objective.expect("water-filling reports its minimum");
    let las = las_objective(&request);
    let relative = (objective - las).abs() / las.abs();
    assert!(
        relative <= OBJECTIVE_TOLERANCE,
        "{label}: minimum level {objective} vs max_min_fairness {las} (relative {relative:.2e})"
    );
    let report = outcome.water_filling.as_ref().expect("a water-filling report");
    assert!(report.level.iter().all(|l| l.is_finite()), "{label}: a job never froze");
    let weights = first_level_weights(&request);
    let thr_equal = problem.equal_share_throughput();
    for (m, job) in problem.jobs.iter().enumerate().filter(|&(m, _)| weights[m] > 0.0) {
        let value = job.scale_factor as f64 / weights[m] * report.normalized_throughput[m];
        assert!(
            value >= las * (1.0 - OBJECTIVE_TOLERANCE),
            "{label}: job {m} at {value} below the minimum {las} (thr_equal {})",
            thr_equal[m]
        );
    }
    (problem, outcome, first)
}

/// Sizes to run: all of them for `cargo bench`, the table and the export; up to 2048 when
/// criterion runs in test mode (`cargo test --benches`, one iteration per case).
fn sizes(test_mode: bool) -> &'static [usize] {
    if test_mode {
        &TEST_MODE_SIZES
    } else {
        &SIZES
    }
}

fn bench(c: &mut Criterion, test_mode: bool) {
    let large = std::env::var_os("ARBITER_BENCH_LARGE").is_some_and(|v| v != "0" && !v.is_empty());
    for case in CASES {
        let mut group = c.benchmark_group(case.name());
        for &n in sizes(test_mode) {
            let (problem, _, first) = check(case, n);
            if !test_mode && first > CRITERION_MAX_SOLVE && !large {
                eprintln!(
                    "{}/{n}: skipped, one solve takes {:.1} s and criterion needs at least 11 \
                     (set ARBITER_BENCH_LARGE=1 to run it; the table mode times it 3 times)",
                    case.name(),
                    first.as_secs_f64()
                );
                continue;
            }
            // Solves take from milliseconds to seconds: few, flat samples past 512 jobs.
            let (samples, measure) = match n {
                0..=512 => (20, 3),
                513..=2048 => (10, 5),
                _ => (10, 10),
            };
            group
                .sampling_mode(if n > 512 { SamplingMode::Flat } else { SamplingMode::Auto })
                .sample_size(samples)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(measure));
            group.bench_with_input(BenchmarkId::from_parameter(n), &problem, |b, p| b.iter(|| black_box(solve(p))));
        }
        group.finish();
    }
}

/// Nanoseconds this thread has spent on a CPU (`/proc/thread-self/schedstat`, Linux), so that a
/// loaded machine shows as wall time above CPU time; `None` elsewhere.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}

/// Median wall time and median on-CPU time (if known) of `f` over enough runs to fill about
/// `budget` (3 to 51 runs), given the time of an untimed warm-up run already made; and the runs.
fn median_time<T>(budget: Duration, first: Duration, mut f: impl FnMut() -> T) -> (Duration, Option<Duration>, usize) {
    let runs = ((budget.as_secs_f64() / first.as_secs_f64().max(1e-9)).ceil() as usize).clamp(3, 51);
    let (mut wall, mut cpu): (Vec<Duration>, Vec<Option<Duration>>) = (0..runs)
        .map(|_| {
            let (start, cpu_start) = (Instant::now(), cpu_ns());
            black_box(f());
            let cpu = cpu_start.zip(cpu_ns()).map(|(a, b)| Duration::from_nanos(b.saturating_sub(a)));
            (start.elapsed(), cpu)
        })
        .unzip();
    wall.sort();
    cpu.sort();
    let cpu = cpu.iter().all(Option::is_some).then(|| cpu[runs / 2]).flatten();
    (wall[runs / 2], cpu, runs)
}

fn human(seconds: f64) -> String {
    let ms = seconds * 1e3;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{seconds:.2} s")
    }
}

/// Gavel's own water-filling as the issue measured it on this machine: about 7.5 s at 512 jobs
/// and 47 s at 1,024. Other sizes follow the power law through those two points,
/// `t = 7.5 s · (n/512)^log2(47/7.5)` (exponent ≈ 2.65): extrapolated, so marked `~`.
fn gavel_seconds(n: usize) -> (f64, bool) {
    let exponent = (47.0f64 / 7.5).log2();
    let t = 7.5 * (n as f64 / 512.0).powf(exponent);
    (t, n == 512 || n == 1024)
}

struct Row {
    case: Case,
    n: usize,
    classes: usize,
    time: Duration,
    cpu: Option<Duration>,
    runs: usize,
    lp_solves: usize,
    iterations: usize,
    objective: f64,
}

fn measure(case: Case, n: usize, budget: Duration) -> Row {
    let (problem, outcome, first) = check(case, n);
    let (time, cpu, runs) = median_time(budget, first, || solve(&problem));
    eprintln!("{} n={n}: {} ({runs} runs)", case.name(), human(time.as_secs_f64()));
    let classes = {
        let mut keys: Vec<(Vec<u64>, u32)> = (0..n)
            .map(|m| (problem.throughput.row(m).iter().map(|v| v.to_bits()).collect(), problem.jobs[m].scale_factor))
            .collect();
        keys.sort();
        keys.dedup();
        keys.len()
    };
    Row {
        case,
        n,
        classes,
        time,
        cpu,
        runs,
        lp_solves: outcome.lp_solves,
        iterations: outcome.water_filling.as_ref().map_or(0, |r| r.iterations),
        objective: outcome.objective.unwrap_or(f64::NAN),
    }
}

/// The goal at one size: 2,048 jobs under 1 s; at every size, 100× faster than Gavel.
fn goal(row: &Row) -> (String, String) {
    let met = |ok: bool| if ok { "yes" } else { "**no**" }.to_string();
    match row.n {
        2048 => ("< 1 s".into(), met(row.time < Duration::from_secs(1))),
        _ => ("—".into(), String::new()),
    }
}

fn table() {
    let budget =
        Duration::from_secs_f64(std::env::var("ARBITER_BENCH_BUDGET").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0));
    let sizes: Vec<usize> = std::env::var("ARBITER_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').map(|n| n.trim().parse().expect("ARBITER_BENCH_SIZES: job counts")).collect())
        .unwrap_or_else(|| SIZES.to_vec());
    let cases: Vec<Case> = match std::env::var("ARBITER_BENCH_CASES") {
        Ok(names) => CASES.into_iter().filter(|c| names.split(',').any(|n| n.trim() == c.name())).collect(),
        Err(_) => CASES.to_vec(),
    };
    let mut rows = Vec::new();
    for &n in &sizes {
        for &case in &cases {
            rows.push(measure(case, n, budget));
        }
    }
    println!(
        "Rows: {}.\n",
        if distinct_rows() { "distinct (each throughput perturbed)" } else { "repeated (26 model types)" }
    );
    println!(
        "| policy | jobs | classes | iterations | LP solves | median solve | on CPU | runs | goal | met | Gavel (this machine) | speedup vs Gavel | ≥ 100× |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---|");
    let mut csv = String::from(
        "policy,jobs,classes,iterations,lp_solves,median_seconds,runs,objective,gavel_seconds,gavel_measured,speedup,cpu_seconds\n",
    );
    for row in &rows {
        let (goal, met) = goal(row);
        let seconds = row.time.as_secs_f64();
        let (gavel, measured) = gavel_seconds(row.n);
        let speedup = gavel / seconds;
        let mark = if measured { "" } else { "~" };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {goal} | {met} | {mark}{} | {mark}{:.0}× | {} |",
            row.case.name(),
            row.n,
            row.classes,
            row.iterations,
            row.lp_solves,
            human(seconds),
            row.cpu.map_or("—".to_string(), |c| human(c.as_secs_f64())),
            row.runs,
            human(gavel),
            speedup,
            if speedup >= 100.0 { "yes" } else { "**no**" },
        );
        writeln!(
            csv,
            "{},{},{},{},{},{:.6},{},{:.9},{:.3},{},{:.1},{}",
            row.case.name(),
            row.n,
            row.classes,
            row.iterations,
            row.lp_solves,
            seconds,
            row.runs,
            row.objective,
            gavel,
            measured,
            speedup,
            row.cpu.map_or(String::new(), |c| format!("{:.6}", c.as_secs_f64()))
        )
        .expect("writing to a String");
    }
    println!();
    println!("Gavel: 7.5 s at 512 and 47 s at 1,024 jobs as measured on this machine (issue 3); `~`: extrapolated");
    println!(
        "by the power law through those two points, t ∝ n^2.65. Goal and speedups use the wall time; \"on CPU\" is the"
    );
    println!(
        "median time the solving thread was on a CPU (/proc/thread-self/schedstat), which other load does not inflate."
    );
    if let Ok(path) = std::env::var("ARBITER_BENCH_CSV") {
        std::fs::write(&path, csv).unwrap_or_else(|e| panic!("writing {path}: {e}"));
    }
}

/// `ARBITER_BENCH_EXPORT=DIR`: writes `DIR/<case>_<n>.json` for the sizes in
/// `ARBITER_BENCH_EXPORT_SIZES` (default 128,512): the request, and arbiter's answer to compare
/// against (objective, per-job normalized throughput, iterations).
fn export(dir: &str) {
    let sizes: Vec<usize> = std::env::var("ARBITER_BENCH_EXPORT_SIZES")
        .unwrap_or_else(|_| "128,512".into())
        .split(',')
        .map(|n| n.trim().parse().expect("ARBITER_BENCH_EXPORT_SIZES: job counts"))
        .collect();
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("creating {dir}: {e}"));
    for &n in &sizes {
        for case in CASES {
            let request = request(case, n);
            let problem = problem_of(&request);
            let start = Instant::now();
            let outcome = solve(&problem);
            let seconds = start.elapsed().as_secs_f64();
            let report = outcome.water_filling.as_ref().expect("a water-filling report");
            let value = serde_json::json!({
                "case": case.name(),
                "request": request,
                "first_level_weights": first_level_weights(&request),
                "arbiter": {
                    "objective": outcome.objective,
                    "normalized_throughput": report.normalized_throughput,
                    "level": report.level,
                    "frozen_at": report.frozen_at,
                    "iterations": report.iterations,
                    "lp_solves": outcome.lp_solves,
                    "seconds": seconds,
                },
            });
            let path = format!("{dir}/{}_{n}.json", case.name());
            std::fs::write(&path, serde_json::to_string(&value).expect("serializable"))
                .unwrap_or_else(|e| panic!("writing {path}: {e}"));
            eprintln!("wrote {path}");
        }
    }
}

fn main() {
    let flag = |name: &str| std::env::var_os(name).is_some_and(|v| v != "0" && !v.is_empty());
    if let Ok(dir) = std::env::var("ARBITER_BENCH_EXPORT") {
        export(&dir);
        return;
    }
    if flag("ARBITER_BENCH_TABLE") {
        table();
        return;
    }
    // As criterion decides it: test mode unless run with `--bench` (and without `--test`).
    let args: Vec<String> = std::env::args().collect();
    let test_mode = !args.iter().any(|a| a == "--bench") || args.iter().any(|a| a == "--test");
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c, test_mode);
    c.final_summary();
}
