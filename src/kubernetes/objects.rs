//! The core Kubernetes objects the controllers read (metadata, conditions, pod templates, Nodes,
//! Pods, lists), with only the fields used; every other field the API server sends is ignored.

use crate::kubernetes::keys::GPU_RESOURCE;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
}

impl ObjectMeta {
    /// `namespace/name`, or `name` for a cluster-scoped object.
    pub fn key(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// `metav1.Condition` (and the older node conditions, which have the same keys).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Whether `conditions` has `kind` with status `True`.
pub fn is_true(conditions: &[Condition], kind: &str) -> bool {
    conditions.iter().any(|c| c.kind == kind && c.status == "True")
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplateSpec {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PodSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default)]
    pub containers: Vec<Container>,
    #[serde(default)]
    pub init_containers: Vec<Container>,
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Container {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub resources: Resources,
}

/// Requests and limits as the API server writes quantities: strings (`"2"`) or numbers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    #[serde(default)]
    pub requests: BTreeMap<String, Value>,
    #[serde(default)]
    pub limits: BTreeMap<String, Value>,
}

/// A whole-number quantity (`"2"`, `2`); GPUs are counted whole.
pub fn whole_quantity(value: &Value) -> Result<u32, String> {
    let parsed = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    parsed.and_then(|n| u32::try_from(n).ok()).ok_or_else(|| format!("{value} is not a whole number of GPUs"))
}

impl Container {
    /// The container's GPUs: its `nvidia.com/gpu` request, else its limit (Kubernetes defaults a
    /// missing request of an extended resource to the limit), else 0.
    pub fn gpus(&self) -> Result<u32, String> {
        let quantity = self.resources.requests.get(GPU_RESOURCE).or_else(|| self.resources.limits.get(GPU_RESOURCE));
        quantity.map_or(Ok(0), |q| whole_quantity(q).map_err(|e| format!("container {:?}: {e}", self.name)))
    }
}

/// GPUs a pod holds, from its containers' and its init containers' GPUs: the sum over its
/// containers, or the largest init container's if that is more (init containers run one at a
/// time, before the others). The extender reads pods by this rule too.
pub fn pod_gpus(containers: impl IntoIterator<Item = u32>, init: impl IntoIterator<Item = u32>) -> u32 {
    let sum = containers.into_iter().fold(0u32, u32::saturating_add);
    sum.max(init.into_iter().max().unwrap_or(0))
}

impl PodSpec {
    /// GPUs one such pod holds (`pod_gpus`).
    pub fn gpus(&self) -> Result<u32, String> {
        let containers = self.containers.iter().map(Container::gpus).collect::<Result<Vec<u32>, String>>()?;
        let init = self.init_containers.iter().map(Container::gpus).collect::<Result<Vec<u32>, String>>()?;
        Ok(pod_gpus(containers, init))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: NodeSpec,
    #[serde(default)]
    pub status: NodeStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSpec {
    #[serde(default)]
    pub unschedulable: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

impl Node {
    /// Ready and schedulable: its GPUs can take work.
    pub fn is_usable(&self) -> bool {
        !self.spec.unschedulable && is_true(&self.status.conditions, "Ready")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: PodSpec,
    #[serde(default)]
    pub status: PodStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    #[serde(default)]
    pub phase: Option<String>,
}

/// Any `...List` the API server answers a list with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct List<T> {
    #[serde(default = "Vec::new")]
    pub items: Vec<T>,
}
