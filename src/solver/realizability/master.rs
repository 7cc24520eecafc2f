//! The column generation: the master LP over the configurations found so far, its duals priced
//! into a new configuration (`pricing`), until none improves (exact) or a budget runs out (then
//! the Lagrangian bound says how much more any schedule could deliver).
//!
//! ```text
//! maximize   Σ_e d_e
//! subject to d_e − Σ_c a_ce·λ_c ≤ 0     (π_e)   for every entry e = (job, type)
//!            Σ_c λ_c ≤ 1                (μ)
//!            0 ≤ d_e ≤ X_e,  λ_c ≥ 0
//! ```
//!
//! A configuration `c` improves the master iff its reduced cost `Σ_e π_e·a_ce − μ` is positive.
//!
//! Asked to, with a shortfall at the optimum, phases two and three spread it over the entries that
//! fit their type (a gang no larger than the type): the largest fraction `r*` of its time every
//! such entry receives, then the most time in all with `r*` held.
//!
//! ```text
//! phase two:    maximize r        subject to the rows above,  d_e − X_e·r ≥ 0  (e fits),  0 ≤ r ≤ 1
//! phase three:  maximize Σ_e d_e  subject to the same, r ≥ r*
//! ```

use super::pricing::Pricing;
use crate::lp::{Backend, LinearProgram, Row, Sense, SolveError};
use std::collections::HashSet;
use std::time::Instant;

/// A column must improve the master by more than this to be added.
const REDUCED_COST_TOL: f64 = 1e-9;
/// Below what is asked by more than this, the decomposition has a shortfall to spread.
const SHORTFALL_TOL: f64 = 1e-7;
/// Phase three holds `r` at its optimum less this (the solver's tolerance).
const KEEP_TOL: f64 = 1e-7;
/// An objective this close to a known upper bound (relative) has reached it.
const BOUND_TOL: f64 = 1e-9;

/// What a master solve costs besides its simplex iterations (setting the solve up, reading its
/// duals, pricing them by knapsacks), in simplex iterations: fitted to the benchmark's checks at
/// about 80 entries, where a solve cost about 1.5 ms and an iteration about 15 µs.
pub const SOLVE_WORK: u64 = 100;

/// How long the column generation may run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Master solves at most.
    pub iterations: usize,
    /// Work at most (`Master::work`): a bound that, unlike `deadline`, gives the same answer on
    /// every machine.
    pub work: u64,
    /// Branch-and-bound nodes per pricing.
    pub pricing_nodes: usize,
    pub deadline: Option<Instant>,
}

/// A decomposition over `entries`: configurations (entry indices) with weights, what it delivers
/// per entry, and how far from the best any schedule can do it may be.
#[derive(Debug, Clone, PartialEq)]
pub struct Decomposition {
    pub columns: Vec<Vec<usize>>,
    pub weights: Vec<f64>,
    /// Per entry: `min(X_e, Σ_c a_ce·λ_c)`, the time the rounds can give it.
    pub deliverable: Vec<f64>,
    /// An upper bound on `Σ_e deliverable_e` over every schedule (equal to it when certified).
    pub upper_bound: f64,
    /// Why the optimum is not certified (a budget ran out), if it is not.
    pub stopped: Option<String>,
    pub lp_solves: usize,
}

/// Column generation from the columns of `seed` (with their weights, used when they already
/// deliver everything). With `spread` (per entry: whether it fits its type), when the most the
/// configurations can deliver falls short of what is asked, phases two and three spread the
/// shortfall, again by column generation (the new rows and column do not involve `λ`, so pricing
/// is unchanged). `upper_bound` stays phase one's: the most any schedule delivers in all.
pub fn decompose(
    pricing: &Pricing,
    requested: &[f64],
    spread: Option<&[bool]>,
    seed: (Vec<Vec<usize>>, Vec<f64>),
    backend: Backend,
    limits: Limits,
) -> Result<Decomposition, SolveError> {
    let entries = requested.len();
    let mut lp = LinearProgram::new(Sense::Maximize);
    for &x in requested {
        lp.add_col(1.0, 0.0, x);
    }
    for e in 0..entries {
        lp.add_row(Row::at_most(0.0, vec![(e, 1.0)]));
    }
    let convexity = lp.add_row(Row::at_most(1.0, Vec::new()));
    let supply = Supply::one_row_each((0..entries).collect(), vec![1.0; entries], vec![0.0; entries]);
    let mut master = Master::new(backend.open(lp), supply, convexity);
    for column in seed.0 {
        master.add(column);
    }
    let mut lp_solves = 0;
    let total: f64 = requested.iter().sum();
    let (mut solution, upper_bound, mut stopped) = master.generate(pricing, &limits, Some(total), &mut lp_solves)?;
    let delivered = solution.objective;
    let fits = spread.unwrap_or(&[]);
    let spreadable = fits.iter().zip(requested).any(|(&f, &x)| f && x > 0.0);
    if stopped.is_none() && delivered < total - SHORTFALL_TOL && spreadable && lp_solves < limits.iterations {
        // Phase two: the largest fraction r of its time every entry that fits its type receives.
        let r = master.session.add_col(1.0, 0.0, 1.0, &[]);
        let rows: Vec<Row> = (0..entries)
            .filter(|&e| fits[e] && requested[e] > 0.0)
            .map(|e| Row::at_least(0.0, vec![(e, 1.0), (r, -requested[e])]))
            .collect();
        master.session.add_rows(&rows);
        master.session.set_costs(&(0..entries).map(|e| (e, 0.0)).collect::<Vec<_>>());
        let (fair, _, why) = master.generate(pricing, &limits, Some(1.0), &mut lp_solves)?;
        stopped = why.map(|why| format!("spreading the shortfall: {why}"));
        solution = fair;
        if stopped.is_none() {
            // Phase three: as much time in all as rounds can give with r held.
            let held = (solution.objective - KEEP_TOL).max(0.0);
            master.session.set_col_bounds(r, held, 1.0);
            let mut costs: Vec<(usize, f64)> = (0..entries).map(|e| (e, 1.0)).collect();
            costs.push((r, 0.0));
            master.session.set_costs(&costs);
            let (most, _, why) = master.generate(pricing, &limits, None, &mut lp_solves)?;
            stopped = why.map(|why| format!("spreading the shortfall: {why}"));
            solution = most;
        }
    }
    let weights = master.weights(&solution);
    let mut supplied = vec![0.0; entries];
    for (column, &weight) in master.columns.iter().zip(&weights) {
        for &e in column {
            supplied[e] += weight;
        }
    }
    let deliverable = supplied.iter().zip(requested).map(|(&s, &x)| s.min(x)).collect();
    Ok(Decomposition {
        columns: master.columns,
        weights,
        deliverable,
        upper_bound: upper_bound.min(total),
        stopped,
        lp_solves,
    })
}

/// How a configuration enters a master LP: each entry it runs supplies `coef` to each of its rows
/// (the column's coefficient there is `−coef`, in a `≤` row whose dual is `≥ 0`) and adds `cost`
/// to the column's objective. Entries of one job share a row or not, as the master states; a
/// colocated pair's entry supplies both of its jobs' rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Supply {
    /// Per entry, `(row, coef)` for each row it supplies (none, one, or a pair's two).
    pub terms: Vec<Vec<(usize, f64)>>,
    pub cost: Vec<f64>,
}

impl Supply {
    /// Entry `e` supplies `coef[e]` to `row[e]` alone.
    pub fn one_row_each(row: Vec<usize>, coef: Vec<f64>, cost: Vec<f64>) -> Supply {
        Supply { terms: row.into_iter().zip(coef).map(|term| vec![term]).collect(), cost }
    }

    /// Each entry's value to pricing under the duals `y`: `Σ max(y_row, 0)·coef + cost`.
    fn value(&self, y: &[f64]) -> Vec<f64> {
        self.terms
            .iter()
            .zip(&self.cost)
            .map(|(terms, &c)| terms.iter().map(|&(r, a)| y[r].max(0.0) * a).sum::<f64>() + c)
            .collect()
    }
}

/// A column's entries in order: the key by which `Master` knows its columns.
fn sorted(column: &[usize]) -> Vec<usize> {
    let mut key = column.to_vec();
    key.sort_unstable();
    key
}

/// A master LP in its solver (the rows a caller built, and the convexity row `Σ_c λ_c ≤ 1`), and
/// the configurations it holds.
pub struct Master {
    pub session: Box<dyn crate::lp::Session>,
    supply: Supply,
    convexity: usize,
    /// Each configuration's entries, and its column `λ_c`.
    pub columns: Vec<Vec<usize>>,
    pub lambda: Vec<usize>,
    /// Simplex iterations of the solves so far (as far as the backend counts them).
    pub simplex_iterations: u64,
    /// Each column's entries, sorted: a configuration priced again is not added twice.
    known: HashSet<Vec<usize>>,
}

impl Master {
    pub fn new(session: Box<dyn crate::lp::Session>, supply: Supply, convexity: usize) -> Master {
        Master {
            session,
            supply,
            convexity,
            columns: Vec::new(),
            lambda: Vec::new(),
            simplex_iterations: 0,
            known: HashSet::new(),
        }
    }

    pub fn add(&mut self, column: Vec<usize>) {
        let mut coefs: Vec<(usize, f64)> = column
            .iter()
            .flat_map(|&e| &self.supply.terms[e])
            .filter(|&&(_, a)| a != 0.0)
            .map(|&(r, a)| (r, -a))
            .collect();
        coefs.push((self.convexity, 1.0));
        let cost = self.cost_of(&column);
        self.lambda.push(self.session.add_col(cost, 0.0, f64::INFINITY, &coefs));
        self.known.insert(sorted(&column));
        self.columns.push(column);
    }

    /// Whether a configuration with these entries is a column already.
    pub fn has(&self, column: &[usize]) -> bool {
        self.known.contains(&sorted(column))
    }

    /// A configuration's objective value: its entries' costs.
    fn cost_of(&self, column: &[usize]) -> f64 {
        column.iter().map(|&e| self.supply.cost[e]).sum()
    }

    /// Replaces the entries' objective values, and with them every configuration's.
    pub fn set_entry_costs(&mut self, cost: Vec<f64>) {
        self.supply.cost = cost;
        let costs: Vec<(usize, f64)> =
            self.columns.iter().zip(&self.lambda).map(|(column, &c)| (c, self.cost_of(column))).collect();
        self.session.set_costs(&costs);
    }

    /// The column generation's work after `lp_solves` master solves, with `pricing_work` the
    /// work of pricing's MILPs (`Pricing::solve_work`): the master's simplex iterations (as far as
    /// the backend counts them), `SOLVE_WORK` per master solve and pricing's, times the entries
    /// (the master's rows, with which an iteration's and a pricing's cost grow).
    pub fn work(&self, lp_solves: usize, pricing_work: u64) -> u64 {
        let entries = self.supply.terms.len().max(1) as u64;
        let iterations = self.simplex_iterations + SOLVE_WORK * lp_solves as u64 + pricing_work;
        entries.saturating_mul(iterations)
    }

    /// The configurations' weights in `solution` (≥ 0).
    pub fn weights(&self, solution: &crate::lp::Solution) -> Vec<f64> {
        self.lambda.iter().map(|&c| solution.values.get(c).map_or(0.0, |v| v.max(0.0))).collect()
    }

    /// The configurations with a positive weight in `solution`, with their weights.
    pub fn decomposition(&self, solution: &crate::lp::Solution) -> Vec<(Vec<usize>, f64)> {
        self.columns.iter().cloned().zip(self.weights(solution)).filter(|(_, w)| *w > 0.0).collect()
    }

    /// Solves the master; should the solve from the last optimum's basis stop on numerical trouble
    /// (a basis grown ill-conditioned over many added columns and rows), solves once more from
    /// the slack basis.
    fn solve_afresh_on_trouble(&mut self) -> Result<crate::lp::Solution, SolveError> {
        match self.session.solve() {
            Err(SolveError::Failed(_)) => {
                self.session.forget_basis();
                self.session.solve()
            }
            other => other,
        }
    }

    /// Solves, prices the duals into a new configuration and adds it, until none improves, the
    /// objective reaches `known_bound` (an upper bound the caller knows, such as the fractional
    /// optimum: reaching it proves the optimum as well) or a limit is reached: the last solution,
    /// the bound on the objective, and why it stopped short of the optimum if it did.
    pub fn generate(
        &mut self,
        pricing: &Pricing,
        limits: &Limits,
        known_bound: Option<f64>,
        lp_solves: &mut usize,
    ) -> Result<(crate::lp::Solution, f64, Option<String>), SolveError> {
        let mut last: Option<(crate::lp::Solution, f64)> = None;
        loop {
            let solution = match (self.solve_afresh_on_trouble(), last.take()) {
                (Ok(solution), _) => solution,
                // Out of time after a solve: the last master stands, with its bound.
                (Err(SolveError::TimeLimit), Some((previous, bound))) => {
                    return Ok((previous, bound, Some("column generation stopped at its time budget".to_string())));
                }
                (Err(error), _) => return Err(error),
            };
            *lp_solves += 1;
            self.simplex_iterations += self.session.simplex_iterations().unwrap_or(0);
            if let Some(bound) = known_bound.filter(|&b| solution.objective >= b - BOUND_TOL * b.abs().max(1.0)) {
                return Ok((solution, bound, None));
            }
            if solution.row_duals.len() <= self.convexity {
                return Err(SolveError::Failed("the backend reports no row duals, which pricing needs".into()));
            }
            let value = self.supply.value(&solution.row_duals);
            let mu = solution.row_duals[self.convexity].max(0.0);
            let priced = pricing.price(&value, mu + REDUCED_COST_TOL, limits.pricing_nodes);
            // Dual feasible with μ raised to the pricing bound: Lagrangian bound on the optimum.
            let upper_bound = solution.objective + (priced.bound - mu).max(0.0);
            let Some(column) = priced.column else {
                let why = (priced.bound > mu + REDUCED_COST_TOL).then(|| {
                    format!(
                        "pricing stopped after {} branch-and-bound nodes without proving that no \
                         configuration improves",
                        limits.pricing_nodes
                    )
                });
                return Ok((solution, upper_bound, why));
            };
            if *lp_solves >= limits.iterations {
                let why = format!("column generation stopped after {} master solves", limits.iterations);
                return Ok((solution, upper_bound, Some(why)));
            }
            if self.work(*lp_solves, pricing.solve_work()) >= limits.work {
                let why = format!(
                    "column generation stopped at its work budget ({} master solves, {} simplex iterations)",
                    *lp_solves, self.simplex_iterations
                );
                return Ok((solution, upper_bound, Some(why)));
            }
            if limits.deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok((solution, upper_bound, Some("column generation stopped at its time budget".to_string())));
            }
            // A column the master has cannot improve it beyond the LP's own tolerance: the duals
            // priced it from round-off (seen with throughputs 10⁸ apart, where the same
            // configuration came back for every one of 2,000 master solves). The optimum stands,
            // with the pricing's bound.
            if self.has(&column.entries) {
                let why = "column generation stopped: the best configuration priced is already in the master, \
                           improving it only within the LP's tolerance"
                    .to_string();
                return Ok((solution, upper_bound, Some(why)));
            }
            self.add(column.entries);
            last = Some((solution, upper_bound));
        }
    }
}
