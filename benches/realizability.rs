//! The cost of the realizability check (`arbiter::realizability`, `formulations/realizability.md`)
//! against the plain solve of the same request: `arbiter::allocate` (the policy and its tie-break,
//! as `arbiter::solve` runs them) and then `realizability::report` on its outcome, on the
//! Gavel-like workload of `benches/policies.rs` (26 model types, scale factors 1/2/4/8, n/4 GPUs
//! of each of 3 types, servers of 4), repeated and distinct throughput rows. Prints the medians,
//! their ratio measured in the same run (goal: < 5× at 2,048 jobs), how the check ended (greedy:
//! no LP; master solves otherwise) and the realizable fraction.
//!
//! `cargo bench --bench realizability` prints the table (`ARBITER_BENCH_SIZES=512,2048` for other
//! sizes); under `cargo test` it runs the smallest size once.

use arbiter::lp::Backend;
use arbiter::policies::PolicyKind;
use arbiter::realizability::{self, Budget, RealizabilityReport};
use arbiter::request::Request;
use arbiter::Problem;
use std::time::{Duration, Instant};

#[path = "support/table.rs"]
mod table;
#[path = "support/workload.rs"]
mod workload;
use workload::{cluster, gavel_jobs};

const POLICIES: [PolicyKind; 4] =
    [PolicyKind::MaxMinFairness, PolicyKind::MinMakespan, PolicyKind::FinishTimeFairness, PolicyKind::MaxSumThroughput];

fn problem(policy: PolicyKind, n: usize, distinct: bool) -> Problem {
    let request = Request {
        policy: policy.name().to_string(),
        cluster: cluster(n),
        jobs: gavel_jobs(n, distinct),
        ..Request::default()
    };
    Problem::from_request(&request).expect("the generated request is valid")
}

/// Medians of the plain solve and of the check on its outcome, over runs filling about `budget`.
fn measure(problem: &Problem, budget: Duration) -> (f64, f64, RealizabilityReport) {
    let (mut solves, mut checks) = (Vec::new(), Vec::new());
    let mut report = None;
    let start = Instant::now();
    while solves.len() < 3 || (start.elapsed() < budget && solves.len() < 31) {
        let t = Instant::now();
        let (_, outcome) = arbiter::allocate(problem, Backend::default()).expect("solves");
        solves.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let r = realizability::report(problem, &outcome, &Budget::default(), Backend::default());
        checks.push(t.elapsed().as_secs_f64());
        assert!(r.checked, "{:?}", r.reason);
        report = Some(r);
    }
    (table::median(&mut solves), table::median(&mut checks), report.expect("measured at least once"))
}

fn main() {
    let run = table::Run::from_env(&[512, 2048]);
    let budget = Duration::from_secs_f64(if run.full { 2.0 } else { 0.0 });
    println!("| policy | rows | jobs | plain solve | check | ratio | how | master solves | configurations | fraction | upper bound | jobs losing time |");
    println!("|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|");
    for policy in run.policies(&POLICIES) {
        for distinct in run.distinct() {
            for &n in &run.sizes {
                let (solve, check, report) = measure(&problem(policy, n, distinct), budget);
                let how = match (report.lp_solves, report.certified) {
                    (0, true) => "greedy, whole",
                    (0, false) => "greedy, lower bound",
                    (_, true) => "column generation, certified",
                    (_, false) => "column generation, stopped",
                };
                let losing: std::collections::BTreeSet<&str> =
                    report.shortfall.iter().map(|s| s.job.as_str()).collect();
                println!(
                    "| {} | {} | {n} | {:.2} ms | {:.2} ms | {:.2}× | {how} | {} | {} | {:.6} | {:.6} | {} |",
                    policy.name(),
                    if distinct { "distinct" } else { "repeated" },
                    solve * 1e3,
                    check * 1e3,
                    check / solve,
                    report.lp_solves,
                    report.configurations,
                    report.fraction.unwrap_or(f64::NAN),
                    report.fraction_upper_bound.unwrap_or(f64::NAN),
                    losing.len(),
                );
            }
        }
    }
}
