//! One cluster's state under the mechanism: active jobs, their allocation, time received since the
//! last reset, carried deficits and leases; and the events that change it.

use super::cluster::{Cluster, Worker};
use super::colocation::PairState;
use super::composed::Composed;
use super::configurations::Schedule;
use super::metrics::{Completed, Usage};
use super::placement::Lease;
use super::priority;
use super::share::Share;
use super::{Config, JobId};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::policies::PolicyKind;
use crate::problem::{Job, Matrix, Problem, WorkerType};
use std::borrow::Cow;
use std::collections::HashMap;

/// The most GPUs a session tracks one by one: 2^20, ten times the largest clusters built. Each
/// GPU costs a few dozen bytes per copy of the session, and every event works on a copy: at 2^24
/// one small request made a session of half a gigabyte.
pub const MAX_GPUS: u32 = 1 << 20;

#[derive(Debug, Clone)]
pub(super) struct JobState {
    pub(super) id: JobId,
    pub(super) job: Job,
    /// Measured steps/s per type, smoothed by the progress reports.
    pub(super) throughput: Vec<f64>,
    /// Placement sensitivity: steps/s per type with its GPUs spread over servers (0: not given).
    pub(super) unconsolidated: Vec<f64>,
    /// The job alone: `X[m][·]` and the time it ran alone.
    pub(super) share: Share,
    pub(super) added_at: f64,
    /// The GPUs the job held in the last round, alone or in a pair.
    pub(super) lease: Option<Lease>,
    /// Positions in `Session::pairs` of the colocations the job is in.
    pub(super) pairs: Vec<u32>,
    /// Per type, the estimate the job's row started from there (kept for comparison), if any.
    pub(super) estimate: Vec<Option<f64>>,
    /// Per type, whether the row there is still the estimate (no progress measured yet).
    pub(super) unmeasured: Vec<bool>,
    /// Profile the job: run it once on each type where its row is still an estimate.
    pub(super) profiling: bool,
    /// Per type, whether the job has run there alone.
    pub(super) ran_on: Vec<bool>,
    /// Session time of the first round it ran in.
    pub(super) first_run: Option<f64>,
    /// Times it was checkpointed and restarted: preempted, or moved to other GPUs.
    pub(super) preemptions: u32,
    /// Metrics it reported, latest value of each.
    pub(super) metrics: std::collections::BTreeMap<String, f64>,
    /// The highest sequence number its progress reports carried (`Session::new_report`).
    pub(super) report_sequence: Option<u64>,
}

impl JobState {
    /// The type a profiling job runs on next: the first whose throughput is still an estimate
    /// and where it has not run yet.
    pub(super) fn profile_next(&self) -> Option<usize> {
        if !self.profiling {
            return None;
        }
        (0..self.unmeasured.len()).find(|&w| self.unmeasured[w] && !self.ran_on[w] && self.throughput[w] > 0.0)
    }
}

/// One cluster under the round-based mechanism.
///
/// Events (`add_job`, `remove_job`, `add_colocation`, `report_progress`, `update_throughput`,
/// `worker_failed`, `worker_returned`) change the state; a change of the job set, the colocations,
/// the cluster or the throughputs makes the allocation stale, and the next `next_round` recomputes it with the session's policy
/// unless `Config::min_solve_interval` has not passed since the last solve. A recomputation resets
/// the time received and carries each job's deficit over, bounded.
#[derive(Debug, Clone)]
pub struct Session {
    /// Everything of the policy's problem that is not per job (policy, nominal cluster, entities),
    /// with no jobs: each solve fills in the current jobs and the healthy GPU counts.
    pub(super) base: Problem,
    pub(super) config: Config,
    pub(super) cluster: Cluster,
    pub(super) jobs: Vec<JobState>,
    pub(super) index: HashMap<JobId, usize>,
    /// Pairs of active jobs that may share GPUs (space sharing), in the order of `Y`'s rows.
    pub(super) pairs: Vec<PairState>,
    /// A pair's tenants, in the order it was added, to its position in `pairs`.
    pub(super) pair_index: HashMap<[JobId; 2], usize>,
    pub(super) time: f64,
    /// Session time since the last reset: what received fractions are fractions of.
    pub(super) elapsed: f64,
    pub(super) rounds: u64,
    pub(super) stale: bool,
    pub(super) last_solve: Option<f64>,
    /// With a composition of list-policy stages, the pipeline that decides the rounds.
    pub(super) composed: Option<Composed>,
    /// `Mode::Configurations`: the current allocation's decomposition, or why there is none to
    /// follow; `None` until a round needs it and after every new allocation.
    pub(super) schedule: Option<Schedule>,
    /// What the realizable solve of the current allocation did (`Problem::realizable`).
    pub(super) realized: Option<super::allocation::Realized>,
    /// The tie-break that followed the current allocation's optimum, when a solve made it.
    pub(super) tie_break: Option<crate::solver::tie_break::TieBreak>,
    /// Jobs removed so far (for the metrics).
    pub(super) completed: Vec<Completed>,
    pub(super) usage: Usage,
}

pub(super) fn unknown_job(id: &str) -> ArbiterError {
    ArbiterError::at(
        ErrorCode::UnknownJob,
        "job",
        format!("unknown job {}: the session has no active job with this id", crate::error::quoted(id)),
    )
}

pub(super) fn invalid(field: impl Into<String>, message: String) -> ArbiterError {
    ArbiterError::at(ErrorCode::InvalidNumber, field, message)
}

/// The cluster a session tracks GPU by GPU: at least one worker type, unique non-empty names,
/// whole GPU counts, servers of at least one GPU, and at most [`MAX_GPUS`] GPUs in all.
fn check_cluster(worker_types: &[WorkerType]) -> Result<()> {
    if worker_types.is_empty() {
        return Err(ArbiterError::at(
            ErrorCode::MissingField,
            "cluster.worker_types",
            "the cluster needs at least one worker type",
        ));
    }
    for (w, wt) in worker_types.iter().enumerate() {
        let field = |f: &str| format!("cluster.worker_types.{}.{f}", wt.name);
        if wt.name.is_empty() || worker_types[..w].iter().any(|v| v.name == wt.name) {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "cluster.worker_types",
                format!("worker type names must be unique and non-empty: {:?}", wt.name),
            ));
        }
        if !(wt.count.is_finite() && wt.count >= 0.0 && wt.count.fract() == 0.0) || wt.count > u32::MAX as f64 {
            return Err(invalid(field("count"), format!("a GPU count must be a whole number ≥ 0, got {}", wt.count)));
        }
        if wt.gpus_per_server == 0 {
            return Err(invalid(field("gpus_per_server"), "gpus_per_server must be at least 1".into()));
        }
    }
    let total: f64 = worker_types.iter().map(|w| w.count).sum();
    if total > MAX_GPUS as f64 {
        return Err(ArbiterError::at(
            ErrorCode::Unsupported,
            "cluster.worker_types",
            format!("the mechanism tracks every GPU and takes at most {MAX_GPUS}; this cluster has {total}"),
        ));
    }
    Ok(())
}

impl Session {
    /// An empty session on a cluster of `worker_types`, run with `policy` (with no entities:
    /// a `hierarchical` session comes from `from_problem`).
    pub fn new(
        policy: PolicyKind,
        heterogeneity_aware: bool,
        worker_types: Vec<WorkerType>,
        config: Config,
    ) -> Result<Session> {
        Session::with_base(Problem::empty(policy, heterogeneity_aware, worker_types), config)
    }

    fn with_base(base: Problem, config: Config) -> Result<Session> {
        config.validate()?;
        let worker_types = &base.worker_types;
        check_cluster(worker_types)?;
        // Every job of a hierarchical session names an entity: without any, none could be added.
        if base.policy == PolicyKind::Hierarchical && base.entities.is_empty() {
            return Err(ArbiterError::at(
                ErrorCode::MissingField,
                "entities",
                "hierarchical shares the cluster among entities, and every job names one: give the session's entities",
            ));
        }
        Ok(Session {
            cluster: Cluster::new(worker_types),
            base,
            config,
            jobs: Vec::new(),
            index: HashMap::new(),
            pairs: Vec::new(),
            pair_index: HashMap::new(),
            time: 0.0,
            elapsed: 0.0,
            rounds: 0,
            stale: true,
            last_solve: None,
            composed: None,
            schedule: None,
            realized: None,
            tie_break: None,
            completed: Vec::new(),
            usage: Usage::default(),
        })
    }

    /// A session holding a validated problem's cluster and jobs (and, with space sharing, its
    /// colocations), with its policy; the allocation is solved by the first round (or
    /// `recompute_allocation`).
    pub fn from_problem(problem: &Problem, config: Config) -> Result<Session> {
        Session::from_problem_with(problem, config, None)
    }

    /// A session of a problem's cluster and jobs whose rounds a composition of list-policy stages
    /// decides (`crate::scheduling::Pipeline`); the problem's policy is never solved. Rounds
    /// place whole jobs (`Mode::Rounds`); space sharing is Gavel's mechanism's. Gavel's own
    /// composition (an LP policy with the default stages) gives `from_problem`'s session, with
    /// that policy.
    pub fn composed(
        problem: &Problem,
        config: Config,
        composition: &crate::scheduling::Composition,
    ) -> Result<Session> {
        // Gavel's composition (an LP policy, the default stages) is the mechanism's session.
        if let (true, crate::scheduling::SchedulingSpec::Allocation(policy)) =
            (composition.is_gavel(), &composition.scheduling)
        {
            return Session::from_problem(&Problem { policy: *policy, ..problem.clone() }, config);
        }
        if config.mode != super::Mode::Rounds {
            return Err(ArbiterError::at(
                ErrorCode::Unsupported,
                "mode",
                "a composition of list-policy stages places whole jobs every round; ideal and configurations modes are Gavel's mechanism's",
            ));
        }
        if problem.space_sharing {
            return Err(ArbiterError::at(
                ErrorCode::Unsupported,
                "space_sharing",
                "space sharing is Gavel's mechanism's; list-policy compositions place one job per GPU",
            ));
        }
        // Before the pipeline lays out every GPU.
        check_cluster(&problem.worker_types)?;
        let composed = Composed::new(composition, &problem.worker_types, &problem.entities)?;
        Session::from_problem_with(problem, config, Some(composed))
    }

    fn from_problem_with(problem: &Problem, config: Config, composed: Option<Composed>) -> Result<Session> {
        let types = problem.num_types();
        let base = Problem {
            space_sharing: false,
            jobs: Vec::new(),
            measured: Matrix::zeros(0, types),
            throughput: Matrix::zeros(0, types),
            colocations: Vec::new(),
            job_entity: Vec::new(),
            // Each job's row is kept with the job: jobs come and go.
            unconsolidated: None,
            ..problem.clone()
        };
        let mut session = Session::with_base(base, config)?;
        session.composed = composed;
        for (m, job) in problem.jobs.iter().enumerate() {
            let unconsolidated = problem.unconsolidated.as_ref().map(|u| u.row(m));
            // A job's fields as the request names them: `job.x` is `jobs[m].x` there.
            session
                .add_job_spread(job.clone(), problem.measured.row(m), unconsolidated)
                .map_err(|e| e.field_renamed("job", &format!("jobs[{m}]")))?;
        }
        if problem.space_sharing {
            for c in &problem.colocations {
                let [a, b] = c.jobs.map(|m| problem.jobs[m].id.as_str());
                session.add_colocation(a, b, &c.throughput)?;
            }
        }
        Ok(session)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn policy(&self) -> PolicyKind {
        self.base.policy
    }

    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Session time in seconds: the rounds run so far times their length.
    pub fn time(&self) -> f64 {
        self.time
    }

    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Session time since the last reset of received time.
    pub fn elapsed_since_reset(&self) -> f64 {
        self.elapsed
    }

    /// Whether the next round will recompute the allocation (if the interval allows).
    pub fn is_stale(&self) -> bool {
        self.stale && self.composed.is_none()
    }

    pub fn num_jobs(&self) -> usize {
        self.jobs.len()
    }

    /// Active job ids, in the session's order (the order of allocation rows).
    /// With `Mode::Configurations`, why the last round did not follow a decomposition (the rounds
    /// then choose jobs by priority); `None` when it did, or in another mode.
    pub fn decomposition_skipped(&self) -> Option<&str> {
        match self.schedule.as_ref().map(|s| &s.plan) {
            Some(Err(why)) if self.config.mode == super::Mode::Configurations => Some(why),
            _ => None,
        }
    }

    pub fn job_ids(&self) -> impl Iterator<Item = &JobId> {
        self.jobs.iter().map(|j| &j.id)
    }

    pub(super) fn slot(&self, id: &str) -> Result<&JobState> {
        self.index.get(id).map(|&i| &self.jobs[i]).ok_or_else(|| unknown_job(id))
    }

    fn slot_mut(&mut self, id: &str) -> Result<&mut JobState> {
        match self.index.get(id) {
            Some(&i) => Ok(&mut self.jobs[i]),
            None => Err(unknown_job(id)),
        }
    }

    /// The job as the policy sees it (steps remaining and time elapsed kept current).
    pub fn job(&self, id: &str) -> Result<&Job> {
        Ok(&self.slot(id)?.job)
    }

    /// `X[m][·]`, per worker type: the job's time alone (time in a pair is the pair's, `Y`). A
    /// composed session's list policies decide round by round, not by fractions of time: there
    /// it is the current round's, 1 on the type the job runs on and 0 elsewhere or while it waits.
    pub fn allocation(&self, id: &str) -> Result<Cow<'_, [f64]>> {
        let slot = self.slot(id)?;
        if self.composed.is_none() {
            return Ok(Cow::Borrowed(&slot.share.allocation));
        }
        let mut row = vec![0.0; self.cluster.num_types()];
        if let Some(lease) = &slot.lease {
            row[lease.worker_type] = 1.0;
        }
        Ok(Cow::Owned(row))
    }

    /// Seconds run alone on each worker type since the last reset.
    pub fn received(&self, id: &str) -> Result<&[f64]> {
        Ok(&self.slot(id)?.share.received)
    }

    /// Seconds run alone on each worker type since the job was added.
    pub fn total_received(&self, id: &str) -> Result<&[f64]> {
        Ok(&self.slot(id)?.share.total_received)
    }

    /// Fraction of session time since the job was added that it ran alone on each type (0 before
    /// its first round).
    pub fn received_fraction(&self, id: &str) -> Result<Vec<f64>> {
        let j = self.slot(id)?;
        Ok(j.share.received_fraction(self.time - j.added_at))
    }

    /// Seconds owed alone on each type: carried deficit + `X · elapsed` − received (negative:
    /// ahead).
    pub fn deficit(&self, id: &str) -> Result<Vec<f64>> {
        Ok(self.slot(id)?.share.deficit(self.elapsed))
    }

    /// The job's current priority alone on each type, in seconds: how far behind its allocation it
    /// would be at the end of the next round if it did not run in it, `deficit + X·R` (see
    /// `priority::priority`). Positive: due there.
    pub fn priorities(&self, id: &str) -> Result<Vec<f64>> {
        Ok(self.slot(id)?.share.priorities(self.elapsed, self.config.round_seconds))
    }

    /// Smoothed measured steps/s on each type.
    pub fn throughput(&self, id: &str) -> Result<&[f64]> {
        Ok(&self.slot(id)?.throughput)
    }

    /// The GPUs the job held in the last round, if it ran.
    pub fn lease(&self, id: &str) -> Result<Option<&Lease>> {
        Ok(self.slot(id)?.lease.as_ref())
    }

    /// Worker types where the job has allocation alone but cannot be placed: its scale factor
    /// exceeds the healthy GPUs there, or it cannot run there. Rounds never grant that share.
    pub fn unplaceable_types(&self, id: &str) -> Result<Vec<usize>> {
        let j = self.slot(id)?;
        Ok((0..self.cluster.num_types()).filter(|&w| j.share.allocation[w] > 0.0 && !self.placeable(j, w)).collect())
    }

    pub(super) fn placeable(&self, j: &JobState, w: usize) -> bool {
        priority::placeable(j.job.scale_factor, j.throughput[w], self.cluster.healthy_count(w))
    }

    /// Healthy GPUs per type.
    pub(super) fn capacity(&self) -> Vec<u32> {
        (0..self.cluster.num_types()).map(|w| self.cluster.healthy_count(w)).collect()
    }

    /// The job has allocation alone on a type it cannot be placed on.
    pub(super) fn unplaceable(&self, j: &JobState) -> bool {
        (0..self.cluster.num_types()).any(|w| j.share.allocation[w] > 0.0 && !self.placeable(j, w))
    }

    // ---- events ----

    /// A job arrives, with its measured steps/s per worker type (in the cluster's type order; 0:
    /// cannot run there). It has no allocation, and does not run, until the next recomputation.
    pub fn add_job(&mut self, job: Job, throughput: &[f64]) -> Result<()> {
        self.add_job_spread(job, throughput, None)
    }

    /// [`Session::add_job`] with the job's steps/s per type when its GPUs are spread over
    /// servers (placement sensitivity; 0 where not given), for the policies that model it.
    pub fn add_job_spread(&mut self, job: Job, throughput: &[f64], unconsolidated: Option<&[f64]>) -> Result<()> {
        self.validate_job(&job, throughput)?;
        let types = self.cluster.num_types();
        if let Some(row) = unconsolidated {
            if row.len() != types || row.iter().any(|v| !v.is_finite() || *v < 0.0) {
                return Err(ArbiterError::at(
                    ErrorCode::InvalidNumber,
                    "job.unconsolidated_throughput",
                    format!("expected {types} finite, non-negative steps/s, one per worker type"),
                ));
            }
        }
        let id: JobId = job.id.as_str().into();
        if let Some(composed) = self.composed.as_mut() {
            composed.submit(&id, &job, throughput)?;
        }
        self.index.insert(id.clone(), self.jobs.len());
        self.jobs.push(JobState {
            id,
            throughput: throughput.to_vec(),
            // One GPU is always consolidated: only multi-GPU jobs have the second column.
            unconsolidated: unconsolidated
                .filter(|_| job.scale_factor > 1)
                .map_or_else(|| vec![0.0; types], <[f64]>::to_vec),
            job,
            share: Share::new(types),
            added_at: self.time,
            lease: None,
            pairs: Vec::new(),
            estimate: vec![None; types],
            unmeasured: vec![false; types],
            profiling: false,
            ran_on: vec![false; types],
            first_run: None,
            preemptions: 0,
            metrics: std::collections::BTreeMap::new(),
            report_sequence: None,
        });
        self.stale = true;
        Ok(())
    }

    fn validate_job(&self, job: &Job, throughput: &[f64]) -> Result<()> {
        let id = &job.id;
        let field = |f: &str| format!("job.{f}");
        crate::problem::check_job_id(id, field("id"), true)?;
        if self.index.contains_key(id.as_str()) {
            return Err(ArbiterError::at(
                ErrorCode::DuplicateJobId,
                field("id"),
                format!("job id {id:?} is already active in the session"),
            ));
        }
        if job.scale_factor < 1 {
            return Err(ArbiterError::at(
                ErrorCode::InvalidScaleFactor,
                field("scale_factor"),
                "a scale factor must be at least 1 (the GPUs the job occupies)",
            ));
        }
        let refusal =
            |v: f64, what: &str| crate::problem::refusal(v, 0.0, what).map(|why| format!("job {id:?}: {why}"));
        if let Some(why) = crate::problem::positive_refusal(job.weight, "a weight") {
            return Err(invalid(field("weight"), format!("job {id:?}: {why}")));
        }
        let non_negative = [
            ("time_elapsed", Some(job.time_elapsed)),
            ("isolated_time_elapsed", Some(job.isolated_time_elapsed)),
            ("steps_remaining", job.steps_remaining),
            ("slo_seconds", job.slo_seconds),
        ];
        for (f, v) in non_negative {
            if let Some(why) = v.and_then(|v| refusal(v, f)) {
                return Err(invalid(field(f), why));
            }
        }
        if !job.arrival.is_finite() {
            return Err(invalid(field("arrival"), format!("job {id:?}: arrival must be finite, got {}", job.arrival)));
        }
        if self.base.policy.needs_steps_remaining() && job.steps_remaining.is_none() {
            return Err(ArbiterError::at(
                ErrorCode::MissingField,
                field("steps_remaining"),
                format!("{} needs steps_remaining on every job", self.base.policy.name()),
            ));
        }
        match &job.entity {
            Some(name) if self.entity(name).is_none() => {
                return Err(ArbiterError::at(
                    ErrorCode::InvalidEntity,
                    field("entity"),
                    format!("job {id:?}: entity {name:?} is not in the session's entities"),
                ))
            }
            None if self.base.policy == PolicyKind::Hierarchical => {
                return Err(ArbiterError::at(
                    ErrorCode::MissingField,
                    field("entity"),
                    "hierarchical needs an entity on every job",
                ))
            }
            _ => {}
        }
        self.validate_throughput(id, throughput)?;
        let runnable =
            (0..self.cluster.num_types()).any(|w| throughput[w] > 0.0 && self.base.worker_types[w].count > 0.0);
        if !runnable {
            return Err(ArbiterError::at(
                ErrorCode::JobCannotRun,
                field("throughput"),
                format!("job {id:?} has no positive throughput on any worker type with GPUs"),
            ));
        }
        Ok(())
    }

    pub(super) fn entity(&self, name: &str) -> Option<usize> {
        self.base.entities.iter().position(|e| e.name == name)
    }

    fn validate_throughput(&self, id: &str, throughput: &[f64]) -> Result<()> {
        let types = self.cluster.num_types();
        if throughput.len() != types {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "job.throughput",
                format!("job {id:?}: {} throughputs given, the cluster has {types} worker types", throughput.len()),
            ));
        }
        for (w, &t) in throughput.iter().enumerate() {
            if let Some(why) = crate::problem::refusal(t, 0.0, "a throughput") {
                return Err(invalid(
                    format!("job.throughput.{}", self.cluster.type_name(w)),
                    format!("job {id:?}: {why}"),
                ));
            }
        }
        Ok(())
    }

    /// A job finished or was withdrawn: it leaves at once, with its colocations, and its GPUs are
    /// free next round.
    pub fn remove_job(&mut self, id: &str) -> Result<Job> {
        let i = *self.index.get(id).ok_or_else(|| unknown_job(id))?;
        let removed = self.jobs.remove(i);
        self.index.remove(id);
        for (k, j) in self.jobs.iter().enumerate().skip(i) {
            *self.index.get_mut(&j.id).expect("every active job is indexed") = k;
        }
        self.drop_colocations_of(&removed.id);
        if let Some(composed) = self.composed.as_mut() {
            composed.remove(id, self.time);
        }
        self.completed.push(Completed {
            added_at: removed.added_at,
            left: self.time,
            first_run: removed.first_run,
            preemptions: removed.preemptions,
        });
        self.stale = true;
        Ok(removed.job)
    }

    /// Refuses a progress report's `steps` or `throughput` out of the contract's range, naming
    /// the field, as `report_progress` does (a service checks a retried report with it too).
    pub fn check_progress(id: &str, steps: f64, throughput: f64) -> Result<()> {
        for (f, v) in [("steps", steps), ("throughput", throughput)] {
            if let Some(why) = crate::problem::refusal(v, 0.0, f) {
                return Err(invalid(f, format!("job {id:?}: {why}")));
            }
        }
        Ok(())
    }

    /// The job ran `steps` steps on `worker_type`, measured at `throughput` steps/s: its steps
    /// remaining go down, and the measurement is folded into its throughput as an exponential
    /// moving average. A move beyond `Config::resolve_threshold` makes the allocation stale.
    pub fn report_progress(&mut self, id: &str, worker_type: usize, steps: f64, throughput: f64) -> Result<()> {
        let types = self.cluster.num_types();
        let smoothing = self.config.throughput_smoothing;
        let threshold = self.config.resolve_threshold;
        if worker_type >= types {
            return Err(ArbiterError::at(
                ErrorCode::UnknownWorkerType,
                "worker_type",
                format!("worker type index {worker_type} is not in the cluster's {types} types"),
            ));
        }
        Session::check_progress(id, steps, throughput)?;
        let j = self.slot_mut(id)?;
        if let Some(r) = j.job.steps_remaining.as_mut() {
            *r = (*r - steps).max(0.0);
        }
        let old = j.throughput[worker_type];
        // The first measurement where the row held an estimate replaces it: measured wins.
        let estimated = std::mem::take(&mut j.unmeasured[worker_type]);
        let new = if old > 0.0 && !estimated { smoothing * throughput + (1.0 - smoothing) * old } else { throughput };
        j.throughput[worker_type] = new;
        if (old > 0.0) != (new > 0.0) || (new - old).abs() > threshold * old {
            self.stale = true;
        }
        self.mirror(id);
        Ok(())
    }

    /// Replaces one job's throughput row (e.g. from a new profile); the allocation becomes stale.
    pub fn update_throughput(&mut self, id: &str, throughput: &[f64]) -> Result<()> {
        self.slot(id)?;
        self.validate_throughput(id, throughput)?;
        if !throughput.iter().any(|&t| t > 0.0) {
            return Err(ArbiterError::at(
                ErrorCode::JobCannotRun,
                "job.throughput",
                format!("job {id:?} would have no positive throughput on any worker type"),
            ));
        }
        let slot = self.slot_mut(id)?;
        slot.throughput.copy_from_slice(throughput);
        slot.unmeasured.fill(false);
        self.stale = true;
        self.mirror(id);
        Ok(())
    }

    /// Marks job `id`'s throughput on `worker_type` as an estimate (its current value): the first
    /// progress measured there replaces it, and the estimate stays readable (`estimates`).
    pub fn mark_estimated(&mut self, id: &str, worker_type: usize) -> Result<()> {
        let slot = self.slot_mut(id)?;
        let Some(&value) = slot.throughput.get(worker_type) else {
            return Err(ArbiterError::at(
                ErrorCode::UnknownWorkerType,
                "worker_type",
                format!("no worker type {worker_type}"),
            ));
        };
        slot.estimate[worker_type] = Some(value);
        slot.unmeasured[worker_type] = true;
        Ok(())
    }

    /// Profiles job `id`: before anything its allocation asks for, it runs one round on each type
    /// where its throughput is still an estimate (as Gavel profiles new jobs), so measured
    /// progress replaces those estimates.
    pub fn mark_for_profiling(&mut self, id: &str) -> Result<()> {
        self.slot_mut(id)?.profiling = true;
        Ok(())
    }

    /// The types job `id` will still be profiled on.
    pub fn profiling_pending(&self, id: &str) -> Result<Vec<usize>> {
        let slot = self.slot(id)?;
        Ok(match slot.profile_next() {
            None => Vec::new(),
            Some(_) => (0..slot.unmeasured.len())
                .filter(|&w| slot.unmeasured[w] && !slot.ran_on[w] && slot.throughput[w] > 0.0)
                .collect(),
        })
    }

    /// Per type: the estimate job `id`'s row started from (if any), and whether it still holds it.
    pub fn estimates(&self, id: &str) -> Result<Vec<(Option<f64>, bool)>> {
        let slot = self.slot(id)?;
        Ok(slot.estimate.iter().copied().zip(slot.unmeasured.iter().copied()).collect())
    }

    /// Replaces the whole throughput matrix, rows in `job_ids` order; all or nothing.
    pub fn update_throughput_matrix(&mut self, throughput: &Matrix) -> Result<()> {
        self.check_shape(throughput, "throughput")?;
        for (m, j) in self.jobs.iter().enumerate() {
            self.validate_throughput(&j.id, throughput.row(m))?;
        }
        for (m, j) in self.jobs.iter_mut().enumerate() {
            j.throughput.copy_from_slice(throughput.row(m));
            j.unmeasured.fill(false);
        }
        let ids: Vec<JobId> = self.jobs.iter().map(|j| j.id.clone()).collect();
        for id in ids {
            self.mirror(&id);
        }
        self.stale = true;
        Ok(())
    }

    pub(super) fn check_shape(&self, x: &Matrix, what: &str) -> Result<()> {
        if x.rows() != self.jobs.len() || x.cols() != self.cluster.num_types() {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                what,
                format!(
                    "a {what} of {}×{} for a session of {} jobs and {} worker types",
                    x.rows(),
                    x.cols(),
                    self.jobs.len(),
                    self.cluster.num_types()
                ),
            ));
        }
        Ok(())
    }

    /// A GPU (`v100/2/1`) or a whole server (`v100/2`) failed: it is never used until it returns.
    pub fn worker_failed(&mut self, name: &str) -> Result<()> {
        let worker = self.cluster.worker(name)?;
        self.set_health(worker, false)
    }

    /// A failed GPU or server is back.
    pub fn worker_returned(&mut self, name: &str) -> Result<()> {
        let worker = self.cluster.worker(name)?;
        self.set_health(worker, true)
    }

    /// Whether the GPU or server `name` is already all `healthy` (or all failed), so that
    /// `worker_returned` (`worker_failed`) would change nothing.
    pub fn worker_health_is(&self, name: &str, healthy: bool) -> Result<bool> {
        let worker = self.cluster.check(self.cluster.worker(name)?)?;
        Ok(self.cluster.health_is(worker, healthy))
    }

    /// `worker_failed` / `worker_returned` by index.
    pub fn set_health(&mut self, worker: Worker, healthy: bool) -> Result<()> {
        let worker = self.cluster.check(worker)?;
        if self.cluster.set_health(worker, healthy) {
            self.stale = true;
        }
        self.composed_health(worker, healthy)
    }

    /// Metrics job `id` reported with its progress (`loss`, `iteration_seconds`, ...), kept for
    /// its view; a composition's stages read them (Optimus its loss curve).
    pub fn report_metrics(&mut self, id: &str, metrics: &std::collections::BTreeMap<String, f64>) -> Result<()> {
        if let Some((k, v)) = metrics.iter().find(|(_, v)| !v.is_finite()) {
            return Err(invalid(
                format!("metrics.{k}"),
                format!("job {id:?}: a metric must be a finite number, got {v}"),
            ));
        }
        let slot = self.slot_mut(id)?;
        slot.metrics.extend(metrics.iter().map(|(k, v)| (k.clone(), *v)));
        if let Some(composed) = self.composed.as_mut() {
            composed.report_metrics(id, metrics);
        }
        Ok(())
    }

    /// The metrics job `id` reported, latest value of each.
    pub fn reported_metrics(&self, id: &str) -> Result<&std::collections::BTreeMap<String, f64>> {
        Ok(&self.slot(id)?.metrics)
    }

    /// Whether job `id`'s progress report numbered `sequence` is new: above the number of every
    /// report it counted before, which it then records. A reporter numbers each job's reports in
    /// increasing order and sends one at a time, repeating the number when it retries a report
    /// whose answer it did not get; the repeat is not new, so `report_progress` is not called
    /// twice for the same steps (steps are counted since the last report).
    pub fn new_report(&mut self, id: &str, sequence: u64) -> Result<bool> {
        let slot = self.slot_mut(id)?;
        if slot.report_sequence.is_some_and(|last| sequence <= last) {
            return Ok(false);
        }
        slot.report_sequence = Some(sequence);
        Ok(true)
    }

    /// The highest sequence number job `id`'s progress reports carried (`None`: no numbered report).
    pub fn report_sequence(&self, id: &str) -> Result<Option<u64>> {
        Ok(self.slot(id)?.report_sequence)
    }

    /// Copies job `id`'s steps left and throughputs into the pipeline of a composed session.
    fn mirror(&mut self, id: &str) {
        let Some(&i) = self.index.get(id) else { return };
        let j = &self.jobs[i];
        if let Some(composed) = self.composed.as_mut() {
            composed.refresh(id, j.job.steps_remaining, &j.throughput);
        }
    }
}
