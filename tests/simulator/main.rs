//! The simulator: the trace generator, `arbiter simulate` and `sweep` (on round-based traces and OASiS workloads), exact small cases and invariants, the FitGpp experiment.
//! One test crate per layer (one link each); each module is one file beside this one.

#[path = "../common/process.rs"]
mod process;

mod generator;
mod simulator_cli;
mod simulator_exact;
mod simulator_fitgpp;
mod simulator_invariants;
mod simulator_oasis;
