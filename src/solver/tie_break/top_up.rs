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
/// no more than a [`SLIVER`] of time, what it lacks. Returns how many jobs it topped up.
pub(super) fn keep_floors(problem: &Problem, outcome: &mut Outcome) -> usize {
    // SJF's floor is the attaining job's own throughput: nothing there can be under it.
    if problem.policy == PolicyKind::ShortestJobFirst {
        return 0;
    }
    let Some(floors) = floors(problem, outcome) else { return 0 };
    let mut topped = 0;
    for (m, &floor) in floors.iter().enumerate() {
        if !(floor.is_finite() && floor > 0.0) {
            continue;
        }
        let (thr, time) = throughput_and_time(problem, outcome, m);
        if thr >= floor * (1.0 - UNDER) {
            continue;
        }
        let fastest = (0..problem.num_types())
            .filter(|&w| problem.throughput.get(m, w) > 0.0 && problem.worker_types[w].count > 0.0)
            .max_by(|&a, &b| problem.throughput.get(m, a).total_cmp(&problem.throughput.get(m, b)));
        let Some(w) = fastest else { continue };
        let sliver = (floor - thr) / problem.throughput.get(m, w);
        if sliver.is_nan() || sliver > SLIVER || time + sliver > 1.0 {
            continue;
        }
        outcome.allocation.set(m, w, outcome.allocation.get(m, w) + sliver);
        make_room(problem, outcome, m, w);
        topped += 1;
    }
    topped
}

/// Job `m`'s throughput (the policy's `T`, with its colocated and unconsolidated time) and the
/// share of time it runs.
fn throughput_and_time(problem: &Problem, outcome: &Outcome, m: usize) -> (f64, f64) {
    let x = outcome.allocation.row(m);
    let mut thr = crate::problem::dot(problem.throughput.row(m), x);
    let mut time: f64 = x.iter().sum();
    for (k, colocation) in problem.colocations.iter().enumerate().take(outcome.colocated.rows()) {
        if let Some(i) = colocation.jobs.iter().position(|&j| j == m) {
            let y = outcome.colocated.row(k);
            thr += y.iter().zip(&colocation.throughput).map(|(&y, t)| y * t[i]).sum::<f64>();
            time += y.iter().sum::<f64>();
        }
    }
    if let Some(tu) = &problem.unconsolidated {
        if m < outcome.unconsolidated.rows() {
            let u = outcome.unconsolidated.row(m);
            thr += crate::problem::dot(tu.row(m), u);
            time += u.iter().sum::<f64>();
        }
    }
    (thr, time)
}

/// Brings type `w` back within its GPUs after job `m` was given more of it: every other job's
/// and pair's time there shrinks by the same factor.
fn make_room(problem: &Problem, outcome: &mut Outcome, m: usize, w: usize) {
    let sf = |j: usize| problem.jobs[j].scale_factor as f64;
    let count = problem.worker_types[w].count;
    let ours = sf(m) * outcome.allocation.get(m, w);
    let mut others = 0.0;
    for j in (0..problem.num_jobs()).filter(|&j| j != m) {
        others += sf(j) * outcome.allocation.get(j, w);
        if j < outcome.unconsolidated.rows() {
            others += sf(j) * outcome.unconsolidated.get(j, w);
        }
    }
    if m < outcome.unconsolidated.rows() {
        others += sf(m) * outcome.unconsolidated.get(m, w);
    }
    for (k, colocation) in problem.colocations.iter().enumerate().take(outcome.colocated.rows()) {
        others += sf(colocation.jobs[0]) * outcome.colocated.get(k, w);
    }
    if ours + others <= count || others <= 0.0 {
        return;
    }
    let keep = ((count - ours) / others).clamp(0.0, 1.0);
    for j in (0..problem.num_jobs()).filter(|&j| j != m) {
        outcome.allocation.set(j, w, outcome.allocation.get(j, w) * keep);
    }
    for j in 0..outcome.unconsolidated.rows() {
        outcome.unconsolidated.set(j, w, outcome.unconsolidated.get(j, w) * keep);
    }
    for k in 0..outcome.colocated.rows() {
        outcome.colocated.set(k, w, outcome.colocated.get(k, w) * keep);
    }
}
