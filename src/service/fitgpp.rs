//! FitGpp sessions: a cluster of nodes with cores, memory and GPUs under a FIFO queue and a
//! preemption policy (`scheduling::fitgpp`), on its client's clock. Jobs arrive with their kind
//! and resources; `advance` moves the clock; every answer lists the jobs that started and the
//! preemptions with their grace deadlines. Durable like sessions: the creation body and each event
//! are stored before they are acknowledged, and replayed at start (the cluster is deterministic).
//! No scheduling logic here.

use super::audit::{AuditQuery, AuditView};
use super::auth::Caller;
use super::error::{ApiResult, ErrorResponse};
use super::extract::{Body, Params, QueryParams};
use super::replayed::{parse, Replayed, ReplayedSessions, SessionEntries};
use super::state::SharedState;
pub use crate::scheduling::fitgpp::input::{FitGppJob, FitGppNodeGroup};
use crate::scheduling::fitgpp::{input, preemption, Cluster, Pass, Phase, Resources};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /v1/fitgpp/sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateFitGppSession {
    /// Groups of identical nodes.
    pub nodes: Vec<FitGppNodeGroup>,
    /// `fitgpp` (default), `lrtp`, `rand` or `none` (non-preemptive FIFO).
    #[serde(default = "default_policy")]
    pub preemption: String,
    /// FitGpp's weight of the grace period (default 1).
    #[serde(default = "one")]
    pub lambda: f64,
    /// The cap P on preemptions per BE job (default 1).
    #[serde(default = "one_u32")]
    pub max_preemptions: u32,
    /// FitGpp preempts random BE jobs when no single one frees enough.
    #[serde(default)]
    pub random_fallback: bool,
    /// Seeds `rand` and the random fallback.
    #[serde(default)]
    pub seed: u64,
}

fn default_policy() -> String {
    "fitgpp".into()
}
fn one() -> f64 {
    1.0
}
fn one_u32() -> u32 {
    1
}

/// `POST /v1/fitgpp/sessions/{id}/advance`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FitGppAdvance {
    /// Session seconds; not before the session's time.
    pub to: f64,
}

/// A stored event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Submit(FitGppJob),
    Advance(FitGppAdvance),
}

/// What the clock's moves and a job's arrival did.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FitGppPass {
    /// The session's time after the event.
    pub now: f64,
    pub started: Vec<FitGppStarted>,
    pub preemptions: Vec<FitGppPreemption>,
    /// TE jobs waiting for their victims' grace periods, and when they start.
    pub reserved: Vec<FitGppReserved>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FitGppStarted {
    pub job: String,
    pub node: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FitGppPreemption {
    pub job: String,
    pub node: usize,
    /// When it was told to stop.
    pub at: f64,
    /// When its grace period ends: its resources free up and it returns to the head of the queue.
    pub grace_deadline: f64,
    /// The TE job it makes room for.
    pub for_job: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FitGppReserved {
    pub job: String,
    pub node: usize,
    pub starts_at: f64,
}

/// A FitGpp session as of its last acknowledged event.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FitGppView {
    pub id: String,
    pub created_at: f64,
    pub now: f64,
    pub preemption: String,
    pub nodes: Vec<FitGppNodeView>,
    /// The FIFO queue, head first.
    pub queue: Vec<String>,
    /// TE jobs waiting for room.
    pub te_waiting: Vec<String>,
    pub jobs: Vec<FitGppJobView>,
    /// With `?audit=N`: the owner, the creating token and the last N events with their tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FitGppNodeView {
    pub capacity: FitGppResources,
    pub free: FitGppResources,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, ToSchema)]
pub struct FitGppResources {
    pub cpus: u32,
    pub memory_gb: u32,
    pub gpus: u32,
}

impl From<Resources> for FitGppResources {
    fn from(r: Resources) -> Self {
        FitGppResources { cpus: r.cpus, memory_gb: r.memory_gb, gpus: r.gpus }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FitGppJobView {
    pub id: String,
    pub kind: String,
    /// `queued`, `running`, `grace`, `reserved` or `finished`.
    pub phase: String,
    pub node: Option<usize>,
    pub arrival: f64,
    pub first_start: Option<f64>,
    pub finish: Option<f64>,
    pub preemptions: u32,
    /// JCT over its duration, once finished.
    pub slowdown: Option<f64>,
}

/// The key of a FitGpp session's stored creation body, `{"fitgpp": CreateFitGppSession}`.
pub const KEY: &str = "fitgpp";

/// Every live FitGpp session, by id.
pub type FitGppSessions = ReplayedSessions<Cluster>;

impl Replayed for Cluster {
    const KEY: &'static str = KEY;
    type Spec = CreateFitGppSession;
    type Event = Event;
    type Answer = FitGppPass;

    fn build(spec: &CreateFitGppSession) -> ApiResult<Cluster> {
        build(spec)
    }

    fn apply(&mut self, event: &Event) -> ApiResult<FitGppPass> {
        let pass = apply(self, event)?;
        Ok(pass_view(self, &pass))
    }

    fn jobs_after(&self, event: &Event) -> Option<usize> {
        matches!(event, Event::Submit(_)).then(|| self.jobs().len() + 1)
    }

    fn jobs(&self) -> usize {
        Cluster::jobs(self).len()
    }

    fn event_name(event: &Event) -> &'static str {
        match event {
            Event::Submit(_) => "fitgpp_submit",
            Event::Advance(_) => "fitgpp_advance",
        }
    }
}

/// The empty cluster a creation body describes.
pub(crate) fn build(spec: &CreateFitGppSession) -> ApiResult<Cluster> {
    let capacities = input::capacities(&spec.nodes, "nodes")?;
    let policy =
        preemption::named(&spec.preemption, spec.lambda, spec.max_preemptions, spec.random_fallback, spec.seed)?;
    Ok(Cluster::new(&capacities, policy)?)
}

/// Applies one event to the cluster.
pub(crate) fn apply(cluster: &mut Cluster, event: &Event) -> ApiResult<Pass> {
    match event {
        Event::Advance(a) => Ok(cluster.advance_to(a.to).map_err(|e| e.field_renamed("time", "to"))?),
        Event::Submit(job) => {
            let mut pass =
                cluster.advance_to(job.at.unwrap_or(cluster.now())).map_err(|e| e.field_renamed("time", "at"))?;
            // The body is the job: its fields are named as the body names them. Its demand is
            // `cpus`, `memory_gb` and `gpus` together, no one field: the job is named instead.
            cluster.submit(job.spec()).map_err(|e| match e.field_within("job") {
                e if e.field.as_deref() == Some("demand") => {
                    crate::error::ArbiterError { field: None, ..e }.with_jobs(vec![job.id.clone()])
                }
                e => e,
            })?;
            pass.extend(cluster.schedule());
            // Grace periods of 0 s end now: their victims leave and the TE job starts in this pass.
            pass.extend(cluster.advance_to(cluster.now())?);
            Ok(pass)
        }
    }
}

/// The answer to an event.
pub fn pass_view(cluster: &Cluster, pass: &Pass) -> FitGppPass {
    let id = |j: usize| cluster.jobs()[j].spec.id.clone();
    FitGppPass {
        now: cluster.now(),
        started: pass.started.iter().map(|&(j, node)| FitGppStarted { job: id(j), node }).collect(),
        preemptions: pass
            .preemptions
            .iter()
            .map(|p| FitGppPreemption {
                job: id(p.victim),
                node: p.node,
                at: p.at,
                grace_deadline: p.grace_deadline,
                for_job: id(p.for_job),
            })
            .collect(),
        reserved: pass
            .reserved
            .iter()
            .map(|&(j, node, at)| FitGppReserved { job: id(j), node, starts_at: at })
            .collect(),
    }
}

/// The session's view.
pub fn view(id: &str, created_at: f64, preemption: &str, cluster: &Cluster) -> FitGppView {
    let name = |j: usize| cluster.jobs()[j].spec.id.clone();
    FitGppView {
        id: id.to_string(),
        created_at,
        now: cluster.now(),
        preemption: preemption.to_string(),
        nodes: cluster
            .nodes()
            .iter()
            .map(|n| FitGppNodeView { capacity: n.capacity.into(), free: n.free().into() })
            .collect(),
        queue: cluster.queue().map(name).collect(),
        te_waiting: cluster.te_waiting().iter().map(|&j| name(j)).collect(),
        jobs: cluster
            .jobs()
            .iter()
            .map(|j| FitGppJobView {
                id: j.spec.id.clone(),
                kind: j.kind().name().to_string(),
                phase: match j.phase {
                    Phase::Queued => "queued",
                    Phase::Running { .. } => "running",
                    Phase::Grace { .. } => "grace",
                    Phase::Reserved { .. } => "reserved",
                    Phase::Finished => "finished",
                }
                .to_string(),
                node: j.node(),
                arrival: j.arrival,
                first_start: j.first_start,
                finish: j.finish,
                preemptions: j.preemptions,
                slowdown: j.slowdown(),
            })
            .collect(),
        audit: None,
    }
}

/// Create a FitGpp session: nodes of cores, memory and GPUs under FIFO and a preemption policy.
#[utoipa::path(post, path = "/v1/fitgpp/sessions", tag = "fitgpp",
    request_body(content = CreateFitGppSession, description = "Node groups and the preemption policy"),
    responses(
        (status = 201, description = "Created; `Location` is its URL", body = FitGppView,
            headers(("Location" = String, description = "/v1/fitgpp/sessions/{id}"))),
        (status = 400, description = "Malformed or invalid (the field is named)", body = ErrorResponse),
        (status = 500, description = "The store could not make it durable", body = ErrorResponse),
    ))]
pub async fn create(State(state): State<SharedState>, Caller(caller): Caller, body: Body) -> ApiResult<Response> {
    let spec: CreateFitGppSession = parse(body.text()?)?;
    let cluster = build(&spec)?;
    let _place = state.reserve_session(&caller)?;
    let id = state.sessions.new_id();
    let created_at = state.fitgpp.create(&id, caller.owner(), spec.clone(), cluster.clone()).await?;
    let answer = view(&id, created_at, &spec.preemption, &cluster);
    let location = format!("/v1/fitgpp/sessions/{id}");
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(answer)).into_response())
}

/// List the FitGpp sessions (with tokens: the tenant's own; every tenant's for `admin`).
#[utoipa::path(get, path = "/v1/fitgpp/sessions", tag = "fitgpp",
    responses((status = 200, description = "Every live FitGpp session the caller may see, oldest first", body = SessionEntries)))]
pub async fn list(State(state): State<SharedState>, Caller(caller): Caller) -> Json<SessionEntries> {
    Json(state.fitgpp.list(&caller).await)
}

/// Get a FitGpp session: its nodes, queue and jobs; with `?audit=N`, its owner and its last N
/// events with the token that made each.
#[utoipa::path(get, path = "/v1/fitgpp/sessions/{id}", tag = "fitgpp",
    params(("id" = String, Path, description = "Session id"), AuditQuery),
    responses(
        (status = 200, description = "The session as of its last acknowledged event", body = FitGppView),
        (status = 400, description = "A bad `audit`", body = ErrorResponse),
        (status = 404, description = "Unknown session (or another tenant's)", body = ErrorResponse),
    ))]
pub async fn get(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    QueryParams(query): QueryParams<AuditQuery>,
) -> ApiResult<Json<FitGppView>> {
    let audit = query.events()?;
    let live = state.fitgpp.get(&id, &caller).await?;
    let mut answer = view(&id, live.created_at, &live.spec.preemption, &live.machine);
    if let Some(n) = audit {
        answer.audit = Some(AuditView::load(&state.store, &id, &live.owner, n).await?);
    }
    Ok(Json(answer))
}

/// Delete a FitGpp session and everything stored about it.
#[utoipa::path(delete, path = "/v1/fitgpp/sessions/{id}", tag = "fitgpp",
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
    state.fitgpp.delete(&id, &caller).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Submit a job: it arrives at `at` (events up to then run first) and is scheduled at once; a TE
/// job that does not fit may preempt BE jobs, reported with their grace deadlines.
#[utoipa::path(post, path = "/v1/fitgpp/sessions/{id}/jobs", tag = "fitgpp",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = FitGppJob, description = "The job, its kind and resources"),
    responses(
        (status = 200, description = "Accepted (durably): what started and what was preempted", body = FitGppPass),
        (status = 400, description = "Invalid job, a duplicate id or a time in the past (the field is named)", body = ErrorResponse),
        (status = 404, description = "Unknown session (or another tenant's)", body = ErrorResponse),
    ))]
pub async fn submit(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    body: Body,
) -> ApiResult<Json<FitGppPass>> {
    let job: FitGppJob = parse(body.text()?)?;
    Ok(Json(state.fitgpp.update(&id, &caller, Event::Submit(job)).await?))
}

/// Move the session's clock: completions and grace-period ends up to `to`, each followed by a
/// scheduling pass.
#[utoipa::path(post, path = "/v1/fitgpp/sessions/{id}/advance", tag = "fitgpp",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = FitGppAdvance, description = "The session time to move to"),
    responses(
        (status = 200, description = "Done (durably): what started and what was preempted", body = FitGppPass),
        (status = 400, description = "A time in the past", body = ErrorResponse),
        (status = 404, description = "Unknown session (or another tenant's)", body = ErrorResponse),
    ))]
pub async fn advance(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    body: Body,
) -> ApiResult<Json<FitGppPass>> {
    let to: FitGppAdvance = parse(body.text()?)?;
    Ok(Json(state.fitgpp.update(&id, &caller, Event::Advance(to)).await?))
}
