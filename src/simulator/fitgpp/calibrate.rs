//! The arrival rate at which plain FIFO keeps the cluster at a given load (the paper submits jobs
//! "at such a rate that the cluster load would be kept at 2.0 if they were scheduled by FIFO"):
//! bisection on the offered utilization, the same jobs at every rate.

use super::run::{self, load};
use super::workload::{at_rate, Arrival};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::scheduling::fitgpp::{NoPreemption, Resources};

const STEPS: usize = 24;

/// The rate (jobs per second) at which FIFO's load over the arrivals of jobs
/// `window.0..window.1` comes closest to `target` in 24 bisection steps, and that load.
pub fn rate_for_fifo_load(
    unit: &[Arrival],
    capacities: &[Resources],
    target: f64,
    window: (usize, usize),
) -> Result<(f64, f64)> {
    if !(target.is_finite() && target > 0.0) {
        return Err(ArbiterError::at(ErrorCode::InvalidNumber, "load", format!("the load must be > 0, got {target}")));
    }
    let (first, last) = window;
    if !(first < last && last <= unit.len() && last - first >= 2) {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "window",
            format!("measured jobs {first}..{last} do not fit a workload of {} jobs", unit.len()),
        ));
    }
    let total = capacities.iter().fold(Resources::default(), |a, c| a.plus(c));
    // Offered utilization u: the rate at which work (share × seconds) arrives, over capacity.
    let work: f64 = unit.iter().map(|a| a.spec.demand.share_of(&total) * a.spec.duration_seconds).sum();
    let span = unit[unit.len() - 1].time.max(f64::MIN_POSITIVE);
    let rate_of = |u: f64| u * span / work.max(f64::MIN_POSITIVE);
    let load_at = |rate: f64| -> Result<f64> {
        let arrivals = at_rate(unit, rate);
        let jobs = run::run(&arrivals, capacities, Box::new(NoPreemption))?;
        Ok(load(&jobs, capacities, arrivals[first].time, arrivals[last - 1].time))
    };
    let (mut lo, mut hi) = (0.05_f64.ln(), 8.0_f64.ln());
    let mut best = (rate_of(1.0), f64::NAN);
    for _ in 0..STEPS {
        let mid = 0.5 * (lo + hi);
        let rate = rate_of(mid.exp());
        let reached = load_at(rate)?;
        // FIFO's load is not quite monotone in the rate (one late large job can block the queue):
        // keep the closest seen.
        if best.1.is_nan() || (reached - target).abs() < (best.1 - target).abs() {
            best = (rate, reached);
        }
        if reached < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(best)
}
