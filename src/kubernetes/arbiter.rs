//! A blocking client of `arbiter serve`'s session API for the Kubernetes controllers: read a
//! session, create one, add and remove jobs, run a round, report workers failed and returned.

use super::http::{self, segment, CallError};
use super::session::SessionSnapshot;
use crate::request::JobSpec;
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
        let result = match method {
            "GET" | "DELETE" => {
                let mut request = if method == "GET" { self.agent.get(&url) } else { self.agent.delete(&url) };
                if let Some(a) = &auth {
                    request = request.header("Authorization", a);
                }
                request.call()
            }
            _ => {
                let mut request = self.agent.post(&url).header("Content-Type", "application/json");
                if let Some(a) = &auth {
                    request = request.header("Authorization", a);
                }
                request.send(body.map_or_else(String::new, Value::to_string))
            }
        };
        let (status, text) = http::exchange(method, &url, result)?;
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            return Ok(value);
        }
        let message =
            value["error"]["message"].as_str().map_or_else(|| text.chars().take(500).collect(), str::to_string);
        Err(CallError { method, url, status: Some(status), message })
    }

    pub fn session(&self, id: &str) -> Result<SessionSnapshot, CallError> {
        let value = self.call("GET", &format!("/v1/sessions/{}", segment(id)), None)?;
        serde_json::from_value(value).map_err(|e| CallError {
            method: "GET",
            url: format!("{}/v1/sessions/{id}", self.base),
            status: Some(200),
            message: format!("the session does not have the expected shape: {e}"),
        })
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
