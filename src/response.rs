//! The contract's response: allocation, effective throughputs, objective and solver stats, keyed
//! by the request's ids and in the request's order. Built from a `Problem` and a policy `Outcome`.

use crate::policies::Outcome;
use crate::problem::{dot, Problem};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub policy: String,
    /// `allocation[job][worker type]`: fraction of wall-clock time on that type.
    pub allocation: IndexMap<String, IndexMap<String, f64>>,
    pub colocated_allocation: Vec<ColocatedAllocation>,
    /// Steps/s each job gets from its allocation, with its measured throughputs.
    pub effective_throughput: IndexMap<String, f64>,
    /// The policy's objective as the contract defines it, recomputed from the allocation.
    pub objective: Option<f64>,
    pub stats: Stats,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColocatedAllocation {
    pub jobs: [String; 2],
    pub allocation: IndexMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub backend: String,
    pub solve_seconds: f64,
    pub lp_solves: usize,
}

impl Response {
    pub fn new(
        problem: &Problem,
        outcome: &Outcome,
        backend: &str,
        solve_seconds: f64,
    ) -> Response {
        let names: Vec<&str> = problem
            .worker_types
            .iter()
            .map(|w| w.name.as_str())
            .collect();
        let mut allocation = IndexMap::with_capacity(problem.num_jobs());
        let mut effective_throughput = IndexMap::with_capacity(problem.num_jobs());
        for (m, job) in problem.jobs.iter().enumerate() {
            let row = outcome.allocation.row(m);
            allocation.insert(
                job.id.clone(),
                names
                    .iter()
                    .map(|n| n.to_string())
                    .zip(row.iter().copied())
                    .collect(),
            );
            effective_throughput.insert(job.id.clone(), dot(problem.measured.row(m), row));
        }
        Response {
            policy: problem.policy.name().to_string(),
            allocation,
            colocated_allocation: Vec::new(),
            effective_throughput,
            objective: outcome.objective,
            stats: Stats {
                backend: backend.to_string(),
                solve_seconds,
                lp_solves: outcome.lp_solves,
            },
        }
    }
}
