//! Arbiter as a Kubernetes scheduler extender: kube-scheduler's `filter`, `prioritize`, `bind`
//! and `preempt` calls answered from a session's current round, and the pods a round evicts.
//!
//! Pods name their session job, and nodes their server, with the keys of
//! [`crate::kubernetes::keys`] that the Kueue controller and `k8s-sync` use (`docs/integration.md`).
//!
//! - [`wire`]: the `k8s.io/kube-scheduler/extender/v1` types, with their capitalised keys, and
//!   the few fields of core/v1 Pods and Nodes Arbiter reads.
//! - [`mapping`]: a pod to its job and GPU request, a node to its server, a job to the servers
//!   the round placed it on.
//! - [`observed`]: what the extender has seen of nodes and pods (in memory, per session).
//! - [`bindings`]: the pods bound to nodes, a projection of the session's events (durable).
//! - [`decide`]: every verb's answer and the evictions, as functions of the session.
//! - [`binder`]: the seam through which a binding reaches the API server.
//! - [`handlers`]: the endpoints.

pub mod binder;
pub mod bindings;
pub mod decide;
pub mod handlers;
pub mod mapping;
pub mod observed;
pub mod wire;

/// kube-scheduler's highest extender score (`MaxExtenderPriority`).
pub const MAX_PRIORITY: i64 = 10;
