//! Workloads for the simulator: traces of arriving jobs and the throughput table they run at.
//!
//! - [`trace`]: Gavel's tab-separated trace format and our JSON trace, both read into a [`Trace`].
//! - [`throughputs`]: Gavel's measured-throughput file, read into a [`ThroughputTable`].
//! - [`generator`]: seeded continuous (Poisson) and static traces with Gavel's job mix.

pub mod generator;
pub mod throughputs;
pub mod trace;

use serde::{Deserialize, Serialize};

/// One job of a trace, as it arrives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceJob {
    /// The job type, Gavel's model name with its batch size: `"ResNet-50 (batch size 64)"`.
    pub job_type: String,
    /// Steps the job trains for.
    pub total_steps: f64,
    /// GPUs the job occupies while it runs.
    pub scale_factor: u32,
    /// Priority weight.
    pub weight: f64,
    /// Seconds after arrival by which the job should finish; `None`: no SLO.
    pub slo_seconds: Option<f64>,
    /// Arrival time in seconds from the start of the trace.
    pub arrival_seconds: f64,
}

/// The jobs of a trace, in arrival order (ties: order in the file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub jobs: Vec<TraceJob>,
}
