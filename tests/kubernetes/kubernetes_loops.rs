//! Both loops against the fake API server and a real `arbiter serve`: the Kueue controller over
//! several steps and rounds (patches applied, no churn between rounds, finished workloads leave,
//! refused jobs rejected, API errors survived), `k8s-sync` (node NotReady → its GPUs failed,
//! pods → job added), and the `arbiter kueue` / `arbiter k8s-sync` commands with `--once`.

use crate::fake_api::{FakeApi, Recorded, KUEUE};
use crate::fixtures::*;
use crate::kubernetes_sync::{node, pod};
use crate::service_support::Fixture;
use arbiter::kubernetes::api::Client;
use arbiter::kubernetes::arbiter::ArbiterClient;
use arbiter::kubernetes::kueue::controller::{Controller, Settings};
use arbiter::kubernetes::sync::controller::Sync;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

fn kueue_objects(fake: &FakeApi, workloads: Vec<Value>) {
    fake.set(&format!("{KUEUE}/workloads"), workloads);
    fake.set(&format!("{KUEUE}/admissionchecks"), vec![load("admissioncheck.json")]);
    fake.set(&format!("{KUEUE}/resourceflavors"), load("resourceflavors.json")["items"].as_array().unwrap().clone());
    fake.set(&format!("{KUEUE}/clusterqueues"), vec![load("clusterqueue.json")]);
}

fn create_session(server: &Fixture) -> String {
    let body = json!({"policy": "max_min_fairness", "round_seconds": 360,
        "cluster": {"worker_types": {"v100": {"count": 4, "gpus_per_server": 4}, "k80": {"count": 4, "gpus_per_server": 2}}}});
    let reply = server.client().post("/v1/sessions", &serde_json::to_vec(&body).unwrap()).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    reply.json()["id"].as_str().unwrap().to_string()
}

fn session_view(server: &Fixture, id: &str) -> Value {
    let reply = server.client().get(&format!("/v1/sessions/{id}")).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()
}

fn controller(fake: &FakeApi, server: &Fixture, session: &str) -> Controller {
    let kube = Client::new(&fake.url(), None, None).unwrap();
    let arbiter = ArbiterClient::new(&format!("http://{}", server.server.addr), None).unwrap();
    let settings = Settings {
        version: "v1beta2".into(),
        controller_name: "arbiter.dev/admission".into(),
        session: session.to_string(),
        reference: None,
    };
    Controller::new(kube, arbiter, settings)
}

fn workload_patches(requests: &[Recorded]) -> Vec<&Recorded> {
    requests.iter().filter(|r| r.method == "PATCH" && r.uri.contains("/workloads/")).collect()
}

/// A copy of the transformer's workload under another name.
fn transformer_named(name: &str) -> Value {
    let mut w = transformer();
    w["metadata"]["name"] = json!(name);
    w
}

#[test]
fn the_kueue_controller_admits_by_rounds_without_churn() {
    let server = Fixture::start("kueue-loop", &["--no-demo"]);
    let fake = FakeApi::start();
    // 2 + 2 + 4 + 4 GPUs asked of 8: someone waits every round.
    kueue_objects(&fake, vec![resnet(), a3c(), transformer(), transformer_named("job-bert-11aa2")]);
    let id = create_session(&server);
    let mut controller = controller(&fake, &server, &id);
    let t0 = Instant::now();

    let report = controller.step_at(t0).unwrap();
    assert_eq!(report.added.len(), 4, "{report:?}");
    assert_eq!(report.round, Some(0));
    assert_eq!(report.activated, ["arbiter"]);
    let requests = fake.take();
    let patches = workload_patches(&requests);
    assert_eq!(patches.len(), 4, "every reserved workload decided: {report:?}");
    let view = session_view(&server, &id);
    let leases: BTreeMap<String, Option<String>> = view["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["id"].as_str().unwrap().to_string(), j["lease"]["worker_type"].as_str().map(str::to_string)))
        .collect();
    assert!(leases.values().any(Option::is_none), "8 GPUs for 12 asked: someone waits: {leases:?}");
    for p in &patches {
        assert!(p.uri.ends_with("/status?fieldManager=arbiter&force=true"), "{}", p.uri);
        assert_eq!(p.content_type.as_deref(), Some("application/apply-patch+yaml"));
        let job = format!(
            "{}/{}",
            p.body["metadata"]["namespace"].as_str().unwrap(),
            p.body["metadata"]["name"].as_str().unwrap()
        );
        let check = &p.body["status"]["admissionChecks"][0];
        match &leases[&job] {
            Some(worker_type) => {
                assert_eq!(check["state"], "Ready", "{job}: {check}");
                let selector = &check["podSetUpdates"][0]["nodeSelector"];
                let expected = if worker_type == "v100" {
                    json!({"arbiter.dev/worker-type": "v100"})
                } else {
                    json!({"cloud.google.com/gke-accelerator": "nvidia-tesla-k80"})
                };
                assert_eq!(selector, &expected, "{job} runs on {worker_type}");
            }
            None => {
                assert_eq!(check["state"], "Retry", "{job}: {check}");
                let requeue = check["requeueAfterSeconds"].as_u64().unwrap();
                assert!((355..=360).contains(&requeue), "until the next round: {requeue}");
                assert!(check["message"].as_str().unwrap().starts_with("arbiter: waits this round (round 0)"));
            }
        }
    }
    let check = fake.object(&format!("{KUEUE}/admissionchecks"), None, "arbiter").unwrap();
    assert_eq!(check["status"]["conditions"][0]["type"], "Active");

    // A second step within the round: the states applied stand, nothing is patched again.
    let report = controller.step_at(t0 + Duration::from_secs(5)).unwrap();
    assert_eq!(report.round, None);
    assert!(workload_patches(&fake.take()).is_empty(), "no churn within a round: {report:?}");

    // The resnet workload finishes: its job leaves the session.
    fake.edit(&format!("{KUEUE}/workloads"), Some("team-a"), "job-resnet50-7d9c2", |w| {
        set_condition(w, "Finished", "True", "Succeeded")
    });
    let report = controller.step_at(t0 + Duration::from_secs(10)).unwrap();
    assert_eq!(report.removed, ["team-a/job-resnet50-7d9c2"]);
    let view = session_view(&server, &id);
    assert!(view["jobs"].as_array().unwrap().iter().all(|j| j["id"] != "team-a/job-resnet50-7d9c2"));

    // Past the round's end the next round runs.
    let report = controller.step_at(t0 + Duration::from_secs(361)).unwrap();
    assert_eq!(report.round, Some(1), "{report:?}");
    assert_eq!(session_view(&server, &id)["rounds"], 2);
}

#[test]
fn a_malformed_workload_is_skipped_and_reported_and_the_others_are_served() {
    let server = Fixture::start("kueue-malformed", &["--no-demo"]);
    let fake = FakeApi::start();
    let mut bad = transformer_named("job-bad-1a2b3");
    bad["spec"]["podSets"][0]["count"] = json!(-1);
    kueue_objects(&fake, vec![bad, resnet()]);
    let id = create_session(&server);
    let report = controller(&fake, &server, &id).step_at(Instant::now()).unwrap();
    assert_eq!(report.added, ["team-a/job-resnet50-7d9c2"], "{report:?}");
    let skipped = report.errors.iter().find(|e| e.contains("job-bad-1a2b3 skipped")).expect("reported");
    assert!(skipped.contains("spec.podSets[0].count"), "{skipped}");
}

#[test]
fn the_kueue_controller_survives_api_errors_and_rejects_what_the_session_refuses() {
    let server = Fixture::start("kueue-errors", &["--no-demo"]);
    let fake = FakeApi::start();
    // Steps/s of 0 everywhere: the session refuses a job that can run nowhere.
    let mut huge = transformer_named("job-idle-9f9f9");
    huge["spec"]["podSets"][0]["template"]["metadata"]["annotations"]["arbiter.dev/throughputs"] =
        json!(r#"{"v100": 0, "k80": 0}"#);
    kueue_objects(&fake, vec![resnet(), huge]);
    let id = create_session(&server);
    let mut controller = controller(&fake, &server, &id);
    let t0 = Instant::now();

    // A failed list: the step fails, nothing is sent to the session.
    fake.fail_next("GET", 500);
    let e = controller.step_at(t0).unwrap_err();
    assert!(e.contains("500") && e.contains("injected 500"), "{e}");
    assert_eq!(session_view(&server, &id)["jobs"].as_array().unwrap().len(), 0);

    // A conflict on the first status patch: reported, the rest applied.
    fake.fail_next("PATCH", 409);
    let report = controller.step_at(t0).unwrap();
    assert_eq!(report.added, ["team-a/job-resnet50-7d9c2"]);
    assert!(report.errors.iter().any(|e| e.contains("409")), "{:?}", report.errors);
    assert!(report.errors.iter().any(|e| e.contains("team-a/job-idle-9f9f9")), "{:?}", report.errors);

    // The next step retries: the refused job's workload is rejected with the session's reason,
    // and the patch that conflicted is applied.
    let report = controller.step_at(t0 + Duration::from_secs(1)).unwrap();
    let huge = fake.object(&format!("{KUEUE}/workloads"), Some("team-a"), "job-idle-9f9f9").unwrap();
    let check = &huge["status"]["admissionChecks"][0];
    assert_eq!(check["state"], "Rejected", "{report:?}");
    assert!(check["message"].as_str().unwrap().contains("the session refused the job"), "{check}");
    let resnet = fake.object(&format!("{KUEUE}/workloads"), Some("team-a"), "job-resnet50-7d9c2").unwrap();
    assert_eq!(resnet["status"]["admissionChecks"][0]["state"], "Ready", "{report:?}");

    // The Arbiter server gone: the step fails, the controller lives on.
    let mut server = server;
    server.server.kill();
    let e = controller.step_at(t0 + Duration::from_secs(2)).unwrap_err();
    assert!(e.contains("/v1/sessions/"), "{e}");
}

#[test]
fn k8s_sync_fails_a_not_ready_nodes_gpus_and_adds_a_pods_job() {
    let server = Fixture::start("k8s-sync", &["--no-demo"]);
    let fake = FakeApi::start();
    let id = create_session(&server);
    fake.set(
        "/api/v1/nodes",
        vec![node("gpu-v100-0", "v100", "0", false, false), node("gpu-k80-0", "k80", "0", true, false)],
    );
    fake.set("/api/v1/pods", vec![pod("bert-0", "bert", 2, "Running", r#"{"v100": 4.0, "k80": 1.5}"#)]);
    let kube = Client::new(&fake.url(), None, None).unwrap();
    let arbiter = ArbiterClient::new(&format!("http://{}", server.server.addr), None).unwrap();
    let mut sync = Sync::new(kube, arbiter, id.clone(), None);

    let report = sync.step().unwrap();
    assert_eq!(report.failed, ["v100/0"]);
    assert_eq!(report.added, ["bert"]);
    let view = session_view(&server, &id);
    assert_eq!(view["cluster"]["failed_gpus"], json!(["v100/0/0", "v100/0/1", "v100/0/2", "v100/0/3"]));
    assert_eq!(view["cluster"]["worker_types"]["v100"]["healthy"], 0);
    assert_eq!(view["jobs"][0]["id"], "bert");
    assert_eq!(view["jobs"][0]["scale_factor"], 2);
    let lists: Vec<String> = fake.take().into_iter().map(|r| r.uri).collect();
    assert!(lists.contains(&"/api/v1/pods?labelSelector=arbiter.dev%2Fjob".to_string()), "{lists:?}");

    // Nothing new: nothing sent. Then the node is Ready again and the pod has succeeded.
    assert_eq!(sync.step().unwrap(), Default::default());
    fake.set("/api/v1/nodes", vec![node("gpu-v100-0", "v100", "0", true, false)]);
    fake.set("/api/v1/pods", vec![pod("bert-0", "bert", 2, "Succeeded", r#"{"v100": 4.0}"#)]);
    let report = sync.step().unwrap();
    assert_eq!(report.returned, ["v100/0"]);
    assert_eq!(report.removed, ["bert"]);
    let view = session_view(&server, &id);
    assert_eq!(view["cluster"]["failed_gpus"], json!([]));
    assert_eq!(view["jobs"], json!([]));

    fake.fail_next("GET", 500);
    assert!(sync.step().unwrap_err().contains("500"));
}

#[test]
fn the_commands_run_one_step_with_once_and_refuse_bad_flags() {
    let server = Fixture::start("kueue-cli", &["--no-demo"]);
    let fake = FakeApi::start();
    kueue_objects(&fake, vec![resnet(), a3c()]);
    let arbiter_url = format!("http://{}", server.server.addr);
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_arbiter")).args(args).env("ARBITER_LOG", "warn").output().expect("run arbiter")
    };

    // No --session: one is created from the flavors' annotations.
    let out = run(&["kueue", "--once", "--api-server", &fake.url(), "--arbiter", &arbiter_url]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["added"].as_array().unwrap().len(), 2, "{report}");
    assert_eq!(report["round"], 0);
    let sessions = server.client().get("/v1/sessions").unwrap().json();
    let id = sessions["sessions"][0]["id"].as_str().unwrap().to_string();
    let view = session_view(&server, &id);
    assert_eq!(view["cluster"]["worker_types"]["k80"]["gpus_per_server"], 2);
    assert_eq!(view["round_seconds"], 360.0);

    // Reusing it: a round is due at a new process's first step. The API server named as
    // `arbiter serve` names it, by flag or variable, or by the earlier variable.
    let out = run(&["kueue", "--once", "--kube-api-server", &fake.url(), "--arbiter", &arbiter_url, "--session", &id]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["added"], json!([]));
    assert_eq!(report["round"], 1);
    for (variable, round) in [("ARBITER_KUBE_API_SERVER", 2), ("ARBITER_K8S_API_SERVER", 3)] {
        let out = Command::new(env!("CARGO_BIN_EXE_arbiter"))
            .args(["kueue", "--once", "--arbiter", &arbiter_url, "--session", &id])
            .env("ARBITER_LOG", "warn")
            .env(variable, fake.url())
            .output()
            .expect("run arbiter");
        assert!(out.status.success(), "{variable}: {}", String::from_utf8_lossy(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["round"], round, "{variable}: {report}");
        let warned = String::from_utf8_lossy(&out.stderr).contains("name it ARBITER_KUBE_API_SERVER");
        assert_eq!(warned, variable == "ARBITER_K8S_API_SERVER", "{variable}");
    }

    // A cluster file is read as the contract's objects are: no array for an object, no key twice.
    let dir = std::env::temp_dir().join(format!("arbiter-kueue-cluster-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (as_array, twice) = (dir.join("array.json"), dir.join("twice.json"));
    std::fs::write(&as_array, r#"{"worker_types": {"v100": [4, 4]}}"#).unwrap();
    std::fs::write(&twice, r#"{"worker_types": {"v100": {"count": 4, "count": 8}}}"#).unwrap();
    let (as_array, twice) = (as_array.to_str().unwrap().to_string(), twice.to_str().unwrap().to_string());
    let api = fake.url();
    let fails = [
        (
            vec!["kueue", "--once", "--api-server", &api, "--arbiter", &arbiter_url, "--cluster", &as_array],
            "(at worker_types.v100)",
        ),
        (
            vec!["kueue", "--once", "--api-server", &api, "--arbiter", &arbiter_url, "--cluster", &twice],
            "(at worker_types.v100.count)",
        ),
        (vec!["kueue", "--once", "--api-server", "k8s:6443"], "not an http:// or https:// URL"),
        (vec!["kueue", "--once", "--kueue-version", "v2"], "expected v1beta2 or v1beta1"),
        (vec!["kueue", "--once", "--tick-seconds", "0"], "--tick-seconds 0 is not a positive number"),
        (vec!["kueue", "--once", "--tick-seconds", "-1"], "--tick-seconds -1 is not a positive number"),
        (vec!["kueue", "--once", "--round-seconds", "NaN"], "--round-seconds NaN is not a number of seconds"),
        (vec!["kueue", "--once", "--controller-name", " "], "--controller-name is empty"),
        (
            vec![
                "k8s-sync",
                "--once",
                "--api-server",
                "http://127.0.0.1:1",
                "--arbiter",
                &arbiter_url,
                "--session",
                "nope",
            ],
            "session nope:",
        ),
    ];
    for (args, message) in fails {
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let out = run(&["kueue", "--once", "--arbiter", &arbiter_url]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not in a cluster (no KUBERNETES_SERVICE_HOST): give --kube-api-server URL"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
