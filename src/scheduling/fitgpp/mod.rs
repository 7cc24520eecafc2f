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
//! - [`input`]: the JSON shapes of nodes and jobs that sessions and workload files share.
//!
//! ```
//! use arbiter::scheduling::fitgpp::{preemption, Cluster, JobKind, JobSpec, Resources};
//! let job = |id: &str, kind, gpus| JobSpec {
//!     id: id.into(),
//!     kind,
//!     demand: Resources::new(8, 64, gpus),
//!     duration_seconds: 3600.0,
//!     grace_period_seconds: 120.0,
//! };
//! let policy = preemption::named("fitgpp", 1.0, 1, false, 0)?;
//! let mut cluster = Cluster::new(&[Resources::new(32, 256, 8)], policy)?;
//! cluster.submit(job("be", JobKind::Be, 8))?;
//! cluster.schedule(); // the BE job takes every GPU
//! cluster.advance_to(600.0)?;
//! cluster.submit(job("te", JobKind::Te, 2))?;
//! let pass = cluster.schedule(); // the BE job gets its grace period; the TE job starts after it
//! assert_eq!(pass.preemptions[0].grace_deadline, 720.0);
//! assert_eq!(cluster.advance_to(720.0)?.started.len(), 1);
//! # Ok::<(), arbiter::ArbiterError>(())
//! ```

pub mod cluster;
pub mod input;
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
