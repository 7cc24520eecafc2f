//! A session as kube-scheduler's extender, against the real binary: bodies shaped exactly as the
//! scheduler sends them (`fixtures/k8s/`: a Pod and a NodeList written from the core/v1 and
//! extender/v1 type definitions), every verb's answer checked against the round the session ran,
//! the pod-to-job and node-to-server mapping errors, the `nodeCacheCapable` form, jobs added from
//! pod annotations, preemption, and rounds that move jobs: evictions, new bindings, a restart.

use crate::service_support::http::Client;
use crate::service_support::k8s::{fixture, node_of, pod};
use crate::service_support::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The NodeList: four GPU nodes for the session's servers, a CPU node without Arbiter labels, an
/// `a100` node (a type the session lacks) and a `v100` node labelled server 7 (there are 2).
fn nodes() -> Value {
    fixture("nodes.json")
}

fn node_names() -> Vec<String> {
    nodes()["items"].as_array().unwrap().iter().map(|n| n["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

/// `ExtenderArgs` as a scheduler without `nodeCacheCapable` sends it.
fn args(pod: &Value) -> Value {
    json!({"Pod": pod, "Nodes": nodes(), "NodeNames": null})
}

/// `ExtenderArgs` as a `nodeCacheCapable` scheduler sends it.
fn names_args(pod: &Value, names: &[&str]) -> Value {
    json!({"Pod": pod, "Nodes": null, "NodeNames": names})
}

fn binding(pod: &Value, node: &str) -> Value {
    let m = &pod["metadata"];
    json!({"PodName": m["name"], "PodNamespace": m["namespace"], "PodUID": m["uid"], "Node": node})
}

const CLUSTER: &str = r#"{"v100": {"count": 8, "gpus_per_server": 4}, "k80": {"count": 8, "gpus_per_server": 4}}"#;

/// A session on 2 v100 and 2 k80 servers of 4 GPUs, with `jobs`; its id.
fn create(c: &mut Client, jobs: Value) -> String {
    let cluster: Value = serde_json::from_str(CLUSTER).unwrap();
    let body = json!({"policy": "max_min_fairness", "cluster": {"worker_types": cluster}, "jobs": jobs});
    let reply = c.post("/v1/sessions", &bytes(&body)).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    reply.json()["id"].as_str().unwrap().to_string()
}

fn two_jobs() -> Value {
    json!([
        {"id": "resnet50", "scale_factor": 4, "throughput": {"v100": 40.0, "k80": 4.0}, "steps_remaining": 1e6},
        {"id": "a3c", "scale_factor": 4, "throughput": {"v100": 8.0, "k80": 4.0}, "steps_remaining": 1e6},
    ])
}

fn ok(c: &mut Client, path: &str, body: &Value) -> Value {
    let reply = c.post(path, &bytes(body)).unwrap();
    assert_eq!(reply.status, 200, "POST {path}: {}", reply.text());
    reply.json()
}

fn get(c: &mut Client, path: &str) -> Value {
    let reply = c.get(path).unwrap();
    assert_eq!(reply.status, 200, "GET {path}: {}", reply.text());
    reply.json()
}

fn round(c: &mut Client, id: &str) -> Value {
    ok(c, &format!("/v1/sessions/{id}/rounds"), &json!({}))
}

/// Per job, the servers (`<type>/<server>`) a round's placements put it on.
fn servers(round: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in round["placements"].as_array().unwrap() {
        for job in p["jobs"].as_array().unwrap() {
            for gpu in p["gpus"].as_array().unwrap() {
                let gpu = gpu.as_str().unwrap();
                let server = gpu.rsplit_once('/').unwrap().0.to_string();
                out.entry(job.as_str().unwrap().to_string()).or_default().insert(server);
            }
        }
    }
    out
}

fn passing(result: &Value) -> BTreeSet<String> {
    result["Nodes"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().into())
        .collect()
}

fn unresolvable(result: &Value) -> BTreeMap<String, String> {
    serde_json::from_value(result["FailedAndUnresolvableNodes"].clone()).unwrap()
}

fn scores(result: &Value) -> BTreeMap<String, i64> {
    result
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["Host"].as_str().unwrap().into(), h["Score"].as_i64().unwrap()))
        .collect()
}

#[test]
fn k8s_every_verb_answers_from_the_current_round() {
    let f = Fixture::start("k8s-verbs", &["--no-demo"]);
    let mut c = f.client();
    let id = create(&mut c, two_jobs());
    let base = format!("/v1/sessions/{id}/k8s");
    let resnet = pod(Some("resnet50"), "resnet50-worker-0", "0f6e2b8c-3a1d-4c7e-9b5f-1d2a4c6e8f00");

    // No round yet: the job waits, on every node, and preemption would not change that.
    let before = ok(&mut c, &format!("{base}/filter"), &args(&resnet));
    assert_eq!(before["Error"], "");
    assert_eq!(passing(&before), BTreeSet::new());
    let reasons = unresolvable(&before);
    assert_eq!(reasons.keys().cloned().collect::<Vec<_>>(), {
        let mut n = node_names();
        n.sort();
        n
    });
    assert!(reasons.values().all(|r| r.contains("job resnet50 waits") && r.contains("no round yet")), "{reasons:?}");
    assert_eq!(before["FailedNodes"], json!({}));

    let placed = servers(&round(&mut c, &id));
    let mine = placed.get("resnet50").expect("two 4-GPU jobs on four 4-GPU servers both run").clone();
    let my_nodes: BTreeSet<String> = mine.iter().map(|s| node_of(s).to_string()).collect();

    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&resnet));
    assert_eq!(filtered["Error"], "");
    assert_eq!(passing(&filtered), my_nodes);
    assert_eq!(filtered["NodeNames"], Value::Null, "the answer takes the form of the question");
    let input: Vec<Value> = nodes()["items"].as_array().unwrap().clone();
    for item in filtered["Nodes"]["items"].as_array().unwrap() {
        assert!(input.contains(item), "a passing node is sent back exactly as received");
    }
    let reasons = unresolvable(&filtered);
    assert_eq!(reasons.len(), node_names().len() - my_nodes.len());
    assert!(reasons["cpu-general-a"].contains("has no arbiter.dev/worker-type label"), "{reasons:?}");
    assert!(reasons["gpu-a100-a"].contains("arbiter.dev/worker-type=a100, which is not a worker type"), "{reasons:?}");
    assert!(reasons["gpu-v100-c"].contains("arbiter.dev/server=7, which names no v100 server"), "{reasons:?}");
    let other_gpu_nodes: Vec<&str> =
        ["v100/0", "v100/1", "k80/0", "k80/1"].into_iter().filter(|s| !mine.contains(*s)).map(node_of).collect();
    for n in &other_gpu_nodes {
        assert!(
            reasons[*n].contains("arbiter: job resnet50 runs on") && reasons[*n].contains("in round 0"),
            "{reasons:?}"
        );
    }

    let ranked = scores(&ok(&mut c, &format!("{base}/prioritize"), &args(&resnet)));
    assert_eq!(ranked.len(), node_names().len(), "every candidate is scored");
    for (node, score) in &ranked {
        assert_eq!(*score, if my_nodes.contains(node) { 10 } else { 0 }, "{node}: {ranked:?}");
    }

    let wrong = ok(&mut c, &format!("{base}/bind"), &binding(&resnet, other_gpu_nodes[0]));
    assert!(wrong["Error"].as_str().unwrap().contains("runs on"), "{wrong}");
    let target = my_nodes.iter().next().unwrap();
    assert_eq!(ok(&mut c, &format!("{base}/bind"), &binding(&resnet, target)), json!({"Error": ""}));
    let bound = get(&mut c, &format!("{base}/bindings"));
    assert_eq!(
        bound["bindings"],
        json!([{"namespace": "ml-research", "name": "resnet50-worker-0", "uid": "0f6e2b8c-3a1d-4c7e-9b5f-1d2a4c6e8f00",
                "node": target, "job": "resnet50", "server": mine.iter().next().unwrap(), "round": 0}])
    );
    assert_eq!(get(&mut c, &format!("{base}/evictions"))["evictions"], json!([]));

    // The binding is an event of the session, with the others.
    let audit = get(&mut c, &format!("/v1/sessions/{id}?audit=1"));
    assert_eq!(audit["audit"]["events"][0]["kind"], "pod_bound", "{audit}");
}

#[test]
fn k8s_pods_and_nodes_that_do_not_map() {
    let f = Fixture::start("k8s-mapping", &["--no-demo"]);
    let mut c = f.client();
    let id = create(&mut c, two_jobs());
    let base = format!("/v1/sessions/{id}/k8s");
    round(&mut c, &id);

    // Not Arbiter's: every node passes, no score, no preference in preemption, bound unrecorded.
    let other = pod(None, "etl-7f9c", "5c3e1a9b-2d4f-4e6a-8b0c-7d9e1f3a5b71");
    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&other));
    assert_eq!(filtered["Nodes"], nodes(), "the NodeList comes back whole");
    assert_eq!(filtered["FailedAndUnresolvableNodes"], json!({}));
    assert_eq!(filtered["Error"], "");
    assert!(scores(&ok(&mut c, &format!("{base}/prioritize"), &args(&other))).values().all(|&s| s == 0));
    assert_eq!(ok(&mut c, &format!("{base}/bind"), &binding(&other, "cpu-general-a")), json!({"Error": ""}));
    assert_eq!(get(&mut c, &format!("{base}/bindings"))["bindings"], json!([]), "not Arbiter's: not recorded");

    // A job the session does not have: an error the scheduler shows on the pod.
    let ghost = pod(Some("ghost"), "ghost-0", "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b");
    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&ghost));
    let error = filtered["Error"].as_str().unwrap();
    assert!(error.contains("names job \"ghost\"") && error.contains(&id), "{filtered}");
    assert!(scores(&ok(&mut c, &format!("{base}/prioritize"), &args(&ghost))).values().all(|&s| s == 0));
    let refused = ok(&mut c, &format!("{base}/bind"), &binding(&ghost, "gpu-v100-a"));
    assert!(refused["Error"].as_str().unwrap().contains("job ghost"), "{refused}");

    // The job in an annotation rather than a label maps the same way.
    let mut annotated = pod(None, "a3c-0", "2a4c6e8f-0b1d-4f3a-9c5e-7b9d1f3a5c7e");
    annotated["metadata"]["annotations"]["arbiter.dev/job"] = json!("a3c");
    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&annotated));
    assert!(!unresolvable(&filtered).is_empty() && filtered["Error"] == "", "{filtered}");
    assert!(unresolvable(&filtered)["cpu-general-a"].contains("no arbiter.dev/worker-type"));

    // A pod bind has never seen through filter.
    let unseen = pod(Some("resnet50"), "resnet50-worker-9", "1f1f1f1f-2e2e-4d4d-8c8c-3b3b3b3b3b3b");
    let refused = ok(&mut c, &format!("{base}/bind"), &binding(&unseen, "gpu-v100-a"));
    assert!(refused["Error"].as_str().unwrap().contains("has not been through filter"), "{refused}");
    // A UID that went through filter, under another pod's name: refused, not recorded.
    let mut impostor = binding(&annotated, "gpu-v100-a");
    impostor["PodNamespace"] = json!("kube-system");
    impostor["PodName"] = json!("impostor");
    let refused = ok(&mut c, &format!("{base}/bind"), &impostor);
    assert!(refused["Error"].as_str().unwrap().contains("went through filter as pod"), "{refused}");
    let recorded = get(&mut c, &format!("{base}/bindings"));
    assert!(!recorded.to_string().contains("impostor"), "{recorded}");

    // Bodies that are not the scheduler's.
    let mut bad = args(&other);
    bad["Pod"]["metadata"]["labels"] = json!(5);
    assert_error(
        &c.post(&format!("{base}/filter"), &bytes(&bad)).unwrap(),
        400,
        "malformed_request",
        Some("Pod.metadata.labels"),
    );
    let mut bad = args(&other);
    bad["Pod"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = json!("lots");
    assert_error(
        &c.post(&format!("{base}/prioritize"), &bytes(&bad)).unwrap(),
        400,
        "malformed_request",
        Some("Pod.spec.containers[0].resources.requests.nvidia.com/gpu"),
    );
    // A limit stands for a missing request, and a bad one is named where it is.
    let mut bad = args(&other);
    let resources = &mut bad["Pod"]["spec"]["containers"][0]["resources"];
    resources["requests"].as_object_mut().unwrap().remove("nvidia.com/gpu");
    resources["limits"] = json!({"nvidia.com/gpu": 1.5});
    assert_error(
        &c.post(&format!("{base}/prioritize"), &bytes(&bad)).unwrap(),
        400,
        "malformed_request",
        Some("Pod.spec.containers[0].resources.limits.nvidia.com/gpu"),
    );
    let mut bad = args(&other);
    bad["Nodes"]["items"][2]["metadata"].as_object_mut().unwrap().remove("name");
    assert_error(
        &c.post(&format!("{base}/filter"), &bytes(&bad)).unwrap(),
        400,
        "missing_field",
        Some("Nodes.items[2].metadata.name"),
    );
    let neither = json!({"Pod": other, "Nodes": null, "NodeNames": null});
    assert_error(&c.post(&format!("{base}/filter"), &bytes(&neither)).unwrap(), 400, "missing_field", Some("Nodes"));
    assert_error(&c.post(&format!("{base}/filter"), b"[]").unwrap(), 400, "malformed_request", None);
    assert_error(&c.post(&format!("{base}/preempt"), b"{\"Pod\": ").unwrap(), 400, "malformed_request", None);
    assert_error(
        &c.post(&format!("{base}/preempt"), br#"{"Pod": "x"}"#).unwrap(),
        400,
        "malformed_request",
        Some("Pod"),
    );
    let nameless = json!({"PodName": "", "PodNamespace": "ml", "PodUID": "u", "Node": "gpu-v100-a"});
    assert_error(&c.post(&format!("{base}/bind"), &bytes(&nameless)).unwrap(), 400, "missing_field", Some("PodName"));
    for field in ["PodNamespace", "PodUID"] {
        let mut unnamed = json!({"PodName": "p", "PodNamespace": "ml", "PodUID": "u", "Node": "gpu-v100-a"});
        unnamed[field] = json!("");
        assert_error(&c.post(&format!("{base}/bind"), &bytes(&unnamed)).unwrap(), 400, "missing_field", Some(field));
    }
    let typed = json!({"PodName": 3, "PodNamespace": "ml", "PodUID": "u", "Node": "gpu-v100-a"});
    assert_error(&c.post(&format!("{base}/bind"), &bytes(&typed)).unwrap(), 400, "malformed_request", Some("PodName"));

    // An unknown session is the contract's 404 on every endpoint.
    for verb in ["filter", "prioritize", "preempt"] {
        let reply = c.post(&format!("/v1/sessions/nope/k8s/{verb}"), &bytes(&args(&other))).unwrap();
        assert_error(&reply, 404, "unknown_session", None);
    }
    let reply = c.post("/v1/sessions/nope/k8s/bind", &bytes(&binding(&other, "gpu-v100-a"))).unwrap();
    assert_error(&reply, 404, "unknown_session", None);
    assert_error(&c.get("/v1/sessions/nope/k8s/evictions").unwrap(), 404, "unknown_session", None);
    assert_error(&c.get("/v1/sessions/nope/k8s/bindings").unwrap(), 404, "unknown_session", None);
    assert_error(&c.delete("/v1/sessions/nope/k8s/bindings/ml/x").unwrap(), 404, "unknown_session", None);
}

#[test]
fn k8s_node_names_only_use_labels_seen_before() {
    let f = Fixture::start("k8s-names", &["--no-demo"]);
    let mut c = f.client();
    let id = create(&mut c, two_jobs());
    let base = format!("/v1/sessions/{id}/k8s");
    let placed = servers(&round(&mut c, &id));
    let mine: BTreeSet<String> = placed["resnet50"].iter().map(|s| node_of(s).to_string()).collect();
    let resnet = pod(Some("resnet50"), "resnet50-worker-0", "0f6e2b8c-3a1d-4c7e-9b5f-1d2a4c6e8f00");
    let gpu_nodes = ["gpu-v100-a", "gpu-v100-b", "gpu-k80-a", "gpu-k80-b"];

    // Names of nodes never seen whole: their servers are unknown, and the reason says what to do.
    let blind = ok(&mut c, &format!("{base}/filter"), &names_args(&resnet, &gpu_nodes));
    assert_eq!(blind["NodeNames"], json!([]));
    assert_eq!(blind["Nodes"], Value::Null);
    let reasons = unresolvable(&blind);
    assert_eq!(reasons.len(), 4);
    assert!(reasons.values().all(|r| r.contains("labels are unknown") && r.contains("nodeCacheCapable: false")));

    // Once the scheduler has sent them whole, names are enough.
    ok(&mut c, &format!("{base}/filter"), &args(&resnet));
    let mut asked = gpu_nodes.to_vec();
    asked.push("gpu-v100-z");
    let named = ok(&mut c, &format!("{base}/filter"), &names_args(&resnet, &asked));
    let names: BTreeSet<String> = serde_json::from_value(named["NodeNames"].clone()).unwrap();
    assert_eq!(names, mine);
    assert_eq!(named["Nodes"], Value::Null);
    let reasons = unresolvable(&named);
    assert!(reasons["gpu-v100-z"].contains("labels are unknown"), "{reasons:?}");
    assert_eq!(reasons.len(), asked.len() - mine.len());
    let ranked = scores(&ok(&mut c, &format!("{base}/prioritize"), &names_args(&resnet, &asked)));
    assert_eq!(ranked.len(), asked.len());
    for (node, score) in ranked {
        assert_eq!(score, if mine.contains(&node) { 10 } else { 0 }, "{node}");
    }
}

#[test]
fn a_session_refuses_a_job_larger_than_every_type_it_runs_on() {
    let f = Fixture::start("k8s-too-big", &["--no-demo"]);
    let mut c = f.client();
    // Such a job would wait for good (the extender says so of one stored before this refusal:
    // `k8s::mapping::waiting`).
    let big =
        json!({"id": "big", "scale_factor": 16, "throughput": {"v100": 40.0, "k80": 4.0}, "steps_remaining": 1e6});
    let cluster: Value = serde_json::from_str(CLUSTER).unwrap();
    let body = json!({"policy": "max_min_fairness", "cluster": {"worker_types": cluster}, "jobs": [big.clone()]});
    let refused = assert_error(
        &c.post("/v1/sessions", &bytes(&body)).unwrap(),
        400,
        "invalid_scale_factor",
        Some("jobs[0].scale_factor"),
    );
    let want = "job \"big\": it needs 16 GPUs at once, and the most of one worker type it runs on is 8";
    assert!(refused["error"]["message"].as_str().unwrap().starts_with(want), "{refused}");
    let id = create(&mut c, two_jobs());
    let jobs = format!("/v1/sessions/{id}/jobs");
    assert_error(&c.post(&jobs, &bytes(&big)).unwrap(), 400, "invalid_scale_factor", Some("scale_factor"));
    // Within one type's count: taken.
    let fits = json!({"id": "fits", "scale_factor": 8, "throughput": {"v100": 10.0}, "steps_remaining": 1e6});
    assert_eq!(c.post(&jobs, &bytes(&fits)).unwrap().status, 201);
    round(&mut c, &id);
}

#[test]
fn k8s_a_pod_annotated_with_throughputs_adds_its_job() {
    let f = Fixture::start("k8s-annotations", &["--no-demo"]);
    let mut c = f.client();
    let id = create(&mut c, json!([]));
    let base = format!("/v1/sessions/{id}/k8s");
    let mut bert = pod(Some("bert"), "bert-worker-0", "4b6d8f0a-2c4e-4a6c-8e0a-2c4e6a8c0e2a");
    let annotations = bert["metadata"]["annotations"].as_object_mut().unwrap();
    annotations.insert("arbiter.dev/throughputs".into(), json!(r#"{"v100": 6.0, "k80": 1.5}"#));
    annotations.insert("arbiter.dev/pods".into(), json!("2"));

    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&bert));
    assert_eq!(filtered["Error"], "", "{filtered}");
    assert!(unresolvable(&filtered).values().all(|r| r.contains("job bert waits")), "{filtered}");
    let session = get(&mut c, &format!("/v1/sessions/{id}"));
    assert_eq!(session["jobs"][0]["id"], "bert");
    assert_eq!(session["jobs"][0]["scale_factor"], 8, "4 GPUs a pod × 2 pods");
    assert_eq!(session["jobs"][0]["throughput"]["v100"], 6.0);

    // Its round puts it on both servers of one type: both nodes pass, both score 10.
    let placed = servers(&round(&mut c, &id));
    let nodes_of_bert: BTreeSet<String> = placed["bert"].iter().map(|s| node_of(s).to_string()).collect();
    assert_eq!(nodes_of_bert.len(), 2);
    assert_eq!(passing(&ok(&mut c, &format!("{base}/filter"), &args(&bert))), nodes_of_bert);
    let ranked = scores(&ok(&mut c, &format!("{base}/prioritize"), &args(&bert)));
    assert!(nodes_of_bert.iter().all(|n| ranked[n] == 10), "{ranked:?}");

    // Annotations that do not describe a job are the pod's error; nothing is added.
    let mut broken = pod(Some("gpt"), "gpt-0", "6d8f0a2c-4e6a-4c8e-8a2c-4e6a8c0e2a4c");
    broken["metadata"]["annotations"]["arbiter.dev/throughputs"] = json!("fast");
    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&broken));
    assert!(filtered["Error"].as_str().unwrap().contains("arbiter.dev/throughputs is not a JSON object"), "{filtered}");
    broken["metadata"]["annotations"]["arbiter.dev/throughputs"] = json!(r#"{"h100": 9.0}"#);
    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&broken));
    let error = filtered["Error"].as_str().unwrap();
    assert!(error.contains("\"h100\" is not in the session's cluster"), "{filtered}");
    broken["metadata"]["annotations"]["arbiter.dev/throughputs"] = json!(r#"{"v100": 9.0}"#);
    broken["metadata"]["annotations"]["arbiter.dev/pods"] = json!("0");
    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&broken));
    assert!(filtered["Error"].as_str().unwrap().contains("arbiter.dev/pods must be a whole number"), "{filtered}");
    // More GPUs at once than any type has (8 each): no round could place it.
    broken["metadata"]["annotations"]["arbiter.dev/pods"] = json!("3");
    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&broken));
    let error = filtered["Error"].as_str().unwrap();
    assert!(error.contains("needs 12 GPUs at once, and the worker types it may run on have at most 8"), "{filtered}");
    broken["metadata"]["annotations"]["arbiter.dev/pods"] = json!("1073741824");
    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&broken));
    assert!(filtered["Error"].as_str().unwrap().contains("are 4294967296 GPUs at once"), "{filtered}");
    assert_eq!(get(&mut c, &format!("/v1/sessions/{id}"))["jobs"].as_array().unwrap().len(), 1);
}

/// `arbiter.dev/model` names a job type of the server's `--reference-throughputs`: its rows at
/// the pod's scale factor are the job's throughputs (as the Kueue controller reads them).
#[test]
fn k8s_a_pod_annotated_with_a_model_adds_its_job_from_the_reference_throughputs() {
    let dir = TempDir::new("k8s-model");
    let reference = dir.path("reference.json");
    let table = json!({
        "v100": {"('ResNet-50 (batch size 64)', 4)": {"null": 38.0}, "('A3C', 1)": {"null": 9.0}},
        "k80": {"('ResNet-50 (batch size 64)', 4)": {"null": 4.0}, "('A3C', 1)": {"null": 4.5}},
    });
    std::fs::write(&reference, table.to_string()).unwrap();
    let f = Fixture::start("k8s-model", &["--no-demo", "--reference-throughputs", reference.to_str().unwrap()]);
    let mut c = f.client();
    let id = create(&mut c, json!([]));
    let base = format!("/v1/sessions/{id}/k8s");
    let mut resnet = pod(Some("resnet"), "resnet-0", "8f0a2c4e-6a8c-4e0a-8c4e-6a8c0e2a4c6e");
    resnet["metadata"]["annotations"]["arbiter.dev/model"] = json!("ResNet-50 (batch size 64)");
    resnet["metadata"]["annotations"]["arbiter.dev/weight"] = json!("2");

    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&resnet));
    assert_eq!(filtered["Error"], "", "{filtered}");
    let job = &get(&mut c, &format!("/v1/sessions/{id}"))["jobs"][0];
    assert_eq!((job["id"].as_str(), job["scale_factor"].as_u64()), (Some("resnet"), Some(4)), "{job}");
    assert_eq!((job["throughput"]["v100"].as_f64(), job["throughput"]["k80"].as_f64()), (Some(38.0), Some(4.0)));
    assert_eq!(job["weight"], 2.0);

    // A model the file lacks at that scale factor is the pod's error, naming what the file has.
    let mut gpt = pod(Some("gpt"), "gpt-0", "0a2c4e6a-8c0e-4a2c-8e6a-8c0e2a4c6e8a");
    gpt["metadata"]["annotations"]["arbiter.dev/model"] = json!("GPT-9");
    let filtered = ok(&mut c, &format!("{base}/filter"), &args(&gpt));
    let error = filtered["Error"].as_str().unwrap();
    assert!(error.contains("\"GPT-9\" on 4 GPU(s) is not in the reference throughput file"), "{filtered}");
    assert!(error.contains("ResNet-50 (batch size 64)"), "{filtered}");
    assert_eq!(get(&mut c, &format!("/v1/sessions/{id}"))["jobs"].as_array().unwrap().len(), 1);
}

#[test]
fn k8s_preempt_keeps_nodes_and_victims_the_round_agrees_with() {
    let f = Fixture::start("k8s-preempt", &["--no-demo"]);
    let mut c = f.client();
    let id = create(&mut c, two_jobs());
    let base = format!("/v1/sessions/{id}/k8s");
    let placed = servers(&round(&mut c, &id));
    let resnet_node = node_of(placed["resnet50"].iter().next().unwrap());
    let a3c_node = node_of(placed["a3c"].iter().next().unwrap());
    assert_ne!(resnet_node, a3c_node);
    let resnet0 = pod(Some("resnet50"), "resnet50-worker-0", "0f6e2b8c-3a1d-4c7e-9b5f-1d2a4c6e8f00");
    let a3c0 = pod(Some("a3c"), "a3c-worker-0", "7c9e1a3b-5d7f-4b9d-8f1b-3d5f7b9d1f3b");
    for (p, node) in [(&resnet0, resnet_node), (&a3c0, a3c_node)] {
        ok(&mut c, &format!("{base}/filter"), &args(p));
        assert_eq!(ok(&mut c, &format!("{base}/bind"), &binding(p, node)), json!({"Error": ""}));
    }
    let other = pod(None, "etl-7f9c", "5c3e1a9b-2d4f-4e6a-8b0c-7d9e1f3a5b71");
    let uid = |p: &Value| p["metadata"]["uid"].clone();

    // A second resnet50 pod: only its own server's node stays, with its victims.
    let resnet1 = pod(Some("resnet50"), "resnet50-worker-1", "3e5a7c9e-1b3d-4f5a-9c1e-5a7c9e1b3d5f");
    let full = json!({"Pod": resnet1, "NodeNameToMetaVictims": null, "NodeNameToVictims": {
        resnet_node: {"Pods": [other], "NumPDBViolations": 1},
        a3c_node: {"Pods": [a3c0], "NumPDBViolations": 0},
        "cpu-general-a": {"Pods": [], "NumPDBViolations": 0},
    }});
    let kept = ok(&mut c, &format!("{base}/preempt"), &full);
    assert_eq!(
        kept,
        json!({"NodeNameToMetaVictims": {resnet_node: {"Pods": [{"UID": uid(&other)}], "NumPDBViolations": 1}}})
    );

    // A second a3c pod may not evict the first: the round runs a3c there.
    let a3c1 = pod(Some("a3c"), "a3c-worker-1", "9e1b3d5f-7a9c-4e1b-8d5f-7a9c1e3b5d7f");
    let meta = json!({"Pod": a3c1, "NodeNameToVictims": null, "NodeNameToMetaVictims": {
        a3c_node: {"Pods": [{"UID": uid(&a3c0)}], "NumPDBViolations": 0},
    }});
    assert_eq!(ok(&mut c, &format!("{base}/preempt"), &meta), json!({"NodeNameToMetaVictims": {}}));
    // Without its own pod among the victims, the node is acceptable.
    let meta = json!({"Pod": a3c1, "NodeNameToMetaVictims": {a3c_node: {"Pods": [{"UID": uid(&other)}], "NumPDBViolations": 0}}});
    let kept = ok(&mut c, &format!("{base}/preempt"), &meta);
    assert_eq!(kept["NodeNameToMetaVictims"][a3c_node]["Pods"], json!([{"UID": uid(&other)}]));

    // A pod that is not Arbiter's: Kubernetes' choice stands, victims as UIDs.
    let foreign = json!({"Pod": other, "NodeNameToMetaVictims": null, "NodeNameToVictims": {
        a3c_node: {"Pods": [a3c0], "NumPDBViolations": 2},
    }});
    let passed = ok(&mut c, &format!("{base}/preempt"), &foreign);
    assert_eq!(
        passed,
        json!({"NodeNameToMetaVictims": {a3c_node: {"Pods": [{"UID": uid(&a3c0)}], "NumPDBViolations": 2}}})
    );

    // A job the session lacks, or one that waits: nowhere.
    let ghost = pod(Some("ghost"), "ghost-0", "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b");
    let none = json!({"Pod": ghost, "NodeNameToMetaVictims": {resnet_node: {"Pods": [], "NumPDBViolations": 0}}});
    assert_eq!(ok(&mut c, &format!("{base}/preempt"), &none), json!({"NodeNameToMetaVictims": {}}));
}

/// Bindings as the endpoint lists them: (namespace, name) → (job, server, node).
fn listed(c: &mut Client, base: &str) -> BTreeMap<(String, String), (String, String, String)> {
    let s = |v: &Value| v.as_str().unwrap().to_string();
    get(c, &format!("{base}/bindings"))["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| ((s(&b["namespace"]), s(&b["name"])), (s(&b["job"]), s(&b["server"]), s(&b["node"]))))
        .collect()
}

fn evictions(c: &mut Client, base: &str) -> BTreeSet<(String, String)> {
    let s = |v: &Value| v.as_str().unwrap().to_string();
    get(c, &format!("{base}/evictions"))["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert!(e["reason"].as_str().unwrap().starts_with("arbiter: job "), "{e}");
            (s(&e["namespace"]), s(&e["name"]))
        })
        .collect()
}

#[test]
fn k8s_rounds_evict_moved_pods_bind_new_ones_and_survive_a_restart() {
    let dir = TempDir::new("k8s-rounds");
    let db = dir.path("arbiter.db");
    let mut server = Server::start(&db, &dir.path("first.log"), &["--no-demo"]);
    let mut c = server.client();
    let id = create(&mut c, two_jobs());
    let base = format!("/v1/sessions/{id}/k8s");
    // The model: every pod bound, (namespace, name) → (job, server, node).
    let mut model: BTreeMap<(String, String), (String, String, String)> = BTreeMap::new();
    let mut pods = 0;
    let (mut evicted, mut rebound) = (0, 0);

    for r in 0..10 {
        if r == 1 {
            // Heavier jobs arrive: four 4-GPU jobs and more on four 4-GPU servers.
            for job in ["bert", "gpt2", "vit"] {
                let body = json!({"id": job, "scale_factor": 4, "weight": 4.0, "steps_remaining": 1e6,
                                  "throughput": {"v100": 20.0, "k80": 5.0}});
                assert_eq!(c.post(&format!("/v1/sessions/{id}/jobs"), &bytes(&body)).unwrap().status, 201);
            }
        }
        if r == 6 {
            // A job finishes: its bindings are forgotten with it.
            assert_eq!(c.delete(&format!("/v1/sessions/{id}/jobs/a3c")).unwrap().status, 204);
            model.retain(|_, (job, _, _)| job != "a3c");
            assert_eq!(listed(&mut c, &base), model);
        }
        let placed = servers(&round(&mut c, &id));

        // Exactly the bound pods whose job this round does not run on their server.
        let expected: BTreeSet<(String, String)> = model
            .iter()
            .filter(|(_, (job, server, _))| !placed.get(job).is_some_and(|s| s.contains(server)))
            .map(|(k, _)| k.clone())
            .collect();
        assert_eq!(evictions(&mut c, &base), expected, "round {r}: {placed:?}");
        for key in &expected {
            // The operator evicts the pod, then tells Arbiter it is gone.
            let reply = c.delete(&format!("{base}/bindings/{}/{}", key.0, key.1)).unwrap();
            assert_eq!(reply.status, 204);
            model.remove(key);
            evicted += 1;
        }
        assert_eq!(evictions(&mut c, &base), BTreeSet::new());

        // Every job placed on a server without a pod of it gets a new pod there.
        for (job, servers) in &placed {
            for server in servers {
                if model.values().any(|(j, s, _)| j == job && s == server) {
                    continue;
                }
                pods += 1;
                let name = format!("{job}-{pods}");
                let p = pod(Some(job), &name, &format!("00000000-0000-4000-8000-{pods:012}"));
                let filtered = ok(&mut c, &format!("{base}/filter"), &args(&p));
                let target = node_of(server);
                assert!(passing(&filtered).contains(target), "round {r}: {job} on {server}: {filtered}");
                assert_eq!(ok(&mut c, &format!("{base}/bind"), &binding(&p, target)), json!({"Error": ""}));
                model.insert(("ml-research".into(), name), (job.clone(), server.clone(), target.into()));
                if r > 0 {
                    rebound += 1;
                }
            }
        }
        assert_eq!(listed(&mut c, &base), model, "round {r}");
    }
    assert!(evicted > 0 && rebound > 0, "the rounds moved jobs: {evicted} evicted, {rebound} bound later");

    // One more round leaves pods to evict; a restart keeps the bindings and so the evictions.
    let placed = servers(&round(&mut c, &id));
    let before = evictions(&mut c, &base);
    server.terminate(Duration::from_secs(10));
    let server = Server::start(&db, &dir.path("second.log"), &["--no-demo"]);
    let mut c = server.client();
    assert_eq!(listed(&mut c, &base), model, "bindings replayed");
    assert_eq!(evictions(&mut c, &base), before);

    // What filter saw is not durable: bind asks for filter first, then binds.
    let (job, servers) = placed.iter().next().expect("the round runs some job");
    let target = node_of(servers.iter().next().unwrap());
    let p = pod(Some(job), "after-restart", "00000000-0000-4000-8000-999999999999");
    let refused = ok(&mut c, &format!("{base}/bind"), &binding(&p, target));
    assert!(refused["Error"].as_str().unwrap().contains("has not been through filter"), "{refused}");
    ok(&mut c, &format!("{base}/filter"), &args(&p));
    assert_eq!(ok(&mut c, &format!("{base}/bind"), &binding(&p, target)), json!({"Error": ""}));
    assert!(listed(&mut c, &base).contains_key(&("ml-research".to_string(), "after-restart".to_string())));
}
