//! Least attained service (max-min fairness), heterogeneity-aware or not:
//! maximize `min_m (sf_m / weight_m) · thr_m / thr_equal_m`. See `formulations/max_min_fairness.md`.

use super::{engine, Outcome, Policy};
use crate::error::Result;
use crate::lp::Backend;
use crate::max_min_ratio::Engine;
use crate::problem::Problem;

pub struct MaxMinFairness;

/// `(sf_m / weight_m) · nt_m` for every job: the quantity LAS raises for the worst job.
pub fn weighted_normalized_throughputs(problem: &Problem, thr: &[f64]) -> Vec<f64> {
    let thr_equal = problem.equal_share_throughput();
    problem
        .jobs
        .iter()
        .enumerate()
        .map(|(m, job)| job.scale_factor as f64 / job.weight * thr[m] / thr_equal[m])
        .collect()
}

impl Policy for MaxMinFairness {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        on_engine(problem, &mut engine(problem, backend))
    }
}

/// Each job's demand `w_m·thr_equal_m/sf_m`: LAS is `max z` with `thr_m ≥ z·demand_m`, since
/// `(sf/w)·thr/thr_equal ≥ z  ⟺  thr ≥ z · w·thr_equal/sf`.
pub fn demand(problem: &Problem) -> Vec<f64> {
    let thr_equal = problem.equal_share_throughput();
    problem.jobs.iter().enumerate().map(|(m, job)| job.weight * thr_equal[m] / job.scale_factor as f64).collect()
}

/// The policy on an engine the caller holds (see `policies::solve_keeping_engine`).
pub(crate) fn on_engine(problem: &Problem, engine: &mut Engine) -> Result<Outcome> {
    let demand = demand(problem);
    let solution = engine.max_ratio_deferring_split(&demand)?;
    let objective = match solution.z {
        // The split left to the tie-break that follows: the objective is the optimum's z.
        Some(z) if engine.split_deferred() => z,
        z => {
            let thr = engine.throughputs(&solution.allocation, &solution.pair_time, &solution.unconsolidated);
            // `(sf_m/w_m)·thr_m/thr_equal_m = thr_m/demand_m`: the objective without a second walk of the jobs.
            let level = thr.iter().zip(&demand).map(|(t, d)| t / d).fold(f64::INFINITY, f64::min);
            match z {
                // A job whose demand is ~10¹⁸ times below another's (weights and throughputs far
                // apart) needs less of a GPU than the LP's tolerance and may get none: the
                // optimum is still z, which the tie-break's floors must keep and whose top-up
                // gives that job its sliver.
                Some(z) if level == 0.0 && z > 0.0 => z,
                _ => level,
            }
        }
    };
    Ok(Outcome::of_ratio(problem, engine, solution, objective))
}
