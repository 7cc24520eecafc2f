//! OASiS's empirical performance ratio: the offline optimum's total utility (the MILP) over
//! OASiS's on the same small instance, beside the competitive ratio its prices guarantee.

use super::run::{oasis, validate};
use super::workload::{generate, Settings};
use crate::error::Result;
use crate::lp::Backend;
use crate::scheduling::oasis::LowestUtility;
use crate::solver::oasis_offline;
use serde::Serialize;
use std::time::Instant;

/// One instance's comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatioRow {
    pub seed: u64,
    pub jobs: usize,
    pub offline: f64,
    pub oasis: f64,
    /// `offline / oasis` (infinite if OASiS earned nothing and the optimum did).
    pub ratio: f64,
    /// `2α` for the prices OASiS used.
    pub bound: f64,
    pub offline_admitted: usize,
    pub oasis_admitted: usize,
    pub milp_seconds: f64,
}

/// Solves one small instance both ways; `lowest` sets OASiS's `L`, `u` and `l` scale its
/// estimates of `U` and `L`.
pub fn ratio(
    settings: &Settings,
    seed: u64,
    lowest: LowestUtility,
    u: f64,
    l: f64,
    backend: Backend,
) -> Result<RatioRow> {
    let (cluster, specs) = generate(settings, seed);
    let jobs = validate(&cluster, &specs)?;
    let (online, prices) = oasis(&cluster, &jobs, lowest, u, l)?;
    let start = Instant::now();
    let offline = oasis_offline::solve(&cluster, &jobs, backend)?;
    let milp_seconds = start.elapsed().as_secs_f64();
    let ratio = if online.total_utility > 0.0 {
        offline.total_utility / online.total_utility
    } else if offline.total_utility > 0.0 {
        f64::INFINITY
    } else {
        1.0
    };
    Ok(RatioRow {
        seed,
        jobs: jobs.len(),
        offline: offline.total_utility,
        oasis: online.total_utility,
        ratio,
        bound: prices.competitive_ratio_bound(),
        offline_admitted: offline.admitted.len(),
        oasis_admitted: online.admitted,
        milp_seconds,
    })
}
