//! From Kubernetes objects to the session's terms: a pod to the job it names and the GPUs it
//! requests, a node to the server its labels name, and a job to the servers the round placed it on.

use super::wire::null_as_default;
use crate::error::{ArbiterError, ErrorCode};
use crate::kubernetes::keys::{GPU_RESOURCE, JOB, SERVER, WORKER_TYPE};
use crate::kubernetes::objects::{pod_gpus, whole_quantity};
use crate::mechanism::{ServerId, Session};
use crate::service::error::{ApiError, ApiResult};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Default, Deserialize)]
struct Meta {
    #[serde(default, deserialize_with = "null_as_default")]
    name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    namespace: String,
    #[serde(default, deserialize_with = "null_as_default")]
    uid: String,
    #[serde(default, deserialize_with = "null_as_default")]
    labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "null_as_default")]
    annotations: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
struct Resources {
    #[serde(default, deserialize_with = "null_as_default")]
    requests: BTreeMap<String, Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    limits: BTreeMap<String, Value>,
}

#[derive(Debug, Default, Deserialize)]
struct Container {
    #[serde(default, deserialize_with = "null_as_default")]
    resources: Resources,
}

#[derive(Debug, Default, Deserialize)]
struct PodSpec {
    #[serde(default, deserialize_with = "null_as_default")]
    containers: Vec<Container>,
    #[serde(rename = "initContainers", default, deserialize_with = "null_as_default")]
    init_containers: Vec<Container>,
}

#[derive(Debug, Default, Deserialize)]
struct PodObject {
    #[serde(default, deserialize_with = "null_as_default")]
    metadata: Meta,
    #[serde(default, deserialize_with = "null_as_default")]
    spec: PodSpec,
}

#[derive(Debug, Default, Deserialize)]
struct NodeObject {
    #[serde(default, deserialize_with = "null_as_default")]
    metadata: Meta,
}

/// Reads `T` from a JSON value of the body at `field`; a wrong type is a 400 naming its path.
fn read<T: DeserializeOwned>(value: &Value, field: &str) -> ApiResult<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." { field.to_string() } else { format!("{field}.{path}") };
        ApiError::Arbiter(ArbiterError::at(
            ErrorCode::MalformedRequest,
            at,
            format!("malformed request: {}", e.inner()),
        ))
    })
}

/// What Arbiter reads of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// GPUs (`nvidia.com/gpu`) the pod requests: its containers' requests (a limit where there is
    /// no request) summed, or its largest init container's if that is more.
    pub gpus: u32,
}

impl Pod {
    /// Reads a core/v1 Pod found at `field` of the body.
    pub fn read(value: &Value, field: &str) -> ApiResult<Pod> {
        if !value.is_object() {
            return Err(ArbiterError::at(ErrorCode::MalformedRequest, field, "expected a core/v1 Pod object").into());
        }
        let pod: PodObject = read(value, field)?;
        // Each container's GPUs, a bad quantity named by its field.
        let gpus_of = |list: &[Container], kind: &str| -> ApiResult<Vec<u32>> {
            let one = |(i, c): (usize, &Container)| {
                let (requests, limits) = (&c.resources.requests, &c.resources.limits);
                let value = (requests.get(GPU_RESOURCE).map(|v| (v, "requests")))
                    .or_else(|| limits.get(GPU_RESOURCE).map(|v| (v, "limits")));
                value.map_or(Ok(0), |(v, map)| gpu_quantity(v, &format!("{field}.spec.{kind}[{i}].resources.{map}")))
            };
            list.iter().enumerate().map(one).collect()
        };
        let containers = gpus_of(&pod.spec.containers, "containers")?;
        let init = gpus_of(&pod.spec.init_containers, "initContainers")?;
        let m = pod.metadata;
        Ok(Pod {
            namespace: m.namespace,
            name: m.name,
            uid: m.uid,
            labels: m.labels,
            annotations: m.annotations,
            gpus: pod_gpus(containers, init),
        })
    }

    /// The job the pod names with `arbiter.dev/job`, a label or else an annotation; none: the
    /// pod is not Arbiter's.
    pub fn job(&self) -> Option<&str> {
        self.labels.get(JOB).or_else(|| self.annotations.get(JOB)).map(String::as_str)
    }

    /// `namespace/name`, as `kubectl` names it.
    pub fn display(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// An extended resource's quantity (`objects::whole_quantity`), its error at `field`.
fn gpu_quantity(value: &Value, field: &str) -> ApiResult<u32> {
    whole_quantity(value).map_err(|_| {
        ArbiterError::at(
            ErrorCode::MalformedRequest,
            format!("{field}.{GPU_RESOURCE}"),
            format!("{GPU_RESOURCE} must be a whole number of GPUs, got {value}"),
        )
        .into()
    })
}

/// A node's Arbiter labels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeLabels {
    pub worker_type: Option<String>,
    pub server: Option<String>,
}

/// A node named in the body, with its labels when it came as a whole object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub labels: NodeLabels,
}

/// Reads the nodes of a core/v1 NodeList found at `field` of the body.
pub fn read_nodes(list: &Value, field: &str) -> ApiResult<Vec<Node>> {
    if !list.is_object() {
        return Err(ArbiterError::at(ErrorCode::MalformedRequest, field, "expected a core/v1 NodeList object").into());
    }
    // Read in place: copying a large cluster's NodeList would cost more than the rest of a call.
    let items = match list.get("items") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(_) => {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                format!("{field}.items"),
                "expected an array of nodes",
            )
            .into())
        }
    };
    let mut nodes = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{field}.items[{i}]");
        if !item.is_object() {
            return Err(ArbiterError::at(ErrorCode::MalformedRequest, at, "expected a core/v1 Node object").into());
        }
        let node: NodeObject = read(item, &at)?;
        if node.metadata.name.is_empty() {
            return Err(
                ArbiterError::at(ErrorCode::MissingField, format!("{at}.metadata.name"), "a node has a name").into()
            );
        }
        let mut labels = node.metadata.labels;
        let labels = NodeLabels { worker_type: labels.remove(WORKER_TYPE), server: labels.remove(SERVER) };
        nodes.push(Node { name: node.metadata.name, labels });
    }
    Ok(nodes)
}

/// The session server a node's labels name, or why they name none (shown by the scheduler).
pub fn server_of(session: &Session, node: &str, labels: &NodeLabels) -> Result<ServerId, String> {
    let cluster = session.cluster();
    let types = || (0..cluster.num_types()).map(|w| cluster.type_name(w)).collect::<Vec<_>>().join(", ");
    let Some(type_name) = &labels.worker_type else {
        return Err(format!(
            "arbiter: node {node} has no {WORKER_TYPE} label naming one of the session's worker types ({})",
            types()
        ));
    };
    let Some(w) = cluster.type_index(type_name) else {
        return Err(format!(
            "arbiter: node {node} is labelled {WORKER_TYPE}={}, which is not a worker type of the session ({})",
            crate::error::clipped(type_name),
            types()
        ));
    };
    let servers = cluster.servers_of_type(w).count();
    let Some(index) = &labels.server else {
        return Err(format!(
            "arbiter: node {node} has no {SERVER} label (its server's index among the {servers} {type_name} servers)"
        ));
    };
    index.parse::<usize>().ok().and_then(|i| cluster.servers_of_type(w).nth(i)).ok_or_else(|| {
        format!(
            "arbiter: node {node} is labelled {SERVER}={}, which names no {type_name} server (0 to {})",
            crate::error::clipped(index),
            servers.saturating_sub(1)
        )
    })
}

/// Where the current round (the last one run) placed a job: its worker type and, per server,
/// how many of its GPUs are there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub worker_type: usize,
    pub gpus: BTreeMap<ServerId, u32>,
}

impl Placed {
    /// The job's GPUs on its busiest server.
    pub fn most(&self) -> u32 {
        self.gpus.values().copied().max().unwrap_or(0)
    }

    /// `v100 servers 0, 1`, for reasons.
    pub fn describe(&self, session: &Session) -> String {
        let cluster = session.cluster();
        let names: Vec<String> = self
            .gpus
            .keys()
            .map(|&s| cluster.server_name(s).rsplit('/').next().unwrap_or_default().to_string())
            .collect();
        let noun = if names.len() == 1 { "server" } else { "servers" };
        format!("{} {noun} {}", cluster.type_name(self.worker_type), names.join(", "))
    }
}

/// The job's placement in the current round; none when it does not run in it.
pub fn placed(session: &Session, job: &str) -> ApiResult<Option<Placed>> {
    let Some(lease) = session.lease(job)? else { return Ok(None) };
    let cluster = session.cluster();
    let mut gpus = BTreeMap::new();
    for &g in &lease.gpus {
        *gpus.entry(cluster.gpu_server(g)).or_insert(0) += 1;
    }
    Ok((!gpus.is_empty()).then_some(Placed { worker_type: lease.worker_type, gpus }))
}

/// Why a job that exists does not run in the current round (shown by the scheduler).
pub fn waiting(session: &Session, id: &str, job: &str) -> String {
    // A job of a session stored before sessions refused it may need more GPUs than any type
    // it runs on has.
    if let Some(never) = crate::service::sessions::spec::never_runs(session, job) {
        return format!("arbiter: job {job} can never run: {}", never.why);
    }
    let rounds = session.rounds();
    if rounds == 0 {
        return format!("arbiter: job {job} waits: session {id} has run no round yet");
    }
    let end = session.time();
    let start = (end - session.config().round_seconds).max(0.0);
    format!(
        "arbiter: job {job} waits: it does not run in round {} (session time {start}–{end} s); the next round starts \
         at {end} s",
        rounds - 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubernetes::objects::PodSpec;
    use serde_json::json;

    /// The extender and the controllers count a pod's GPUs by one rule: requests (else limits)
    /// summed over containers, or the largest init container's if more; quantities as strings
    /// (trimmed) or numbers. A fraction is refused by both, the extender naming its field.
    #[test]
    fn the_extender_counts_gpus_as_the_controllers_do() {
        let gpu = |q: Value| json!({"resources": {"requests": {GPU_RESOURCE: q}}});
        let limit = |q: Value| json!({"resources": {"limits": {GPU_RESOURCE: q}}});
        let specs = [
            (json!({"containers": [gpu(json!("2")), gpu(json!(1)), limit(json!(" 3 "))]}), 6),
            (json!({"containers": [gpu(json!("1"))], "initContainers": [gpu(json!(4)), gpu(json!("2"))]}), 4),
            (json!({"containers": [{"resources": {}}, gpu(json!("0"))]}), 0),
        ];
        for (spec, want) in specs {
            let pod = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec.clone()});
            let read = Pod::read(&pod, "Pod").expect("a pod").gpus;
            let controllers: PodSpec = serde_json::from_value(spec.clone()).expect("a pod spec");
            assert_eq!((read, controllers.gpus().expect("whole GPUs")), (want, want), "{spec}");
        }
        let fraction = json!({"metadata": {"name": "p"}, "spec": {"containers": [gpu(json!("500m"))]}});
        let error = Pod::read(&fraction, "Pod").expect_err("a fraction");
        assert!(format!("{error:?}").contains("Pod.spec.containers[0].resources"), "{error:?}");
        let controllers: PodSpec = serde_json::from_value(fraction["spec"].clone()).expect("a pod spec");
        assert!(controllers.gpus().is_err());
    }

    /// Sessions refuse such a job now; one stored before they did is shown as never running.
    #[test]
    fn a_job_larger_than_every_type_is_shown_as_never_running() {
        let request: crate::request::Request = serde_json::from_value(json!({
            "policy": "max_min_fairness",
            "cluster": {"worker_types": {"v100": {"count": 8, "gpus_per_server": 4}, "k80": {"count": 8, "gpus_per_server": 4}}},
            "jobs": [{"id": "big", "scale_factor": 16, "throughput": {"v100": 40.0, "k80": 4.0}, "steps_remaining": 1e6},
                     {"id": "small", "scale_factor": 4, "throughput": {"v100": 40.0}, "steps_remaining": 1e6}]
        }))
        .expect("a request");
        let problem = crate::problem::Problem::from_request(&request).expect("the contract takes it");
        let session = Session::from_problem(&problem, crate::mechanism::Config::default()).expect("a session");
        let want =
            "arbiter: job big can never run: it needs 16 GPUs at once, and the most of one worker type it runs on is 8";
        assert!(waiting(&session, "s", "big").starts_with(want), "{}", waiting(&session, "s", "big"));
        assert!(waiting(&session, "s", "small").contains("waits"), "{}", waiting(&session, "s", "small"));
    }
}
