//! `estimate_missing` in a request of the contract: every job's throughputs on the cluster's
//! worker types that it leaves out (absent or null) are estimated from those it gives, before
//! validation, so the policies see a full throughput matrix, and so are the worker types a
//! colocation leaves out. What was estimated is reported.

use super::{ByScaleFactor, Column, Estimate, EstimateOptions};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::request::Request;
use crate::workload::throughputs::ThroughputTable;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// One estimated entry of the request's throughput matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EstimatedThroughput {
    pub steps_per_second: f64,
    /// The relative error such estimates made on the reference jobs (see the estimator page).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_relative_error: Option<f64>,
    /// The reference job nearest to the job's completed row.
    pub fingerprint: String,
}

/// `estimated[job][worker type]`: the entries the estimator filled in.
pub type Estimated = IndexMap<String, IndexMap<String, EstimatedThroughput>>;

/// With `estimate_missing`: colocated throughputs a colocation leaves out on a worker type, as
/// `[first job, second job]` steps/s while sharing it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EstimatedColocation {
    pub jobs: [String; 2],
    pub throughput: IndexMap<String, [f64; 2]>,
}

/// What the estimator filled in a request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filled {
    pub throughput: Estimated,
    pub colocations: Vec<EstimatedColocation>,
}

/// `estimate_missing` without a reference matrix to estimate from.
pub fn no_reference() -> ArbiterError {
    ArbiterError::at(
        ErrorCode::MissingField,
        "estimate_missing",
        "estimate_missing needs a reference matrix: start the server or `arbiter solve` with --reference-throughputs FILE",
    )
}

/// Fills the throughputs `request` leaves out when it asks (`estimate_missing: true`); a no-op
/// otherwise. Worker types the reference lacks are left as the request has them. A colocation's
/// missing worker types are filled from each job's completed row beside the reference job that is
/// the other's fingerprint.
pub fn fill_missing(request: &mut Request, reference: Option<&ThroughputTable>) -> Result<Filled> {
    let mut filled = Filled::default();
    if request.estimate_missing != Some(true) {
        return Ok(filled);
    }
    let Some(table) = reference else {
        // Rows that lack nothing need no reference (a session that estimates, replayed by a
        // server started without one, still takes them).
        let measured = |row: &BTreeMap<String, Option<f64>>, w: &String| row.get(w).copied().flatten().is_some();
        let types = || request.cluster.worker_types.keys();
        let complete = request.jobs.iter().all(|job| types().all(|w| measured(&job.throughput, w)))
            && request.colocations.iter().flatten().all(|c| types().all(|w| c.throughput.contains_key(w)));
        return if complete { Ok(filled) } else { Err(no_reference()) };
    };
    let known_types = table.worker_types();
    let types: Vec<String> = request.cluster.worker_types.keys().filter(|w| known_types.contains(w)).cloned().collect();
    let colocations = request.colocations.clone().unwrap_or_default();
    let paired: HashSet<&str> = colocations
        .iter()
        .filter(|c| types.iter().any(|w| !c.throughput.contains_key(w)))
        .flat_map(|c| c.jobs.iter().map(String::as_str))
        .collect();
    let mut estimators = ByScaleFactor::new(table, types.clone(), !paired.is_empty());
    let mut rows: HashMap<String, (u32, Estimate)> = HashMap::new();
    for (i, job) in request.jobs.iter_mut().enumerate() {
        let missing: Vec<&String> =
            types.iter().filter(|w| job.throughput.get(*w).copied().flatten().is_none()).collect();
        if missing.is_empty() && !paired.contains(job.id.as_str()) {
            continue;
        }
        // An invalid scale factor is validation's to refuse, with its own message.
        let Some(scale_factor) = super::whole_scale_factor(job.scale_factor.unwrap_or(1.0)) else { continue };
        // A throughput validation refuses is left to it, with its own field and message.
        if job.throughput.values().flatten().any(|&v| crate::problem::refusal(v, 0.0, "").is_some()) {
            continue;
        }
        let field = format!("jobs[{i}].throughput");
        // No reference jobs of this size: the scale factor is what cannot be estimated.
        let estimator = estimators.get(scale_factor, &format!("jobs[{i}].scale_factor"))?;
        let reference = estimator.reference();
        let measured: Vec<(usize, f64)> = job
            .throughput
            .iter()
            .filter_map(|(w, v)| Some((reference.column_index(&Column::Solo { worker_type: w.clone() })?, (*v)?)))
            .collect();
        let estimate = estimator.estimate(&measured, EstimateOptions::default()).map_err(|e| {
            // Measured only on types the reference does not know: say so.
            let unknown: Vec<&str> = job
                .throughput
                .iter()
                .filter(|(w, v)| v.is_some_and(|v| v > 0.0) && !types.contains(w))
                .map(|(w, _)| w.as_str())
                .collect();
            let message = if !unknown.is_empty() && !measured.iter().any(|&(_, v)| v > 0.0) {
                format!(
                    "job {:?} is measured only on worker types the reference throughputs do not have ({}); \
                     estimate_missing needs a positive throughput on one of {}",
                    job.id,
                    unknown.join(", "),
                    types.join(", ")
                )
            } else {
                format!("{} (job {:?}, estimate_missing)", e.message, job.id)
            };
            ArbiterError { message, field: Some(field.clone()), ..e }
        })?;
        let mut row = IndexMap::new();
        for w in missing {
            let Some(j) = reference.column_index(&Column::Solo { worker_type: w.clone() }) else { continue };
            let Some(value) = estimate.values[j] else { continue };
            let error = estimate.expected_relative_error[j];
            row.insert(
                w.clone(),
                EstimatedThroughput {
                    steps_per_second: value,
                    expected_relative_error: error.is_finite().then_some(error),
                    fingerprint: estimate.fingerprint.clone(),
                },
            );
        }
        for (w, entry) in &row {
            job.throughput.insert(w.clone(), Some(entry.steps_per_second));
        }
        if !row.is_empty() {
            filled.throughput.insert(job.id.clone(), row);
        }
        rows.insert(job.id.clone(), (scale_factor, estimate));
    }
    for (k, colocation) in request.colocations.iter_mut().flatten().enumerate() {
        let [a, b] = &colocation.jobs;
        let (Some((sa, ea)), Some((sb, eb))) = (rows.get(a), rows.get(b)) else { continue };
        if sa != sb {
            continue; // unequal scale factors: validation refuses the colocation
        }
        let estimator = estimators.get(*sa, &format!("colocations[{k}]"))?;
        let beside = |estimate: &Estimate, partner: &Estimate, w: &String| {
            let column = Column::Pair { worker_type: w.clone(), partner: partner.fingerprint.clone() };
            estimator.reference().column_index(&column).and_then(|j| estimate.values[j])
        };
        let mut added = IndexMap::new();
        for w in types.iter().filter(|w| !colocation.throughput.contains_key(*w)) {
            // A job measured at 0 alone on `w` cannot share it: the pair stays off `w`.
            if let (Some(x), Some(y)) = (beside(ea, eb, w), beside(eb, ea, w)) {
                if x > 0.0 && y > 0.0 {
                    added.insert(w.clone(), [x, y]);
                }
            }
        }
        colocation.throughput.extend(added.iter().map(|(w, v)| (w.clone(), *v)));
        if !added.is_empty() {
            filled.colocations.push(EstimatedColocation { jobs: colocation.jobs.clone(), throughput: added });
        }
    }
    Ok(filled)
}
