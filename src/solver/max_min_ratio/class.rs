//! Classes of identical jobs (same throughput row and scale factor): the LP works with class
//! totals, the top-k cuts that make that exact, and the split of a class total among its jobs.

use super::program::Need;
use super::CUT_TOLERANCE;
use crate::lp::Row;
use crate::problem::Matrix;
use std::borrow::Cow;
use std::cell::OnceCell;

/// A class's members by need, largest first (ties by index), when that order is the same for
/// every value of the program's variables: every need a constant `key_m`, or every need
/// `key_m·v` for one variable `v` with `key_m ≥ 0` (the order then holds wherever v > 0). The
/// keys are kept in that order, so each round's needs are read in one pass.
pub(super) struct Order {
    members: Vec<usize>,
    key: Vec<f64>,
    /// The variable the needs are proportional to; `None` for constant needs.
    var: Option<usize>,
}

/// The invariant order of `jobs` under `needs`, if there is one (see `Order`).
fn invariant_order(jobs: &[usize], needs: &[Need]) -> Option<Order> {
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
    let (members, key) = order.into_iter().unzip();
    Some(Order { members, key, var: if constant { None } else { var } })
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
    pub(super) order: OnceCell<Option<Order>>,
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
            let members = order.members.iter().copied().zip(order.key.iter().copied());
            match order.var {
                None => return members.collect(),
                Some(v) if vars[v] > 0.0 => return members.map(|(m, key)| (m, (key * vars[v]).max(0.0))).collect(),
                Some(_) => {}
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

    /// Every top-k condition at needs that do not move (`sorted`), one cut per λ: at `λ = T_w`
    /// the most demanding `k` is the number of needs above λ (`Σ_{i≤k} d_i − λk` is concave in
    /// k), so these cuts, the class total and the class time row hold exactly when every
    /// condition does (`max_min_ratio.md` (d)). `(k, λ index)` with `0 < k < n`.
    pub(super) fn conditions(&self, sorted: &[(usize, f64)]) -> Vec<(usize, usize)> {
        (0..self.cols.len())
            .filter_map(|li| {
                let lambda = self.lambda(li);
                let k = sorted.partition_point(|&(_, d)| d > lambda);
                (k > 0 && k < sorted.len()).then_some((k, li))
            })
            .collect()
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

/// The largest `a ≥ 0` with `∫_a^{a+1} speed ≥ need` on the time line made of `amount[s]` units
/// at `speed[s]` (speeds decreasing); 0 if even the first window falls short.
///
/// The window's value `h(a)` falls as `a` moves right (its two ends cross ever slower time), and
/// is linear between the points where either end crosses a segment's end (or the far end meets
/// the line's end, past which the window only shrinks). One walk from `a = 0` visits those
/// points in order, at most two per segment, until `h` would drop below the need.
pub(super) fn latest_window(speed: &[f64], amount: &[f64], need: f64) -> f64 {
    let total: f64 = amount.iter().sum();
    let segments = amount.len();
    // The near end `a` lies in segment `i` (ending at `end_i`), the far end `b = a + 1` in
    // segment `j` (ending at `end_j`) until it reaches the line's end.
    let (mut a, mut i, mut end_i) = (0.0, 0, amount.first().copied().unwrap_or(0.0));
    let mut b = total.min(1.0);
    let (mut j, mut end_j, mut h) = (0, amount.first().copied().unwrap_or(0.0), 0.0);
    // h(0) = ∫_0^b speed, walking the far end to b.
    let mut start = 0.0;
    while j < segments {
        h += speed[j] * (end_j.min(b) - start).max(0.0);
        if end_j > b {
            break;
        }
        start = end_j;
        j += 1;
        end_j += amount.get(j).copied().unwrap_or(0.0);
    }
    if h < need {
        return 0.0;
    }
    while i < segments && end_i <= a {
        i += 1;
        end_i += amount.get(i).copied().unwrap_or(0.0);
    }
    while i < segments {
        let capped = b >= total;
        // The far end runs at its segment's speed until it meets the line's end.
        let (gain, step_b) = if capped { (0.0, f64::INFINITY) } else { (speed[j], end_j - b) };
        let slope = gain - speed[i];
        // To the next point: the near end's segment end, or the far end's (set exactly, so
        // every step moves one end past a segment).
        let near = end_i - a <= step_b;
        let step = if near { end_i - a } else { step_b };
        if h + slope * step < need {
            // The need is met exactly inside this step (slope < 0 here, since h ≥ need at a).
            return a + (h - need) / -slope;
        }
        h += slope * step;
        if near {
            a = end_i;
            b = if capped { total } else { (a + 1.0).min(total) };
        } else {
            b = end_j;
            a = b - 1.0;
        }
        while i < segments && end_i <= a {
            i += 1;
            end_i += amount.get(i).copied().unwrap_or(0.0);
        }
        while j < segments && end_j <= b && b < total {
            j += 1;
            end_j += amount.get(j).copied().unwrap_or(0.0);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `latest_window` against its definition: the window's value `G(min(a+1, T)) − G(a)` found
    /// by bisection (it falls as `a` grows), on random lines with ties in speed, empty segments
    /// and lines shorter than one unit.
    #[test]
    fn the_latest_window_is_the_last_that_meets_the_need() {
        let mut rng = crate::workload::generator::Rng::new(7);
        let mut uniform = || rng.uniform();
        for case in 0..2000 {
            let segments = 1 + (uniform() * 5.0) as usize;
            let mut speed: Vec<f64> = (0..segments).map(|_| (1.0 + 9.0 * uniform()).round()).collect();
            speed.sort_by(|a, b| b.total_cmp(a));
            let amount: Vec<f64> = (0..segments).map(|_| if uniform() < 0.2 { 0.0 } else { 2.0 * uniform() }).collect();
            let total: f64 = amount.iter().sum();
            let g = |x: f64| {
                let (mut acc, mut start) = (0.0, 0.0);
                for (s, &len) in amount.iter().enumerate() {
                    acc += speed[s] * (x.min(start + len) - start).max(0.0);
                    start += len;
                }
                acc
            };
            let h = |a: f64| g((a + 1.0).min(total)) - g(a);
            let need = h(0.0) * 1.2 * uniform();
            let want = if h(0.0) < need {
                0.0
            } else if h(total) >= need {
                total
            } else {
                let (mut lo, mut hi) = (0.0, total);
                for _ in 0..100 {
                    let mid = 0.5 * (lo + hi);
                    if h(mid) >= need {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                lo
            };
            let got = latest_window(&speed, &amount, need);
            assert!(
                (got - want).abs() <= 1e-9 * (1.0 + total),
                "case {case}: {speed:?} {amount:?} need {need}: {got} against {want}"
            );
        }
    }

    /// The cuts `conditions` names, with the class total, hold exactly when every top-k
    /// condition does: random classes (speeds with ties, 1 to 4 types), needs and class time
    /// within the class-time row, against `F_Y(k)` taken greedily for every k.
    #[test]
    fn settled_needs_need_one_cut_per_type() {
        let mut rng = crate::workload::generator::Rng::new(11);
        let mut uniform = || rng.uniform();
        let (mut held, mut failed) = (0, 0);
        for case in 0..3000 {
            let types = 1 + (uniform() * 4.0) as usize;
            let mut speed: Vec<f64> = (0..types).map(|_| (1.0 + 7.0 * uniform()).round()).collect();
            speed.sort_by(|a, b| b.total_cmp(a));
            let n = 1 + (uniform() * 6.0) as usize;
            let mut need: Vec<f64> =
                (0..n).map(|_| if uniform() < 0.15 { 0.0 } else { speed[0] * uniform() }).collect();
            need.sort_by(|a, b| b.total_cmp(a));
            let mut y: Vec<f64> = (0..types).map(|_| uniform()).collect();
            let scale = n as f64 * uniform() / y.iter().sum::<f64>();
            y.iter_mut().for_each(|v| *v *= scale);
            let shape =
                ClassShape { jobs: (0..n).collect(), row: speed.clone(), scale_factor: 1, types: (0..types).collect() };
            let class = Class {
                shape: &shape,
                jobs: Cow::Borrowed(&shape.jobs),
                order: OnceCell::new(),
                cols: (0..types).map(|w| (w, w)).collect(),
                pair_terms: Vec::new(),
            };
            let sorted: Vec<(usize, f64)> = need.iter().copied().enumerate().collect();
            // Every condition: the k largest needs fit in the k fastest units of class time.
            let f = |k: f64| {
                let (mut left, mut got) = (k, 0.0);
                for (w, &amount) in y.iter().enumerate() {
                    let take = amount.min(left);
                    got += take * speed[w];
                    left -= take;
                }
                got
            };
            let every = (1..=n).map(|k| f(k as f64) - need[..k].iter().sum::<f64>()).fold(f64::INFINITY, f64::min);
            // The class total and the named cuts.
            let total = speed.iter().zip(&y).map(|(t, v)| t * v).sum::<f64>() - need.iter().sum::<f64>();
            let named = class
                .conditions(&sorted)
                .into_iter()
                .map(|(k, li)| {
                    let lambda = class.lambda(li);
                    let lhs: f64 = speed.iter().zip(&y).map(|(t, v)| (t - lambda).max(0.0) * v).sum();
                    lhs - (need[..k].iter().sum::<f64>() - lambda * k as f64)
                })
                .fold(total, f64::min);
            if every.abs() < 1e-9 {
                continue;
            }
            assert_eq!(every > 0.0, named > -1e-12, "case {case}: speeds {speed:?} needs {need:?} time {y:?}");
            if every > 0.0 {
                held += 1;
            } else {
                failed += 1;
            }
        }
        // Both sides of the equivalence were drawn.
        assert!(held > 300 && failed > 300, "{held} held, {failed} failed");
    }

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
