//! The FitGpp paper's evaluation: synthetic TE/BE workloads on a cluster of multi-resource nodes,
//! run through `scheduling::fitgpp` under each preemption policy, with the paper's metrics. It
//! drives the scheduling layer and decides nothing a live cluster would decide differently.
//!
//! - [`workload`]: truncated-normal job sizes, durations and grace periods; Poisson arrivals.
//! - [`calibrate`]: the arrival rate at which FIFO holds a given cluster load.
//! - [`run`]: one workload through one policy, in event order; the cluster load.
//! - [`metrics`]: slowdown percentiles per kind, preempted-job share, restart intervals.
//! - [`experiment`]: policies × λ × P × loads × TE shares × seeds, CSV, table, charts.
//! - [`trace`]: workload files (`{"nodes", "jobs"}`), read and written.
//! - [`report`]: one run's report for `arbiter simulate`.
//! - [`cli`]: `arbiter fitgpp`.
//! - [`commands`]: `arbiter simulate` on a workload file and `arbiter sweep` over the experiment.

pub mod calibrate;
pub mod cli;
pub mod commands;
pub mod experiment;
pub mod metrics;
pub mod report;
pub mod run;
pub mod trace;
pub mod workload;
