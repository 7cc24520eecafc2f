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

/// A job under `(1 − UNDER)` of its floor is topped up.
const UNDER: f64 = 1e-6;

/// Gives every job the policy's optimum keeps at a floor, and that the solve left under it by
/// no more than a sliver of time (`Outcome::top_up`), what it lacks, on its fastest type.
pub(super) fn keep_floors(problem: &Problem, outcome: &mut Outcome) {
    // SJF's floor is the attaining job's own throughput: nothing there can be under it.
    if problem.policy == PolicyKind::ShortestJobFirst {
        return;
    }
    let Some(floors) = floors(problem, outcome) else { return };
    outcome.top_up(problem, &floors, UNDER, |m, w| problem.throughput.get(m, w));
}
