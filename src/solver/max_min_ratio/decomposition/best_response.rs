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
            margin = margin.min(if size > 0.0 { slack / size } else { 0.0 });
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
