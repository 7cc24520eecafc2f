//! Finish-time fairness (Themis): minimize `max_m ρ_m`,
//! `ρ_m = (t_m + r_m/thr_m) / (t_iso_m + r_m/thr_iso_m)`. With every `t_m = 0` this is one LP in
//! `z = 1/ρ`; otherwise a search on ρ (bisection, then secant steps on z(ρ)) to relative width
//! 1e-9, each probe an exact LP
//! feasibility test whose allocation also tightens the upper bracket. See `formulations/finish_time_fairness.md`.

use super::{colocated, engine, Outcome, Policy};
use crate::error::Result;
use crate::lp::Backend;
use crate::max_min_ratio::Engine;
use crate::problem::Problem;

pub struct FinishTimeFairness;

/// Relative width of the ρ bracket at which the search stops.
const RHO_TOLERANCE: f64 = 1e-9;
/// Probes of the search at most; halving from any bracket reaches the tolerance well before.
const MAX_PROBES: usize = 200;

struct Terms {
    /// `t_m`: time since arrival.
    elapsed: Vec<f64>,
    /// `r_m`: steps left.
    remaining: Vec<f64>,
    /// `D_m = t_iso_m + r_m / thr_iso_m`: the finish time under the isolated share.
    isolated_finish: Vec<f64>,
}

impl Terms {
    fn new(problem: &Problem) -> Terms {
        let thr_iso = problem.isolated_throughput();
        let n = problem.num_jobs();
        let mut terms = Terms {
            elapsed: Vec::with_capacity(n),
            remaining: Vec::with_capacity(n),
            isolated_finish: Vec::with_capacity(n),
        };
        // One walk of the jobs for all three (at 2^20 jobs each walk reads 120 MB).
        for (job, thr_iso) in problem.jobs.iter().zip(thr_iso) {
            let remaining = job.steps_remaining.unwrap_or(0.0);
            terms.elapsed.push(job.time_elapsed);
            terms.remaining.push(remaining);
            terms.isolated_finish.push(job.isolated_time_elapsed + remaining / thr_iso);
        }
        terms
    }

    /// Jobs whose ρ depends on the allocation.
    fn active(&self, m: usize) -> bool {
        self.remaining[m] > 0.0 && self.isolated_finish[m] > 0.0
    }

    fn rho(&self, m: usize, thr: f64) -> f64 {
        if self.isolated_finish[m] <= 0.0 {
            return 0.0;
        }
        let run = if self.remaining[m] > 0.0 { self.remaining[m] / thr } else { 0.0 };
        (self.elapsed[m] + run) / self.isolated_finish[m]
    }

    fn max_rho(&self, thr: &[f64]) -> f64 {
        (0..thr.len()).map(|m| self.rho(m, thr[m])).fold(0.0, f64::max)
    }

    /// Throughput each job needs for `ρ_m ≤ rho`: `r_m / (rho·D_m − t_m)`.
    fn demand(&self, rho: f64) -> Vec<f64> {
        (0..self.remaining.len())
            .map(|m| {
                if self.active(m) {
                    self.remaining[m] / (rho * self.isolated_finish[m] - self.elapsed[m])
                } else {
                    0.0
                }
            })
            .collect()
    }
}

impl Policy for FinishTimeFairness {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        on_engine(problem, &mut engine(problem, backend))
    }
}

/// The policy on an engine the caller holds (see `policies::solve_keeping_engine`).
pub(crate) fn on_engine(problem: &Problem, engine: &mut Engine) -> Result<Outcome> {
    let terms = Terms::new(problem);
    let m_all = 0..problem.num_jobs();
    if m_all.clone().filter(|&m| terms.active(m)).all(|m| terms.elapsed[m] == 0.0) {
        // ρ_m = r_m / (D_m thr_m) ≤ 1/z  ⟺  thr_m ≥ z · r_m / D_m
        let demand: Vec<f64> =
            m_all.map(|m| if terms.active(m) { terms.remaining[m] / terms.isolated_finish[m] } else { 0.0 }).collect();
        let solution = engine.max_ratio_deferring_split(&demand)?;
        let objective = match solution.z {
            // The split left to the tie-break that follows: ρ* = 1/z at the optimum.
            Some(z) if engine.split_deferred() => 1.0 / z,
            z => {
                let thr = engine.throughputs(&solution.allocation, &solution.pair_time, &solution.unconsolidated);
                match (terms.max_rho(&thr), z) {
                    // A job whose need is below the LP's tolerance (10⁻⁶ steps left against 10⁶ s
                    // of isolated time) can come back with no time and an infinite ρ: the optimum
                    // is still 1/z, and the tie-break's top-up gives that job its sliver.
                    (rho, Some(z)) if !rho.is_finite() && z > 0.0 => 1.0 / z,
                    (rho, _) => rho,
                }
            }
        };
        return Ok(Outcome::of_ratio(problem, engine, solution, objective));
    }

    // Only jobs with steps left move ρ; the others' ρ_m = t_m/D_m is a constant floor.
    let active: Vec<usize> = m_all.filter(|&m| terms.active(m)).collect();
    let active_rho = |thr: &[f64]| active.iter().map(|&m| terms.rho(m, thr[m])).fold(0.0, f64::max);
    // The isolated allocation is feasible, so its ρ bounds the optimum from above; at or below
    // max t_m/D_m no allocation exists (the elapsed time alone reaches it).
    let isolated = problem.isolated_allocation();
    let no_pairs = vec![vec![0.0; problem.num_types()]; engine.pairs().len()];
    let mut hi = active_rho(&engine.throughputs(&isolated, &no_pairs, &engine.no_unconsolidated()));
    let mut best = (isolated, no_pairs, engine.no_unconsolidated());
    // Nor can a job finish sooner than with all of its time on its fastest type with GPUs: ρ_m is
    // at least (t_m + r_m/fastest_m)/D_m. (With pairs offered a pair's throughput could exceed
    // a job's own on the type, so there only the elapsed time counts.)
    let capacity = super::capacities(problem);
    let without_pairs = engine.pairs().is_empty();
    let (mut lo, mut every_job_runs) = (0.0f64, true);
    for &m in &active {
        let fastest =
            if without_pairs { crate::max_min_ratio::ceiling(problem.throughput.row(m), &capacity) } else { 0.0 };
        every_job_runs &= fastest > 0.0;
        let run = if fastest > 0.0 { terms.remaining[m] / fastest } else { 0.0 };
        lo = lo.max((terms.elapsed[m] + run) / terms.isolated_finish[m]);
    }
    // The first probe is `lo` itself when there every job's demand is finite (no pairs, and each
    // job can run somewhere): once jobs have run a while the optimum is often a job's own time,
    // all of it on its fastest type, and then that probe ends the search. Otherwise its z(ρ)
    // below 1 is the secant's first point.
    let mut first = every_job_runs.then_some(lo);
    let mut lp_solves = 0;
    // The last probe below the optimum and the last at or above it, with their ratios z(ρ).
    let mut below: Option<(f64, f64)> = None;
    let mut above: Option<(f64, f64)> = None;
    let mut halve = false;
    for _ in 0..MAX_PROBES {
        if hi - lo <= RHO_TOLERANCE * hi {
            break;
        }
        let width = hi - lo;
        let rho = match (first.take(), below, above) {
            (Some(lo), _, _) => lo,
            // z(ρ) rises with ρ, in proportion to it when no job has elapsed time: the secant's
            // root, kept inside the bracket.
            (None, Some((r0, z0)), Some((r1, z1))) if !halve && z1 > z0 => {
                let secant = r0 + (r1 - r0) * (1.0 - z0) / (z1 - z0);
                secant.clamp(lo + 1e-3 * width, hi - 1e-3 * width)
            }
            _ => 0.5 * (lo + hi),
        };
        let solution = engine.max_ratio(&terms.demand(rho))?;
        lp_solves += solution.lp_solves;
        // Every probe's allocation is feasible: its ρ tightens the upper bracket.
        let achieved =
            active_rho(&engine.throughputs(&solution.allocation, &solution.pair_time, &solution.unconsolidated));
        if achieved < hi {
            hi = achieved;
            best = (solution.allocation, solution.pair_time, solution.unconsolidated);
        }
        match solution.z {
            Some(z) if z < 1.0 => {
                lo = rho;
                below = Some((rho, z));
            }
            z => {
                hi = hi.min(rho);
                above = z.map(|z| (rho, z));
            }
        }
        // A probe that did not halve the bracket is followed by a bisection.
        halve = hi - lo > 0.5 * width;
    }
    let (allocation, pair_time, unconsolidated) = best;
    Ok(Outcome {
        objective: Some(terms.max_rho(&engine.throughputs(&allocation, &pair_time, &unconsolidated))),
        colocated: colocated(problem, engine.pairs(), &pair_time),
        unconsolidated,
        allocation,
        lp_solves,
        water_filling: None,
        method: engine.method_report(),
    })
}
