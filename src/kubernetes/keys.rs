//! The label and annotation keys Arbiter reads and writes on Kubernetes objects, and the names it
//! goes by there. One place, so the controllers, the docs and the scheduler extender agree.

/// `AdmissionCheck.spec.controllerName` of the checks Arbiter's Kueue controller serves (default).
pub const CONTROLLER_NAME: &str = "arbiter.dev/admission";

/// Field manager of every server-side apply Arbiter sends.
pub const FIELD_MANAGER: &str = "arbiter";

/// The extended resource a pod asks GPUs with.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// Node label: the worker type of the node's GPUs (`v100`); on a per-type ResourceFlavor's
/// metadata, the type whose nodes the flavor's `nodeLabels` select.
pub const WORKER_TYPE: &str = "arbiter.dev/worker-type";

/// Node label: the node's server index within its worker type (`0`, `1`, ...), so its GPUs are
/// `<type>/<server>/<gpu>` in the session.
pub const SERVER: &str = "arbiter.dev/server";

/// Pod label: the session job the pod belongs to (`k8s-sync`); as a pod annotation, set through
/// the Kueue check's `podSetUpdates`, since a Kueue job's id (`namespace/name`) is no label value.
pub const JOB: &str = "arbiter.dev/job";

/// Pod annotation: how many pods the job's gang has (default: the pods seen), so its scale
/// factor is one pod's GPUs times this; the scheduler extender reads the same key.
pub const PODS: &str = "arbiter.dev/pods";

/// Annotation: the job's throughputs, a JSON object `{"<type>": steps/s}` (steps/s of the whole
/// job on its scale factor's GPUs of that type, as in the contract).
pub const THROUGHPUTS: &str = "arbiter.dev/throughputs";

/// Annotation: a job type of the reference throughput file (`ResNet-50 (batch size 64)`), whose
/// measured rows give the job's throughputs.
pub const MODEL: &str = "arbiter.dev/model";

/// Annotation: the job's priority weight (a number > 0; default 1).
pub const WEIGHT: &str = "arbiter.dev/weight";

/// Annotation on a per-type ResourceFlavor: GPUs of that type in the cluster.
pub const GPUS: &str = "arbiter.dev/gpus";

/// Annotation on a per-type ResourceFlavor: GPUs per server (node) of that type.
pub const GPUS_PER_SERVER: &str = "arbiter.dev/gpus-per-server";
