//! The proportional allocation: every job gets `X_equal[w] = count_w / Σ count` of every type,
//! scaled by one common factor so the GPUs the jobs occupy fit the cluster. No solve.
//! See `formulations/proportional.md`.

use super::{Outcome, Policy};
use crate::error::Result;
use crate::lp::Backend;
use crate::problem::{Matrix, Problem};

pub struct Proportional;

impl Policy for Proportional {
    fn solve(&self, problem: &Problem, _backend: Backend) -> Result<Outcome> {
        let share = problem.equal_share();
        // Σ_m sf_m · X_equal[w] · s ≤ count_w  ⟺  s ≤ Σ count / Σ sf.
        let occupied: f64 = problem.jobs.iter().map(|j| j.scale_factor as f64).sum();
        let s = (problem.total_gpus() / occupied).min(1.0);
        let mut allocation = Matrix::zeros(problem.num_jobs(), problem.num_types());
        for m in 0..problem.num_jobs() {
            for (w, x) in allocation.row_mut(m).iter_mut().enumerate() {
                *x = share[w] * s;
            }
        }
        Ok(Outcome::of(allocation, None, 0))
    }
}
