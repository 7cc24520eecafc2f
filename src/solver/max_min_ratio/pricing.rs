//! Space sharing's pair columns, priced in from the row duals (column generation): exact when no
//! column improves.

use super::class::Class;
use super::model::RowIndex;
use crate::lp::{Sense, Session};
use crate::space_sharing::Pair;
use std::collections::HashMap;

/// Pair columns priced in per round at most (the best by reduced cost, at most
/// `PRICED_PER_JOB` per job); the loop goes on until none improves, so these bound only the size
/// of each step. Spreading a round's columns over the jobs keeps each re-solve short: with
/// Gavel's throughputs at 1,024 jobs, 2 per job solves in a fifth of the time of the best 8,192.
pub(super) const PRICED_PER_ROUND: usize = 8192;
pub(super) const PRICED_PER_JOB: usize = 2;
/// A pair column improves the program when its reduced cost exceeds this.
pub(super) const REDUCED_COST_TOLERANCE: f64 = 1e-9;

/// Column generation over the pair columns not yet in the model: with the row duals `y`, the
/// reduced cost of `Y[k][w]` is `0 − (sf·y_cap(w) + y_time(a) + y_time(b) + T_k[a][w]·y_need(a) +
/// T_k[b][w]·y_need(b))`; the most improving ones are added. Returns how many were added. When
/// none improves, the model's optimum is optimal over every pair column: that is the exactness
/// argument, and it needs no column to be present up front.
#[allow(clippy::too_many_arguments)]
pub(super) fn price_pairs(
    pairs: &[Pair],
    owners: &[[usize; 2]],
    present: &[bool],
    rows_of: &RowIndex,
    duals: &[f64],
    sense: Sense,
    pair_cols: &mut [Vec<(usize, usize)>],
    classes: &mut [Class],
    session: &mut dyn Session,
) -> usize {
    // (gain, pair, type, the column's row entries)
    type Candidate = (f64, usize, usize, [(usize, f64); 5]);
    let mut candidates: Vec<Candidate> = Vec::new();
    for (i, pair) in pairs.iter().enumerate().filter(|&(i, _)| present[i]) {
        let [ca, cb] = owners[i];
        let (Some(ta), Some(tb), Some(na), Some(nb)) =
            (rows_of.time[ca], rows_of.time[cb], rows_of.total[ca], rows_of.total[cb])
        else {
            continue;
        };
        for w in pair.types() {
            if pair_cols[i].iter().any(|&(v, _)| v == w) {
                continue;
            }
            let Some(cap) = rows_of.capacity[w] else { continue };
            let [pa, pb] = pair.throughput[w];
            let entries = [(cap, pair.scale_factor as f64), (ta, 1.0), (tb, 1.0), (na, pa), (nb, pb)];
            let d = -entries.iter().map(|&(r, a)| a * duals[r]).sum::<f64>();
            let gain = match sense {
                Sense::Maximize => d,
                Sense::Minimize => -d,
            };
            if gain > REDUCED_COST_TOLERANCE {
                candidates.push((gain, i, w, entries));
            }
        }
    }
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0));
    // At most a few new columns per job and round, so one round's columns spread over the jobs.
    let mut taken: HashMap<usize, usize> = HashMap::new();
    candidates.retain(|&(_, i, _, _)| {
        let jobs = pairs[i].jobs;
        let ok = jobs.iter().all(|m| taken.get(m).copied().unwrap_or(0) < PRICED_PER_JOB);
        if ok {
            jobs.iter().for_each(|&m| *taken.entry(m).or_default() += 1);
        }
        ok
    });
    candidates.truncate(PRICED_PER_ROUND);
    for (_, i, w, entries) in &candidates {
        let col = session.add_col(0.0, 0.0, 1.0, entries.as_slice());
        pair_cols[*i].push((*w, col));
        let [ca, cb] = owners[*i];
        classes[ca].pair_terms.push((col, pairs[*i].throughput[*w][0]));
        classes[cb].pair_terms.push((col, pairs[*i].throughput[*w][1]));
    }
    candidates.len()
}
