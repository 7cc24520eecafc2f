//! The simulator: replays a trace of arriving jobs through the same policies and the same
//! round-based mechanism (`mechanism::Session`) the service runs, on a virtual clock, and reports
//! every job's completion time and the aggregates operators compare policies by.
//!
//! - [`config`]: what one simulation runs (cluster, policy, rounds, measured window).
//! - [`engine`]: the virtual clock, rounds, and jobs advancing by throughput × time.
//! - [`fairness`]: finish-time fairness ρ after the fact.
//! - [`oasis`]: the OASiS paper's simulation study (utility of admitted jobs over slots).
//! - [`fitgpp`]: the FitGpp paper's TE/BE experiment on multi-resource nodes (`arbiter fitgpp`).
//! - [`report`]: the JSON report and its aggregates.
//! - [`plot`]: SVG charts (JCT CDF, JCT against load).
//! - [`progress`]: a progress bar for terminals.
//! - [`sweep`]: policies × loads × seeds in parallel, CSV and plots.
//! - [`cli`]: the `arbiter simulate` and `arbiter sweep` commands.
//! - [`estimated`]: jobs the policy sees through the throughput estimator (`--profiled-types`).
//! - [`workload`]: its inputs: traces, Gavel's throughput table, the trace generator.
//!
//! It drives the scheduling layer; it must not decide anything a live cluster would decide
//! differently (no policy logic here).
//!
//! It is not a cluster emulator: jobs run at the throughput table's rates, with no checkpoint or
//! start-up cost, as in Gavel's simulator.

pub mod cli;
pub mod config;
pub mod engine;
pub mod estimated;
pub mod fairness;
pub mod fitgpp;
pub mod long_term_fairness;
pub mod oasis;
pub mod plot;
pub mod progress;
pub mod report;
pub mod sweep;
pub mod workload;

pub use config::{parse_cluster, SimulationConfig};
pub use report::{JobRecord, SimulationReport};

use crate::error::Result;
use crate::workload::throughputs::ThroughputTable;
use crate::workload::Trace;

/// Where a simulation stands after a round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Virtual seconds since the first arrival.
    pub now_seconds: f64,
    pub rounds: u64,
    pub measured_finished: usize,
    pub measured_total: usize,
    pub active_jobs: usize,
}

/// Runs `trace` on `config`'s cluster with its policy, at the throughputs of `throughputs`, until
/// every measured job has finished; `progress` hears after every round.
pub fn simulate(
    trace: &Trace,
    throughputs: &ThroughputTable,
    config: &SimulationConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<SimulationReport> {
    engine::run(trace, throughputs, config, progress)
}
