//! Online admission with resource prices (OASiS, INFOCOM'18): jobs of epochs, chunks and
//! mini-batches trained by workers and parameter servers on two pools of multi-resource
//! servers over a horizon of slots; each arrival is admitted iff its best schedule's utility
//! exceeds its cost at prices that rise exponentially with use, and then runs that schedule.
//! Beside the pipeline's rounds (which know neither slots nor parameter servers). See
//! `formulations/oasis.md`.
//!
//! - [`resources`]: the resource vector (FitGpp's cores, memory and GPUs, plus bandwidth).
//! - [`job`]: the job model, its utility, and what its schedule is built from.
//! - [`cluster`]: the pools and horizon; what is committed per server and slot.
//! - [`price`]: the price function, `U`, `L`, `η` from a workload, the competitive ratio.
//! - [`placement`]: the greedy placement of one slot (`COST_t`).
//! - [`dp`]: the dynamic program over slots (`DP_COST`), for every completion slot at once.
//! - [`online`]: the algorithm: best schedule, admission, price update.
//! - [`baselines`]: FIFO, DRF, RRH and Dorm, slot by slot on the same pools.

pub mod baselines;
pub mod cluster;
pub mod dp;
pub mod job;
pub mod online;
pub mod placement;
pub mod price;
pub mod resources;

pub use cluster::{ClusterSpec, Pool};
pub use job::{Job, JobSpec, Utility};
pub use online::{Decision, Oasis, Schedule, SlotPlan};
pub use price::{LowestUtility, PriceFunction, PriceParameters};
pub use resources::ResourceVector;
