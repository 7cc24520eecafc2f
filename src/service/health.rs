//! `GET /healthz` (liveness and load, answered from counters only: no lock a solve can hold),
//! `GET /` (where to go next) and `GET /openapi.json`.

use super::state::SharedState;
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Health {
    /// Always `ok` when the server answers.
    pub status: String,
    pub version: String,
    pub uptime_seconds: f64,
    /// Allocation sessions held (`/v1/sessions`).
    pub sessions: usize,
    /// FitGpp sessions held (`/v1/fitgpp/sessions`).
    pub fitgpp_sessions: usize,
    /// OASiS sessions held (`/v1/oasis/sessions`).
    pub oasis_sessions: usize,
    pub solves_running: usize,
    pub solves_queued: usize,
    pub max_concurrent_solves: usize,
}

/// Liveness and load.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The server is up", body = Health)))]
pub async fn healthz(State(state): State<SharedState>) -> Json<Health> {
    Json(Health {
        status: "ok".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        uptime_seconds: state.started.elapsed().as_secs_f64(),
        sessions: state.sessions.len(),
        fitgpp_sessions: state.fitgpp.len(),
        oasis_sessions: state.oasis.len(),
        solves_running: state.limiter.running(),
        solves_queued: state.limiter.queued(),
        max_concurrent_solves: state.limiter.max_running(),
    })
}

/// The OpenAPI 3.1 document of this API.
#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json")))]
pub async fn openapi(State(state): State<SharedState>) -> Response {
    ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], state.openapi.clone()).into_response()
}

/// A map of the API, for a person with `curl`.
///
/// The service, its version and the routes to start with (this document has them all); no token
/// needed.
#[utoipa::path(get, path = "/", tag = "operations",
    responses((status = 200, description = "The service, its version and the routes to start with", body = Object)))]
pub async fn index() -> Json<serde_json::Value> {
    Json(landing())
}

/// `GET /`'s answer (the OpenAPI document's example too).
pub fn landing() -> serde_json::Value {
    serde_json::json!({
        "service": "arbiter",
        "version": env!("CARGO_PKG_VERSION"),
        "endpoints": {
            "solve": "POST /v1/allocations",
            "sessions": "GET|POST /v1/sessions",
            "demo session": "GET /v1/sessions/demo",
            "demo allocation": "GET /v1/sessions/demo/allocation",
            "next round": "POST /v1/sessions/demo/rounds",
            "health": "GET /healthz",
            "metrics": "GET /metrics",
            "openapi": "GET /openapi.json",
        }
    })
}
