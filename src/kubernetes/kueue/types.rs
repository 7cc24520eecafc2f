//! Kueue's objects (`kueue.x-k8s.io/v1beta2`, Kueue 0.15 and later; v1beta1 of the same releases
//! has the same fields here) as the API server returns them, with only the fields Arbiter reads.

use crate::kubernetes::objects::{Condition, ObjectMeta, PodTemplateSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

pub const GROUP: &str = "kueue.x-k8s.io";

/// `Workload` condition types.
pub const QUOTA_RESERVED: &str = "QuotaReserved";
pub const ADMITTED: &str = "Admitted";
pub const FINISHED: &str = "Finished";
pub const EVICTED: &str = "Evicted";

/// `AdmissionCheck` condition type a controller sets when it serves the check.
pub const ACTIVE: &str = "Active";

/// `AdmissionCheckState.state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CheckState {
    Pending,
    Ready,
    Retry,
    Rejected,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: WorkloadSpec,
    #[serde(default)]
    pub status: WorkloadStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    #[serde(default)]
    pub pod_sets: Vec<PodSet>,
    #[serde(default)]
    pub queue_name: Option<String>,
    #[serde(default)]
    pub priority: Option<i32>,
    /// Defaults to true; false: never admitted, and evicted if it runs.
    #[serde(default)]
    pub active: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSet {
    #[serde(default = "main_pod_set")]
    pub name: String,
    #[serde(default)]
    pub template: PodTemplateSpec,
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default)]
    pub min_count: Option<u32>,
}

fn main_pod_set() -> String {
    "main".to_string()
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default)]
    pub admission: Option<Admission>,
    #[serde(default)]
    pub admission_checks: Vec<AdmissionCheckState>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    #[serde(default)]
    pub cluster_queue: String,
    #[serde(default)]
    pub pod_set_assignments: Vec<PodSetAssignment>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSetAssignment {
    #[serde(default = "main_pod_set")]
    pub name: String,
    /// Resource name → the ResourceFlavor its quota was reserved on.
    #[serde(default)]
    pub flavors: BTreeMap<String, String>,
    #[serde(default)]
    pub count: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckState {
    pub name: String,
    pub state: CheckState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_after_seconds: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_set_updates: Vec<PodSetUpdate>,
}

/// Additions an admission check makes to a pod set's pods when the workload is admitted; a key
/// that the pod template or the reserved flavor already sets to another value fails admission.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSetUpdate {
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// `corev1.Toleration`s, passed through as written on the flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheck {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: AdmissionCheckSpec,
    #[serde(default)]
    pub status: AdmissionCheckStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckSpec {
    #[serde(default)]
    pub controller_name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckStatus {
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceFlavor {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ResourceFlavorSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceFlavorSpec {
    #[serde(default)]
    pub node_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub node_taints: Vec<Value>,
    #[serde(default)]
    pub tolerations: Vec<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueue {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ClusterQueueSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueSpec {
    #[serde(default)]
    pub resource_groups: Vec<ResourceGroup>,
    /// v1beta1 only (v1beta2 has just the strategy).
    #[serde(default)]
    pub admission_checks: Vec<String>,
    #[serde(default)]
    pub admission_checks_strategy: Option<AdmissionChecksStrategy>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionChecksStrategy {
    #[serde(default)]
    pub admission_checks: Vec<AdmissionCheckStrategyRule>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckStrategyRule {
    pub name: String,
    #[serde(default)]
    pub on_flavors: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceGroup {
    #[serde(default)]
    pub covered_resources: Vec<String>,
    #[serde(default)]
    pub flavors: Vec<FlavorQuotas>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlavorQuotas {
    pub name: String,
    #[serde(default)]
    pub resources: Vec<ResourceQuota>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceQuota {
    pub name: String,
    #[serde(default)]
    pub nominal_quota: Value,
}

impl Workload {
    pub fn is_active(&self) -> bool {
        self.spec.active != Some(false)
    }

    pub fn is_finished(&self) -> bool {
        crate::kubernetes::objects::is_true(&self.status.conditions, FINISHED)
    }

    pub fn has_quota_reservation(&self) -> bool {
        crate::kubernetes::objects::is_true(&self.status.conditions, QUOTA_RESERVED)
    }

    pub fn is_evicted(&self) -> bool {
        crate::kubernetes::objects::is_true(&self.status.conditions, EVICTED)
    }

    pub fn check(&self, name: &str) -> Option<&AdmissionCheckState> {
        self.status.admission_checks.iter().find(|c| c.name == name)
    }
}

impl ClusterQueue {
    /// The admission checks the queue requires (of either API version).
    pub fn check_names(&self) -> Vec<&str> {
        let strategy = self.spec.admission_checks_strategy.iter().flat_map(|s| &s.admission_checks);
        self.spec.admission_checks.iter().map(String::as_str).chain(strategy.map(|r| r.name.as_str())).collect()
    }
}
