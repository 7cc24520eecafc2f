//! Scheduling over time: allocations and job state become rounds of placements. The pipeline
//! (Blox, EuroSys'24): one round is admission → scheduling → placement → preemption, each stage a
//! small trait with the job and cluster state in and a decision out; the simulator (`simulation`)
//! and a live cluster drive the same `Pipeline`. Gavel's round-based mechanism (`mechanism`) is
//! one composition of it. Reads allocations from the solver layer; never builds an LP itself, and
//! knows nothing of HTTP or storage.
//!
//! - [`mechanism`]: Gavel's round-based mechanism (sessions, priorities, leases, placement).
//! - [`state`]: `JobState` and `ClusterState`.
//! - [`admission`]: `accept_all`, `accept_x`.
//! - [`policies`]: the list policies (FIFO, FIFO + priority, LAS, Tiresias, SRTF, Optimus, Themis).
//! - [`ltgf`]: Astraea's two-phase scheduler over long-term GPU-time fairness, by tenant then job.
//! - [`fitgpp`]: FitGpp's selective preemption of best-effort jobs for trial-and-error jobs, on
//!   nodes of CPU cores, memory and GPUs, event by event (beside the rounds, not one of their stages).
//! - [`oasis`]: OASiS's online admission with resource prices and elastic worker/parameter-server
//!   schedules over slots, on two pools of multi-resource servers (beside the rounds).
//! - [`placement`]: first-free, consolidated, random, profile-guided, skew, bandwidth-aware.
//! - [`preemption`]: lease renewal every round (with a restart overhead), leases of a fixed term,
//!   or run-to-completion.
//! - [`composition`]: stage names ↔ stages, and Gavel's composition (an LP policy run by
//!   `crate::mechanism`, whose results it keeps exactly).
//! - [`simulation`]: a trace through a composition on a virtual clock.
//! - [`synthesizer`]: every N rounds, the candidate compositions simulated from the live state in
//!   parallel, and a switch to the best for a metric (Blox §5.2).
//!
//! See `formulations/pipeline.md`.

pub mod admission;
pub mod composition;
pub mod fitgpp;
pub mod ltgf;
pub mod mechanism;
pub mod oasis;
pub mod placement;
pub mod policies;
pub mod preemption;
pub mod simulation;
pub mod state;
pub mod synthesizer;
pub mod workload;

pub use composition::{Composition, CompositionRequest, SchedulingSpec};
pub use state::{ClusterState, GpuIndex, JobIndex, JobState, Presence, Tenant};

use crate::error::{ArbiterError, ErrorCode, Result};
use admission::Admission;
use placement::Placement;
use policies::Scheduling;
use preemption::Preemption;

/// What one round decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoundDecision {
    /// Jobs admitted this round.
    pub admitted: Vec<JobIndex>,
    /// The scheduling stage's list, highest priority first.
    pub order: Vec<JobIndex>,
    /// Running jobs whose lease was renewed (same GPUs).
    pub renewed: Vec<JobIndex>,
    /// Jobs that start (or resume) on newly placed GPUs.
    pub launched: Vec<JobIndex>,
    /// Running jobs suspended by the round.
    pub suspended: Vec<JobIndex>,
}

impl RoundDecision {
    /// Every job that runs this round.
    pub fn running(&self) -> impl Iterator<Item = JobIndex> + '_ {
        self.renewed.iter().chain(&self.launched).copied()
    }
}

/// One cluster under one composition of list-policy stages.
#[derive(Debug, Clone)]
pub struct Pipeline {
    admission: Box<dyn Admission>,
    scheduling: Box<dyn Scheduling>,
    placement: Box<dyn Placement>,
    preemption: Box<dyn Preemption>,
    composition: Composition,
    /// Every job ever submitted, by `JobIndex`.
    pub jobs: Vec<JobState>,
    pub cluster: ClusterState,
    /// Submitted, not yet admitted, in arrival order.
    waiting: Vec<JobIndex>,
    /// Admitted and unfinished.
    active: Vec<JobIndex>,
    /// The tenants jobs belong to (`JobState::tenant`); one default tenant until set.
    pub tenants: Vec<Tenant>,
    now: f64,
    rounds: u64,
    /// Length of the last round accounted (the lease a round grants without a term).
    last_round_seconds: f64,
    /// A restart overhead for the whole cluster, whatever the preemption stage charges.
    restart_seconds: Option<f64>,
}

impl Pipeline {
    /// A pipeline of `composition`'s list-policy stages on `cluster`; `seed` seeds random
    /// placement. Gavel's composition (an LP policy) runs as `mechanism::Session` instead.
    pub fn new(composition: &Composition, cluster: ClusterState, seed: u64) -> Result<Pipeline> {
        composition.validate()?;
        Ok(Pipeline {
            admission: composition.admission()?,
            scheduling: composition.list_scheduling()?,
            placement: composition.placement(seed)?,
            preemption: composition.preemption()?,
            composition: composition.clone(),
            jobs: Vec::new(),
            cluster,
            waiting: Vec::new(),
            active: Vec::new(),
            tenants: vec![Tenant::new("default", 1.0)],
            now: 0.0,
            rounds: 0,
            last_round_seconds: 0.0,
            restart_seconds: None,
        })
    }

    /// The same state under another composition's stages (the synthesizer's what-if runs).
    pub fn fork(&self, composition: &Composition, seed: u64) -> Result<Pipeline> {
        let mut fork = Pipeline::new(composition, self.cluster.clone(), seed)?;
        fork.jobs = self.jobs.clone();
        fork.waiting = self.waiting.clone();
        fork.active = self.active.clone();
        fork.tenants = self.tenants.clone();
        fork.now = self.now;
        fork.rounds = self.rounds;
        fork.last_round_seconds = self.last_round_seconds;
        fork.restart_seconds = self.restart_seconds;
        Ok(fork)
    }

    /// Swaps every stage for `composition`'s from the next round on; jobs already admitted stay
    /// admitted, running jobs keep their leases unless the new stages suspend them.
    pub fn recompose(&mut self, composition: &Composition, seed: u64) -> Result<()> {
        composition.validate()?;
        self.admission = composition.admission()?;
        self.scheduling = composition.list_scheduling()?;
        self.placement = composition.placement(seed)?;
        self.preemption = composition.preemption()?;
        self.composition = composition.clone();
        Ok(())
    }

    pub fn composition(&self) -> &Composition {
        &self.composition
    }

    pub fn now(&self) -> f64 {
        self.now
    }

    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Admitted, unfinished jobs.
    pub fn active(&self) -> &[JobIndex] {
        &self.active
    }

    /// Submitted jobs the admission stage holds back.
    pub fn waiting(&self) -> &[JobIndex] {
        &self.waiting
    }

    /// GPUs demanded by admitted, unfinished jobs.
    pub fn admitted_demand(&self) -> u64 {
        self.active.iter().map(|&j| self.jobs[j].scale_factor as u64).sum()
    }

    /// Seconds a suspended job loses when it resumes: the cluster's overhead if set
    /// (`set_restart_seconds`), else the preemption stage's (`lease=SECONDS`).
    pub fn restart_seconds(&self) -> f64 {
        self.restart_seconds.unwrap_or_else(|| self.preemption.restart_seconds())
    }

    /// Charges every resumption after a suspension `seconds` of cold start, under any preemption
    /// stage (a checkpoint restore is the cluster's cost, not the rule's). Refuses a number out of
    /// range, and a stage that names its own overhead (`lease=SECONDS`): one overhead, given once.
    /// 0 gives none, so a stage's own overhead stays.
    pub fn set_restart_seconds(&mut self, seconds: f64) -> Result<()> {
        if let Some(why) = crate::problem::refusal(seconds, 0.0, "the restart overhead (seconds)") {
            return Err(ArbiterError::at(ErrorCode::InvalidNumber, "restart_seconds", why));
        }
        if self.preemption.restart_seconds() > 0.0 && seconds > 0.0 {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "restart_seconds",
                format!(
                    "the preemption stage {} already charges a restart overhead; give it once",
                    self.preemption.name()
                ),
            ));
        }
        self.restart_seconds = (seconds > 0.0).then_some(seconds);
        Ok(())
    }

    /// Seconds of this round job `j` spends restarting rather than training: a launch after a
    /// suspension begins a restart of `restart_seconds()`, which runs over into the next rounds
    /// when it is longer than one (a job suspended again mid-restart starts over when it resumes).
    pub fn restart_overhead(&mut self, j: JobIndex, launched: bool, round: f64) -> f64 {
        let restart = self.restart_seconds();
        let job = &mut self.jobs[j];
        if launched && job.suspended {
            job.restart_left = restart;
        }
        let overhead = job.restart_left.min(round);
        job.restart_left -= overhead;
        job.restart_seconds += overhead;
        overhead
    }

    /// Replaces the tenants, `(name, weight)`, weights finite and > 0; jobs name them by index.
    /// The integrals start from zero.
    pub fn set_tenants(&mut self, tenants: &[(String, f64)]) -> Result<()> {
        if tenants.is_empty() {
            return Err(ArbiterError::at(ErrorCode::MissingField, "tenants", "at least one tenant"));
        }
        if let Some((name, w)) = tenants.iter().find(|(_, w)| !(w.is_finite() && *w > 0.0)) {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                "tenants",
                format!("tenant {name:?}: a weight must be a finite number > 0, got {w}"),
            ));
        }
        self.tenants = tenants.iter().map(|(n, w)| Tenant::new(n.clone(), *w)).collect();
        Ok(())
    }

    /// A job arrives; it waits for the admission stage. Refuses numbers out of range and a job
    /// that could never run here.
    pub fn submit(&mut self, job: JobState) -> Result<JobIndex> {
        let invalid = |field: &str, what: &str, v: f64| {
            Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                format!("job.{field}"),
                format!("job {:?}: {field} must be {what}, got {v}", job.id),
            ))
        };
        let numbers = [
            ("arrival", job.arrival, job.arrival.is_finite(), "finite"),
            ("weight", job.weight, job.weight.is_finite() && job.weight > 0.0, "a finite number > 0"),
            (
                "total_steps",
                job.total_steps,
                job.total_steps.is_finite() && job.total_steps > 0.0,
                "a finite number > 0",
            ),
            (
                "remaining_steps",
                job.remaining_steps,
                job.remaining_steps.is_finite() && (0.0..=job.total_steps).contains(&job.remaining_steps),
                "finite, between 0 and total_steps",
            ),
            ("memory_gb", job.memory_gb, job.memory_gb.is_finite() && job.memory_gb >= 0.0, "a finite number ≥ 0"),
        ];
        for (field, v, ok, what) in numbers {
            if !ok {
                return invalid(field, what, v);
            }
        }
        if let Some(&t) = job.throughput.iter().find(|t| !(t.is_finite() && **t >= 0.0)) {
            return invalid("throughput", "finite numbers ≥ 0", t);
        }
        if job.throughput.len() != self.cluster.num_types() {
            return Err(ArbiterError::at(
                ErrorCode::JobCannotRun,
                "job.throughput",
                format!(
                    "job {:?} has {} throughputs for the cluster's {} worker types",
                    job.id,
                    job.throughput.len(),
                    self.cluster.num_types()
                ),
            ));
        }
        // Against every GPU, healthy or not: a job waits out a failure rather than being refused.
        let fits =
            job.throughput.iter().zip(self.cluster.gpus_per_type()).any(|(&t, n)| t > 0.0 && n >= job.scale_factor);
        if job.tenant >= self.tenants.len() {
            return Err(ArbiterError::at(
                ErrorCode::InvalidEntity,
                "job.tenant",
                format!("job {:?}: tenant {} is not among the {} tenants", job.id, job.tenant, self.tenants.len()),
            ));
        }
        if job.scale_factor == 0 || !fits {
            let runs_somewhere = job.throughput.iter().any(|&t| t > 0.0);
            return Err(ArbiterError::at(
                ErrorCode::JobCannotRun,
                if runs_somewhere { "job.scale_factor" } else { "job.throughput" },
                format!("job {:?} fits on no worker type of the cluster (scale factor {})", job.id, job.scale_factor),
            ));
        }
        let j = self.jobs.len();
        self.jobs.push(job);
        self.waiting.push(j);
        Ok(j)
    }

    /// The clock moves to `now` (the start of the next round).
    pub fn advance_to(&mut self, now: f64) {
        self.now = self.now.max(now);
    }

    /// A job finished at `at`: it leaves, and its GPUs are free.
    pub fn complete(&mut self, j: JobIndex, at: f64) {
        let gpus = std::mem::take(&mut self.jobs[j].gpus);
        self.cluster.release(&self.jobs[j], &gpus);
        self.jobs[j].finish = Some(at);
        self.jobs[j].last_run_end = at;
        self.active.retain(|&k| k != j);
        self.waiting.retain(|&k| k != j);
    }

    /// A GPU failed or returned; a job on a failed GPU loses its lease (suspended, counted).
    pub fn set_health(&mut self, gpu: GpuIndex, healthy: bool) -> Result<()> {
        if gpu as usize >= self.cluster.gpus.len() {
            return Err(ArbiterError::at(
                ErrorCode::UnknownWorker,
                "gpu",
                format!("GPU {gpu} is not in the cluster's {} GPUs", self.cluster.gpus.len()),
            ));
        }
        if let Some(j) = self.cluster.set_health(gpu, healthy) {
            self.suspend(j);
        }
        Ok(())
    }

    fn suspend(&mut self, j: JobIndex) {
        let gpus = std::mem::take(&mut self.jobs[j].gpus);
        self.cluster.release(&self.jobs[j], &gpus);
        let job = &mut self.jobs[j];
        job.preemptions += 1;
        job.suspended = true;
        job.last_run_end = self.now;
    }

    /// One round at the current time: admission, scheduling, placement, preemption.
    pub fn next_round(&mut self) -> RoundDecision {
        self.rounds += 1;
        let mut decision = RoundDecision::default();

        // Admission.
        let admitted = self.admission.admit(&self.waiting, &self.jobs, self.admitted_demand(), &self.cluster);
        for &j in &admitted {
            self.jobs[j].admitted_at = Some(self.now);
        }
        let mut is_admitted = vec![false; self.jobs.len()];
        for &j in &admitted {
            is_admitted[j] = true;
        }
        self.waiting.retain(|&j| !is_admitted[j]);
        self.active.extend(&admitted);
        decision.admitted = admitted;

        // Scheduling: the list; running jobs that may not be suspended go first.
        let now = self.now;
        let mut pinned = vec![false; self.jobs.len()];
        for &j in &self.active {
            pinned[j] = self.jobs[j].is_running() && !self.preemption.preemptible(&self.jobs[j], now);
        }
        let mut demand = vec![0.0; self.tenants.len()];
        for &j in self.active.iter().chain(&self.waiting) {
            demand[self.jobs[j].tenant] += self.jobs[j].scale_factor as f64;
        }
        let shares = state::tenant_shares(&self.tenants, self.cluster.healthy_gpus() as f64, &demand);
        let context = policies::Context {
            cluster: &self.cluster,
            tenants: &self.tenants,
            shares: &shares,
            pinned: &pinned,
            // Without a term a lease lasts a round: the last one's length (before any, a second,
            // which still counts a first lease against its holder).
            lease_seconds: self.preemption.term_seconds().unwrap_or(if self.last_round_seconds > 0.0 {
                self.last_round_seconds
            } else {
                1.0
            }),
        };
        let listed = self.scheduling.order_in(&self.active, &self.jobs, now, &context);
        let (mut order, rest): (Vec<JobIndex>, Vec<JobIndex>) = listed.into_iter().partition(|&j| pinned[j]);
        order.extend(rest);

        // Down the list while GPUs of a type the job runs on last: a running job keeps its type.
        let mut capacity = self.cluster.healthy_per_type();
        let mut keep = vec![false; self.jobs.len()];
        let mut start: Vec<(JobIndex, u32)> = Vec::new();
        // A job being profiled starts on its next profiling type if it has room, and a running
        // one moves there (unless its lease term holds it).
        for &j in &order {
            let job = &self.jobs[j];
            let sf = job.scale_factor;
            if let Some(&g) = job.gpus.first() {
                let w = self.cluster.gpus[g as usize].worker_type as usize;
                let moves =
                    !pinned[j] && job.profile_on.is_some_and(|p| p != w && job.type_to_start(&capacity) == Some(p));
                if !moves {
                    if capacity[w] >= sf {
                        capacity[w] -= sf;
                        keep[j] = true;
                    }
                    continue;
                }
            }
            if let Some(w) = job.type_to_start(&capacity) {
                capacity[w] -= sf;
                start.push((j, w as u32));
            }
        }

        // Preemption: renew the leases of kept jobs, suspend the other running ones.
        for &j in &self.active.clone() {
            if self.jobs[j].is_running() {
                if keep[j] {
                    if !pinned[j] {
                        // Renewed at the end of its term (every round without one): a new term.
                        self.jobs[j].lease_start = now;
                    }
                    decision.renewed.push(j);
                } else {
                    self.suspend(j);
                    decision.suspended.push(j);
                }
            }
        }

        // Placement of the jobs that start.
        for (j, w) in start {
            if let Some(gpus) = self.placement.place(&self.jobs[j], w, &self.cluster) {
                debug_assert_eq!(gpus.len(), self.jobs[j].scale_factor as usize);
                self.cluster.assign(j, &self.jobs[j], &gpus);
                self.jobs[j].gpus = gpus;
                self.jobs[j].lease_start = now;
                decision.launched.push(j);
            }
        }
        decision.order = order;
        decision
    }

    /// Charges one round of `seconds` to every active job: a running job gets `ran[j]` seconds of
    /// service on its GPUs (and the round's remaining time counts as waiting), a waiting one the
    /// whole round as queueing delay.
    pub fn account(&mut self, decision: &RoundDecision, ran: &[(JobIndex, f64)], seconds: f64) {
        for &(j, secs) in ran {
            let job = &mut self.jobs[j];
            job.attained_service += secs * job.scale_factor as f64;
            job.executed_seconds += secs;
            job.first_run.get_or_insert(self.now);
            job.suspended = false;
            job.last_run_end = self.now + secs;
        }
        let running: std::collections::HashSet<JobIndex> = decision.running().collect();
        for &j in &self.active {
            if !running.contains(&j) {
                self.jobs[j].queueing_seconds += seconds;
            }
        }
        for &(j, secs) in ran {
            let job = &self.jobs[j];
            self.tenants[job.tenant].allocated += secs * job.scale_factor as f64;
        }
        // A job that finished this round was present only while it ran.
        let finished: std::collections::HashMap<JobIndex, f64> =
            ran.iter().filter(|&&(j, _)| self.jobs[j].remaining_steps <= 0.0).copied().collect();
        let present: Vec<JobIndex> = self.active.iter().chain(&self.waiting).copied().collect();
        let presence: Vec<Presence> = present
            .iter()
            .map(|&j| {
                let job = &self.jobs[j];
                Presence {
                    tenant: job.tenant,
                    weight: job.weight,
                    demand: job.scale_factor as f64,
                    seconds: finished.get(&j).map_or(seconds, |&s| s.min(seconds)),
                }
            })
            .collect();
        let gpus = self.cluster.healthy_gpus() as f64;
        let owed = state::account_fair_shares(&mut self.tenants, gpus, seconds, &presence);
        for (&j, owed) in present.iter().zip(owed) {
            self.jobs[j].fair_share_seconds += owed;
        }
        self.last_round_seconds = seconds;
    }
}
