//! The whole path of one request, as `arbiter solve` and `POST /v1/allocations` run it: the JSON
//! text read into a `Request`, validated into a `Problem`, solved by `arbiter::solve` (the policy,
//! its tie-break, the realizability check and the response) and written back as JSON text, with
//! the binary's allocator (mimalloc). Prints each step's median and the share of the whole that
//! the solve is, measured in the same run, on the generated Gavel-like workloads of
//! `benches/policies.rs` (repeated rows: 26 model types × 4 scale factors; distinct rows: every
//! throughput perturbed by its own factor).
//!
//! `cargo bench --bench request_path` prints the table (`ARBITER_BENCH_SIZES`,
//! `ARBITER_BENCH_POLICIES` and `ARBITER_BENCH_ROWS` narrow it); under `cargo test` it runs the
//! smallest size once.

use arbiter::lp::Backend;
use arbiter::policies::PolicyKind;
use arbiter::request::Request;
use arbiter::Problem;
use std::time::{Duration, Instant};

#[path = "support/table.rs"]
mod table;
#[path = "support/workload.rs"]
mod workload;
use workload::{cluster, gavel_jobs};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const POLICIES: [PolicyKind; 3] =
    [PolicyKind::MaxMinFairness, PolicyKind::FinishTimeFairness, PolicyKind::ShortestJobFirst];

/// Seconds of each step of one request: read, validate, solve, write, and the whole (the four and
/// the drops of what they built).
fn once(text: &str) -> [f64; 5] {
    let start = Instant::now();
    let (request, _) = Request::from_json_noting(text).expect("the generated request reads");
    let read = start.elapsed().as_secs_f64();
    let t = Instant::now();
    let problem = Problem::from_request(&request).expect("the generated request is valid");
    let validate = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let response = arbiter::solve(&problem, Backend::default()).expect("solves");
    let solve = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let out = serde_json::to_vec(&response).expect("a response always serializes");
    let write = t.elapsed().as_secs_f64();
    assert!(out.len() > text.len() / 8, "the response lists every job");
    drop((request, problem, response, out));
    [read, validate, solve, write, start.elapsed().as_secs_f64()]
}

/// Per step, the median over runs filling about `budget` (at least 3).
fn medians(text: &str, budget: Duration) -> [f64; 5] {
    let mut runs = Vec::new();
    let start = Instant::now();
    while runs.len() < 3 || (start.elapsed() < budget && runs.len() < 31) {
        runs.push(once(text));
    }
    std::array::from_fn(|step| {
        let mut times: Vec<f64> = runs.iter().map(|r| r[step]).collect();
        table::median(&mut times)
    })
}

fn main() {
    let run = table::Run::from_env(&[512, 2048, 16384, 65536]);
    let budget = Duration::from_secs_f64(if run.full { 2.0 } else { 0.0 });
    println!("| policy | rows | jobs | request | read | validate | solve | write | whole | solve / whole |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for policy in run.policies(&POLICIES) {
        for distinct in run.distinct() {
            for &n in &run.sizes {
                let request = Request {
                    policy: policy.name().to_string(),
                    cluster: cluster(n),
                    jobs: gavel_jobs(n, distinct),
                    ..Request::default()
                };
                let text = serde_json::to_string(&request).expect("a request serializes");
                let [read, validate, solve, write, whole] = medians(&text, budget);
                let ms = |s: f64| format!("{:.2} ms", s * 1e3);
                println!(
                    "| {} | {} | {n} | {:.1} MB | {} | {} | {} | {} | {} | {:.0}% |",
                    policy.name(),
                    if distinct { "distinct" } else { "repeated" },
                    text.len() as f64 / 1e6,
                    ms(read),
                    ms(validate),
                    ms(solve),
                    ms(write),
                    ms(whole),
                    100.0 * solve / whole
                );
            }
        }
    }
    unknown_fields(&run, budget);
}

/// The read of a request every job of which carries a field the contract does not know
/// (`"model"`), against the same request without it: the reader notes only whether it skipped
/// anything, and reads again for the paths (`ignored_fields`) when it did.
fn unknown_fields(run: &table::Run, budget: Duration) {
    println!();
    println!("| jobs | read | read, every job with an unknown field | ratio |");
    println!("|---:|---:|---:|---:|");
    for &n in &run.sizes {
        let request = Request {
            policy: "max_min_fairness".into(),
            cluster: cluster(n),
            jobs: gavel_jobs(n, true),
            ..Request::default()
        };
        let mut value = serde_json::to_value(&request).expect("a request serializes");
        let plain = value.to_string();
        for job in value["jobs"].as_array_mut().expect("jobs are a list") {
            job["model"] = "resnet50".into();
        }
        let marked = value.to_string();
        let read = |text: &str| {
            let mut times = Vec::new();
            let start = Instant::now();
            while times.len() < 3 || (start.elapsed() < budget && times.len() < 31) {
                let t = Instant::now();
                let (_, ignored) = Request::from_json_noting(text).expect("the generated request reads");
                times.push(t.elapsed().as_secs_f64());
                assert!(ignored.len() <= 1);
            }
            table::median(&mut times)
        };
        let (plain, marked) = (read(&plain), read(&marked));
        println!("| {n} | {:.2} ms | {:.2} ms | {:.2}× |", plain * 1e3, marked * 1e3, marked / plain);
    }
}
