//! The isolated allocation: every job gets `1/M` of every type (in GPU-time, divided by its scale
//! factor, scaled down to fit its time). No solve. See `formulations/isolated.md`.

use super::{Outcome, Policy};
use crate::error::Result;
use crate::lp::Backend;
use crate::problem::Matrix;
use crate::problem::Problem;

pub struct Isolated;

impl Policy for Isolated {
    fn solve(&self, problem: &Problem, _backend: Backend) -> Result<Outcome> {
        Ok(Outcome {
            allocation: problem.isolated_allocation(),
            objective: None,
            lp_solves: 0,
            water_filling: None,
            method: None,
            colocated: Matrix::zeros(0, 0),
            unconsolidated: Matrix::zeros(0, 0),
        })
    }
}
