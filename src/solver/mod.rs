//! The solver: a validated problem in, an allocation out. The LP layer (`lp`, one narrow interface
//! over HiGHS and the pure-Rust simplex), the constraints every policy shares (`formulation`), the
//! exact engine of the max-min family (`max_min_ratio`), space sharing's kept pairs, POP
//! partitions, one file per policy (`policies`), and the check of how much of an allocation
//! whole-GPU rounds can deliver (`realizability`). No rounds, no clock, no I/O: what happens to
//! an allocation over time is the scheduling layer's.

pub mod band;
pub mod cutting_planes;
pub mod dorm;
pub mod feasible;
pub mod formulation;
pub mod lp;
pub mod max_min_ratio;
pub mod max_weighted_throughput;
pub mod oasis_offline;
pub mod partition;
pub mod policies;
pub mod realizability;
pub mod realizable;
pub mod space_sharing;
pub mod stability;
pub mod tie_break;
pub mod ties;
