//! Prometheus metrics, kept in memory and written in the text exposition format by hand:
//! requests by route and status, latency and solve-time histograms, errors by code, sessions.

use super::error::ErrorTag;
use super::state::SharedState;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Instant;

/// Upper bounds of the histogram buckets, in seconds (`+Inf` is implied).
const BUCKETS: [f64; 16] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

#[derive(Debug, Clone, Default)]
struct Histogram {
    /// Per bucket, observations ≤ its bound (not cumulative; summed when written).
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        if let Some(i) = BUCKETS.iter().position(|&b| seconds <= b) {
            self.counts[i] += 1;
        }
        self.count += 1;
        self.sum += seconds;
    }

    fn write(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        let sep = if labels.is_empty() { "" } else { "," };
        for (bound, n) in BUCKETS.iter().zip(self.counts) {
            cumulative += n;
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// (route, method, status) → count.
    requests: BTreeMap<(String, String, u16), u64>,
    /// (route, method) → latency.
    latency: BTreeMap<(String, String), Histogram>,
    /// (what, outcome) → solve time; outcome is `ok` or the error code.
    solves: BTreeMap<(&'static str, String), Histogram>,
    errors: BTreeMap<String, u64>,
    events: BTreeMap<&'static str, u64>,
}

/// Every counter and histogram of the server.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

/// Gauges read at scrape time.
#[derive(Debug, Clone, Copy)]
pub struct Gauges {
    pub sessions: usize,
    pub solves_running: usize,
    pub solves_queued: usize,
    pub uptime_seconds: f64,
}

impl Metrics {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn observe_request(&self, route: &str, method: &str, status: u16, seconds: f64, error: Option<&str>) {
        let mut inner = self.inner();
        *inner.requests.entry((route.to_string(), method.to_string(), status)).or_default() += 1;
        inner.latency.entry((route.to_string(), method.to_string())).or_default().observe(seconds);
        if let Some(code) = error {
            *inner.errors.entry(code.to_string()).or_default() += 1;
        }
    }

    /// One solve of `what` (`allocations` or `session`): its time and outcome.
    pub fn observe_solve(&self, what: &'static str, seconds: f64, outcome: &str) {
        self.inner().solves.entry((what, outcome.to_string())).or_default().observe(seconds);
    }

    pub fn observe_event(&self, kind: &'static str) {
        *self.inner().events.entry(kind).or_default() += 1;
    }

    /// The text exposition format (version 0.0.4).
    pub fn render(&self, gauges: Gauges) -> String {
        let inner = self.inner();
        let mut out = String::with_capacity(8192);
        let head = |out: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        head(
            &mut out,
            "arbiter_http_requests_total",
            "counter",
            "HTTP requests answered, by route, method and status.",
        );
        for ((route, method, status), n) in &inner.requests {
            let _ = writeln!(
                out,
                "arbiter_http_requests_total{{route=\"{}\",method=\"{}\",status=\"{status}\"}} {n}",
                escape(route),
                escape(method)
            );
        }
        head(&mut out, "arbiter_http_request_duration_seconds", "histogram", "Time to answer an HTTP request.");
        for ((route, method), h) in &inner.latency {
            let labels = format!("route=\"{}\",method=\"{}\"", escape(route), escape(method));
            h.write(&mut out, "arbiter_http_request_duration_seconds", &labels);
        }
        head(
            &mut out,
            "arbiter_solve_duration_seconds",
            "histogram",
            "Time of one policy solve, by endpoint and outcome.",
        );
        for ((what, outcome), h) in &inner.solves {
            let labels = format!("endpoint=\"{what}\",outcome=\"{}\"", escape(outcome));
            h.write(&mut out, "arbiter_solve_duration_seconds", &labels);
        }
        head(&mut out, "arbiter_errors_total", "counter", "Error responses, by the error object's code.");
        for (code, n) in &inner.errors {
            let _ = writeln!(out, "arbiter_errors_total{{code=\"{}\"}} {n}", escape(code));
        }
        head(&mut out, "arbiter_session_events_total", "counter", "Session events made durable, by kind.");
        for (kind, n) in &inner.events {
            let _ = writeln!(out, "arbiter_session_events_total{{kind=\"{kind}\"}} {n}");
        }
        head(&mut out, "arbiter_sessions", "gauge", "Live sessions.");
        let _ = writeln!(out, "arbiter_sessions {}", gauges.sessions);
        head(&mut out, "arbiter_solves_running", "gauge", "Solves running now.");
        let _ = writeln!(out, "arbiter_solves_running {}", gauges.solves_running);
        head(&mut out, "arbiter_solves_queued", "gauge", "Solves admitted and waiting for a solver.");
        let _ = writeln!(out, "arbiter_solves_queued {}", gauges.solves_queued);
        head(&mut out, "arbiter_uptime_seconds", "gauge", "Seconds since the server started.");
        let _ = writeln!(out, "arbiter_uptime_seconds {}", gauges.uptime_seconds);
        head(&mut out, "arbiter_build_info", "gauge", "Always 1; the version is a label.");
        let _ = writeln!(out, "arbiter_build_info{{version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"));
        out
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// `GET /metrics`.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text exposition format", content_type = "text/plain; version=0.0.4")))]
pub async fn metrics(State(state): State<SharedState>) -> Response {
    let gauges = Gauges {
        sessions: state.sessions.len(),
        solves_running: state.limiter.running(),
        solves_queued: state.limiter.queued(),
        uptime_seconds: state.started.elapsed().as_secs_f64(),
    };
    let text = state.metrics.render(gauges);
    ([(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"))], text)
        .into_response()
}

/// Middleware: counts and times every request by its route template (not its path, so ids do
/// not explode the label set), and logs it.
pub async fn track(State(state): State<SharedState>, request: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_string();
    let method = request.method().to_string();
    let path = request.uri().path().to_string();
    let request_id =
        request.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let response = next.run(request).await;
    let seconds = start.elapsed().as_secs_f64();
    let status = response.status().as_u16();
    let error = response.extensions().get::<ErrorTag>().map(|t| t.0.as_str());
    state.metrics.observe_request(&route, &method, status, seconds, error);
    let ms = seconds * 1e3;
    let code = error.unwrap_or("");
    if status >= 500 {
        tracing::error!(%method, %path, %route, status, ms, code, request_id, "request failed");
    } else if status == 429 || status < 400 {
        tracing::debug!(%method, %path, %route, status, ms, code, request_id, "request");
    } else {
        tracing::info!(%method, %path, %route, status, ms, code, request_id, "request refused");
    }
    response
}
