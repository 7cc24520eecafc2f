//! A blocking client of `arbiter serve`'s session API for the Kubernetes controllers: read a
//! session, create one, add and remove jobs, run a round, report workers failed and returned, and
//! the scheduler extender's bindings: list them, record one, forget one, list the evictions.

use super::http::{self, segment, CallError};
use super::session::{BindingListSnapshot, BindingSnapshot, EvictionListSnapshot, SessionSnapshot};
use crate::request::JobSpec;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

pub struct ArbiterClient {
    agent: ureq::Agent,
    base: String,
    token: Option<String>,
}

impl ArbiterClient {
    /// A client of the server at `base` (`http://127.0.0.1:8080`), sending the bearer token in
    /// `token_file` if given (`arbiter token create`).
    pub fn new(base: &str, token_file: Option<&Path>) -> Result<ArbiterClient, String> {
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(format!("--arbiter {base:?} is not an http:// or https:// URL"));
        }
        let token = token_file
            .map(|f| {
                std::fs::read_to_string(f)
                    .map(|t| t.trim().to_string())
                    .map_err(|e| format!("cannot read the token file {}: {e}", f.display()))
            })
            .transpose()?;
        // A round's solve may take a while on a large session: the server's own budget bounds it.
        let agent = http::agent(Duration::from_secs(120), None);
        Ok(ArbiterClient { agent, base: base.trim_end_matches('/').to_string(), token })
    }

    /// One call; the contract's error object's message on failure.
    fn call(&self, method: &'static str, path: &str, body: Option<&Value>) -> Result<Value, CallError> {
        let url = format!("{}{path}", self.base);
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let body = body.map(|b| ("application/json", b.to_string()));
        http::call_json(&self.agent, method, url, auth.as_deref(), body, |v| v["error"]["message"].as_str())
    }

    /// A GET whose answer is read as `T` (`what` names it in the error).
    fn get<T: DeserializeOwned>(&self, path: &str, what: &str) -> Result<T, CallError> {
        let value = self.call("GET", path, None)?;
        serde_json::from_value(value).map_err(|e| CallError {
            method: "GET",
            url: format!("{}{path}", self.base),
            status: Some(200),
            message: format!("{what} does not have the expected shape: {e}"),
        })
    }

    pub fn session(&self, id: &str) -> Result<SessionSnapshot, CallError> {
        self.get(&format!("/v1/sessions/{}", segment(id)), "the session")
    }

    /// The pods the session's scheduler extender has recorded as bound.
    pub fn bindings(&self, session: &str) -> Result<Vec<BindingSnapshot>, CallError> {
        let list: BindingListSnapshot =
            self.get(&format!("/v1/sessions/{}/k8s/bindings", segment(session)), "the binding list")?;
        Ok(list.bindings)
    }

    /// The bound pods the session's last round does not run where they are.
    pub fn evictions(&self, session: &str) -> Result<EvictionListSnapshot, CallError> {
        self.get(&format!("/v1/sessions/{}/k8s/evictions", segment(session)), "the eviction list")
    }

    /// Introduces a pod and its node to the scheduler extender as kube-scheduler's `filter` does
    /// (so a later `bind` knows the pod's job and the node's server); the extender's answer.
    pub fn filter(&self, session: &str, pod: &Value, node: Option<&Value>) -> Result<Value, CallError> {
        let body = match node {
            Some(node) => serde_json::json!({"Pod": pod, "Nodes": {"items": [node]}, "NodeNames": null}),
            None => serde_json::json!({"Pod": pod, "Nodes": null, "NodeNames": []}),
        };
        self.call("POST", &format!("/v1/sessions/{}/k8s/filter", segment(session)), Some(&body))
    }

    /// Reports a pod bound to `node` to the scheduler extender's `bind`: `Ok("")` when it is
    /// recorded, `Ok(reason)` when the session refuses it.
    pub fn bind(&self, session: &str, namespace: &str, pod: &str, uid: &str, node: &str) -> Result<String, CallError> {
        let body = serde_json::json!({"PodName": pod, "PodNamespace": namespace, "PodUID": uid, "Node": node});
        let path = format!("/v1/sessions/{}/k8s/bind", segment(session));
        let value = self.call("POST", &path, Some(&body))?;
        value["Error"].as_str().map(str::to_string).ok_or_else(|| CallError {
            method: "POST",
            url: format!("{}{path}", self.base),
            status: Some(200),
            message: format!("the answer is not an ExtenderBindingResult (no Error string): {value}"),
        })
    }

    /// Forgets a pod's binding (it was evicted or is gone).
    pub fn forget(&self, session: &str, namespace: &str, pod: &str) -> Result<(), CallError> {
        let path = format!("/v1/sessions/{}/k8s/bindings/{}/{}", segment(session), segment(namespace), segment(pod));
        self.call("DELETE", &path, None).map(drop)
    }

    /// Creates a session from a creation body; its id.
    pub fn create_session(&self, body: &Value) -> Result<String, CallError> {
        let value = self.call("POST", "/v1/sessions", Some(body))?;
        Ok(value["id"].as_str().unwrap_or_default().to_string())
    }

    pub fn add_job(&self, session: &str, job: &JobSpec) -> Result<(), CallError> {
        let body = serde_json::to_value(job).unwrap_or(Value::Null);
        self.call("POST", &format!("/v1/sessions/{}/jobs", segment(session)), Some(&body)).map(drop)
    }

    pub fn remove_job(&self, session: &str, job: &str) -> Result<(), CallError> {
        self.call("DELETE", &format!("/v1/sessions/{}/jobs/{}", segment(session), segment(job)), None).map(drop)
    }

    /// Runs the next round; the round's view.
    pub fn run_round(&self, session: &str) -> Result<Value, CallError> {
        self.call("POST", &format!("/v1/sessions/{}/rounds", segment(session)), None)
    }

    /// `worker` (`v100/3` or `v100/3/1`) failed.
    pub fn fail_worker(&self, session: &str, worker: &str) -> Result<(), CallError> {
        self.call("POST", &format!("/v1/sessions/{}/workers/{}/fail", segment(session), segment(worker)), None)
            .map(drop)
    }

    /// `worker` is back.
    pub fn return_worker(&self, session: &str, worker: &str) -> Result<(), CallError> {
        self.call("POST", &format!("/v1/sessions/{}/workers/{}/return", segment(session), segment(worker)), None)
            .map(drop)
    }
}
