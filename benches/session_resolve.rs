//! A session's re-solve after one event when every job has its own throughput row: 16,384 jobs
//! (Gavel-like rows times a lognormal factor, σ = 0.1; 3 types, n/4 GPUs of each) under LAS, then
//! one arrival at a time, each followed by `recompute_allocation` (the policy's solve for the
//! current jobs and the reset of the rounds). The price decomposition (`method: auto`) against the
//! plain LP (`method: lp`) in the same run, the decomposition with and without the tie-break that
//! follows a session's optimum by default; goal: < 20 ms per re-solve.
//!
//! `cargo bench --bench session_resolve`; under `cargo test` it runs 512 jobs once.

use arbiter::max_min_ratio::Method;
use arbiter::mechanism::{Config, Session};
use arbiter::request::Request;
use arbiter::solver::tie_break::TieBreak;
use arbiter::Problem;
use std::time::Instant;

#[path = "support/workload.rs"]
mod workload;
use workload::{cluster, distinct_jobs};

/// A session of `n` distinct-row jobs (the last `arrivals` held back) under LAS with `method`,
/// its optimum followed by `tie_break`.
fn session(n: usize, arrivals: usize, method: Method, tie_break: TieBreak) -> (Session, Problem) {
    let request = Request {
        policy: "max_min_fairness".into(),
        cluster: cluster(n),
        jobs: distinct_jobs(n + arrivals, 0.1),
        ..Request::default()
    };
    let mut problem = Problem::from_request(&request).expect("the generated request is valid");
    problem.method = method;
    problem.tie_break = tie_break;
    let mut first = problem.clone();
    first.jobs.truncate(n);
    first.measured = rows(&problem.measured, n);
    first.throughput = rows(&problem.throughput, n);
    (Session::from_problem(&first, Config::default()).expect("a valid session"), problem)
}

fn rows(m: &arbiter::problem::Matrix, n: usize) -> arbiter::problem::Matrix {
    let mut out = arbiter::problem::Matrix::zeros(n, m.cols());
    for r in 0..n {
        out.row_mut(r).copy_from_slice(m.row(r));
    }
    out
}

/// The first solve's seconds and the median of `arrivals` re-solves, each after one arrival.
fn run(n: usize, arrivals: usize, method: Method, tie_break: TieBreak) -> (f64, f64) {
    let (mut session, all) = session(n, arrivals, method, tie_break);
    let t = Instant::now();
    session.recompute_allocation().expect("solves");
    let cold = t.elapsed().as_secs_f64();
    let mut times: Vec<f64> = (n..n + arrivals)
        .map(|m| {
            session.add_job(all.jobs[m].clone(), all.measured.row(m)).expect("a valid job");
            let t = Instant::now();
            session.recompute_allocation().expect("solves");
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (cold, times[times.len() / 2])
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let n = if full { 16384 } else { 512 };
    println!("| method | tie_break | jobs | first solve | re-solve after one arrival (median) | ratio to lp |");
    println!("|---|---|---:|---:|---:|---:|");
    let (lp_cold, lp) = run(n, if full { 3 } else { 1 }, Method::Lp, TieBreak::None);
    println!("| lp | none | {n} | {:.1} ms | {:.1} ms | 1× |", lp_cold * 1e3, lp * 1e3);
    // A session's default since its fractional solves are tie-broken too, and the bare optimum.
    for tie_break in [TieBreak::None, TieBreak::Throughput] {
        let (cold, fast) = run(n, if full { 21 } else { 1 }, Method::Auto, tie_break);
        println!(
            "| auto | {} | {n} | {:.1} ms | {:.1} ms | {:.3}× |",
            tie_break.name(),
            cold * 1e3,
            fast * 1e3,
            fast / lp
        );
    }
}
