//! The recovery LP: the ratio `z`, full columns for the ambiguous jobs only, and every fixed job
//! folded into the capacity rows as its usage, affine in z (k coefficients of z, k constants).
//! Its size depends on the ambiguous set, not on the number of jobs. z is written as
//! `z₀ + s·ζ` around the estimate z₀ (the step `s` is z₀, or 1 when z₀ is 0) and the fixed usage
//! as its value at z₀ plus `α_w·s·ζ`: each job's usage at z₀ is at most its scale factor, so the
//! constants carry no cancellation.
//! `Model` keeps one level's recovery LP loaded from round to round.

use super::best_response::JobView;
use super::Ratio;
use crate::lp::{Backend, Col, LinearProgram, Row, Sense, Session, SolveError};

/// The optimum of one recovery LP and its duals.
pub(super) struct Recovery {
    pub(super) z: f64,
    /// `p_w ≥ 0`: the capacity rows' duals (0 for a type no row constrains).
    pub(super) prices: Vec<f64>,
    /// Per ambiguous job (in the order given), its time on each type it may use.
    pub(super) time: Vec<Vec<(usize, f64)>>,
    /// Per ambiguous job, its need row's dual `u_m ≥ 0` (positive: the job sits at its need in
    /// every optimum).
    pub(super) need_duals: Vec<f64>,
}

impl Recovery {
    /// Whether every ambiguous job (`ambiguous`, in the order solved) gets its need at the
    /// recovered z to within `tolerance` of it (and a billionth of its fastest throughput, for a
    /// need near 0).
    pub(super) fn meets_needs(&self, ratio: &Ratio, ambiguous: &[u32], tolerance: f64) -> bool {
        ambiguous.iter().zip(&self.time).all(|(&m, time)| {
            let job = ratio.job(m as usize);
            let thr: f64 = time.iter().map(|&(w, x)| job.row[w] * x).sum();
            let need = job.need(self.z);
            thr >= need - tolerance * need.abs() - 1e-9 * ratio.fastest(m as usize)
        })
    }
}

/// Solves the recovery LP once. `fixed_usage[w] = (α_w, U_w)`: the fixed jobs' usage of type w is
/// `U_w + α_w·(z − z₀)`. With no fixed jobs z₀ may be anything positive (1 will do).
pub(super) fn solve(
    ratio: &Ratio,
    ambiguous: &[u32],
    capacity: &[f64],
    fixed_usage: &[(f64, f64)],
    z0: f64,
    backend: Backend,
) -> Result<Recovery, SolveError> {
    Model::new(capacity.len(), z0, backend).solve(ratio, ambiguous, capacity, fixed_usage)
}

/// The recovery LP of one level, kept loaded in the solver from round to round: the ambiguous set
/// only grows, so a round adds the new jobs' columns and rows, moves the capacity rows to the new
/// fixed usage (their bounds and the coefficient of ζ), and re-solves from the last basis. z₀ stays
/// the first round's estimate; the fixed usage must be evaluated there.
pub(super) struct Model {
    backend: Backend,
    /// Loaded at the first solve, with every ambiguous job of that round at once.
    session: Option<Box<dyn Session>>,
    z0: f64,
    /// The step of ζ: z = z₀ + step·ζ.
    step: f64,
    num_types: usize,
    /// The ambiguous jobs loaded so far, each with its `(type, column)`s. Columns: ζ (`ZETA`),
    /// then theirs; rows: type w's capacity row is row w, then each job's need and time rows.
    members: Vec<Vec<(usize, usize)>>,
}

/// ζ's column.
const ZETA: usize = 0;

/// A recovery LP being built: columns and rows are numbered as they are added.
trait Builder {
    fn col(&mut self, capacity_row: usize, sf: f64) -> usize;
    fn rows(&mut self, rows: [Row; 2]);
}

impl Builder for LinearProgram {
    fn col(&mut self, capacity_row: usize, sf: f64) -> usize {
        let col = self.add_col(0.0, 0.0, 1.0);
        self.rows[capacity_row].coefs.push((col, sf));
        col
    }
    fn rows(&mut self, rows: [Row; 2]) {
        self.rows.extend(rows);
    }
}

/// A loaded model's additions, collected to go in together (each addition rebuilds part of the
/// solver's matrix): columns are numbered from the model's count on, rows after them.
struct Additions {
    next_col: usize,
    cols: Vec<Col>,
    rows: Vec<Row>,
}

impl Builder for Additions {
    fn col(&mut self, capacity_row: usize, sf: f64) -> usize {
        self.cols.push(Col { cost: 0.0, lower: 0.0, upper: 1.0, entries: vec![(capacity_row, sf)] });
        self.next_col + self.cols.len() - 1
    }
    fn rows(&mut self, rows: [Row; 2]) {
        self.rows.extend(rows);
    }
}

impl Model {
    pub(super) fn new(num_types: usize, z0: f64, backend: Backend) -> Model {
        let step = if z0 > 0.0 { z0 } else { 1.0 };
        Model { backend, session: None, z0, step, num_types, members: Vec::new() }
    }

    /// The estimate z₀ the fixed usage is written around.
    pub(super) fn z0(&self) -> f64 {
        self.z0
    }

    /// The step of ζ (`z = z₀ + step·ζ`): z₀, or 1 when z₀ is 0.
    pub(super) fn step(&self) -> f64 {
        self.step
    }

    /// Adds job `m`'s columns and its two rows (need and time) to `builder`.
    fn add_member(&mut self, builder: &mut impl Builder, ratio: &Ratio, m: u32) {
        let job: JobView = ratio.job(m as usize);
        let mine: Vec<(usize, usize)> = (0..self.num_types)
            .filter(|&w| ratio.usable[w] && job.row[w] > 0.0)
            .map(|w| (w, builder.col(w, job.sf)))
            .collect();
        let mut need: Vec<(usize, f64)> = mine.iter().map(|&(w, col)| (col, job.row[w])).collect();
        if job.demand != 0.0 {
            need.push((ZETA, -job.demand * self.step));
        }
        let time = mine.iter().map(|&(_, col)| (col, 1.0)).collect();
        builder.rows([Row::at_least(job.need(self.z0), need), Row::at_most(1.0, time)]);
        self.members.push(mine);
    }

    /// Columns loaded: ζ and the ambiguous jobs'.
    fn num_cols(&self) -> usize {
        1 + self.members.iter().map(Vec::len).sum::<usize>()
    }

    /// Solves with full columns for `ambiguous` (whose first jobs are those already loaded, in the
    /// same order) and the fixed jobs' usage `fixed_usage[w] = (α_w, U_w)` at z₀.
    pub(super) fn solve(
        &mut self,
        ratio: &Ratio,
        ambiguous: &[u32],
        capacity: &[f64],
        fixed_usage: &[(f64, f64)],
    ) -> Result<Recovery, SolveError> {
        let (z0, step) = (self.z0, self.step);
        debug_assert!(ambiguous.len() >= self.members.len(), "the ambiguous set only grows");
        let mut session = match self.session.take() {
            Some(mut session) => {
                let first = self.num_cols();
                let mut additions = Additions { next_col: first, cols: Vec::new(), rows: Vec::new() };
                for &m in ambiguous.iter().skip(self.members.len()) {
                    self.add_member(&mut additions, ratio, m);
                }
                let added = session.add_cols(&additions.cols);
                debug_assert_eq!(added, first);
                session.add_rows(&additions.rows);
                for (w, &(alpha, fixed)) in fixed_usage.iter().enumerate() {
                    session.set_coef(w, ZETA, alpha * step);
                    session.set_row_bounds(w, f64::NEG_INFINITY, capacity[w] - fixed);
                }
                session
            }
            None => {
                // Loaded whole, the fixed usage in the capacity rows from the start (so that their
                // scaling sees z's coefficients).
                self.members.clear();
                let mut lp = LinearProgram::new(Sense::Maximize);
                // z ≥ 0, unless jobs have floors: then z is free, so that no bound absorbs its
                // reduced cost when the optimum is 0 (the certificate covers the z column only).
                let lowest = if ratio.base.is_some() { f64::NEG_INFINITY } else { -z0 / step };
                lp.add_col(step, lowest, f64::INFINITY);
                for (&(alpha, fixed), &g) in fixed_usage.iter().zip(capacity) {
                    let coefs = if alpha != 0.0 { vec![(ZETA, alpha * step)] } else { Vec::new() };
                    lp.add_row(Row::at_most(g - fixed, coefs));
                }
                for &m in ambiguous {
                    self.add_member(&mut lp, ratio, m);
                }
                self.backend.open(lp)
            }
        };
        // Types some loaded ambiguous job may use.
        let mut used = vec![false; self.num_types];
        for &(w, _) in self.members.iter().flatten() {
            used[w] = true;
        }
        for (w, &(alpha, fixed)) in fixed_usage.iter().enumerate() {
            if !used[w] && alpha == 0.0 && capacity[w] - fixed < -1e-9 * capacity[w].max(1.0) {
                // Fixed jobs alone already over the capacity at any z: this structure cannot hold.
                return Err(SolveError::Infeasible);
            }
        }
        let solution = session.solve()?;
        self.session = Some(session);
        let zeta = solution.values[ZETA];
        if ratio.base.is_none()
            && zeta <= -z0 / step + 1e-9
            && fixed_usage.iter().any(|&(alpha, used)| alpha != 0.0 || used != 0.0)
        {
            // z stopped at its bound 0, whose dual no certificate covers. Every job with a demand
            // has a type it can use (or the caller stopped earlier), so the full LP's optimum is
            // positive: the fixed structures are what leave no room, as when they overfill a type.
            return Err(SolveError::Infeasible);
        }
        if solution.row_duals.len() < self.num_types + 2 * self.members.len() {
            return Err(SolveError::Failed("the backend reports no duals".into()));
        }
        // A type whose row has no coefficient constrains nothing: its price is 0.
        let prices = (0..capacity.len())
            .map(|w| {
                let constrains = used[w] || fixed_usage[w].0 != 0.0;
                if constrains {
                    solution.row_duals[w].max(0.0)
                } else {
                    0.0
                }
            })
            .collect();
        let time = self
            .members
            .iter()
            .take(ambiguous.len())
            .map(|mine| mine.iter().map(|&(w, col)| (w, solution.values[col].max(0.0))).collect())
            .collect();
        let need_duals = (0..ambiguous.len()).map(|i| solution.row_duals[self.num_types + 2 * i].abs()).collect();
        let z = z0 + step * zeta;
        Ok(Recovery { z: if ratio.base.is_some() { z } else { z.max(0.0) }, prices, time, need_duals })
    }
}

/// The recovery LP needs the capacity rows' duals, which only HiGHS reports.
#[cfg(all(test, feature = "highs"))]
mod tests {
    use super::*;
    use crate::problem::Matrix;

    /// Six jobs on three types, of which `fixed` enter the capacity rows only through their usage
    /// (each on type 0 with time `z·d/T[m][0]`, so `α = sf·d/T`, `U = α·z₀`).
    fn instance() -> (Matrix, Vec<u32>, Vec<f64>) {
        let rows =
            [[1.0, 3.0, 5.0], [2.0, 2.5, 4.0], [1.5, 0.0, 6.0], [1.0, 2.0, 2.5], [3.0, 3.5, 3.0], [0.5, 1.0, 4.5]];
        let mut t = Matrix::zeros(rows.len(), 3);
        for (m, row) in rows.iter().enumerate() {
            t.row_mut(m).copy_from_slice(row);
        }
        (t, vec![1, 2, 1, 1, 4, 1], vec![1.0, 0.5, 2.0, 1.0, 0.25, 1.5])
    }

    #[test]
    fn a_model_grown_round_by_round_solves_as_one_loaded_afresh() {
        let (t, sf, demand) = instance();
        let ratio = Ratio {
            throughput: &t,
            scale_factor: &sf,
            base: None,
            demand: &demand,
            usable: vec![true; 3],
            ceiling: f64::INFINITY,
        };
        let capacity = [3.0, 2.0, 4.0];
        let z0 = 0.8;
        // Job 5 fixed on type 0: usage sf·d/T·z = 3·z.
        let alpha = 1.0 * demand[5] / t.get(5, 0);
        let fixed = [(alpha, alpha * z0), (0.0, 0.0), (0.0, 0.0)];
        let backend = Backend::default();
        let mut grown = Model::new(3, z0, backend);
        let first = grown.solve(&ratio, &[0, 1], &capacity, &fixed).expect("solves");
        assert_eq!(first.time.len(), 2);
        // A second round: more ambiguous jobs and another fixed usage (job 5 now costs twice).
        let fixed = [(2.0 * alpha, 2.0 * alpha * z0), (0.0, 0.0), (0.0, 0.0)];
        let all = [0, 1, 2, 3, 4];
        let hot = grown.solve(&ratio, &all, &capacity, &fixed).expect("solves");
        let fresh = solve(&ratio, &all, &capacity, &fixed, z0, backend).expect("solves");
        assert!((hot.z - fresh.z).abs() < 1e-9 * fresh.z.max(1.0), "{} vs {}", hot.z, fresh.z);
        assert!(fresh.z < first.z, "a heavier fixed usage and more jobs lower z");
        for (a, b) in hot.prices.iter().zip(&fresh.prices) {
            assert!((a - b).abs() < 1e-7, "{:?} vs {:?}", hot.prices, fresh.prices);
        }
        // Every ambiguous job reaches z·d within the time it has, and the capacities hold.
        let mut used = [alpha * 2.0 * hot.z, 0.0, 0.0];
        for (&m, time) in all.iter().zip(&hot.time) {
            let thr: f64 = time.iter().map(|&(w, x)| t.get(m as usize, w) * x).sum();
            assert!(thr >= hot.z * demand[m as usize] - 1e-7, "job {m}: {thr}");
            assert!(time.iter().map(|&(_, x)| x).sum::<f64>() <= 1.0 + 1e-9);
            for &(w, x) in time {
                used[w] += sf[m as usize] as f64 * x;
            }
        }
        for w in 0..3 {
            assert!(used[w] <= capacity[w] + 1e-7, "type {w}: {used:?}");
        }
    }
}
