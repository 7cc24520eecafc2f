//! Arbiter as the policy backend of Kubernetes: a Kueue admission-check controller that turns
//! Workloads into session jobs and rounds into admission decisions, and `k8s-sync`, which turns
//! Nodes and Pods into session events. `docs/integration.md` describes both.
//!
//! The object types, the label and annotation keys, and the reconcilers that decide what to do
//! are pure (no I/O) and always built; the clients and the loops that talk to the Kubernetes API
//! and to `arbiter serve` are behind the `kubernetes` feature (on by default).

pub mod jobs;
pub mod keys;
pub mod kueue;
pub mod objects;
pub mod session;
pub mod sync;

#[cfg(feature = "kubernetes")]
pub mod api;
#[cfg(feature = "kubernetes")]
pub mod arbiter;
#[cfg(feature = "kubernetes")]
pub mod cli;
#[cfg(feature = "kubernetes")]
pub mod http;
#[cfg(feature = "kubernetes")]
pub mod rounds;
