//! The cost of rounds that follow the allocation's decomposition (`Mode::Configurations`,
//! `formulations/round_mechanism.md`) against the priority selection, on the Gavel-like workload
//! of `benches/policies.rs` (26 model types, scale factors 1/2/4/8, n/4 GPUs of each of 3 types,
//! servers of 4; distinct throughput rows). Per policy and size, measured in the same run:
//!
//! - the allocation's solve (`Session::recompute_allocation`), the baseline;
//! - the decomposition the first round in mode `configurations` makes (that round less a round by
//!   priority), and its ratio to the solve;
//! - a steady round by priority and by the decomposition (mean of the next 199), and their ratio;
//! - after 200 rounds, the largest |allocation − received| by priority and by the decomposition,
//!   and the largest |deliverable − received| by the decomposition (what it promises).
//!
//! `cargo bench --bench configurations` prints the table (`ARBITER_BENCH_SIZES=16,64` for other
//! sizes); under `cargo test` it runs the smallest size once.

use arbiter::mechanism::{realizability, Config, Mode, Session};
use arbiter::policies::PolicyKind;
use arbiter::request::Request;
use arbiter::Problem;
use std::time::Instant;

#[path = "support/workload.rs"]
mod workload;
use workload::{cluster, gavel_jobs};

const POLICIES: [PolicyKind; 3] = [PolicyKind::MaxMinFairness, PolicyKind::MinMakespan, PolicyKind::MaxSumThroughput];
const ROUNDS: usize = 200;

fn problem(policy: PolicyKind, n: usize) -> Problem {
    let request = Request {
        policy: policy.name().to_string(),
        cluster: cluster(n),
        jobs: gavel_jobs(n, true),
        ..Request::default()
    };
    Problem::from_request(&request).expect("the generated request is valid")
}

/// The largest |target − received| over (job, type) the job can run on, the target being the
/// allocation, or with `deliverable` the allocation less the shortfall the session's check names.
fn gap(session: &Session, deliverable: bool) -> f64 {
    let report = realizability(session);
    let cluster = session.cluster();
    let mut worst: f64 = 0.0;
    for id in session.job_ids() {
        let (x, received) = (session.allocation(id).unwrap(), session.received_fraction(id).unwrap());
        let unplaceable = session.unplaceable_types(id).unwrap();
        for w in (0..x.len()).filter(|w| !unplaceable.contains(w)) {
            let name = cluster.type_name(w);
            let target = report
                .shortfall
                .iter()
                .find(|s| deliverable && s.job == id.as_ref() && s.worker_type == name)
                .map_or(x[w], |s| s.deliverable);
            worst = worst.max((target - received[w]).abs());
        }
    }
    worst
}

/// Seconds of the solve, of the first round and of the mean later round, and the session.
fn run(problem: &Problem, mode: Mode) -> (f64, f64, f64, Session) {
    let mut session = Session::from_problem(problem, Config { mode, ..Config::default() }).expect("a session");
    let t = Instant::now();
    session.recompute_allocation().expect("solves");
    let solve = t.elapsed().as_secs_f64();
    let t = Instant::now();
    session.next_round().expect("a round");
    let first = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for _ in 1..ROUNDS {
        session.next_round().expect("a round");
    }
    let steady = t.elapsed().as_secs_f64() / (ROUNDS - 1) as f64;
    (solve, first, steady, session)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("ARBITER_BENCH_SIZES") {
        Ok(list) if full => list.split(',').filter_map(|s| s.trim().parse().ok()).collect(),
        _ if full => vec![16, 32, 64, 128, 256],
        _ => vec![16],
    };
    println!(
        "| policy | jobs | solve | decomposition | ratio | round by priority | round by decomposition | ratio | \
         fraction | followed | X gap, priority | X gap, decomposition | deliverable gap, decomposition |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|");
    for policy in POLICIES {
        for &n in &sizes {
            let problem = problem(policy, n);
            let (solve, first_priority, priority, by_priority) = run(&problem, Mode::Rounds);
            let (_, first, configurations, followed) = run(&problem, Mode::Configurations);
            let decomposition = (first - first_priority).max(0.0);
            let report = realizability(&followed);
            println!(
                "| {} | {n} | {:.2} ms | {:.2} ms | {:.2}× | {:.1} µs | {:.1} µs | {:.2}× | {:.4} | {} | {:.4} | {:.4} | {:.4} |",
                policy.name(),
                solve * 1e3,
                decomposition * 1e3,
                decomposition / solve,
                priority * 1e6,
                configurations * 1e6,
                configurations / priority,
                report.fraction.unwrap_or(f64::NAN),
                followed.decomposition_skipped().map_or("yes".to_string(), |why| format!("no: {why}")),
                gap(&by_priority, false),
                gap(&followed, false),
                gap(&followed, true),
            );
        }
    }
}
