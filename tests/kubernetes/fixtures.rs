//! The Kueue fixtures (`fixtures/kueue/`), edits of them, and session snapshots built by hand.
#![allow(dead_code)]

use arbiter::kubernetes::kueue::types::{AdmissionCheck, ClusterQueue, ResourceFlavor, Workload};
use arbiter::kubernetes::objects::List;
use arbiter::kubernetes::session::{ClusterSnapshot, JobSnapshot, LeaseSnapshot, SessionSnapshot, WorkerTypeSnapshot};
use serde_json::{json, Value};

pub fn load(name: &str) -> Value {
    let path = format!("{}/fixtures/kueue/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn workload(value: &Value) -> Workload {
    serde_json::from_value(value.clone()).expect("a Workload")
}

pub fn resnet() -> Value {
    load("workload-resnet50.json")
}

pub fn a3c() -> Value {
    load("workload-a3c.json")
}

pub fn transformer() -> Value {
    load("workload-transformer.json")
}

pub fn flavors() -> Vec<ResourceFlavor> {
    serde_json::from_value::<List<ResourceFlavor>>(load("resourceflavors.json")).expect("flavors").items
}

pub fn checks() -> Vec<AdmissionCheck> {
    vec![serde_json::from_value(load("admissioncheck.json")).expect("an AdmissionCheck")]
}

pub fn queues() -> Vec<ClusterQueue> {
    vec![serde_json::from_value(load("clusterqueue.json")).expect("a ClusterQueue")]
}

/// Sets (or adds) a condition of a Workload object, as Kueue writes it.
pub fn set_condition(object: &mut Value, kind: &str, status: &str, reason: &str) {
    let conditions = object["status"]["conditions"].as_array_mut().expect("conditions");
    conditions.retain(|c| c["type"] != kind);
    conditions.push(json!({"type": kind, "status": status, "reason": reason, "message": reason,
        "lastTransitionTime": "2026-01-05T10:20:00Z", "observedGeneration": 1}));
}

/// Sets the state of the `arbiter` check, keeping or dropping its pod-set updates.
pub fn set_check(object: &mut Value, state: &str, updates: Option<Value>) {
    let mut check =
        json!({"name": "arbiter", "state": state, "lastTransitionTime": "2026-01-05T10:20:00Z", "message": ""});
    if let Some(updates) = updates {
        check["podSetUpdates"] = updates;
    }
    object["status"]["admissionChecks"] = json!([check]);
}

/// What Kueue does to a workload a Retry evicts: `Evicted`, then its quota released, the check
/// back to Pending.
pub fn evicted_and_requeued(object: &mut Value) {
    set_condition(object, "QuotaReserved", "False", "Pending");
    set_condition(object, "Admitted", "False", "NoReservation");
    set_condition(object, "Requeued", "True", "AdmissionCheck");
    object["status"].as_object_mut().unwrap().remove("admission");
    set_check(object, "Pending", None);
}

/// Kueue admitting a workload whose checks are all Ready.
pub fn admitted(object: &mut Value, updates: Value) {
    set_condition(object, "Admitted", "True", "Admitted");
    set_check(object, "Ready", Some(updates));
}

/// The fixtures' cluster: 4 V100 on one server, 4 K80 on two.
pub fn cluster() -> ClusterSnapshot {
    let mut worker_types = indexmap::IndexMap::new();
    worker_types.insert("k80".to_string(), WorkerTypeSnapshot { count: 4, servers: 2, gpus_per_server: 2 });
    worker_types.insert("v100".to_string(), WorkerTypeSnapshot { count: 4, servers: 1, gpus_per_server: 4 });
    ClusterSnapshot { worker_types, failed_gpus: Vec::new() }
}

/// A session after `rounds` rounds of 360 s, with `(job, arrival, type it runs on)`.
pub fn snapshot(rounds: u64, jobs: &[(&str, f64, Option<&str>)]) -> SessionSnapshot {
    SessionSnapshot {
        id: "s1".to_string(),
        round_seconds: 360.0,
        rounds,
        time: rounds as f64 * 360.0,
        cluster: cluster(),
        jobs: jobs
            .iter()
            .map(|(id, arrival, on)| JobSnapshot {
                id: id.to_string(),
                arrival: *arrival,
                lease: on.map(|w| LeaseSnapshot { worker_type: w.to_string(), gpus: Vec::new() }),
            })
            .collect(),
    }
}
