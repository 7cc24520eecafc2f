//! `k8s-sync`'s planning: nodes that are not Ready or are cordoned fail their server's GPUs and
//! return them when Ready; pods labelled with a job add it and remove it when they are done.

use crate::fixtures::snapshot;
use arbiter::kubernetes::objects::{Node, Pod};
use arbiter::kubernetes::session::SessionSnapshot;
use arbiter::kubernetes::sync::{plan, SyncInputs, SyncPlan};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

pub fn node(name: &str, worker_type: &str, server: &str, ready: bool, unschedulable: bool) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "501",
                     "labels": {"arbiter.dev/worker-type": worker_type, "arbiter.dev/server": server,
                                "kubernetes.io/hostname": name}},
        "spec": {"unschedulable": unschedulable, "podCIDR": "10.244.1.0/24"},
        "status": {
            "capacity": {"cpu": "32", "nvidia.com/gpu": "4"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "Ready", "status": if ready { "True" } else { "Unknown" }, "reason": if ready { "KubeletReady" } else { "NodeStatusUnknown" },
                 "lastHeartbeatTime": "2026-01-05T10:00:00Z", "lastTransitionTime": "2026-01-05T10:00:00Z"}
            ]
        }
    })
}

pub fn pod(name: &str, job: &str, gpus: u32, phase: &str, throughputs: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-c", "uid": format!("uid-{name}"), "resourceVersion": "601",
                     "labels": {"arbiter.dev/job": job},
                     "annotations": {"arbiter.dev/throughputs": throughputs}},
        "spec": {"containers": [{"name": "train", "image": "registry.example/t:1",
                                 "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}}}]},
        "status": {"phase": phase}
    })
}

fn run(nodes: &[Value], pods: &[Value], session: &SessionSnapshot, known: &BTreeSet<String>) -> SyncPlan {
    let nodes: Vec<Node> = nodes.iter().map(|n| serde_json::from_value(n.clone()).unwrap()).collect();
    let pods: Vec<Pod> = pods.iter().map(|p| serde_json::from_value(p.clone()).unwrap()).collect();
    let refused = BTreeMap::new();
    plan(&SyncInputs {
        nodes: &nodes,
        pods: &pods,
        session,
        reference: None,
        known,
        bindings: &[],
        evictions: &[],
        refused: &refused,
        evict_misplaced: false,
    })
}

#[test]
fn nodes_fail_and_return_their_servers_gpus() {
    let mut session = snapshot(1, &[]);
    session.cluster.failed_gpus = vec!["k80/1/0".into(), "k80/1/1".into()];
    let nodes = [
        node("gpu-v100-0", "v100", "0", false, false), // NotReady: fail
        node("gpu-k80-0", "k80", "0", true, true),     // cordoned: fail
        node("gpu-k80-1", "k80", "1", true, false),    // Ready with failed GPUs: return
        json!({"metadata": {"name": "cpu-0"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
    ];
    let plan = run(&nodes, &[], &session, &BTreeSet::new());
    assert_eq!(plan.fail, ["v100/0", "k80/0"]);
    assert_eq!(plan.restore, ["k80/1"]);
    assert!(plan.problems.is_empty(), "{:?}", plan.problems);

    // Level-triggered: a failed server stays failed without another event.
    session.cluster.failed_gpus = (0..4).map(|g| format!("v100/0/{g}")).collect();
    let plan = run(&nodes[..1], &[], &session, &BTreeSet::new());
    assert!(plan.fail.is_empty() && plan.restore.is_empty());
}

#[test]
fn a_smaller_last_server_fails_once() {
    // Six V100s, four to a server: server 1 holds two. Once its two GPUs are failed, a node still
    // NotReady is not reported again.
    let mut session = snapshot(1, &[]);
    let v100 = session.cluster.worker_types.get_mut("v100").unwrap();
    (v100.count, v100.servers, v100.gpus_per_server) = (6, 2, 4);
    let nodes = [node("gpu-v100-1", "v100", "1", false, false)];
    assert_eq!(run(&nodes, &[], &session, &BTreeSet::new()).fail, ["v100/1"]);
    session.cluster.failed_gpus = vec!["v100/1/0".into(), "v100/1/1".into()];
    let plan = run(&nodes, &[], &session, &BTreeSet::new());
    assert!(plan.fail.is_empty() && plan.restore.is_empty(), "{:?} {:?}", plan.fail, plan.restore);
}

#[test]
fn nodes_with_bad_labels_are_reported_not_acted_on() {
    let session = snapshot(1, &[]);
    let mut unlabelled = node("gpu-x", "v100", "0", false, false);
    unlabelled["metadata"]["labels"].as_object_mut().unwrap().remove("arbiter.dev/server");
    let nodes = [node("gpu-a", "a100", "0", false, false), node("gpu-b", "k80", "7", false, false), unlabelled];
    let plan = run(&nodes, &[], &session, &BTreeSet::new());
    assert!(plan.fail.is_empty());
    assert_eq!(plan.problems.len(), 3, "{:?}", plan.problems);
    assert!(plan.problems[0].contains("worker type \"a100\""));
    assert!(plan.problems[1].contains("arbiter.dev/server=\"7\" is not a server of k80 (0 to 1)"));
    assert!(plan.problems[2].contains("without arbiter.dev/server"));
}

#[test]
fn pods_add_their_job_and_remove_it_when_done() {
    let thr = r#"{"v100": 4.0, "k80": 1.5}"#;
    let pods = [pod("bert-0", "bert", 2, "Running", thr), pod("bert-1", "bert", 2, "Pending", thr)];
    let plan = run(&[], &pods, &snapshot(1, &[]), &BTreeSet::new());
    assert_eq!(plan.add.len(), 1);
    assert_eq!(plan.add[0].id, "bert");
    assert_eq!(plan.add[0].scale_factor, Some(4.0), "2 pods × 2 GPUs");
    assert_eq!(plan.known, BTreeSet::from(["bert".to_string()]));

    // A gang of 2 pods announced by its first: 2 × 2 GPUs, as the scheduler extender counts it.
    let mut gang = pod("gpt-0", "gpt", 2, "Pending", thr);
    gang["metadata"]["annotations"]["arbiter.dev/pods"] = json!("2");
    let plan = run(&[], &[gang.clone()], &snapshot(1, &[]), &BTreeSet::new());
    assert_eq!(plan.add[0].scale_factor, Some(4.0));
    // Of 4 pods: 8 GPUs at once, and each type has 4. No round could place it: not added.
    gang["metadata"]["annotations"]["arbiter.dev/pods"] = json!("4");
    let plan = run(&[], &[gang.clone()], &snapshot(1, &[]), &BTreeSet::new());
    assert!(plan.add.is_empty());
    assert!(plan.problems[0].contains("needs 8 GPUs at once, and the worker types it may run on have at most 4"));
    gang["metadata"]["annotations"]["arbiter.dev/pods"] = json!("0");
    let plan = run(&[], &[gang], &snapshot(1, &[]), &BTreeSet::new());
    assert!(plan.add.is_empty());
    assert!(
        plan.problems[0].contains("annotation arbiter.dev/pods: \"0\" is not a whole number > 0"),
        "{:?}",
        plan.problems
    );

    // In the session: nothing to do while a pod runs.
    let session = snapshot(1, &[("bert", 0.0, Some("v100")), ("api-job", 0.0, None)]);
    let plan = run(&[], &pods, &session, &BTreeSet::new());
    assert!(plan.add.is_empty() && plan.remove.is_empty());

    // Every pod succeeded: removed. A job added through the API, with no pods, stays.
    let done = [pod("bert-0", "bert", 2, "Succeeded", thr), pod("bert-1", "bert", 2, "Succeeded", thr)];
    let plan = run(&[], &done, &session, &BTreeSet::new());
    assert_eq!(plan.remove, ["bert"]);
    // The pods deleted: removed too, since this sync saw them.
    let plan = run(&[], &[], &session, &BTreeSet::from(["bert".to_string()]));
    assert_eq!(plan.remove, ["bert"]);
}

#[test]
fn pods_that_cannot_make_a_job_are_reported() {
    let session = snapshot(1, &[]);
    let pods = [
        pod("cpu-0", "etl", 0, "Running", r#"{"v100": 1}"#),
        pod("bad-0", "bad", 1, "Running", "not json"),
        pod("ns-0", "team/x", 1, "Running", r#"{"v100": 1}"#),
    ];
    let plan = run(&[], &pods, &session, &BTreeSet::new());
    assert!(plan.add.is_empty(), "{:?}", plan.add);
    assert_eq!(plan.problems.len(), 3, "{:?}", plan.problems);
    assert!(plan.problems.iter().any(|p| p.contains("job etl: its pods request no nvidia.com/gpu")));
    assert!(plan.problems.iter().any(|p| p.contains("annotation arbiter.dev/throughputs is not a JSON object")));
    assert!(plan.problems.iter().any(|p| p.contains("a job id with '/' is a Kueue workload's")));
}
