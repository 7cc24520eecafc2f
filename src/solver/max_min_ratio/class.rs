//! Classes of identical jobs (same throughput row and scale factor): the LP works with class
//! totals, the top-k cuts that make that exact, and the split of a class total among its jobs.

use super::program::Need;
use super::CUT_TOLERANCE;
use crate::lp::Row;
use crate::problem::Matrix;
use std::borrow::Cow;
use std::cell::OnceCell;

/// The members of `jobs` by need, largest first (ties by index), when that order is the same for
/// every value of the program's variables: every need a constant, or every need `c_m·v` for one
/// variable v with `c_m ≥ 0` (the order then holds wherever v > 0). `None` otherwise.
fn invariant_order(jobs: &[usize], needs: &[Need]) -> Option<Vec<usize>> {
    let constant = jobs.iter().all(|&m| needs[m].terms.is_empty());
    let var = needs[*jobs.first()?].terms.first().map(|&(v, _)| v);
    let proportional = jobs.iter().all(|&m| {
        let need = &needs[m];
        need.base == 0.0 && need.terms.len() == 1 && Some(need.terms[0].0) == var && need.terms[0].1 >= 0.0
    });
    if !constant && !proportional {
        return None;
    }
    let key = |m: usize| if constant { needs[m].base.max(0.0) } else { needs[m].terms[0].1 };
    let mut order: Vec<(usize, f64)> = jobs.iter().map(|&m| (m, key(m))).collect();
    order.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Some(order.into_iter().map(|(m, _)| m).collect())
}

/// Jobs with the same throughput row and scale factor, grouped once per instance.
pub(super) struct ClassShape {
    pub(super) jobs: Vec<usize>,
    pub(super) row: Vec<f64>,
    pub(super) scale_factor: u32,
    /// The types the class can use, fastest first.
    pub(super) types: Vec<usize>,
}

/// A class as it enters one program: its members with a nonzero need and its LP columns.
pub(super) struct Class<'s> {
    pub(super) shape: &'s ClassShape,
    pub(super) jobs: Cow<'s, [usize]>,
    /// The members by need, largest first, when that order holds whatever the variables (see
    /// `invariant_order`); found at the first `sorted`.
    pub(super) order: OnceCell<Option<Vec<usize>>>,
    /// `(type, column)`, fastest first.
    pub(super) cols: Vec<(usize, usize)>,
    /// A paired job's class: `(column, its throughput there)` of every pair column it is in.
    pub(super) pair_terms: Vec<(usize, f64)>,
}

/// A cut the engine found, kept to seed later programs (re-derived with their needs).
#[derive(Clone)]
pub(super) struct PoolCut {
    pub(super) class: usize,
    pub(super) members: Vec<usize>,
    pub(super) lambda: usize,
    /// Whether the cut was tight at the end of the last program that had it; only those seed
    /// the next program (a stale one comes back when it is violated again).
    pub(super) tight: bool,
}

impl Class<'_> {
    pub(super) fn row(&self, w: usize) -> f64 {
        self.shape.row[w]
    }

    /// The class-total row (k = n, λ = 0) with the pair terms of a paired job: the row that
    /// carries the class's needs in every program.
    pub(super) fn total(&self, needs: &[Need]) -> Row {
        let mut row = self.cut(&self.jobs, self.cols.len(), needs);
        row.coefs.extend(self.pair_terms.iter().copied());
        row
    }

    /// The row carrying `members`' needs at `λ = lambda(li)`: the class total or a cut.
    pub(super) fn need_row(&self, members: &[usize], li: usize, needs: &[Need]) -> Row {
        if li == self.cols.len() && members.len() == self.jobs.len() {
            self.total(needs)
        } else {
            self.cut(members, li, needs)
        }
    }

    /// The cut for the set `members` at dual point `λ = lambda(li)`; members with no need in this
    /// program count for nothing (the cut for the rest is then tighter and still valid).
    pub(super) fn cut(&self, members: &[usize], li: usize, needs: &[Need]) -> Row {
        let lambda = self.lambda(li);
        let mut coefs: Vec<(usize, f64)> = self
            .cols
            .iter()
            .filter(|&&(w, _)| self.row(w) > lambda)
            .map(|&(w, col)| (col, self.row(w) - lambda))
            .collect();
        let mut var_coefs: Vec<(usize, f64)> = Vec::new();
        let (mut base, mut k) = (0.0, 0usize);
        for &m in members {
            if needs[m].is_zero() {
                continue;
            }
            k += 1;
            base += needs[m].base;
            for &(v, c) in &needs[m].terms {
                match var_coefs.iter_mut().find(|(u, _)| *u == v) {
                    Some(entry) => entry.1 -= c,
                    None => var_coefs.push((v, -c)),
                }
            }
        }
        var_coefs.retain(|&(_, c)| c != 0.0);
        var_coefs.sort_by_key(|&(v, _)| v);
        coefs.extend(var_coefs);
        Row::at_least(base - lambda * k as f64, coefs)
    }

    /// Members sorted by current need, largest first (ties by index), with those needs.
    pub(super) fn sorted(&self, needs: &[Need], vars: &[f64]) -> Vec<(usize, f64)> {
        let value = |m: usize| needs[m].value(vars).max(0.0);
        if let Some(order) = self.order.get_or_init(|| invariant_order(&self.jobs, needs)) {
            // The order does not depend on the variables (at positive ones, for needs in one).
            if order.first().is_none_or(|&m| needs[m].terms.is_empty() || vars[needs[m].terms[0].0] > 0.0) {
                return order.iter().map(|&m| (m, value(m))).collect();
            }
        }
        let mut d: Vec<(usize, f64)> = self.jobs.iter().map(|&m| (m, value(m))).collect();
        d.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        d
    }

    /// The violated top-k conditions at `(y, vars)`, the most violated of each tight λ (a cut
    /// per λ index at most, so one round can add a class's cuts at every breakpoint its time
    /// crosses): `(k, λ index)`, k < n, most violated first.
    pub(super) fn violated(&self, y: &[f64], sorted: &[(usize, f64)]) -> Vec<(usize, usize)> {
        let mut worst: Vec<Option<(usize, f64)>> = vec![None; self.cols.len() + 1];
        let (mut seg, mut used_in_seg, mut f, mut want) = (0, 0.0, 0.0, 0.0);
        for (k, &(_, d)) in sorted.iter().enumerate().take(sorted.len().saturating_sub(1)) {
            let k = k + 1;
            want += d;
            let mut need = 1.0;
            while need > 0.0 && seg < self.cols.len() {
                let take = (y[seg] - used_in_seg).min(need).max(0.0);
                f += take * self.row(self.cols[seg].0);
                need -= take;
                used_in_seg += take;
                if used_in_seg >= y[seg] {
                    seg += 1;
                    used_in_seg = 0.0;
                }
            }
            let violation = (want - f) / want.max(f64::MIN_POSITIVE);
            if violation > CUT_TOLERANCE {
                let l = self.tight_lambda(y, k);
                if worst[l].is_none_or(|(_, v)| violation > v) {
                    worst[l] = Some((k, violation));
                }
            }
        }
        let mut out: Vec<(usize, usize, f64)> =
            worst.iter().enumerate().filter_map(|(l, w)| w.map(|(k, v)| (k, l, v))).collect();
        out.sort_by(|a, b| b.2.total_cmp(&a.2));
        out.into_iter().map(|(k, l, _)| (k, l)).collect()
    }

    /// Index into `cols` (or `cols.len()` for λ = 0) of the λ attaining `F_Y(k)`: the speed of the
    /// type where the k-th unit of time ends, or 0 when the class has less than k units in all.
    pub(super) fn tight_lambda(&self, y: &[f64], k: usize) -> usize {
        let mut acc = 0.0;
        for (i, &amount) in y.iter().enumerate() {
            acc += amount;
            if acc >= k as f64 {
                return i;
            }
        }
        self.cols.len()
    }

    pub(super) fn lambda(&self, index: usize) -> f64 {
        self.cols.get(index).map_or(0.0, |&(w, _)| self.row(w))
    }
}

/// A class's total time per type in a solution, and its jobs' needs there, largest first.
pub(super) struct ClassTotal {
    pub(super) class: usize,
    pub(super) y: Vec<f64>,
    pub(super) sorted: Vec<(usize, f64)>,
}

/// Splits a class total `y` (per type of `shape.types`, fastest first) among its jobs, given their
/// needs largest first: each takes the latest unit window of the remaining time whose throughput
/// still covers its need.
pub(super) fn split_class(shape: &ClassShape, y: &[f64], sorted: &[(usize, f64)], allocation: &mut Matrix) -> Vec<f64> {
    let speeds: Vec<f64> = shape.types.iter().map(|&w| shape.row[w]).collect();
    let mut left = y.to_vec();
    for &(m, need) in sorted {
        let a = latest_window(&speeds, &left, need);
        // Remove [a, a+1] from the remaining time line and hand it to job m.
        let mut start = 0.0;
        for (s, amount) in left.iter_mut().enumerate() {
            let end = start + *amount;
            let overlap = (end.min(a + 1.0) - start.max(a)).max(0.0);
            if overlap > 0.0 {
                *amount -= overlap;
                let w = shape.types[s];
                allocation.set(m, w, allocation.get(m, w) + overlap);
            }
            start = end;
        }
    }
    left
}

/// Hands the class time `left` over after the split to the members with time to spare, fastest
/// time first, so that no time the LP gave the class goes unused (the class-time row keeps the
/// total within the members' time).
pub(super) fn fill_class(shape: &ClassShape, mut left: Vec<f64>, sorted: &[(usize, f64)], allocation: &mut Matrix) {
    for &(m, _) in sorted {
        let mut spare = 1.0 - allocation.row(m).iter().sum::<f64>();
        for (s, amount) in left.iter_mut().enumerate() {
            if spare <= 0.0 {
                break;
            }
            let give = amount.min(spare);
            if give > 0.0 {
                let w = shape.types[s];
                allocation.set(m, w, allocation.get(m, w) + give);
                *amount -= give;
                spare -= give;
            }
        }
    }
}

/// Types a class can use without `latest_window` reaching for the heap (it runs once per job).
const INLINE_TYPES: usize = 16;

/// The largest `a ≥ 0` with `∫_a^{a+1} speed ≥ need` on the time line made of `amount[s]` units
/// at `speed[s]` (speeds decreasing); 0 if even the first window falls short.
pub(super) fn latest_window(speed: &[f64], amount: &[f64], need: f64) -> f64 {
    let total: f64 = amount.iter().sum();
    // G(x) = ∫_0^x speed, piecewise linear.
    let g = |x: f64| {
        let (mut acc, mut start) = (0.0, 0.0);
        for (s, &len) in amount.iter().enumerate() {
            if x <= start {
                break;
            }
            acc += speed[s] * (x.min(start + len) - start);
            start += len;
        }
        acc
    };
    let window = |a: f64| g((a + 1.0).min(total)) - g(a);
    // The window's value is linear between these points: segment ends, and segment ends minus 1.
    let len = 2 * amount.len() + 2;
    let (mut inline, mut heap) = ([0.0; 2 * INLINE_TYPES + 2], Vec::new());
    let points: &mut [f64] = if len <= inline.len() {
        &mut inline[..len]
    } else {
        heap.resize(len, 0.0);
        &mut heap
    };
    let mut kept = 0;
    let mut keep = |p: f64, points: &mut [f64]| {
        if (0.0..=total).contains(&p) {
            points[kept] = p;
            kept += 1;
        }
    };
    keep(0.0, points);
    keep(total, points);
    let mut start = 0.0;
    for &len in amount {
        start += len;
        keep(start, points);
        keep(start - 1.0, points);
    }
    let points = &mut points[..kept];
    points.sort_unstable_by(f64::total_cmp);
    // Equal points once each (the first of a run, as `Vec::dedup` keeps).
    let mut distinct = 0;
    for i in 0..points.len() {
        if distinct == 0 || points[i] != points[distinct - 1] {
            points[distinct] = points[i];
            distinct += 1;
        }
    }
    let mut best = 0.0;
    // Each point's window, once: the end of one pair is the start of the next.
    let mut h1 = points.first().map_or(0.0, |&a| window(a));
    for pair in points[..distinct].windows(2) {
        let (a0, a1) = (pair[0], pair[1]);
        let h0 = h1;
        if h0 < need {
            break;
        }
        h1 = window(a1);
        if h1 >= need {
            best = a1;
            continue;
        }
        // Linear between a0 and a1: solve h(a) = need.
        best = a0 + (a1 - a0) * (h0 - need) / (h0 - h1);
        break;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_violated_cut_at_each_breakpoint_the_time_crosses() {
        // One class on a fast type (3 steps/s) and a slow one (1): 1 unit of fast time and 2 of slow
        // for three members needing 4, 3 and 0.5. The best member gets F(1) = 3 < 4 (its unit ends on
        // the fast type: λ index 0); the best two F(2) = 3 + 1 = 4 < 7 (λ index 1, the slow type).
        let shape = ClassShape { jobs: vec![0, 1, 2], row: vec![3.0, 1.0], scale_factor: 1, types: vec![0, 1] };
        let class = Class {
            shape: &shape,
            jobs: Cow::Borrowed(&shape.jobs),
            order: OnceCell::new(),
            cols: vec![(0, 0), (1, 1)],
            pair_terms: Vec::new(),
        };
        let sorted = [(0, 4.0), (1, 3.0), (2, 0.5)];
        // Most violated first: k = 2 by (7 − 4)/7, then k = 1 by (4 − 3)/4.
        assert_eq!(class.violated(&[1.0, 2.0], &sorted), [(2, 1), (1, 0)]);
        // With 2 units of fast time both conditions end on the fast type (λ index 0): F(1) = 3 < 4
        // by 1/4 and F(2) = 6 < 7 by 1/7; one cut per λ, the more violated.
        assert_eq!(class.violated(&[2.0, 1.0], &sorted), [(1, 0)]);
        // Needs of 3, 3 and 0.5 on 3 units of fast time: F(1) = 3, F(2) = 6, nothing violated.
        assert_eq!(class.violated(&[3.0, 0.0], &[(0, 3.0), (1, 3.0), (2, 0.5)]), []);
    }
}
