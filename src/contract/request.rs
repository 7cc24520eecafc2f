//! The contract's request as it arrives on the wire (serde), before any validation.
//! Nothing here is trusted: `problem::Problem::from_request` is the only way in.

use super::unique_keys;
use crate::error::{ArbiterError, ErrorCode, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Request {
    pub policy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heterogeneity_aware: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space_sharing: Option<bool>,
    pub cluster: ClusterSpec,
    pub jobs: Vec<JobSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colocations: Option<Vec<ColocationSpec>>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "unique_keys::optional")]
    pub entities: Option<BTreeMap<String, EntitySpec>>,
    /// Solve budget in seconds; past it the request fails with `timeout` (HTTP 504).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_solve_seconds: Option<f64>,
    /// Space sharing: a colocation is kept on a type only when its combined normalized throughput
    /// `T_k[a]/T[a] + T_k[b]/T[b]` exceeds this (default 1, which loses nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colocation_threshold: Option<f64>,
    /// Split jobs and GPUs into this many random sub-problems, solved in parallel and merged
    /// (POP). 1: solve whole. Absent: whole below `partition_threshold_jobs`, else automatic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<f64>,
    /// Estimate every job's throughputs on the cluster's worker types it leaves out (absent or
    /// null) from those it gives, against the reference matrix (`--reference-throughputs`);
    /// the response lists them in `estimated_throughput`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_missing: Option<bool>,
    /// After a bottleneck policy's optimum: `throughput` (default) keeps every job at the level
    /// the optimum needs and maximizes the sum of normalized throughputs (no GPU left idle that a
    /// job could use); `water_filling` raises every job lexicographically (max_min_fairness);
    /// `none` returns the bare LP's vertex. `stats.tie_break` says which was applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie_break: Option<String>,
    /// Solve `max_min_fairness`, `min_makespan` or `max_sum_throughput` over the round
    /// configurations whole GPUs allow (gangs whole, one job per GPU, a job on one type per
    /// round) instead of over fractional capacity: an allocation rounds can deliver.
    /// `stats.realizable_solve` says how far it is from the fractional optimum. Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realizable: Option<bool>,
    /// How the exact engine solves `max_min_fairness`, `finish_time_fairness` and `min_makespan`:
    /// `auto` (default: the price decomposition when the jobs' throughput rows are mostly
    /// distinct, the plain LP otherwise), `lp` (always the plain LP) or `decomposition` (whenever
    /// it applies). Both are exact; `stats.method` says which ran and why it fell back, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ClusterSpec {
    #[serde(deserialize_with = "unique_keys::map")]
    pub worker_types: BTreeMap<String, WorkerTypeSpec>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WorkerTypeSpec {
    /// Number of GPUs of this type (a whole number ≥ 0).
    pub count: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_server: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_hour: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobSpec {
    pub id: String,
    /// Steps/s alone on `scale_factor` GPUs of each type; 0, null or absent: cannot run there.
    #[serde(default, deserialize_with = "unique_keys::map")]
    pub throughput: BTreeMap<String, Option<f64>>,
    /// GPUs the job occupies while it runs: a whole number from 1 to 2^20 (default 1). A number
    /// with no fraction (`2.0`) is read as that whole number; `2.5` is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1048576, multiple_of = 1)]
    pub scale_factor: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_remaining: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_elapsed: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolated_time_elapsed: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<f64>,
    /// Placement sensitivity: steps/s on each type when the job's `scale_factor` GPUs are spread
    /// over servers (`throughput` is then the consolidated rate). Only read for multi-GPU jobs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "unique_keys::map")]
    pub unconsolidated_throughput: BTreeMap<String, Option<f64>>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ColocationSpec {
    pub jobs: [String; 2],
    /// Per worker type, each job's steps/s while the pair shares the GPUs.
    #[serde(default, deserialize_with = "unique_keys::map")]
    pub throughput: BTreeMap<String, [f64; 2]>,
}

/// An entity (a team, an organisation) for `hierarchical`: its weight and how it shares that
/// weight among its jobs and sub-entities. `parent` nests it inside another entity, to any depth;
/// without it the entity is a root, as in the contract's flat form.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EntitySpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// `fairness` (default) or `fifo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

impl Request {
    /// Parses a request from JSON text; a syntax or type error names the field it found it at.
    pub fn from_json(text: &str) -> Result<Request> {
        expect_object(text)?;
        super::json::read(text).map_err(|e| e.into_error("malformed request: "))
    }

    /// [`Request::from_json`], and the fields the text gives that the contract does not know
    /// (`json::read_noting`), for the response's `ignored_fields`.
    pub fn from_json_noting(text: &str) -> Result<(Request, Vec<String>)> {
        expect_object(text)?;
        let (request, ignored) = super::json::read_noting(text).map_err(|e| e.into_error("malformed request: "))?;
        Ok((request, ignored.named()))
    }
}

/// serde would also read a struct from a JSON array in field order; the contract is an object.
fn expect_object(text: &str) -> Result<()> {
    match super::json::without_bom(text).trim_start().starts_with('{') {
        true => Ok(()),
        false => Err(ArbiterError::new(ErrorCode::MalformedRequest, "malformed request: expected a JSON object")),
    }
}
