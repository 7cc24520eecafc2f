//! Arbiter as a Kubernetes scheduler extender: kube-scheduler's `filter`, `prioritize`, `bind`
//! and `preempt` calls answered from a session's current round, and the pods a round evicts.
//!
//! Pods name their session job with [`JOB_KEY`]; nodes name their server with
//! [`WORKER_TYPE_LABEL`] and [`SERVER_LABEL`] (`docs/integration.md`).
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

/// Label or annotation of a pod naming its session job (the label wins when both are set).
pub const JOB_KEY: &str = "arbiter.dev/job";
/// Annotation of a pod whose job the session does not have yet: the job's throughput row
/// (`{"v100": 10.5, "k80": 1.0}`, steps/s); `filter` adds the job from it.
pub const THROUGHPUTS_ANNOTATION: &str = "arbiter.dev/throughputs";
/// Annotation: how many pods the job's gang has (default 1); the scale factor of a job added
/// from a pod is its GPU request times this.
pub const PODS_ANNOTATION: &str = "arbiter.dev/pods";
/// Node label naming the session worker type of the node's GPUs.
pub const WORKER_TYPE_LABEL: &str = "arbiter.dev/worker-type";
/// Node label giving the server's index among the servers of its type (the `<server>` of the
/// session's GPU ids `<type>/<server>/<gpu>`).
pub const SERVER_LABEL: &str = "arbiter.dev/server";
/// The extended resource a pod requests GPUs with.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// kube-scheduler's highest extender score (`MaxExtenderPriority`).
pub const MAX_PRIORITY: i64 = 10;
