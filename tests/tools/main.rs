//! The command line and the project's tooling: `arbiter solve/demo`, `scripts/bootstrap`'s detection against fake roots, and the throughput estimator (library, CLI and service).
//! One test crate per layer (one link each); each module is one file beside this one.

#[path = "../common/mod.rs"]
mod common;
#[path = "../service_support/mod.rs"]
mod service_support;

mod bootstrap;
mod cli;
mod cli_hardening;
mod estimator;
mod oasis_cli;
