//! The allocation a session runs on: `X` for the jobs alone and, with space sharing, `Y` for the
//! colocated pairs; solved with the session's policy on the active jobs, their colocations and the
//! healthy GPUs, or given. Installing one resets received time and carries deficits over.

use super::session::{invalid, Session};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::problem::{Colocation, Job, Matrix, Problem, WorkerType};

/// Allocations below this are solver noise: granting them would cost a whole round for nothing.
const ALLOCATION_EPSILON: f64 = 1e-9;
/// Slack for a job's time fractions summing above 1.
const ROW_TOLERANCE: f64 = 1e-6;

/// A session's allocation: every job combination's fraction of time on every worker type.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// `X[m][w]`: job m alone on type w; rows in `Session::job_ids` order.
    pub allocation: Matrix,
    /// `Y[k][w]`: pair k together on type w; rows in `Session::colocations` order (no rows
    /// without colocations).
    pub colocated: Matrix,
    /// The GPU prices of the solve's price decomposition, if it ran: the session's next solve
    /// starts from them.
    pub prices: Option<Vec<f64>>,
    /// The same for the tie-break's second solve.
    pub tie_break_prices: Option<Vec<f64>>,
    /// The tie-break that followed the optimum (`none` for the policies it does not apply to).
    pub tie_break: Option<crate::solver::tie_break::TieBreak>,
    /// With a realizable solve (`Problem::realizable`): what it did, and the allocation's
    /// decomposition into round configurations when it made one.
    pub realized: Option<Realized>,
}

/// A realizable solve's report, and the decomposition of the allocation it returned:
/// configurations `[(job, worker type)]` (rows in `Session::job_ids` order) with their weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Realized {
    pub report: crate::solver::realizable::RealizableReport,
    pub configurations: Option<Vec<WeightedRuns>>,
}

/// A round configuration's weight and its `(job, worker type)` runs.
pub type WeightedRuns = (f64, Vec<(usize, usize)>);

impl Session {
    /// Installs an allocation of the jobs alone computed elsewhere (rows in `job_ids` order), as a
    /// recomputation would: received time resets, deficits carry over. Pairs get `Y = 0`.
    pub fn set_allocation(&mut self, allocation: &Matrix) -> Result<()> {
        let colocated = Matrix::zeros(self.pairs.len(), self.cluster.num_types());
        self.set_colocated_allocation(allocation, &colocated)
    }

    /// Installs `X` (rows in `job_ids` order) and `Y` (rows in `colocations` order) computed
    /// elsewhere. Every fraction is in [0, 1], and every job's time alone and in its pairs sums
    /// to at most 1: `Σ_w X[m][w] + Σ_{k∋m} Σ_w Y[k][w] ≤ 1`.
    pub fn set_colocated_allocation(&mut self, allocation: &Matrix, colocated: &Matrix) -> Result<()> {
        self.check_shape(allocation, "allocation")?;
        let types = self.cluster.num_types();
        if colocated.rows() != self.pairs.len() || (colocated.cols() != types && !self.pairs.is_empty()) {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "colocated_allocation",
                format!(
                    "a colocated allocation of {}×{} for a session of {} colocations and {types} worker types",
                    colocated.rows(),
                    colocated.cols(),
                    self.pairs.len(),
                ),
            ));
        }
        let fraction = |field: String, x: f64| {
            if x.is_finite() && (0.0..=1.0 + ROW_TOLERANCE).contains(&x) {
                Ok(())
            } else {
                Err(invalid(field, format!("a time fraction must be in [0, 1], got {x}")))
            }
        };
        let mut busy: Vec<f64> = Vec::with_capacity(self.jobs.len());
        for (m, j) in self.jobs.iter().enumerate() {
            for (w, &x) in allocation.row(m).iter().enumerate() {
                fraction(format!("allocation.{}.{}", j.id, self.cluster.type_name(w)), x)?;
            }
            busy.push(allocation.row(m).iter().sum());
        }
        for (k, p) in self.pairs.iter().enumerate() {
            for (w, &y) in colocated.row(k).iter().enumerate() {
                let field = format!("colocated_allocation.{}+{}.{}", p.jobs[0], p.jobs[1], self.cluster.type_name(w));
                fraction(field, y)?;
            }
            let y: f64 = colocated.row(k).iter().sum();
            for id in &p.jobs {
                busy[self.index[id]] += y;
            }
        }
        if let Some((m, sum)) = busy.iter().enumerate().find(|(_, &s)| s > 1.0 + ROW_TOLERANCE) {
            return Err(invalid(
                format!("allocation.{}", self.jobs[m].id),
                format!("job {:?}'s time fractions, alone and in pairs, sum to {sum} > 1", self.jobs[m].id),
            ));
        }
        self.reset(allocation, colocated);
        Ok(())
    }

    /// Installs `X` with what a realizable solve made of it: its report, and the decomposition
    /// that rounds in `Mode::Configurations` then follow (rather than one the check looks for).
    pub fn set_realized_allocation(&mut self, allocation: &Matrix, realized: Option<Realized>) -> Result<()> {
        self.set_allocation(allocation)?;
        if let Some(configurations) = realized.as_ref().and_then(|r| r.configurations.as_ref()) {
            self.schedule = Some(super::configurations::Schedule::followed(self, configurations));
        }
        self.realized = realized;
        Ok(())
    }

    /// Whether the policy is solved over round configurations (`Problem::realizable`) from the
    /// next solve on.
    pub fn set_realizable(&mut self, realizable: crate::solver::realizable::Realizable) {
        if self.base.realizable != realizable {
            self.base.realizable = realizable;
            self.stale = true;
        }
    }

    /// What follows a bottleneck policy's optimum (`Problem::tie_break`) from the next solve on.
    pub fn set_tie_break(&mut self, tie_break: crate::solver::tie_break::TieBreak) {
        if self.base.tie_break != tie_break {
            self.base.tie_break = tie_break;
            self.stale = true;
        }
    }

    /// What the realizable solve of the current allocation did, if one made it.
    pub fn realizable_solve(&self) -> Option<&crate::solver::realizable::RealizableReport> {
        self.realized.as_ref().map(|r| &r.report)
    }

    /// Where the next solve's price decompositions start: the GPU prices of an earlier solve
    /// (`Allocation::prices`) and of its tie-break. Only a start: the result is certified either way.
    pub fn set_warm_prices(&mut self, prices: Option<Vec<f64>>, tie_break_prices: Option<Vec<f64>>) {
        self.base.warm_prices = prices;
        self.base.warm_tie_break_prices = tie_break_prices;
    }

    /// Solves the session's policy now, whatever the interval, and resets.
    pub fn recompute_allocation(&mut self) -> Result<()> {
        let mut solved = self.solve_colocated_allocation(self.config.backend)?;
        // The next solve starts from this one's GPU prices (when the decomposition found them).
        self.set_warm_prices(solved.prices.take(), solved.tie_break_prices.take());
        // A realizable solve's decomposition covers jobs alone: it is made only when no pair has time.
        if solved.realized.as_ref().is_some_and(|r| r.configurations.is_some()) {
            self.set_realized_allocation(&solved.allocation, solved.realized)?;
        } else {
            self.reset(&solved.allocation, &solved.colocated);
            self.realized = solved.realized;
        }
        self.tie_break = solved.tie_break;
        Ok(())
    }

    /// Which tie-break followed the optimum of the current allocation's solve (`None`: an
    /// allocation installed from elsewhere).
    pub fn tie_break(&self) -> Option<crate::solver::tie_break::TieBreak> {
        self.tie_break
    }

    /// Installs an allocation solved elsewhere (`solve_colocated_allocation`, a stored event) with
    /// what its solve did: its realizable solve and the tie-break that ran.
    pub fn set_solved_allocation(
        &mut self,
        allocation: &Matrix,
        realized: Option<Realized>,
        tie_break: Option<crate::solver::tie_break::TieBreak>,
    ) -> Result<()> {
        self.set_realized_allocation(allocation, realized)?;
        self.tie_break = tie_break;
        Ok(())
    }

    /// `X` of `solve_colocated_allocation`, for sessions without colocations (installing it with
    /// `set_allocation` gives every pair `Y = 0`).
    pub fn solve_allocation(&self, backend: Backend) -> Result<Matrix> {
        Ok(self.solve_colocated_allocation(backend)?.allocation)
    }

    /// The policy's allocation for the current jobs, colocations and healthy cluster, solved with
    /// `backend` (so a caller can give each solve its own budget), without installing it
    /// (`set_colocated_allocation` does). Jobs that can run on no type with a healthy GPU left are
    /// not in the problem and get a zero row; so do pairs with such a tenant or that can share no
    /// such type. The pairs go to the policy as `Problem::colocations` (measured steps/s, as a
    /// request gives them), with `space_sharing: true` when the policy supports it; without
    /// colocations the problem is that of a session without space sharing. A policy that returns
    /// no rows of `Y` gives every pair 0.
    pub fn solve_colocated_allocation(&self, backend: Backend) -> Result<Allocation> {
        if let Some(composition) = self.composition() {
            return Err(ArbiterError::at(
                ErrorCode::Unsupported,
                "allocation",
                format!(
                    "this session's rounds come from the composition {}: it has no LP allocation to solve",
                    composition.name()
                ),
            ));
        }
        let types = self.cluster.num_types();
        let mut x = Matrix::zeros(self.jobs.len(), types);
        let mut y = Matrix::zeros(self.pairs.len(), types);
        let worker_types: Vec<WorkerType> = self
            .base
            .worker_types
            .iter()
            .enumerate()
            .map(|(w, wt)| WorkerType { count: self.cluster.healthy_count(w) as f64, ..wt.clone() })
            .collect();
        let mut row_of: Vec<Option<usize>> = vec![None; self.jobs.len()];
        let included: Vec<usize> = (0..self.jobs.len())
            .filter(|&m| (0..types).any(|w| self.jobs[m].throughput[w] > 0.0 && worker_types[w].count > 0.0))
            .collect();
        if included.is_empty() {
            return Ok(Allocation {
                allocation: x,
                colocated: y,
                prices: None,
                tie_break_prices: None,
                tie_break: None,
                realized: None,
            });
        }
        for (r, &m) in included.iter().enumerate() {
            row_of[m] = Some(r);
        }
        let mut measured = Matrix::zeros(included.len(), types);
        for (r, &m) in included.iter().enumerate() {
            measured.row_mut(r).copy_from_slice(&self.jobs[m].throughput);
        }
        // As `Problem::from_request` does: a type-blind policy sees every throughput as 1.
        let throughput =
            if self.base.heterogeneity_aware { measured.clone() } else { Matrix::filled(included.len(), types, 1.0) };
        let mut pairs_included = Vec::new();
        let mut colocations = Vec::new();
        for (k, p) in self.pairs.iter().enumerate() {
            let rows = p.jobs.clone().map(|id| row_of[self.index[&id]]);
            let [Some(ra), Some(rb)] = rows else { continue };
            if !(0..types).any(|w| p.runs_on(w) && worker_types[w].count > 0.0) {
                continue;
            }
            pairs_included.push(k);
            colocations.push(Colocation { jobs: [ra, rb], throughput: p.throughput.clone() });
        }
        let jobs: Vec<Job> = included.iter().map(|&m| self.jobs[m].job.clone()).collect();
        // The included jobs' rows with their GPUs spread, when any has one.
        let spread: Vec<&[f64]> = included.iter().map(|&m| self.jobs[m].unconsolidated.as_slice()).collect();
        let unconsolidated =
            spread.iter().flat_map(|row| row.iter()).any(|&v| v > 0.0).then(|| Matrix::from_rows(&spread));
        let problem = Problem {
            worker_types,
            job_entity: jobs.iter().map(|j| j.entity.as_deref().and_then(|e| self.entity(e))).collect(),
            jobs,
            measured,
            throughput,
            space_sharing: !colocations.is_empty() && self.base.policy.supports_space_sharing(),
            colocations,
            unconsolidated,
            ..self.base.clone()
        };
        // As a request's: the tie-break the problem asks for (no GPU left idle that a job could
        // use), then, where it runs, the realizable solve from it.
        let hinted = |e| crate::numbers_hint(&problem, e);
        let applied = crate::solver::tie_break::solve(&problem, backend).map_err(hinted)?;
        let tie_break_prices = applied.method.as_ref().and_then(|m| m.prices.clone());
        let tie_break = Some(applied.tie_break);
        let (outcome, realized) = if !problem.realizable.runs_for(problem.policy) {
            (applied.outcome, None)
        } else {
            let tie_broken = applied.tie_break != crate::solver::tie_break::TieBreak::None;
            let r = crate::solver::realizable::apply(&problem, applied.outcome, tie_broken, backend);
            // Rounds follow a decomposition of jobs alone (`Mode::Configurations` runs no pairs).
            let alone = |d: &crate::solver::realizability::Realizability| {
                d.configurations.iter().all(|(_, c)| c.pairs.is_empty())
            };
            let configurations = r.decomposition.filter(alone).map(|d| {
                d.configurations
                    .iter()
                    .map(|(weight, c)| {
                        (*weight, c.runs.iter().map(|&(r, w)| (included[r as usize], w as usize)).collect())
                    })
                    .collect()
            });
            (r.outcome, Some(Realized { report: r.report, configurations }))
        };
        // As a request's: an answer outside the cluster is refused, never rescaled into it.
        crate::solver::feasible::check(&problem, &outcome).map_err(hinted)?;
        let failed = |what: String| Err(ArbiterError::new(ErrorCode::SolverFailed, what));
        let (ox, oy) = (&outcome.allocation, &outcome.colocated);
        if ox.rows() != included.len() || ox.cols() != types {
            return failed(format!(
                "the policy returned a {}×{} allocation for {} jobs and {types} types",
                ox.rows(),
                ox.cols(),
                included.len()
            ));
        }
        // A policy without space sharing returns no rows of Y: every pair gets 0.
        if oy.rows() != 0 && (oy.rows() != pairs_included.len() || oy.cols() != types) {
            return failed(format!(
                "the policy returned a {}×{} colocated allocation for {} pairs and {types} types",
                oy.rows(),
                oy.cols(),
                pairs_included.len()
            ));
        }
        // Solver noise below 0 or above 1.
        let clean = |v: f64, what: &dyn Fn() -> String| -> Result<f64> {
            if v.is_finite() {
                Ok(v.clamp(0.0, 1.0))
            } else {
                Err(ArbiterError::new(ErrorCode::SolverFailed, format!("the policy returned a non-finite {}", what())))
            }
        };
        for (r, &m) in included.iter().enumerate() {
            for (w, &v) in ox.row(r).iter().enumerate() {
                x.set(m, w, clean(v, &|| format!("allocation for job {:?}", self.jobs[m].id))?);
            }
        }
        if oy.rows() != 0 {
            for (r, &k) in pairs_included.iter().enumerate() {
                for (w, &v) in oy.row(r).iter().enumerate() {
                    let p = &self.pairs[k];
                    y.set(
                        k,
                        w,
                        clean(v, &|| format!("colocated allocation for jobs {:?} and {:?}", p.jobs[0], p.jobs[1]))?,
                    );
                }
            }
        }
        self.normalize(&mut x, &mut y);
        let prices = outcome.method.and_then(|m| m.prices);
        Ok(Allocation { allocation: x, colocated: y, prices, tie_break_prices, tie_break, realized })
    }

    /// Scales down the time of any job whose fractions, alone and in pairs, sum above 1 (solver
    /// noise): its row of `X` by its sum, and each of its pairs' rows of `Y` by the larger sum of
    /// the two tenants.
    fn normalize(&self, x: &mut Matrix, y: &mut Matrix) {
        let mut busy: Vec<f64> = (0..x.rows()).map(|m| x.row(m).iter().sum()).collect();
        for (k, p) in self.pairs.iter().enumerate() {
            let s: f64 = y.row(k).iter().sum();
            for id in &p.jobs {
                busy[self.index[id]] += s;
            }
        }
        let scale: Vec<f64> = busy.iter().map(|&b| if b > 1.0 + ROW_TOLERANCE { b } else { 1.0 }).collect();
        for (m, &s) in scale.iter().enumerate() {
            if s > 1.0 {
                x.row_mut(m).iter_mut().for_each(|v| *v /= s);
            }
        }
        for (k, p) in self.pairs.iter().enumerate() {
            let s = p.jobs.iter().map(|id| scale[self.index[id]]).fold(1.0, f64::max);
            if s > 1.0 {
                y.row_mut(k).iter_mut().for_each(|v| *v /= s);
            }
        }
    }

    /// Installs a new allocation: received time restarts from zero, and what each combination was
    /// owed (or ran ahead) under the old one is carried, bounded, on the types it still has
    /// allocation on and can be placed on.
    fn reset(&mut self, x: &Matrix, y: &Matrix) {
        let bound = self.config.max_deficit_rounds * self.config.round_seconds;
        let elapsed = self.elapsed;
        for m in 0..self.jobs.len() {
            let placeable: Vec<bool> =
                (0..self.cluster.num_types()).map(|w| self.placeable(&self.jobs[m], w)).collect();
            self.jobs[m].share.reset(x.row(m), elapsed, bound, ALLOCATION_EPSILON, |w| placeable[w]);
        }
        for k in 0..self.pairs.len() {
            let placeable: Vec<bool> =
                (0..self.cluster.num_types()).map(|w| self.pair_placeable(&self.pairs[k], w)).collect();
            self.pairs[k].share.reset(y.row(k), elapsed, bound, ALLOCATION_EPSILON, |w| placeable[w]);
        }
        self.elapsed = 0.0;
        self.stale = false;
        self.last_solve = Some(self.time);
        self.schedule = None;
        self.realized = None;
        self.tie_break = None;
    }
}
