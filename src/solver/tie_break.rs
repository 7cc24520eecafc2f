//! The tie-break after a bottleneck policy: LAS, makespan, finish-time fairness and SJF fix only
//! the worst job, so the LP's vertex leaves every other job wherever the simplex stopped, often
//! with GPUs idle that they could use. The second solve keeps every job at the level the optimum
//! requires of it (its *floor*) and maximizes the sum of normalized throughputs, so the answer is
//! Pareto-efficient. See `formulations/tie_break.md`.

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::{Backend, Sense};
use crate::max_min_ratio::{Need, Program};
use crate::policies::{throughputs, Outcome, PolicyKind};
use crate::problem::{Matrix, Problem};
use serde::{Deserialize, Serialize};

/// What a request asks for after the optimum (`tie_break`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TieBreak {
    /// Maximize `Σ_m thr_m / thr_equal_m` with every job at its floor (the default).
    #[default]
    Throughput,
    /// Water-filling: raise every job that can be raised, lexicographically (LAS only).
    WaterFilling,
    /// The bare LP's vertex.
    None,
}

impl TieBreak {
    pub fn from_name(name: &str) -> Option<TieBreak> {
        match name {
            "throughput" => Some(TieBreak::Throughput),
            "water_filling" => Some(TieBreak::WaterFilling),
            "none" => Some(TieBreak::None),
            _ => None,
        }
    }
}

/// Relative slack on the floors: the second solve may not lower any job by more than this.
const FLOOR_SLACK: f64 = 1e-9;

/// Whether the tie-break applies to a policy: those whose objective fixes only a bottleneck. The
/// others value every job's throughput already (max-sum, FIFO, cost), are lexicographic
/// (water-filling, hierarchical) or solve nothing.
pub fn applies(policy: PolicyKind) -> bool {
    matches!(
        policy,
        PolicyKind::MaxMinFairness
            | PolicyKind::MinMakespan
            | PolicyKind::FinishTimeFairness
            | PolicyKind::ShortestJobFirst
    )
}

/// Each job's floor: the throughput it must keep for the policy's objective to stay at the
/// optimum of `outcome` (contract definitions, with the `T` the policy saw).
fn floors(problem: &Problem, outcome: &Outcome) -> Option<Vec<f64>> {
    let objective = outcome.objective?;
    let n = problem.num_jobs();
    Some(match problem.policy {
        // min_m (sf_m/w_m)·thr_m/thr_equal_m ≥ z*
        PolicyKind::MaxMinFairness => {
            let equal = problem.equal_share_throughput();
            (0..n)
                .map(|m| objective * problem.jobs[m].weight * equal[m] / problem.jobs[m].scale_factor as f64)
                .collect()
        }
        // max_m r_m/thr_m ≤ M*
        PolicyKind::MinMakespan => (0..n).map(|m| problem.steps_remaining(m) / objective).collect(),
        // ρ_m = (t_m + r_m/thr_m) / (t_iso_m + r_m/thr_iso_m) ≤ ρ*
        PolicyKind::FinishTimeFairness => {
            let iso = problem.isolated_throughput();
            (0..n)
                .map(|m| {
                    let (r, job) = (problem.steps_remaining(m), &problem.jobs[m]);
                    if r <= 0.0 || iso[m] <= 0.0 {
                        return 0.0;
                    }
                    let budget = objective * (job.isolated_time_elapsed + r / iso[m]) - job.time_elapsed;
                    if budget > 0.0 {
                        r / budget
                    } else {
                        f64::INFINITY
                    }
                })
                .collect()
        }
        // min_m r_m/thr_m ≤ S*: the job that attains it keeps its throughput.
        PolicyKind::ShortestJobFirst => {
            let thr = throughputs(problem, &outcome.allocation);
            let attains = (0..n).filter(|&m| thr[m] > 0.0 && problem.steps_remaining(m) > 0.0).min_by(|&a, &b| {
                (problem.steps_remaining(a) / thr[a]).total_cmp(&(problem.steps_remaining(b) / thr[b]))
            })?;
            (0..n).map(|m| if m == attains { thr[m] } else { 0.0 }).collect()
        }
        _ => return None,
    })
}

/// The Pareto-efficient allocation among those that keep every job at its floor: `max Σ nt_m`
/// over the base constraints and `thr_m ≥ floor_m·(1 − 1e-9)`, solved by the exact engine (jobs
/// with the same row and scale factor as one class, its top-k cuts keeping each member at its own
/// floor). `None` when it does not apply (no objective, space sharing, placement-sensitive jobs).
pub fn throughput(problem: &Problem, outcome: &Outcome, backend: Backend) -> Result<Option<Outcome>> {
    if !applies(problem.policy) || problem.space_sharing || problem.unconsolidated.is_some() {
        return Ok(None);
    }
    let Some(floor) = floors(problem, outcome) else { return Ok(None) };
    let thr = throughputs(problem, &outcome.allocation);
    let equal = problem.equal_share_throughput();
    let needs = floor
        .iter()
        .zip(&thr)
        // A floor the optimum itself does not meet (round-off) is the optimum's throughput.
        .map(|(&f, &t)| Need {
            base: if f.is_finite() { f.min(t) } else { t } * (1.0 - FLOOR_SLACK),
            terms: Vec::new(),
        })
        .collect();
    let mut value = Matrix::zeros(problem.num_jobs(), problem.num_types());
    for (m, &eq) in equal.iter().enumerate().filter(|&(_, &eq)| eq > 0.0) {
        for w in 0..problem.num_types() {
            value.set(m, w, problem.throughput.get(m, w) / eq);
        }
    }
    let mut program = Program::new(Sense::Maximize, needs);
    // Every job takes part, a job with no floor too: the objective gives it the time left.
    program.keep_model = true;
    program.time_value = Some(value);
    let solved = crate::policies::engine(problem, backend).solve_program(&program).map_err(|e| ArbiterError {
        message: format!("the tie-break solve after the optimum failed: {}", e.message),
        ..e
    })?;
    let mut better =
        Outcome { allocation: solved.allocation, lp_solves: outcome.lp_solves + solved.lp_solves, ..outcome.clone() };
    // Type-blind, the second solve's vertex pins jobs to types as the first one's would have.
    crate::policies::spread_if_type_blind(problem, &mut better);
    Ok(Some(better))
}

/// The tie-break `problem` asks for, after `outcome` (its policy's optimum): the allocation to
/// return and the tie-break applied (`None` where it does not apply).
pub fn apply(problem: &Problem, outcome: Outcome, backend: Backend) -> Result<(Outcome, TieBreak)> {
    match problem.tie_break {
        TieBreak::None => Ok((outcome, TieBreak::None)),
        TieBreak::Throughput => match throughput(problem, &outcome, backend)? {
            Some(better) => Ok((better, TieBreak::Throughput)),
            None => Ok((outcome, TieBreak::None)),
        },
        TieBreak::WaterFilling => match problem.policy {
            PolicyKind::MaxMinFairness => {
                let levels = Problem { policy: PolicyKind::MaxMinFairnessWaterFilling, ..problem.clone() };
                let mut filled = crate::policies::solve(&levels, backend)?;
                filled.lp_solves += outcome.lp_solves;
                filled.objective = outcome.objective;
                Ok((filled, TieBreak::WaterFilling))
            }
            policy if applies(policy) => Err(ArbiterError::at(
                ErrorCode::Unsupported,
                "tie_break",
                format!(
                    "tie_break \"water_filling\" is for max_min_fairness; {} takes \"throughput\" or \"none\"",
                    policy.name()
                ),
            )),
            _ => Ok((outcome, TieBreak::None)),
        },
    }
}
