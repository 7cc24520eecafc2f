//! Floors the LP's tolerance let slip. A job that needs less of a GPU than the solver's
//! feasibility tolerance (10 steps left at 10 steps/s beside jobs of 10⁶ steps) may come back with
//! no time at all: its floor row reads as met at 0. Its throughput then sits far under the floor
//! the policy's optimum gives it (`floors`), and a makespan or finish-time ratio over it is
//! infinite. Each such job gets the sliver it needs on its fastest type; a type that is full gives
//! it up pro rata from the others there, which moves their throughputs by at most that sliver's
//! share of the type. See `formulations/tie_break.md`.

use super::floors;
use crate::policies::{Outcome, PolicyKind};
use crate::problem::Problem;

/// The most time a job is topped up by: what a solver's tolerance hides, never a real shortfall.
const SLIVER: f64 = 1e-6;

/// A job under `(1 − UNDER)` of its floor is topped up.
const UNDER: f64 = 1e-6;

/// Gives every job the policy's optimum keeps at a floor, and that the solve left under it by
/// no more than a [`SLIVER`] of time, what it lacks.
pub(super) fn keep_floors(problem: &Problem, outcome: &mut Outcome) {
    // SJF's floor is the attaining job's own throughput: nothing there can be under it.
    if problem.policy == PolicyKind::ShortestJobFirst {
        return;
    }
    let Some(floors) = floors(problem, outcome) else { return };
    let mut thr = outcome.throughputs_under(problem, &problem.throughput);
    let mut time = outcome.time_used(problem);
    for (m, &floor) in floors.iter().enumerate() {
        if !(floor.is_finite() && floor > 0.0) || thr[m] >= floor * (1.0 - UNDER) {
            continue;
        }
        let fastest = (0..problem.num_types())
            .filter(|&w| problem.throughput.get(m, w) > 0.0 && problem.worker_types[w].count > 0.0)
            .max_by(|&a, &b| problem.throughput.get(m, a).total_cmp(&problem.throughput.get(m, b)));
        let Some(w) = fastest else { continue };
        let sliver = (floor - thr[m]) / problem.throughput.get(m, w);
        if sliver.is_nan() || sliver > SLIVER || time[m] + sliver > 1.0 {
            continue;
        }
        outcome.allocation.set(m, w, outcome.allocation.get(m, w) + sliver);
        outcome.make_room(problem, m, w);
        // The room made moved the others on `w`: read everyone again.
        thr = outcome.throughputs_under(problem, &problem.throughput);
        time = outcome.time_used(problem);
    }
}
