//! Realizable policies (`realizable: true`): the policy's objective solved over the convex hull of
//! round configurations instead of over fractional capacity (`realizability::hull`), so the
//! allocation is one whole-GPU rounds can deliver, and the response says how far that optimum is
//! from the fractional one. The fractional optimum is solved first: when the check proves it
//! realizable it is the answer (nothing realizable does better); otherwise its decomposition
//! seeds the column generation. Covers `max_min_fairness`, `min_makespan` and
//! `max_sum_throughput`, with or without space sharing (a colocated pair is one more gang a round
//! may run), without placement sensitivity; the others keep their fractional allocation and say
//! why. See `formulations/realizability.md`.

use crate::lp::Backend;
use crate::policies::{colocated, max_min_fairness, min_makespan, throughputs, Outcome, PolicyKind};
use crate::problem::Problem;
use crate::solver::realizability::{self, hull, Budget, Configuration, Realizability};
use crate::solver::tie_break::{self, TieBreak};
use crate::space_sharing::{add_pair_throughput, kept_pairs, Pair};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// When a policy is solved over round configurations (`Problem::realizable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Realizable {
    /// The fractional allocation of the policy's LP (a request's default, and Gavel's).
    #[default]
    Off,
    /// Over round configurations, except when space sharing's pairs are in the solve (their
    /// columns make it hundreds of times the plain solve: `docs/simulator.md`) or the jobs are
    /// more than its size budget takes (`declined`). The default of sessions and the simulator.
    UnlessPaired,
    /// Over round configurations, pairs included (`realizable: true`).
    On,
}

impl Realizable {
    /// `Some(true)`: `On`, `Some(false)`: `Off`, `None`: `default`.
    pub fn from_flag(flag: Option<bool>, default: Realizable) -> Realizable {
        match flag {
            Some(true) => Realizable::On,
            Some(false) => Realizable::Off,
            None => default,
        }
    }

    /// Whether a solve of `policy` runs the realizable solve: always when `On` (which then reports
    /// why it does not cover a policy), by default only for the policies it covers.
    pub fn runs_for(self, policy: PolicyKind) -> bool {
        match self {
            Realizable::Off => false,
            Realizable::UnlessPaired => covers(policy),
            Realizable::On => true,
        }
    }
}

/// Why the default (`Realizable::UnlessPaired`) leaves `problem` fractional before solving it:
/// more jobs than the solve's size budget takes, or space sharing's pairs.
pub fn declined(problem: &Problem) -> Option<String> {
    if problem.realizable != Realizable::UnlessPaired {
        return None;
    }
    let most = budget().max_entries;
    if problem.num_jobs() > most {
        return Some(format!(
            "not applied by default past {most} jobs (the realizable solve's size budget, in (job, worker type) \
             entries); realizable: true tries it"
        ));
    }
    (!kept_pairs(problem).is_empty()).then(|| {
        "not applied by default with space sharing's pairs, whose columns make the solve hundreds of times slower; \
         realizable: true applies it"
            .to_string()
    })
}

/// The policies solved over round configurations.
pub fn covers(policy: PolicyKind) -> bool {
    matches!(policy, PolicyKind::MaxMinFairness | PolicyKind::MinMakespan | PolicyKind::MaxSumThroughput)
}

/// The hull solve's budget: it is the answer, not a report on one, so it may take longer than a
/// response's check: ten times its work (about 0.7 s where a session of a few hundred distinct
/// rows cannot be certified; 10 s, once the bound, bought 0.2% of objective there), by work so
/// that the same request makes the same allocation on every machine, with seconds a backstop
/// (and the request's `max_solve_seconds`).
pub fn budget() -> Budget {
    Budget {
        max_master_entries: usize::MAX,
        max_pricing_work: 20_000_000,
        iterations: 2_000,
        work: 6_000_000,
        seconds: 10.0,
        ..Budget::default()
    }
}

/// The checks of the fractional optimum (and of its floors) inside the realizable solve: the
/// response check's, bounded by its master solves (300) rather than by the response's smaller
/// work budget (a check that certifies the optimum saves the hull solve), and like it by work
/// rather than time, so the same request always makes the same allocation (a simulation's or a
/// replayed session's rounds depend on it).
fn check_budget() -> Budget {
    Budget { seconds: 10.0, work: u64::MAX, ..Budget::default() }
}

/// What the realizable solve did (`stats.realizable_solve`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RealizableReport {
    /// Whether the answer is the optimum over round configurations; when not, `reason` says why
    /// and the allocation is the fractional one.
    pub applied: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The policy's objective at the fractional optimum (over fractional capacity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fractional_objective: Option<f64>,
    /// The policy's objective at the realizable optimum (the response's `objective`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<f64>,
    /// `|objective − fractional_objective| / |fractional_objective|`: what whole-GPU rounds cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative_gap: Option<f64>,
    /// Whether the realizable optimum is proved: no configuration improves, or the fractional
    /// optimum was already realizable. False when a budget stopped the column generation (the
    /// allocation is still realizable, and `reason` says which budget).
    pub certified: bool,
    /// The fractional optimum was realizable already: no column generation ran.
    pub fractional_was_realizable: bool,
    /// With the throughput tie-break over configurations: whether it is proved (no configuration
    /// adds normalized throughput at the optimum). False when its few master solves ran out: the
    /// objective stays optimal, the other jobs' time is as far as they went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie_break_certified: Option<bool>,
    /// Jobs no round can run (their gang fits no worker type they run on): they get no time and
    /// are left out of the objective, which would otherwise be 0 (or an infinite makespan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unplaceable: Vec<String>,
    /// Round configurations in the allocation's decomposition.
    pub configurations: usize,
    /// Master LP solves of the column generation (and of the check before it).
    pub lp_solves: usize,
    pub seconds: f64,
}

impl RealizableReport {
    fn not_applied(reason: String) -> RealizableReport {
        RealizableReport {
            applied: false,
            reason: Some(reason),
            fractional_objective: None,
            objective: None,
            relative_gap: None,
            certified: false,
            fractional_was_realizable: false,
            tie_break_certified: None,
            unplaceable: Vec::new(),
            configurations: 0,
            lp_solves: 0,
            seconds: 0.0,
        }
    }
}

/// The realizable answer: the outcome (the fractional one when not applied), the report, and the
/// allocation's decomposition into round configurations when it has one.
#[derive(Debug, Clone)]
pub struct Realized {
    pub outcome: Outcome,
    pub report: RealizableReport,
    pub decomposition: Option<Realizability>,
}

impl Realized {
    /// The fractional outcome kept, and why.
    pub fn not_applied(outcome: Outcome, reason: String) -> Realized {
        Realized { outcome, report: RealizableReport::not_applied(reason), decomposition: None }
    }
}

/// Why the realizable solve does not cover `problem`, if it does not.
fn uncovered(problem: &Problem, outcome: &Outcome) -> Option<String> {
    if !covers(problem.policy) {
        return Some(format!(
            "the realizable solve covers max_min_fairness, min_makespan and max_sum_throughput; {} keeps its \
             fractional allocation",
            problem.policy.name()
        ));
    }
    if outcome.unconsolidated.rows() > 0 {
        return Some("placement sensitivity is not formulated over round configurations".into());
    }
    declined(problem)
}

/// The policy over round configurations, from its fractional `outcome`; `tie_broken`: the
/// outcome is the throughput tie-break's (its value then bounds the hull's tie-break).
pub fn apply(problem: &Problem, outcome: Outcome, tie_broken: bool, backend: Backend) -> Realized {
    let start = Instant::now();
    if let Some(reason) = uncovered(problem, &outcome) {
        return Realized::not_applied(outcome, reason);
    }
    let fractional = outcome.objective;
    let mut instance = match realizability::instance(problem, &outcome) {
        Ok(instance) => instance,
        Err(reason) => return Realized::not_applied(outcome, reason),
    };
    // No time where the job cannot run at all (a type-blind policy sees every throughput as 1,
    // and may give time there): the hull gives none, and the checks below leave it out.
    let mut runnable = problem.throughput.clone();
    let mut masked = false;
    for m in 0..problem.num_jobs() {
        for w in 0..problem.num_types() {
            if problem.measured.get(m, w) <= 0.0 {
                runnable.set(m, w, 0.0);
                masked |= instance.requested.get(m, w) > 0.0;
                instance.requested.set(m, w, 0.0);
            }
        }
    }
    // The fractional optimum, if realizable (and all of its time where jobs run), is the
    // realizable optimum.
    let check = realizability::check(&instance, &check_budget(), backend).ok();
    let mut lp_solves = check.as_ref().map_or(0, |c| c.lp_solves);
    if let Some(check) = check.as_ref().filter(|c| !masked && c.delivers_all()) {
        let report = RealizableReport {
            applied: true,
            reason: None,
            fractional_objective: fractional,
            objective: fractional,
            relative_gap: fractional.map(|_| 0.0),
            certified: true,
            fractional_was_realizable: true,
            tie_break_certified: None,
            unplaceable: Vec::new(),
            configurations: check.configurations.len(),
            lp_solves,
            seconds: start.elapsed().as_secs_f64(),
        };
        return Realized { outcome, report, decomposition: Some(check.clone()) };
    }
    // With a job no round can run, the hull leaves it out: the fractional optimum bounds nothing.
    let all_placeable = (0..problem.num_jobs()).all(|m| {
        (0..problem.num_types()).any(|w| runnable.get(m, w) > 0.0 && instance.scale_factors[m] <= instance.capacity[w])
    });
    // Space sharing's kept pairs (the fractional LP's), each one more gang a round may run.
    let pairs = kept_pairs(problem);
    let fractional_pair_time: Vec<Vec<f64>> = pairs
        .iter()
        .map(|p| match p.colocation < outcome.colocated.rows() {
            true => outcome.colocated.row(p.colocation).to_vec(),
            false => vec![0.0; problem.num_types()],
        })
        .collect();
    // The check's pairs (those with time, in colocation order) as indices into `pairs`.
    let checked_pairs: Vec<Option<u32>> = (0..outcome.colocated.rows())
        .filter(|&k| outcome.colocated.row(k).iter().any(|&y| y > 0.0))
        .map(|k| pairs.iter().position(|p| p.colocation == k).map(|j| j as u32))
        .collect();
    let in_hull_terms = |c: Configuration| -> Configuration {
        let paired =
            c.pairs.iter().filter_map(|&(i, w)| checked_pairs.get(i as usize).copied().flatten().map(|j| (j, w)));
        Configuration::with_pairs(c.runs, paired.collect())
    };
    let thr = with_pair_throughput(throughputs(problem, &outcome.allocation), &pairs, &fractional_pair_time);
    let secondary = tie_break::throughput_value(problem);
    let with_tie_break = problem.tie_break != TieBreak::None;
    let demand: Vec<f64> = match problem.policy {
        PolicyKind::MaxMinFairness => max_min_fairness::demand(problem),
        PolicyKind::MinMakespan => min_makespan::demand(problem),
        _ => Vec::new(),
    };
    let ones = vec![1.0; problem.num_jobs()];
    let mut seed: Vec<Configuration> =
        check.map(|c| c.configurations.into_iter().map(|(_, c)| in_hull_terms(c)).collect()).unwrap_or_default();
    let (goal, start_from) = if problem.policy == PolicyKind::MaxSumThroughput {
        let bound = all_placeable.then(|| thr.iter().sum());
        (hull::Goal::Throughput { value: &ones }, hull::Start { bound, ..hull::Start::default() })
    } else {
        // The fractional z, which scales the master's numbers and bounds the hull's.
        let z = demand.iter().zip(&thr).filter(|(&d, _)| d > 0.0).map(|(&d, &t)| t / d).fold(f64::INFINITY, f64::min);
        // Each job's time cut to what z needs of it: less to pack, often realizable when the
        // tie-break's surplus is not; its decomposition then reaches z at once.
        let mut reaching = None;
        if z.is_finite() && z > 0.0 {
            let mut floors = instance.clone();
            let keep: Vec<f64> = (0..problem.num_jobs())
                .map(|m| if thr[m] > 0.0 { (z * demand[m] / thr[m]).min(1.0) } else { 0.0 })
                .collect();
            for (m, &keep) in keep.iter().enumerate() {
                floors.requested.row_mut(m).iter_mut().for_each(|x| *x *= keep);
            }
            // A pair's time serves both of its jobs: cut to what the one that needs more keeps.
            for pair in &mut floors.pairs {
                let keep = pair.jobs.iter().map(|&m| keep[m as usize]).fold(0.0, f64::max);
                pair.requested.iter_mut().for_each(|y| *y *= keep);
            }
            if let Ok(c) = realizability::check(&floors, &check_budget(), backend) {
                lp_solves += c.lp_solves;
                let delivers_all = c.delivers_all();
                let configurations: Vec<(f64, Configuration)> =
                    c.configurations.into_iter().map(|(w, c)| (w, in_hull_terms(c))).collect();
                if delivers_all {
                    reaching = Some(configurations.clone());
                }
                seed.extend(configurations.into_iter().map(|(_, c)| c));
            }
        }
        let secondary_bound =
            (tie_broken && with_tie_break).then(|| thr.iter().zip(&secondary).map(|(t, s)| t * s).sum());
        let start = hull::Start {
            seed: Vec::new(),
            scale: Some(z),
            bound: all_placeable.then_some(z),
            secondary_bound: secondary_bound.filter(|_| all_placeable),
            // Floors cut from throughputs that count time where a job cannot run prove nothing.
            reaching: reaching.filter(|_| all_placeable && !masked),
        };
        (hull::Goal::Ratio { demand: &demand, secondary: with_tie_break.then_some(secondary.as_slice()) }, start)
    };
    let start_from = hull::Start { seed, ..start_from };
    let runs = hull::Runnable {
        throughput: &runnable,
        scale_factors: &instance.scale_factors,
        capacity: &instance.capacity,
        pairs: &pairs,
    };
    let solved = hull::solve(runs, goal, &start_from, &budget(), backend);
    let hull = match solved {
        Ok(hull) => hull,
        Err(skipped) => {
            let reason = match skipped {
                realizability::Skipped::TooLarge(why) => format!("the realizable solve is past its budget: {why}"),
                realizability::Skipped::Solver(error) => format!("the realizable solve's LP failed: {error}"),
            };
            return Realized::not_applied(outcome, reason);
        }
    };
    lp_solves += hull.lp_solves;
    let thr = with_pair_throughput(throughputs(problem, &hull.allocation), &pairs, &hull.pair_time);
    let mut counted = vec![true; problem.num_jobs()];
    for &m in &hull.unplaceable {
        counted[m] = false;
    }
    let objective = match problem.policy {
        PolicyKind::MaxMinFairness => max_min_fairness::weighted_normalized_throughputs(problem, &thr)
            .into_iter()
            .zip(&counted)
            .filter(|&(_, &c)| c)
            .fold(f64::INFINITY, |a, (v, _)| a.min(v)),
        PolicyKind::MinMakespan => min_makespan::makespan_of(&demand, &thr, |m| counted[m]),
        _ => thr.iter().sum(),
    };
    let relative_gap = fractional.map(|f| if f != 0.0 { ((objective - f) / f).abs() } else { objective.abs() });
    let pair_jobs: Vec<[usize; 2]> = pairs.iter().map(|p| p.jobs).collect();
    let decomposition = Realizability::of_configurations(
        &hull.allocation,
        &pair_jobs,
        &hull.pair_time,
        hull.configurations.clone(),
        lp_solves,
    );
    let report = RealizableReport {
        applied: true,
        reason: match (&hull.stopped, &hull.tie_break_stopped) {
            (Some(why), _) => Some(format!("not certified: {why}")),
            (None, Some(why)) => {
                Some(format!("the objective is certified; the tie-break over configurations is not: {why}"))
            }
            (None, None) => None,
        },
        fractional_objective: fractional,
        objective: Some(objective),
        relative_gap,
        certified: hull.stopped.is_none(),
        fractional_was_realizable: false,
        tie_break_certified: (with_tie_break
            && problem.policy != PolicyKind::MaxSumThroughput
            && hull.stopped.is_none())
        .then_some(hull.tie_break_stopped.is_none()),
        unplaceable: hull.unplaceable.iter().map(|&m| problem.jobs[m].id.clone()).collect(),
        configurations: hull.configurations.len(),
        lp_solves,
        seconds: start.elapsed().as_secs_f64(),
    };
    let outcome = Outcome {
        colocated: colocated(problem, &pairs, &hull.pair_time),
        allocation: hull.allocation,
        objective: Some(objective),
        lp_solves: outcome.lp_solves + lp_solves,
        ..outcome
    };
    Realized { outcome, report, decomposition: Some(decomposition) }
}

/// Each job's throughput `thr` from running alone, plus what its colocated pairs' time gives it.
fn with_pair_throughput(mut thr: Vec<f64>, pairs: &[Pair], pair_time: &[Vec<f64>]) -> Vec<f64> {
    add_pair_throughput(&mut thr, pairs, pair_time);
    thr
}
