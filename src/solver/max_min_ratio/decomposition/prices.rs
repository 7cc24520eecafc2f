//! Prices for a level before its recovery LP: cutting planes on the Lagrangian of the capacity
//! rows at a fixed ratio z. At prices p every job's cheapest way to its need `z·d_m` costs
//! `f_m(p)`, concave and homogeneous in p; `F(p) = Σ_m f_m(p) − G·p` is then concave with
//! supergradient `U(p) − G` (the best responses' usage) and `F(p) = (U(p) − G)·p`. Its maximizer
//! on the simplex prices the GPUs as the full LP does near z; a Newton step on `F(p; z) = 0`
//! then moves z. Only an estimate: the recovery LP and its certificate decide.

use super::best_response::{best_structure, Scratch};
use super::Ratio;
use crate::lp::{Backend, SolveError};
use crate::solver::cutting_planes::{self, Region};

/// Evaluations of F at most per refinement.
const MAX_CUTS: usize = 60;
/// Passes of (cutting planes at z, Newton step on z).
const PASSES: usize = 1;
/// Stop when the cutting-plane bound is within this share of `Σ_w G_w·p_w` of the best value.
const GAP: f64 = 1e-9;
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
    let mut usage = vec![0.0; p.len()];
    let mut slope = 0.0;
    for &m in jobs {
        let job = ratio.job(m as usize);
        let Some(structure) = best_structure(job, &ratio.usable, p, z, scratch) else { continue };
        for (w, x) in job.time_at(structure, z).into_iter().take(structure.width()) {
            usage[w] += job.sf * x;
        }
        if job.demand > 0.0 {
            slope += job.demand * job.duals(structure, p).0;
        }
    }
    Value { usage, slope }
}

/// Refines `(z, p)` for `jobs` on `capacity`: cutting planes for p at z, from a trust region of
/// half-width `radius` around `start`, then one Newton step on z. Returns the estimate and the
/// LPs solved.
pub(super) fn refine(
    ratio: &Ratio,
    jobs: &[u32],
    capacity: &[f64],
    z: f64,
    start: &[f64],
    radius: f64,
    backend: Backend,
) -> Result<(f64, Vec<f64>, usize), SolveError> {
    let (mut z, mut p, mut lp_solves) = (z, start.to_vec(), 0);
    if p.iter().all(|&v| v <= 0.0) {
        // No capacity row binds at the estimate: the ratio is set by the jobs' own time, and the
        // band (the jobs that cannot meet their need at z) carries it.
        return Ok((z, p, 0));
    }
    for _ in 0..PASSES {
        let (next_z, next_p, solves) = refine_once(ratio, jobs, capacity, z, &p, radius, backend)?;
        (z, p, lp_solves) = (next_z, next_p, lp_solves + solves);
    }
    Ok((z, p, lp_solves))
}

fn refine_once(
    ratio: &Ratio,
    jobs: &[u32],
    capacity: &[f64],
    z: f64,
    start: &[f64],
    radius: f64,
    backend: Backend,
) -> Result<(f64, Vec<f64>, usize), SolveError> {
    let k = capacity.len();
    let found = maximize(ratio, jobs, capacity, z, start, radius, f64::INFINITY, backend)?;
    let mut scratch = Scratch::default();
    let lp_solves = found.lp_solves;
    // A Newton step on F(p; z) = 0 along z (F rises with z at rate Σ_m d_m·u_m, in units of p).
    let p = found.point;
    let value = evaluate(ratio, jobs, &p, z, &mut scratch);
    let f: f64 = (0..k).map(|w| (value.usage[w] - capacity[w]) * p[w]).sum();
    let z = if value.slope > 0.0 { (z - f / value.slope).clamp(0.9 * z, 1.1 * z) } else { z };
    Ok((z, p, lp_solves))
}

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
    let found = maximize(ratio, jobs, capacity, 0.0, start, TRUST_RADIUS, enough, backend)?;
    Ok((found.value, found.point))
}

/// Cutting planes for the maximum of `F(p; z) = Σ_m f_m(p) − G·p` on the price simplex, from
/// `start` (normalized; uniform over the usable types if it is all 0) and a trust region of
/// half-width `radius`, stopping at the first value above `enough`.
#[allow(clippy::too_many_arguments)]
fn maximize(
    ratio: &Ratio,
    jobs: &[u32],
    capacity: &[f64],
    z: f64,
    start: &[f64],
    radius: f64,
    enough: f64,
    backend: Backend,
) -> Result<cutting_planes::Maximum, SolveError> {
    let k = capacity.len();
    let usable = (0..k).filter(|&w| ratio.usable[w]).count();
    let mut scratch = Scratch::default();
    let total: f64 = start.iter().sum();
    let p: Vec<f64> = if total > 0.0 {
        start.iter().map(|v| v / total).collect()
    } else {
        (0..k).map(|w| if ratio.usable[w] { 1.0 / usable as f64 } else { 0.0 }).collect()
    };
    let region = Region {
        bounds: (0..k).map(|w| ratio.usable[w].then_some((0.0, 1.0))).collect(),
        simplex: true,
        radius: radius.clamp(MIN_RADIUS, TRUST_RADIUS),
        min_radius: MIN_RADIUS,
        gap: GAP * capacity.iter().sum::<f64>().max(1.0),
        max_cuts: MAX_CUTS,
        enough,
    };
    // F is homogeneous: F(p) = (U(p) − G)·p, the supergradient's product with p.
    cutting_planes::maximize(&p, &region, backend, |p| {
        let value = evaluate(ratio, jobs, p, z, &mut scratch);
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
