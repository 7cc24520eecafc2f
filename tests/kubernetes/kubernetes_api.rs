//! The Kubernetes API client against the fake API server: lists, server-side apply of a status,
//! pod binding and eviction (for the scheduler extender), and its errors.

use crate::fake_api::{FakeApi, KUEUE};
use crate::service_support::TempDir;
use arbiter::kubernetes::api::Client;
use arbiter::kubernetes::objects::Node;
use serde_json::json;

#[test]
fn lists_and_applies_a_status_with_the_apply_content_type_and_field_manager() {
    let fake = FakeApi::start();
    let dir = TempDir::new("k8s-token");
    std::fs::write(dir.path("token"), "s3cret-token\n").unwrap();
    fake.set(
        "/api/v1/nodes",
        vec![json!({"metadata": {"name": "gpu-0", "labels": {"arbiter.dev/worker-type": "v100"}}})],
    );
    fake.set(&format!("{KUEUE}/admissionchecks"), vec![crate::fixtures::load("admissioncheck.json")]);
    let client = Client::new(&fake.url(), Some(&dir.path("token")), None).unwrap();

    let nodes = client.list::<Node>("/api/v1/nodes").unwrap();
    assert_eq!(nodes.items[0].metadata.name, "gpu-0");
    assert!(nodes.malformed.is_empty());
    let body = arbiter::kubernetes::kueue::patch::check_active("v1beta2", "arbiter", "2026-01-05T10:00:00Z", "s1");
    let applied = client.apply_status(&format!("{KUEUE}/admissionchecks/arbiter"), &body).unwrap();
    assert_eq!(applied["status"]["conditions"][0]["type"], "Active");

    let requests = fake.take();
    assert_eq!(requests[0].authorization.as_deref(), Some("Bearer s3cret-token"), "the token, trimmed");
    let patch = &requests[1];
    assert_eq!(patch.method, "PATCH");
    assert_eq!(patch.uri, format!("{KUEUE}/admissionchecks/arbiter/status?fieldManager=arbiter&force=true"));
    assert_eq!(patch.content_type.as_deref(), Some("application/apply-patch+yaml"));
    assert_eq!(patch.body, body);
}

#[test]
fn binds_and_evicts_pods() {
    let fake = FakeApi::start();
    let client = Client::new(&fake.url(), None, None).unwrap();
    client.bind_pod("team-a", "bert-0", None, "gpu-v100-0").unwrap();
    client.evict_pod("team-a", "bert-1").unwrap();
    let requests = fake.take();
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].uri, "/api/v1/namespaces/team-a/pods/bert-0/binding");
    assert_eq!(
        requests[0].body,
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bert-0", "namespace": "team-a"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-v100-0"}})
    );
    assert_eq!(requests[1].uri, "/api/v1/namespaces/team-a/pods/bert-1/eviction");
    assert_eq!(
        requests[1].body,
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "bert-1", "namespace": "team-a"}})
    );
    assert!(requests.iter().all(|r| r.authorization.is_none()));
}

#[test]
fn errors_carry_the_status_and_the_servers_message() {
    let fake = FakeApi::start();
    let client = Client::new(&fake.url(), None, None).unwrap();
    fake.fail_next("GET", 500);
    let e = client.list::<Node>("/api/v1/nodes").unwrap_err();
    assert_eq!(e.status, Some(500));
    assert_eq!(e.message, "injected 500");
    assert!(e.to_string().contains("GET http://"), "{e}");

    let e = client.list::<Node>("/api/v1/nodes").unwrap_err();
    assert_eq!(e.status, Some(404), "no such collection in the fake: {e}");

    // One object of the wrong shape is skipped and said why; the others are read.
    let good = json!({"metadata": {"name": "gpu-1"}});
    fake.set(
        "/api/v1/nodes",
        vec![
            json!({"metadata": {"name": 7}}),
            good.clone(),
            json!({"metadata": {"name": "gpu-2"}, "spec": {"unschedulable": "yes"}}),
        ],
    );
    let nodes = client.list::<Node>("/api/v1/nodes").unwrap();
    assert_eq!(nodes.items.len(), 1);
    assert_eq!(nodes.items[0].metadata.name, "gpu-1");
    assert_eq!(nodes.malformed.len(), 2, "{:?}", nodes.malformed);
    assert!(
        nodes.malformed[0].starts_with("GET /api/v1/nodes: item 0 skipped: metadata.name:"),
        "{:?}",
        nodes.malformed
    );
    assert!(nodes.malformed[1].contains("gpu-2 skipped: spec.unschedulable:"), "{:?}", nodes.malformed);

    fake.fail_next("POST", 409);
    let e = client.evict_pod("team-a", "bert-1").unwrap_err();
    assert_eq!(e.status, Some(409));

    let e = Client::new("http://127.0.0.1:1", None, None).unwrap().list::<Node>("/api/v1/nodes").unwrap_err();
    assert_eq!(e.status, None, "nothing listens there: {e}");
}

#[test]
fn bad_settings_are_refused_naming_what_is_wrong() {
    let dir = TempDir::new("k8s-ca");
    assert!(Client::new("127.0.0.1:8001", None, None).err().unwrap().contains("not an http:// or https:// URL"));
    let e = Client::new("https://k8s:6443", Some(&dir.path("missing-token")), None).err().unwrap();
    assert!(e.contains("cannot read the token file"), "{e}");
    std::fs::write(dir.path("ca.crt"), "not a certificate").unwrap();
    let e = Client::new("https://k8s:6443", None, Some(&dir.path("ca.crt"))).err().unwrap();
    assert!(e.contains("holds no certificate"), "{e}");
    let e = Client::new("https://k8s:6443", None, Some(&dir.path("none.crt"))).err().unwrap();
    assert!(e.contains("cannot read the CA file"), "{e}");
}
