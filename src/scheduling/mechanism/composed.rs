//! A session whose rounds come from a composition of list-policy stages (`crate::scheduling::
//! Pipeline`: admission → scheduling → placement → preemption) instead of an LP allocation. The
//! session keeps its jobs, cluster and events as always; each event is mirrored into the
//! pipeline's job and cluster state, and each round is the pipeline's decision read back as the
//! session's placements and lease changes. Such a session never solves an allocation.

use super::cluster::{GpuId, Worker};
use super::placement::{Lease, Placement, Tenants};
use super::round::{JobRound, LeaseChange};
use super::session::Session;
use super::JobId;
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::problem::{Entity, Job};
use crate::scheduling::{ClusterState, Composition, JobIndex, JobState, Pipeline, SchedulingSpec};
use crate::simulator::long_term_fairness::{LtgfSummary, Periods};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The list policies that order jobs by the work they have left: every job needs `steps_remaining`.
const NEED_STEPS: [&str; 3] = ["srtf", "optimus", "themis"];

/// A job without `steps_remaining` under a policy that does not read it: it never runs out.
const UNKNOWN_STEPS: f64 = f64::MAX;

/// The pipeline behind a composed session, and where each active session job sits in it.
#[derive(Debug, Clone)]
pub(super) struct Composed {
    pub(super) pipeline: Pipeline,
    pub(super) index: HashMap<JobId, JobIndex>,
    /// The entity of each tenant (empty: one default tenant).
    tenant_of: Vec<usize>,
    /// Every tenant's integrals at each hour of session time.
    pub(super) history: Periods,
    /// Jobs sent to a type to be profiled there last round: once profiled, they go back to
    /// their fastest type.
    profiled: HashSet<JobIndex>,
}

/// The tenants of a session's entities: every leaf (an entity no other names as parent), with
/// its share of the cluster as weight, `Π w_e / Σ_{siblings} w` down its path (nested entities
/// split their parent's share by weight).
fn tenants(entities: &[Entity]) -> Vec<(usize, f64)> {
    let siblings =
        |parent: Option<usize>| -> f64 { entities.iter().filter(|e| e.parent == parent).map(|e| e.weight).sum() };
    let share = |mut e: usize| -> f64 {
        let mut s = 1.0;
        for _ in 0..entities.len() {
            s *= entities[e].weight / siblings(entities[e].parent);
            match entities[e].parent {
                Some(p) => e = p,
                None => break,
            }
        }
        s
    };
    (0..entities.len()).filter(|&e| !entities.iter().any(|c| c.parent == Some(e))).map(|e| (e, share(e))).collect()
}

impl Composed {
    /// The pipeline of a list-policy `composition` on the session's cluster layout; the leaf
    /// entities, if any, are its tenants (see `tenants`).
    pub(super) fn new(
        composition: &Composition,
        worker_types: &[crate::problem::WorkerType],
        entities: &[Entity],
    ) -> Result<Composed> {
        if !matches!(composition.scheduling, SchedulingSpec::List { .. }) {
            return Err(ArbiterError::at(
                ErrorCode::Unsupported,
                "composition.scheduling",
                "an LP policy's session runs Gavel's mechanism: give it as `policy`, without a composition",
            ));
        }
        let mut pipeline = Pipeline::new(composition, ClusterState::new(worker_types), 0)?;
        let tenants = tenants(entities);
        if !tenants.is_empty() {
            pipeline.set_tenants(&tenants.iter().map(|&(e, w)| (entities[e].name.clone(), w)).collect::<Vec<_>>())?;
        }
        Ok(Composed {
            pipeline,
            index: HashMap::new(),
            tenant_of: tenants.iter().map(|&(e, _)| e).collect(),
            history: Periods::default(),
            profiled: HashSet::new(),
        })
    }

    fn needs_steps(&self) -> Option<&str> {
        match &self.pipeline.composition().scheduling {
            SchedulingSpec::List { name, .. } => NEED_STEPS.iter().copied().find(|n| n == name),
            SchedulingSpec::Allocation(_) => None,
        }
    }

    /// A job arrives: the admission stage sees it at the next round. Nothing changes on error.
    pub(super) fn submit(&mut self, id: &JobId, job: &Job, throughput: &[f64]) -> Result<()> {
        if let (Some(policy), None) = (self.needs_steps(), job.steps_remaining) {
            return Err(ArbiterError::at(
                ErrorCode::MissingField,
                "job.steps_remaining",
                format!(
                    "the list policy {policy} orders jobs by the work they have left: job {:?} needs steps_remaining",
                    job.id
                ),
            ));
        }
        let tenant = match &job.entity {
            _ if self.tenant_of.is_empty() => 0,
            Some(name) => self.tenant_names().position(|t| t == name).ok_or_else(|| {
                ArbiterError::at(
                    ErrorCode::InvalidEntity,
                    "job.entity",
                    format!("job {:?}: entity {name:?} has entities under it; jobs belong to the leaves", job.id),
                )
            })?,
            None => {
                return Err(ArbiterError::at(
                    ErrorCode::MissingField,
                    "job.entity",
                    format!("job {:?}: a session with entities needs the tenant (entity) of every job", job.id),
                ))
            }
        };
        let total = job.steps_remaining.unwrap_or(UNKNOWN_STEPS).max(f64::MIN_POSITIVE);
        let mut state = JobState::new(job.id.clone(), job.arrival, job.scale_factor, throughput.to_vec(), total);
        state.weight = job.weight;
        state.tenant = tenant;
        let j = self.pipeline.submit(state)?;
        self.index.insert(id.clone(), j);
        Ok(())
    }

    fn tenant_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.pipeline.tenants.iter().map(|t| t.name.as_str())
    }

    fn job_mut(&mut self, id: &str) -> Option<&mut JobState> {
        let &j = self.index.get(id)?;
        self.pipeline.jobs.get_mut(j)
    }

    /// The job left (finished or withdrawn) at session time `now`.
    pub(super) fn remove(&mut self, id: &str, now: f64) {
        if let Some(j) = self.index.remove(id) {
            self.pipeline.complete(j, now);
        }
    }

    /// The session's view of a job changed: steps left, measured throughputs, reported metrics.
    pub(super) fn refresh(&mut self, id: &str, steps_remaining: Option<f64>, throughput: &[f64]) {
        if let Some(job) = self.job_mut(id) {
            if let Some(r) = steps_remaining {
                job.remaining_steps = r.min(job.total_steps);
            }
            job.throughput.copy_from_slice(throughput);
        }
    }

    /// Metrics the job reported (`loss`, `iteration_seconds`, ...): the stages read them.
    pub(super) fn report_metrics(&mut self, id: &str, metrics: &BTreeMap<String, f64>) {
        if let Some(job) = self.job_mut(id) {
            job.metrics.extend(metrics.iter().map(|(k, v)| (k.clone(), *v)));
        }
    }

    /// A job's pipeline state, if it is active.
    pub(super) fn job(&self, id: &str) -> Option<&JobState> {
        self.index.get(id).and_then(|&j| self.pipeline.jobs.get(j))
    }

    pub(super) fn is_admitted(&self, id: &str) -> bool {
        self.index.get(id).is_some_and(|j| self.pipeline.active().contains(j))
    }
}

impl Session {
    /// The composition of list-policy stages that runs this session's rounds; `None`: Gavel's
    /// mechanism (the session's LP policy).
    pub fn composition(&self) -> Option<&Composition> {
        self.composed.as_ref().map(|c| c.pipeline.composition())
    }

    /// For a composed session, job `id` as the pipeline sees it (admitted, attained service,
    /// queueing, preemptions).
    pub fn pipeline_job(&self, id: &str) -> Option<(&JobState, bool)> {
        let composed = self.composed.as_ref()?;
        Some((composed.job(id)?, composed.is_admitted(id)))
    }

    /// For a composed session, its tenants with their GPU-time integrals (Astraea's LTGF).
    pub fn tenants(&self) -> Option<&[crate::scheduling::Tenant]> {
        Some(&self.composed.as_ref()?.pipeline.tenants)
    }

    /// For a composed session, its tenants' fairness hour by hour (`ρ` over the session so far at
    /// the end of each hour, and whether each hour left the tenant below its share).
    pub fn tenant_history(&self) -> Option<LtgfSummary> {
        let composed = self.composed.as_ref()?;
        Some(composed.history.summarize(&composed.pipeline.tenants, &[]))
    }

    /// Mirrors a health change of `worker` into the pipeline: a job on a failed GPU is suspended.
    pub(super) fn composed_health(&mut self, worker: Worker, healthy: bool) -> Result<()> {
        let gpus: Vec<GpuId> = match worker {
            Worker::Gpu(g) => vec![g],
            Worker::Server(s) => self.cluster.server_gpus(s).collect(),
        };
        if let Some(composed) = self.composed.as_mut() {
            for g in gpus {
                composed.pipeline.set_health(g.0, healthy)?;
            }
        }
        Ok(())
    }

    /// One round decided by the pipeline: the jobs it keeps or launches run for the whole round
    /// (less the restart overhead on a resumption) on the GPUs it chose.
    pub(super) fn run_composed(&mut self, seconds: f64) -> (Vec<Placement>, Vec<JobRound>) {
        let now = self.time;
        let Some(composed) = self.composed.as_mut() else {
            return (Vec::new(), Vec::new());
        };
        // Profiling: a job runs next on a type where its throughput is still an estimate; the
        // round after its last one, it goes back to its fastest type (if that has room).
        for j in &self.jobs {
            if let Some(&k) = composed.index.get(&j.id) {
                let next = j.profile_next();
                let was_profiled = composed.profiled.remove(&k);
                let job = &mut composed.pipeline.jobs[k];
                job.profile_on = next.or_else(|| was_profiled.then(|| job.fastest_type(|_| true))?);
                if next.is_some() {
                    composed.profiled.insert(k);
                }
            }
        }
        let pipeline = &mut composed.pipeline;
        pipeline.advance_to(now);
        let decision = pipeline.next_round();
        let launched: HashSet<JobIndex> = decision.launched.iter().copied().collect();
        let ran: Vec<(JobIndex, f64)> = decision
            .running()
            .map(|j| (j, seconds - pipeline.restart_overhead(j, launched.contains(&j), seconds)))
            .collect();
        pipeline.account(&decision, &ran, seconds);
        composed.history.observe(now + seconds, &composed.pipeline.tenants);

        let mut placements = Vec::new();
        let mut rounds = Vec::with_capacity(self.jobs.len());
        for j in &mut self.jobs {
            let state = composed.index.get(&j.id).map(|&k| &composed.pipeline.jobs[k]);
            let lease = state.filter(|s| s.is_running()).map(|s| {
                let gpus: Vec<GpuId> = s.gpus.iter().map(|&g| GpuId(g)).collect();
                Lease { worker_type: self.cluster.gpu_type(gpus[0]), gpus }
            });
            let placement = lease.as_ref().map(|l| {
                placements.push(Placement {
                    jobs: Tenants::Single(j.id.clone()),
                    worker_type: l.worker_type,
                    gpus: l.gpus.clone(),
                });
                j.share.grant(l.worker_type, seconds);
                j.ran_on[l.worker_type] = true;
                placements.len() - 1
            });
            let change = LeaseChange::between(j.lease.as_ref(), lease.as_ref());
            j.lease = lease;
            rounds.push(JobRound { job: j.id.clone(), lease: change, placement, unplaceable: false });
        }
        (placements, rounds)
    }
}
