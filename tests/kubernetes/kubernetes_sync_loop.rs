//! `k8s-sync` closing the loop with the scheduler extender, against the fake API server and a real
//! `arbiter serve`, over several rounds it runs itself (`--run-rounds`): pods the scheduler binds
//! are recorded, a refused one is asked again only after the next round, a round that preempts a
//! job gets exactly its pods evicted (a PodDisruptionBudget's 429 retried) and their bindings
//! forgotten, and the replacement pods are recorded in turn. With `--evict-misplaced`, a pod the
//! scheduler bound alone where the round does not run its job is evicted. Then `--once` prints the
//! new fields.

use crate::fake_api::{FakeApi, Recorded};
use crate::kubernetes_sync::{node, pod};
use crate::service_support::Fixture;
use arbiter::kubernetes::api::Client;
use arbiter::kubernetes::arbiter::ArbiterClient;
use arbiter::kubernetes::sync::controller::{Sync, SyncReport};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

const PODS: &str = "/api/v1/pods";
const PDB: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// Two v100 servers of 4 GPUs; three jobs of 4 GPUs, so one waits every round.
fn create_session(server: &Fixture) -> String {
    let body = json!({"policy": "max_min_fairness", "round_seconds": 360,
        "cluster": {"worker_types": {"v100": {"count": 8, "gpus_per_server": 4}}}});
    let reply = server.client().post("/v1/sessions", &serde_json::to_vec(&body).unwrap()).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    reply.json()["id"].as_str().unwrap().to_string()
}

fn get(server: &Fixture, path: &str) -> Value {
    let reply = server.client().get(path).unwrap();
    assert_eq!(reply.status, 200, "{path}: {}", reply.text());
    reply.json()
}

/// Per job, the servers (`v100/<n>`) its lease of the last round is on.
fn leases(server: &Fixture, id: &str) -> BTreeMap<String, BTreeSet<String>> {
    let view = get(server, &format!("/v1/sessions/{id}"));
    view["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            let gpus = j["lease"]["gpus"].as_array().cloned().unwrap_or_default();
            let servers = gpus.iter().map(|g| g.as_str().unwrap().rsplit_once('/').unwrap().0.to_string()).collect();
            (j["id"].as_str().unwrap().to_string(), servers)
        })
        .collect()
}

/// Recorded bindings: pod name → node.
fn recorded(server: &Fixture, id: &str) -> BTreeMap<String, String> {
    get(server, &format!("/v1/sessions/{id}/k8s/bindings"))["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["name"].as_str().unwrap().to_string(), b["node"].as_str().unwrap().to_string()))
        .collect()
}

fn node_of(server: &str) -> String {
    format!("gpu-{}", server.replace('/', "-"))
}

fn bind_in_fake(fake: &FakeApi, name: &str, node: &str) {
    fake.edit(PODS, Some("team-c"), name, |p| p["spec"]["nodeName"] = json!(node));
}

fn evictions(requests: &[Recorded]) -> Vec<&Recorded> {
    requests.iter().filter(|r| r.method == "POST" && r.uri.ends_with("/eviction")).collect()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| format!("team-c/{n}")).collect()
}

const THR: &str = r#"{"v100": 10.0}"#;
const JOBS: [&str; 3] = ["alpha", "beta", "gamma"];

/// `arbiter serve` with `create_session`'s session, the fake API server listing the two v100
/// servers' nodes (and `more_nodes`) and one pending pod per job of `JOBS`, and a sync between
/// them that runs the rounds.
fn start(name: &str, more_nodes: Vec<Value>) -> (Fixture, FakeApi, String, Sync) {
    let server = Fixture::start(name, &["--no-demo"]);
    let fake = FakeApi::start();
    let id = create_session(&server);
    let mut nodes = vec![node("gpu-v100-0", "v100", "0", true, false), node("gpu-v100-1", "v100", "1", true, false)];
    nodes.extend(more_nodes);
    fake.set("/api/v1/nodes", nodes);
    fake.set(PODS, JOBS.iter().map(|j| pod(&format!("{j}-0"), j, 4, "Pending", THR)).collect());
    let kube = Client::new(&fake.url(), None, None).unwrap();
    let arbiter = ArbiterClient::new(&format!("http://{}", server.server.addr), None).unwrap();
    let sync = Sync::new(kube, arbiter, id.clone(), None).running_rounds();
    (server, fake, id, sync)
}

#[test]
fn k8s_sync_records_bindings_evicts_what_a_round_preempts_and_forgets_it() {
    let cpu = json!({"metadata": {"name": "cpu-0", "labels": {"kubernetes.io/hostname": "cpu-0"}},
                     "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    let (server, fake, id, mut sync) = start("k8s-sync-bindings", vec![cpu]);
    let t0 = Instant::now();

    // The pods appear: their jobs are added and the first round runs.
    let report = sync.step_at(t0).unwrap();
    assert_eq!(report.added, JOBS);
    assert_eq!(report.rounds, [0]);
    assert!(report.bound.is_empty() && report.evicted.is_empty() && report.forgotten.is_empty(), "{report:?}");
    let placed = leases(&server, &id);
    let running: Vec<&str> = JOBS.iter().copied().filter(|j| !placed[*j].is_empty()).collect();
    let waiting = JOBS.iter().copied().find(|j| placed[*j].is_empty()).expect("8 GPUs for 12 asked: one waits");
    assert_eq!(running.len(), 2, "{placed:?}");

    // The scheduler binds the running jobs' pods to their servers' nodes, and the waiting job's
    // pod to a node that is no session server (as with an ignorable extender).
    for job in &running {
        bind_in_fake(&fake, &format!("{job}-0"), &node_of(placed[*job].iter().next().unwrap()));
    }
    bind_in_fake(&fake, &format!("{waiting}-0"), "cpu-0");
    let report = sync.step_at(t0 + Duration::from_secs(5)).unwrap();
    let mut expected: Vec<String> = running.iter().map(|j| format!("team-c/{j}-0")).collect();
    expected.sort();
    assert_eq!(report.bound, expected, "{report:?}");
    assert_eq!(report.refused.len(), 1, "{report:?}");
    assert!(report.refused[0].starts_with(&format!("team-c/{waiting}-0: arbiter:")), "{report:?}");
    assert!(report.refused[0].contains(&format!("job {waiting} waits")), "{report:?}");
    let bound = recorded(&server, &id);
    assert_eq!(bound.len(), 2, "{bound:?}");
    assert!(evictions(&fake.take()).is_empty());

    // Nothing new within the round: nothing sent, the refusal not asked again.
    assert_eq!(sync.step_at(t0 + Duration::from_secs(10)).unwrap(), SyncReport::default());

    // The next round: the job that waited runs, so another is preempted. Its pod is evicted; the
    // first eviction meets a PodDisruptionBudget and is retried at the next step.
    fake.fail_next_with("POST", 429, PDB);
    let report = sync.step_at(t0 + Duration::from_secs(361)).unwrap();
    assert_eq!(report.rounds, [1], "{report:?}");
    let placed = leases(&server, &id);
    assert!(!placed[waiting].is_empty(), "the job that waited runs in round 1: {placed:?}");
    let mut moved: Vec<String> = bound
        .iter()
        .filter(|(pod, node)| {
            let job = pod.trim_end_matches("-0");
            !placed[job].iter().any(|s| &&node_of(s) == node)
        })
        .map(|(pod, _)| pod.clone())
        .collect();
    moved.sort();
    assert!(!moved.is_empty(), "round 1 preempts or moves a bound pod: {placed:?} {bound:?}");
    let requests = fake.take();
    let attempts = evictions(&requests);
    assert_eq!(attempts.len(), moved.len(), "one eviction per preempted pod: {requests:?}");
    for (attempt, pod) in attempts.iter().zip(&moved) {
        assert_eq!(attempt.uri, format!("/api/v1/namespaces/team-c/pods/{pod}/eviction"));
        assert_eq!(
            attempt.body,
            json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": "team-c"}})
        );
    }
    assert!(report.errors.iter().any(|e| e.contains("429") && e.contains(PDB)), "{report:?}");
    let refused_by_pdb = &moved[0];
    assert_eq!(report.evicted, names(&moved[1..].iter().map(String::as_str).collect::<Vec<_>>()));
    assert_eq!(report.forgotten, report.evicted, "forgotten once evicted");
    assert!(recorded(&server, &id).contains_key(refused_by_pdb), "the binding stays until the eviction is taken");
    assert_eq!(report.refused.len(), 1, "a new round: the refused pod is asked again: {report:?}");
    assert!(report.refused[0].contains("cpu-0"), "now its job runs, but not on cpu-0: {report:?}");

    // The next step retries the eviction the budget refused.
    let report = sync.step_at(t0 + Duration::from_secs(366)).unwrap();
    assert_eq!(report.evicted, names(&[refused_by_pdb]));
    assert_eq!(report.forgotten, names(&[refused_by_pdb]));
    assert!(report.removed.is_empty(), "an evicted pod's job stays: {report:?}");
    assert_eq!(evictions(&fake.take()).len(), 1);
    let left = recorded(&server, &id);
    assert!(moved.iter().all(|p| !left.contains_key(p)), "{left:?}");
    let evicted_pod = fake.object(PODS, Some("team-c"), refused_by_pdb).unwrap();
    assert!(evicted_pod["metadata"]["deletionTimestamp"].is_string());

    // The evicted pods are gone and replaced (pending); the misplaced pod is deleted and its job's
    // new pod is bound to its server: recorded.
    fake.state.lock().unwrap().collections.get_mut(PODS).unwrap().retain(|p| {
        let name = p["metadata"]["name"].as_str().unwrap();
        !moved.iter().any(|m| m == name) && name != format!("{waiting}-0")
    });
    let mut replacements: Vec<Value> =
        moved.iter().map(|m| pod(&m.replace("-0", "-1"), m.trim_end_matches("-0"), 4, "Pending", THR)).collect();
    let mut new_pod = pod(&format!("{waiting}-1"), waiting, 4, "Pending", THR);
    new_pod["spec"]["nodeName"] = json!(node_of(placed[waiting].iter().next().unwrap()));
    replacements.push(new_pod);
    fake.state.lock().unwrap().collections.get_mut(PODS).unwrap().extend(replacements);
    let report = sync.step_at(t0 + Duration::from_secs(370)).unwrap();
    assert_eq!(report.bound, names(&[&format!("{waiting}-1")]), "{report:?}");
    assert!(report.evicted.is_empty() && report.forgotten.is_empty() && report.removed.is_empty(), "{report:?}");
    assert!(recorded(&server, &id).contains_key(&format!("{waiting}-1")));

    // A bound pod that finishes: its binding is forgotten (and its job, now without pods, removed).
    let still: Vec<String> = recorded(&server, &id).into_keys().filter(|p| p.ends_with("-0")).collect::<Vec<_>>();
    for pod in &still {
        fake.edit(PODS, Some("team-c"), pod, |p| p["status"]["phase"] = json!("Succeeded"));
    }
    let report = sync.step_at(t0 + Duration::from_secs(375)).unwrap();
    assert_eq!(report.forgotten, names(&still.iter().map(String::as_str).collect::<Vec<_>>()), "{report:?}");
    assert!(evictions(&fake.take()).is_empty(), "a finished pod is not evicted");
}

#[test]
fn k8s_sync_evicts_a_pod_bound_where_the_round_does_not_run_its_job_with_evict_misplaced() {
    let (server, fake, id, sync) = start("k8s-sync-misplaced", Vec::new());
    let mut sync = sync.evicting_misplaced();
    let t0 = Instant::now();
    assert_eq!(sync.step_at(t0).unwrap().rounds, [0]);
    let placed = leases(&server, &id);
    let waiting = JOBS.iter().copied().find(|j| placed[*j].is_empty()).expect("one job waits");
    let running = JOBS.iter().copied().find(|j| !placed[*j].is_empty()).unwrap();

    // Past an unreachable ignorable extender, the scheduler binds the waiting job's pod to the
    // node of a server the round gave another job, and a running job's pod where it runs.
    bind_in_fake(&fake, &format!("{waiting}-0"), &node_of(placed[running].iter().next().unwrap()));
    bind_in_fake(&fake, &format!("{running}-0"), &node_of(placed[running].iter().next().unwrap()));
    let report = sync.step_at(t0 + Duration::from_secs(5)).unwrap();
    assert_eq!(report.evicted, names(&[&format!("{waiting}-0")]), "{report:?}");
    assert_eq!(report.bound, names(&[&format!("{running}-0")]), "{report:?}");
    assert!(report.forgotten.is_empty() && report.refused.is_empty(), "no binding to forget: {report:?}");
    let requests = fake.take();
    let attempts = evictions(&requests);
    assert_eq!(attempts.len(), 1, "{requests:?}");
    assert_eq!(attempts[0].uri, format!("/api/v1/namespaces/team-c/pods/{waiting}-0/eviction"));
    assert!(!recorded(&server, &id).contains_key(&format!("{waiting}-0")));
}

#[test]
fn k8s_sync_once_reports_the_binding_duties() {
    let server = Fixture::start("k8s-sync-once", &["--no-demo"]);
    let fake = FakeApi::start();
    let id = create_session(&server);
    fake.set("/api/v1/nodes", vec![node("gpu-v100-0", "v100", "0", true, false)]);
    fake.set(PODS, vec![pod("delta-0", "delta", 4, "Pending", r#"{"v100": 10.0}"#)]);
    let out = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["k8s-sync", "--once", "--run-rounds", "--api-server", &fake.url(), "--session", &id])
        .args(["--arbiter", &format!("http://{}", server.server.addr)])
        .env("ARBITER_LOG", "warn")
        .output()
        .expect("run arbiter k8s-sync");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["added"], json!(["delta"]));
    assert_eq!(report["rounds"], json!([0]), "{report}");
    for field in ["bound", "evicted", "forgotten", "refused"] {
        assert_eq!(report[field], json!([]), "{field}: {report}");
    }
    assert_eq!(get(&server, &format!("/v1/sessions/{id}"))["rounds"], 1);
}
