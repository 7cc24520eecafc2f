//! What the Kubernetes API client and the Arbiter server client share: one blocking HTTP agent
//! (rustls), the error of a call (its status and the server's message), and path escaping.

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

/// Sends a request built by `build` and returns (status, body).
pub fn exchange(
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
