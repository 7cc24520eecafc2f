//! The exact engine behind every "raise the worst job" policy: maximize `z` subject to
//! `thr_m ≥ z·demand_m` for every job, on a feasible allocation. LAS, makespan, finish-time
//! fairness and the SLO feasibility check are all this problem with different demands.
//!
//! Jobs with the same throughput row and scale factor form a *class*. The LP is solved over
//! class totals `Y[c][w]` (Σ over the class of `X[m][w]`), which is exact because a class can
//! split `Y` among its jobs with demands `d_1 ≥ … ≥ d_n` iff for every k the k largest demands
//! fit in the k best units of time, `Σ_{i≤k} d_i ≤ F_Y(k) = max{T·y : 0 ≤ y ≤ Y, Σy ≤ k}`.
//! By LP duality `F_Y(k) = min_λ λk + Σ_w (T_w − λ)⁺ Y_w` over `λ ∈ {0} ∪ {T_w}`, so each
//! condition is a handful of linear cuts on `(Y, z)`, added lazily while violated. The split
//! itself is constructive (`split_class`): the largest remaining job takes the *latest*
//! unit-length window of the remaining speed-sorted time that still meets its demand.
//! See `formulations/max_min_ratio.md`.

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::{Backend, LinearProgram, Row, Sense, SolveError};
use crate::problem::Matrix;
use std::collections::{HashMap, HashSet};

/// Relative tolerance under which a top-k condition counts as met.
const CUT_TOLERANCE: f64 = 1e-9;
/// Rounds of cut generation before the engine gives up (each round adds at least one new cut).
const MAX_CUT_ROUNDS: usize = 200;

/// The shape of one instance: who can run where, at what speed, on how many GPUs.
pub struct Instance<'a> {
    pub throughput: &'a Matrix,
    pub scale_factor: &'a [u32],
    pub capacity: &'a [f64],
}

/// The optimum: `z`, and an allocation meeting `thr_m ≥ z·demand_m` for every job.
#[derive(Debug, Clone)]
pub struct RatioSolution {
    /// `None` when no job has a positive demand (z is unbounded; nothing is allocated).
    pub z: Option<f64>,
    pub allocation: Matrix,
    pub lp_solves: usize,
    pub classes: usize,
}

struct Class {
    /// Member jobs, sorted by demand, largest first.
    jobs: Vec<usize>,
    /// Prefix sums of the sorted (normalized) demands: `prefix[k]` = sum of the k largest.
    prefix: Vec<f64>,
    row: Vec<f64>,
    scale_factor: u32,
    /// `(type, column)` for every type the class can use, fastest first.
    cols: Vec<(usize, usize)>,
}

impl Class {
    fn n(&self) -> usize {
        self.jobs.len()
    }

    /// The cut for condition k at dual point λ: `Σ_w (T_w − λ)⁺ Y_w − prefix[k]·z ≥ −λk`.
    fn cut(&self, k: usize, lambda: f64, z_col: usize) -> Row {
        let mut coefs: Vec<(usize, f64)> = self
            .cols
            .iter()
            .filter(|&&(w, _)| self.row[w] > lambda)
            .map(|&(w, col)| (col, self.row[w] - lambda))
            .collect();
        coefs.push((z_col, -self.prefix[k]));
        Row::at_least(-lambda * k as f64, coefs)
    }

    /// The most violated top-k condition at `(y, z)`, as `(k, λ index, relative violation)`.
    fn most_violated(&self, y: &[f64], z: f64) -> Option<(usize, usize, f64)> {
        let mut worst: Option<(usize, usize, f64)> = None;
        // F_Y(k) for k = 1..n-1 by walking the speed-sorted time once; k = n is an LP row already.
        let mut seg = 0;
        let mut used_in_seg = 0.0;
        let mut f = 0.0;
        for k in 1..self.n() {
            let mut need = 1.0;
            while need > 0.0 && seg < self.cols.len() {
                let avail = y[seg] - used_in_seg;
                let take = avail.min(need).max(0.0);
                f += take * self.row[self.cols[seg].0];
                need -= take;
                used_in_seg += take;
                if used_in_seg >= y[seg] {
                    seg += 1;
                    used_in_seg = 0.0;
                }
            }
            let want = self.prefix[k] * z;
            let violation = (want - f) / want.max(f64::MIN_POSITIVE);
            if violation > CUT_TOLERANCE && worst.is_none_or(|(_, _, v)| violation > v) {
                worst = Some((k, self.tight_lambda(y, k), violation));
            }
        }
        worst
    }

    /// Index into `cols` (or `cols.len()` for λ = 0) of the λ attaining `F_Y(k)`: the speed of the
    /// type where the k-th unit of time ends, or 0 when the class has less than k units in all.
    fn tight_lambda(&self, y: &[f64], k: usize) -> usize {
        let mut acc = 0.0;
        for (i, &amount) in y.iter().enumerate() {
            acc += amount;
            if acc >= k as f64 {
                return i;
            }
        }
        self.cols.len()
    }

    fn lambda(&self, index: usize) -> f64 {
        self.cols.get(index).map_or(0.0, |&(w, _)| self.row[w])
    }
}

/// Solves `max z s.t. thr_m ≥ z·demand_m` exactly. Jobs with zero demand get nothing.
pub fn solve(instance: &Instance, demand: &[f64], backend: Backend) -> Result<RatioSolution> {
    let (num_jobs, num_types) = (instance.throughput.rows(), instance.throughput.cols());
    let mut allocation = Matrix::zeros(num_jobs, num_types);
    let scale = demand.iter().cloned().fold(0.0, f64::max);
    if scale <= 0.0 {
        return Ok(RatioSolution {
            z: None,
            allocation,
            lp_solves: 0,
            classes: 0,
        });
    }
    // Demands normalized to at most 1, so the LP is well scaled whatever their unit.
    let normalized: Vec<f64> = demand.iter().map(|d| d / scale).collect();
    let mut classes = group_classes(instance, &normalized);

    let mut lp = LinearProgram::new(Sense::Maximize);
    let z_col = lp.add_col(1.0, 0.0, f64::INFINITY);
    for class in &mut classes {
        let n = class.n() as f64;
        let mut types: Vec<usize> = (0..num_types)
            .filter(|&w| class.row[w] > 0.0 && instance.capacity[w] > 0.0)
            .collect();
        types.sort_by(|&a, &b| class.row[b].total_cmp(&class.row[a]));
        class.cols = types
            .into_iter()
            .map(|w| (w, lp.add_col(0.0, 0.0, n)))
            .collect();
    }
    for w in 0..num_types {
        let coefs: Vec<(usize, f64)> = classes
            .iter()
            .flat_map(|c| {
                c.cols
                    .iter()
                    .filter(|&&(v, _)| v == w)
                    .map(move |&(_, col)| (col, c.scale_factor as f64))
            })
            .collect();
        if !coefs.is_empty() {
            lp.add_row(Row::at_most(instance.capacity[w], coefs));
        }
    }
    for class in &classes {
        let n = class.n();
        lp.add_row(Row::at_most(
            n as f64,
            class.cols.iter().map(|&(_, col)| (col, 1.0)).collect(),
        ));
        let mut total: Vec<(usize, f64)> = class
            .cols
            .iter()
            .map(|&(w, col)| (col, class.row[w]))
            .collect();
        total.push((z_col, -class.prefix[n]));
        lp.add_row(Row::at_least(0.0, total));
        // The largest job alone: it cannot beat its best type for the whole time.
        if n > 1 {
            lp.add_row(class.cut(1, class.lambda(0), z_col));
        }
    }

    let mut session = backend.open(lp);
    let mut added: HashSet<(usize, usize, usize)> = HashSet::new();
    let mut lp_solves = 0;
    let solution = loop {
        let solution = session.solve().map_err(solver_error)?;
        lp_solves += 1;
        let z = solution.values[z_col];
        let cuts: Vec<Row> = classes
            .iter()
            .enumerate()
            .filter_map(|(c, class)| {
                let y: Vec<f64> = class
                    .cols
                    .iter()
                    .map(|&(_, col)| solution.values[col].max(0.0))
                    .collect();
                let (k, li, _) = class.most_violated(&y, z)?;
                added
                    .insert((c, k, li))
                    .then(|| class.cut(k, class.lambda(li), z_col))
            })
            .collect();
        if cuts.is_empty() {
            break solution;
        }
        if lp_solves >= MAX_CUT_ROUNDS {
            return Err(ArbiterError::new(
                ErrorCode::SolverFailed,
                format!("cut generation did not converge in {MAX_CUT_ROUNDS} rounds"),
            ));
        }
        session.add_rows(&cuts);
    };

    let z = solution.values[z_col];
    for class in &classes {
        let y: Vec<f64> = class
            .cols
            .iter()
            .map(|&(_, col)| solution.values[col].max(0.0))
            .collect();
        split_class(class, &y, z, &mut allocation);
    }
    Ok(RatioSolution {
        z: Some(z / scale),
        allocation,
        lp_solves,
        classes: classes.len(),
    })
}

fn solver_error(e: SolveError) -> ArbiterError {
    ArbiterError::new(ErrorCode::SolverFailed, e.to_string())
}

fn group_classes(instance: &Instance, demand: &[f64]) -> Vec<Class> {
    let mut index: HashMap<(Vec<u64>, u32), usize> = HashMap::new();
    let mut classes: Vec<Class> = Vec::new();
    for (m, &d) in demand.iter().enumerate() {
        if d <= 0.0 {
            continue;
        }
        let row = instance.throughput.row(m);
        let key = (
            row.iter().map(|v| v.to_bits()).collect(),
            instance.scale_factor[m],
        );
        let c = *index.entry(key).or_insert_with(|| {
            classes.push(Class {
                jobs: Vec::new(),
                prefix: Vec::new(),
                row: row.to_vec(),
                scale_factor: instance.scale_factor[m],
                cols: Vec::new(),
            });
            classes.len() - 1
        });
        classes[c].jobs.push(m);
    }
    for class in &mut classes {
        class.jobs.sort_by(|&a, &b| demand[b].total_cmp(&demand[a]));
        class.prefix = std::iter::once(0.0)
            .chain(class.jobs.iter().scan(0.0, |acc, &m| {
                *acc += demand[m];
                Some(*acc)
            }))
            .collect();
    }
    classes
}

/// Splits the class total `y` (per column of `class.cols`, fastest type first) among its jobs so
/// that each gets at least `z·demand`: the largest remaining job takes the latest unit window of
/// the remaining time whose throughput still covers its demand.
fn split_class(class: &Class, y: &[f64], z: f64, allocation: &mut Matrix) {
    let speeds: Vec<f64> = class.cols.iter().map(|&(w, _)| class.row[w]).collect();
    let mut left = y.to_vec();
    for (i, &m) in class.jobs.iter().enumerate() {
        let need = z * (class.prefix[i + 1] - class.prefix[i]);
        let a = latest_window(&speeds, &left, need);
        // Remove [a, a+1] from the remaining time line and hand it to job m.
        let mut start = 0.0;
        for (s, amount) in left.iter_mut().enumerate() {
            let end = start + *amount;
            let overlap = (end.min(a + 1.0) - start.max(a)).max(0.0);
            if overlap > 0.0 {
                *amount -= overlap;
                let w = class.cols[s].0;
                let current = allocation.get(m, w);
                allocation.set(m, w, current + overlap);
            }
            start = end;
        }
    }
}

/// The largest `a ≥ 0` with `∫_a^{a+1} speed ≥ need` on the time line made of `amount[s]` units
/// at `speed[s]` (speeds decreasing); 0 if even the first window falls short.
fn latest_window(speed: &[f64], amount: &[f64], need: f64) -> f64 {
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
    let mut points = vec![0.0, total];
    let mut start = 0.0;
    for &len in amount {
        start += len;
        points.push(start);
        points.push(start - 1.0);
    }
    let mut points: Vec<f64> = points
        .into_iter()
        .filter(|p| (0.0..=total).contains(p))
        .collect();
    points.sort_by(f64::total_cmp);
    points.dedup();
    let mut best = 0.0;
    for pair in points.windows(2) {
        let (a0, a1) = (pair[0], pair[1]);
        let (h0, h1) = (window(a0), window(a1));
        if h0 < need {
            break;
        }
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
    fn latest_window_meets_demand_as_late_as_possible() {
        // One unit at speed 2, one at speed 1: a demand of 1.5 is met by [0.5, 1.5].
        let a = latest_window(&[2.0, 1.0], &[1.0, 1.0], 1.5);
        assert!((a - 0.5).abs() < 1e-12, "{a}");
        // A demand of 1 fits in the slow unit alone.
        assert!((latest_window(&[2.0, 1.0], &[1.0, 1.0], 1.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn equal_demands_share_fast_and_slow_time() {
        // Two identical jobs, each needing 1.5 from one fast (2) and one slow (1) GPU:
        // taking the fastest time first would starve the second job.
        let throughput = Matrix::filled(2, 2, 0.0);
        let mut t = throughput;
        for m in 0..2 {
            t.set(m, 0, 2.0);
            t.set(m, 1, 1.0);
        }
        let inst = Instance {
            throughput: &t,
            scale_factor: &[1, 1],
            capacity: &[1.0, 1.0],
        };
        let sol = solve(&inst, &[1.0, 1.0], Backend::default()).unwrap();
        let z = sol.z.unwrap();
        assert!((z - 1.5).abs() < 1e-7, "{z}");
        for m in 0..2 {
            let thr = 2.0 * sol.allocation.get(m, 0) + sol.allocation.get(m, 1);
            assert!(thr >= 1.5 - 1e-7, "job {m}: {thr}");
        }
    }
}
