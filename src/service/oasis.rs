//! OASiS sessions: two pools of multi-resource servers over a horizon of slots under OASiS's
//! priced online admission (`scheduling::oasis`). Jobs arrive in slot order; each is admitted iff
//! its best schedule's utility exceeds that schedule's cost at the current prices, and the answer
//! says why: the utility, the priced cost, the payoff, and the unit price of each server the
//! schedule uses. Durable like sessions: the creation body and each job are stored before they are
//! acknowledged and replayed at start (`replayed`). No scheduling logic here.

use super::audit::{AuditQuery, AuditView};
use super::auth::Caller;
use super::error::{ApiResult, ErrorResponse};
use super::extract::{Body, Params, QueryParams};
use super::replayed::{parse, Replayed, ReplayedSessions, SessionEntries};
use super::state::SharedState;
use crate::error::{ArbiterError, ErrorCode};
use crate::scheduling::oasis::resources::RESOURCE_TYPES;
use crate::scheduling::oasis::{
    ClusterSpec, Decision, Job, JobSpec, LowestUtility, Oasis, Pool, PriceFunction, PriceParameters, ResourceVector,
};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use utoipa::ToSchema;

/// The most (slot, server) pairs a session keeps (the library allows more: a session's pools
/// live in the server's memory, and every event copies them).
pub const MAX_SERVER_SLOTS: usize = 1_000_000;

/// The key of an OASiS session's stored creation body, `{"oasis": CreateOasisSession}`.
pub const KEY: &str = "oasis";

/// `POST /v1/oasis/sessions`: the cluster, and the prices given (`prices`) or estimated from jobs
/// like those expected (`expected_jobs`, as the paper estimates `U`, `L` and `η`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateOasisSession {
    pub cluster: ClusterSpec,
    /// The price functions, in the shape `arbiter oasis` prints them. Either this or
    /// `expected_jobs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<OasisPrices>,
    /// Jobs like those expected: `U`, `L` and `η` are estimated from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_jobs: Option<Vec<JobSpec>>,
    /// With `expected_jobs`: which utility of an expected job sets `L`, `shortest` (default: at
    /// its shortest duration) or `horizon` (at the end of the horizon, the paper's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowest: Option<String>,
    /// Every `U` taken at this factor (default 1).
    #[serde(default = "one")]
    pub u: f64,
    /// Every `L` taken at this factor (default 1).
    #[serde(default = "one")]
    pub l: f64,
}

fn one() -> f64 {
    1.0
}

/// Each pool's price function `p^r(g) = (L^r/2η)·(2U^rη/L^r)^{g/c}`; `lower` and `upper` list
/// `L^r`, `U^r` for GPUs, CPU cores, memory (GB) and bandwidth (Mbit/s), in that order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OasisPrices {
    pub workers: PriceFunction,
    pub parameter_servers: PriceFunction,
    /// Which of the four resources any job demands from workers (as `arbiter oasis` prints
    /// them): only those count in the competitive bound. Default: all four.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demanded_by_workers: Option<[bool; 4]>,
    /// The same for parameter servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demanded_by_ps: Option<[bool; 4]>,
}

/// A stored event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Submit(JobSpec),
}

/// OASiS's decision on one job, and what made it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OasisDecision {
    pub job: String,
    pub arrival_slot: usize,
    pub admitted: bool,
    /// Utility minus priced cost of the best schedule; null when no schedule finishes within the
    /// horizon.
    pub payoff: Option<f64>,
    /// The utility of finishing with the best schedule's last slot.
    pub utility: f64,
    /// That schedule at the prices the job met: `Σ` over its slots and servers of count × unit
    /// price.
    pub cost: f64,
    /// The decision in words.
    pub explanation: String,
    /// The best schedule at the prices the job met: the one it runs if admitted, the one that did
    /// not pay otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<OasisSchedule>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OasisSchedule {
    /// The last slot with workers.
    pub completion_slot: usize,
    /// The slots with workers.
    pub slots: Vec<OasisSlot>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OasisSlot {
    pub slot: usize,
    pub workers: Vec<OasisPlacement>,
    pub parameter_servers: Vec<OasisPlacement>,
}

/// `count` workers (or parameter servers) on a server of its pool.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OasisPlacement {
    pub server: usize,
    pub count: u32,
    /// What one of them cost there at the prices the job met: `Σ_r demand^r · p^r(use^r)`.
    pub unit_price: f64,
}

/// An OASiS session as of its last acknowledged job.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OasisView {
    pub id: String,
    pub created_at: f64,
    /// The latest arrival slot: jobs arrive at it or later.
    pub slot: usize,
    /// The horizon's slots.
    pub slots: usize,
    /// The price functions in use.
    pub prices: OasisPrices,
    /// OASiS's competitive ratio with these prices (the paper's Theorem 4).
    pub competitive_ratio_bound: f64,
    pub admitted: usize,
    pub rejected: usize,
    /// The utility of the admitted jobs.
    pub total_utility: f64,
    /// Every decision, in arrival order.
    pub decisions: Vec<OasisDecision>,
    /// Each pool's committed resources, summed over its servers, in every slot from `slot` on
    /// in which something is committed.
    pub usage: Vec<OasisSlotUsage>,
    /// With `?audit=N`: the owner, the creating token and the last N events with their tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OasisSlotUsage {
    pub slot: usize,
    pub workers: ResourceVector,
    pub parameter_servers: ResourceVector,
}

/// The online scheduler of one session and the decisions it made.
#[derive(Debug, Clone)]
pub struct OasisSession {
    oasis: Oasis,
    decisions: Vec<OasisDecision>,
    ids: HashSet<String>,
    slot: usize,
}

impl Replayed for OasisSession {
    const KEY: &'static str = KEY;
    type Spec = CreateOasisSession;
    type Event = Event;
    type Answer = OasisDecision;

    fn build(spec: &CreateOasisSession) -> ApiResult<OasisSession> {
        let cluster = &spec.cluster;
        let cells = cluster.slots.saturating_mul(cluster.worker_servers.len() + cluster.ps_servers.len());
        if cells > MAX_SERVER_SLOTS {
            return Err(ArbiterError::at(
                ErrorCode::Unsupported,
                "cluster.slots",
                format!(
                    "slots × servers is {cells}; a session keeps at most {MAX_SERVER_SLOTS} (16 bytes each per pool)"
                ),
            )
            .into());
        }
        let prices = prices(spec)?;
        let oasis = Oasis::new(spec.cluster.clone(), prices)?;
        Ok(OasisSession { oasis, decisions: Vec::new(), ids: HashSet::new(), slot: 0 })
    }

    fn apply(&mut self, event: &Event) -> ApiResult<OasisDecision> {
        let Event::Submit(spec) = event;
        if self.ids.contains(&spec.id) {
            return Err(ArbiterError::at(
                ErrorCode::DuplicateJobId,
                "id",
                format!("job {:?} was already submitted", spec.id),
            )
            .into());
        }
        if spec.arrival_slot < self.slot {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                "arrival_slot",
                format!("jobs arrive in slot order: this session is at slot {}", self.slot),
            )
            .into());
        }
        // The body is the job: its fields are named as the body names them. A schedule too large
        // to find over the slots left from its arrival is named at `cluster.slots`, the horizon
        // of the session's creation and no field of this body: named at none, the horizon said.
        let job = self.oasis.job(spec.clone(), "job").map_err(|e| match e.field.as_deref() {
            Some("cluster.slots") => ArbiterError {
                field: None,
                message: format!(
                    "{} (the session's horizon: cluster.slots = {} of its creation, slot {} onwards)",
                    e.message,
                    self.oasis.cluster().slots,
                    spec.arrival_slot
                ),
                ..e
            },
            _ => e.field_within("job"),
        })?;
        let decision = self.oasis.evaluate(&job);
        let answer = explain(&self.oasis, &job, &decision);
        if let (true, Some(schedule)) = (decision.admitted, &decision.schedule) {
            self.oasis.commit(&job, schedule)?;
        }
        self.slot = spec.arrival_slot;
        self.ids.insert(spec.id.clone());
        self.decisions.push(answer.clone());
        Ok(answer)
    }

    fn jobs_after(&self, _: &Event) -> Option<usize> {
        Some(self.decisions.len() + 1)
    }

    fn jobs(&self) -> usize {
        self.decisions.len()
    }

    fn event_name(_: &Event) -> &'static str {
        "oasis_submit"
    }
}

/// Every live OASiS session, by id.
pub type OasisSessions = ReplayedSessions<OasisSession>;

/// The price functions a creation body gives or implies.
fn prices(spec: &CreateOasisSession) -> ApiResult<PriceParameters> {
    let given = match (&spec.prices, &spec.expected_jobs) {
        (Some(_), None) if spec.lowest.is_some() => {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "lowest",
                "lowest says how expected_jobs set L; with prices given there is nothing to estimate",
            )
            .into())
        }
        (Some(p), None) => {
            let given = PriceParameters::new(p.workers, p.parameter_servers)?;
            let (workers, ps) = given.demanded();
            given.with_demanded(p.demanded_by_workers.unwrap_or(workers), p.demanded_by_ps.unwrap_or(ps))
        }
        (None, Some(expected)) => {
            spec.cluster.validate()?;
            let name = spec.lowest.as_deref().unwrap_or("shortest");
            let lowest = LowestUtility::from_name(name).ok_or_else(|| {
                ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "lowest",
                    format!("lowest is shortest or horizon, not {name:?}"),
                )
            })?;
            let jobs = expected
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    Job::new(s.clone(), spec.cluster.slot_seconds, spec.cluster.slots, &format!("expected_jobs[{i}]"))
                })
                .collect::<crate::error::Result<Vec<Job>>>()?;
            PriceParameters::estimate_with(&jobs, &spec.cluster, lowest)
                .map_err(|e| e.field_renamed("jobs", "expected_jobs"))?
        }
        _ => {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "prices",
                "give the price functions (prices) or jobs to estimate them from (expected_jobs), one of the two",
            )
            .into())
        }
    };
    // The contract's magnitudes are checked at creation only (`refuse_at_creation`).
    Ok(given.rescaled(spec.u, spec.l)?)
}

/// A new session's `u` and `l` beyond the contract's magnitudes, or scaling its prices into ones
/// that fall with use, are refused. (Only at creation: a session stored before these checks
/// replays as it was created.)
fn refuse_at_creation(spec: &CreateOasisSession, session: &OasisSession) -> ApiResult<()> {
    PriceParameters::refuse_scale_factors(spec.u, spec.l)?;
    let Some((pool, r)) = session.oasis.prices().falls_with_use() else { return Ok(()) };
    let field = if spec.l != 1.0 { "l" } else { "u" };
    Err(ArbiterError::at(
        ErrorCode::InvalidNumber,
        field,
        format!(
            "u = {} and l = {} take the {pool}' price of {} to 2Uη < L: it would fall with use",
            spec.u,
            spec.l,
            crate::scheduling::oasis::resources::RESOURCE_NAMES[r]
        ),
    )
    .into())
}

/// Why a job found no schedule: it fits no server at all, it could not finish by the horizon's
/// end even alone, or (otherwise) what others hold leaves too little.
fn no_schedule(cluster: &ClusterSpec, job: &Job) -> String {
    let last = cluster.slots - 1;
    let fits_nowhere = |demand: &ResourceVector, servers: &[ResourceVector]| {
        servers.iter().all(|server| demand.copies_in(&server.amounts()) == 0)
    };
    if fits_nowhere(&job.spec.worker, &cluster.worker_servers) {
        format!("rejected: a worker ({}) fits on no worker server, however free", job.spec.worker)
    } else if fits_nowhere(&job.spec.parameter_server, &cluster.ps_servers) {
        format!(
            "rejected: a parameter server ({}) fits on no parameter-server server, however free",
            job.spec.parameter_server
        )
    } else if job.spec.arrival_slot + job.shortest_duration() > cluster.slots {
        format!(
            "rejected: even with every chunk trained in parallel it needs {} slots from its arrival in slot {}, past \
             the horizon's last slot ({last})",
            job.shortest_duration(),
            job.spec.arrival_slot
        )
    } else {
        format!(
            "rejected: no schedule trains its {} chunk-epochs by the horizon's last slot ({last}) on what is free",
            job.spec.epochs as u64 * job.spec.chunks as u64
        )
    }
}

/// The decision as the wire shows it, with the unit prices the job met (before its schedule,
/// if admitted, raises them).
fn explain(oasis: &Oasis, job: &Job, decision: &Decision) -> OasisDecision {
    let prices = oasis.prices();
    let priced =
        |pool: &Pool, function: &PriceFunction, demand: &ResourceVector, slot: usize, placed: &[(usize, u32)]| {
            placed
                .iter()
                .map(|&(server, count)| OasisPlacement {
                    server,
                    count,
                    unit_price: function.unit_cost(&demand.amounts(), pool.used(slot, server), &pool.capacity[server]),
                })
                .collect()
        };
    let schedule = decision.schedule.as_ref().map(|s| OasisSchedule {
        completion_slot: s.completion_slot,
        slots: s
            .slots
            .iter()
            .map(|plan| OasisSlot {
                slot: plan.slot,
                workers: priced(oasis.worker_pool(), &prices.workers, &job.spec.worker, plan.slot, &plan.workers),
                parameter_servers: priced(
                    oasis.ps_pool(),
                    &prices.parameter_servers,
                    &job.spec.parameter_server,
                    plan.slot,
                    &plan.parameter_servers,
                ),
            })
            .collect(),
    });
    let explanation = match &decision.schedule {
        None => no_schedule(oasis.cluster(), job),
        Some(s) => {
            let worker_slots: u32 = s.slots.iter().map(|p| p.worker_count()).sum();
            let ps_slots: u32 = s.slots.iter().map(|p| p.parameter_server_count()).sum();
            let (verdict, relation) = if decision.admitted { ("admitted", ">") } else { ("rejected", "≤") };
            format!(
                "{verdict}: finishing with slot {} is worth {} and its {worker_slots} worker-slots and {ps_slots} \
                 parameter-server-slots cost {} at current prices; payoff {} {relation} 0",
                s.completion_slot,
                number(decision.utility),
                number(decision.cost),
                number(decision.payoff)
            )
        }
    };
    OasisDecision {
        job: decision.job.clone(),
        arrival_slot: job.spec.arrival_slot,
        admitted: decision.admitted,
        payoff: decision.payoff.is_finite().then_some(decision.payoff),
        utility: decision.utility,
        cost: decision.cost,
        explanation,
        schedule,
    }
}

/// `x` to six decimals at most, without trailing zeros; in scientific notation from 10¹⁵ up (a
/// sentence is no place for a number's every digit).
fn number(x: f64) -> String {
    if x.abs() >= 1e15 && x.is_finite() {
        return format!("{x:.6e}");
    }
    let text = format!("{x:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The session's view.
pub fn view(id: &str, created_at: f64, session: &OasisSession) -> OasisView {
    let oasis = &session.oasis;
    let prices = oasis.prices();
    let sum = |pool: &Pool, slot: usize| {
        let mut total = [0u32; RESOURCE_TYPES];
        for server in 0..pool.servers() {
            for (t, u) in total.iter_mut().zip(pool.used(slot, server)) {
                *t = t.saturating_add(*u);
            }
        }
        let [gpus, cpus, memory_gb, bandwidth_mbps] = total;
        ResourceVector::new(gpus, cpus, memory_gb, bandwidth_mbps)
    };
    let usage = (session.slot..oasis.cluster().slots)
        .map(|slot| OasisSlotUsage {
            slot,
            workers: sum(oasis.worker_pool(), slot),
            parameter_servers: sum(oasis.ps_pool(), slot),
        })
        .filter(|u| !(u.workers.is_zero() && u.parameter_servers.is_zero()))
        .collect();
    let admitted = session.decisions.iter().filter(|d| d.admitted).count();
    OasisView {
        id: id.to_string(),
        created_at,
        slot: session.slot,
        slots: oasis.cluster().slots,
        prices: {
            let (by_workers, by_ps) = prices.demanded();
            OasisPrices {
                workers: prices.workers,
                parameter_servers: prices.parameter_servers,
                demanded_by_workers: Some(by_workers),
                demanded_by_ps: Some(by_ps),
            }
        },
        competitive_ratio_bound: prices.competitive_ratio_bound(),
        admitted,
        rejected: session.decisions.len() - admitted,
        total_utility: session.decisions.iter().filter(|d| d.admitted).map(|d| d.utility).sum(),
        decisions: session.decisions.clone(),
        usage,
        audit: None,
    }
}

/// Create an OASiS session: the pools and horizon, and the prices given or estimated.
#[utoipa::path(post, path = "/v1/oasis/sessions", tag = "oasis",
    request_body(content = CreateOasisSession, description = "The cluster and the prices"),
    responses(
        (status = 201, description = "Created; `Location` is its URL", body = OasisView,
            headers(("Location" = String, description = "/v1/oasis/sessions/{id}"))),
        (status = 400, description = "Malformed or invalid (the field is named)", body = ErrorResponse),
        (status = 422, description = "More slots × servers than a session keeps (`unsupported`)", body = ErrorResponse),
        (status = 500, description = "The store could not make it durable", body = ErrorResponse),
    ))]
pub async fn create(State(state): State<SharedState>, Caller(caller): Caller, body: Body) -> ApiResult<Response> {
    let spec: CreateOasisSession = parse(body.text()?)?;
    let session = OasisSession::build(&spec)?;
    refuse_at_creation(&spec, &session)?;
    let _place = state.reserve_session(&caller)?;
    let id = state.sessions.new_id();
    let created_at = state.oasis.create(&id, caller.owner(), spec, session.clone()).await?;
    let answer = view(&id, created_at, &session);
    let location = format!("/v1/oasis/sessions/{id}");
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(answer)).into_response())
}

/// List the OASiS sessions (with tokens: the tenant's own; every tenant's for `admin`).
#[utoipa::path(get, path = "/v1/oasis/sessions", tag = "oasis",
    responses((status = 200, description = "Every live OASiS session the caller may see, oldest first", body = SessionEntries)))]
pub async fn list(State(state): State<SharedState>, Caller(caller): Caller) -> Json<SessionEntries> {
    Json(state.oasis.list(&caller).await)
}

/// Get an OASiS session: its prices, decisions and committed use; with `?audit=N`, its owner and
/// its last N events with the token that made each.
#[utoipa::path(get, path = "/v1/oasis/sessions/{id}", tag = "oasis",
    params(("id" = String, Path, description = "Session id"), AuditQuery),
    responses(
        (status = 200, description = "The session as of its last acknowledged job", body = OasisView),
        (status = 400, description = "A bad `audit`", body = ErrorResponse),
        (status = 404, description = "Unknown session (or another tenant's)", body = ErrorResponse),
    ))]
pub async fn get(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    QueryParams(query): QueryParams<AuditQuery>,
) -> ApiResult<Json<OasisView>> {
    let audit = query.events()?;
    let live = state.oasis.get(&id, &caller).await?;
    let mut answer = view(&id, live.created_at, &live.machine);
    if let Some(n) = audit {
        answer.audit = Some(AuditView::load(&state.store, &id, &live.owner, n).await?);
    }
    Ok(Json(answer))
}

/// Delete an OASiS session and everything stored about it.
#[utoipa::path(delete, path = "/v1/oasis/sessions/{id}", tag = "oasis",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 204, description = "Deleted (durably)"),
        (status = 404, description = "Unknown session (or another tenant's)", body = ErrorResponse),
    ))]
pub async fn delete(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
) -> ApiResult<StatusCode> {
    state.oasis.delete(&id, &caller).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Submit a job arriving in `arrival_slot` (not before the session's slot): OASiS admits it iff
/// its best schedule pays at the current prices, and then commits that schedule.
#[utoipa::path(post, path = "/v1/oasis/sessions/{id}/jobs", tag = "oasis",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = JobSpec, description = "The job: its workload, its workers' and parameter servers' demands, its utility"),
    responses(
        (status = 200, description = "Decided (durably): admitted or not, and why", body = OasisDecision),
        (status = 400, description = "Invalid job, a duplicate id or a slot in the past (the field is named)", body = ErrorResponse),
        (status = 422, description = "A job whose schedule is too large to compute (`unsupported`, on `job.epochs` or `job.chunks`)", body = ErrorResponse),
        (status = 404, description = "Unknown session (or another tenant's)", body = ErrorResponse),
    ))]
pub async fn submit(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    body: Body,
) -> ApiResult<Json<OasisDecision>> {
    let job: JobSpec = parse(body.text()?)?;
    Ok(Json(state.oasis.update(&id, &caller, Event::Submit(job)).await?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn explanations_write_large_numbers_in_scientific_notation() {
        assert_eq!(super::number(13.0), "13");
        assert_eq!(super::number(-0.1250004), "-0.125");
        assert_eq!(super::number(1e20), "1.000000e20");
        assert_eq!(super::number(-2.5e99), "-2.500000e99");
    }
}
