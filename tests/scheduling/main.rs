//! The scheduling layer: Gavel's round-based mechanism (sessions, rounds against allocations, invariants, realizability, pairs) and the pipeline's stages and compositions.
//! One test crate per layer (one link each); each module is one file beside this one.

#[path = "../mechanism_support/mod.rs"]
mod mechanism_support;

mod mechanism_cli;
mod mechanism_fidelity;
mod mechanism_gavel_pairs;
mod mechanism_invariants;
mod mechanism_realizability;
mod mechanism_session;
mod mechanism_space_sharing;
mod scheduling_fitgpp;
mod scheduling_ltgf;
mod scheduling_oasis;
mod scheduling_pipeline;
