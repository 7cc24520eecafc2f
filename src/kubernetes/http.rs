//! What the Kubernetes API client and the Arbiter server client share: one blocking HTTP agent
//! (rustls), one JSON call, the error of a call (its status and the server's message), and path
//! escaping.

use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// Bodies above this are refused rather than read (a list of every Pod of a large cluster fits).
pub const MAX_BODY_BYTES: u64 = 256 * 1024 * 1024;

/// A failed call: no answer (`status` is None), or an answer that is not a success.
#[derive(Debug, Clone, PartialEq)]
pub struct CallError {
    pub method: &'static str,
    pub url: String,
    pub status: Option<u16>,
    pub message: String,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(status) => write!(f, "{} {}: {status}: {}", self.method, self.url, self.message),
            None => write!(f, "{} {}: {}", self.method, self.url, self.message),
        }
    }
}

impl std::error::Error for CallError {}

/// An agent that answers every status (the callers read error bodies) within `timeout`.
pub fn agent(timeout: Duration, tls: Option<ureq::tls::TlsConfig>) -> ureq::Agent {
    let mut config = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(timeout));
    if let Some(tls) = tls {
        config = config.tls_config(tls);
    }
    config.build().into()
}

/// One call of a JSON API: GET and DELETE without a body, POST and PATCH with `body` (its content
/// type and text; none: an empty `application/json` body). The answer's JSON on a 2xx (null when
/// empty); otherwise an error whose message `message_of` reads from the answer, or the first 500
/// characters of the answer when it has none.
pub fn call_json(
    agent: &ureq::Agent,
    method: &'static str,
    url: String,
    authorization: Option<&str>,
    body: Option<(&str, String)>,
    message_of: fn(&Value) -> Option<&str>,
) -> Result<Value, CallError> {
    let result = match method {
        "GET" | "DELETE" => {
            let mut request = if method == "GET" { agent.get(&url) } else { agent.delete(&url) };
            request = request.header("Accept", "application/json");
            if let Some(a) = authorization {
                request = request.header("Authorization", a);
            }
            request.call()
        }
        _ => {
            let (content_type, text) = body.unwrap_or(("application/json", String::new()));
            let mut request = if method == "PATCH" { agent.patch(&url) } else { agent.post(&url) };
            request = request.header("Accept", "application/json").header("Content-Type", content_type);
            if let Some(a) = authorization {
                request = request.header("Authorization", a);
            }
            request.send(text)
        }
    };
    let (status, text) = exchange(method, &url, result)?;
    let value: Value =
        if text.trim().is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::Null) };
    if (200..300).contains(&status) {
        return Ok(value);
    }
    let message = message_of(&value).map_or_else(|| text.chars().take(500).collect(), str::to_string);
    Err(CallError { method, url, status: Some(status), message })
}

/// The (status, body) of a request's result; no answer or an unreadable one is the error.
fn exchange(
    method: &'static str,
    url: &str,
    result: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> Result<(u16, String), CallError> {
    let error = |status, message: String| CallError { method, url: url.to_string(), status, message };
    let mut response = result.map_err(|e| error(None, e.to_string()))?;
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_BODY_BYTES)
        .read_to_string()
        .map_err(|e| error(Some(status), format!("cannot read the answer: {e}")))?;
    Ok((status, body))
}

/// A path segment with every byte but the unreserved ones percent-encoded (`a/b` → `a%2Fb`).
pub fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn segments_escape_slashes_and_spaces() {
        assert_eq!(super::segment("team-a/train.1"), "team-a%2Ftrain.1");
        assert_eq!(super::segment("v100/0/1"), "v100%2F0%2F1");
        assert_eq!(super::segment("a b"), "a%20b");
    }
}
