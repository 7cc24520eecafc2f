//! FitGpp workload files, the input of `arbiter simulate` on nodes of cores, memory and GPUs:
//! `{"nodes": [{"count", "cpus", "memory_gb", "gpus"}], "jobs": [{"id", "kind", "cpus",
//! "memory_gb", "gpus", "duration_seconds", "grace_period_seconds", "at"}]}`, the shapes FitGpp
//! sessions take (`scheduling::fitgpp::input`), every job with its arrival `at`. Reading checks
//! everything a run would refuse halfway, naming the job; writing is what `arbiter fitgpp
//! --write-workloads` makes. Not for running them (`run.rs`).

use super::workload::Arrival;
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::scheduling::fitgpp::input::{self, FitGppJob, FitGppNodeGroup};
use crate::scheduling::fitgpp::job::MAX_SECONDS;
use crate::scheduling::fitgpp::Resources;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// A workload file's contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    pub nodes: Vec<FitGppNodeGroup>,
    pub jobs: Vec<FitGppJob>,
}

/// The nodes and the arrivals in time order (equal times keep the file's order), or the first
/// problem with its field (`trace.jobs[3].at`).
pub fn read(text: &str) -> Result<(Vec<Resources>, Vec<Arrival>)> {
    let workload: Workload = crate::contract::json::read(text).map_err(|e| {
        let field = e.path.map_or_else(|| "trace".to_string(), |path| format!("trace.{path}"));
        ArbiterError::at(ErrorCode::MalformedRequest, field, format!("the FitGpp workload is not valid: {}", e.message))
    })?;
    let capacities = input::capacities(&workload.nodes, "trace.nodes")?;
    if capacities.is_empty() {
        return Err(ArbiterError::at(ErrorCode::MissingField, "trace.nodes", "a FitGpp workload needs a node"));
    }
    if workload.jobs.is_empty() {
        return Err(ArbiterError::at(ErrorCode::MissingField, "trace.jobs", "a FitGpp workload needs a job"));
    }
    let mut ids = HashSet::new();
    let mut arrivals = Vec::with_capacity(workload.jobs.len());
    for (i, job) in workload.jobs.iter().enumerate() {
        let at = job.at.ok_or_else(|| {
            ArbiterError::at(
                ErrorCode::MissingField,
                format!("trace.jobs[{i}].at"),
                format!("job {:?}: a workload's job needs its arrival `at` (seconds)", job.id),
            )
        })?;
        if !(0.0..=MAX_SECONDS).contains(&at) {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                format!("trace.jobs[{i}].at"),
                format!("job {:?}: an arrival must be ≥ 0 and at most 10⁹ seconds, got {at}", job.id),
            ));
        }
        let spec = job.spec();
        spec.validate(&capacities).map_err(|e| ArbiterError {
            field: Some(e.field.map_or_else(
                || format!("trace.jobs[{i}]"),
                |f| format!("trace.jobs[{i}].{}", f.trim_start_matches("job.")),
            )),
            ..e
        })?;
        if !ids.insert(job.id.clone()) {
            return Err(ArbiterError::at(
                ErrorCode::DuplicateJobId,
                format!("trace.jobs[{i}].id"),
                format!("job id {:?} appears twice", job.id),
            ));
        }
        arrivals.push(Arrival { time: at, spec });
    }
    arrivals.sort_by(|a, b| a.time.total_cmp(&b.time));
    Ok((capacities, arrivals))
}

/// The workload file of `arrivals` on `capacities`.
pub fn write(capacities: &[Resources], arrivals: &[Arrival]) -> String {
    let workload = Workload {
        nodes: input::groups(capacities),
        jobs: arrivals.iter().map(|a| FitGppJob::of(&a.spec, a.time)).collect(),
    };
    serde_json::to_string(&workload).expect("a workload always serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulator::fitgpp::workload::{generate, DEFAULT_DISTRIBUTIONS};

    #[test]
    fn a_written_workload_reads_back() {
        let arrivals = generate(&DEFAULT_DISTRIBUTIONS, 50, 0.3, 1).unwrap();
        let caps = vec![Resources::new(32, 256, 8); 3];
        let text = write(&caps, &arrivals);
        assert_eq!(crate::simulator::cli::TraceKind::of(&text), crate::simulator::cli::TraceKind::FitGpp);
        let (c, a) = read(&text).unwrap();
        assert_eq!(c, caps);
        assert_eq!(a, arrivals);
    }

    #[test]
    fn refusals_name_the_job() {
        // Job "a" arrives at 0; `b` is the second job's fields.
        let workload = |b: &str| {
            format!(
                r#"{{"nodes": [{{"count": 2, "cpus": 32, "memory_gb": 256, "gpus": 8}}], "jobs": [
                    {{"id": "a", "kind": "te", "cpus": 4, "memory_gb": 32, "gpus": 1, "duration_seconds": 60, "at": 0}},
                    {{"kind": "be", "cpus": 4, "memory_gb": 32, {b}}}]}}"#
            )
        };
        let field = |b: &str| read(&workload(b)).unwrap_err().field.unwrap();
        assert_eq!(field(r#""id": "b", "gpus": 1, "duration_seconds": 60"#), "trace.jobs[1].at");
        assert_eq!(field(r#""id": "b", "gpus": 1, "duration_seconds": 60, "at": -1"#), "trace.jobs[1].at");
        assert_eq!(field(r#""id": "b", "gpus": 9, "duration_seconds": 60, "at": 5"#), "trace.jobs[1].gpus");
        assert_eq!(field(r#""id": "b", "gpus": 1, "duration_seconds": 0, "at": 5"#), "trace.jobs[1].duration_seconds");
        assert_eq!(
            field(r#""id": "b", "gpus": 1, "duration_seconds": 1e308, "at": 5"#),
            "trace.jobs[1].duration_seconds"
        );
        assert_eq!(
            field(r#""id": "b", "gpus": 1, "duration_seconds": 9, "grace_period_seconds": 2e9, "at": 5"#),
            "trace.jobs[1].grace_period_seconds"
        );
        assert_eq!(field(r#""id": "b", "gpus": 1, "duration_seconds": 9, "at": 1e300"#), "trace.jobs[1].at");
        assert_eq!(field(r#""id": "a", "gpus": 1, "duration_seconds": 60, "at": 5"#), "trace.jobs[1].id");
        assert_eq!(
            field(r#""id": "b", "gpus": 1, "duration_seconds": 60, "at": 5, "color": 1"#),
            "trace.jobs[1].color"
        );
        assert_eq!(read(r#"{"nodes": [], "jobs": []}"#).unwrap_err().field.unwrap(), "trace.nodes");
        // Arrivals come out in time order.
        let (_, a) = read(
            &workload(r#""id": "b", "gpus": 1, "duration_seconds": 60, "at": 0"#)
                .replace(r#""at": 0},"#, r#""at": 9},"#),
        )
        .unwrap();
        assert_eq!(a.iter().map(|a| a.spec.id.as_str()).collect::<Vec<_>>(), ["b", "a"]);
    }
}
