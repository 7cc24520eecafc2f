//! The LP of one program: building a fresh model (capacities, class time, class totals, pooled
//! cuts), the loop that adds violated top-k cuts and prices pair columns, a kept model's re-solve
//! from its basis, and the split of the optimum into a per-job allocation.

use super::class::{fill_class, split_class, Class, ClassShape, ClassTotal, Order};
use super::pricing::price_pairs;
use super::program::{Program, Solved};
use super::{Engine, BINDING_DUAL};
use crate::error::Result;
use crate::lp::{LinearProgram, Row, Sense, Session};
use crate::problem::Matrix;
use std::borrow::Cow;
use std::cell::OnceCell;

/// Feasibility tolerance of a kept model (water-filling's levels, the tie-break) instead of the
/// solver's 1e-7: each level freezes jobs at its optimum, and an optimum short by the default
/// tolerance grew level by level (four jobs frozen 6.7e-8 low left a later one 2.3e-5 high; on an
/// instance that amplifies round-off 37,000-fold, a level 4.3% high).
const KEPT_MODEL_TOLERANCE: f64 = 1e-9;
/// The solver's own feasibility tolerance, for a kept model whose next program is not `precise`.
const SOLVER_TOLERANCE: f64 = 1e-7;

/// A row of the LP that carries needs: a class total (`pool: None`) or a cut from the pool.
pub(super) struct NeedRow {
    pub(super) row: usize,
    pub(super) class: usize,
    pub(super) members: Vec<usize>,
    pub(super) lambda: usize,
    pub(super) pool: Option<usize>,
    /// The lower bound and shared-variable coefficients the backend has now, so a kept model is
    /// sent only what changed (a variable fixed at 0 keeps the coefficients it had).
    pub(super) sent: (f64, Vec<f64>),
}

/// The lower bound and the coefficient of each of the `num_vars` shared variables in `row`.
pub(super) fn need_part(row: &Row, num_vars: usize) -> (f64, Vec<f64>) {
    let mut vars = vec![0.0; num_vars];
    for &(c, v) in &row.coefs {
        if c < num_vars {
            vars[c] = v;
        }
    }
    (row.lower, vars)
}

/// A solved model kept for the next program with the same sense and as many shared variables.
pub(super) struct Kept {
    pub(super) signature: (Sense, usize),
    pub(super) session: Box<dyn Session>,
    /// What the backend has now: each shared variable's bounds, each column's cost (shared
    /// variables' and classes'), and whether the tolerance is the precise one.
    pub(super) bounds: Vec<(f64, f64)>,
    pub(super) col_cost: Vec<f64>,
    pub(super) precise: bool,
    pub(super) need_rows: Vec<NeedRow>,
    pub(super) num_rows: usize,
    /// The pair columns in the model (per pair, `(type, column)`), and the rows pricing reads
    /// duals from.
    pub(super) pair_cols: Vec<Vec<(usize, usize)>>,
    /// The unconsolidated columns in the model, `(job, type, column)`.
    pub(super) extra_cols: Vec<(usize, usize, usize)>,
    pub(super) rows_of: RowIndex,
    /// Each class's members by need as its last program found them (`Class::order`), for a
    /// program on the same needs (`Program::from_last_optimum`).
    pub(super) orders: Vec<OnceCell<Option<Order>>>,
}

/// Where a fresh model put the rows a pair column enters: each type's capacity row, and each
/// class's time row and class-total (need) row.
#[derive(Clone, Default)]
pub(super) struct RowIndex {
    pub(super) capacity: Vec<Option<usize>>,
    pub(super) time: Vec<Option<usize>>,
    pub(super) total: Vec<Option<usize>>,
}

impl Engine<'_> {
    pub(super) fn solve_with(&mut self, shapes: &[ClassShape], program: &Program) -> Result<Solved> {
        let (num_jobs, num_types) = (self.instance.throughput.rows(), self.instance.throughput.cols());
        let needs = &program.needs;
        let num_vars = program.cost.len();
        // Classes in this program (index = shape index). A kept model has every job in its class,
        // so its shape never changes; otherwise only the jobs with a need take part. Columns are
        // numbered in a fixed order: the shared variables, then each class's types.
        let mut next_col = num_vars;
        let classes: Vec<Class> = shapes
            .iter()
            .map(|shape| {
                let jobs: Cow<[usize]> = if program.keep_model {
                    Cow::Borrowed(shape.jobs.as_slice())
                } else {
                    Cow::Owned(shape.jobs.iter().copied().filter(|&m| !needs[m].is_zero()).collect())
                };
                let cols = if jobs.is_empty() {
                    Vec::new()
                } else {
                    shape
                        .types
                        .iter()
                        .map(|&w| {
                            next_col += 1;
                            (w, next_col - 1)
                        })
                        .collect()
                };
                Class { shape, jobs, cols, pair_terms: Vec::new(), order: Default::default() }
            })
            .collect();
        let signature = program.signature();
        let kept = self.kept.take().filter(|k| program.keep_model && k.signature == signature);
        // Pair columns after the classes', for pairs whose jobs both take part: those of the kept
        // model, or, in a fresh one, those that had time last time; pricing adds the rest.
        let mut classes = classes;
        let mut class_of_job = vec![0; num_jobs];
        for (c, shape) in shapes.iter().enumerate() {
            shape.jobs.iter().for_each(|&m| class_of_job[m] = c);
        }
        // Unconsolidated columns `U[m][w]` right after the classes': fixed, every present job's.
        let extra_cols: Vec<(usize, usize, usize)> = match &kept {
            Some(kept) => kept.extra_cols.clone(),
            None => match &self.instance.unconsolidated {
                None => Vec::new(),
                Some(tu) => {
                    let mut cols = Vec::new();
                    for m in (0..num_jobs).filter(|&m| !classes[class_of_job[m]].jobs.is_empty()) {
                        for w in (0..num_types).filter(|&w| tu.get(m, w) > 0.0 && self.instance.capacity[w] > 0.0) {
                            cols.push((m, w, next_col));
                            next_col += 1;
                        }
                    }
                    cols
                }
            },
        };
        if let Some(tu) = &self.instance.unconsolidated {
            for &(m, w, col) in &extra_cols {
                classes[class_of_job[m]].pair_terms.push((col, tu.get(m, w)));
            }
        }
        let owners: Vec<[usize; 2]> = self.instance.pairs.iter().map(|p| p.jobs.map(|m| class_of_job[m])).collect();
        let present: Vec<bool> = owners.iter().map(|o| o.iter().all(|&c| !classes[c].jobs.is_empty())).collect();
        let mut pair_cols: Vec<Vec<(usize, usize)>> = match &kept {
            Some(kept) => kept.pair_cols.clone(),
            None => (0..self.instance.pairs.len())
                .map(|i| {
                    if !present[i] {
                        return Vec::new();
                    }
                    let seeded = self.instance.pairs[i].types().filter(|&w| self.pair_pool.contains(&(i, w)));
                    seeded
                        .map(|w| {
                            next_col += 1;
                            (w, next_col - 1)
                        })
                        .collect()
                })
                .collect(),
        };
        for (i, cols) in pair_cols.iter().enumerate() {
            for (side, &c) in owners[i].iter().enumerate() {
                let terms = cols.iter().map(|&(w, col)| (col, self.instance.pairs[i].throughput[w][side]));
                classes[c].pair_terms.extend(terms);
            }
        }
        // The rows that carry needs in this program, aligned with `need_rows`.
        let mut rows: Vec<Row> = Vec::new();
        let (mut session, mut need_rows, mut num_rows, rows_of, col_cost) = match kept {
            Some(mut kept) => {
                if program.from_last_optimum {
                    // The same needs: the same orders.
                    for (class, order) in classes.iter_mut().zip(&mut kept.orders) {
                        class.order = std::mem::take(order);
                    }
                }
                let mut session = kept.session;
                // The shared variables' costs and bounds, the classes' time values and the
                // tolerance, where they changed.
                for v in 0..num_vars {
                    let bounds = (program.lower[v], program.upper[v]);
                    if bounds != kept.bounds[v] {
                        session.set_col_bounds(v, bounds.0, bounds.1);
                        kept.bounds[v] = bounds;
                    }
                }
                let class_costs = classes
                    .iter()
                    .flat_map(|class| class.cols.iter().map(|&(w, col)| (col, program.time_value(class.shape, w))));
                let mut costs = Vec::new();
                for (col, cost) in program.cost.iter().copied().enumerate().chain(class_costs) {
                    if cost != kept.col_cost[col] {
                        costs.push((col, cost));
                        kept.col_cost[col] = cost;
                    }
                }
                if program.from_last_optimum {
                    session.prefer_primal(true);
                } else if !costs.is_empty() {
                    // A new objective on new needs: the old optimum's basis is neither primal
                    // nor dual feasible for it, and the simplex goes faster from the slack basis.
                    session.forget_basis();
                }
                session.set_costs(&costs);
                if program.precise != kept.precise {
                    session.set_feasibility_tolerance(if program.precise {
                        KEPT_MODEL_TOLERANCE
                    } else {
                        SOLVER_TOLERANCE
                    });
                }
                // Same rows, new needs: only the right-hand sides and the shared variables'
                // coefficients move, and only those that did are sent.
                // A shared variable fixed at 0 (the tie-break's in the place of `z`) adds nothing to
                // any row, so its coefficients stay as they are (one backend call each).
                let inert: Vec<bool> =
                    (0..num_vars).map(|v| program.lower[v] == 0.0 && program.upper[v] == 0.0).collect();
                let mut bounds = Vec::new();
                for need in &mut kept.need_rows {
                    let row = classes[need.class].need_row(&need.members, need.lambda, needs);
                    let (lower, vars) = need_part(&row, num_vars);
                    if lower != need.sent.0 {
                        bounds.push((need.row, row.lower, row.upper));
                        need.sent.0 = lower;
                    }
                    for (v, &coef) in vars.iter().enumerate() {
                        if coef != need.sent.1[v] && !inert[v] {
                            session.set_coef(need.row, v, coef);
                            need.sent.1[v] = coef;
                        }
                    }
                    rows.push(row);
                }
                session.set_row_bounds(&bounds);
                (session, kept.need_rows, kept.num_rows, kept.rows_of, kept.col_cost)
            }
            None => {
                let (lp, need_rows, rows_of) = self.build(&classes, &extra_cols, &pair_cols, program, next_col);
                rows.extend(need_rows.iter().map(|n| lp.rows[n.row].clone()));
                let num_rows = lp.rows.len();
                let col_cost = lp.cost.clone();
                let mut session = self.backend.open(lp);
                if program.precise {
                    session.set_feasibility_tolerance(KEPT_MODEL_TOLERANCE);
                }
                (session, need_rows, num_rows, rows_of, col_cost)
            }
        };

        // Which pooled cuts the model holds, by pool index: a cut found again is not added twice.
        let mut in_model = vec![false; self.pool.len()];
        need_rows.iter().filter_map(|n| n.pool).for_each(|i| in_model[i] = true);
        let mut lp_solves = 0;
        // Needs settled before the first solve: every class's conditions at them enter the model
        // first (`Class::conditions`), and the loop after each solve only checks them.
        let mut settled = program.settled_vars();
        let solution = loop {
            let at = settled.take();
            let solution = match at {
                Some(_) => None,
                None => {
                    lp_solves += 1;
                    Some(session.solve()?)
                }
            };
            let vars = match &solution {
                Some(solution) => &solution.values[..num_vars],
                None => at.as_deref().unwrap_or_default(),
            };
            let mut cuts = Vec::new();
            for (c, class) in classes.iter().enumerate().filter(|(_, c)| !c.jobs.is_empty()) {
                let sorted = class.sorted(needs, vars);
                let found = match &solution {
                    None => class.conditions(&sorted),
                    Some(solution) => {
                        let y: Vec<f64> = class.cols.iter().map(|&(_, col)| solution.values[col].max(0.0)).collect();
                        class.violated(&y, &sorted)
                    }
                };
                for (k, li) in found {
                    let members: Vec<usize> = sorted[..k].iter().map(|&(m, _)| m).collect();
                    let row = class.cut(&members, li, needs);
                    let i = self.pooled_index(c, members, li);
                    if in_model.len() <= i {
                        in_model.resize(i + 1, false);
                    }
                    // A cut already in the LP can look violated only within solver tolerance (or
                    // be among the settled needs' conditions).
                    if !in_model[i] {
                        in_model[i] = true;
                        let members = self.pool[i].members.clone();
                        let sent = need_part(&row, num_vars);
                        need_rows.push(NeedRow { row: num_rows, class: c, members, lambda: li, pool: Some(i), sent });
                        num_rows += 1;
                        cuts.push(row.clone());
                        rows.push(row);
                    }
                }
            }
            if !cuts.is_empty() {
                session.add_rows(&cuts);
                continue;
            }
            let Some(solution) = solution else { continue };
            if self.instance.pairs.is_empty() || solution.row_duals.is_empty() {
                break solution;
            }
            let added = price_pairs(
                &self.instance.pairs,
                &owners,
                &present,
                &rows_of,
                &solution.row_duals,
                program.sense,
                &mut pair_cols,
                &mut classes,
                session.as_mut(),
            );
            if added == 0 {
                break solution;
            }
        };
        if program.from_last_optimum {
            session.prefer_primal(false);
        }
        if !self.instance.pairs.is_empty() {
            self.pair_pool = pair_cols
                .iter()
                .enumerate()
                .flat_map(|(i, cols)| cols.iter().map(move |&(w, col)| (i, w, col)))
                .filter(|&(_, _, col)| solution.values[col] > 0.0)
                .map(|(i, w, _)| (i, w))
                .collect();
        }
        // One pass over the rows that carry needs: which pooled cuts were tight (they seed later
        // programs), and which rows have a nonzero dual (their members cannot rise).
        let mut binding = (!solution.row_duals.is_empty()).then(|| vec![false; num_jobs]);
        for (need, row) in need_rows.iter().zip(&rows) {
            if let Some(i) = need.pool {
                let activity: f64 = row.coefs.iter().map(|&(c, v)| v * solution.values[c]).sum();
                self.pool[i].tight = activity - row.lower <= 1e-7 * (1.0 + row.lower.abs());
            }
            if let Some(binding) = binding.as_mut() {
                // Judge the dual of the equilibrated row, whose size does not depend on units.
                let (_, scale) = row.equilibrated();
                if (solution.row_duals[need.row] * scale).abs() > BINDING_DUAL {
                    for &m in need.members.iter().filter(|&&m| !needs[m].is_zero()) {
                        binding[m] = true;
                    }
                }
            }
        }

        let vars = solution.values[..num_vars].to_vec();
        // Each class's total and its jobs' needs, largest first: what the split works from.
        let totals: Vec<ClassTotal> = classes
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.jobs.is_empty())
            .map(|(c, class)| ClassTotal {
                class: c,
                y: class.cols.iter().map(|&(_, col)| solution.values[col].max(0.0)).collect(),
                sorted: class.sorted(needs, &vars),
            })
            .collect();
        let pair_time: Vec<Vec<f64>> = pair_cols
            .iter()
            .map(|cols| {
                let mut time = vec![0.0; num_types];
                cols.iter().for_each(|&(w, col)| time[w] = solution.values[col].max(0.0));
                time
            })
            .collect();
        let unconsolidated = if self.instance.unconsolidated.is_some() {
            let mut u = Matrix::zeros(num_jobs, num_types);
            extra_cols.iter().for_each(|&(m, w, col)| u.set(m, w, solution.values[col].max(0.0)));
            u
        } else {
            Matrix::zeros(0, 0)
        };
        // Without the split, no allocation (0 × 0): `Engine::last_allocation` makes it.
        let mut allocation = if program.allocate { Matrix::zeros(num_jobs, num_types) } else { Matrix::zeros(0, 0) };
        if program.allocate {
            for total in &totals {
                let left = split_class(&shapes[total.class], &total.y, &total.sorted, &mut allocation);
                if program.throughput_value.is_some() {
                    fill_class(&shapes[total.class], left, &total.sorted, &mut allocation);
                }
            }
        } else {
            self.last_totals = Some(totals);
            self.last_pair_time = pair_time.clone();
            self.last_unconsolidated = unconsolidated.clone();
        }
        let used = classes.iter().filter(|c| !c.jobs.is_empty()).count();
        if program.keep_model {
            let bounds = (0..num_vars).map(|v| (program.lower[v], program.upper[v])).collect();
            self.kept = Some(Kept {
                signature,
                session,
                bounds,
                col_cost,
                precise: program.precise,
                need_rows,
                num_rows,
                pair_cols,
                extra_cols,
                rows_of,
                orders: classes.iter_mut().map(|class| std::mem::take(&mut class.order)).collect(),
            });
        }
        Ok(Solved { vars, allocation, pair_time, unconsolidated, lp_solves, classes: used, binding })
    }

    /// A fresh LP for `classes`: capacities, class time and class totals, and the pooled cuts
    /// that were tight when last used. Returns it with its need-carrying rows.
    pub(super) fn build(
        &self,
        classes: &[Class],
        extra_cols: &[(usize, usize, usize)],
        pair_cols: &[Vec<(usize, usize)>],
        program: &Program,
        num_cols: usize,
    ) -> (LinearProgram, Vec<NeedRow>, RowIndex) {
        let needs = &program.needs;
        let mut rows_of = RowIndex {
            capacity: vec![None; self.instance.throughput.cols()],
            time: vec![None; classes.len()],
            total: vec![None; classes.len()],
        };
        let mut lp = LinearProgram::new(program.sense);
        for v in 0..program.cost.len() {
            lp.add_col(program.cost[v], program.lower[v], program.upper[v]);
        }
        for class in classes {
            for &(w, _) in &class.cols {
                let value = program.time_value(class.shape, w);
                lp.add_col(value, 0.0, class.jobs.len() as f64);
            }
        }
        for _ in extra_cols {
            lp.add_col(0.0, 0.0, 1.0);
        }
        for _ in pair_cols.iter().flatten() {
            lp.add_col(0.0, 0.0, 1.0);
        }
        debug_assert_eq!(lp.num_cols(), num_cols);
        for w in 0..self.instance.throughput.cols() {
            let pairs = self.instance.pairs.iter().zip(pair_cols).flat_map(|(pair, cols)| {
                cols.iter().filter(move |&&(v, _)| v == w).map(move |&(_, col)| (col, pair.scale_factor as f64))
            });
            let coefs: Vec<(usize, f64)> = classes
                .iter()
                .flat_map(|c| {
                    c.cols.iter().filter(|&&(v, _)| v == w).map(move |&(_, col)| (col, c.shape.scale_factor as f64))
                })
                .chain(pairs)
                .chain(
                    extra_cols
                        .iter()
                        .filter(|e| e.1 == w)
                        .map(|&(m, _, col)| (col, self.instance.scale_factor[m] as f64)),
                )
                .collect();
            if !coefs.is_empty() {
                rows_of.capacity[w] = Some(lp.add_row(Row::at_most(self.instance.capacity[w], coefs)));
            }
            // Consolidated placements of each size fit in the servers' whole-job slots.
            for &(size, gpus) in self.instance.consolidated_slots.get(w).into_iter().flatten() {
                let coefs: Vec<(usize, f64)> = classes
                    .iter()
                    .filter(|c| c.shape.scale_factor == size && !c.jobs.is_empty())
                    .flat_map(|c| c.cols.iter().filter(|&&(v, _)| v == w).map(|&(_, col)| (col, size as f64)))
                    .collect();
                if !coefs.is_empty() {
                    lp.add_row(Row::at_most(gpus, coefs));
                }
            }
        }
        let mut need_rows = Vec::new();
        for (c, class) in classes.iter().enumerate().filter(|(_, c)| !c.jobs.is_empty()) {
            // A paired or placement-sensitive job's time row holds its pair and unconsolidated
            // columns too: the ones its need row carries.
            let time: Vec<(usize, f64)> = class
                .cols
                .iter()
                .map(|&(_, col)| col)
                .chain(class.pair_terms.iter().map(|&(col, _)| col))
                .map(|col| (col, 1.0))
                .collect();
            rows_of.time[c] = Some(lp.add_row(Row::at_most(class.jobs.len() as f64, time)));
            // The class total (k = n), at λ = 0.
            let lambda = class.cols.len();
            let cut = class.total(needs);
            let sent = need_part(&cut, program.cost.len());
            let row = lp.add_row(cut);
            rows_of.total[c] = Some(row);
            need_rows.push(NeedRow { row, class: c, members: class.jobs.to_vec(), lambda, pool: None, sent });
        }
        for (i, cut) in self.pool.iter().enumerate().filter(|(_, c)| c.tight) {
            let class = &classes[cut.class];
            if !class.jobs.is_empty() && cut.lambda <= class.cols.len() {
                let row_cut = class.cut(&cut.members, cut.lambda, needs);
                let sent = need_part(&row_cut, program.cost.len());
                let row = lp.add_row(row_cut);
                need_rows.push(NeedRow {
                    sent,
                    row,
                    class: cut.class,
                    members: cut.members.clone(),
                    lambda: cut.lambda,
                    pool: Some(i),
                });
            }
        }
        (lp, need_rows, rows_of)
    }
}
