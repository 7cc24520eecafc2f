//! FIFO as the contract states it: maximize `Σ_m (thr_m / max_w T[m][w]) · (M − rank_m)`, rank by
//! arrival from 0 (ties: order in `jobs`), so earlier jobs win their fastest types first.
//! See `formulations/fifo.md`.

use super::{throughputs, Outcome, Policy};
use crate::error::Result;
use crate::formulation::{BaseLp, Groups};
use crate::lp::{Backend, Sense};
use crate::problem::Problem;

pub struct Fifo;

/// `rank[m]`: position of job m in arrival order (stable, so ties keep request order).
pub fn arrival_ranks(problem: &Problem) -> Vec<usize> {
    let mut order: Vec<usize> = (0..problem.num_jobs()).collect();
    order.sort_by(|&a, &b| problem.jobs[a].arrival.total_cmp(&problem.jobs[b].arrival));
    let mut rank = vec![0; order.len()];
    for (r, &m) in order.iter().enumerate() {
        rank[m] = r;
    }
    rank
}

/// The per-job objective weight `(M − rank_m) / max_w T[m][w]`.
fn priority_weights(problem: &Problem) -> Vec<f64> {
    let n = problem.num_jobs();
    arrival_ranks(problem)
        .into_iter()
        .enumerate()
        .map(|(m, rank)| {
            let best = problem.throughput.row(m).iter().cloned().fold(0.0, f64::max);
            (n - rank) as f64 / best
        })
        .collect()
}

impl Policy for Fifo {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        let weights = priority_weights(problem);
        let mut base = BaseLp::new(problem, Groups::singletons(problem.num_jobs()), Sense::Maximize);
        base.set_objective(|m, w| weights[m] * problem.throughput.get(m, w));
        let solution = backend.solve(base.lp.clone())?;
        let allocation = base.allocation(&solution, problem.num_jobs(), problem.num_types());
        let objective = throughputs(problem, &allocation).iter().zip(&weights).map(|(t, k)| t * k).sum();
        Ok(Outcome::of(allocation, Some(objective), 1))
    }
}
