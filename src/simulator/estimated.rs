//! Simulating with estimated throughputs (`--profiled-types K`): each job is measured on K of the
//! cluster's worker types when it arrives, and the policy starts from the estimator's completion
//! of its row against the table without the job's own type (so nothing of the job is known beyond
//! its profile). Progress is made at the true throughputs, and each round's measured progress is
//! smoothed into the session's row as it would be on a real cluster.

use super::config::SimulationConfig;
use crate::error::Result;
use crate::estimator::{Column, EstimateOptions, Estimator, ReferenceMatrix};
use crate::workload::throughputs::ThroughputTable;
use crate::workload::Trace;
use std::collections::HashMap;

/// The rows the policy starts from, one per trace job: the true row on the K profiled types
/// (`(i + t) mod types` for job i, t < K, so the profiled types rotate over the trace) and the
/// estimate elsewhere. A type where the job cannot run (true throughput 0) is known at once, as a
/// failed launch would tell, and stays 0.
pub fn believed_rows(
    trace: &Trace,
    table: &ThroughputTable,
    config: &SimulationConfig,
    truth: &[Vec<f64>],
    profiled: usize,
) -> Result<Vec<Vec<f64>>> {
    let names: Vec<String> = config.cluster.iter().map(|w| w.name.clone()).collect();
    let types = names.len();
    let mut estimators: HashMap<(String, u32), Estimator> = HashMap::new();
    let mut rows = Vec::with_capacity(truth.len());
    for (i, (job, row)) in trace.jobs.iter().zip(truth).enumerate() {
        let key = (job.job_type.clone(), job.scale_factor);
        if !estimators.contains_key(&key) {
            let reference = ReferenceMatrix::from_table(table, &names, job.scale_factor, false);
            let held_out = match reference.jobs.iter().position(|j| *j == job.job_type) {
                Some(own) => reference.without_job(own),
                None => reference,
            };
            estimators.insert(key.clone(), Estimator::new(held_out)?);
        }
        let estimator = &estimators[&key];
        let mut chosen: Vec<usize> = (0..profiled.min(types)).map(|t| (i + t) % types).collect();
        // A profile that happened to land only where the job cannot run still measures one type.
        if chosen.iter().all(|&w| row[w] <= 0.0) {
            chosen.extend((0..types).find(|&w| row[w] > 0.0));
        }
        let measured: Vec<(usize, f64)> = chosen
            .iter()
            .filter_map(|&w| {
                estimator.reference().column_index(&Column::Solo { worker_type: names[w].clone() }).map(|j| (j, row[w]))
            })
            .collect();
        let estimate = estimator.estimate(&measured, EstimateOptions::default())?;
        let believed = (0..types)
            .map(|w| {
                if row[w] <= 0.0 || chosen.contains(&w) {
                    return row[w];
                }
                let column = estimator.reference().column_index(&Column::Solo { worker_type: names[w].clone() });
                column.and_then(|j| estimate.values[j]).unwrap_or(row[w])
            })
            .collect();
        rows.push(believed);
    }
    Ok(rows)
}
