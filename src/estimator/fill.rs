//! `estimate_missing` in a request of the contract: every job's throughputs on the cluster's
//! worker types that it leaves out (absent or null) are estimated from those it gives, before
//! validation, so the policies see a full throughput matrix. What was estimated is reported.

use super::{ByScaleFactor, Column, EstimateOptions};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::request::Request;
use crate::workload::throughputs::ThroughputTable;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

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

/// Fills the throughputs `request` leaves out when it asks (`estimate_missing: true`); a no-op
/// otherwise. Worker types the reference lacks are left as the request has them.
pub fn fill_missing(request: &mut Request, reference: Option<&ThroughputTable>) -> Result<Estimated> {
    let mut estimated = Estimated::new();
    if request.estimate_missing != Some(true) {
        return Ok(estimated);
    }
    let table = reference.ok_or_else(|| {
        ArbiterError::at(
            ErrorCode::MissingField,
            "estimate_missing",
            "estimate_missing needs a reference matrix: start the server or `arbiter solve` with --reference-throughputs FILE",
        )
    })?;
    let known_types = table.worker_types();
    let types: Vec<String> = request.cluster.worker_types.keys().filter(|w| known_types.contains(w)).cloned().collect();
    let mut estimators = ByScaleFactor::new(table, types.clone(), false);
    for (i, job) in request.jobs.iter_mut().enumerate() {
        let missing: Vec<&String> =
            types.iter().filter(|w| job.throughput.get(*w).copied().flatten().is_none()).collect();
        if missing.is_empty() {
            continue;
        }
        // An invalid scale factor is validation's to refuse, with its own message.
        let scale_factor = match job.scale_factor.unwrap_or(1.0) {
            s if s >= 1.0 && s.fract() == 0.0 && s <= f64::from(u32::MAX) => s as u32,
            _ => continue,
        };
        let field = format!("jobs[{i}].throughput");
        let estimator = estimators.get(scale_factor, &field)?;
        let mut measured = Vec::new();
        for (w, value) in &job.throughput {
            if let (Some(v), Some(j)) =
                (value, estimator.reference().column_index(&Column::Solo { worker_type: w.clone() }))
            {
                measured.push((j, *v));
            }
        }
        let estimate = estimator.estimate(&measured, EstimateOptions::default()).map_err(|e| ArbiterError {
            message: format!("{} (job {:?}, estimate_missing)", e.message, job.id),
            field: Some(field.clone()),
            ..e
        })?;
        let mut row = IndexMap::new();
        for w in missing {
            let Some(j) = estimator.reference().column_index(&Column::Solo { worker_type: w.clone() }) else {
                continue;
            };
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
            estimated.insert(job.id.clone(), row);
        }
    }
    Ok(estimated)
}
