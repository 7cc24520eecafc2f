//! The server-side-apply bodies the Kueue controller sends: one admission check's state in a
//! Workload's status, and the `Active` condition of an AdmissionCheck. Each names only the fields
//! Arbiter owns (field manager `arbiter`), so Kueue's own entries are left as they are.

use super::reconcile::WorkloadPatch;
use super::types::{ACTIVE, GROUP};
use serde_json::{json, Value};

/// `status.admissionChecks[<ours>]` of a Workload; with the resource version the decision was
/// made on, so a Workload changed since is a conflict rather than overwritten.
pub fn workload_status(version: &str, patch: &WorkloadPatch) -> Value {
    let mut metadata = json!({"name": patch.name, "namespace": patch.namespace});
    if let Some(rv) = &patch.resource_version {
        metadata["resourceVersion"] = json!(rv);
    }
    json!({
        "apiVersion": format!("{GROUP}/{version}"),
        "kind": "Workload",
        "metadata": metadata,
        "status": {"admissionChecks": [patch.check]},
    })
}

/// `status.conditions[Active]` of an AdmissionCheck served here.
pub fn check_active(version: &str, name: &str, now: &str, session: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/{version}"),
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "status": {"conditions": [{
            "type": ACTIVE,
            "status": "True",
            "reason": "Active",
            "message": format!("arbiter: decides admission by the rounds of session {session}"),
            "lastTransitionTime": now,
        }]},
    })
}
