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

/// A whole-number quantity (`"2"`, `2`, or in any notation of Kubernetes' quantities: `"1k"`,
/// `"1e3"`, `"4000m"`, `"1Ki"`); GPUs are counted whole.
pub fn whole_quantity(value: &Value) -> Result<u32, String> {
    let parsed = match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => whole_in_quantity_notation(s.trim()),
        _ => None,
    };
    parsed.and_then(|n| u32::try_from(n).ok()).ok_or_else(|| format!("{value} is not a whole number of GPUs"))
}

/// `<number><suffix>` as Kubernetes writes a quantity (a decimal number; a suffix `m`, `k`, `M`,
/// `G`, `T`, `P`, `E`, `Ki` … `Ei`, or an exponent `e<n>`/`E<n>`), if it is a whole number ≥ 0.
fn whole_in_quantity_notation(text: &str) -> Option<u64> {
    let text = text.strip_prefix('+').unwrap_or(text);
    let end = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
    let (number, suffix) = text.split_at(end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') || whole.len() + fraction.len() > 30 {
        return None;
    }
    let (exponent, binary): (i32, u32) = match suffix {
        "" => (0, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        _ => {
            let digits = suffix.strip_prefix(['e', 'E'])?;
            let unsigned = digits.strip_prefix(['+', '-']).unwrap_or(digits);
            if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) || unsigned.len() > 3 {
                return None;
            }
            (digits.parse().ok()?, 0)
        }
    };
    let mantissa: u128 = format!("{whole}{fraction}").parse().ok()?;
    let exponent = exponent - fraction.len() as i32;
    let scaled = if exponent >= 0 {
        mantissa.checked_mul(10u128.checked_pow(exponent as u32)?)?
    } else {
        let divisor = 10u128.checked_pow(exponent.unsigned_abs());
        match divisor {
            Some(d) if mantissa.is_multiple_of(d) => mantissa / d,
            None if mantissa == 0 => 0,
            _ => return None,
        }
    };
    u64::try_from(scaled.checked_mul(1u128 << binary)?).ok()
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

#[cfg(test)]
mod tests {
    use super::whole_quantity;
    use serde_json::json;

    #[test]
    fn a_gpu_quantity_is_read_in_any_of_kubernetes_notations() {
        let whole = |q: &str| whole_quantity(&json!(q)).ok();
        for (q, n) in [
            ("2", 2),
            ("+2", 2),
            ("1k", 1000),
            ("1e3", 1000),
            ("1E3", 1000),
            ("4000m", 4),
            ("1Ki", 1024),
            ("1.5k", 1500),
            ("2.0", 2),
            ("0", 0),
            ("0m", 0),
            (".5k", 500),
        ] {
            assert_eq!(whole(q), Some(n), "{q}");
        }
        for q in
            ["500m", "1.5", "-1", "", "k", "1x", "1e", "1e-", "1.2.3", "5e9", "1Ei", "1e999", "12e-1", "4 GPUs", "0x10"]
        {
            assert_eq!(whole(q), None, "{q:?} is not a whole number of GPUs (or past u32)");
        }
        assert_eq!(whole_quantity(&json!(3)), Ok(3));
        assert!(whole_quantity(&json!(1.5)).is_err() && whole_quantity(&json!(-1)).is_err());
    }
}
