//! What the session endpoints answer: a session, its jobs, its allocation and one round, keyed
//! by the ids and worker-type names of the wire (never by the library's dense indices).

use super::spec::Spec;
use crate::mechanism::{Round, Session};
use crate::response::AllocationRow;
use crate::service::error::ApiResult;
use indexmap::IndexMap;
use serde::Serialize;
use utoipa::ToSchema;

/// Per worker type, in the cluster's order.
type ByType = IndexMap<String, f64>;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionSummary {
    pub id: String,
    /// The LP policy, or a composed session's scheduling stage.
    pub policy: String,
    /// A composed session's stages, `admission+scheduling+placement+preemption`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub composition: Option<String>,
    pub jobs: usize,
    pub rounds: u64,
    /// Session time in seconds: rounds run × round length.
    pub time: f64,
    /// When the session was created, in seconds since the Unix epoch.
    pub created_at: f64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionSummary>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionView {
    pub id: String,
    /// The LP policy, or a composed session's scheduling stage.
    pub policy: String,
    /// A composed session's stages, `admission+scheduling+placement+preemption`: they decide
    /// every round, and the session has no LP allocation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub composition: Option<String>,
    pub heterogeneity_aware: bool,
    /// `rounds`, `ideal` or `configurations`.
    pub mode: String,
    pub round_seconds: f64,
    pub work_conserving: bool,
    pub created_at: f64,
    /// Session time in seconds: rounds run × round length.
    pub time: f64,
    pub rounds: u64,
    /// The jobs, the cluster or the throughputs changed since the allocation was computed: the
    /// next round (or `POST .../allocation`) recomputes it.
    pub stale: bool,
    pub cluster: ClusterView,
    /// Active jobs, in the order they were added.
    pub jobs: Vec<JobView>,
    /// What the session achieved so far.
    pub metrics: MetricsView,
    /// A composed session's tenants (its leaf entities, or one default tenant) and their
    /// long-term GPU-time fairness so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenants: Option<Vec<TenantView>>,
    /// With `?audit=N`: the owner, the creating token and the last N events with their tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<crate::service::audit::AuditView>,
    /// In the answer to the creation only: fields of its body that a session does not know, which
    /// were ignored (a misspelt `wieght`, say), as the contract's `ignored_fields` names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_fields: Vec<String>,
}

/// One tenant's GPU time since the session started (Astraea's LTGF).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TenantView {
    pub name: String,
    /// Its share of the cluster: quota `M · weight / Σ weights`.
    pub weight: f64,
    /// GPU-seconds its jobs ran.
    pub allocated_gpu_seconds: f64,
    /// `∫ min(Demand, Quota) dt`, GPU-seconds.
    pub fair_share_gpu_seconds: f64,
    /// `allocated / fair share` (≥ 1: no worse off than on its own quota).
    pub rho: f64,
    /// `allocated / ∫ Quota dt` (counts the GPUs it lent while idle).
    pub rho_quota: f64,
    /// `[session seconds, rho so far]` at the end of every hour of session time.
    pub rho_over_time: Vec<[f64; 2]>,
    /// Hours with a fair share, and those in which the tenant got less than it over the hour.
    pub hours: usize,
    pub hours_below_share: usize,
}

/// JCT over the jobs removed so far (a job's completion is its removal), responsiveness, preemptions
/// and utilization; `null` where nothing is measured yet.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MetricsView {
    /// Jobs removed from the session (finished or withdrawn).
    pub completed_jobs: usize,
    /// Removal − arrival, averaged over the removed jobs, in seconds.
    pub average_jct_seconds: Option<f64>,
    /// Median, 95th and 99th percentile of those completion times.
    pub jct_percentiles_seconds: Option<PercentilesView>,
    /// First round run − arrival, averaged over every job that has run, in seconds.
    pub average_responsiveness_seconds: Option<f64>,
    /// Checkpoint-restarts (preempted, or moved to other GPUs) per job, removed and active.
    pub preemptions_per_job: Option<f64>,
    /// Busy GPU-seconds over healthy GPU-seconds, over every round run.
    pub utilization: Option<f64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PercentilesView {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
}

/// A composed session's job as its pipeline sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PipelineJobView {
    /// The admission stage let it in (otherwise it waits, in arrival order).
    pub admitted: bool,
    /// GPU-seconds received (Tiresias' attained service).
    pub attained_service_gpu_seconds: f64,
    /// Seconds admitted and not running.
    pub queueing_seconds: f64,
    /// `∫ min(Demand, FairShare) dt`, GPU-seconds: its fair GPU time among its tenant's jobs.
    pub fair_share_gpu_seconds: f64,
    /// Astraea's `ρ_job`: attained over fair GPU time (0 before it has had any).
    pub rho: f64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClusterView {
    pub worker_types: IndexMap<String, WorkerTypeView>,
    /// GPUs reported failed and not returned, as `<type>/<server>/<gpu>`.
    pub failed_gpus: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WorkerTypeView {
    pub count: u32,
    pub healthy: u32,
    pub servers: usize,
    pub gpus_per_server: u32,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobView {
    pub id: String,
    pub scale_factor: u32,
    pub weight: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps_remaining: Option<f64>,
    /// Seconds since the job arrived (advanced by every round).
    pub time_elapsed: f64,
    pub arrival: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slo_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    /// Measured steps/s, smoothed over the progress reports.
    pub throughput: IndexMap<String, f64>,
    /// `X[m][w]`: the fraction of time the allocation gives the job on each type.
    pub allocation: IndexMap<String, f64>,
    /// Seconds run on each type since the last recomputation.
    pub received_seconds: IndexMap<String, f64>,
    /// Seconds run on each type since the job was added.
    pub total_received_seconds: IndexMap<String, f64>,
    /// Fraction of the session time since the job was added that it ran on each type.
    pub received_fraction: IndexMap<String, f64>,
    /// Seconds owed on each type (negative: ran ahead of its allocation).
    pub deficit_seconds: IndexMap<String, f64>,
    /// The GPUs the job held in the last round, if it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease: Option<LeaseView>,
    /// Types where the job has allocation but cannot be placed (scale factor above the healthy GPUs).
    pub unplaceable: Vec<String>,
    /// With `estimate_missing`: per type, the estimate the job's row started from (kept for
    /// comparison once progress has been measured there).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub estimated_throughput: IndexMap<String, f64>,
    /// Types whose throughput is still the estimate: no progress measured there yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub still_estimated: Vec<String>,
    /// Types the job will still be profiled on (added with `"profile": true`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiling: Vec<String>,
    /// Session time of the first round it ran in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_run: Option<f64>,
    /// Checkpoint-restarts so far: preempted, or moved to other GPUs.
    pub preemptions: u32,
    /// Metrics reported with its progress, latest value of each.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metrics: std::collections::BTreeMap<String, f64>,
    /// The highest `sequence` its progress reports carried: a reporter that restarts numbers its
    /// next report above it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_sequence: Option<u64>,
    /// In a composed session: admission, attained service and queueing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<PipelineJobView>,
    /// In the answer to the request that added the job or reported its progress only: fields of
    /// its body that a job (or a report) does not know, which were ignored, as the contract's
    /// `ignored_fields` names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_fields: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LeaseView {
    pub worker_type: String,
    pub gpus: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AllocationView {
    pub session: String,
    pub policy: String,
    /// The allocation is out of date; the next round recomputes it.
    pub stale: bool,
    pub time: f64,
    pub rounds: u64,
    /// `allocation[job][worker type]`: fraction of wall-clock time on that type. In a composed
    /// session, whose list policies decide round by round, the current round's placements: 1 on
    /// the type a job runs on, 0 while it waits.
    #[schema(value_type = IndexMap<String, IndexMap<String, f64>>)]
    pub allocation: IndexMap<String, AllocationRow>,
    /// Steps/s each job gets from its allocation at its measured throughputs.
    pub effective_throughput: IndexMap<String, f64>,
    /// Fraction of the session time since each job was added that it ran on each type.
    #[schema(value_type = IndexMap<String, IndexMap<String, f64>>)]
    pub received_fraction: IndexMap<String, AllocationRow>,
    /// How much of the allocation rounds on the healthy GPUs can deliver
    /// (`formulations/realizability.md`); in mode `configurations`, the decomposition the rounds
    /// follow.
    pub realizable: crate::solver::realizability::RealizabilityReport,
    /// With `realizable: true`: whether the allocation is the policy's optimum over round
    /// configurations, and how far it is from the fractional optimum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub realizable_solve: Option<crate::solver::realizable::RealizableReport>,
    /// The tie-break that followed the solve's optimum (the creation's `tie_break`; `none` for
    /// the policies it does not apply to), as a request's `stats.tie_break`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tie_break: Option<crate::solver::tie_break::TieBreak>,
    /// In mode `configurations`: why the last round chose jobs by priority instead of following
    /// the decomposition (none is certified, or the check does not cover the allocation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decomposition_skipped: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoundView {
    pub session: String,
    /// 0 for the session's first round.
    pub index: u64,
    /// Session time at which the round starts, in seconds.
    pub start: f64,
    pub seconds: f64,
    /// The allocation was recomputed (and received time reset) before this round.
    pub allocation_recomputed: bool,
    pub placements: Vec<PlacementView>,
    /// Every active job: `lease` is `renewed`, `started`, `moved`, `preempted`, `waiting` or
    /// (ideal mode) `fractional`.
    pub jobs: IndexMap<String, JobRoundView>,
    /// Jobs that run this round and did not run last round.
    pub started: Vec<String>,
    /// Jobs that run on other GPUs than last round (checkpoint and restart).
    pub moved: Vec<String>,
    /// Jobs that ran last round and do not now.
    pub preempted: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PlacementView {
    pub jobs: Vec<String>,
    pub worker_type: String,
    pub gpus: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobRoundView {
    pub lease: String,
    /// Index into `placements` when the job runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<usize>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unplaceable: bool,
}

fn type_names(session: &Session) -> Vec<String> {
    let cluster = session.cluster();
    (0..cluster.num_types()).map(|w| cluster.type_name(w).to_string()).collect()
}

fn by_type(names: &[String], values: &[f64]) -> ByType {
    names.iter().cloned().zip(values.iter().copied()).collect()
}

/// The LP policy, or a composed session's scheduling stage.
fn policy_name(session: &Session) -> String {
    match session.composition().map(|c| &c.scheduling) {
        Some(crate::scheduling::SchedulingSpec::List { name, .. }) => name.clone(),
        _ => session.policy().name().to_string(),
    }
}

/// JSON has no infinity: a ratio with service and no fair share yet shows as the largest number.
fn finite(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        f64::MAX
    }
}

fn metrics(session: &Session) -> MetricsView {
    let m = session.metrics();
    MetricsView {
        completed_jobs: m.completed_jobs,
        average_jct_seconds: m.average_jct_seconds,
        jct_percentiles_seconds: m.jct_percentiles_seconds.map(|[p50, p95, p99]| PercentilesView { p50, p95, p99 }),
        average_responsiveness_seconds: m.average_responsiveness_seconds,
        preemptions_per_job: m.preemptions_per_job,
        utilization: m.utilization,
    }
}

pub fn summary(id: &str, created_at: f64, session: &Session) -> SessionSummary {
    SessionSummary {
        id: id.to_string(),
        policy: policy_name(session),
        composition: session.composition().map(|c| c.name()),
        jobs: session.num_jobs(),
        rounds: session.rounds(),
        time: session.time(),
        created_at,
    }
}

pub fn session(id: &str, created_at: f64, spec: &Spec, session: &Session) -> ApiResult<SessionView> {
    let cluster = session.cluster();
    let worker_types = spec
        .base
        .worker_types
        .iter()
        .enumerate()
        .map(|(w, wt)| {
            let view = WorkerTypeView {
                count: wt.count as u32,
                healthy: cluster.healthy_count(w),
                servers: cluster.servers_of_type(w).count(),
                gpus_per_server: wt.gpus_per_server,
            };
            (wt.name.clone(), view)
        })
        .collect();
    let failed_gpus = (0..cluster.num_types())
        .filter(|&w| cluster.healthy_count(w) < spec.base.worker_types[w].count as u32)
        .flat_map(|w| cluster.gpus_of_type(w))
        .filter(|&g| !cluster.is_healthy(g))
        .map(|g| cluster.gpu_name(g))
        .collect();
    let jobs = session.job_ids().map(|id| job(session, id)).collect::<ApiResult<_>>()?;
    let config = session.config();
    Ok(SessionView {
        id: id.to_string(),
        policy: policy_name(session),
        composition: session.composition().map(|c| c.name()),
        heterogeneity_aware: spec.base.heterogeneity_aware,
        mode: config.mode.name().to_string(),
        round_seconds: config.round_seconds,
        work_conserving: config.work_conserving,
        created_at,
        time: session.time(),
        rounds: session.rounds(),
        stale: session.is_stale(),
        cluster: ClusterView { worker_types, failed_gpus },
        jobs,
        metrics: metrics(session),
        tenants: session.tenants().zip(session.tenant_history()).map(|(tenants, history)| {
            tenants
                .iter()
                .zip(history.tenants)
                .map(|(t, h)| TenantView {
                    name: t.name.clone(),
                    weight: t.weight,
                    allocated_gpu_seconds: t.allocated,
                    fair_share_gpu_seconds: t.fair_share,
                    rho: finite(t.ltgf(false)),
                    rho_quota: finite(t.ltgf(true)),
                    rho_over_time: h.rho_over_time,
                    hours: h.periods,
                    hours_below_share: h.periods_below_1,
                })
                .collect()
        }),
        audit: None,
        ignored_fields: Vec::new(),
    })
}

pub fn job(session: &Session, id: &str) -> ApiResult<JobView> {
    let names = type_names(session);
    let cluster = session.cluster();
    let j = session.job(id)?;
    let estimates = session.estimates(id)?;
    let (first_run, preemptions) = session.run_history(id)?;
    let lease = session.lease(id)?.map(|l| LeaseView {
        worker_type: names[l.worker_type].clone(),
        gpus: l.gpus.iter().map(|&g| cluster.gpu_name(g)).collect(),
    });
    Ok(JobView {
        id: id.to_string(),
        scale_factor: j.scale_factor,
        weight: j.weight,
        steps_remaining: j.steps_remaining,
        time_elapsed: j.time_elapsed,
        arrival: j.arrival,
        slo_seconds: j.slo_seconds,
        entity: j.entity.clone(),
        throughput: by_type(&names, session.throughput(id)?),
        allocation: by_type(&names, &session.allocation(id)?),
        received_seconds: by_type(&names, session.received(id)?),
        total_received_seconds: by_type(&names, session.total_received(id)?),
        received_fraction: by_type(&names, &session.received_fraction(id)?),
        deficit_seconds: by_type(&names, &session.deficit(id)?),
        lease,
        unplaceable: session.unplaceable_types(id)?.into_iter().map(|w| names[w].clone()).collect(),
        estimated_throughput: estimates.iter().zip(&names).filter_map(|(e, n)| Some((n.clone(), e.0?))).collect(),
        still_estimated: estimates.iter().zip(&names).filter(|(e, _)| e.1).map(|(_, n)| n.clone()).collect(),
        profiling: session.profiling_pending(id)?.into_iter().map(|w| names[w].clone()).collect(),
        first_run,
        preemptions,
        metrics: session.reported_metrics(id)?.clone(),
        progress_sequence: session.report_sequence(id)?,
        pipeline: session.pipeline_job(id).map(|(j, admitted)| PipelineJobView {
            admitted,
            attained_service_gpu_seconds: j.attained_service,
            queueing_seconds: j.queueing_seconds,
            fair_share_gpu_seconds: j.fair_share_seconds,
            rho: finite(j.ltgf()),
        }),
        ignored_fields: Vec::new(),
    })
}

pub fn allocation(id: &str, session: &Session) -> ApiResult<AllocationView> {
    // One list of the names for every job's rows.
    let names: std::sync::Arc<[String]> = type_names(session).into();
    let row = |times: Vec<f64>| AllocationRow::of(&names, times);
    let mut allocation = IndexMap::with_capacity(session.num_jobs());
    let mut effective_throughput = IndexMap::with_capacity(session.num_jobs());
    let mut received_fraction = IndexMap::with_capacity(session.num_jobs());
    for job in session.job_ids() {
        let x = session.allocation(job)?;
        let thr = session.throughput(job)?;
        effective_throughput.insert(job.to_string(), x.iter().zip(thr).map(|(a, b)| a * b).sum::<f64>());
        allocation.insert(job.to_string(), row(x.into_owned()));
        received_fraction.insert(job.to_string(), row(session.received_fraction(job)?));
    }
    Ok(AllocationView {
        session: id.to_string(),
        policy: policy_name(session),
        stale: session.is_stale(),
        time: session.time(),
        rounds: session.rounds(),
        allocation,
        effective_throughput,
        received_fraction,
        realizable: crate::mechanism::realizability(session),
        realizable_solve: session.realizable_solve().cloned(),
        tie_break: session.tie_break(),
        decomposition_skipped: session.decomposition_skipped().map(str::to_string),
    })
}

pub fn round(id: &str, session: &Session, round: &Round, recomputed: bool) -> RoundView {
    let names = type_names(session);
    let cluster = session.cluster();
    let ids = |change| -> Vec<String> {
        round.jobs.iter().filter(|j| j.lease == change).map(|j| j.job.to_string()).collect()
    };
    let lease_name = |change| match serde_json::to_value(change) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    };
    RoundView {
        session: id.to_string(),
        index: round.index,
        start: round.start,
        seconds: round.seconds,
        allocation_recomputed: recomputed || round.allocation_recomputed,
        placements: round
            .placements
            .iter()
            .map(|p| PlacementView {
                jobs: p.jobs.as_slice().iter().map(|j| j.to_string()).collect(),
                worker_type: names[p.worker_type].clone(),
                gpus: p.gpus.iter().map(|&g| cluster.gpu_name(g)).collect(),
            })
            .collect(),
        jobs: round
            .jobs
            .iter()
            .map(|j| {
                let view =
                    JobRoundView { lease: lease_name(j.lease), placement: j.placement, unplaceable: j.unplaceable };
                (j.job.to_string(), view)
            })
            .collect(),
        started: ids(crate::mechanism::LeaseChange::Started),
        moved: ids(crate::mechanism::LeaseChange::Moved),
        preempted: ids(crate::mechanism::LeaseChange::Preempted),
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobList {
    pub jobs: Vec<JobView>,
}
