//! Maximum total throughput: maximize `Σ_m thr_m`. Identical jobs share a column (the objective
//! is a sum, so splitting a group's time evenly loses nothing); on mostly distinct rows the price
//! decomposition solves it instead (`max_weighted_throughput` with every `a_m = 1` and no floors).
//! See `formulations/max_sum_throughput.md`.

use super::{colocated, Outcome, Policy};
use crate::error::Result;
use crate::formulation::{BaseLp, Groups};
use crate::lp::{Backend, LinearProgram, Sense};
use crate::max_min_ratio::MethodReport;
use crate::problem::Problem;
use crate::solver::max_weighted_throughput as decomposition;
use crate::space_sharing::kept_pairs;

pub struct MaxSumThroughput;

impl Policy for MaxSumThroughput {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        let pairs = kept_pairs(problem);
        let fallback = match decomposed(problem, pairs.is_empty(), backend)? {
            Ok(outcome) => return Ok(outcome),
            Err(why) => why,
        };
        let groups = Groups::identical_jobs(problem, &pairs);
        let mut base = BaseLp::with_pairs(problem, groups, &pairs, LinearProgram::new(Sense::Maximize));
        // In units of the largest gain: the solver's optimality tolerance is absolute, so rows of
        // 10⁻⁷ steps/s would read as worth nothing and get no time.
        let pair_gain = |pair: &crate::space_sharing::Pair, w: usize| pair.throughput[w][0] + pair.throughput[w][1];
        let largest = (problem.throughput.row_iter().flatten().copied())
            .chain(pairs.iter().flat_map(|pair| (0..problem.num_types()).map(move |w| pair_gain(pair, w))))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let unit = if largest > 0.0 { largest } else { 1.0 };
        base.set_objective(|m, w| problem.throughput.get(m, w) / unit);
        for (pair, cols) in pairs.iter().zip(&base.pair_cols) {
            for (w, col) in cols.iter().enumerate() {
                if let Some(c) = col {
                    base.lp.cost[*c] = pair_gain(pair, w) / unit;
                }
            }
        }
        let solution = backend.solve(base.lp.clone())?;
        let allocation = base.allocation(&solution, problem.num_jobs(), problem.num_types());
        let pair_time = base.pair_time(&solution);
        let mut objective: f64 = super::throughputs(problem, &allocation).iter().sum();
        for (pair, time) in pairs.iter().zip(&pair_time) {
            objective +=
                time.iter().enumerate().map(|(w, y)| y * (pair.throughput[w][0] + pair.throughput[w][1])).sum::<f64>();
        }
        Ok(Outcome {
            allocation,
            objective: Some(objective),
            lp_solves: 1,
            water_filling: None,
            method: Some(MethodReport::lp(fallback)),
            colocated: colocated(problem, &pairs, &pair_time),
            unconsolidated: crate::problem::Matrix::zeros(0, 0),
        })
    }
}

/// The decomposition (`max_weighted_throughput` with every `a_m = 1` and no floors), where the
/// request's method and its rows call for it and no colocation is formulated: `Err(None)` when
/// they do not, `Err(Some(why))` when it could not certify an optimum.
fn decomposed(
    problem: &Problem,
    no_pairs: bool,
    backend: Backend,
) -> Result<std::result::Result<Outcome, Option<String>>> {
    if !no_pairs {
        return Ok(Err(None));
    }
    let n = problem.num_jobs();
    let found = match decomposition::solve_problem(
        problem,
        &vec![1.0; n],
        &vec![0.0; n],
        backend,
        &Default::default(),
        // A session's last solve's prices, when it had one.
        decomposition::Starts { ray: None, warm: problem.warm_prices.as_deref() },
    )? {
        Ok(found) => found,
        Err(why) => return Ok(Err(why)),
    };
    Ok(Ok(Outcome {
        objective: Some(super::throughputs(problem, &found.allocation).iter().sum()),
        lp_solves: found.lp_solves,
        water_filling: None,
        method: Some(found.report()),
        colocated: colocated(problem, &[], &[]),
        unconsolidated: crate::problem::Matrix::zeros(0, 0),
        allocation: found.allocation,
    }))
}
