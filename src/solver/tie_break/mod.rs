//! The tie-break after a bottleneck policy: LAS, makespan, finish-time fairness and SJF fix only
//! the worst job, so the LP's vertex leaves every other job wherever the simplex stopped, often
//! with GPUs idle that they could use. The second solve keeps every job at the level the optimum
//! requires of it (its *floor*) and maximizes the sum of normalized throughputs, so the answer is
//! Pareto-efficient. On mostly distinct rows the second solve is a price decomposition
//! (`max_weighted_throughput`), exact and linear in jobs × types like the first; elsewhere it is
//! the exact engine. See `formulations/tie_break.md`.

mod top_up;

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::{Backend, Sense};
use crate::max_min_ratio::{DecompositionOptions, Engine, MethodReport, Need, Program, Terms};
use crate::policies::{throughputs, Outcome, PolicyKind};
use crate::problem::{Matrix, Problem};
use crate::solver::max_weighted_throughput as decomposition;
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

    /// [`TieBreak::from_name`], or the contract's error naming the field `tie_break`.
    pub fn named(name: &str) -> Result<TieBreak> {
        TieBreak::from_name(name).ok_or_else(|| {
            ArbiterError::at(
                ErrorCode::MalformedRequest,
                "tie_break",
                format!("unknown tie_break {name:?}; expected \"throughput\", \"water_filling\" or \"none\""),
            )
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TieBreak::Throughput => "throughput",
            TieBreak::WaterFilling => "water_filling",
            TieBreak::None => "none",
        }
    }
}

/// Relative slack on the floors: the second solve may not lower any job by more than this.
const FLOOR_SLACK: f64 = 1e-9;

/// The slack of a second try, when the floors at [`FLOOR_SLACK`] leave the second solve
/// infeasible: an optimum the LP met only within its tolerance (a type over its GPUs by 10⁻⁷)
/// gives floors that no allocation within the GPUs meets. The answer's feasibility check allows
/// as much (`solver::feasible`).
const RETRY_SLACK: f64 = 1e-6;

/// What a unit of each job's throughput is worth to the throughput tie-break: `1/thr_equal_m`
/// (0 for a job with no equal share), so its objective is `Σ_m thr_m / thr_equal_m`.
pub fn throughput_value(problem: &Problem) -> Vec<f64> {
    problem.equal_share_throughput().iter().map(|&eq| if eq > 0.0 { 1.0 / eq } else { 0.0 }).collect()
}

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

/// Why `policy` cannot take `tie_break`, if it cannot: water-filling is `max_min_fairness`'s
/// (policies the tie-break does not apply to ignore it).
pub fn refusal(tie_break: TieBreak, policy: PolicyKind) -> Option<ArbiterError> {
    (tie_break == TieBreak::WaterFilling && applies(policy) && policy != PolicyKind::MaxMinFairness).then(|| {
        ArbiterError::at(
            ErrorCode::Unsupported,
            "tie_break",
            format!(
                "tie_break \"water_filling\" is for max_min_fairness; {} takes \"throughput\" or \"none\"",
                policy.name()
            ),
        )
    })
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
/// over the base constraints and `thr_m ≥ floor_m·(1 − 1e-9)`. On mostly distinct rows (or with
/// `method: decomposition`) by price decomposition; otherwise, or when the decomposition cannot
/// certify an optimum, by the exact engine (jobs with the same row and scale factor as one class,
/// its top-k cuts keeping each member at its own floor). `None` when it does not apply (no
/// objective, space sharing, placement-sensitive jobs).
pub fn throughput(problem: &Problem, outcome: &Outcome, backend: Backend) -> Result<Option<(Outcome, MethodReport)>> {
    throughput_with(problem, outcome, backend, &DecompositionOptions::default())
}

/// [`throughput`] with the decomposition's `options`.
pub fn throughput_with(
    problem: &Problem,
    outcome: &Outcome,
    backend: Backend,
    options: &DecompositionOptions,
) -> Result<Option<(Outcome, MethodReport)>> {
    throughput_on(problem, outcome, None, backend, options, FLOOR_SLACK)
}

/// [`throughput_with`], on the engine that solved the optimum when the caller kept it
/// (`policies::solve_keeping_engine`): the engine's second solve then starts from its model.
/// Every floor is lowered by `slack`, relative.
fn throughput_on<'p>(
    problem: &'p Problem,
    outcome: &Outcome,
    mut engine: Option<&mut Engine<'p>>,
    backend: Backend,
    options: &DecompositionOptions,
    slack: f64,
) -> Result<Option<(Outcome, MethodReport)>> {
    if !applies(problem.policy) || problem.space_sharing || problem.unconsolidated.is_some() {
        return Ok(None);
    }
    let Some(floor) = floors(problem, outcome) else { return Ok(None) };
    let value = throughput_value(problem);
    // An optimum whose split the engine left undone: its floors are its model's needs at one
    // level (LAS, makespan, finish-time fairness with no elapsed time), and the second solve
    // goes on from that model.
    let deferred;
    let outcome = match engine.as_deref_mut() {
        Some(engine) if engine.split_deferred() => {
            let floor: Vec<f64> = floor.iter().map(|f| f * (1.0 - slack)).collect();
            if let Some(solved) = engine.best_value_at_floors(&floor, &value) {
                let solved = solved.map_err(second_solve_failed)?;
                let report = MethodReport::lp(None);
                return Ok(Some((improved(problem, outcome, solved.allocation, solved.lp_solves), report)));
            }
            deferred = with_split(outcome.clone(), engine);
            &deferred
        }
        _ => outcome,
    };
    let thr = throughputs(problem, &outcome.allocation);
    // A floor the optimum itself does not meet (round-off) is the optimum's throughput.
    let floor: Vec<f64> =
        floor.iter().zip(&thr).map(|(&f, &t)| if f.is_finite() { f.min(t) } else { t } * (1.0 - slack)).collect();
    // The optimum's GPU prices, when a decomposition found them, give the second solve's
    // direction; a session's last second solve, its prices.
    let starts = decomposition::Starts {
        ray: outcome.method.as_ref().and_then(|m| m.prices.as_deref()),
        warm: problem.warm_tie_break_prices.as_deref(),
    };
    let (allocation, lp_solves, report) =
        match decomposition::solve_problem(problem, &value, &floor, backend, options, starts)? {
            Ok(found) => {
                let report = found.report();
                (found.allocation, found.lp_solves, report)
            }
            Err(fallback) => {
                let (allocation, lp_solves) = on_engine(problem, engine, &floor, &value, backend)?;
                (allocation, lp_solves, MethodReport::lp(fallback))
            }
        };
    Ok(Some((improved(problem, outcome, allocation, lp_solves), report)))
}

/// `outcome` with the second solve's `allocation`, and its LP solves counted.
fn improved(problem: &Problem, outcome: &Outcome, allocation: Matrix, lp_solves: usize) -> Outcome {
    let mut better = Outcome {
        allocation,
        lp_solves: outcome.lp_solves + lp_solves,
        objective: outcome.objective,
        water_filling: outcome.water_filling.clone(),
        method: outcome.method.clone(),
        colocated: outcome.colocated.clone(),
        unconsolidated: outcome.unconsolidated.clone(),
    };
    // Type-blind, the second solve's vertex pins jobs to types as the first one's would have.
    crate::policies::spread_if_type_blind(problem, &mut better);
    better
}

/// An optimum whose split `engine` left undone, with it made.
fn with_split(mut outcome: Outcome, engine: &Engine) -> Outcome {
    outcome.allocation = engine.last_allocation();
    outcome
}

fn second_solve_failed(e: ArbiterError) -> ArbiterError {
    ArbiterError { message: format!("the tie-break solve after the optimum failed: {}", e.message), ..e }
}

/// The second solve on the exact engine: the one that solved the optimum when there is one (its
/// classes and cuts, and its kept model re-solved with the floors and the new objective when it
/// kept one), otherwise a new one.
fn on_engine<'p>(
    problem: &'p Problem,
    mut engine: Option<&mut Engine<'p>>,
    floor: &[f64],
    value: &[f64],
    backend: Backend,
) -> Result<(Matrix, usize)> {
    // The optimum's own model when the floors are its needs: it goes on from its basis.
    if let Some(solved) = engine.as_deref_mut().and_then(|engine| engine.best_value_at_floors(floor, value)) {
        let solved = solved.map_err(second_solve_failed)?;
        return Ok((solved.allocation, solved.lp_solves));
    }
    let needs = floor.iter().map(|&base| Need { base, terms: Terms::new() }).collect();
    let mut program = Program::new(Sense::Maximize, needs);
    // Every job takes part, a job with no floor too: the objective gives it the time left.
    program.keep_model = true;
    program.precise = true;
    program.throughput_value = Some(value.to_vec());
    // In the place of the optimum's `z` (the kept model's one shared variable), fixed at 0 and
    // worth nothing: the floors carry the optimum now.
    program.add_var(0.0, 0.0, 0.0);
    let mut own;
    let engine = match engine {
        Some(engine) => engine,
        None => {
            own = crate::policies::engine(problem, backend);
            &mut own
        }
    };
    let solved = engine.solve_program(&program).map_err(second_solve_failed)?;
    Ok((solved.allocation, solved.lp_solves))
}

/// What the tie-break did: the allocation to return, the tie-break applied (`None` where it does
/// not apply) and, for `throughput`, which method solved its second LP, or why it failed.
#[derive(Debug, Clone)]
pub struct Applied {
    pub outcome: Outcome,
    pub tie_break: TieBreak,
    pub method: Option<MethodReport>,
    /// Why the tie-break asked for was not applied, when it applies to the policy and its second
    /// solve failed: the optimum's own allocation is returned.
    pub skipped: Option<String>,
}

impl Applied {
    /// `outcome` as the policy left it.
    pub fn bare(outcome: Outcome) -> Applied {
        Applied { outcome, tie_break: TieBreak::None, method: None, skipped: None }
    }
}

/// The tie-break `problem` asks for, after `outcome` (its policy's optimum).
pub fn apply(problem: &Problem, outcome: Outcome, backend: Backend) -> Result<Applied> {
    apply_on(problem, outcome, None, backend)
}

/// The problem's policy and the tie-break it asks for. For `throughput` the optimum's engine is
/// kept (`policies::solve_keeping_engine`) and the second solve starts from it.
pub fn solve(problem: &Problem, backend: Backend) -> Result<Applied> {
    let (outcome, mut engine) = match problem.tie_break {
        TieBreak::Throughput => crate::policies::solve_keeping_engine(problem, backend)?,
        _ => (crate::policies::solve(problem, backend)?, None),
    };
    apply_on(problem, outcome, engine.as_mut(), backend)
}

/// [`apply`] on the engine that solved `outcome`, when the caller kept it
/// (`policies::solve_keeping_engine`; an optimum whose split that engine left undone is split
/// here unless the second solve replaces it).
pub fn apply_on<'p>(
    problem: &'p Problem,
    outcome: Outcome,
    engine: Option<&mut Engine<'p>>,
    backend: Backend,
) -> Result<Applied> {
    let mut applied = chosen(problem, outcome, engine, backend)?;
    top_up::keep_floors(problem, &mut applied.outcome);
    crate::policies::drop_time_where_it_cannot_run(problem, &mut applied.outcome);
    Ok(applied)
}

/// The tie-break the problem asks for, applied to `outcome`.
fn chosen<'p>(
    problem: &'p Problem,
    mut outcome: Outcome,
    mut engine: Option<&mut Engine<'p>>,
    backend: Backend,
) -> Result<Applied> {
    let mut skipped = None;
    if problem.tie_break == TieBreak::Throughput {
        let options = DecompositionOptions::default();
        for slack in [FLOOR_SLACK, RETRY_SLACK] {
            match throughput_on(problem, &outcome, engine.as_deref_mut(), backend, &options, slack) {
                Ok(Some((better, method))) => {
                    let method = Some(method);
                    return Ok(Applied { outcome: better, tie_break: TieBreak::Throughput, method, skipped: None });
                }
                Ok(None) => break,
                // The optimum stands without it; a budget that ran out is still the request's answer.
                Err(e) if e.code == ErrorCode::SolverFailed => {
                    skipped = Some(format!("{}; the optimum's own allocation is returned", e.message));
                }
                Err(e) => return Err(e),
            }
        }
    }
    if let Some(engine) = engine.filter(|engine| engine.split_deferred()) {
        outcome = with_split(outcome, engine);
        crate::policies::spread_if_type_blind(problem, &mut outcome);
    }
    let (outcome, tie_break) = match problem.tie_break {
        TieBreak::None | TieBreak::Throughput => return Ok(Applied { skipped, ..Applied::bare(outcome) }),
        TieBreak::WaterFilling => match problem.policy {
            PolicyKind::MaxMinFairness => {
                let levels = Problem { policy: PolicyKind::MaxMinFairnessWaterFilling, ..problem.clone() };
                let mut filled = crate::policies::solve(&levels, backend)?;
                filled.lp_solves += outcome.lp_solves;
                filled.objective = outcome.objective;
                (filled, TieBreak::WaterFilling)
            }
            policy => match refusal(TieBreak::WaterFilling, policy) {
                Some(e) => return Err(e),
                None => (outcome, TieBreak::None),
            },
        },
    };
    Ok(Applied { tie_break, ..Applied::bare(outcome) })
}
