//! The embedded demo: a small heterogeneous cluster and a few jobs, so that `arbiter demo` (and
//! the README's run command) shows an allocation with no input at all, and a table to read it by.

use crate::problem::Problem;
use crate::request::{EntitySpec, Request};
use crate::response::Response;
use std::fmt::Write;

/// The demo request (`fixtures/demo.json`), with its policy replaced by `policy` and given what
/// that policy needs: `hierarchical` two entities (research, fair share; product, FIFO, weight 2)
/// over alternating jobs, `allox` only the single-GPU jobs (AlloX gives each job one GPU). The
/// demo's jobs already carry steps, an SLO (resnet50) and the types' prices, for the makespan,
/// FTF, SJF and cost policies.
pub fn request(policy: &str) -> Request {
    let mut request = every_job();
    request.policy = policy.to_string();
    match policy {
        "hierarchical" => {
            let entity = |weight: f64, policy: &str| EntitySpec {
                weight: Some(weight),
                policy: Some(policy.to_string()),
                parent: None,
            };
            request.entities = Some(
                [("research".to_string(), entity(1.0, "fairness")), ("product".to_string(), entity(2.0, "fifo"))]
                    .into(),
            );
            for (i, job) in request.jobs.iter_mut().enumerate() {
                job.entity = Some(if i % 2 == 0 { "research" } else { "product" }.to_string());
            }
        }
        "allox" => request.jobs.retain(|j| j.scale_factor.unwrap_or(1.0) == 1.0),
        _ => {}
    }
    request
}

/// The demo request as `fixtures/demo.json` has it, before any policy drops jobs.
fn every_job() -> Request {
    Request::from_json(include_str!("../fixtures/demo.json")).expect("the demo request parses")
}

/// The demo's jobs that `problem` (the demo request of some policy) does not hold.
fn left_out(problem: &Problem) -> Vec<String> {
    every_job().jobs.into_iter().map(|j| j.id).filter(|id| !problem.jobs.iter().any(|j| &j.id == id)).collect()
}

/// A fixed-width table of the allocation: one row per job, one column per worker type.
pub fn table(problem: &Problem, response: &Response) -> String {
    let types: Vec<&str> = problem.worker_types.iter().map(|w| w.name.as_str()).collect();
    let id_width = problem.jobs.iter().map(|j| j.id.len()).max().unwrap_or(3).max(3);
    let mut out = String::new();
    let _ = write!(out, "{:<id_width$}  {:>3}  {:>6}", "job", "sf", "weight");
    for t in &types {
        let _ = write!(out, "  {t:>7}");
    }
    let _ = writeln!(out, "  {:>12}", "steps/s");
    for job in &problem.jobs {
        let _ = write!(out, "{:<id_width$}  {:>3}  {:>6}", job.id, job.scale_factor, job.weight);
        for t in &types {
            let _ = write!(out, "  {:>7.3}", response.allocation[&job.id][*t]);
        }
        let _ = writeln!(out, "  {:>12.3}", response.effective_throughput[&job.id]);
    }
    let _ = write!(out, "{:<id_width$}  {:>3}  {:>6}", "used", "", "");
    for t in &types {
        let _ = write!(out, "  {:>6.1}%", 100.0 * response.utilization[*t]);
    }
    let _ = writeln!(out);
    let gpus: Vec<String> = problem.worker_types.iter().map(|w| format!("{} {}", w.count, w.name)).collect();
    let _ = writeln!(out, "\npolicy {} on {} GPUs", response.policy, gpus.join(" + "));
    let left_out = left_out(problem);
    if !left_out.is_empty() {
        let _ = writeln!(
            out,
            "left out of the demo's jobs: {} ({} gives each job one GPU)",
            left_out.join(", "),
            response.policy
        );
    }
    match response.objective {
        Some(objective) => {
            let _ = writeln!(out, "objective {objective:.6}");
        }
        None => {
            let _ = writeln!(out, "objective: none (this policy does not optimize)");
        }
    }
    let _ = writeln!(
        out,
        "solved by {} in {:.2} ms ({} LP solves), tie-break: {}",
        response.stats.backend,
        response.stats.solve_seconds * 1e3,
        response.stats.lp_solves,
        serde_json::to_value(response.stats.tie_break)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    );
    out
}
