//! The `arbiter rounds` run: a fixed, validated request, its policy solved once, N rounds with no
//! arrivals, and the JSON reporting each round's placements (jobs alone and, with space sharing,
//! colocated pairs) and each job's and pair's received time.

use super::session::Session;
use super::{Config, LeaseChange, Tenants};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::problem::Problem;
use indexmap::IndexMap;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundsReport {
    pub policy: String,
    /// `rounds`, `ideal` or `configurations`.
    pub mode: String,
    pub work_conserving: bool,
    pub round_seconds: f64,
    pub rounds: Vec<RoundReport>,
    /// Per job, in the request's order.
    pub jobs: IndexMap<String, JobReport>,
    /// Per colocated pair, in the request's order (space sharing only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<PairReport>,
    /// How much of the allocation rounds on whole GPUs can deliver, and the (job, type) entries
    /// that lose time: the shortfall the rounds above then show.
    pub realizable: crate::solver::realizability::RealizabilityReport,
    /// With a realizable solve: how far its allocation is from the fractional optimum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub realizable_solve: Option<crate::solver::realizable::RealizableReport>,
    /// In mode `configurations`: why the rounds chose jobs by priority instead of following the
    /// decomposition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decomposition_skipped: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundReport {
    pub placements: Vec<PlacementReport>,
    /// Jobs that run this round and did not run last round.
    pub started: Vec<String>,
    /// Jobs that run this round on other GPUs than last round.
    pub moved: Vec<String>,
    /// Jobs that ran last round and do not now.
    pub preempted: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlacementReport {
    pub jobs: Vec<String>,
    pub worker_type: String,
    pub gpus: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairReport {
    pub jobs: [String; 2],
    /// `Y[k][w]` of the policy.
    pub allocation: IndexMap<String, f64>,
    /// Fraction of the rounds the pair ran together on each type.
    pub received: IndexMap<String, f64>,
    /// Types where the pair has allocation but can never be placed.
    pub unplaceable: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobReport {
    /// `X[m][w]` of the policy: the job alone.
    pub allocation: IndexMap<String, f64>,
    /// Fraction of the rounds the job ran alone on each type.
    pub received: IndexMap<String, f64>,
    /// Types where the job has allocation but can never be placed (its scale factor exceeds the
    /// type's GPUs, or it cannot run there): `received` stays 0 there.
    pub unplaceable: Vec<String>,
}

/// Most rounds one report holds: it lists every round's placements, so its size grows with them
/// (a million rounds of the eight-job demo took 3 GB).
pub const MAX_REPORTED_ROUNDS: u32 = 100_000;

/// Runs `rounds` rounds of the mechanism on `problem`, its allocation solved once up front.
/// At least one round: with none, the report would show every job as having received nothing.
pub fn run(problem: &Problem, rounds: u32, config: Config) -> Result<RoundsReport> {
    if rounds == 0 {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "rounds",
            "at least 1 round must be run: with none, no job has received anything to report",
        ));
    }
    if rounds > MAX_REPORTED_ROUNDS {
        return Err(ArbiterError::at(
            ErrorCode::Unsupported,
            "rounds",
            format!(
                "{rounds} rounds asked, at most {MAX_REPORTED_ROUNDS} are reported in one run: the report lists every \
                 round's placements; `arbiter simulate` runs longer traces"
            ),
        ));
    }
    let mut session = Session::from_problem(problem, config)?;
    session.recompute_allocation()?;
    let cluster = session.cluster().clone();
    let names: Vec<String> = (0..cluster.num_types()).map(|w| cluster.type_name(w).to_string()).collect();
    let mut reports = Vec::with_capacity(rounds as usize);
    for _ in 0..rounds {
        let round = session.next_round()?;
        let with = |change: LeaseChange| -> Vec<String> {
            round.jobs.iter().filter(|j| j.lease == change).map(|j| j.job.to_string()).collect()
        };
        reports.push(RoundReport {
            placements: round
                .placements
                .iter()
                .map(|p| PlacementReport {
                    jobs: tenant_ids(&p.jobs),
                    worker_type: names[p.worker_type].clone(),
                    gpus: p.gpus.iter().map(|&g| cluster.gpu_name(g)).collect(),
                })
                .collect(),
            started: with(LeaseChange::Started),
            moved: with(LeaseChange::Moved),
            preempted: with(LeaseChange::Preempted),
        });
    }
    // After the rounds: with `Mode::Configurations`, the decomposition they followed.
    let realizable = super::realizability(&session);
    let by_type =
        |values: &[f64]| -> IndexMap<String, f64> { names.iter().cloned().zip(values.iter().copied()).collect() };
    let mut jobs = IndexMap::with_capacity(session.num_jobs());
    for id in session.job_ids() {
        jobs.insert(
            id.to_string(),
            JobReport {
                allocation: by_type(&session.allocation(id)?),
                received: by_type(&session.received_fraction(id)?),
                unplaceable: session.unplaceable_types(id)?.into_iter().map(|w| names[w].clone()).collect(),
            },
        );
    }
    let pair_ids: Vec<[String; 2]> = session.colocations().map(|[a, b]| [a.to_string(), b.to_string()]).collect();
    let mut pairs = Vec::with_capacity(pair_ids.len());
    for [a, b] in pair_ids {
        pairs.push(PairReport {
            allocation: by_type(session.colocated_allocation(&a, &b)?),
            received: by_type(&session.colocated_received_fraction(&a, &b)?),
            unplaceable: session.colocated_unplaceable_types(&a, &b)?.into_iter().map(|w| names[w].clone()).collect(),
            jobs: [a, b],
        });
    }
    Ok(RoundsReport {
        policy: problem.policy.name().to_string(),
        mode: config.mode.name().to_string(),
        work_conserving: config.work_conserving,
        round_seconds: config.round_seconds,
        rounds: reports,
        jobs,
        pairs,
        realizable,
        realizable_solve: session.realizable_solve().cloned(),
        decomposition_skipped: session.decomposition_skipped().map(str::to_string),
    })
}

fn tenant_ids(tenants: &Tenants) -> Vec<String> {
    tenants.as_slice().iter().map(|j| j.to_string()).collect()
}
