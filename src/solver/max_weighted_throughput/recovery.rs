//! The recovery LP: full columns for the ambiguous jobs only, every fixed job folded into the
//! capacity rows as its usage (a constant: the tie-break has no ratio to move). Its size depends
//! on the ambiguous set, not on the number of jobs.

use super::Instance;
use crate::lp::{Backend, LinearProgram, Row, Sense, SolveError};

/// The optimum of one recovery LP and its capacity duals.
pub(super) struct Recovery {
    /// `p_w ≥ 0`: the capacity rows' duals (0 for a type no row constrains).
    pub(super) prices: Vec<f64>,
    /// Per ambiguous job (in the order given), its time on each type it may use.
    pub(super) time: Vec<Vec<(usize, f64)>>,
    /// Whether it took GPUs past a type's capacity (only with `overflow`): then it is no
    /// allocation, only prices that say which types the fixed jobs overfill.
    pub(super) overflowed: bool,
}

/// Solves `max Σ_{m ∈ ambiguous} a_m·thr_m` over the ambiguous jobs' floors and time rows and
/// the GPUs the fixed jobs leave (`capacity − fixed_usage`). `overflow`: each type may overflow
/// at this price per GPU: a sample's GPUs may not hold all of its floors (its prices are all a
/// sample is for), and at the top level it is the second try of a recovery LP that was
/// infeasible, whose prices then say which types the fixed jobs overfill.
pub(super) fn solve(
    instance: &Instance,
    ambiguous: &[u32],
    capacity: &[f64],
    fixed_usage: &[f64],
    overflow: Option<f64>,
    backend: Backend,
) -> Result<Recovery, SolveError> {
    let num_types = capacity.len();
    let mut lp = LinearProgram::new(Sense::Maximize);
    let mut cols: Vec<Vec<(usize, usize)>> = Vec::with_capacity(ambiguous.len());
    let mut capacity_coefs: Vec<Vec<(usize, f64)>> = vec![Vec::new(); num_types];
    for &m in ambiguous {
        let job = instance.job(m as usize);
        let mine: Vec<(usize, usize)> = (0..num_types)
            .filter(|&w| instance.usable[w] && job.row[w] > 0.0)
            .map(|w| (w, lp.add_col(job.value * job.row[w], 0.0, 1.0)))
            .collect();
        for &(w, col) in &mine {
            capacity_coefs[w].push((col, job.sf));
        }
        cols.push(mine);
    }
    let mut capacity_row = vec![None; num_types];
    let mut overflow_cols = Vec::new();
    for (w, mut coefs) in capacity_coefs.into_iter().enumerate() {
        if !instance.usable[w] {
            continue;
        }
        let room = capacity[w] - fixed_usage[w];
        if let Some(price) = overflow {
            let col = lp.add_col(-price, 0.0, f64::INFINITY);
            overflow_cols.push((col, capacity[w]));
            coefs.push((col, -1.0));
        }
        if coefs.is_empty() {
            // The fixed jobs alone overfill the type: their vertices cannot all hold.
            if room < -1e-9 * capacity[w].max(1.0) {
                return Err(SolveError::Infeasible);
            }
            continue;
        }
        capacity_row[w] = Some(lp.add_row(Row::at_most(room, coefs)));
    }
    for (&m, mine) in ambiguous.iter().zip(&cols) {
        let job = instance.job(m as usize);
        if job.floor > 0.0 {
            lp.add_row(Row::at_least(job.floor, mine.iter().map(|&(w, col)| (col, job.row[w])).collect()));
        }
        lp.add_row(Row::at_most(1.0, mine.iter().map(|&(_, col)| (col, 1.0)).collect()));
    }
    let solution = backend.solve(lp)?;
    if solution.row_duals.is_empty() {
        return Err(SolveError::Failed("the backend reports no duals".into()));
    }
    let prices = capacity_row.iter().map(|r| r.map_or(0.0, |r| solution.row_duals[r].max(0.0))).collect();
    let time =
        cols.iter().map(|mine| mine.iter().map(|&(w, col)| (w, solution.values[col].max(0.0))).collect()).collect();
    let overflowed = overflow_cols.iter().any(|&(col, g)| solution.values[col] > 1e-9 * g.max(1.0));
    Ok(Recovery { prices, time, overflowed })
}
