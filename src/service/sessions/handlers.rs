//! The session endpoints: thin handlers that read the path and body, turn them into an event
//! (or a read of the last durable state), and render the answer. No mechanism logic lives here.

use super::events::Progress;
use super::events::{Applied, Event, Stored, Throughputs};
use super::registry::{apply_live, Entry};
use super::spec::CreateSession;
use super::views::{self, AllocationView, ClusterView, JobView, RoundView, SessionList, SessionView};
use crate::error::{ArbiterError, ErrorCode};
use crate::lp::Backend;
use crate::mechanism::Session;
use crate::problem::positive;
use crate::request::JobSpec;
use crate::service::audit::{AuditQuery, AuditView};
use crate::service::auth::{Caller, Principal};
use crate::service::error::{ApiError, ApiResult, Code, ErrorResponse};
use crate::service::extract::{Body, Params, QueryParams};
use crate::service::quotas::check_jobs;
use crate::service::state::SharedState;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use std::time::Instant;
use utoipa::IntoParams;

/// Solves the session's allocation in `decide`, with the session's budget under the server's
/// ceiling, timing it into the metrics.
pub(crate) fn solve_now(state: &SharedState, entry: &Entry, session: &Session) -> ApiResult<Stored> {
    solve_within(state, entry.spec.budget(None, state.config.max_solve_seconds), session)
}

/// Solves the session's allocation within `budget` seconds, timing it into the metrics.
fn solve_within(state: &SharedState, budget: f64, session: &Session) -> ApiResult<Stored> {
    let backend = Backend::default().within(budget);
    let start = Instant::now();
    let result = session.solve_colocated_allocation(backend);
    let outcome = result.as_ref().map_or_else(|e| Code::Library(e.code).as_str(), |_| "ok".into());
    state.metrics.observe_solve("session", start.elapsed().as_secs_f64(), &outcome);
    Ok(Stored::of(&result?))
}

/// Runs `decide` as one event of `caller` on session `id` (see `Sessions::update`) and counts it.
pub(crate) async fn update<R, F>(
    state: &SharedState,
    caller: &Principal,
    id: &str,
    solver: bool,
    decide: F,
) -> ApiResult<R>
where
    R: Send + 'static,
    F: FnOnce(&Entry, &mut Session) -> ApiResult<(Event, R)> + Send + 'static,
{
    let limiter = solver.then_some(&state.limiter);
    // The event is counted where it is made durable (`Sessions::update`).
    state.sessions.update(id, caller, limiter, decide).await
}

/// List the sessions (with tokens: the tenant's own; every tenant's for `admin`).
#[utoipa::path(get, path = "/v1/sessions", tag = "sessions",
    responses((status = 200, description = "Every live session the caller may see, oldest first", body = SessionList)))]
pub async fn list(State(state): State<SharedState>, Caller(caller): Caller) -> Json<SessionList> {
    let sessions =
        state.sessions.all(&caller).iter().map(|e| views::summary(&e.id, e.created_at, &e.current())).collect();
    Json(SessionList { sessions })
}

/// Create a session: a cluster run by a policy under the round-based mechanism.
#[utoipa::path(post, path = "/v1/sessions", tag = "sessions",
    request_body(content = CreateSession, description = "Cluster, policy, optional initial jobs and the mechanism's knobs"),
    responses(
        (status = 201, description = "Created; `Location` is its URL", body = SessionView,
            headers(("Location" = String, description = "/v1/sessions/{id}"))),
        (status = 400, description = "Malformed or invalid (the field is named)", body = ErrorResponse),
        (status = 422, description = "Asks for what a session does not do (`unsupported`, the field named): space sharing (`space_sharing`, `colocations`), an LP policy with other stages in `composition`", body = ErrorResponse),
        (status = 429, description = "Overloaded; see `Retry-After`", body = ErrorResponse),
        (status = 500, description = "The store could not make it durable", body = ErrorResponse),
    ))]
pub async fn create(State(state): State<SharedState>, Caller(caller): Caller, body: Body) -> ApiResult<Response> {
    let _place = state.reserve_session(&caller)?;
    let id = state.sessions.new_id();
    let shared = state.clone();
    let owner = caller.owner();
    let quota = caller.counted().copied();
    let (entry, ignored_fields) = state
        .limiter
        .run(move || -> ApiResult<_> {
            let filled = super::estimates::fill_created(body.text()?, shared.reference.as_deref(), quota.as_ref())?;
            let entry = shared.sessions.create(id, &filled.body, owner, quota.as_ref())?;
            Ok((entry, filled.ignored_fields))
        })
        .await??;
    let view = views::session(&entry.id, entry.created_at, &entry.spec, &entry.current())?;
    let view = SessionView { ignored_fields, ..view };
    let location = format!("/v1/sessions/{}", entry.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(view)).into_response())
}

/// Get a session: its cluster, jobs, allocation and received time; with `?audit=N`, its owner
/// and its last N events with the token that made each.
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "Session id"), AuditQuery),
    responses(
        (status = 200, description = "The session as of its last acknowledged event", body = SessionView),
        (status = 400, description = "A bad `audit`", body = ErrorResponse),
        (status = 404, description = "Unknown session (or another tenant's)", body = ErrorResponse),
    ))]
pub async fn get(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    QueryParams(query): QueryParams<AuditQuery>,
) -> ApiResult<Json<SessionView>> {
    let audit = query.events()?;
    let entry = state.sessions.get(&id, &caller)?;
    let mut view = views::session(&entry.id, entry.created_at, &entry.spec, &entry.current())?;
    if let Some(n) = audit {
        view.audit = Some(AuditView::load(&state.store, &entry.id, &entry.owner, n).await?);
    }
    Ok(Json(view))
}

/// Delete a session and everything stored about it.
#[utoipa::path(delete, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 204, description = "Deleted (durably)"),
        (status = 404, description = "Unknown session", body = ErrorResponse),
    ))]
pub async fn delete(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
) -> ApiResult<StatusCode> {
    state.sessions.delete(&id, &caller).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Add a job (a job of the contract). Without `arrival` it arrives at the session's time.
#[utoipa::path(post, path = "/v1/sessions/{id}/jobs", tag = "sessions",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = JobSpec, description = "The job, as in the contract's `jobs`"),
    responses(
        (status = 201, description = "Added (durably); it gets an allocation at the next round", body = JobView),
        (status = 400, description = "Invalid job or duplicate id (the field is named)", body = ErrorResponse),
        (status = 404, description = "Unknown session", body = ErrorResponse),
    ))]
pub async fn add_job(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    body: Body,
) -> ApiResult<(StatusCode, Json<JobView>)> {
    let view = add_job_text(&state, &caller, &id, body.text()?.to_string()).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Adds the job `text` (a job of the contract) to session `id` for `caller`: within its quota,
/// with missing throughputs estimated when the session asks for it.
pub(crate) async fn add_job_text(
    state: &SharedState,
    caller: &Principal,
    id: &str,
    text: String,
) -> ApiResult<JobView> {
    let reference = state.reference.clone();
    let limits = caller.counted().copied();
    update(state, caller, id, false, move |entry, session| {
        check_jobs(limits.as_ref(), session.num_jobs() + 1)?;
        let filled = super::estimates::fill_added_job(&text, &entry.spec, session, reference.as_deref())?;
        let event = Event::AddJob { body: filled.body };
        let (event, _) = apply_live(entry, session, event)?;
        let added = session.job_ids().last().cloned().ok_or_else(|| ApiError::Internal("no job added".into()))?;
        if let Some(never) = super::spec::never_runs(session, &added) {
            return Err(ArbiterError::at(never.code, never.field, format!("job {added:?}: {}", never.why)).into());
        }
        let view = JobView { ignored_fields: filled.ignored_fields, ..views::job(session, &added)? };
        Ok((event, view))
    })
    .await
}

/// Remove a job (finished or withdrawn); its GPUs are free from the next round.
#[utoipa::path(delete, path = "/v1/sessions/{id}/jobs/{job}", tag = "sessions",
    params(("id" = String, Path, description = "Session id"), ("job" = String, Path, description = "Job id")),
    responses(
        (status = 204, description = "Removed (durably)"),
        (status = 404, description = "Unknown session or job", body = ErrorResponse),
    ))]
pub async fn remove_job(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params((id, job)): Params<(String, String)>,
) -> ApiResult<StatusCode> {
    let event = Event::RemoveJob { job };
    update(&state, &caller, &id, false, move |entry, session| Ok((apply_live(entry, session, event)?.0, ()))).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Report a job's progress: steps done and the measured throughput on a worker type.
#[utoipa::path(post, path = "/v1/sessions/{id}/jobs/{job}/progress", tag = "sessions",
    params(("id" = String, Path, description = "Session id"), ("job" = String, Path, description = "Job id")),
    request_body(content = Progress),
    responses(
        (status = 200, description = "Recorded (durably)", body = JobView),
        (status = 400, description = "Invalid numbers or unknown worker type", body = ErrorResponse),
        (status = 404, description = "Unknown session or job", body = ErrorResponse),
    ))]
pub async fn progress(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params((id, job)): Params<(String, String)>,
    body: Body,
) -> ApiResult<Json<JobView>> {
    let text = body.text()?.to_string();
    let entry = state.sessions.get(&id, &caller)?;
    // A report is checked whole before anything, a retry too (the event's replay reads a retry
    // as counted and goes no further).
    let (report, ignored): (Progress, _) = crate::service::extract::parse_object_noting(&text)?;
    let ignored_fields = ignored.named();
    Session::check_progress(&job, report.steps, report.throughput)?;
    // A retry of a report already counted: answered as the job stands, and nothing is recorded.
    // (Sequences only grow, so one already counted stays counted.)
    let session = entry.current();
    if let (Some(sequence), Ok(Some(last))) = (report.sequence, session.report_sequence(&job)) {
        if sequence <= last && session.cluster().type_index(&report.worker_type).is_some() {
            return Ok(Json(JobView { ignored_fields, ..views::job(&session, &job)? }));
        }
    }
    let event = Event::Progress { job: job.clone(), body: text };
    let view = update(&state, &caller, &id, false, move |entry, session| {
        let (event, _) = apply_live(entry, session, event)?;
        Ok((event, JobView { ignored_fields, ..views::job(session, &job)? }))
    })
    .await?;
    Ok(Json(view))
}

/// Replace the throughput rows of some jobs (all or none).
#[utoipa::path(put, path = "/v1/sessions/{id}/throughputs", tag = "sessions",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = Throughputs),
    responses(
        (status = 200, description = "Updated (durably); the allocation is stale", body = views::JobList),
        (status = 400, description = "Invalid numbers or unknown worker type", body = ErrorResponse),
        (status = 404, description = "Unknown session or job", body = ErrorResponse),
    ))]
pub async fn throughputs(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    body: Body,
) -> ApiResult<Json<views::JobList>> {
    let event = Event::Throughputs { body: body.text()?.to_string() };
    let view = update(&state, &caller, &id, false, move |entry, session| {
        let jobs: Vec<String> = match &event {
            Event::Throughputs { body } => {
                crate::service::extract::parse_object::<Throughputs>(body)?.throughputs.into_keys().collect()
            }
            _ => Vec::new(),
        };
        let (event, _) = apply_live(entry, session, event)?;
        // A row that leaves the job nowhere to run (positive only where there are no GPUs, or
        // too few for its scale factor) would hold it at no allocation for good.
        for job in &jobs {
            if let Some(never) = super::spec::never_runs(session, job) {
                let why = format!("job {job:?}: {}", never.why);
                return Err(ArbiterError::at(ErrorCode::JobCannotRun, format!("throughputs.{job}"), why).into());
            }
        }
        let jobs = jobs.iter().map(|j| views::job(session, j)).collect::<ApiResult<_>>()?;
        Ok((event, views::JobList { jobs }))
    })
    .await?;
    Ok(Json(view))
}

async fn worker_health(
    state: SharedState,
    caller: Principal,
    id: String,
    worker: String,
    healthy: bool,
) -> ApiResult<Json<ClusterView>> {
    // A worker already in that state: nothing changes and nothing is recorded (a health checker
    // that reports a failure every few seconds does not grow the session's events).
    let entry = state.sessions.get(&id, &caller)?;
    // Numbers as the session writes them (`v100/0`, not `v100/+0` or `v100/00`): the event
    // stores the name as given, and one worker should have one name in the log.
    let plain = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
    if !worker.split('/').skip(1).all(plain) {
        return Err(ArbiterError::at(
            ErrorCode::UnknownWorker,
            "worker",
            format!(
                "{} is not a worker's name: a worker is `<type>/<server>` or `<type>/<server>/<gpu>`, numbers written plainly",
                crate::error::quoted(&worker)
            ),
        )
        .into());
    }
    let session = entry.current();
    if let Ok(true) = session.worker_health_is(&worker, healthy) {
        return Ok(Json(views::session(&entry.id, entry.created_at, &entry.spec, &session)?.cluster));
    }
    let event = match healthy {
        true => Event::WorkerReturned { worker },
        false => Event::WorkerFailed { worker },
    };
    let view = update(&state, &caller, &id, false, move |entry, session| {
        let (event, _) = apply_live(entry, session, event)?;
        Ok((event, views::session(&entry.id, entry.created_at, &entry.spec, session)?.cluster))
    })
    .await?;
    Ok(Json(view))
}

/// A GPU (`v100/0/1`) or a whole server (`v100/0`) failed: it is not used until it returns.
/// Write the `/` of the name as `%2F` in the path. A worker already failed is answered as it
/// stands, and nothing is recorded.
#[utoipa::path(post, path = "/v1/sessions/{id}/workers/{worker}/fail", tag = "sessions",
    params(("id" = String, Path, description = "Session id"),
        ("worker" = String, Path, description = "`<type>/<server>` or `<type>/<server>/<gpu>`, `/` encoded as `%2F`")),
    responses(
        (status = 200, description = "Recorded (durably)", body = ClusterView),
        (status = 400, description = "Unknown worker type", body = ErrorResponse),
        (status = 404, description = "Unknown session, server or GPU", body = ErrorResponse),
    ))]
pub async fn worker_failed(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params((id, worker)): Params<(String, String)>,
) -> ApiResult<Json<ClusterView>> {
    worker_health(state, caller, id, worker, false).await
}

/// A failed GPU or server is back (one already healthy: answered as it stands, nothing recorded).
#[utoipa::path(post, path = "/v1/sessions/{id}/workers/{worker}/return", tag = "sessions",
    params(("id" = String, Path, description = "Session id"),
        ("worker" = String, Path, description = "`<type>/<server>` or `<type>/<server>/<gpu>`, `/` encoded as `%2F`")),
    responses(
        (status = 200, description = "Recorded (durably)", body = ClusterView),
        (status = 400, description = "Unknown worker type", body = ErrorResponse),
        (status = 404, description = "Unknown session, server or GPU", body = ErrorResponse),
    ))]
pub async fn worker_returned(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params((id, worker)): Params<(String, String)>,
) -> ApiResult<Json<ClusterView>> {
    worker_health(state, caller, id, worker, true).await
}

/// The current allocation (as installed; `stale` says the next round recomputes it).
#[utoipa::path(get, path = "/v1/sessions/{id}/allocation", tag = "sessions",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The allocation and the time each job received", body = AllocationView),
        (status = 404, description = "Unknown session", body = ErrorResponse),
    ))]
pub async fn allocation(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
) -> ApiResult<Json<AllocationView>> {
    let entry = state.sessions.get(&id, &caller)?;
    Ok(Json(views::allocation(&entry.id, &entry.current())?))
}

/// Recompute the allocation now with the session's policy (received time resets, deficits carry).
#[utoipa::path(post, path = "/v1/sessions/{id}/allocation", tag = "sessions",
    params(("id" = String, Path, description = "Session id"), SolveQuery),
    responses(
        (status = 200, description = "The new allocation (durable)", body = AllocationView),
        (status = 400, description = "A bad `max_solve_seconds`", body = ErrorResponse),
        (status = 404, description = "Unknown session", body = ErrorResponse),
        (status = 422, description = "Infeasible: the jobs are named", body = ErrorResponse),
        (status = 429, description = "Overloaded; see `Retry-After`", body = ErrorResponse),
        (status = 504, description = "The solve budget ran out; nothing changed", body = ErrorResponse),
    ))]
pub async fn recompute(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    QueryParams(query): QueryParams<SolveQuery>,
) -> ApiResult<Json<AllocationView>> {
    let asked = query.max_solve_seconds()?;
    let shared = state.clone();
    let view = update(&state, &caller, &id, true, move |entry, session| {
        let budget = entry.spec.budget(asked, shared.config.max_solve_seconds);
        let event = Event::Allocation { allocation: solve_within(&shared, budget, session)? };
        let (event, _) = apply_live(entry, session, event)?;
        Ok((event, views::allocation(&entry.id, session)?))
    })
    .await?;
    Ok(Json(view))
}

/// The query of the endpoints that may solve: a budget for this solve alone.
#[derive(Debug, Clone, Copy, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SolveQuery {
    /// Seconds this solve may take, in place of the session's own `max_solve_seconds` (the
    /// server's ceiling still caps it): how a session created with too small a budget gets an
    /// allocation.
    pub max_solve_seconds: Option<f64>,
}

impl SolveQuery {
    /// The budget asked for, if any: a finite number > 0.
    fn max_solve_seconds(&self) -> ApiResult<Option<f64>> {
        let checked = self.max_solve_seconds.map(|s| positive(s, || "max_solve_seconds".into(), "max_solve_seconds"));
        Ok(checked.transpose()?)
    }
}

/// Run the next round: recompute a stale allocation, choose jobs by priority, place them.
#[utoipa::path(post, path = "/v1/sessions/{id}/rounds", tag = "sessions",
    params(("id" = String, Path, description = "Session id"), SolveQuery),
    responses(
        (status = 200, description = "The round's placements (durable)", body = RoundView),
        (status = 400, description = "A bad `max_solve_seconds`", body = ErrorResponse),
        (status = 404, description = "Unknown session", body = ErrorResponse),
        (status = 422, description = "Infeasible: the jobs are named; nothing changed", body = ErrorResponse),
        (status = 429, description = "Overloaded; see `Retry-After`", body = ErrorResponse),
        (status = 504, description = "The solve budget ran out; nothing changed", body = ErrorResponse),
    ))]
pub async fn round(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    QueryParams(query): QueryParams<SolveQuery>,
) -> ApiResult<Json<RoundView>> {
    let asked = query.max_solve_seconds()?;
    let shared = state.clone();
    let view = update(&state, &caller, &id, true, move |entry, session| {
        let budget = entry.spec.budget(asked, shared.config.max_solve_seconds);
        let allocation = if session.is_stale() { Some(solve_within(&shared, budget, session)?) } else { None };
        let recomputed = allocation.is_some();
        match apply_live(entry, session, Event::Round { allocation })? {
            (event, Applied::Round(round)) => Ok((event, views::round(&entry.id, session, &round, recomputed))),
            _ => Err(ApiError::Internal("a round event ran no round".into())),
        }
    })
    .await?;
    Ok(Json(view))
}
