//! A session job from what Kubernetes objects say about it: its id and scale factor from the
//! controller that found it, its throughputs and weight from annotations (`keys`). Shared by the
//! Kueue controller (Workloads) and `k8s-sync` (Pods); errors name the annotation that is wrong.

use crate::kubernetes::keys::{MODEL, THROUGHPUTS, WEIGHT};
use crate::request::JobSpec;
use crate::workload::throughputs::ThroughputTable;
use std::collections::BTreeMap;

/// Annotations of one object, in the order they are looked in (the first that has a key wins):
/// e.g. a Workload's own, then its first pod set's template's.
pub type Annotations<'a> = [&'a BTreeMap<String, String>];

fn find<'a>(annotations: &'a Annotations<'_>, key: &str) -> Option<&'a str> {
    annotations.iter().find_map(|a| a.get(key)).map(String::as_str)
}

/// The job `id` on `scale_factor` GPUs as the session's add-job body, with throughputs on the
/// session's `worker_types` (name, GPUs): from `arbiter.dev/throughputs`, then, for the types it
/// leaves out, from the `arbiter.dev/model` job type's rows of `reference` at that scale factor.
/// Types left out of both are left to the session (its estimator fills them when it has
/// `estimate_missing`; otherwise the job cannot run there). A job that asks for more GPUs than any
/// type it may run on has is refused: the session would keep it, and no round could place it.
pub fn job_spec(
    id: &str,
    scale_factor: u32,
    annotations: &Annotations<'_>,
    worker_types: &[(String, u32)],
    reference: Option<&ThroughputTable>,
) -> Result<JobSpec, String> {
    let names: Vec<&str> = worker_types.iter().map(|(name, _)| name.as_str()).collect();
    let mut throughput: BTreeMap<String, Option<f64>> = BTreeMap::new();
    if let Some(text) = find(annotations, THROUGHPUTS) {
        let given: BTreeMap<String, serde_json::Value> = serde_json::from_str(text).map_err(|e| {
            format!("annotation {THROUGHPUTS} is not a JSON object of worker type → steps/s ({e}): {text:?}")
        })?;
        for (w, value) in given {
            if !names.contains(&w.as_str()) {
                return Err(format!(
                    "annotation {THROUGHPUTS}: worker type {w:?} is not in the session's cluster (it has: {})",
                    names.join(", ")
                ));
            }
            match value.as_f64() {
                Some(x) if x.is_finite() && x >= 0.0 => throughput.insert(w, Some(x)),
                _ => return Err(format!("annotation {THROUGHPUTS}: {w}: {value} is not a number of steps/s ≥ 0")),
            };
        }
    }
    if let Some(model) = find(annotations, MODEL) {
        let table = reference.ok_or_else(|| {
            format!("annotation {MODEL} names {model:?}, but no reference throughput file was given (--reference-throughputs)")
        })?;
        let mut found = false;
        for &w in &names {
            if let Some(x) = table.solo(w, model, scale_factor) {
                found = true;
                throughput.entry(w.to_string()).or_insert(Some(x));
            }
        }
        if !found {
            return Err(format!(
                "annotation {MODEL}: {model:?} on {scale_factor} GPU(s) is not in the reference throughput file (it has: {})",
                table.job_types(scale_factor).join(", ")
            ));
        }
    }
    if throughput.is_empty() {
        return Err(format!("no throughputs: annotate it with {THROUGHPUTS} (JSON: worker type → steps/s) or {MODEL}"));
    }
    // The types it may run on: all but those given a throughput of 0 (none: the session refuses
    // a job that runs nowhere, in its own words).
    let most = (worker_types.iter())
        .filter(|(name, _)| throughput.get(name).is_none_or(|t| t.is_none_or(|x| x > 0.0)))
        .map(|&(_, gpus)| gpus)
        .max();
    if let Some(most) = most.filter(|&most| scale_factor > most) {
        return Err(format!(
            "it needs {scale_factor} GPUs at once, and the worker types it may run on have at most {most}: \
             no round could place it"
        ));
    }
    let weight = match find(annotations, WEIGHT) {
        None => None,
        Some(text) => match text.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && x > 0.0 => Some(x),
            _ => return Err(format!("annotation {WEIGHT}: {text:?} is not a number > 0")),
        },
    };
    Ok(JobSpec {
        id: id.to_string(),
        throughput,
        scale_factor: Some(f64::from(scale_factor)),
        weight,
        ..JobSpec::default()
    })
}
