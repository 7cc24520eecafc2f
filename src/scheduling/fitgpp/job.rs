//! A job as FitGpp sees it: its kind (trial-and-error or best-effort), its demand, how long it
//! runs alone, its grace period; and where it is in its life. Not for deciding anything.

use super::resources::Resources;
use crate::error::{ArbiterError, ErrorCode, Result};
use serde::{Deserialize, Serialize};

/// Index of a job in `Cluster::jobs`.
pub type JobIndex = usize;
/// Index of a node in `Cluster::nodes`.
pub type NodeIndex = usize;

/// Trial-and-error jobs are watched by their developer and may preempt; best-effort jobs may be
/// preempted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    Te,
    Be,
}

impl JobKind {
    pub fn name(self) -> &'static str {
        match self {
            JobKind::Te => "te",
            JobKind::Be => "be",
        }
    }
}

/// The longest duration or grace period a job may give, in seconds (about 31 years): far past
/// any training job, and small enough that sums of such times stay far below 2⁵³ s, where a
/// double stops counting whole seconds.
pub const MAX_SECONDS: f64 = 1e9;

/// What a user submits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    pub id: String,
    pub kind: JobKind,
    pub demand: Resources,
    /// Seconds the job runs alone (the denominator of its slowdown).
    pub duration_seconds: f64,
    /// Seconds it needs, once told to stop, to save its state (`GP_j`).
    pub grace_period_seconds: f64,
}

impl JobSpec {
    /// Refuses numbers out of range and a job no node could ever hold.
    pub fn validate(&self, capacities: &[Resources]) -> Result<()> {
        let bad = |field: &str, what: &str, v: f64| {
            Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                format!("job.{field}"),
                format!("job {:?}: {field} must be {what}, got {}", self.id, crate::problem::shown(v)),
            ))
        };
        crate::problem::check_job_id(&self.id, "job.id", true)?;
        // Within the contract's range of magnitudes too (`problem::in_range`).
        let in_range = crate::problem::in_range;
        let duration = self.duration_seconds;
        if !(duration > 0.0 && duration <= MAX_SECONDS && in_range(duration)) {
            return bad(
                "duration_seconds",
                "> 0, at least 1e-100 and at most 10⁹ (about 31 years)",
                self.duration_seconds,
            );
        }
        let grace = self.grace_period_seconds;
        if !((0.0..=MAX_SECONDS).contains(&grace) && in_range(grace)) {
            return bad(
                "grace_period_seconds",
                "0, or between 1e-100 and 10⁹ (about 31 years)",
                self.grace_period_seconds,
            );
        }
        if self.demand == Resources::default() {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                "job.demand",
                format!("job {:?} asks for nothing: a job needs a core, memory or a GPU", self.id),
            ));
        }
        if !capacities.iter().any(|c| self.demand.fits_in(c)) {
            // The resource no node has enough of, if one alone is the cause (else the demand).
            let d = self.demand;
            let most = |of: fn(&Resources) -> u32| capacities.iter().map(of).max().unwrap_or(0);
            let field = [
                ("cpus", d.cpus, most(|r| r.cpus)),
                ("memory_gb", d.memory_gb, most(|r| r.memory_gb)),
                ("gpus", d.gpus, most(|r| r.gpus)),
            ]
            .into_iter()
            .find(|&(_, want, most)| want > most)
            .map_or("job.demand".to_string(), |(name, _, _)| format!("job.{name}"));
            return Err(ArbiterError::at(
                ErrorCode::JobCannotRun,
                field,
                format!("job {:?} asks for {} and no node has that much", self.id, self.demand),
            ));
        }
        Ok(())
    }
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// In the queue (or, for a TE job, waiting for room).
    Queued,
    /// Running on `node` since `since`.
    Running {
        node: NodeIndex,
        since: f64,
    },
    /// Preempted at `since`, saving its state on `node` until `until`; then it returns to the head
    /// of the queue. `for_job`: the TE job it makes room for.
    Grace {
        node: NodeIndex,
        since: f64,
        until: f64,
        for_job: JobIndex,
    },
    /// A TE job that will start on `node` at `until`, when the grace periods of its victims there
    /// end. `held`: what it holds there meanwhile (free resources taken at the decision, then each
    /// victim's demand as its grace period ends), at least its demand by `until`.
    Reserved {
        node: NodeIndex,
        until: f64,
        held: Resources,
    },
    Finished,
}

/// A job and its history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    pub spec: JobSpec,
    pub arrival: f64,
    pub phase: Phase,
    /// Seconds of its duration done before the current run (progress stops at the preemption
    /// signal: the grace period saves state, it does not train).
    pub executed_seconds: f64,
    pub preemptions: u32,
    pub first_start: Option<f64>,
    pub finish: Option<f64>,
    /// Every preemption's signal time and the time the job started again (None: not yet).
    pub interruptions: Vec<(f64, Option<f64>)>,
    /// A TE job: passes in which it fit nowhere and its policy preempted nothing for it.
    pub declined: u32,
    /// A TE job: BE jobs were preempted to make room for it.
    pub made_room: bool,
    /// Counts runs, so a completion foreseen for an earlier run is recognized as stale.
    pub(super) run: u32,
}

impl Job {
    pub fn new(spec: JobSpec, arrival: f64) -> Job {
        Job {
            spec,
            arrival,
            phase: Phase::Queued,
            executed_seconds: 0.0,
            preemptions: 0,
            first_start: None,
            finish: None,
            interruptions: Vec::new(),
            declined: 0,
            made_room: false,
            run: 0,
        }
    }

    pub fn kind(&self) -> JobKind {
        self.spec.kind
    }

    /// Seconds of work left at `now`.
    pub fn remaining_at(&self, now: f64) -> f64 {
        let running = match self.phase {
            Phase::Running { since, .. } => now - since,
            _ => 0.0,
        };
        (self.spec.duration_seconds - self.executed_seconds - running).max(0.0)
    }

    /// JCT over the time it runs alone; None until it finishes.
    pub fn slowdown(&self) -> Option<f64> {
        self.finish.map(|f| (f - self.arrival) / self.spec.duration_seconds)
    }

    /// The node whose resources the job holds, if any.
    pub fn node(&self) -> Option<NodeIndex> {
        match self.phase {
            Phase::Running { node, .. } | Phase::Grace { node, .. } | Phase::Reserved { node, .. } => Some(node),
            Phase::Queued | Phase::Finished => None,
        }
    }
}
