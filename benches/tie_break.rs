//! The cost of the tie-break: the whole solve of a bottleneck policy (`arbiter::allocate`: the
//! policy, its tie-break and the response; the realizability check, timed by its own bench, left
//! out) with `tie_break: "none"` and with the default `"throughput"` second solve, on the generated Gavel-like
//! workloads of `benches/policies.rs` (26 model types, scale factors 1/2/4/8, n/4 GPUs of each of
//! 3 types), and on the same jobs with every throughput perturbed by its own factor (distinct rows).
//! Prints the median of each, the ratio measured in the same run (goal: < 1.3×) and which method
//! solved the second LP (the decomposition on distinct rows from 64 jobs, the engine otherwise);
//! where it was the decomposition (up to 16,384 jobs), also the first solve followed by the second
//! on the plain engine, as it ran before the second solve was decomposed.
//!
//! `cargo bench --bench tie_break` prints the table (`ARBITER_BENCH_SIZES=1048576` for other
//! sizes); under `cargo test` it runs the smallest size once.

use arbiter::lp::Backend;
use arbiter::max_min_ratio::{DecompositionOptions, Method};
use arbiter::policies;
use arbiter::policies::PolicyKind;
use arbiter::request::Request;
use arbiter::solver::tie_break::{throughput_with, TieBreak};
use arbiter::Problem;
use std::time::{Duration, Instant};

#[path = "support/table.rs"]
mod table;
#[path = "support/workload.rs"]
mod workload;
use workload::{cluster, gavel_jobs};

/// The engine's second solve is timed on distinct rows up to this many jobs.
const ENGINE_MAX: usize = 16384;

const POLICIES: [PolicyKind; 4] =
    [PolicyKind::MaxMinFairness, PolicyKind::MinMakespan, PolicyKind::FinishTimeFairness, PolicyKind::ShortestJobFirst];

fn problem(policy: PolicyKind, n: usize, distinct: bool, tie_break: TieBreak) -> Problem {
    let jobs = gavel_jobs(n, distinct);
    let request = Request { policy: policy.name().to_string(), cluster: cluster(n), jobs, ..Request::default() };
    let mut problem = Problem::from_request(&request).expect("the generated request is valid");
    problem.tie_break = tie_break;
    problem
}

/// Median seconds of `arbiter::allocate` over runs filling about `budget`.
fn median(problem: &Problem, budget: Duration) -> (f64, Option<f64>, String) {
    let mut times = Vec::new();
    let (mut objective, mut method) = (None, String::new());
    let start = Instant::now();
    while times.len() < 3 || (start.elapsed() < budget && times.len() < 51) {
        let t = Instant::now();
        let (response, _) = arbiter::allocate(problem, Backend::default()).expect("solves");
        times.push(t.elapsed().as_secs_f64());
        objective = response.objective;
        method = response.stats.tie_break_method.map_or_else(String::new, |m| m.method);
    }
    (table::median(&mut times), objective, method)
}

/// Median seconds of the first solve followed by the second on the plain engine (what the
/// default did on distinct rows before the second solve was decomposed).
fn median_on_engine(problem: &Problem, budget: Duration) -> f64 {
    let engine = Problem { method: Method::Lp, ..problem.clone() };
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 3 || (start.elapsed() < budget && times.len() < 51) {
        let t = Instant::now();
        let optimum = policies::solve(problem, Backend::default()).expect("solves");
        throughput_with(&engine, &optimum, Backend::default(), &DecompositionOptions::default()).expect("solves");
        times.push(t.elapsed().as_secs_f64());
    }
    table::median(&mut times)
}

fn main() {
    let run = table::Run::from_env(&[512, 2048, 16384, 65536]);
    let budget = Duration::from_secs_f64(if run.full { 1.0 } else { 0.0 });
    println!("| policy | rows | jobs | tie_break none | throughput | ratio | second solve | on the engine | ratio |");
    println!("|---|---|---:|---:|---:|---:|---|---:|---:|");
    // `ARBITER_BENCH_POLICIES=min_makespan,...` and `ARBITER_BENCH_ROWS=distinct|repeated` narrow the table.
    for policy in run.policies(&POLICIES) {
        for distinct in run.distinct() {
            for &n in &run.sizes {
                let (bare, z0, _) = median(&problem(policy, n, distinct, TieBreak::None), budget);
                let (tied, z1, method) = median(&problem(policy, n, distinct, TieBreak::Throughput), budget);
                if let (Some(a), Some(b)) = (z0, z1) {
                    assert!((a - b).abs() <= 1e-6 * a.abs().max(1.0), "{}: objective {a} vs {b}", policy.name());
                }
                // The engine's second solve on distinct rows, up to the size where it takes seconds.
                let engine = (distinct && method == "decomposition" && n <= ENGINE_MAX).then(|| {
                    let t = median_on_engine(&problem(policy, n, distinct, TieBreak::Throughput), budget);
                    format!("{:.2} ms | {:.2}×", t * 1e3, t / bare)
                });
                println!(
                    "| {} | {} | {n} | {:.2} ms | {:.2} ms | {:.2}× | {method} | {} |",
                    policy.name(),
                    if distinct { "distinct" } else { "repeated" },
                    bare * 1e3,
                    tied * 1e3,
                    tied / bare,
                    engine.unwrap_or_else(|| "— | —".into())
                );
            }
        }
    }
}
