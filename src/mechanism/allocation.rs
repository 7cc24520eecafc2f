//! The allocation a session runs on: solved with the session's policy on the active jobs and the
//! healthy GPUs, or given; installing one resets received time and carries deficits over.

use super::priority;
use super::session::{invalid, Session};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::policies;
use crate::problem::{Job, Matrix, Problem, WorkerType};

/// Allocations below this are solver noise: granting them would cost a whole round for nothing.
const ALLOCATION_EPSILON: f64 = 1e-9;
/// Slack for a row of a given allocation summing above 1.
const ROW_TOLERANCE: f64 = 1e-6;

impl Session {
    /// Installs an allocation computed elsewhere (rows in `job_ids` order), as a recomputation
    /// would: received time resets, deficits carry over.
    pub fn set_allocation(&mut self, allocation: &Matrix) -> Result<()> {
        self.check_shape(allocation, "allocation")?;
        for (m, j) in self.jobs.iter().enumerate() {
            let row = allocation.row(m);
            for (w, &x) in row.iter().enumerate() {
                if !(x.is_finite() && (0.0..=1.0 + ROW_TOLERANCE).contains(&x)) {
                    return Err(invalid(
                        format!("allocation.{}.{}", j.id, self.cluster.type_name(w)),
                        format!("a time fraction must be in [0, 1], got {x}"),
                    ));
                }
            }
            let sum: f64 = row.iter().sum();
            if sum > 1.0 + ROW_TOLERANCE {
                return Err(invalid(
                    format!("allocation.{}", j.id),
                    format!("job {:?}'s time fractions sum to {sum} > 1", j.id),
                ));
            }
        }
        let rows = (0..self.jobs.len()).map(|m| allocation.row(m).to_vec()).collect();
        self.reset(rows);
        Ok(())
    }

    /// Solves the session's policy now, whatever the interval, and resets.
    pub fn recompute_allocation(&mut self) -> Result<()> {
        let x = self.solve_allocation(self.config.backend)?;
        self.reset((0..x.rows()).map(|m| x.row(m).to_vec()).collect());
        Ok(())
    }

    /// The policy's allocation for the current jobs and healthy cluster, solved with `backend`
    /// (so a caller can give each solve its own budget), rows in `job_ids` order, without
    /// installing it (`set_allocation` does). Jobs that can run on no type with a healthy GPU
    /// left are not in the problem and get a zero row.
    pub fn solve_allocation(&self, backend: Backend) -> Result<Matrix> {
        let types = self.cluster.num_types();
        let mut rows = Matrix::zeros(self.jobs.len(), types);
        let worker_types: Vec<WorkerType> = self
            .base
            .worker_types
            .iter()
            .enumerate()
            .map(|(w, wt)| WorkerType { count: self.cluster.healthy_count(w) as f64, ..wt.clone() })
            .collect();
        let included: Vec<usize> = (0..self.jobs.len())
            .filter(|&m| (0..types).any(|w| self.jobs[m].throughput[w] > 0.0 && worker_types[w].count > 0.0))
            .collect();
        if included.is_empty() {
            return Ok(rows);
        }
        let mut measured = Matrix::zeros(included.len(), types);
        for (r, &m) in included.iter().enumerate() {
            measured.row_mut(r).copy_from_slice(&self.jobs[m].throughput);
        }
        // As `Problem::from_request` does: a type-blind policy sees every throughput as 1.
        let throughput =
            if self.base.heterogeneity_aware { measured.clone() } else { Matrix::filled(included.len(), types, 1.0) };
        let jobs: Vec<Job> = included.iter().map(|&m| self.jobs[m].job.clone()).collect();
        let problem = Problem {
            worker_types,
            job_entity: jobs.iter().map(|j| j.entity.as_deref().and_then(|e| self.entity(e))).collect(),
            jobs,
            measured,
            throughput,
            ..self.base.clone()
        };
        let outcome = policies::solve(&problem, backend)?;
        let x = &outcome.allocation;
        if x.rows() != included.len() || x.cols() != types {
            return Err(ArbiterError::new(
                ErrorCode::SolverFailed,
                format!(
                    "the policy returned a {}×{} allocation for {} jobs and {types} types",
                    x.rows(),
                    x.cols(),
                    included.len()
                ),
            ));
        }
        for (r, &m) in included.iter().enumerate() {
            for (w, &v) in x.row(r).iter().enumerate() {
                if !v.is_finite() {
                    return Err(ArbiterError::new(
                        ErrorCode::SolverFailed,
                        format!("the policy returned a non-finite allocation for job {:?}", self.jobs[m].id),
                    ));
                }
                // Solver noise below 0 or above 1.
                rows.set(m, w, v.clamp(0.0, 1.0));
            }
            let sum: f64 = rows.row(m).iter().sum();
            if sum > 1.0 + ROW_TOLERANCE {
                rows.row_mut(m).iter_mut().for_each(|v| *v /= sum);
            }
        }
        Ok(rows)
    }

    /// Installs a new allocation: received time restarts from zero, and what each job was owed
    /// (or ran ahead) under the old one is carried, bounded, on the types it still has
    /// allocation on and can be placed on.
    fn reset(&mut self, rows: Vec<Vec<f64>>) {
        let bound = self.config.max_deficit_rounds * self.config.round_seconds;
        let elapsed = self.elapsed;
        let capacity = self.capacity();
        for (j, row) in self.jobs.iter_mut().zip(rows) {
            for (w, x) in row.into_iter().enumerate() {
                let x = if x < ALLOCATION_EPSILON { 0.0 } else { x.min(1.0) };
                let owed = j.carried[w] + j.allocation[w] * elapsed - j.received[w];
                let placeable = priority::placeable(j.job.scale_factor, j.throughput[w], capacity[w]);
                j.carried[w] = if x > 0.0 && placeable { owed.clamp(-bound, bound) } else { 0.0 };
                j.received[w] = 0.0;
                j.allocation[w] = x;
            }
        }
        self.elapsed = 0.0;
        self.stale = false;
        self.last_solve = Some(self.time);
    }
}
