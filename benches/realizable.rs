//! The cost of realizable policies (`realizable: true`, `formulations/realizability.md`) against
//! the plain solve of the same request, both measured in the same run: `arbiter::solve` (the
//! policy, its tie-break and the realizability check of the fractional allocation) with and
//! without `realizable`, on the Gavel-like workload of `benches/policies.rs` (26 model types,
//! scale factors 1/2/4/8, n/4 GPUs of each of 3 types, servers of 4), repeated and distinct
//! throughput rows. Prints the medians, their ratio (goal: < 5× at 2,048 jobs), how the
//! realizable solve ended and how far its objective is from the fractional one.
//!
//! `cargo bench --bench realizable` prints the table (`ARBITER_BENCH_SIZES=512,2048` for other
//! sizes, `ARBITER_BENCH_TIE_BREAK=none` for the bare optimum, `ARBITER_BENCH_POLICIES=min_makespan,...`
//! and `ARBITER_BENCH_ROWS=distinct|repeated` to narrow the table); under `cargo test` it runs the
//! smallest size once.

use arbiter::lp::Backend;
use arbiter::policies::PolicyKind;
use arbiter::request::Request;
use arbiter::solver::realizable::RealizableReport;
use arbiter::Problem;
use std::time::{Duration, Instant};

#[path = "support/table.rs"]
mod table;
#[path = "support/workload.rs"]
mod workload;
use workload::{cluster, gavel_jobs};

const POLICIES: [PolicyKind; 3] = [PolicyKind::MaxMinFairness, PolicyKind::MinMakespan, PolicyKind::MaxSumThroughput];

fn problem(policy: PolicyKind, n: usize, distinct: bool, realizable: bool) -> Problem {
    let request = Request {
        policy: policy.name().to_string(),
        cluster: cluster(n),
        jobs: gavel_jobs(n, distinct),
        realizable: Some(realizable),
        tie_break: std::env::var("ARBITER_BENCH_TIE_BREAK").ok(),
        ..Request::default()
    };
    Problem::from_request(&request).expect("the generated request is valid")
}

fn median(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Medians of the plain and the realizable `arbiter::solve`, alternating, over runs filling
/// about `budget`, and the realizable solve's report.
fn measure(plain: &Problem, realizable: &Problem, budget: Duration) -> (f64, f64, RealizableReport) {
    let (mut plains, mut realizables) = (Vec::new(), Vec::new());
    let mut report = None;
    let start = Instant::now();
    while plains.len() < 3 || (start.elapsed() < budget && plains.len() < 31) {
        let t = Instant::now();
        arbiter::solve(plain, Backend::default()).expect("solves");
        plains.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let response = arbiter::solve(realizable, Backend::default()).expect("solves");
        realizables.push(t.elapsed().as_secs_f64());
        report = response.stats.realizable_solve;
    }
    (median(&mut plains), median(&mut realizables), report.expect("the realizable solve reports"))
}

fn main() {
    let run = table::Run::from_env(&[512, 2048]);
    let budget = Duration::from_secs_f64(if run.full { 2.0 } else { 0.0 });
    println!("| policy | rows | jobs | plain solve | realizable solve | ratio | how | master solves | configurations | relative gap | unplaceable jobs |");
    println!("|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|");
    for policy in run.policies(&POLICIES) {
        for distinct in run.distinct() {
            for &n in &run.sizes {
                let (plain, realizable) = (problem(policy, n, distinct, false), problem(policy, n, distinct, true));
                let (t_plain, t_realizable, report) = measure(&plain, &realizable, budget);
                let how = match (report.applied, report.fractional_was_realizable, report.certified) {
                    (false, _, _) => format!("not applied: {}", report.reason.as_deref().unwrap_or_default()),
                    (true, true, _) => "fractional realizable".to_string(),
                    (true, false, true) if report.lp_solves == 0 => "floors realizable".to_string(),
                    (true, false, true) => "column generation, certified".to_string(),
                    (true, false, false) => "column generation, stopped".to_string(),
                };
                let how = match report.tie_break_certified {
                    Some(false) => format!("{how}; tie-break partial"),
                    _ => how,
                };
                println!(
                    "| {} | {} | {n} | {:.2} ms | {:.2} ms | {:.2}× | {how} | {} | {} | {:.2e} | {} |",
                    policy.name(),
                    if distinct { "distinct" } else { "repeated" },
                    t_plain * 1e3,
                    t_realizable * 1e3,
                    t_realizable / t_plain,
                    report.lp_solves,
                    report.configurations,
                    report.relative_gap.unwrap_or(f64::NAN),
                    report.unplaceable.len(),
                );
            }
        }
    }
}
