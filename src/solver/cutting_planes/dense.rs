//! The cuts' LP, `max θ` s.t. `θ ≤ c_j + g_j·q` for every cut j, `l ≤ q ≤ u` and, on the price
//! simplex, `Σ q = 1`, by a dense bounded-variable primal simplex. It has a column per price and a
//! row per cut (a few dozen at most), where a general solver's fixed cost per solve (about 60 µs
//! with HiGHS) is many times the work. The start is feasible by construction: the prices at
//! bounds, except on the simplex one price basic in its row that takes up what the others leave
//! of 1; then θ enters at the lowest cut. θ never leaves the basis (it is free); every other
//! variable is a price or a cut's slack, at a bound while nonbasic.

/// Simplex iterations at most, per column: past it the caller solves the LP its other way.
const ITERATIONS_PER_COLUMN: usize = 20;

/// `(max θ, the q that attains it)` (with `simplex`, over the q that sum to 1), or `None` where
/// this method does not answer (an infinite or empty box, no cut, no point of the box on the
/// simplex, or a numerical failure): the caller then solves the LP another way.
pub(super) fn maximize(
    cuts: &[(f64, Vec<f64>)],
    lower: &[f64],
    upper: &[f64],
    simplex: bool,
) -> Option<(f64, Vec<f64>)> {
    let k = lower.len();
    let rows = cuts.len() + simplex as usize;
    let finite = lower.iter().chain(upper).all(|v| v.is_finite());
    if cuts.is_empty()
        || !finite
        || lower.iter().zip(upper).any(|(l, u)| l > u)
        || cuts.iter().any(|(_, g)| g.len() != k)
    {
        return None;
    }
    // Columns: θ, then q_1..q_k, then a slack per cut; the last entry of a row is its right side.
    let n = 1 + k + cuts.len();
    let width = n + 1;
    let scale = cuts.iter().flat_map(|(c, g)| g.iter().chain(std::iter::once(c))).fold(1.0, |a: f64, v| a.max(v.abs()));
    // A reduced cost is θ per unit of its column: a price's is on the scale of its slopes, a
    // slack's (a cut's weight at the optimum) at most 1.
    let mut tolerance = vec![2e-11; n];
    for (i, t) in tolerance[1..=k].iter_mut().enumerate() {
        *t = 1e-11 * cuts.iter().fold(1.0, |a: f64, (_, g)| a.max(g[i].abs()));
    }
    // Rows: each cut's (its slack basic), then the simplex row (no slack).
    let mut tableau = vec![0.0; rows * width];
    for (j, (c, g)) in cuts.iter().enumerate() {
        let row = &mut tableau[j * width..(j + 1) * width];
        row[0] = 1.0;
        for (i, g) in g.iter().enumerate() {
            row[1 + i] = -g;
        }
        row[1 + k + j] = 1.0;
        row[n] = *c;
    }
    let (mut lo, mut up) = (vec![0.0; n], vec![f64::INFINITY; n]);
    lo[0] = f64::NEG_INFINITY;
    lo[1..=k].copy_from_slice(lower);
    up[1..=k].copy_from_slice(upper);
    // The prices at their lower bounds; on the simplex, raised in order until they sum to 1, the
    // last one raised basic in the simplex row.
    let mut x = vec![0.0; n];
    x[1..=k].copy_from_slice(lower);
    let mut basis: Vec<usize> = (0..cuts.len()).map(|j| 1 + k + j).collect();
    let mut is_basic = vec![false; n];
    if simplex {
        let e = cuts.len();
        tableau[e * width + 1..=e * width + k].iter_mut().for_each(|v| *v = 1.0);
        tableau[e * width + n] = 1.0;
        let mut deficit = 1.0 - lower.iter().sum::<f64>();
        let mut raised = None;
        for i in 0..k {
            if deficit <= 0.0 {
                break;
            }
            let room = upper[i] - lower[i];
            x[1 + i] += deficit.min(room);
            deficit -= deficit.min(room);
            raised = Some(i);
        }
        if !(-1e-9..=1e-12).contains(&deficit) {
            return None; // the box holds no point of the simplex
        }
        let b = 1 + raised.unwrap_or(0);
        pivot(&mut tableau, width, e, b);
        basis.push(b);
    }
    basis.iter().for_each(|&b| is_basic[b] = true);
    // θ enters at the cut lowest there.
    let q = x[1..=k].to_vec();
    let at = |j: usize| cuts[j].0 + cuts[j].1.iter().zip(&q).map(|(g, q)| g * q).sum::<f64>();
    let first = (0..cuts.len()).min_by(|&a, &b| at(a).total_cmp(&at(b)))?;
    pivot(&mut tableau, width, first, 0);
    is_basic[basis[first]] = false;
    basis[first] = 0;
    is_basic[0] = true;
    let theta_row = first;
    settle(&tableau, width, &basis, &is_basic, &mut x);

    for iteration in 0..ITERATIONS_PER_COLUMN * n {
        // θ's row gives every reduced cost: d_e = −tableau[θ][e] (only θ has a cost).
        let objective = &tableau[theta_row * width..(theta_row + 1) * width];
        let bland = iteration >= 2 * n;
        let mut entering: Option<(usize, f64, f64)> = None;
        for e in 1..n {
            if is_basic[e] {
                continue;
            }
            let d = -objective[e];
            if up[e] <= lo[e] {
                continue;
            }
            let direction = if x[e] <= lo[e] && d > tolerance[e] {
                1.0
            } else if x[e] >= up[e] && d < -tolerance[e] {
                -1.0
            } else {
                continue;
            };
            if entering.is_none_or(|(_, best, _)| !bland && d.abs() > best) {
                entering = Some((e, d.abs(), direction));
            }
        }
        let Some((e, _, direction)) = entering else {
            // Optimal. A check against round-off: the point lies in its box (to 1e-9, then
            // clamped into it) and on the simplex, and θ, the lowest cut there, is the tableau's.
            let near = |v: f64, l: f64, u: f64| v >= l - 1e-9 * (1.0 + l.abs()) && v <= u + 1e-9 * (1.0 + u.abs());
            let inside = (0..k).all(|i| near(x[1 + i], lower[i], upper[i]));
            let q: Vec<f64> = (0..k).map(|i| x[1 + i].clamp(lower[i], upper[i])).collect();
            let on_simplex = !simplex || (q.iter().sum::<f64>() - 1.0).abs() <= 1e-9;
            let theta = cuts
                .iter()
                .map(|(c, g)| c + g.iter().zip(&q).map(|(g, q)| g * q).sum::<f64>())
                .fold(f64::INFINITY, f64::min);
            return (inside && on_simplex && (theta - x[0]).abs() <= 1e-7 * scale).then_some((theta, q));
        };
        // Ratio test: the entering variable moves by t·direction; the basic one in row r by
        // −tableau[r][e]·direction·t.
        let mut step = up[e] - lo[e];
        let mut leaving: Option<(usize, f64)> = None;
        for r in 0..rows {
            let a = tableau[r * width + e];
            let rate = -a * direction;
            let b = basis[r];
            let room = if rate < -1e-12 {
                (x[b] - lo[b]) / -rate
            } else if rate > 1e-12 {
                (up[b] - x[b]) / rate
            } else {
                continue;
            };
            if !room.is_finite() {
                continue; // a bound at infinity never stops the step
            }
            let room = room.max(0.0);
            // The nearest bound; among ties, the largest pivot.
            let slack = 1e-12 * (1.0 + room);
            let tie = room <= step + slack && leaving.is_some_and(|(l, _)| a.abs() > tableau[l * width + e].abs());
            if room < step - slack || tie {
                step = room.min(step);
                leaving = Some((r, rate));
            }
        }
        if !step.is_finite() {
            return None;
        }
        match leaving {
            None => {
                // The entering variable crosses its box: it flips bounds and stays nonbasic.
                x[e] = if direction > 0.0 { up[e] } else { lo[e] };
            }
            Some((r, rate)) => {
                let b = basis[r];
                pivot(&mut tableau, width, r, e);
                is_basic[b] = false;
                is_basic[e] = true;
                basis[r] = e;
                x[b] = if rate < 0.0 { lo[b] } else { up[b] };
            }
        }
        settle(&tableau, width, &basis, &is_basic, &mut x);
    }
    None
}

/// Gauss-Jordan on `(row, col)`: the column becomes the unit vector of the row.
fn pivot(tableau: &mut [f64], width: usize, row: usize, col: usize) {
    let rows = tableau.len() / width;
    let p = tableau[row * width + col];
    for v in &mut tableau[row * width..(row + 1) * width] {
        *v /= p;
    }
    let pivot_row: Vec<f64> = tableau[row * width..(row + 1) * width].to_vec();
    for r in (0..rows).filter(|&r| r != row) {
        let factor = tableau[r * width + col];
        if factor != 0.0 {
            for (v, p) in tableau[r * width..(r + 1) * width].iter_mut().zip(&pivot_row) {
                *v -= factor * p;
            }
        }
    }
}

/// The basic variables' values from the nonbasic ones: `x_B = β − N·x_N`.
fn settle(tableau: &[f64], width: usize, basis: &[usize], is_basic: &[bool], x: &mut [f64]) {
    let n = width - 1;
    for (r, &b) in basis.iter().enumerate() {
        let row = &tableau[r * width..(r + 1) * width];
        x[b] = row[n] - (0..n).filter(|&j| !is_basic[j]).map(|j| row[j] * x[j]).sum::<f64>();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lp::{Backend, LinearProgram, Row, Sense};

    /// The same LP through the general backend: its θ and its point.
    fn reference(cuts: &[(f64, Vec<f64>)], lower: &[f64], upper: &[f64], simplex: bool) -> (f64, Vec<f64>) {
        let mut lp = LinearProgram::new(Sense::Maximize);
        lp.add_col(1.0, f64::NEG_INFINITY, f64::INFINITY);
        for (&l, &u) in lower.iter().zip(upper) {
            lp.add_col(0.0, l, u);
        }
        for (c, g) in cuts {
            let mut coefs: Vec<(usize, f64)> = g.iter().enumerate().map(|(i, &g)| (i + 1, -g)).collect();
            coefs.push((0, 1.0));
            lp.add_row(Row::at_most(*c, coefs));
        }
        if simplex {
            lp.add_row(Row::equal(1.0, (1..=lower.len()).map(|c| (c, 1.0)).collect()));
        }
        let solution = Backend::default().solve(lp).expect("a box and a cut bound θ");
        (solution.objective, solution.values[1..].to_vec())
    }

    /// The lowest cut at `q`: the exact θ of a point.
    fn lowest(cuts: &[(f64, Vec<f64>)], q: &[f64]) -> f64 {
        cuts.iter().map(|(c, g)| c + g.iter().zip(q).map(|(g, q)| g * q).sum::<f64>()).fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn a_hand_checked_maximum() {
        // θ ≤ 1 + q and θ ≤ 3 − q on [0, 4]: they cross at q = 1, θ = 2.
        let cuts = [(1.0, vec![1.0]), (3.0, vec![-1.0])];
        let (theta, q) = maximize(&cuts, &[0.0], &[4.0], false).expect("solves");
        assert!((theta - 2.0).abs() < 1e-12 && (q[0] - 1.0).abs() < 1e-12, "{theta} at {q:?}");
        // Boxed to [2, 4] the crossing is out: the best is at q = 2.
        let (theta, q) = maximize(&cuts, &[2.0], &[4.0], false).expect("solves");
        assert!((theta - 1.0).abs() < 1e-12 && (q[0] - 2.0).abs() < 1e-12, "{theta} at {q:?}");
        // An empty or unbounded box is not for this method.
        assert!(maximize(&cuts, &[1.0], &[0.0], false).is_none());
        assert!(maximize(&cuts, &[0.0], &[f64::INFINITY], false).is_none());
        assert!(maximize(&[], &[0.0], &[1.0], false).is_none());
        // On the simplex of two prices, q_1 = 1 − q_0: θ ≤ 2 − 2·q_0 and θ ≤ 2 − 2·q_1 = 2·q_0
        // cross at q_0 = 1/2, θ = 1.
        let cuts = [(2.0, vec![-2.0, 0.0]), (2.0, vec![0.0, -2.0])];
        let (theta, q) = maximize(&cuts, &[0.0, 0.0], &[1.0, 1.0], true).expect("solves");
        assert!(
            (theta - 1.0).abs() < 1e-12 && (q[0] - 0.5).abs() < 1e-12 && (q[1] - 0.5).abs() < 1e-12,
            "{theta} {q:?}"
        );
        // Boxed to q_0 ≤ 0.3 the crossing is out: q_0 = 0.3, θ = 0.6.
        let (theta, q) = maximize(&cuts, &[0.0, 0.0], &[0.3, 1.0], true).expect("solves");
        assert!((theta - 0.6).abs() < 1e-12 && (q[0] - 0.3).abs() < 1e-12, "{theta} {q:?}");
        // A box that misses the simplex is not for this method.
        assert!(maximize(&cuts, &[0.0, 0.0], &[0.3, 0.3], true).is_none());
        assert!(maximize(&cuts, &[0.6, 0.6], &[1.0, 1.0], true).is_none());
    }

    /// Random LPs like the cutting planes' (a few prices, up to 40 cuts, boxes narrow and wide,
    /// degenerate cuts through one point): the same maximum as the general backend's, and an
    /// answer for every one.
    #[test]
    fn the_maximum_equals_the_general_backends() {
        let mut seed = 11u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for case in 0..800 {
            // Half of them on the price simplex, boxed around a point of it.
            let simplex = case >= 400;
            let k = 1 + case % 4;
            let cuts_count = 1 + (case * 7) % 40;
            let scale = [1e-3, 1.0, 1e4][case % 3];
            let mut center: Vec<f64> = (0..k).map(|_| scale * next()).collect();
            if simplex {
                let total: f64 = center.iter().sum();
                center.iter_mut().for_each(|c| *c /= total);
            }
            let cuts: Vec<(f64, Vec<f64>)> = (0..cuts_count)
                .map(|j| {
                    let g: Vec<f64> = (0..k).map(|_| scale * (next() - 0.5) * 1e3).collect();
                    // Every fifth cut passes through the same point: a degenerate vertex.
                    let at = if j % 5 == 0 { 7.0 } else { 7.0 + 100.0 * next() };
                    let c = at * scale - g.iter().zip(&center).map(|(g, p)| g * p).sum::<f64>();
                    (c, g)
                })
                .collect();
            let radius = if simplex { [1e-6, 1e-2, 1.0][case % 3] } else { scale * [1e-6, 1e-2, 1.0][case % 3] };
            let lower: Vec<f64> = center.iter().map(|c| (c - radius).max(0.0)).collect();
            let upper: Vec<f64> = center.iter().map(|c| c + radius).collect();
            let (theta, q) =
                maximize(&cuts, &lower, &upper, simplex).unwrap_or_else(|| panic!("case {case}: no answer"));
            // The general backend's answer is feasible to its tolerance only: its θ bounds the
            // maximum from above, and the exact θ of its point (in the box) from below.
            let (above, at) = reference(&cuts, &lower, &upper, simplex);
            let mut at: Vec<f64> = at.iter().enumerate().map(|(i, v)| v.clamp(lower[i], upper[i])).collect();
            if simplex {
                // Onto the simplex again, within the box: the largest price takes the round-off.
                let off = 1.0 - at.iter().sum::<f64>();
                let i = (0..k).max_by(|&a, &b| at[a].total_cmp(&at[b])).unwrap_or(0);
                at[i] = (at[i] + off).clamp(lower[i], upper[i]);
            }
            let below = lowest(&cuts, &at);
            let size = cuts.iter().map(|(c, _)| c.abs()).fold(1.0, f64::max);
            assert!(
                theta >= below - 1e-12 * size && theta <= above + 1e-12 * size,
                "case {case}: {theta} in [{below}, {above}]?"
            );
            assert_eq!(theta, lowest(&cuts, &q), "case {case}: θ is the lowest cut at its point");
            if simplex {
                assert!((q.iter().sum::<f64>() - 1.0).abs() < 1e-9, "case {case}: {q:?} off the simplex");
            }
            for (i, &q) in q.iter().enumerate() {
                assert!(q >= lower[i] && q <= upper[i], "case {case}: {q} outside [{}, {}]", lower[i], upper[i]);
            }
        }
    }
}
