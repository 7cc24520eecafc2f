//! Shortest job first as the paper states it: minimize `min_m r_m / thr_m`. The minimum is
//! attained by giving the job with the shortest best-case duration its fastest time; the rest of
//! the cluster then goes the same way to the next-shortest job, and so on (no LP: each step is a
//! fractional knapsack, exact by greedy on throughput). See `formulations/shortest_job_first.md`.

use super::{throughputs, Outcome, Policy};
use crate::error::Result;
use crate::lp::Backend;
use crate::problem::{Matrix, Problem};

pub struct ShortestJobFirst;

/// Job m's best allocation from `free` GPUs: its fastest types first, until its time is used up.
pub(super) fn fastest_fill(problem: &Problem, m: usize, free: &[f64]) -> Vec<f64> {
    let row = problem.throughput.row(m);
    let sf = problem.jobs[m].scale_factor as f64;
    let mut types: Vec<usize> = (0..row.len()).filter(|&w| row[w] > 0.0 && free[w] > 0.0).collect();
    types.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
    let mut x = vec![0.0; row.len()];
    let mut time = 1.0;
    for w in types {
        x[w] = (free[w] / sf).min(time);
        time -= x[w];
        if time <= 0.0 {
            break;
        }
    }
    x
}

impl Policy for ShortestJobFirst {
    fn solve(&self, problem: &Problem, _backend: Backend) -> Result<Outcome> {
        let full: Vec<f64> = problem.worker_types.iter().map(|w| w.count).collect();
        let mut order: Vec<(f64, usize)> = (0..problem.num_jobs())
            .filter(|&m| problem.steps_remaining(m) > 0.0)
            .map(|m| {
                let best = crate::problem::dot(problem.throughput.row(m), &fastest_fill(problem, m, &full));
                (problem.steps_remaining(m) / best, m)
            })
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));

        let mut free = full;
        let mut allocation = Matrix::zeros(problem.num_jobs(), problem.num_types());
        for &(_, m) in &order {
            let x = fastest_fill(problem, m, &free);
            for (w, &v) in x.iter().enumerate() {
                free[w] = (free[w] - v * problem.jobs[m].scale_factor as f64).max(0.0);
            }
            allocation.row_mut(m).copy_from_slice(&x);
        }
        let thr = throughputs(problem, &allocation);
        let objective = order.first().map_or(0.0, |&(_, m)| problem.steps_remaining(m) / thr[m]);
        Ok(Outcome::of(allocation, Some(objective), 0))
    }
}
