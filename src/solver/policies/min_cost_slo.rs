//! Minimum cost under SLOs: `min_cost` subject to `thr_m ≥ r_m / slo_m` for every job with an SLO.
//! Feasibility is decided first, exactly, by the max-min engine on those floors: if the best
//! allocation meets only a fraction z < 1 of them, the bottlenecked jobs (those that cannot get
//! more than that fraction while the others keep it) are named in a 422. See `formulations/min_cost_slo.md`.

use super::shortest_job_first::fastest_fill;
use super::{engine, min_cost, Outcome, Policy};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
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
        let check = engine.max_ratio(&floor)?;
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
        if keep_slivers(problem, &mut outcome, &floor) {
            outcome.objective = Some(min_cost::throughput_per_dollar(problem, &outcome.allocation));
        }
        outcome.lp_solves += check.lp_solves;
        Ok(outcome)
    }
}

/// The most time a job's floor is topped up by: what the LP's tolerance hides, never a real
/// shortfall.
const SLIVER: f64 = 1e-6;

/// An SLO whose floor needs less of a GPU than the LP's feasibility tolerance (10⁶ steps in 10¹²
/// seconds: 2.5·10⁻⁸ of a GPU) can come back with no time at all, its floor row read as met at 0.
/// Such a job gets the sliver it lacks on the type with the most steps per dollar for it; a type
/// that is full gives it up pro rata from the others there (`Outcome::make_room`), which moves
/// their throughputs by at most that sliver's share of the type. Whether any job was topped up.
fn keep_slivers(problem: &Problem, outcome: &mut Outcome, floor: &[f64]) -> bool {
    let mut topped = false;
    let mut thr = outcome.throughputs_under(problem, &problem.throughput);
    let mut time = outcome.time_used(problem);
    for m in 0..problem.num_jobs() {
        if floor[m] <= 0.0 || thr[m] >= floor[m] {
            continue;
        }
        let cost = |w: usize| problem.worker_types[w].cost_per_hour.unwrap_or(0.0);
        let sliver = |w: usize| (floor[m] - thr[m]) / problem.throughput.get(m, w);
        let best = (0..problem.num_types())
            .filter(|&w| problem.throughput.get(m, w) > 0.0 && problem.worker_types[w].count > 0.0)
            .filter(|&w| sliver(w) <= SLIVER && time[m] + sliver(w) <= 1.0)
            .max_by(|&a, &b| {
                let per_dollar = |w: usize| problem.throughput.get(m, w) / cost(w);
                per_dollar(a).total_cmp(&per_dollar(b))
            });
        if let Some(w) = best {
            outcome.allocation.set(m, w, outcome.allocation.get(m, w) + sliver(w));
            outcome.make_room(problem, m, w);
            // The room made moved the others on `w`: read everyone again.
            thr = outcome.throughputs_under(problem, &problem.throughput);
            time = outcome.time_used(problem);
            topped = true;
        }
    }
    topped
}

/// Job m's throughput with the cluster to itself.
fn best_alone(problem: &Problem, m: usize) -> f64 {
    let all: Vec<f64> = problem.worker_types.iter().map(|w| w.count).collect();
    crate::problem::dot(problem.throughput.row(m), &fastest_fill(problem, m, &all))
}
