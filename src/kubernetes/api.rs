//! A small blocking client of the Kubernetes API: list objects, server-side-apply a status, bind
//! and evict pods. In-cluster (the service account) or against a given server (`kubectl proxy`).

use super::http::{self, CallError};
use super::keys::FIELD_MANAGER;
use super::objects::List;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where a pod's service-account credentials are mounted.
pub const SERVICE_ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

pub struct Client {
    agent: ureq::Agent,
    base: String,
    /// Read again before every call: projected service-account tokens are rotated.
    token_file: Option<PathBuf>,
}

/// Reads a PEM bundle into the only roots the client trusts.
fn tls_with_ca(ca_file: &Path) -> Result<ureq::tls::TlsConfig, String> {
    let pem = std::fs::read(ca_file).map_err(|e| format!("cannot read the CA file {}: {e}", ca_file.display()))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item.map_err(|e| format!("the CA file {} is not PEM: {e}", ca_file.display()))? {
            ureq::tls::PemItem::Certificate(cert) => certs.push(cert),
            _ => continue,
        }
    }
    if certs.is_empty() {
        return Err(format!("the CA file {} holds no certificate", ca_file.display()));
    }
    let roots = ureq::tls::RootCerts::Specific(Arc::new(certs));
    Ok(ureq::tls::TlsConfig::builder().root_certs(roots).build())
}

/// A collection's objects of the expected shape, and why each other one was skipped.
#[derive(Debug, Clone)]
pub struct Listed<T> {
    pub items: Vec<T>,
    pub malformed: Vec<String>,
}

impl Client {
    /// A client of the API server at `base` (`https://10.0.0.1:443`, `http://127.0.0.1:8001`
    /// for `kubectl proxy`), with a bearer token read from `token_file` and, for https, the
    /// server's CA from `ca_file` (else the public roots).
    pub fn new(base: &str, token_file: Option<&Path>, ca_file: Option<&Path>) -> Result<Client, String> {
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(format!("the API server {base:?} is not an http:// or https:// URL"));
        }
        if let Some(file) = token_file {
            std::fs::metadata(file).map_err(|e| format!("cannot read the token file {}: {e}", file.display()))?;
        }
        let tls = ca_file.map(tls_with_ca).transpose()?;
        Ok(Client {
            agent: http::agent(Duration::from_secs(30), tls),
            base: base.trim_end_matches('/').to_string(),
            token_file: token_file.map(Path::to_path_buf),
        })
    }

    /// The API server of the pod this runs in: `KUBERNETES_SERVICE_HOST`/`_PORT` and the
    /// service account's token and CA.
    pub fn in_cluster() -> Result<Client, String> {
        let host = std::env::var("KUBERNETES_SERVICE_HOST")
            .map_err(|_| "not in a cluster (no KUBERNETES_SERVICE_HOST): give --kube-api-server URL".to_string())?;
        let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_else(|_| "443".to_string());
        let host = if host.contains(':') { format!("[{host}]") } else { host };
        let account = Path::new(SERVICE_ACCOUNT);
        Client::new(&format!("https://{host}:{port}"), Some(&account.join("token")), Some(&account.join("ca.crt")))
    }

    fn token(&self, method: &'static str, url: &str) -> Result<Option<String>, CallError> {
        let Some(file) = &self.token_file else { return Ok(None) };
        let text = std::fs::read_to_string(file).map_err(|e| CallError {
            method,
            url: url.to_string(),
            status: None,
            message: format!("cannot read the token file {}: {e}", file.display()),
        })?;
        Ok(Some(format!("Bearer {}", text.trim())))
    }

    /// One call; a status other than 2xx is an error carrying the `Status` object's message.
    fn call(&self, method: &'static str, path: &str, body: Option<(&str, &Value)>) -> Result<Value, CallError> {
        let url = format!("{}{path}", self.base);
        let token = self.token(method, &url)?;
        let body = body.map(|(content_type, value)| (content_type, value.to_string()));
        http::call_json(&self.agent, method, url, token.as_deref(), body, |v| v["message"].as_str())
    }

    /// Every object at a collection path (`/api/v1/nodes`,
    /// `/apis/kueue.x-k8s.io/v1beta2/workloads`): those of the expected shape, and a line for each
    /// other one, which is skipped (one malformed object does not stop a controller's step).
    pub fn list<T: DeserializeOwned>(&self, path: &str) -> Result<Listed<T>, CallError> {
        let value = self.call("GET", path, None)?;
        let list: List<Value> = serde_json::from_value(value).map_err(|e| CallError {
            method: "GET",
            url: format!("{}{path}", self.base),
            status: Some(200),
            message: format!("the list does not have the expected shape: {e}"),
        })?;
        let mut listed = Listed { items: Vec::with_capacity(list.items.len()), malformed: Vec::new() };
        for (i, item) in list.items.iter().enumerate() {
            match serde_path_to_error::deserialize::<_, T>(item) {
                Ok(object) => listed.items.push(object),
                Err(e) => {
                    let meta = &item["metadata"];
                    let name = match (meta["namespace"].as_str(), meta["name"].as_str()) {
                        (Some(ns), Some(name)) => format!("{ns}/{name}"),
                        (None, Some(name)) => name.to_string(),
                        _ => format!("item {i}"),
                    };
                    listed.malformed.push(format!("GET {path}: {name} skipped: {}: {}", e.path(), e.inner()));
                }
            }
        }
        Ok(listed)
    }

    /// Server-side apply of an object's status subresource (`<object path>/status`) as field
    /// manager `arbiter`, forcing ownership of the fields `body` names.
    pub fn apply_status(&self, object_path: &str, body: &Value) -> Result<Value, CallError> {
        let path = format!("{object_path}/status?fieldManager={FIELD_MANAGER}&force=true");
        // JSON is YAML: the apply content type takes it as it is.
        self.call("PATCH", &path, Some(("application/apply-patch+yaml", body)))
    }

    /// Binds a pending pod to a node (what a scheduler does): `POST .../pods/{pod}/binding`.
    /// With `uid`, the Binding carries it as a precondition (as kube-scheduler's does): a pod
    /// recreated under the same name since is not bound.
    pub fn bind_pod(&self, namespace: &str, pod: &str, uid: Option<&str>, node: &str) -> Result<(), CallError> {
        let path = format!("/api/v1/namespaces/{}/pods/{}/binding", http::segment(namespace), http::segment(pod));
        let mut body = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        if let Some(uid) = uid.filter(|u| !u.is_empty()) {
            body["metadata"]["uid"] = json!(uid);
        }
        self.call("POST", &path, Some(("application/json", &body))).map(drop)
    }

    /// Evicts a pod through the eviction subresource, so PodDisruptionBudgets are honoured
    /// (a 429 means one forbids it now).
    pub fn evict_pod(&self, namespace: &str, pod: &str) -> Result<(), CallError> {
        let path = format!("/api/v1/namespaces/{}/pods/{}/eviction", http::segment(namespace), http::segment(pod));
        let body = json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod, "namespace": namespace},
        });
        self.call("POST", &path, Some(("application/json", &body))).map(drop)
    }
}
