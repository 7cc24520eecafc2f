//! The bodies of kube-scheduler's extender calls, `k8s.io/kube-scheduler/extender/v1`: Go structs
//! without JSON tags, so their keys are the capitalised Go field names (`Pod`, `NodeNames`,
//! `FailedNodes`). Pods and Nodes are core/v1 objects with lowercase keys, kept as JSON values
//! (nodes are sent back as received); `mapping` reads the few fields Arbiter needs.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// A Go nil slice or map is encoded as `null`: read it as empty.
pub(crate) fn null_as_default<'de, D, T>(de: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(de)?.unwrap_or_default())
}

/// `ExtenderArgs`: the body of `filter` and `prioritize`. The candidate nodes come as whole
/// objects in `Nodes` (an extender without `nodeCacheCapable`) or as names in `NodeNames`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ExtenderArgs {
    /// The pod being scheduled, a core/v1 Pod. Arbiter reads `metadata.name`, `namespace`,
    /// `uid`, `labels`, `annotations` and the `nvidia.com/gpu` requests and limits of
    /// `spec.containers` and `spec.initContainers`.
    #[serde(rename = "Pod", default)]
    #[schema(value_type = Object)]
    pub pod: Value,
    /// The candidate nodes, a core/v1 NodeList (`{"items": [Node, ...]}`); null when the
    /// scheduler sends `NodeNames`.
    #[serde(rename = "Nodes", default)]
    #[schema(value_type = Option<Object>)]
    pub nodes: Option<Value>,
    /// The candidate nodes' names (`nodeCacheCapable: true`); null when it sends `Nodes`.
    #[serde(rename = "NodeNames", default)]
    pub node_names: Option<Vec<String>>,
}

/// `ExtenderFilterResult`: the nodes the pod may go to, in the form they came in (`Nodes` or
/// `NodeNames`), and why the others may not.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ExtenderFilterResult {
    /// The passing nodes as they were received (a core/v1 NodeList), when they came as `Nodes`.
    #[serde(rename = "Nodes")]
    #[schema(value_type = Option<Object>)]
    pub nodes: Option<Value>,
    /// The passing nodes' names, when they came as `NodeNames`.
    #[serde(rename = "NodeNames")]
    pub node_names: Option<Vec<String>>,
    /// Nodes refused where preempting pods could change the answer, with the reason.
    #[serde(rename = "FailedNodes", default, deserialize_with = "null_as_default")]
    pub failed_nodes: BTreeMap<String, String>,
    /// Nodes refused whatever is preempted (not where Arbiter placed the job this round, or not
    /// a server of the session), with the reason.
    #[serde(rename = "FailedAndUnresolvableNodes", default, deserialize_with = "null_as_default")]
    pub failed_and_unresolvable_nodes: BTreeMap<String, String>,
    /// Set when the pod itself cannot be scheduled by Arbiter (it names a job the session does
    /// not have, or its annotations are malformed); the scheduler shows it on the pod.
    #[serde(rename = "Error", default)]
    pub error: String,
}

/// `HostPriority`: one node's score, 0 to 10 (`MaxExtenderPriority`); `prioritize` answers a
/// list of them (`HostPriorityList`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct HostPriority {
    #[serde(rename = "Host")]
    pub host: String,
    #[serde(rename = "Score")]
    pub score: i64,
}

/// `ExtenderBindingArgs`: the body of `bind`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ExtenderBindingArgs {
    #[serde(rename = "PodName", default)]
    pub pod_name: String,
    #[serde(rename = "PodNamespace", default)]
    pub pod_namespace: String,
    #[serde(rename = "PodUID", default)]
    pub pod_uid: String,
    /// The node the scheduler chose.
    #[serde(rename = "Node", default)]
    pub node: String,
}

/// `ExtenderBindingResult`: empty `Error` when the binding is recorded.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ExtenderBindingResult {
    #[serde(rename = "Error", default)]
    pub error: String,
}

/// `ExtenderPreemptionArgs`: the body of `preempt`. The victims come as whole pods
/// (`NodeNameToVictims`) or, with `nodeCacheCapable`, as UIDs (`NodeNameToMetaVictims`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ExtenderPreemptionArgs {
    /// The preemptor, a core/v1 Pod.
    #[serde(rename = "Pod", default)]
    #[schema(value_type = Object)]
    pub pod: Value,
    #[serde(rename = "NodeNameToVictims", default)]
    pub node_name_to_victims: Option<BTreeMap<String, Victims>>,
    #[serde(rename = "NodeNameToMetaVictims", default)]
    pub node_name_to_meta_victims: Option<BTreeMap<String, MetaVictims>>,
}

/// `Victims`: the pods the scheduler would evict from one node.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct Victims {
    /// core/v1 Pods.
    #[serde(rename = "Pods", default, deserialize_with = "null_as_default")]
    #[schema(value_type = Vec<Object>)]
    pub pods: Vec<Value>,
    #[serde(rename = "NumPDBViolations", default)]
    pub num_pdb_violations: i64,
}

/// `MetaVictims`: the same, pods named by UID.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct MetaVictims {
    #[serde(rename = "Pods", default, deserialize_with = "null_as_default")]
    pub pods: Vec<MetaPod>,
    #[serde(rename = "NumPDBViolations", default)]
    pub num_pdb_violations: i64,
}

/// `MetaPod`: a pod by UID.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MetaPod {
    #[serde(rename = "UID", default)]
    pub uid: String,
}

/// `ExtenderPreemptionResult`: the nodes where preempting is consistent with the round, each
/// with the victims to evict there (a subset of those offered).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ExtenderPreemptionResult {
    #[serde(rename = "NodeNameToMetaVictims", default, deserialize_with = "null_as_default")]
    pub node_name_to_meta_victims: BTreeMap<String, MetaVictims>,
}
