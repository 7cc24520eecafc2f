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

use super::pricing::Pricing;
use crate::lp::{Backend, LinearProgram, Row, Sense, SolveError};
use std::time::Instant;

/// A column must improve the master by more than this to be added.
const REDUCED_COST_TOL: f64 = 1e-9;

/// How long the column generation may run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Master solves at most.
    pub iterations: usize,
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
/// deliver everything).
pub fn decompose(
    pricing: &Pricing,
    requested: &[f64],
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
    let mut session = backend.open(lp);
    let mut columns: Vec<Vec<usize>> = Vec::new();
    let mut add = |session: &mut Box<dyn crate::lp::Session>, column: Vec<usize>| {
        let mut coefs: Vec<(usize, f64)> = column.iter().map(|&e| (e, -1.0)).collect();
        coefs.push((convexity, 1.0));
        session.add_col(0.0, 0.0, f64::INFINITY, &coefs);
        columns.push(column);
    };
    for column in seed.0 {
        add(&mut session, column);
    }
    let mut lp_solves = 0;
    let mut stopped = None;
    let mut last: Option<(crate::lp::Solution, f64)> = None;
    let (solution, upper_bound) = loop {
        let solution = match (session.solve(), last.take()) {
            (Ok(solution), _) => solution,
            // Out of time after a solve: the last master stands, with its bound.
            (Err(SolveError::TimeLimit), Some(previous)) => {
                stopped = Some("column generation stopped at its time budget".to_string());
                break previous;
            }
            (Err(error), _) => return Err(error),
        };
        lp_solves += 1;
        if solution.row_duals.len() <= convexity {
            return Err(SolveError::Failed("the backend reports no row duals, which pricing needs".into()));
        }
        let value: Vec<f64> = solution.row_duals[..entries].iter().map(|&y| y.max(0.0)).collect();
        let mu = solution.row_duals[convexity].max(0.0);
        let priced = pricing.price(&value, mu + REDUCED_COST_TOL, limits.pricing_nodes);
        // Dual feasible with μ raised to the pricing bound: Lagrangian bound on the optimum.
        let upper_bound = solution.objective + (priced.bound - mu).max(0.0);
        let Some(column) = priced.column else {
            if priced.bound > mu + REDUCED_COST_TOL {
                stopped = Some(format!(
                    "pricing stopped after {} branch-and-bound nodes without proving that no \
                     configuration improves",
                    limits.pricing_nodes
                ));
            }
            break (solution, upper_bound);
        };
        if lp_solves >= limits.iterations {
            stopped = Some(format!("column generation stopped after {} master solves", limits.iterations));
            break (solution, upper_bound);
        }
        if limits.deadline.is_some_and(|d| Instant::now() >= d) {
            stopped = Some("column generation stopped at its time budget".to_string());
            break (solution, upper_bound);
        }
        add(&mut session, column.entries);
        last = Some((solution, upper_bound));
    };
    let weights: Vec<f64> = solution.values[entries..].iter().map(|&l| l.max(0.0)).collect();
    let mut supplied = vec![0.0; entries];
    for (column, &weight) in columns.iter().zip(&weights) {
        for &e in column {
            supplied[e] += weight;
        }
    }
    let deliverable = supplied.iter().zip(requested).map(|(&s, &x)| s.min(x)).collect();
    let total: f64 = requested.iter().sum();
    Ok(Decomposition { columns, weights, deliverable, upper_bound: upper_bound.min(total), stopped, lp_solves })
}
