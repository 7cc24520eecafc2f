//! One job's cheapest way to reach a throughput at given GPU prices: the lower convex hull of its
//! `(T[m][w], sf_m·p_w)` points from the origin, the structure of the optimum on it (one type with
//! time to spare, or its whole time on two neighbouring hull types), the job's duals for that
//! structure, and how far the job is from changing structure (its margin).

/// How a job meets its need `t = b + z·d`: its allocation is affine in z once this is fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Structure {
    /// Only type `a`, time to spare: `x_a = t / T_a`.
    Single { a: u32 },
    /// All of its time on `a` and a faster `b`: `x_a + x_b = 1`, `T_a·x_a + T_b·x_b = t`.
    Pair { a: u32, b: u32 },
}

impl Structure {
    /// How many types it uses.
    pub(super) fn width(self) -> usize {
        match self {
            Structure::Single { .. } => 1,
            Structure::Pair { .. } => 2,
        }
    }
}

/// A job as the decomposition sees it: its row, scale factor, and need `base + z·demand`.
#[derive(Clone, Copy)]
pub(super) struct JobView<'a> {
    pub(super) row: &'a [f64],
    pub(super) sf: f64,
    pub(super) base: f64,
    pub(super) demand: f64,
}

impl JobView<'_> {
    /// The throughput the job needs at `z`.
    pub(super) fn need(&self, z: f64) -> f64 {
        self.base + z * self.demand
    }

    /// `α_w = dx[w]/dz` for the types `structure` uses (at most two entries): how its time moves
    /// with z (`time_at` gives the time itself).
    pub(super) fn slopes(&self, structure: Structure) -> [(usize, f64); 2] {
        match structure {
            Structure::Single { a } => {
                let a = a as usize;
                [(a, self.demand / self.row[a]), (a, 0.0)]
            }
            Structure::Pair { a, b } => {
                let (a, b) = (a as usize, b as usize);
                let span = self.row[b] - self.row[a];
                [(a, -self.demand / span), (b, self.demand / span)]
            }
        }
    }

    /// The time on each type the structure gives at `z`, as `(type, x)` pairs.
    pub(super) fn time_at(&self, structure: Structure, z: f64) -> [(usize, f64); 2] {
        match structure {
            Structure::Single { a } => {
                let a = a as usize;
                [(a, self.need(z) / self.row[a]), (a, 0.0)]
            }
            Structure::Pair { a, b } => {
                let (a, b) = (a as usize, b as usize);
                let (ta, tb) = (self.row[a], self.row[b]);
                // x_b from the need, x_a as the rest of the unit: the time row holds exactly.
                let xb = (self.need(z) - ta) / (tb - ta);
                [(a, 1.0 - xb), (b, xb)]
            }
        }
    }

    /// The job's duals `(u, v)` for `structure` at prices `p`: the need row's and the time
    /// row's, from the columns the structure uses being tight (`v + sf·p_w = T_w·u`).
    pub(super) fn duals(&self, structure: Structure, p: &[f64]) -> (f64, f64) {
        match structure {
            Structure::Single { a } => (self.sf * p[a as usize] / self.row[a as usize], 0.0),
            Structure::Pair { a, b } => {
                let (a, b) = (a as usize, b as usize);
                let (ca, cb) = (self.sf * p[a], self.sf * p[b]);
                let u = (cb - ca) / (self.row[b] - self.row[a]);
                (u, self.row[a] * u - ca)
            }
        }
    }

    /// The need row's dual `u` (see `duals`) as coefficients on the prices: `u = Σ c_w·p_w`.
    pub(super) fn dual_coefficients(&self, structure: Structure) -> smallvec::SmallVec<[(usize, f64); 2]> {
        match structure {
            Structure::Single { a } => smallvec::smallvec![(a as usize, self.sf / self.row[a as usize])],
            Structure::Pair { a, b } => {
                let c = self.sf / (self.row[b as usize] - self.row[a as usize]);
                smallvec::smallvec![(a as usize, -c), (b as usize, c)]
            }
        }
    }

    /// The smallest relative dual slack `(v + sf·p_w − T_w·u) / (v + sf·p_w + T_w·u)` over the
    /// usable types the structure leaves out (negative: a column that would improve the LP).
    pub(super) fn dual_margin(&self, structure: Structure, usable: &[bool], p: &[f64], u: f64, v: f64) -> f64 {
        let used = |w: usize| match structure {
            Structure::Single { a } => w == a as usize,
            Structure::Pair { a, b } => w == a as usize || w == b as usize,
        };
        let mut margin = f64::INFINITY;
        for (w, &t) in self.row.iter().enumerate() {
            if !usable[w] || t <= 0.0 || used(w) {
                continue;
            }
            let c = self.sf * p[w];
            let slack = v + c - t * u;
            let size = v + c + t * u;
            // A tie at zero prices and a zero need dual (size 0) is no sign of a change of
            // structure: only prices that rise could break it, and the certificate's dual
            // conditions hold there with slack 0. Counted as near, every job of an instance
            // whose prices are all 0 would tie at margin 0, and the band would be drawn at random
            // among them instead of by how near each need is to its ceiling.
            if size > 0.0 {
                margin = margin.min(slack / size);
            }
        }
        margin
    }

    /// The smallest of the structure's times and its time to spare at `z` (negative: the
    /// structure is not primal feasible there).
    pub(super) fn primal_margin(&self, structure: Structure, z: f64) -> f64 {
        let [(_, x0), (_, x1)] = self.time_at(structure, z);
        match structure {
            Structure::Single { .. } => x0.min(1.0 - x0),
            Structure::Pair { .. } => x0.min(x1),
        }
    }
}

impl JobView<'_> {
    /// The relative change of the need that would take the structure out of its range
    /// (negative: it is out already): the primal margin in the same relative units as the dual one.
    pub(super) fn z_margin(&self, structure: Structure, z: f64) -> f64 {
        let t = self.need(z);
        // A need that z does not move (a floor alone) keeps its time whatever z does.
        if t <= 0.0 || self.demand == 0.0 {
            return f64::INFINITY;
        }
        match structure {
            Structure::Single { a } => (self.row[a as usize] - t) / t,
            Structure::Pair { a, b } => {
                let span = self.row[b as usize] - self.row[a as usize];
                let [(_, xa), (_, xb)] = self.time_at(structure, z);
                xa.min(xb) * span / t
            }
        }
    }
}

impl JobView<'_> {
    /// How far (largest change of any one price) prices may move from `p` before `structure` can
    /// stop being this job's best response at a fixed need: the smallest of its dual constraints'
    /// slacks over the sum of their coefficients' sizes (each is linear in the prices). 0 when a
    /// constraint already fails; infinite when no price can change it (one type only).
    pub(super) fn price_reach(&self, structure: Structure, usable: &[bool], p: &[f64]) -> f64 {
        // Each constraint is `Σ c_w·q_w ≥ 0` (the scale factor divided out): its value at p over Σ|c_w|.
        let reach = |value: f64, size: f64| if value > 0.0 { value / size } else { 0.0 };
        let others = |skip: [usize; 2]| {
            (0..self.row.len()).filter(move |&w| usable[w] && self.row[w] > 0.0 && !skip.contains(&w))
        };
        match structure {
            Structure::Single { a } => {
                let a = a as usize;
                // a stays the cheapest per unit of throughput: q_w − (T_w/T_a)·q_a ≥ 0.
                others([a, a])
                    .map(|w| {
                        let r = self.row[w] / self.row[a];
                        reach(p[w] - r * p[a], 1.0 + r)
                    })
                    .fold(f64::INFINITY, f64::min)
            }
            Structure::Pair { a, b } => {
                let (a, b) = (a as usize, b as usize);
                let span = self.row[b] - self.row[a];
                let ra = self.row[a] / span;
                // u ≥ 0: q_b − q_a ≥ 0; v ≥ 0: ra·q_b − (ra + 1)·q_a ≥ 0.
                let mut least = reach(p[b] - p[a], 2.0).min(reach(ra * p[b] - (ra + 1.0) * p[a], 2.0 * ra + 1.0));
                // Every other column's reduced cost: q_w − q_a + r·(q_b − q_a) ≥ 0, r = (T_a − T_w)/span.
                for w in others([a, b]) {
                    let r = (self.row[a] - self.row[w]) / span;
                    least = least.min(reach(p[w] - p[a] + r * (p[b] - p[a]), 1.0 + (1.0 + r).abs() + r.abs()));
                }
                least
            }
        }
    }
}

/// Reusable space for `best_response`, so a pass over a million jobs allocates nothing.
#[derive(Default)]
pub(super) struct Scratch {
    order: Vec<u32>,
    chain: Vec<u32>,
}

/// The best structure for a job at prices `p` and need `b + z·d`, and its margin: the smaller of its
/// dual margin (how close another type is to being as cheap) and its primal margin (how close
/// the need is to a hull vertex). `None` when the job can run nowhere.
pub(super) fn best_response(
    job: JobView,
    usable: &[bool],
    p: &[f64],
    z: f64,
    scratch: &mut Scratch,
) -> Option<(Structure, f64)> {
    let structure = best_structure(job, usable, p, z, scratch)?;
    let (u, v) = job.duals(structure, p);
    let margin = job.dual_margin(structure, usable, p, u, v).min(job.z_margin(structure, z));
    Some((structure, margin))
}

/// The best structure alone (`best_response` without the margin).
pub(super) fn best_structure(
    job: JobView,
    usable: &[bool],
    p: &[f64],
    z: f64,
    scratch: &mut Scratch,
) -> Option<Structure> {
    let t = job.need(z);
    let point = |w: u32| (job.row[w as usize], job.sf * p[w as usize]);
    let Scratch { order, chain } = scratch;
    order.clear();
    chain.clear();
    order.extend((0..job.row.len() as u32).filter(|&w| usable[w as usize] && job.row[w as usize] > 0.0));
    // By throughput, then cost: of equal throughputs only the cheapest can be on the hull.
    order.sort_unstable_by(|&a, &b| point(a).0.total_cmp(&point(b).0).then(point(a).1.total_cmp(&point(b).1)));
    for &w in order.iter() {
        let (x, y) = point(w);
        if chain.last().is_some_and(|&last| point(last).0 == x) {
            continue;
        }
        // The lower hull from the origin keeps strictly convex turns only: a middle point on or
        // above the chord leaves (so of collinear points the farthest stays).
        while let Some(&last) = chain.last() {
            let (x1, y1) = if chain.len() >= 2 { point(chain[chain.len() - 2]) } else { (0.0, 0.0) };
            let (x2, y2) = point(last);
            if (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1) <= 0.0 {
                chain.pop();
            } else {
                break;
            }
        }
        chain.push(w);
    }
    let structure = match chain.iter().position(|&w| job.row[w as usize] >= t) {
        Some(0) => Structure::Single { a: chain[0] },
        Some(i) => Structure::Pair { a: chain[i - 1], b: chain[i] },
        // The need exceeds the fastest type: the nearest structure, primal infeasible.
        None => Structure::Single { a: *chain.last()? },
    };
    Some(structure)
}

/// Relative tolerance of the certificate: a dual slack or a time that is off by less counts as met.
pub(super) const CERTIFICATE_TOLERANCE: f64 = 1e-9;

impl JobView<'_> {
    /// Whether the structure is still optimal for this job at prices `p` and ratio `z`: its duals
    /// are feasible (`u, v ≥ 0`, every other column's reduced cost non-positive) and its time is
    /// (`x ≥ 0`, `Σ x ≤ 1`). Together with the recovery LP's optimality this proves the whole.
    pub(super) fn certified(&self, structure: Structure, usable: &[bool], p: &[f64], z: f64) -> bool {
        let tol = CERTIFICATE_TOLERANCE;
        let (u, v) = self.duals(structure, p);
        let duals_ok = match structure {
            Structure::Single { .. } => u >= 0.0,
            Structure::Pair { a, b } => {
                let (a, b) = (a as usize, b as usize);
                let (ca, cb) = (self.sf * p[a], self.sf * p[b]);
                let u_size = (ca + cb) / (self.row[b] - self.row[a]);
                u >= -tol * u_size && v >= -tol * (self.row[a] * u.abs() + ca)
            }
        };
        duals_ok
            && self.dual_margin(structure, usable, p, u.max(0.0), v.max(0.0)) >= -tol
            && self.primal_margin(structure, z) >= -tol
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (no test depends on a seed's luck: every case is checked).
    fn uniform(seed: &mut u64) -> f64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    /// With every price 0 all types tie for a job with a need dual of 0. That tie is no sign of a
    /// change of structure: the margin is the need's distance from its ceiling alone, so the band
    /// of an instance whose prices are all 0 holds the jobs nearest their ceilings (counted as 0,
    /// every job tied and the band was drawn among them: at 2^21 jobs it missed the binding one).
    #[test]
    fn a_tie_at_zero_prices_leaves_the_margin_to_the_need() {
        let row = [2.0, 5.0, 4.0];
        let job = JobView { row: &row, sf: 1.0, base: 0.0, demand: 1.0 };
        let (p, usable) = ([0.0; 3], [true; 3]);
        let (structure, margin) = best_response(job, &usable, &p, 4.0, &mut Scratch::default()).expect("runs");
        assert_eq!(structure, Structure::Single { a: 1 });
        // Need 4 on a type of 5: a quarter of the need to spare.
        assert!((margin - 0.25).abs() < 1e-12, "margin {margin}");
    }

    /// Within its price reach, a job's best structure does not change, whichever way the prices move.
    #[test]
    fn the_best_structure_holds_within_its_price_reach() {
        let mut seed = 11u64;
        let usable = [true; 4];
        let mut scratch = Scratch::default();
        let mut checked = 0;
        for _ in 0..2000 {
            let row: Vec<f64> =
                (0..4).map(|_| if uniform(&mut seed) < 0.1 { 0.0 } else { 0.2 + 5.0 * uniform(&mut seed) }).collect();
            if row.iter().all(|&t| t == 0.0) {
                continue;
            }
            let job = JobView {
                row: &row,
                sf: [1.0, 2.0, 4.0][checked % 3],
                base: 0.0,
                demand: 0.1 + 3.0 * uniform(&mut seed),
            };
            let p: Vec<f64> = (0..4).map(|_| 0.05 + uniform(&mut seed)).collect();
            let z = uniform(&mut seed);
            let Some(structure) = best_structure(job, &usable, &p, z, &mut scratch) else { continue };
            if job.primal_margin(structure, z) < 0.0 {
                continue; // a need past the fastest type: no prices make it feasible
            }
            let reach = job.price_reach(structure, &usable, &p);
            assert!(reach >= 0.0);
            if !reach.is_finite() {
                continue;
            }
            for _ in 0..8 {
                // Corners of the box are the moves that change a constraint the most.
                let q: Vec<f64> =
                    p.iter().map(|&v| v + 0.999 * reach * if uniform(&mut seed) < 0.5 { 1.0 } else { -1.0 }).collect();
                if q.iter().any(|&v| v < 0.0) {
                    continue;
                }
                let moved = best_structure(job, &usable, &q, z, &mut scratch);
                assert_eq!(moved, Some(structure), "row {row:?} p {p:?} q {q:?} reach {reach}");
                checked += 1;
            }
        }
        assert!(checked > 5000, "only {checked} moves checked");
    }
}
