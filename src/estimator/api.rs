//! The estimator's wire format, shared by `arbiter estimate` and `POST /v1/throughputs/estimate`:
//! partial rows in (by worker type and reference partner name), completed rows out, each entry
//! saying whether it was measured or estimated and how far off such estimates were on the reference.

use super::{ByScaleFactor, Column, EstimateOptions, ReferenceMatrix, DEFAULT_REGULARIZATION};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::workload::throughputs::ThroughputTable;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Jobs with a few measured throughputs, and the reference to complete them against.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EstimateRequest {
    /// A measured-throughput table in Gavel's format (worker type → `"('<model>', <scale factor>)"`
    /// → `{"null": steps/s alone, "<other>": [this, other]}`); absent: the server's or the CLI's
    /// `--reference-throughputs` file.
    #[schema(value_type = Option<Object>)]
    pub reference: Option<serde_json::Value>,
    /// Worker types to estimate on; default: the reference's, without `*_unconsolidated`.
    pub worker_types: Option<Vec<String>>,
    /// Whether to estimate throughputs beside each reference job (default true).
    pub pairs: Option<bool>,
    /// Factors fitted per job; default: as many as its measurements allow, up to 3.
    pub rank: Option<usize>,
    /// Ridge weight on the factors (default 0.05).
    pub regularization: Option<f64>,
    pub jobs: Vec<PartialRow>,
}

/// What is known of one job.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartialRow {
    pub id: String,
    /// GPUs the job runs on, a whole number ≥ 1 (default 1): its row is completed against
    /// reference jobs of that size.
    pub scale_factor: Option<f64>,
    /// Steps/s alone, by worker type (0: cannot run there).
    #[serde(default, deserialize_with = "crate::contract::unique_keys::map")]
    pub throughput: IndexMap<String, f64>,
    /// Steps/s beside a reference job, by worker type then the reference job's name.
    #[serde(default, deserialize_with = "crate::contract::unique_keys::nested")]
    pub colocated: IndexMap<String, IndexMap<String, f64>>,
}

/// One entry of a completed row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Entry {
    pub steps_per_second: f64,
    pub estimated: bool,
    /// For an estimate: the relative error the same estimate made on the reference jobs, each held
    /// out with the same entries measured (`exp(RMS log error) − 1`). Absent when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_relative_error: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Fingerprint {
    /// The reference job nearest to the completed row.
    pub job_type: String,
    /// How far: `exp(RMS log distance) − 1` over every entry.
    pub distance: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CompletedRow {
    pub id: String,
    pub scale_factor: u32,
    pub throughput: IndexMap<String, Entry>,
    pub colocated: IndexMap<String, IndexMap<String, Entry>>,
    pub fingerprint: Fingerprint,
    /// Factors fitted to this job.
    pub rank: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EstimateResponse {
    pub jobs: Vec<CompletedRow>,
}

/// The worker types to estimate on: the request's, or the table's without `*_unconsolidated`.
pub fn worker_types(table: &ThroughputTable, requested: Option<&[String]>) -> Result<Vec<String>> {
    let available = table.worker_types();
    match requested {
        Some(types) => {
            for (i, w) in types.iter().enumerate() {
                if !available.contains(w) {
                    return Err(ArbiterError::at(
                        ErrorCode::UnknownWorkerType,
                        format!("worker_types[{i}]"),
                        format!("worker type {w:?} is not in the reference (it has: {})", available.join(", ")),
                    ));
                }
                if types[..i].contains(w) {
                    return Err(ArbiterError::at(
                        ErrorCode::MalformedRequest,
                        format!("worker_types[{i}]"),
                        format!("worker type {w:?} is named twice"),
                    ));
                }
            }
            Ok(types.to_vec())
        }
        None => Ok(available.into_iter().filter(|w| !w.ends_with("_unconsolidated")).collect()),
    }
}

/// Completes every job of `request` against its reference (or `default_reference`).
pub fn estimate(request: &EstimateRequest, default_reference: Option<&ThroughputTable>) -> Result<EstimateResponse> {
    let posted;
    let table = match (&request.reference, default_reference) {
        (Some(value), _) => {
            posted = ThroughputTable::from_json_str(&value.to_string())
                .map_err(|e| e.field_renamed("throughputs", "reference"))?;
            &posted
        }
        (None, Some(table)) => table,
        (None, None) => {
            return Err(ArbiterError::at(
                ErrorCode::MissingField,
                "reference",
                "no reference matrix: give one as the request's `reference`, or --reference-throughputs FILE to the server or `arbiter estimate`",
            ))
        }
    };
    let types = worker_types(table, request.worker_types.as_deref())?;
    if types.is_empty() {
        let field = if request.worker_types.is_some() { "worker_types" } else { "reference" };
        return Err(ArbiterError::at(ErrorCode::MissingField, field, "no worker type to estimate on"));
    }
    let options = options(request)?;
    let with_pairs = request.pairs.unwrap_or(true);
    let mut estimators = ByScaleFactor::new(table, types, with_pairs);
    let mut jobs = Vec::with_capacity(request.jobs.len());
    let mut ids = std::collections::HashSet::new();
    for (i, job) in request.jobs.iter().enumerate() {
        crate::problem::check_job_id(&job.id, format!("jobs[{i}].id"), false)?;
        if !ids.insert(job.id.as_str()) {
            return Err(ArbiterError::at(
                ErrorCode::DuplicateJobId,
                format!("jobs[{i}].id"),
                format!("job id {:?} appears twice", job.id),
            ));
        }
        let given = job.scale_factor.unwrap_or(1.0);
        let scale_factor = super::whole_scale_factor(given).ok_or_else(|| {
            ArbiterError::at(
                ErrorCode::InvalidScaleFactor,
                format!("jobs[{i}].scale_factor"),
                format!("a scale factor is a whole number of GPUs ≥ 1, got {}", crate::problem::shown(given)),
            )
        })?;
        let estimator = estimators.get(scale_factor, &format!("jobs[{i}].scale_factor"))?;
        let measured = measured_columns(estimator.reference(), job, i)?;
        let estimate = estimator.estimate(&measured, options).map_err(|e| {
            let field = match e.field.as_deref() {
                Some("rank") => "rank".to_string(),
                _ => format!("jobs[{i}]"),
            };
            ArbiterError { field: Some(field), ..e }
        })?;
        jobs.push(render(estimator.reference(), job, scale_factor, &estimate));
    }
    Ok(EstimateResponse { jobs })
}

fn options(request: &EstimateRequest) -> Result<EstimateOptions> {
    checked_options(request.rank, request.regularization.unwrap_or(DEFAULT_REGULARIZATION))
}

/// The estimator's options, refused unless the rank is at least 1 and the ridge weight a finite
/// number ≥ 0 within the contract's range.
pub fn checked_options(rank: Option<usize>, regularization: f64) -> Result<EstimateOptions> {
    if let Some(why) = crate::problem::refusal(regularization, 0.0, "regularization") {
        return Err(ArbiterError::at(ErrorCode::InvalidNumber, "regularization", why));
    }
    if rank == Some(0) {
        return Err(ArbiterError::at(ErrorCode::InvalidNumber, "rank", "rank (factors per row) must be at least 1"));
    }
    Ok(EstimateOptions { rank, regularization })
}

fn measured_columns(reference: &ReferenceMatrix, job: &PartialRow, i: usize) -> Result<Vec<(usize, f64)>> {
    let unknown = |field: String, what: String| ArbiterError::at(ErrorCode::UnknownWorkerType, field, what);
    let mut measured = Vec::new();
    let checked = |field: String, value: f64| match crate::problem::refusal(value, 0.0, "a measured throughput") {
        Some(why) => Err(ArbiterError::at(ErrorCode::InvalidNumber, field, why)),
        None => Ok(value),
    };
    for (w, &value) in &job.throughput {
        let value = checked(format!("jobs[{i}].throughput.{w}"), value)?;
        let column = Column::Solo { worker_type: w.clone() };
        let j = reference.column_index(&column).ok_or_else(|| {
            unknown(format!("jobs[{i}].throughput.{w}"), format!("worker type {w:?} is not estimated here"))
        })?;
        measured.push((j, value));
    }
    for (w, partners) in &job.colocated {
        if reference.column_index(&Column::Solo { worker_type: w.clone() }).is_none() {
            return Err(unknown(
                format!("jobs[{i}].colocated.{w}"),
                format!("worker type {w:?} is not estimated here"),
            ));
        }
        let alone = job.throughput.get(w).copied();
        for (partner, &value) in partners {
            let value = checked(format!("jobs[{i}].colocated.{w}.{partner}"), value)?;
            if alone == Some(0.0) && value > 0.0 {
                return Err(ArbiterError::at(
                    ErrorCode::InvalidNumber,
                    format!("jobs[{i}].colocated.{w}.{partner}"),
                    format!(
                        "the job runs at {value} steps/s beside {partner:?} on {w:?}, where `throughput.{w}` says it cannot run (0)"
                    ),
                ));
            }
            let column = Column::Pair { worker_type: w.clone(), partner: partner.clone() };
            let j = reference.column_index(&column).ok_or_else(|| {
                ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    format!("jobs[{i}].colocated.{w}.{partner}"),
                    format!("no reference column for {partner:?} on {w:?} (pairs off, an unknown worker type, or not a reference job of this scale factor)"),
                )
            })?;
            measured.push((j, value));
        }
    }
    Ok(measured)
}

fn render(
    reference: &ReferenceMatrix,
    job: &PartialRow,
    scale_factor: u32,
    estimate: &super::Estimate,
) -> CompletedRow {
    let mut throughput = IndexMap::new();
    let mut colocated: IndexMap<String, IndexMap<String, Entry>> = IndexMap::new();
    for (j, column) in reference.columns.iter().enumerate() {
        let Some(value) = estimate.values[j] else { continue };
        let error = estimate.expected_relative_error[j];
        let entry = Entry {
            steps_per_second: value,
            estimated: estimate.estimated[j],
            expected_relative_error: (estimate.estimated[j] && error.is_finite()).then_some(error),
        };
        match column {
            Column::Solo { worker_type } => {
                throughput.insert(worker_type.clone(), entry);
            }
            Column::Pair { worker_type, partner } => {
                colocated.entry(worker_type.clone()).or_default().insert(partner.clone(), entry);
            }
        }
    }
    CompletedRow {
        id: job.id.clone(),
        scale_factor,
        throughput,
        colocated,
        fingerprint: Fingerprint { job_type: estimate.fingerprint.clone(), distance: estimate.fingerprint_distance },
        rank: estimate.rank,
    }
}
