//! A fake Kubernetes API server for the loop tests: it serves lists of the objects it holds,
//! applies status patches the way server-side apply merges them (an admission-check entry by
//! name, a condition by type; a stale resourceVersion is a 409), accepts bindings and evictions
//! (when it holds `/api/v1/pods`, of the pods listed there only: a binding sets the pod's
//! `spec.nodeName`, an eviction its `deletionTimestamp`), records every request, and answers with
//! a given error when told to.
#![allow(dead_code)]

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

pub const KUEUE: &str = "/apis/kueue.x-k8s.io/v1beta2";

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query.
    pub uri: String,
    pub content_type: Option<String>,
    pub authorization: Option<String>,
    pub body: Value,
}

#[derive(Default)]
pub struct FakeState {
    /// Collection path (`/api/v1/nodes`) → its objects.
    pub collections: BTreeMap<String, Vec<Value>>,
    pub requests: Vec<Recorded>,
    /// The next request of that method gets this status (and message) instead.
    pub failures: VecDeque<(String, u16, String)>,
    version: u64,
}

pub struct FakeApi {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<FakeState>>,
}

fn status(code: u16, reason: &str, message: &str) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": message, "reason": reason, "code": code});
    (StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), axum::Json(body)).into_response()
}

impl FakeApi {
    pub fn start() -> FakeApi {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(FakeState::default()));
        let shared = state.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().fallback(handle).with_state(shared);
                let _ = axum::serve(listener, app).await;
            });
        });
        FakeApi { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn set(&self, collection: &str, items: Vec<Value>) {
        self.state.lock().unwrap().collections.insert(collection.to_string(), items);
    }

    pub fn fail_next(&self, method: &str, code: u16) {
        self.fail_next_with(method, code, &format!("injected {code}"));
    }

    /// The next request of `method` is answered `code` with `message`.
    pub fn fail_next_with(&self, method: &str, code: u16, message: &str) {
        self.state.lock().unwrap().failures.push_back((method.to_string(), code, message.to_string()));
    }

    /// The requests recorded since the last call (and forgets them).
    pub fn take(&self) -> Vec<Recorded> {
        std::mem::take(&mut self.state.lock().unwrap().requests)
    }

    /// A stored object of a collection by name (and namespace).
    pub fn object(&self, collection: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let state = self.state.lock().unwrap();
        state.collections.get(collection)?.iter().find(|o| matches(o, namespace, name)).cloned()
    }

    /// Edits a stored object in place.
    pub fn edit(&self, collection: &str, namespace: Option<&str>, name: &str, f: impl FnOnce(&mut Value)) {
        let mut state = self.state.lock().unwrap();
        let object = state
            .collections
            .get_mut(collection)
            .and_then(|items| items.iter_mut().find(|o| matches(o, namespace, name)))
            .expect("the object to edit");
        f(object);
    }
}

fn matches(object: &Value, namespace: Option<&str>, name: &str) -> bool {
    object["metadata"]["name"] == name && object["metadata"]["namespace"].as_str() == namespace
}

/// Replaces the entry of `list` whose `key` equals the new one's, or appends it.
fn merge_by(list: &mut Value, entries: &Value, key: &str) {
    if !list.is_array() {
        *list = json!([]);
    }
    let list = list.as_array_mut().unwrap();
    for entry in entries.as_array().into_iter().flatten() {
        match list.iter_mut().find(|e| e[key] == entry[key]) {
            Some(existing) => *existing = entry.clone(),
            None => list.push(entry.clone()),
        }
    }
}

async fn handle(
    State(state): State<Arc<Mutex<FakeState>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut state = state.lock().unwrap();
    state.requests.push(Recorded {
        method: method.to_string(),
        uri: uri.to_string(),
        content_type: header("content-type"),
        authorization: header("authorization"),
        body: parsed.clone(),
    });
    if let Some(i) = state.failures.iter().position(|(m, _, _)| m == method.as_str()) {
        let (_, code, message) = state.failures.remove(i).unwrap();
        let reason = match code {
            409 => "Conflict",
            429 => "TooManyRequests",
            _ => "InternalError",
        };
        return status(code, reason, &message);
    }
    let path = uri.path().to_string();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match method.as_str() {
        "GET" => match state.collections.get(&path) {
            Some(items) => axum::Json(
                json!({"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}, "items": items}),
            )
            .into_response(),
            None => status(404, "NotFound", &format!("the server could not find the requested resource ({path})")),
        },
        "PATCH" if path.ends_with("/status") => {
            if header("content-type").as_deref() != Some("application/apply-patch+yaml") {
                return status(415, "UnsupportedMediaType", "the body of the request was in an unknown format");
            }
            // /apis/kueue.x-k8s.io/v1beta2/[namespaces/<ns>/]<plural>/<name>/status
            let n = segments.len();
            let (plural, name) = (segments[n - 3], segments[n - 2]);
            let namespace = (n == 8).then(|| segments[4]);
            let collection = format!("{KUEUE}/{plural}");
            state.version += 1;
            let version = format!("{}", 5000 + state.version);
            let Some(object) = state
                .collections
                .get_mut(&collection)
                .and_then(|items| items.iter_mut().find(|o| matches(o, namespace, name)))
            else {
                return status(404, "NotFound", &format!("{plural} \"{name}\" not found"));
            };
            if let Some(rv) = parsed["metadata"]["resourceVersion"].as_str() {
                if object["metadata"]["resourceVersion"] != rv {
                    return status(
                        409,
                        "Conflict",
                        "the object has been modified; please apply your changes to the latest version and try again",
                    );
                }
            }
            if let Some(checks) = parsed["status"].get("admissionChecks") {
                merge_by(&mut object["status"]["admissionChecks"], checks, "name");
            }
            if let Some(conditions) = parsed["status"].get("conditions") {
                merge_by(&mut object["status"]["conditions"], conditions, "type");
            }
            object["metadata"]["resourceVersion"] = json!(version);
            axum::Json(object.clone()).into_response()
        }
        "POST" if path.ends_with("/binding") || path.ends_with("/eviction") => {
            // /api/v1/namespaces/<ns>/pods/<name>/<binding|eviction>
            let (namespace, name, verb) = (segments[3], segments[5], segments[6]);
            if let Some(pods) = state.collections.get_mut("/api/v1/pods") {
                let Some(pod) = pods.iter_mut().find(|p| matches(p, Some(namespace), name)) else {
                    return status(404, "NotFound", &format!("pods \"{name}\" not found"));
                };
                if verb == "binding" {
                    if let Some(node) = pod["spec"]["nodeName"].as_str() {
                        return status(409, "Conflict", &format!("pod {name} is already assigned to node \"{node}\""));
                    }
                    if let Some(uid) = parsed["metadata"]["uid"].as_str() {
                        if pod["metadata"]["uid"] != uid {
                            return status(
                                409,
                                "Conflict",
                                &format!("Precondition failed: UID in precondition: {uid}"),
                            );
                        }
                    }
                    pod["spec"]["nodeName"] = parsed["target"]["name"].clone();
                } else {
                    pod["metadata"]["deletionTimestamp"] = json!("2026-01-05T10:30:00Z");
                }
            }
            (
                StatusCode::CREATED,
                axum::Json(json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})),
            )
                .into_response()
        }
        _ => status(405, "MethodNotAllowed", &format!("{method} {path} is not served here")),
    }
}
