//! Maximum total throughput: maximize `Σ_m thr_m`. Identical jobs share a column (the objective
//! is a sum, so splitting a group's time evenly loses nothing). See `formulations/max_sum_throughput.md`.

use super::{throughputs, Outcome, Policy};
use crate::error::Result;
use crate::formulation::{BaseLp, Groups};
use crate::lp::{Backend, Sense};
use crate::problem::Matrix;
use crate::problem::Problem;

pub struct MaxSumThroughput;

impl Policy for MaxSumThroughput {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        let mut base = BaseLp::new(problem, Groups::identical_jobs(problem), Sense::Maximize, None);
        base.set_objective(|m, w| problem.throughput.get(m, w));
        let solution = backend.solve(base.lp.clone())?;
        let allocation = base.allocation(&solution, problem.num_jobs(), problem.num_types(), 1.0);
        let objective = throughputs(problem, &allocation).iter().sum();
        Ok(Outcome {
            allocation,
            objective: Some(objective),
            lp_solves: 1,
            water_filling: None,
            colocated: Matrix::zeros(0, 0),
        })
    }
}
