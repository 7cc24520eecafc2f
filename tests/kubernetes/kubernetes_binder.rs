//! `arbiter serve --kube-api-server`: the scheduler extender's `bind` creates the Binding at the
//! (fake) API server with the configured token before recording it; an API-server error is the
//! bind's `Error` and nothing is recorded; bad binder flags stop the server at start.

use crate::fake_api::FakeApi;
use crate::service_support::k8s::{fixture, node_of, pod};
use crate::service_support::{bytes, Fixture, TempDir};
use serde_json::{json, Value};
use std::process::Command;

fn post(f: &Fixture, path: &str, body: &Value) -> Value {
    let reply = f.client().post(path, &bytes(body)).unwrap();
    assert_eq!(reply.status, 200, "POST {path}: {}", reply.text());
    reply.json()
}

fn bind_args(pod: &Value, node: &str) -> Value {
    let m = &pod["metadata"];
    json!({"PodName": m["name"], "PodNamespace": m["namespace"], "PodUID": m["uid"], "Node": node})
}

#[test]
fn bind_creates_the_binding_at_the_api_server_and_records_only_what_it_created() {
    let fake = FakeApi::start();
    let dir = TempDir::new("binder-token");
    std::fs::write(dir.path("token"), "binder-token\n").unwrap();
    let token = dir.path("token").display().to_string();
    let url = fake.url();
    let f = Fixture::start("k8s-binder", &["--no-demo", "--kube-api-server", &url, "--kube-token-file", &token]);
    let cluster = json!({"v100": {"count": 8, "gpus_per_server": 4}, "k80": {"count": 8, "gpus_per_server": 4}});
    let jobs = json!([{"id": "resnet50", "scale_factor": 4, "throughput": {"v100": 40.0, "k80": 4.0}}]);
    let created = f
        .client()
        .post(
            "/v1/sessions",
            &bytes(&json!({"policy": "max_min_fairness", "cluster": {"worker_types": cluster}, "jobs": jobs})),
        )
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    let id = created.json()["id"].as_str().unwrap().to_string();
    let base = format!("/v1/sessions/{id}/k8s");
    let round = post(&f, &format!("/v1/sessions/{id}/rounds"), &json!({}));
    let gpu = round["placements"][0]["gpus"][0].as_str().unwrap();
    let node = node_of(gpu.rsplit_once('/').unwrap().0);
    let resnet = pod(Some("resnet50"), "resnet50-worker-0", "0f6e2b8c-3a1d-4c7e-9b5f-1d2a4c6e8f00");
    post(&f, &format!("{base}/filter"), &json!({"Pod": resnet, "Nodes": fixture("nodes.json"), "NodeNames": null}));
    let recorded = || f.client().get(&format!("{base}/bindings")).unwrap().json()["bindings"].clone();

    // The API server refuses: the refusal is the bind's Error, and nothing is recorded.
    fake.fail_next_with("POST", 409, "pod resnet50-worker-0 is already assigned to node \"gpu-k80-b\"");
    let answer = post(&f, &format!("{base}/bind"), &bind_args(&resnet, node));
    let error = answer["Error"].as_str().unwrap();
    assert!(error.contains("the binding of pod ml-research/resnet50-worker-0 failed"), "{error}");
    assert!(error.contains("409") && error.contains("is already assigned to node \"gpu-k80-b\""), "{error}");
    assert_eq!(recorded(), json!([]));
    fake.fail_next("POST", 500);
    let answer = post(&f, &format!("{base}/bind"), &bind_args(&resnet, node));
    assert!(answer["Error"].as_str().unwrap().contains("answered 500: injected 500"), "{answer}");
    assert_eq!(recorded(), json!([]));
    fake.take();

    // Accepted: exactly one Binding, with the pod's UID as a precondition and the token.
    assert_eq!(post(&f, &format!("{base}/bind"), &bind_args(&resnet, node)), json!({"Error": ""}));
    let requests = fake.take();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].uri, "/api/v1/namespaces/ml-research/pods/resnet50-worker-0/binding");
    assert_eq!(requests[0].authorization.as_deref(), Some("Bearer binder-token"));
    assert_eq!(
        requests[0].body,
        json!({"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": "resnet50-worker-0", "namespace": "ml-research",
                            "uid": "0f6e2b8c-3a1d-4c7e-9b5f-1d2a4c6e8f00"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    );
    let bindings = recorded();
    assert_eq!(bindings.as_array().unwrap().len(), 1, "{bindings}");
    assert_eq!(bindings[0]["node"], node);

    // A node the round does not give the job: refused before the API server is called.
    let other = pod(Some("resnet50"), "resnet50-worker-1", "11111111-2222-4333-8444-555555555555");
    post(&f, &format!("{base}/filter"), &json!({"Pod": other, "Nodes": fixture("nodes.json"), "NodeNames": null}));
    let elsewhere = ["gpu-v100-a", "gpu-v100-b", "gpu-k80-a", "gpu-k80-b"].into_iter().find(|n| *n != node).unwrap();
    let answer = post(&f, &format!("{base}/bind"), &bind_args(&other, elsewhere));
    assert!(answer["Error"].as_str().unwrap().contains("runs on"), "{answer}");
    assert!(fake.take().is_empty(), "no Binding for a refused pod");

    // A pod that is not Arbiter's: bound at the API server, not recorded.
    let web = pod(None, "web-0", "66666666-7777-4888-8999-000000000000");
    post(&f, &format!("{base}/filter"), &json!({"Pod": web, "Nodes": fixture("nodes.json"), "NodeNames": null}));
    assert_eq!(post(&f, &format!("{base}/bind"), &bind_args(&web, "cpu-general-a")), json!({"Error": ""}));
    let requests = fake.take();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].uri, "/api/v1/namespaces/ml-research/pods/web-0/binding");
    assert_eq!(recorded().as_array().unwrap().len(), 1);
}

#[test]
fn bad_binder_flags_stop_the_server_naming_the_flag() {
    let dir = TempDir::new("binder-flags");
    let db = dir.path("arbiter.db").display().to_string();
    let missing = dir.path("missing-token").display().to_string();
    let cases: [(&[&str], &str); 4] = [
        (&["--kube-token-file", "/etc/hostname"], "--kube-token-file is only used with --kube-api-server"),
        (&["--kube-api-server", "k8s:6443"], "--kube-api-server k8s:6443: the API server \"k8s:6443\" is not an http"),
        (&["--kube-api-server", "https://k8s:6443", "--kube-token-file", &missing], "cannot read the token file"),
        (&["--kube-api-server", "in-cluster"], "not in a cluster (no KUBERNETES_SERVICE_HOST)"),
    ];
    for (flags, message) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_arbiter"))
            .args(["serve", "--addr", "127.0.0.1:0", "--no-demo", "--db", &db])
            .args(flags)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env("ARBITER_LOG", "warn")
            .output()
            .expect("run arbiter serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?} must not start");
        assert!(stderr.contains(message), "{flags:?}: {stderr}");
    }
}
