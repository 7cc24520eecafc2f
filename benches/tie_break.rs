//! The cost of the tie-break: the whole solve of a bottleneck policy (`arbiter::solve`) with
//! `tie_break: "none"` and with the default `"throughput"` second solve, on the generated Gavel-like
//! workloads of `benches/policies.rs` (26 model types, scale factors 1/2/4/8, n/4 GPUs of each of
//! 3 types), and on the same jobs with every throughput perturbed by its own factor (distinct rows).
//! Prints the median of each and the ratio measured in the same run (goal: < 1.3×).
//!
//! `cargo bench --bench tie_break` prints the table; under `cargo test` it runs the smallest size once.

use arbiter::lp::Backend;
use arbiter::policies::PolicyKind;
use arbiter::request::Request;
use arbiter::solver::tie_break::TieBreak;
use arbiter::Problem;
use std::time::{Duration, Instant};

#[path = "support/workload.rs"]
mod workload;
use workload::{cluster, gavel_jobs};

const POLICIES: [PolicyKind; 4] =
    [PolicyKind::MaxMinFairness, PolicyKind::MinMakespan, PolicyKind::FinishTimeFairness, PolicyKind::ShortestJobFirst];

fn problem(policy: PolicyKind, n: usize, distinct: bool, tie_break: TieBreak) -> Problem {
    let jobs = gavel_jobs(n, distinct);
    let request = Request { policy: policy.name().to_string(), cluster: cluster(n), jobs, ..Request::default() };
    let mut problem = Problem::from_request(&request).expect("the generated request is valid");
    problem.tie_break = tie_break;
    problem
}

/// Median seconds of `arbiter::solve` over runs filling about `budget`.
fn median(problem: &Problem, budget: Duration) -> (f64, Option<f64>) {
    let mut times = Vec::new();
    let mut objective = None;
    let start = Instant::now();
    while times.len() < 3 || (start.elapsed() < budget && times.len() < 51) {
        let t = Instant::now();
        let response = arbiter::solve(problem, Backend::default()).expect("solves");
        times.push(t.elapsed().as_secs_f64());
        objective = response.objective;
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], objective)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes: &[usize] = if full { &[512, 2048, 16384] } else { &[64] };
    let budget = Duration::from_secs_f64(if full { 1.0 } else { 0.0 });
    println!("| policy | rows | jobs | tie_break none | throughput | ratio |");
    println!("|---|---|---:|---:|---:|---:|");
    for policy in POLICIES {
        for distinct in [false, true] {
            for &n in sizes {
                if distinct && n > 2048 {
                    continue; // the engine's distinct-row case is the plain LP's size (benches/policies.rs)
                }
                let (bare, z0) = median(&problem(policy, n, distinct, TieBreak::None), budget);
                let (tied, z1) = median(&problem(policy, n, distinct, TieBreak::Throughput), budget);
                if let (Some(a), Some(b)) = (z0, z1) {
                    assert!((a - b).abs() <= 1e-6 * a.abs().max(1.0), "{}: objective {a} vs {b}", policy.name());
                }
                println!(
                    "| {} | {} | {n} | {:.2} ms | {:.2} ms | {:.2}× |",
                    policy.name(),
                    if distinct { "distinct" } else { "repeated" },
                    bare * 1e3,
                    tied * 1e3,
                    tied / bare
                );
            }
        }
    }
}
