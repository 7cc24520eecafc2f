//! Minimum makespan: minimize `max_m r_m / thr_m`, as one LP in `z = 1/makespan`
//! (maximize z with `thr_m ≥ r_m·z`). See `formulations/min_makespan.md`.

use super::{engine, Outcome, Policy};
use crate::error::Result;
use crate::lp::Backend;
use crate::max_min_ratio::Engine;
use crate::problem::Problem;

pub struct MinMakespan;

/// `max_m r_m / thr_m` over jobs with steps left (0 when none has any).
pub fn makespan(problem: &Problem, thr: &[f64]) -> f64 {
    makespan_of(&demand(problem), thr, |_| true)
}

/// `max_m r_m / thr_m` over the jobs `counted` keeps with steps left, `remaining[m] = r_m` (the
/// policy's demand).
pub fn makespan_of(remaining: &[f64], thr: &[f64], counted: impl Fn(usize) -> bool) -> f64 {
    (remaining.iter().zip(thr).enumerate())
        .filter(|&(m, (&r, _))| counted(m) && r > 0.0)
        .map(|(_, (r, t))| r / t)
        .fold(0.0, f64::max)
}

impl Policy for MinMakespan {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        on_engine(problem, &mut engine(problem, backend))
    }
}

/// Each job's demand, its steps left: the makespan policy is `max z` with `thr_m ≥ z·demand_m`.
pub fn demand(problem: &Problem) -> Vec<f64> {
    (0..problem.num_jobs()).map(|m| problem.steps_remaining(m)).collect()
}

/// The policy on an engine the caller holds (see `policies::solve_keeping_engine`).
pub(crate) fn on_engine(problem: &Problem, engine: &mut Engine) -> Result<Outcome> {
    let demand = demand(problem);
    let solution = engine.max_ratio_deferring_split(&demand)?;
    let objective = match solution.z {
        // The split left to the tie-break that follows: the makespan is 1/z at the optimum.
        Some(z) if engine.split_deferred() => 1.0 / z,
        _ => {
            let thr = engine.throughputs(&solution.allocation, &solution.pair_time, &solution.unconsolidated);
            // From the steps left already read (no second walk of the jobs).
            let makespan = makespan_of(&demand, &thr, |_| true);
            match solution.z {
                // A job ~10¹⁰ times faster than the rest needs less of a GPU than the LP's
                // tolerance and may get none: the optimum is still 1/z, which the tie-break's
                // floors must keep.
                Some(z) if !makespan.is_finite() && z > 0.0 => 1.0 / z,
                _ => makespan,
            }
        }
    };
    Ok(Outcome::of_ratio(problem, engine, solution, objective))
}
