//! Low-latency trial-and-error jobs by selective preemption (FitGpp): nodes with CPU cores,
//! memory and GPUs, a FIFO queue, and trial-and-error (TE) jobs that make room by preempting a
//! running best-effort (BE) job chosen by its size and its grace period; LRTP, RAND and plain
//! FIFO as baselines. Event-driven on nodes, beside the pipeline's GPU-type rounds, which know
//! neither cores, memory nor grace periods. Workloads and metrics are the simulator's
//! (`crate::simulator::fitgpp`). See `formulations/fitgpp.md`.
//!
//! - [`resources`]: cores, memory, GPUs; a node's committed resources.
//! - [`job`]: TE/BE jobs, their demand and grace period, their phase.
//! - [`score`]: FitGpp's size, score and candidate filter (Eqs. 1–4).
//! - [`preemption`]: the policies `fitgpp`, `lrtp`, `rand`, `none`.
//! - [`cluster`]: the queue, the nodes and the events that apply the decisions.

pub mod cluster;
pub mod job;
pub mod preemption;
pub mod resources;
pub mod score;

pub use cluster::{Cluster, Pass, PreemptionRecord};
pub use job::{Job, JobIndex, JobKind, JobSpec, NodeIndex, Phase};
pub use preemption::{FitGpp, Lrtp, NoPreemption, Preemption, Preemptor, Rand};
pub use resources::{Node, Resources};
pub use score::RunningBe;

/// The default cap on preemptions per BE job (the paper's P = 1).
pub const DEFAULT_MAX_PREEMPTIONS: u32 = 1;
