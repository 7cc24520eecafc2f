//! The isolated allocation: every job gets `1/M` of every type (in GPU-time, divided by its scale
//! factor, scaled down to fit its time). No solve. See `formulations/isolated.md`.

use super::{Outcome, Policy};
use crate::error::Result;
use crate::lp::Backend;
use crate::problem::Problem;

pub struct Isolated;

impl Policy for Isolated {
    fn solve(&self, problem: &Problem, _backend: Backend) -> Result<Outcome> {
        Ok(Outcome::of(problem.isolated_allocation(), None, 0))
    }
}
