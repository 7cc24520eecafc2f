//! The scheduler extender's fixtures (`fixtures/k8s/`) as the tests of both the extender and the
//! binder build bodies from them: the Job's pod, renamed and labelled, and the nodes of servers.

use serde_json::{json, Value};

/// A fixture of `fixtures/k8s/`, parsed.
pub fn fixture(name: &str) -> Value {
    let path = format!("{}/fixtures/k8s/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The fixture's pod, renamed, with `arbiter.dev/job` set to `job` (or removed).
pub fn pod(job: Option<&str>, name: &str, uid: &str) -> Value {
    let mut pod = fixture("pod.json");
    pod["metadata"]["name"] = json!(name);
    pod["metadata"]["uid"] = json!(uid);
    let labels = pod["metadata"]["labels"].as_object_mut().unwrap();
    match job {
        Some(job) => labels.insert("arbiter.dev/job".into(), json!(job)),
        None => labels.remove("arbiter.dev/job"),
    };
    pod
}

/// The node of a session server, as `nodes.json` labels them.
pub fn node_of(server: &str) -> &'static str {
    match server {
        "v100/0" => "gpu-v100-a",
        "v100/1" => "gpu-v100-b",
        "k80/0" => "gpu-k80-a",
        "k80/1" => "gpu-k80-b",
        other => panic!("no node for server {other}"),
    }
}
