//! The recovery LP: the ratio `z`, full columns for the ambiguous jobs only, and every fixed job
//! folded into the capacity rows as its usage, affine in z (k coefficients of z, k constants).
//! Its size depends on the ambiguous set, not on the number of jobs. z is written as
//! `z₀·(1 + ζ)` around the estimate z₀ and the fixed usage as its value at z₀ plus `α_w·z₀·ζ`:
//! each job's usage at z₀ is at most its scale factor, so the constants carry no cancellation.

use super::best_response::JobView;
use super::Ratio;
use crate::lp::{Backend, LinearProgram, Row, Sense, SolveError};

/// The optimum of one recovery LP and its duals.
pub(super) struct Recovery {
    pub(super) z: f64,
    /// `p_w ≥ 0`: the capacity rows' duals (0 for a type no row constrains).
    pub(super) prices: Vec<f64>,
    /// Per ambiguous job (in the order given), its time on each type it may use.
    pub(super) time: Vec<Vec<(usize, f64)>>,
}

/// Solves the recovery LP. `fixed_usage[w] = (α_w, U_w)`: the fixed jobs' usage of type w is
/// `U_w + α_w·(z − z₀)`. With no fixed jobs z₀ may be anything positive (1 will do).
pub(super) fn solve(
    ratio: &Ratio,
    ambiguous: &[u32],
    capacity: &[f64],
    fixed_usage: &[(f64, f64)],
    z0: f64,
    backend: Backend,
) -> Result<Recovery, SolveError> {
    let num_types = capacity.len();
    let z_scale = z0;
    let mut lp = LinearProgram::new(Sense::Maximize);
    let zeta = lp.add_col(z_scale, -1.0, f64::INFINITY);
    let mut cols: Vec<Vec<(usize, usize)>> = Vec::with_capacity(ambiguous.len());
    let mut capacity_coefs: Vec<Vec<(usize, f64)>> = vec![Vec::new(); num_types];
    for (w, &(alpha, _)) in fixed_usage.iter().enumerate() {
        if alpha != 0.0 {
            capacity_coefs[w].push((zeta, alpha * z_scale));
        }
    }
    for &m in ambiguous {
        let job = ratio.job(m as usize);
        let mine: Vec<(usize, usize)> = (0..num_types)
            .filter(|&w| ratio.usable[w] && job.row[w] > 0.0)
            .map(|w| (w, lp.add_col(0.0, 0.0, 1.0)))
            .collect();
        for &(w, col) in &mine {
            capacity_coefs[w].push((col, job.sf));
        }
        cols.push(mine);
    }
    let mut capacity_row = vec![None; num_types];
    for (w, coefs) in capacity_coefs.into_iter().enumerate() {
        let room = capacity[w] - fixed_usage[w].1;
        if coefs.is_empty() {
            // Fixed jobs alone already over the capacity at any z: this structure cannot hold.
            if room < -1e-9 * capacity[w].max(1.0) {
                return Err(SolveError::Infeasible);
            }
            continue;
        }
        capacity_row[w] = Some(lp.add_row(Row::at_most(room, coefs)));
    }
    let mut job_rows = Vec::with_capacity(ambiguous.len());
    for (&m, mine) in ambiguous.iter().zip(&cols) {
        let job: JobView = ratio.job(m as usize);
        let mut need: Vec<(usize, f64)> = mine.iter().map(|&(w, col)| (col, job.row[w])).collect();
        need.push((zeta, -job.demand * z_scale));
        let need_row = lp.add_row(Row::at_least(job.demand * z0, need));
        let time_row = lp.add_row(Row::at_most(1.0, mine.iter().map(|&(_, col)| (col, 1.0)).collect()));
        job_rows.push((need_row, time_row));
    }
    let solution = backend.solve(lp)?;
    if solution.values[zeta] <= -1.0 + 1e-9 && fixed_usage.iter().any(|&(alpha, used)| alpha != 0.0 || used != 0.0) {
        // z stopped at its bound 0, whose dual no certificate covers. Every job with a demand
        // has a type it can use (or the caller stopped earlier), so the full LP's optimum is
        // positive: the fixed structures are what leave no room, as when they overfill a type.
        return Err(SolveError::Infeasible);
    }
    if solution.row_duals.is_empty() {
        return Err(SolveError::Failed("the backend reports no duals".into()));
    }
    let prices = capacity_row.iter().map(|r| r.map_or(0.0, |r| solution.row_duals[r].max(0.0))).collect();
    let time =
        cols.iter().map(|mine| mine.iter().map(|&(w, col)| (w, solution.values[col].max(0.0))).collect()).collect();
    Ok(Recovery { z: (z0 * (1.0 + solution.values[zeta])).max(0.0), prices, time })
}
