//! `arbiter k8s-sync`: Nodes and Pods turned into session events. The pure part here decides the
//! events from what is observed; `controller` (feature `kubernetes`) lists, decides and sends.

pub mod bindings;
pub mod plan;

#[cfg(feature = "kubernetes")]
pub mod controller;

pub use bindings::{plan_bindings, BindingPlan, PodOnNode};
pub use plan::{plan, SyncInputs, SyncPlan};
