//! The Kueue admission-check controller's pure part: Kueue's object types, worker types from
//! ResourceFlavors, and the reconciler that turns Workloads and the session's last round into
//! session events and admission-check states. The loop that runs it is `controller` (feature
//! `kubernetes`).

pub mod flavors;
pub mod patch;
pub mod reconcile;
pub mod types;

#[cfg(feature = "kubernetes")]
pub mod controller;

pub use reconcile::{reconcile, Inputs, Plan, WorkloadPatch};
