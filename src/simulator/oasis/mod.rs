//! OASiS's simulation study: seeded workloads in the paper's ranges, OASiS and the baselines
//! run over them on the same slots, and their total utility and completion times; the
//! performance ratio against the offline optimum. Decisions are the scheduling layer's
//! (`crate::scheduling::oasis`, its `baselines`); the MILPs are the solver's
//! (`crate::solver::oasis_offline`, `crate::solver::dorm`).
//!
//! - [`workload`]: clusters and jobs drawn from the paper's settings.
//! - [`run`]: one scheme's outcome; OASiS over a workload.
//! - [`slots`]: the slot simulator the baselines run in.
//! - [`study`]: every scheme over one workload; lateness against targets.
//! - [`ratio`]: offline optimum / OASiS on small instances, with the competitive bound.
//! - [`scheme`]: OASiS or a baseline, by the name `simulate` and `sweep` give it.
//! - [`report`]: one scheme's run as `arbiter simulate` reports it.
//! - [`sweep`]: schemes × numbers of jobs × seeds, in parallel, as CSV and a chart.
//! - [`cli`]: `arbiter oasis`: a JSON workload in, OASiS's explained decisions out.
//! - [`commands`]: `arbiter simulate` and `arbiter sweep` on OASiS's workloads.

pub mod cli;
pub mod commands;
pub mod ratio;
pub mod report;
pub mod run;
pub mod scheme;
pub mod slots;
pub mod study;
pub mod sweep;
pub mod workload;
