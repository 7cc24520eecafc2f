//! Sessions with `estimate_missing`: a job's throughputs on the cluster's types it was not
//! measured on are estimated (the server's `--reference-throughputs`) when the job is added, and
//! stored in the event itself, beside the list of what was estimated (`estimated_throughput`), so
//! a replay needs no reference and gives the same session. The mechanism then lets the first
//! measured progress on such a type replace the estimate (`Session::mark_estimated`), and a job
//! added with `"profile": true` runs once on each such type first (`Session::mark_for_profiling`).

use super::super::error::{ApiError, ApiResult};
use super::events::Event;
use super::spec::Spec;
use crate::contract::ignored::IgnoredFields;
use crate::contract::json;
use crate::error::{ArbiterError, ErrorCode};
use crate::estimator::fill::fill_missing;
use crate::mechanism::Session;
use crate::request::{ClusterSpec, JobSpec, Request};
use crate::service::extract::{parse_object, parse_object_noting};
use crate::service::quotas::Limits;
use crate::workload::throughputs::ThroughputTable;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The key a stored job carries its estimated entries under (a client may set it too, to say
/// which of its own throughputs are estimates).
const KEY: &str = "estimated_throughput";

#[derive(Deserialize)]
struct Marks {
    id: String,
    #[serde(default)]
    estimated_throughput: BTreeMap<String, f64>,
    /// Run the job once on each type where its throughput is an estimate, first.
    #[serde(default)]
    profile: bool,
}

/// What a live job body says of its estimates, read strictly (a wrong type, or a key given twice,
/// is refused and named). Stored bodies are read by `Marks`, as they always were.
#[derive(Deserialize)]
#[allow(dead_code)] // read to be checked, never used
struct CheckedMarks {
    #[serde(default, deserialize_with = "crate::contract::unique_keys::optional")]
    estimated_throughput: Option<BTreeMap<String, f64>>,
    #[serde(default)]
    profile: Option<bool>,
}

#[derive(Deserialize)]
#[allow(dead_code)] // read to be checked, never used
struct CheckedCreation {
    #[serde(default)]
    jobs: Vec<CheckedMarks>,
}

/// A live body as the session stores it (filled when the session estimates), and the fields of
/// the body given that were ignored, as an answer names them.
pub struct Filled {
    pub body: String,
    pub ignored_fields: Vec<String>,
}

/// The paths of `ignored` (what one strict reading of `body` skipped) that reading it as `B`
/// (its marks) skips too, but for those `read_elsewhere`: the fields the session ignores.
fn ignored_also_by<B: serde::de::DeserializeOwned>(
    mut ignored: IgnoredFields,
    body: &str,
    read_elsewhere: &[&str],
) -> Vec<String> {
    read_elsewhere.iter().for_each(|path| ignored.forget(path));
    if ignored.is_empty() {
        return Vec::new();
    }
    let Ok((_, by_b)) = json::read_noting::<B>(body) else { return Vec::new() };
    ignored.retain_in(&by_b);
    ignored.named()
}

/// Refuses a live add-job body whose `estimated_throughput` or `profile` do not read (a
/// mistyped `profile` used to be ignored, and the job's estimates taken for measurements).
fn check_marks(body: &str) -> ApiResult<()> {
    parse_object::<CheckedMarks>(body).map(|_| ())
}

/// A job object (JSON) with its missing throughputs estimated and listed under `KEY`.
fn fill_job(job: &Value, cluster: &ClusterSpec, reference: Option<&ThroughputTable>) -> crate::error::Result<Value> {
    let spec: JobSpec = serde_json::from_value(job.clone())
        .map_err(|e| ArbiterError::new(ErrorCode::MalformedRequest, format!("malformed job: {e}")))?;
    let mut request =
        Request { cluster: cluster.clone(), jobs: vec![spec], estimate_missing: Some(true), ..Request::default() };
    let estimated = fill_missing(&mut request, reference).map_err(super::spec::relative_to_job)?.throughput;
    let mut filled = job.clone();
    let Some(row) = estimated.get(&request.jobs[0].id) else { return Ok(filled) };
    let Some(object) = filled.as_object_mut() else {
        return Err(ArbiterError::new(ErrorCode::MalformedRequest, "malformed job: expected a JSON object"));
    };
    let throughput = object.entry("throughput").or_insert_with(|| Value::Object(Default::default()));
    let marks: serde_json::Map<String, Value> =
        row.iter().map(|(w, e)| (w.clone(), Value::from(e.steps_per_second))).collect();
    if let Some(t) = throughput.as_object_mut() {
        t.extend(marks.clone());
    }
    // The client's own marks stay, beside the estimator's.
    match object.get_mut(KEY).and_then(Value::as_object_mut) {
        Some(given) => given.extend(marks),
        None => {
            object.insert(KEY.to_string(), Value::Object(marks));
        }
    }
    Ok(filled)
}

/// An add-job body, filled when the session (`spec`, as it stands: `session`) estimates.
pub fn fill_added_job(
    body: &str,
    spec: &Spec,
    session: &Session,
    reference: Option<&ThroughputTable>,
) -> ApiResult<Filled> {
    // Read strictly first (keys given twice, types, arrays for objects, the field named): an
    // estimating session's body is rewritten below, and a rewritten body has lost what the strict
    // reading refuses.
    let (_, ignored) = parse_object_noting::<JobSpec>(body)?;
    check_marks(body)?;
    let ignored_fields = ignored_also_by::<CheckedMarks>(ignored, body, &[]);
    if spec.create.estimate_missing != Some(true) {
        return Ok(Filled { body: body.to_string(), ignored_fields });
    }
    // Then added as a session that does not estimate adds it (to a copy): a body it refuses is
    // refused with the same error here, before an estimate could fail on it first. Whether the
    // job could never run waits for its estimates.
    super::events::apply(spec, &mut session.clone(), &Event::AddJob { body: body.to_string() })?;
    let cluster = &spec.create.cluster;
    let job: Value = serde_json::from_str(body)
        .map_err(|e| ArbiterError::new(ErrorCode::MalformedRequest, format!("malformed request: {e}")))?;
    Ok(Filled { body: fill_job(&job, cluster, reference)?.to_string(), ignored_fields })
}

/// A session creation body whose jobs are filled when it asks for `estimate_missing`, checked
/// first as every creation body is (with the caller's `quota`).
pub fn fill_created(body: &str, reference: Option<&ThroughputTable>, quota: Option<&Limits>) -> ApiResult<Filled> {
    // Not an object, or not JSON: the session's parse refuses it with its own message.
    if crate::service::extract::expect_object(body).is_err() {
        return Ok(Filled { body: body.to_string(), ignored_fields: Vec::new() });
    }
    // Read strictly first: the body is rewritten below (see `fill_added_job`). The contract's
    // `space_sharing` and `colocations` are read too (`spec::refuse_space_sharing`).
    let (_, ignored) = parse_object_noting::<super::spec::CreateSession>(body)?;
    parse_object::<CheckedCreation>(body)?;
    let ignored_fields = ignored_also_by::<CheckedCreation>(ignored, body, &["space_sharing", "colocations"]);
    Ok(Filled { body: estimated_creation(body, reference, quota)?, ignored_fields })
}

/// A creation body (read strictly) with its jobs filled when it asks for `estimate_missing`.
fn estimated_creation(body: &str, reference: Option<&ThroughputTable>, quota: Option<&Limits>) -> ApiResult<String> {
    let Ok(mut create) = serde_json::from_str::<Value>(body) else { return Ok(body.to_string()) };
    if create.get("estimate_missing") != Some(&Value::Bool(true)) {
        return Ok(body.to_string());
    }
    // Checked as a session that does not estimate checks it, up to whether its jobs could run
    // (that waits for their estimates): a body both refuse gets the same error from both.
    let (spec, _) = super::registry::check_creation(body, quota)?;
    super::spec::refuse_worker_names(&spec)?;
    // Every job added later would need it too: refused at creation, not at the first add.
    if reference.is_none() {
        return Err(crate::estimator::fill::no_reference().into());
    }
    let Some(cluster) = create.get("cluster").and_then(|c| serde_json::from_value::<ClusterSpec>(c.clone()).ok())
    else {
        return Ok(body.to_string());
    };
    if let Some(jobs) = create.get_mut("jobs").and_then(Value::as_array_mut) {
        for (i, job) in jobs.iter_mut().enumerate() {
            if job.is_object() {
                *job = fill_job(job, &cluster, reference).map_err(|e| ArbiterError {
                    field: Some(format!("jobs[{i}]{}", e.field.map_or(String::new(), |f| format!(".{f}")))),
                    ..e
                })?;
            }
        }
    }
    Ok(create.to_string())
}

/// Marks the estimated entries a stored job object lists under `KEY` in the session.
pub fn mark(session: &mut Session, job: &str) -> ApiResult<()> {
    let Ok(marks) = serde_json::from_str::<Marks>(job) else { return Ok(()) };
    for (w, _) in marks.estimated_throughput {
        let index = session.cluster().type_index(&w).ok_or_else(|| {
            ArbiterError::at(
                ErrorCode::UnknownWorkerType,
                format!("{KEY}.{w}"),
                format!("worker type {w:?} is not in the session's cluster"),
            )
        })?;
        session.mark_estimated(&marks.id, index)?;
    }
    if marks.profile {
        session.mark_for_profiling(&marks.id)?;
    }
    Ok(())
}

/// `mark` for every job of a creation body; a refusal names the job (`jobs[2].…`).
pub fn mark_created(session: &mut Session, body: &str) -> ApiResult<()> {
    let Ok(create) = serde_json::from_str::<Value>(body) else { return Ok(()) };
    for (i, job) in create.get("jobs").and_then(Value::as_array).into_iter().flatten().enumerate() {
        mark(session, &job.to_string()).map_err(|e| match e {
            ApiError::Arbiter(mut e) => {
                e.field = Some(e.field.map_or_else(|| format!("jobs[{i}]"), |f| format!("jobs[{i}].{f}")));
                ApiError::Arbiter(e)
            }
            e => e,
        })?;
    }
    Ok(())
}
