//! The solver layer: every policy against the contract's definitions and the paper's examples, the exact engine against plain per-job LPs, water-filling levels, space sharing, placement sensitivity, LP duals, numerics, refusals, and no panic on any input.
//! One test crate per layer (one link each); each module is one file beside this one.

#[path = "../common/mod.rs"]
mod common;

mod baselines;
mod decomposition;
mod errors;
mod hierarchical;
mod lp_duals;
mod no_panic;
mod numerics;
mod paper_examples;
mod placement_sensitivity;
mod policies;
mod properties;
mod realizability;
mod realizable_hull;
mod space_sharing;
mod tie_break;
mod water_filling;
mod water_filling_levels;
