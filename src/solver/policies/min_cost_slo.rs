//! Minimum cost under SLOs: `min_cost` subject to `thr_m ≥ r_m / slo_m` for every job with an SLO.
//! Feasibility is decided first, exactly, by the max-min engine on those floors: if the best
//! allocation meets only a fraction z < 1 of them, the bottlenecked jobs (those that cannot get
//! more than that fraction while the others keep it) are named in a 422. See `formulations/min_cost_slo.md`.

use super::shortest_job_first::fastest_fill;
use super::{engine, min_cost, Outcome, Policy};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::max_min_ratio::{Method, RatioSolution};
use crate::problem::Problem;

pub struct MinCostSlo;

/// Below this fraction of their floors the SLOs count as unmeetable (LP round-off stays above).
const FEASIBLE: f64 = 1.0 - 1e-7;

impl Policy for MinCostSlo {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        let floor: Vec<f64> = (0..problem.num_jobs())
            .map(|m| match problem.jobs[m].slo_seconds {
                Some(slo) => problem.steps_remaining(m) / slo,
                None => 0.0,
            })
            .collect();
        // An SLO beyond what the job gets with the whole cluster to itself needs no LP to refuse.
        let alone: Vec<String> = (0..problem.num_jobs())
            .filter(|&m| floor[m] > 0.0 && (!floor[m].is_finite() || floor[m] > best_alone(problem, m)))
            .map(|m| problem.jobs[m].id.clone())
            .collect();
        if !alone.is_empty() {
            return Err(ArbiterError::new(
                ErrorCode::Infeasible,
                format!(
                    "the SLO of {} cannot be met even with the whole cluster to itself",
                    alone.iter().map(|id| format!("job {id}")).collect::<Vec<_>>().join(", ")
                ),
            )
            .with_jobs(alone));
        }
        let mut engine = engine(problem, backend);
        let mut check = engine.max_ratio(&floor)?;
        let decomposed = engine.method_report().is_some_and(|m| m.method == Method::Decomposition.name());
        if decomposed && check.z.is_some_and(|z| z < FEASIBLE) {
            // Confirmed on the plain LP before refusing: with floors 10²⁰ apart the decomposition
            // read z near 0 where the plain LP meets every floor (generated requests, 117 of 400).
            engine = engine.with_method(Method::Lp, problem.decomposition);
            let again = engine.max_ratio(&floor)?;
            check = RatioSolution { lp_solves: check.lp_solves + again.lp_solves, ..again };
        }
        if let Some(z) = check.z.filter(|&z| z < FEASIBLE) {
            // The jobs to name are the bottlenecks at level z: those that cannot get more than
            // z·floor while every SLO job keeps z·floor. Raising any of their SLOs is necessary.
            let level: Vec<f64> = floor.iter().map(|f| f * z).collect();
            let candidates: Vec<bool> = floor.iter().map(|&f| f > 0.0).collect();
            let (stuck, _) = engine.bottlenecks(&level, &candidates)?;
            // Round-off can hide the bottleneck; then every SLO job is named rather than none.
            let named = if stuck.iter().any(|&s| s) { stuck } else { candidates };
            let jobs: Vec<String> =
                (0..problem.num_jobs()).filter(|&m| named[m]).map(|m| problem.jobs[m].id.clone()).collect();
            let message = match jobs.as_slice() {
                [one] => format!(
                    "the SLO of job {one} cannot be met: at best it gets {:.1}% of the throughput it needs",
                    100.0 * z
                ),
                _ => format!(
                    "the SLOs of jobs {} cannot all be met: at best each gets {:.1}% of the throughput its SLO needs",
                    jobs.join(", "),
                    100.0 * z
                ),
            };
            return Err(ArbiterError::new(ErrorCode::Infeasible, message).with_jobs(jobs));
        }
        // Floors a hair below the requirement so round-off in the LP cannot make them infeasible.
        let floor: Vec<f64> = floor.iter().map(|f| f * FEASIBLE).collect();
        let mut outcome = min_cost::cheapest(problem, backend, &floor)?;
        // An SLO needing less of a GPU than the LP's tolerance (10⁶ steps in 10¹² s: 2.5·10⁻⁸ of a
        // GPU) can come back with no time: it gets its sliver on its type with the most steps per
        // dollar.
        let per_dollar =
            |m: usize, w: usize| problem.throughput.get(m, w) / problem.worker_types[w].cost_per_hour.unwrap_or(0.0);
        if outcome.top_up(problem, &floor, 0.0, per_dollar) {
            outcome.objective = Some(min_cost::throughput_per_dollar(problem, &outcome.allocation));
        }
        outcome.lp_solves += check.lp_solves;
        Ok(outcome)
    }
}

/// Job m's throughput with the cluster to itself.
fn best_alone(problem: &Problem, m: usize) -> f64 {
    let all: Vec<f64> = problem.worker_types.iter().map(|w| w.count).collect();
    crate::problem::dot(problem.throughput.row(m), &fastest_fill(problem, m, &all))
}
