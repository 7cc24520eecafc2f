//! Gavel's measured-throughput file (`simulation_throughputs.json`,
//! `physical_cluster_throughputs.json`) as a [`ThroughputTable`]: steps/s of every job type at
//! every scale factor on every worker type, alone and colocated with another job type.
//!
//! The file maps worker type → `"('<model> (batch size N)', <scale factor>)"` → `{"null": steps/s
//! alone, "<other key>": [steps/s of this job, steps/s of the other] while sharing}`. Worker types
//! are kept as given, the `*_unconsolidated` ones included.

use crate::error::{ArbiterError, ErrorCode, Result};
use std::collections::HashMap;
use std::path::Path;

/// A job type at a scale factor: the key of one throughput-matrix row.
pub type JobKey = (String, u32);

#[derive(Debug, Clone, Default, PartialEq)]
struct Entry {
    /// Steps/s alone.
    solo: f64,
    /// Steps/s of this job and of the other while sharing, by the other's key.
    colocated: HashMap<JobKey, [f64; 2]>,
}

/// Measured throughputs per worker type and job type, read once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThroughputTable {
    /// Worker types in the file's order.
    worker_types: Vec<String>,
    /// `entries[w]`: the job keys measured on worker type `w`.
    entries: Vec<HashMap<JobKey, Entry>>,
}

fn malformed(field: impl Into<String>, message: impl Into<String>) -> ArbiterError {
    ArbiterError::at(ErrorCode::MalformedRequest, field, message)
}

fn throughput_value(value: &serde_json::Value, field: &dyn Fn() -> String) -> Result<f64> {
    let v = value.as_f64().ok_or_else(|| malformed(field(), format!("a throughput must be a number, got {value}")))?;
    // Within the contract's range too: a reference of 1e300 steps/s estimated 5.7e-101 for a job.
    if let Some(why) = crate::problem::refusal(v, 0.0, "a throughput") {
        return Err(ArbiterError::at(ErrorCode::InvalidNumber, field(), why));
    }
    Ok(v)
}

/// Parses Gavel's key, a Python tuple: `('ResNet-50 (batch size 64)', 4)`.
pub fn parse_job_key(key: &str) -> Option<JobKey> {
    let inner = key.trim().strip_prefix('(')?.strip_suffix(')')?;
    let (name, scale_factor) = inner.rsplit_once(',')?;
    let name = name.trim();
    let quoted = (name.starts_with('\'') && name.ends_with('\'')) || (name.starts_with('"') && name.ends_with('"'));
    if !quoted || name.len() < 3 {
        return None;
    }
    let scale_factor: u32 = scale_factor.trim().parse().ok()?;
    (scale_factor >= 1).then(|| (name[1..name.len() - 1].to_string(), scale_factor))
}

impl ThroughputTable {
    /// Reads a throughput file; an unreadable file is `malformed_request` naming the path.
    pub fn from_path(path: &Path) -> Result<ThroughputTable> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| malformed("throughputs", format!("cannot read throughput file {}: {e}", path.display())))?;
        ThroughputTable::from_json_str(&text)
    }

    /// The reference matrix a command was given with `--reference-throughputs FILE`: a refusal
    /// names that flag, with the key path inside the file (`reference_throughputs.v100.A`).
    pub fn from_reference_path(path: &Path) -> Result<ThroughputTable> {
        ThroughputTable::from_path(path).map_err(|e| e.field_renamed("throughputs", "reference_throughputs"))
    }

    /// Parses the JSON text of a throughput file. Every refusal names the key path it is about.
    pub fn from_json_str(text: &str) -> Result<ThroughputTable> {
        let root: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| malformed("throughputs", format!("the throughput file is not valid JSON: {e}")))?;
        let types = root.as_object().ok_or_else(|| {
            malformed("throughputs", "the throughput file must be an object of worker type → job type → throughputs")
        })?;
        if types.is_empty() {
            return Err(malformed("throughputs", "the throughput file has no worker types"));
        }
        let mut table = ThroughputTable::default();
        for (worker_type, jobs) in types {
            let jobs = jobs.as_object().ok_or_else(|| {
                malformed(format!("throughputs.{worker_type}"), "a worker type must map job types to throughputs")
            })?;
            let mut entries = HashMap::with_capacity(jobs.len());
            for (key, measured) in jobs {
                let field = |rest: &str| format!("throughputs.{worker_type}.{key}{rest}");
                let job = parse_job_key(key).ok_or_else(|| {
                    malformed(
                        field(""),
                        format!("a job type key must look like \"('<model>', <scale factor>)\", got {key:?}"),
                    )
                })?;
                let measured = measured.as_object().ok_or_else(|| {
                    malformed(field(""), "a job type must map \"null\" and other job types to throughputs")
                })?;
                let solo = measured
                    .get("null")
                    .ok_or_else(|| {
                        ArbiterError::at(
                            ErrorCode::MissingField,
                            field(".null"),
                            "the throughput alone (\"null\") is missing",
                        )
                    })
                    .and_then(|v| throughput_value(v, &|| field(".null")))?;
                let mut colocated = HashMap::new();
                for (other, pair) in measured.iter().filter(|(k, _)| k.as_str() != "null") {
                    let pair_field = || field(&format!(".{other}"));
                    let other_job = parse_job_key(other).ok_or_else(|| {
                        malformed(pair_field(), format!("a colocated job type key must look like \"('<model>', <scale factor>)\", got {other:?}"))
                    })?;
                    let values = pair.as_array().filter(|a| a.len() == 2).ok_or_else(|| {
                        malformed(pair_field(), "colocated throughputs must be a pair [this job, the other]")
                    })?;
                    let a = throughput_value(&values[0], &|| format!("{}[0]", pair_field()))?;
                    let b = throughput_value(&values[1], &|| format!("{}[1]", pair_field()))?;
                    colocated.insert(other_job, [a, b]);
                }
                entries.insert(job, Entry { solo, colocated });
            }
            table.worker_types.push(worker_type.clone());
            table.entries.push(entries);
        }
        Ok(table)
    }

    /// The worker types of the file, in its order.
    pub fn worker_types(&self) -> Vec<String> {
        self.worker_types.clone()
    }

    fn type_index(&self, worker_type: &str) -> Option<usize> {
        self.worker_types.iter().position(|w| w == worker_type)
    }

    /// The job types measured at `scale_factor` on any worker type, sorted by name.
    pub fn job_types(&self, scale_factor: u32) -> Vec<String> {
        let mut names: Vec<String> = self
            .entries
            .iter()
            .flat_map(|e| e.keys())
            .filter(|(_, sf)| *sf == scale_factor)
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The scale factors `job_type` is measured at on any worker type, ascending (none: the file
    /// does not have the job type).
    pub fn scale_factors(&self, job_type: &str) -> Vec<u32> {
        let mut factors: Vec<u32> = self
            .entries
            .iter()
            .flat_map(|e| e.keys())
            .filter(|(name, _)| name == job_type)
            .map(|&(_, sf)| sf)
            .collect();
        factors.sort_unstable();
        factors.dedup();
        factors
    }

    /// Steps/s of `job_type` at `scale_factor` alone on `worker_type`, if measured.
    pub fn solo(&self, worker_type: &str, job_type: &str, scale_factor: u32) -> Option<f64> {
        let w = self.type_index(worker_type)?;
        self.entries[w].get(&(job_type.to_string(), scale_factor)).map(|e| e.solo)
    }

    /// Steps/s of a and of b while they share `worker_type`, if measured (0: cannot share there).
    pub fn colocated(&self, worker_type: &str, a: (&str, u32), b: (&str, u32)) -> Option<[f64; 2]> {
        let w = self.type_index(worker_type)?;
        let entry = self.entries[w].get(&(a.0.to_string(), a.1))?;
        entry.colocated.get(&(b.0.to_string(), b.1)).copied()
    }

    /// The throughput-matrix row of a job type on the given worker types (0 where unmeasured), or
    /// `unknown_worker_type` naming a type the file does not have.
    pub fn row(&self, worker_types: &[String], job_type: &str, scale_factor: u32) -> Result<Vec<f64>> {
        worker_types
            .iter()
            .map(|w| {
                if self.type_index(w).is_none() {
                    return Err(ArbiterError::at(
                        ErrorCode::UnknownWorkerType,
                        "cluster",
                        format!(
                            "worker type {w:?} is not in the throughput file (it has: {})",
                            self.worker_types.join(", ")
                        ),
                    ));
                }
                Ok(self.solo(w, job_type, scale_factor).unwrap_or(0.0))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{
        "v100": {
            "('A (batch size 1)', 1)": {"null": 4.0, "('B', 1)": [3.0, 1.5]},
            "('B', 1)": {"null": 2.0, "('A (batch size 1)', 1)": [1.5, 3.0]},
            "('A (batch size 1)', 2)": {"null": 7.0}
        },
        "k80": {"('A (batch size 1)', 1)": {"null": 1.0}}
    }"#;

    #[test]
    fn reads_solo_and_colocated_throughputs() {
        let t = ThroughputTable::from_json_str(SAMPLE).unwrap();
        assert_eq!(t.worker_types(), vec!["v100", "k80"]);
        assert_eq!(t.job_types(1), vec!["A (batch size 1)", "B"]);
        assert_eq!(t.job_types(2), vec!["A (batch size 1)"]);
        assert_eq!(t.solo("v100", "A (batch size 1)", 2), Some(7.0));
        assert_eq!(t.solo("k80", "B", 1), None);
        assert_eq!(t.colocated("v100", ("A (batch size 1)", 1), ("B", 1)), Some([3.0, 1.5]));
        let types = vec!["k80".to_string(), "v100".to_string()];
        assert_eq!(t.row(&types, "B", 1).unwrap(), vec![0.0, 2.0]);
        let err = t.row(&["a100".to_string()], "B", 1).unwrap_err();
        assert_eq!(err.code, ErrorCode::UnknownWorkerType);
    }

    #[test]
    fn parses_python_tuple_keys() {
        assert_eq!(parse_job_key("('LM (batch size 5)', 8)"), Some(("LM (batch size 5)".into(), 8)));
        assert_eq!(parse_job_key("(\"A3C\", 1)"), Some(("A3C".into(), 1)));
        assert_eq!(parse_job_key("A3C"), None);
        assert_eq!(parse_job_key("('A3C', 0)"), None);
        assert_eq!(parse_job_key("('A3C', x)"), None);
    }

    #[test]
    fn refusals_name_the_key() {
        let bad = r#"{"v100": {"('A', 1)": {"null": -1}}}"#;
        let e = ThroughputTable::from_json_str(bad).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidNumber);
        assert_eq!(e.field.as_deref(), Some("throughputs.v100.('A', 1).null"));
        for past in ["1e300", "1e-300"] {
            let e = ThroughputTable::from_json_str(&format!(r#"{{"v100": {{"('A', 1)": {{"null": {past}}}}}}}"#));
            assert_eq!(e.unwrap_err().code, ErrorCode::InvalidNumber, "{past}");
        }
        let e = ThroughputTable::from_json_str(r#"{"v100": {"A": {"null": 1}}}"#).unwrap_err();
        assert_eq!(e.code, ErrorCode::MalformedRequest);
        let e = ThroughputTable::from_json_str(r#"{"v100": {"('A', 1)": {}}}"#).unwrap_err();
        assert_eq!(e.code, ErrorCode::MissingField);
        let e = ThroughputTable::from_json_str("[1]").unwrap_err();
        assert_eq!(e.code, ErrorCode::MalformedRequest);
        let e = ThroughputTable::from_json_str(r#"{"v100": {"('A', 1)": {"null": 1, "('B', 1)": [1]}}}"#).unwrap_err();
        assert_eq!(e.code, ErrorCode::MalformedRequest);
    }
}
