//! The contract's response: allocation, effective throughputs, objective and solver stats, keyed
//! by the request's ids and in the request's order. Built from a `Problem` and a policy `Outcome`.

pub use super::allocation_row::AllocationRow;
use crate::policies::{Outcome, PolicyKind};
use crate::problem::Problem;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Response {
    pub policy: String,
    /// `allocation[job][worker type]`: fraction of wall-clock time on that type.
    #[schema(value_type = IndexMap<String, IndexMap<String, f64>>)]
    pub allocation: IndexMap<String, AllocationRow>,
    pub colocated_allocation: Vec<ColocatedAllocation>,
    /// Placement sensitivity: `unconsolidated_allocation[job][worker type]`, the time the job runs
    /// with its GPUs spread over servers (at its unconsolidated throughput); only jobs with some.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schema(value_type = IndexMap<String, IndexMap<String, f64>>)]
    pub unconsolidated_allocation: IndexMap<String, AllocationRow>,
    /// Steps/s each job gets from its allocation, with its measured throughputs.
    pub effective_throughput: IndexMap<String, f64>,
    /// Per worker type: GPUs the allocation uses (alone, in pairs, unconsolidated) over its GPUs.
    pub utilization: IndexMap<String, f64>,
    /// The policy's objective as the contract defines it, recomputed from the allocation.
    pub objective: Option<f64>,
    /// Water-filling policies: per job, its normalized throughput and the level it froze at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levels: Option<IndexMap<String, JobLevel>>,
    /// With `estimate_missing`: `estimated_throughput[job][worker type]`, the throughputs the
    /// estimator filled in (the others were given).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub estimated_throughput: crate::estimator::fill::Estimated,
    /// With `estimate_missing`: the colocated throughputs the estimator filled in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub estimated_colocations: Vec<crate::estimator::fill::EstimatedColocation>,
    /// Fields of the request that the contract does not know, which were ignored (a misspelt
    /// `wieght`, say): each path once, `[*]` for the index of a field that recurs across a list
    /// (`jobs[*].model`), at most 32 named. Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_fields: Vec<String>,
    pub stats: Stats,
}

/// Where water-filling left a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobLevel {
    /// `nt_m = thr_m / thr_equal_m` of the allocation.
    pub normalized_throughput: f64,
    /// `(sf_m / w_m)·nt_m` when the job froze, with the weight it had at that iteration.
    pub level: f64,
    /// The water-filling iteration (from 0) at which the job froze.
    pub iteration: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ColocatedAllocation {
    pub jobs: [String; 2],
    pub allocation: IndexMap<String, f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Stats {
    pub backend: String,
    pub solve_seconds: f64,
    pub lp_solves: usize,
    /// Water-filling policies: how many levels were raised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<usize>,
    /// Space sharing: how many colocations were offered, kept after pruning, and given time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<PairStats>,
    /// POP: how the jobs and GPUs were partitioned, when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitioning: Option<Partitioning>,
    /// The tie-break applied after the optimum (`none` where the policy needs none, or asked).
    pub tie_break: crate::solver::tie_break::TieBreak,
    /// Policies on the exact engine: which method solved the max-min ratio (`decomposition` or
    /// `lp`) and, when the decomposition was tried and did not certify an optimum, why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<crate::max_min_ratio::MethodReport>,
    /// The `throughput` tie-break: which method solved its second LP (`decomposition` on mostly
    /// distinct rows, `lp` otherwise) and, when the decomposition did not certify, why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie_break_method: Option<crate::max_min_ratio::MethodReport>,
    /// Why the tie-break asked for was not applied although the policy takes it: its second solve
    /// failed (numerical trouble in the LP solver), and the optimum's own allocation is returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie_break_skipped: Option<String>,
    /// How much of the allocation rounds on whole GPUs can deliver (`formulations/realizability.md`):
    /// the realizable fraction and the jobs that lose time, or why the check was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realizable: Option<crate::solver::realizability::RealizabilityReport>,
    /// With `realizable: true`: whether the allocation is the policy's optimum over round
    /// configurations, and how far it is from the fractional optimum (`solver::realizable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realizable_solve: Option<crate::solver::realizable::RealizableReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PairStats {
    pub offered: usize,
    /// Pairs with at least one type where their combined normalized throughput exceeds the threshold.
    pub kept: usize,
    /// Pairs with time in the allocation.
    pub used: usize,
    pub threshold: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Partitioning {
    /// Number of sub-problems.
    pub partitions: usize,
    /// `requested` (the request's `partitions`) or `automatic` (chosen by size).
    pub chosen: String,
    /// Jobs in each sub-problem.
    pub jobs: Vec<usize>,
    /// Seconds of the slowest sub-problem (they run in parallel).
    pub slowest_seconds: f64,
}

impl Response {
    /// `kept_pairs`: with space sharing, how many offered colocations the formulations kept
    /// (`space_sharing::count_kept`); `None` without it.
    pub fn new(
        problem: &Problem,
        outcome: &Outcome,
        kept_pairs: Option<usize>,
        backend: &str,
        solve_seconds: f64,
    ) -> Response {
        // One list of the names for every row.
        let names: Arc<[String]> = problem.worker_types.iter().map(|w| w.name.clone()).collect();
        let row = |time: &[f64]| AllocationRow::of(&names, time.to_vec());
        let mut allocation = IndexMap::with_capacity(problem.num_jobs());
        let mut effective_throughput = IndexMap::with_capacity(problem.num_jobs());
        let thr = outcome.throughputs_under(problem, &problem.measured);
        let mut unconsolidated_allocation = IndexMap::new();
        if problem.unconsolidated.is_some() {
            for m in 0..outcome.unconsolidated.rows().min(problem.num_jobs()) {
                let time = outcome.unconsolidated.row(m);
                if time.iter().any(|&u| u > 0.0) {
                    unconsolidated_allocation.insert(problem.jobs[m].id.clone(), row(time));
                }
            }
        }
        let mut colocated_allocation = Vec::new();
        for k in 0..outcome.colocated.rows() {
            let time = outcome.colocated.row(k);
            if !time.iter().any(|&y| y > 0.0) {
                continue;
            }
            let colocation = &problem.colocations[k];
            let jobs = colocation.jobs.map(|m| problem.jobs[m].id.clone());
            let allocation = names.iter().cloned().zip(time.iter().copied()).filter(|&(_, y)| y > 0.0).collect();
            colocated_allocation.push(ColocatedAllocation { jobs, allocation });
        }
        for (m, job) in problem.jobs.iter().enumerate() {
            allocation.insert(job.id.clone(), row(outcome.allocation.row(m)));
            effective_throughput.insert(job.id.clone(), thr[m]);
        }
        let objective = match outcome.objective {
            // The makespan of the allocation answered: infinite (null) if a job with steps left
            // gets no time, as the LP's tolerance allows for one that needs almost none. With the
            // throughputs the policy saw (all 1 when type-blind), as the contract defines it.
            Some(o) if problem.policy == PolicyKind::MinMakespan => {
                let seen = outcome.throughputs_under(problem, &problem.throughput);
                Some(o).filter(|_| crate::policies::min_makespan::makespan(problem, &seen).is_finite())
            }
            other => other,
        };
        let pairs = kept_pairs.map(|kept| PairStats {
            offered: problem.colocations.len(),
            kept,
            used: colocated_allocation.len(),
            threshold: problem.colocation_threshold,
        });
        let levels = outcome.water_filling.as_ref().map(|report| {
            problem
                .jobs
                .iter()
                .enumerate()
                .map(|(m, job)| {
                    let level = JobLevel {
                        normalized_throughput: report.normalized_throughput[m],
                        level: report.level[m],
                        iteration: report.frozen_at[m],
                    };
                    (job.id.clone(), level)
                })
                .collect()
        });
        let used = outcome.gpus_used(problem);
        let utilization = names
            .iter()
            .zip(&problem.worker_types)
            .zip(&used)
            .map(|((n, t), &u)| (n.clone(), if t.count > 0.0 { u / t.count } else { 0.0 }))
            .collect();
        Response {
            policy: problem.policy.name().to_string(),
            utilization,
            allocation,
            colocated_allocation,
            unconsolidated_allocation,
            effective_throughput,
            objective,
            levels,
            estimated_throughput: Default::default(),
            estimated_colocations: Vec::new(),
            ignored_fields: Vec::new(),
            stats: Stats {
                backend: backend.to_string(),
                solve_seconds,
                lp_solves: outcome.lp_solves,
                iterations: outcome.water_filling.as_ref().map(|r| r.iterations),
                pairs,
                partitioning: None,
                tie_break: crate::solver::tie_break::TieBreak::None,
                method: outcome.method.clone(),
                tie_break_method: None,
                tie_break_skipped: None,
                realizable: None,
                realizable_solve: None,
            },
        }
    }
}
