//! Prices for a level before its recovery LP: cutting planes on the Lagrangian of the capacity
//! rows at a fixed ratio z. At prices p every job's cheapest way to its need `z·d_m` costs
//! `f_m(p)`, concave and homogeneous in p; `F(p) = Σ_m f_m(p) − G·p` is then concave with
//! supergradient `U(p) − G` (the best responses' usage) and `F(p) = (U(p) − G)·p`. Its maximizer
//! on the simplex prices the GPUs as the full LP does near z; a Newton step on `F(p; z) = 0`
//! then moves z. Only an estimate: the recovery LP and its certificate decide.

use super::best_response::{best_structure, JobView, Scratch, Structure};
use super::fold;
use super::Ratio;
use crate::lp::{Backend, SolveError};
use crate::solver::cutting_planes::{self, Region};
use crate::solver::stability::Radii;

/// Evaluations of F at most per refinement.
const MAX_CUTS: usize = 60;
/// Passes of (cutting planes at z, Newton step on z).
const PASSES: usize = 4;
/// Stop when the cutting-plane bound is within this share of `Σ_w G_w·p_w` of the best value.
const GAP: f64 = 1e-12;
/// The trust region's widest half-width (prices sum to 1), and the width at which it stops
/// (`crate::cutting_planes`).
pub(super) const TRUST_RADIUS: f64 = 0.05;
const MIN_RADIUS: f64 = 1e-9;

/// F at `p` and its pieces: the usage `U(p)` and `Σ_m d_m·u_m` (dF/dz).
struct Value {
    usage: Vec<f64>,
    slope: f64,
}

fn evaluate(ratio: &Ratio, jobs: &[u32], p: &[f64], z: f64, scratch: &mut Scratch) -> Value {
    let mut value = Value { usage: vec![0.0; p.len()], slope: 0.0 };
    for &m in jobs {
        let job = ratio.job(m as usize);
        if let Some(structure) = best_structure(job, &ratio.usable, p, z, scratch) {
            add(&mut value, job, structure, p, z, 1.0);
        }
    }
    value
}

/// Adds (`sign` 1) or takes out (−1) one job's usage at `structure` and its share of the slope.
fn add(value: &mut Value, job: JobView, structure: Structure, p: &[f64], z: f64, sign: f64) {
    for (w, x) in job.time_at(structure, z).into_iter().take(structure.width()) {
        value.usage[w] += sign * job.sf * x;
    }
    if job.demand > 0.0 {
        value.slope += sign * job.demand * job.duals(structure, p).0;
    }
}

/// F's pieces evaluated lazily around an *anchor* `(p₀, z₀)`, where every job's best structure
/// and its stability radius are known: how far (largest change of one price) the prices may move
/// before the structure could change (`JobView::price_reach`; 0 for a job whose need would leave
/// its structure's range within `Z_REACH` of z₀, `JobView::z_margin`). At a query `(p, z)` within
/// `Z_REACH` of z₀, a job whose radius exceeds `|p − p₀|∞` keeps its structure, so its usage is
/// affine in z and its share of the slope linear in p: both are the anchor's sums. Only the jobs
/// within that distance are evaluated again (their anchor part out, their part at `(p, z)` in).
/// Cutting planes query ever closer to their best point; a query that would evaluate more than
/// half of the jobs is evaluated in full and becomes the new anchor, and so does one where the
/// queries have settled far from the anchor (as `max_weighted_throughput::lagrangian` does).
struct Anchored<'a, 'r> {
    ratio: &'a Ratio<'r>,
    jobs: &'a [u32],
    center: Vec<f64>,
    z0: f64,
    /// The last query's prices.
    previous: Vec<f64>,
    /// Per position in `jobs`: its structure at the anchor (`None`: it can run nowhere).
    structures: Vec<Option<Structure>>,
    radii: Radii,
    /// Over every anchored job: per type, usage's rate in z and usage at z₀ (as `super::fold`
    /// sums them), and the slope's coefficient per price.
    usage: Vec<(f64, f64)>,
    slope: Vec<f64>,
    scratch: Scratch,
}

/// How far z may move from the anchor's, relative, before the anchor moves: past the Newton steps
/// of a level near its optimum.
const Z_REACH: f64 = 1e-3;

impl<'a, 'r> Anchored<'a, 'r> {
    fn new(ratio: &'a Ratio<'r>, jobs: &'a [u32]) -> Self {
        Anchored {
            ratio,
            jobs,
            center: Vec::new(),
            z0: f64::NAN,
            previous: Vec::new(),
            structures: Vec::new(),
            radii: Radii::default(),
            usage: Vec::new(),
            slope: Vec::new(),
            scratch: Scratch::default(),
        }
    }

    /// Every job evaluated at `(p, z)`, which becomes the anchor.
    fn anchor_at(&mut self, p: &[f64], z: f64) {
        let (ratio, k) = (self.ratio, p.len());
        self.center = p.to_vec();
        self.z0 = z;
        self.structures.clear();
        self.usage = vec![(0.0, 0.0); k];
        self.slope = vec![0.0; k];
        let mut radii = Vec::with_capacity(self.jobs.len());
        for (i, &m) in self.jobs.iter().enumerate() {
            let job = ratio.job(m as usize);
            let structure = best_structure(job, &ratio.usable, p, z, &mut self.scratch);
            self.structures.push(structure);
            let Some(structure) = structure else { continue };
            fold(&mut self.usage, job, structure, z, 1.0);
            if job.demand > 0.0 {
                for (w, c) in job.dual_coefficients(structure) {
                    self.slope[w] += job.demand * c;
                }
            }
            // A relative move ζ of z moves the need by at most ζ of itself.
            let radius = match job.z_margin(structure, z) > Z_REACH {
                true => job.price_reach(structure, &ratio.usable, p),
                false => 0.0,
            };
            radii.push((radius, i as u32));
        }
        self.radii.rebuild(&radii);
    }

    fn value(&mut self, p: &[f64], z: f64) -> Value {
        let (ratio, k) = (self.ratio, p.len());
        let distance = |from: &[f64]| match from.len() == p.len() {
            true => from.iter().zip(p).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max),
            false => f64::INFINITY,
        };
        let mut far = distance(&self.center);
        let in_range = (z - self.z0).abs() <= Z_REACH * self.z0.abs();
        let unstable = if far.is_finite() && in_range { self.radii.within(far).count() } else { 0 };
        // Queries that settle far from the anchor (each within a quarter of that distance of the
        // last) move it there, when they evaluate an eighth of the jobs or more.
        let settled = 4.0 * distance(&self.previous) < far && 8 * unstable > self.jobs.len();
        self.previous.clear();
        self.previous.extend_from_slice(p);
        if far.is_infinite() || !in_range || 2 * unstable > self.jobs.len() || settled {
            self.anchor_at(p, z);
            far = 0.0;
        }
        let mut value = Value {
            usage: self.usage.iter().map(|&(rate, at)| at + rate * (z - self.z0)).collect(),
            slope: (0..k).map(|w| self.slope[w] * p[w]).sum(),
        };
        for i in self.radii.within(far) {
            let job = ratio.job(self.jobs[i] as usize);
            if let Some(structure) = self.structures[i] {
                add(&mut value, job, structure, p, z, -1.0);
            }
            if let Some(structure) = best_structure(job, &ratio.usable, p, z, &mut self.scratch) {
                add(&mut value, job, structure, p, z, 1.0);
            }
        }
        value
    }
}

/// A level's estimate before its first recovery LP.
pub(super) struct Estimate {
    pub(super) z: f64,
    /// The prices to classify the jobs by.
    pub(super) prices: Vec<f64>,
    /// No GPU binds at z: the prices only break the jobs' ties, and the recovery LP's optimum
    /// is expected to price nothing (its starting basis says so).
    pub(super) unpriced: bool,
    pub(super) lp_solves: usize,
}

/// Refines `(z, p)` for `jobs` on `capacity`: passes of cutting planes for p at z, from a trust
/// region of half-width `radius` around `start`, each followed by a Newton step on z, until z
/// settles (or takes a step Newton's method had to clamp).
pub(super) fn refine(
    ratio: &Ratio,
    jobs: &[u32],
    capacity: &[f64],
    z: f64,
    start: &[f64],
    radius: f64,
    backend: Backend,
) -> Result<Estimate, SolveError> {
    let (mut z, mut p, mut lp_solves) = (z, start.to_vec(), 0);
    let k = capacity.len();
    let mut evaluator = Anchored::new(ratio, jobs);
    let fastest = OnFastest::of(ratio, jobs, k);
    let ceiling = fastest.ceiling;
    if z >= ceiling || p.iter().all(|&v| v <= 0.0) {
        // The estimate is at or past the smallest ceiling among these jobs (a sample's estimate
        // may be, when the job that has it was not drawn), or no GPU binds at it: either way the
        // optimum may be set by one job's own time, with no GPU priced. So z is held at the
        // ceiling. If every job fits on its fastest type there, its cheapest way at prices 0,
        // the jobs are classified at prices 0. Otherwise, folded there, they would overfill a
        // type where the optimum spreads them, and at prices fitted to a ratio past the ceiling
        // they would be classified for the wrong ratio: they are classified at the prices that
        // leave the GPUs the most room, the maximum of F on the simplex. At most 0, every
        // priced type has room (`U_w − G_w` equals F there) and the ceiling's job, at margin 0,
        // leads the band. Positive, the GPUs bind below the ceiling, and Newton's steps below
        // move z from there.
        z = z.min(ceiling);
        if fastest.usage.iter().zip(capacity).all(|(&(rate, at_0), g)| at_0 + rate * z <= *g) {
            return Ok(Estimate { z, prices: vec![0.0; k], unpriced: true, lp_solves });
        }
        let found = maximize(&mut evaluator, capacity, z, &p, TRUST_RADIUS, f64::INFINITY, backend)?;
        lp_solves += found.lp_solves;
        p = found.point;
        if found.value <= 0.0 {
            return Ok(Estimate { z, prices: p, unpriced: true, lp_solves });
        }
    }
    for _ in 0..PASSES {
        let found = maximize(&mut evaluator, capacity, z, &p, radius, f64::INFINITY, backend)?;
        lp_solves += found.lp_solves;
        p = found.point;
        // A Newton step on F(p; z) = 0 along z (F rises with z at rate Σ_m d_m·u_m, in units of p).
        let value = evaluator.value(&p, z);
        let f: f64 = (0..k).map(|w| (value.usage[w] - capacity[w]) * p[w]).sum();
        if value.slope <= 0.0 {
            break;
        }
        let newton = z - f / value.slope;
        let next = newton.clamp(0.9 * z, 1.1 * z);
        let step = (next - z).abs();
        z = next;
        // Settled, or not yet where Newton's steps converge: a clamped step says the linear model
        // of F in z is far off, and another pass there would walk every job again for little.
        // Settled means within about one job's share: every fixed job's usage moves with z, so the
        // misfit a step leaves grows with the jobs while the first band that absorbs it does not.
        let settled = step <= (1.0 / jobs.len() as f64).max(Z_SETTLED) * z;
        if settled || newton != next {
            break;
        }
    }
    Ok(Estimate { z, prices: p, unpriced: false, lp_solves })
}

/// The jobs on their fastest types, their cheapest way at prices 0, in one pass: the smallest
/// ratio at which one of them needs all of its time there (no allocation of these jobs reaches
/// a larger one), and each type's usage as `(rate, at 0)`, affine in z.
struct OnFastest {
    ceiling: f64,
    usage: Vec<(f64, f64)>,
}

impl OnFastest {
    fn of(ratio: &Ratio, jobs: &[u32], k: usize) -> OnFastest {
        let mut on = OnFastest { ceiling: f64::INFINITY, usage: vec![(0.0, 0.0); k] };
        for &m in jobs {
            let Some((w, fastest)) = ratio.fastest_type(m as usize) else { continue };
            let job = ratio.job(m as usize);
            if job.demand > 0.0 {
                on.ceiling = on.ceiling.min((fastest - job.base) / job.demand);
            }
            on.usage[w].0 += job.sf * job.demand / fastest;
            on.usage[w].1 += job.sf * job.base / fastest;
        }
        on
    }
}

/// A Newton step on z smaller than this, relative, ends the passes whatever the jobs.
const Z_SETTLED: f64 = 1e-12;

/// Newton steps at most when finding the ratio that prices clear.
const MAX_NEWTON: usize = 20;

/// The ratio z at which the best responses at prices `p` use what the GPUs are worth,
/// `F(p; z) = 0` (Newton's method from z = 1, the natural unit's largest possible ratio, or from
/// the ratio past which some job cannot meet its need, if smaller); that start when no price is
/// positive.
pub(super) fn ratio_at(ratio: &Ratio, jobs: &[u32], capacity: &[f64], p: &[f64]) -> f64 {
    let mut scratch = Scratch::default();
    let mut z: f64 = ratio.ceiling.min(1.0);
    for _ in 0..MAX_NEWTON {
        let value = evaluate(ratio, jobs, p, z, &mut scratch);
        let f: f64 = (0..p.len()).map(|w| (value.usage[w] - capacity[w]) * p[w]).sum();
        if value.slope <= 0.0 || !f.is_finite() {
            break;
        }
        let next = (z - f / value.slope).clamp(0.5 * z, 2.0 * z).min(ratio.ceiling);
        let done = (next - z).abs() <= 1e-12 * z;
        z = next;
        if done {
            break;
        }
    }
    z
}

/// How far fixed needs (`ratio`'s bases; no demand) are from fitting the GPUs: the largest
/// `F(p) = Σ_m f_m(p) − G·p` found on the price simplex, and where. Positive proves the needs
/// cannot all be met (every feasible allocation costs at most `G·p` at any prices, and each job at
/// least `f_m(p)`); at most 0 says they fit, up to how well the cutting planes found the maximum.
/// The search stops at the first value above `enough`.
pub(super) fn excess(
    ratio: &Ratio,
    jobs: &[u32],
    capacity: &[f64],
    start: &[f64],
    enough: f64,
    backend: Backend,
) -> Result<(f64, Vec<f64>), SolveError> {
    let mut evaluator = Anchored::new(ratio, jobs);
    let found = maximize(&mut evaluator, capacity, 0.0, start, TRUST_RADIUS, enough, backend)?;
    Ok((found.value, found.point))
}

/// Cutting planes for the maximum of `F(p; z) = Σ_m f_m(p) − G·p` on the price simplex, from
/// `start` (normalized; uniform over the usable types if it is all 0) and a trust region of
/// half-width `radius`, stopping at the first value above `enough`.
#[allow(clippy::too_many_arguments)]
fn maximize(
    evaluator: &mut Anchored,
    capacity: &[f64],
    z: f64,
    start: &[f64],
    radius: f64,
    enough: f64,
    backend: Backend,
) -> Result<cutting_planes::Maximum, SolveError> {
    let k = capacity.len();
    let usable = &evaluator.ratio.usable;
    let usable_types = (0..k).filter(|&w| usable[w]).count();
    let total: f64 = start.iter().sum();
    let p: Vec<f64> = if total > 0.0 {
        start.iter().map(|v| v / total).collect()
    } else {
        (0..k).map(|w| if usable[w] { 1.0 / usable_types as f64 } else { 0.0 }).collect()
    };
    let region = Region {
        bounds: (0..k).map(|w| usable[w].then_some((0.0, 1.0))).collect(),
        simplex: true,
        radius: radius.clamp(MIN_RADIUS, TRUST_RADIUS),
        min_radius: MIN_RADIUS,
        gap: GAP * capacity.iter().sum::<f64>().max(1.0),
        max_cuts: MAX_CUTS,
        enough,
    };
    // F is homogeneous: F(p) = (U(p) − G)·p, the supergradient's product with p.
    cutting_planes::maximize(&p, &region, backend, |p| {
        let value = evaluator.value(p, z);
        let g: Vec<f64> = (0..k).map(|w| value.usage[w] - capacity[w]).collect();
        (g.iter().zip(p).map(|(g, p)| g * p).sum(), g)
    })
}

/// How far prices moved, on the price simplex: the largest change of a type's share between
/// `from` and `to` (each normalized to sum 1; all 0 is uniform over nothing, so any move from or
/// to it counts as the widest).
pub(super) fn moved(from: &[f64], to: &[f64]) -> f64 {
    let (a, b): (f64, f64) = (from.iter().sum(), to.iter().sum());
    if a <= 0.0 || b <= 0.0 {
        return TRUST_RADIUS;
    }
    from.iter().zip(to).map(|(x, y)| (x / a - y / b).abs()).fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Matrix;

    /// The lazy evaluation equals the full one at queries near and far from the anchor, and at
    /// ratios within and past the anchor's reach in z.
    #[test]
    fn lazy_values_equal_full_ones() {
        let (n, k) = (600, 3);
        let mut seed = 5u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut t = Matrix::zeros(n, k);
        for m in 0..n {
            for w in 0..k {
                t.set(m, w, if next() < 0.05 { 0.0 } else { 0.5 + 10.0 * next() });
            }
        }
        let sf: Vec<u32> = (0..n).map(|m| 1 << (m % 3)).collect();
        let demand: Vec<f64> = (0..n).map(|_| 0.5 + 4.0 * next()).collect();
        let capacity = [150.0, 100.0, 80.0];
        let ratio = Ratio::new(&t, &sf, &capacity, None, &demand);
        let jobs: Vec<u32> = (0..n as u32).collect();
        let mut lazy = Anchored::new(&ratio, &jobs);
        let z = 0.8;
        let mut queries = vec![
            ([0.2, 0.3, 0.5], z),
            ([0.2001, 0.3, 0.4999], z),
            ([0.2, 0.31, 0.49], z * (1.0 + 1e-4)),
            ([0.5, 0.1, 0.4], z * (1.0 - 5e-4)),
            ([0.5, 0.1, 0.4], z * 1.01),
        ];
        // Queries that close in on a point, as cutting planes do, from both sides.
        for i in 0..30 {
            let step = 0.1 * 0.7f64.powi(i) * if i % 2 == 0 { 1.0 } else { -1.0 };
            queries.push(([0.25 + step, 0.35 - 0.5 * step, 0.4 - 0.5 * step], z * (1.0 + 1e-5 * step)));
        }
        let mut scratch = Scratch::default();
        for (p, z) in queries {
            let got = lazy.value(&p, z);
            let want = evaluate(&ratio, &jobs, &p, z, &mut scratch);
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
            assert!(close(got.slope, want.slope), "{p:?} {z}: slope {} vs {}", got.slope, want.slope);
            for w in 0..k {
                assert!(close(got.usage[w], want.usage[w]), "{p:?} {z}: {:?} vs {:?}", got.usage, want.usage);
            }
        }
    }
}
