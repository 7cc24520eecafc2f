//! `k8s-sync`'s binding duties, without I/O: bound pods the session has not recorded are reported
//! (a refused one once per round), the last round's evictions of live pods are carried out, the
//! bindings of pods that are gone are forgotten, and a job whose pods are only being deleted stays;
//! with `--evict-misplaced`, pods the scheduler bound alone where the round does not run their job
//! are evicted.

use crate::fixtures::snapshot;
use crate::kubernetes_sync::{node, pod};
use arbiter::kubernetes::objects::Node;
use arbiter::kubernetes::objects::Pod;
use arbiter::kubernetes::session::{BindingSnapshot, EvictionSnapshot};
use arbiter::kubernetes::sync::{plan, plan_bindings, PodOnNode, SyncInputs};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

const THR: &str = r#"{"v100": 4.0}"#;

/// A `bert` pod of team-c, in `phase`, bound to `node` if given.
fn bert(name: &str, phase: &str, node: Option<&str>) -> Value {
    let mut p = pod(name, "bert", 2, phase, THR);
    if let Some(node) = node {
        p["spec"]["nodeName"] = json!(node);
    }
    p
}

fn pods(values: &[Value]) -> Vec<Pod> {
    values.iter().map(|v| serde_json::from_value(v.clone()).unwrap()).collect()
}

fn binding(name: &str, uid: &str, node: &str) -> BindingSnapshot {
    BindingSnapshot {
        namespace: "team-c".into(),
        name: name.into(),
        uid: uid.into(),
        node: node.into(),
        job: "bert".into(),
        server: "v100/0".into(),
    }
}

fn eviction(name: &str, uid: &str) -> EvictionSnapshot {
    EvictionSnapshot { pod: binding(name, uid, "gpu-v100-0"), reason: "arbiter: job bert waits".into() }
}

fn on(name: &str, node: &str) -> PodOnNode {
    PodOnNode { namespace: "team-c".into(), name: name.into(), uid: format!("uid-{name}"), node: node.into() }
}

fn forgotten(names: &[&str]) -> Vec<(String, String)> {
    names.iter().map(|n| ("team-c".to_string(), n.to_string())).collect()
}

#[test]
fn bound_pods_the_session_has_not_recorded_are_reported() {
    let mut recreated = bert("bert-3", "Running", Some("gpu-v100-0"));
    recreated["metadata"]["uid"] = json!("uid-bert-3-new");
    let mut kueue = pod("kq-0", "team/x", 2, "Running", THR);
    kueue["spec"]["nodeName"] = json!("gpu-v100-0");
    let listed = pods(&[
        bert("bert-0", "Running", Some("gpu-v100-0")), // bound, unrecorded: reported
        bert("bert-1", "Pending", None),               // not bound yet
        bert("bert-2", "Running", Some("gpu-v100-0")), // recorded
        recreated,                                     // recorded under its old UID: reported, replaces it
        bert("bert-4", "Succeeded", Some("gpu-v100-0")),
        kueue,
    ]);
    let bindings = [binding("bert-2", "uid-bert-2", "gpu-v100-0"), binding("bert-3", "uid-bert-3", "gpu-v100-0")];
    let planned = plan_bindings(&listed, &bindings, &[], &BTreeMap::new(), 3);
    let mut new_bert3 = on("bert-3", "gpu-v100-0");
    new_bert3.uid = "uid-bert-3-new".into();
    assert_eq!(planned.bind, [on("bert-0", "gpu-v100-0"), new_bert3]);
    assert!(planned.evict.is_empty());
    assert!(planned.forget.is_empty(), "the report of the new bert-3 replaces the old binding: {:?}", planned.forget);

    // Refused in this round: not asked again until another round has run.
    let refused = BTreeMap::from([(on("bert-0", "gpu-v100-0"), 3)]);
    let planned = plan_bindings(&listed, &bindings, &[], &refused, 3);
    assert!(planned.bind.iter().all(|b| b.name != "bert-0"), "{:?}", planned.bind);
    let planned = plan_bindings(&listed, &bindings, &[], &refused, 4);
    assert!(planned.bind.iter().any(|b| b.name == "bert-0"), "a new round: asked again: {:?}", planned.bind);
}

#[test]
fn evictions_of_live_pods_are_carried_out_and_gone_pods_forgotten() {
    let mut deleting = bert("bert-6", "Running", Some("gpu-v100-0"));
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-05T10:30:00Z");
    let listed = pods(&[
        bert("bert-0", "Running", Some("gpu-v100-0")),
        bert("bert-1", "Running", Some("gpu-v100-0")),
        bert("bert-2", "Running", Some("gpu-v100-0")),
        bert("bert-5", "Succeeded", Some("gpu-v100-0")),
        deleting,
    ]);
    let bindings = [
        binding("bert-0", "uid-bert-0", "gpu-v100-0"),
        binding("bert-1", "uid-bert-1", "gpu-v100-0"),
        binding("bert-2", "uid-bert-2", "gpu-v100-0"),
        binding("bert-5", "uid-bert-5", "gpu-v100-0"),
        binding("bert-6", "uid-bert-6", "gpu-v100-0"),
        binding("bert-7", "uid-bert-7", "gpu-v100-0"),
        binding("bert-9", "uid-bert-9", "gpu-v100-0"),
    ];
    let evictions = [
        eviction("bert-0", "uid-bert-0"),     // live: evicted
        eviction("bert-1", "uid-bert-1-old"), // another pod of that name now: the evicted one is gone
        eviction("bert-9", "uid-bert-9"),     // not listed any more
    ];
    let planned = plan_bindings(&listed, &bindings, &evictions, &BTreeMap::new(), 2);
    assert_eq!(planned.evict, [eviction("bert-0", "uid-bert-0")]);
    assert!(planned.bind.is_empty(), "{:?}", planned.bind);
    assert_eq!(planned.forget, forgotten(&["bert-1", "bert-5", "bert-6", "bert-7", "bert-9"]));
}

#[test]
fn the_sync_plan_carries_the_binding_duties_and_keeps_a_job_whose_pods_are_being_evicted() {
    let session = snapshot(1, &[("bert", 0.0, Some("v100"))]);
    let mut evicted = bert("bert-0", "Running", Some("gpu-v100-0"));
    evicted["metadata"]["deletionTimestamp"] = json!("2026-01-05T10:30:00Z");
    let listed = pods(&[evicted, bert("bert-1", "Running", Some("gpu-v100-0"))]);
    let known = BTreeSet::from(["bert".to_string()]);
    let bindings = [binding("bert-0", "uid-bert-0", "gpu-v100-0")];
    let refused = BTreeMap::new();
    let inputs = SyncInputs {
        nodes: &[],
        pods: &listed,
        session: &session,
        reference: None,
        known: &known,
        bindings: &bindings,
        evictions: &[],
        refused: &refused,
        evict_misplaced: false,
    };
    let planned = plan(&inputs);
    assert_eq!(planned.bindings.bind, [on("bert-1", "gpu-v100-0")]);
    assert_eq!(planned.bindings.forget, forgotten(&["bert-0"]));
    assert!(planned.remove.is_empty());

    // Its only pod being deleted: the job stays (its controller recreates the pod); once the
    // pod has gone with no replacement, the job is removed.
    let only = &listed[..1];
    let planned = plan(&SyncInputs { pods: only, ..inputs });
    assert!(planned.remove.is_empty(), "{:?}", planned.remove);
    assert!(planned.known.contains("bert"));
    let planned = plan(&SyncInputs { pods: &[], ..inputs });
    assert_eq!(planned.remove, ["bert"]);
}

#[test]
fn with_evict_misplaced_pods_bound_where_the_round_does_not_run_their_job_are_evicted() {
    // Round 0 ran bert on k80 server 0 and left gpt waiting; late arrived after it. k80 has
    // servers 0 and 1; cpu-0 is no server of the session.
    let mut session = snapshot(1, &[("bert", 0.0, Some("k80")), ("gpt", 0.0, None), ("late", 360.0, None)]);
    session.jobs[0].lease.as_mut().unwrap().gpus = vec!["k80/0/0".into(), "k80/0/1".into()];
    let nodes: Vec<Node> = [node("gpu-k80-0", "k80", "0", true, false), node("gpu-k80-1", "k80", "1", true, false)]
        .iter()
        .chain(&[json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-0"}})])
        .map(|n| serde_json::from_value(n.clone()).unwrap())
        .collect();
    let placed = |name: &str, job: &str, node: &str| {
        let mut p = pod(name, job, 1, "Running", THR);
        p["spec"]["nodeName"] = json!(node);
        p
    };
    let listed = pods(&[
        placed("bert-0", "bert", "gpu-k80-0"), // where the round runs it
        placed("bert-1", "bert", "gpu-k80-1"), // misplaced
        placed("gpt-0", "gpt", "gpu-k80-1"),   // its job waits
        placed("late-0", "late", "gpu-k80-1"), // its job arrived after the round
        placed("bert-2", "bert", "cpu-0"),     // not a server of the session
        placed("bert-3", "bert", "gpu-k80-1"), // recorded: the session's evictions cover it
        bert("bert-4", "Pending", None),
    ]);
    let known = BTreeSet::new();
    let refused = BTreeMap::new();
    let mut recorded = binding("bert-3", "uid-bert-3", "gpu-k80-1");
    recorded.server = "k80/1".into();
    let inputs = SyncInputs {
        nodes: &nodes,
        pods: &listed,
        session: &session,
        reference: None,
        known: &known,
        bindings: &[recorded],
        evictions: &[],
        refused: &refused,
        evict_misplaced: true,
    };
    let planned = plan(&inputs).bindings;
    let evicted: Vec<(&str, &str, &str)> =
        planned.misplaced.iter().map(|e| (e.pod.name.as_str(), e.pod.server.as_str(), e.reason.as_str())).collect();
    assert_eq!(
        evicted,
        [
            ("bert-1", "k80/1", "bound to k80/1 outside the rounds: round 0 runs job bert on k80/0"),
            ("gpt-0", "k80/1", "bound to k80/1 outside the rounds: round 0 runs job gpt nowhere"),
        ]
    );
    assert_eq!(planned.misplaced[0].pod.uid, "uid-bert-1");
    assert_eq!(planned.misplaced[1].pod.job, "gpt");
    assert!(planned.evict.is_empty());
    let reported: Vec<&str> = planned.bind.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(reported, ["bert-0", "bert-2", "late-0"], "the evicted are not reported to bind");

    // Without the flag nothing is evicted, and every unrecorded bound pod is reported.
    let planned = plan(&SyncInputs { evict_misplaced: false, ..inputs }).bindings;
    assert!(planned.misplaced.is_empty());
    let reported: Vec<&str> = planned.bind.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(reported, ["bert-0", "bert-1", "bert-2", "gpt-0", "late-0"]);
}
