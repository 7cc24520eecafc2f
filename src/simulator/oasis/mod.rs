//! OASiS's simulation study: seeded workloads in the paper's ranges, OASiS and the baselines
//! run over them on the same slots, and their total utility and completion times; the
//! performance ratio against the offline optimum. Decisions are the scheduling layer's
//! (`crate::scheduling::oasis`); the offline optimum is the solver's
//! (`crate::solver::oasis_offline`).
//!
//! - [`workload`]: clusters and jobs drawn from the paper's settings.
//! - [`run`]: one scheme over one workload; OASiS.
//! - [`ratio`]: offline optimum / OASiS on small instances, with the competitive bound.

pub mod ratio;
pub mod run;
pub mod workload;
