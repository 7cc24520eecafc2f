//! Sessions with `estimate_missing`: a job's throughputs on the cluster's types it was not
//! measured on are estimated (the server's `--reference-throughputs`) when the job is added, and
//! stored in the event itself, beside the list of what was estimated (`estimated_throughput`), so
//! a replay needs no reference and gives the same session. The mechanism then lets the first
//! measured progress on such a type replace the estimate (`Session::mark_estimated`), and a job
//! added with `"profile": true` runs once on each such type first (`Session::mark_for_profiling`).

use super::super::error::ApiResult;
use crate::error::{ArbiterError, ErrorCode};
use crate::estimator::fill::fill_missing;
use crate::mechanism::Session;
use crate::request::{ClusterSpec, JobSpec, Request};
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
    object.insert(KEY.to_string(), Value::Object(marks));
    Ok(filled)
}

/// An add-job body, filled when the session estimates.
pub fn fill_added_job(
    body: &str,
    cluster: &ClusterSpec,
    estimate: bool,
    reference: Option<&ThroughputTable>,
) -> ApiResult<String> {
    if !estimate {
        return Ok(body.to_string());
    }
    let job: Value = serde_json::from_str(body)
        .map_err(|e| ArbiterError::new(ErrorCode::MalformedRequest, format!("malformed request: {e}")))?;
    if !job.is_object() {
        return Ok(body.to_string()); // validation refuses it with its own message
    }
    Ok(fill_job(&job, cluster, reference)?.to_string())
}

/// A session creation body whose jobs are filled when it asks for `estimate_missing`.
pub fn fill_created(body: &str, reference: Option<&ThroughputTable>) -> ApiResult<String> {
    let Ok(mut create) = serde_json::from_str::<Value>(body) else { return Ok(body.to_string()) };
    if create.get("estimate_missing") != Some(&Value::Bool(true)) {
        return Ok(body.to_string());
    }
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

/// `mark` for every job of a creation body.
pub fn mark_created(session: &mut Session, body: &str) -> ApiResult<()> {
    let Ok(create) = serde_json::from_str::<Value>(body) else { return Ok(()) };
    for job in create.get("jobs").and_then(Value::as_array).into_iter().flatten() {
        mark(session, &job.to_string())?;
    }
    Ok(())
}
