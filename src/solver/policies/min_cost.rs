//! Minimum cost: maximize throughput per dollar, `Σ_m thr_m / Σ_m Σ_w cost_w·sf_m·X[m][w]`, a
//! linear-fractional program made one LP by Charnes–Cooper (`X' = tX`, denominator fixed to 1).
//! The ratio does not fix the scale of X, so a second LP then takes, among allocations with the
//! optimal ratio, the one with the most throughput. See `formulations/min_cost.md`.

use super::{throughputs, Outcome, Policy};
use crate::error::Result;
use crate::formulation::{BaseLp, Groups};
use crate::lp::{Backend, LinearProgram, Row, Sense};
use crate::problem::{Matrix, Problem};

pub struct MinCost;

/// Relative slack on the optimal ratio in the second stage, so it stays feasible after round-off.
const RATIO_SLACK: f64 = 1e-9;

impl Policy for MinCost {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        cheapest(problem, backend, &vec![0.0; problem.num_jobs()])
    }
}

/// `Σ thr / Σ cost` of an allocation: steps/s per dollar-hour of the GPUs it occupies.
pub fn throughput_per_dollar(problem: &Problem, allocation: &Matrix) -> f64 {
    let thr: f64 = throughputs(problem, allocation).iter().sum();
    let cost: f64 = (0..problem.num_jobs())
        .map(|m| {
            let sf = problem.jobs[m].scale_factor as f64;
            (0..problem.num_types()).map(|w| type_cost(problem, w) * sf * allocation.get(m, w)).sum::<f64>()
        })
        .sum();
    if cost > 0.0 {
        thr / cost
    } else {
        0.0
    }
}

fn type_cost(problem: &Problem, w: usize) -> f64 {
    problem.worker_types[w].cost_per_hour.unwrap_or(0.0)
}

/// The min-cost allocation where every job m also gets `thr_m ≥ floor[m]`.
pub(super) fn cheapest(problem: &Problem, backend: Backend, floor: &[f64]) -> Result<Outcome> {
    let floors = floor.iter().any(|&f| f != 0.0);
    let groups = || {
        if !floors {
            Groups::identical_jobs(problem, &[])
        } else {
            Groups::singletons(problem.num_jobs())
        }
    };
    let throughput_terms =
        |base: &BaseLp, g: usize| base.terms(g, |w| problem.throughput.get(base.groups.members[g][0], w));
    let cost_terms = |base: &BaseLp, g: usize, scale: f64| {
        let sf = problem.jobs[base.groups.members[g][0]].scale_factor as f64;
        base.terms(g, |w| scale * type_cost(problem, w) * sf)
    };

    // Stage 2's model: max Σ T·X over the base rows (its ratio and floor rows come below).
    let mut base = BaseLp::new(problem, groups(), Sense::Maximize, None);
    base.set_objective(|m, w| problem.throughput.get(m, w));

    // Stage 1: the optimal ratio. Without floors it is the best column's own ratio (a ratio of
    // sums is at most its largest term); with them, Charnes–Cooper's LP:
    // max Σ T·X'  s.t. base rows × t, Σ cost·sf·X' = 1, T·X'_m ≥ floor_m·t.
    let ratio = if !floors {
        (0..base.cols.len())
            .flat_map(|g| throughput_terms(&base, g).into_iter().zip(cost_terms(&base, g, 1.0)))
            .map(|((_, thr), (_, cost))| thr / cost)
            .filter(|r| r.is_finite())
            .fold(0.0, f64::max)
    } else {
        let mut lp = LinearProgram::new(Sense::Maximize);
        let t = lp.add_col(0.0, 0.0, f64::INFINITY);
        let mut homogenized = BaseLp::with_lp(problem, groups(), lp, Some(t));
        homogenized.set_objective(|m, w| problem.throughput.get(m, w));
        let denominator: Vec<(usize, f64)> =
            (0..homogenized.cols.len()).flat_map(|g| cost_terms(&homogenized, g, 1.0)).collect();
        homogenized.lp.add_row(Row::equal(1.0, denominator));
        for (g, members) in homogenized.groups.members.clone().iter().enumerate() {
            if floor[members[0]] > 0.0 {
                let mut coefs = throughput_terms(&homogenized, g);
                coefs.push((t, -floor[members[0]]));
                homogenized.lp.add_row(Row::at_least(0.0, coefs));
            }
        }
        backend.solve(homogenized.lp)?.objective
    };

    // Stage 2: max Σ T·X  s.t. base rows, Σ T·X − ratio·Σ cost·sf·X ≥ 0, T·X_m ≥ floor_m.
    let keep_ratio: Vec<(usize, f64)> = (0..base.cols.len())
        .flat_map(|g| {
            let thr = throughput_terms(&base, g);
            let cost = cost_terms(&base, g, ratio * (1.0 - RATIO_SLACK));
            thr.into_iter().zip(cost).map(|((c, a), (_, b))| (c, a - b)).collect::<Vec<_>>()
        })
        .collect();
    base.lp.add_row(Row::at_least(0.0, keep_ratio));
    for (g, members) in base.groups.members.clone().iter().enumerate() {
        if floor[members[0]] > 0.0 {
            base.lp.add_row(Row::at_least(floor[members[0]], throughput_terms(&base, g)));
        }
    }
    let solution = backend.solve(base.lp.clone())?;
    let allocation = base.allocation(&solution, problem.num_jobs(), problem.num_types(), 1.0);
    let objective = throughput_per_dollar(problem, &allocation);
    Ok(Outcome {
        allocation,
        objective: Some(objective),
        lp_solves: if floors { 2 } else { 1 },
        water_filling: None,
        method: None,
        colocated: Matrix::zeros(0, 0),
        unconsolidated: Matrix::zeros(0, 0),
    })
}
