//! The extender endpoints under `/v1/sessions/{id}/k8s/`: thin handlers that read the body, take
//! a snapshot of the session, ask `decide`, and for `bind` call the binder and record the binding.
//! A body that is not the scheduler's shape, or an unknown session, is an HTTP error (the
//! contract's object); everything about one pod is answered in the verb's own result.

use super::binder::PodTarget;
use super::decide::{self, BindCheck, BindingList, Candidates, Context, EvictionList, Filtered};
use super::mapping::{read_nodes, Pod};
use super::observed::{pod_key, SeenPod};
use super::wire::{
    ExtenderArgs, ExtenderBindingArgs, ExtenderBindingResult, ExtenderFilterResult, ExtenderPreemptionArgs,
    ExtenderPreemptionResult, HostPriority,
};
use crate::error::{ArbiterError, ErrorCode};
use crate::service::auth::Caller;
use crate::service::error::{ApiError, ApiResult, ErrorResponse};
use crate::service::extract::{parse_object, Body, Params};
use crate::service::sessions::events::Event;
use crate::service::sessions::handlers::{add_job_text, update};
use crate::service::sessions::registry::{apply_live, Entry, Snapshot};
use crate::service::state::{AppState, SharedState};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;

fn context<'a>(state: &'a AppState, entry: &'a Entry, snapshot: &'a Snapshot) -> Context<'a> {
    let reference = state.reference.as_deref();
    Context {
        id: &entry.id,
        session: &snapshot.session,
        bindings: &snapshot.bindings,
        observed: &entry.observed,
        reference,
    }
}

/// The pod and candidate nodes of `ExtenderArgs`; remembers the pod's job and whole nodes' labels.
fn read_args(entry: &Entry, args: ExtenderArgs) -> ApiResult<(Pod, Candidates)> {
    let pod = Pod::read(&args.pod, "Pod")?;
    let candidates = match (args.nodes, args.node_names) {
        (Some(list), _) => {
            let nodes = read_nodes(&list, "Nodes")?;
            for node in &nodes {
                entry.observed.saw_node(&node.name, &node.labels);
            }
            Candidates::Nodes { list, nodes }
        }
        (None, Some(names)) => Candidates::Names(names),
        (None, None) => {
            return Err(ArbiterError::at(
                ErrorCode::MissingField,
                "Nodes",
                "ExtenderArgs carries the candidate nodes in Nodes or NodeNames; both are null",
            )
            .into())
        }
    };
    let seen = SeenPod { namespace: pod.namespace.clone(), name: pod.name.clone(), job: pod.job().map(str::to_string) };
    entry.observed.saw_pod(pod_key(&pod.uid, &pod.namespace, &pod.name), seen);
    Ok((pod, candidates))
}

/// A per-pod refusal the library or the session made, as the text a verb's `Error` carries.
fn pod_error(what: &str, e: ApiError) -> ApiResult<String> {
    match e {
        ApiError::Arbiter(e) => Ok(format!("arbiter: {what}: {}", e.message)),
        other => Err(other),
    }
}

/// kube-scheduler's `filter`: the nodes of the servers the current round placed the pod's job on.
#[utoipa::path(post, path = "/v1/sessions/{id}/k8s/filter", tag = "kubernetes",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = ExtenderArgs, description = "kube-scheduler's ExtenderArgs: the pod and its candidate nodes"),
    responses(
        (status = 200, description = "The passing nodes in the form they came in; the others with their reasons; `Error` for a pod Arbiter cannot place (a job the session lacks). A pod whose job is not in the session but which carries `arbiter.dev/throughputs` or `arbiter.dev/model` adds that job (durably) and waits for the next round", body = ExtenderFilterResult),
        (status = 400, description = "Not ExtenderArgs (the field is named)", body = ErrorResponse),
        (status = 404, description = "Unknown session", body = ErrorResponse),
    ))]
pub async fn filter(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    body: Body,
) -> ApiResult<Json<ExtenderFilterResult>> {
    let args: ExtenderArgs = parse_object(body.text()?)?;
    let entry = state.sessions.get(&id, &caller)?;
    let (pod, candidates) = read_args(&entry, args)?;
    let decided = decide::filter(&context(&state, &entry, &entry.snapshot()), &pod, &candidates)?;
    let Filtered::AddJob { body } = decided else {
        return match decided {
            Filtered::Answer(answer) => Ok(Json(answer)),
            Filtered::AddJob { .. } => Err(ApiError::Internal("filter asked twice to add a job".into())),
        };
    };
    if let Err(e) = add_job_text(&state, &caller, &id, body).await {
        let what = format!("the job pod {} describes cannot be added", pod.display());
        return Ok(Json(ExtenderFilterResult { error: pod_error(&what, e)?, ..Default::default() }));
    }
    match decide::filter(&context(&state, &entry, &entry.snapshot()), &pod, &candidates)? {
        Filtered::Answer(answer) => Ok(Json(answer)),
        Filtered::AddJob { .. } => Err(ApiError::Internal("the job added from a pod is not in the session".into())),
    }
}

/// kube-scheduler's `prioritize`: nodes ranked by how many of the job's GPUs the round put on their server.
#[utoipa::path(post, path = "/v1/sessions/{id}/k8s/prioritize", tag = "kubernetes",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = ExtenderArgs, description = "kube-scheduler's ExtenderArgs: the pod and its candidate nodes"),
    responses(
        (status = 200, description = "HostPriorityList: every candidate with a score from 0 to 10", body = Vec<HostPriority>),
        (status = 400, description = "Not ExtenderArgs (the field is named)", body = ErrorResponse),
        (status = 404, description = "Unknown session", body = ErrorResponse),
    ))]
pub async fn prioritize(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    body: Body,
) -> ApiResult<Json<Vec<HostPriority>>> {
    let args: ExtenderArgs = parse_object(body.text()?)?;
    let entry = state.sessions.get(&id, &caller)?;
    let (pod, candidates) = read_args(&entry, args)?;
    Ok(Json(decide::prioritize(&context(&state, &entry, &entry.snapshot()), &pod, &candidates)?))
}

/// kube-scheduler's `bind`: records the pod's binding to its job's server (durably), after the
/// server's binder has created it in Kubernetes.
#[utoipa::path(post, path = "/v1/sessions/{id}/k8s/bind", tag = "kubernetes",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = ExtenderBindingArgs, description = "kube-scheduler's ExtenderBindingArgs"),
    responses(
        (status = 200, description = "Empty `Error`: bound and recorded (a pod that is not Arbiter's: bound, not recorded); otherwise why not", body = ExtenderBindingResult),
        (status = 400, description = "Not ExtenderBindingArgs, or no PodName, PodNamespace, PodUID or Node", body = ErrorResponse),
        (status = 404, description = "Unknown session", body = ErrorResponse),
    ))]
pub async fn bind(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    body: Body,
) -> ApiResult<Json<ExtenderBindingResult>> {
    let args: ExtenderBindingArgs = parse_object(body.text()?)?;
    // kube-scheduler sends all four; a binding recorded without its namespace or UID could not be
    // matched to its pod again.
    let named = [("PodName", &args.pod_name), ("PodNamespace", &args.pod_namespace), ("PodUID", &args.pod_uid)];
    for (field, value) in named.into_iter().chain([("Node", &args.node)]) {
        if value.is_empty() {
            return Err(ArbiterError::at(ErrorCode::MissingField, field, format!("a binding names its {field}")).into());
        }
    }
    let entry = state.sessions.get(&id, &caller)?;
    let check = {
        let snapshot = entry.snapshot();
        let ctx = context(&state, &entry, &snapshot);
        decide::bind(&ctx, &args.pod_namespace, &args.pod_name, &args.pod_uid, &args.node)?
    };
    let refused = |error: String| Ok(Json(ExtenderBindingResult { error }));
    let record = match check {
        BindCheck::Refuse(reason) => return refused(reason),
        BindCheck::NotArbiters => None,
        BindCheck::Record(binding) => Some(binding),
    };
    let target = PodTarget {
        namespace: args.pod_namespace.clone(),
        name: args.pod_name.clone(),
        uid: args.pod_uid.clone(),
        node: args.node.clone(),
    };
    if let Err(why) = state.binder.bind(&target).await {
        return refused(format!("arbiter: the binding of pod {}/{} failed: {why}", target.namespace, target.name));
    }
    if let Some(binding) = record {
        let recorded = update(&state, &caller, &id, false, move |entry, session| {
            session.job(&binding.job)?;
            Ok((apply_live(entry, session, Event::PodBound { binding })?.0, ()))
        })
        .await;
        if let Err(e) = recorded {
            return refused(pod_error(
                &format!("pod {}/{} is bound but not recorded", target.namespace, target.name),
                e,
            )?);
        }
    }
    Ok(Json(ExtenderBindingResult::default()))
}

/// kube-scheduler's `preempt`: keeps the nodes and victims consistent with the current round.
#[utoipa::path(post, path = "/v1/sessions/{id}/k8s/preempt", tag = "kubernetes",
    params(("id" = String, Path, description = "Session id")),
    request_body(content = ExtenderPreemptionArgs, description = "kube-scheduler's ExtenderPreemptionArgs"),
    responses(
        (status = 200, description = "The nodes where preempting agrees with the round, with their victims by UID", body = ExtenderPreemptionResult),
        (status = 400, description = "Not ExtenderPreemptionArgs (the field is named)", body = ErrorResponse),
        (status = 404, description = "Unknown session", body = ErrorResponse),
    ))]
pub async fn preempt(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
    body: Body,
) -> ApiResult<Json<ExtenderPreemptionResult>> {
    let args: ExtenderPreemptionArgs = parse_object(body.text()?)?;
    let entry = state.sessions.get(&id, &caller)?;
    let pod = Pod::read(&args.pod, "Pod")?;
    Ok(Json(decide::preempt(&context(&state, &entry, &entry.snapshot()), &pod, &args)?))
}

/// The bound pods the current round does not run where they are: evict them.
#[utoipa::path(get, path = "/v1/sessions/{id}/k8s/evictions", tag = "kubernetes",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "Pods to evict, with the reason", body = EvictionList),
        (status = 404, description = "Unknown session", body = ErrorResponse),
    ))]
pub async fn evictions(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
) -> ApiResult<Json<EvictionList>> {
    let entry = state.sessions.get(&id, &caller)?;
    let snapshot = entry.snapshot();
    let evictions = decide::evictions(&context(&state, &entry, &snapshot))?;
    Ok(Json(EvictionList { session: entry.id.clone(), rounds: snapshot.session.rounds(), evictions }))
}

/// Every pod recorded as bound, in namespace and name order.
#[utoipa::path(get, path = "/v1/sessions/{id}/k8s/bindings", tag = "kubernetes",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The bindings", body = BindingList),
        (status = 404, description = "Unknown session", body = ErrorResponse),
    ))]
pub async fn bindings(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params(id): Params<String>,
) -> ApiResult<Json<BindingList>> {
    let entry = state.sessions.get(&id, &caller)?;
    let bindings = entry.snapshot().bindings.iter().cloned().collect();
    Ok(Json(BindingList { session: entry.id.clone(), bindings }))
}

/// Forget a bound pod (evicted or deleted). Forgetting a pod that is not bound changes nothing.
#[utoipa::path(delete, path = "/v1/sessions/{id}/k8s/bindings/{namespace}/{name}", tag = "kubernetes",
    params(("id" = String, Path, description = "Session id"),
        ("namespace" = String, Path, description = "The pod's namespace"),
        ("name" = String, Path, description = "The pod's name")),
    responses(
        (status = 204, description = "Not bound any more (durably)"),
        (status = 404, description = "Unknown session", body = ErrorResponse),
    ))]
pub async fn forget(
    State(state): State<SharedState>,
    Caller(caller): Caller,
    Params((id, namespace, name)): Params<(String, String, String)>,
) -> ApiResult<StatusCode> {
    let entry = state.sessions.get(&id, &caller)?;
    if entry.snapshot().bindings.get(&namespace, &name).is_none() {
        return Ok(StatusCode::NO_CONTENT);
    }
    let event = Event::PodForgotten { namespace, name };
    update(&state, &caller, &id, false, move |entry, session| Ok((apply_live(entry, session, event)?.0, ()))).await?;
    Ok(StatusCode::NO_CONTENT)
}
