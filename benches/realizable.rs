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
//! smallest size once. `ARBITER_BENCH_PAIRS=K` turns space sharing on: each job is offered about
//! K colocations with jobs of its scale factor, each keeping 30–90% of its throughput (seeded).

use arbiter::lp::Backend;
use arbiter::policies::PolicyKind;
use arbiter::request::{ColocationSpec, JobSpec, Request};
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
    let jobs = gavel_jobs(n, distinct);
    let pairs: usize = std::env::var("ARBITER_BENCH_PAIRS").ok().and_then(|k| k.parse().ok()).unwrap_or(0);
    let colocations = (pairs > 0).then(|| colocations(&jobs, pairs));
    let request = Request {
        policy: policy.name().to_string(),
        cluster: cluster(n),
        jobs,
        realizable: Some(realizable),
        tie_break: std::env::var("ARBITER_BENCH_TIE_BREAK").ok(),
        space_sharing: colocations.is_some().then_some(true),
        colocations,
        ..Request::default()
    };
    Problem::from_request(&request).expect("the generated request is valid")
}

/// About `per_job` colocations for each job, with jobs of its scale factor, each keeping 30–90%
/// of its throughput on every type both run on.
fn colocations(jobs: &[JobSpec], per_job: usize) -> Vec<ColocationSpec> {
    let mut rng = workload::Rng(7);
    let mut seen = std::collections::HashSet::new();
    let mut offered = Vec::new();
    for a in 0..jobs.len() {
        for _ in 0..per_job.div_ceil(2) {
            let b = rng.below(jobs.len());
            let key = (a.min(b), a.max(b));
            if a == b || jobs[a].scale_factor != jobs[b].scale_factor || !seen.insert(key) {
                continue;
            }
            let (ja, jb) = (&jobs[key.0], &jobs[key.1]);
            let throughput = ja
                .throughput
                .iter()
                .map(|(t, x)| {
                    let (x, y) = (x.unwrap_or(0.0), jb.throughput.get(t).copied().flatten().unwrap_or(0.0));
                    (t.clone(), [x * rng.uniform(0.3, 0.9), y * rng.uniform(0.3, 0.9)])
                })
                .collect();
            offered.push(ColocationSpec { jobs: [ja.id.clone(), jb.id.clone()], throughput });
        }
    }
    offered
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
    (table::median(&mut plains), table::median(&mut realizables), report.expect("the realizable solve reports"))
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
