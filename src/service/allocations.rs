//! `POST /v1/allocations`: the contract's request in, its response out, stateless; the same
//! answer as `arbiter solve`. Parsing, validation, solving and rendering all run in a solver slot.

use super::error::{ApiResult, ErrorResponse};
use super::extract::Body;
use super::state::SharedState;
use crate::lp::Backend;
use crate::problem::Problem;
use crate::request::Request;
use axum::extract::{FromRequest, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use std::time::Instant;

/// Solve one allocation request.
///
/// The budget is the request's `max_solve_seconds` or the server's `--max-solve-seconds`,
/// whichever is smaller; past it the answer is 504 `timeout`.
#[utoipa::path(post, path = "/v1/allocations", tag = "allocations",
    request_body(content = crate::request::Request, description = "A request of the contract"),
    responses(
        (status = 200, description = "The allocation", body = crate::response::Response),
        (status = 400, description = "Malformed JSON, a wrong type, NaN, an unknown policy or worker type, ... (the field is named)", body = ErrorResponse),
        (status = 422, description = "Infeasible (e.g. SLOs that cannot all be met; the jobs are named) or unsupported", body = ErrorResponse),
        (status = 429, description = "Every solver is busy and the queue is full; see `Retry-After`", body = ErrorResponse,
            headers(("Retry-After" = u64, description = "Seconds to wait before retrying"))),
        (status = 500, description = "The LP solver failed", body = ErrorResponse),
        (status = 504, description = "The solve budget ran out", body = ErrorResponse),
    ))]
pub async fn solve(State(state): State<SharedState>, request: axum::extract::Request) -> ApiResult<Response> {
    // Turned away before the body is read, when the queue is already full.
    state.limiter.check()?;
    let body = Body::from_request(request, &state).await?;
    let shared = state.clone();
    let json = state
        .limiter
        .run(move || -> ApiResult<Vec<u8>> {
            let (mut request, ignored) = Request::from_json_noting(body.text()?)?;
            let filled = crate::estimator::fill::fill_missing(&mut request, shared.reference.as_deref())?;
            let problem = Problem::from_request(&request)?;
            let backend = Backend::default().within(shared.config.max_solve_seconds);
            let start = Instant::now();
            let result = crate::solve(&problem, backend).map(|mut response| {
                response.estimated_throughput = filled.throughput;
                response.estimated_colocations = filled.colocations;
                response.ignored_fields = ignored;
                response
            });
            let outcome =
                result.as_ref().map_or_else(|e| super::error::Code::Library(e.code).as_str(), |_| "ok".into());
            shared.metrics.observe_solve("allocations", start.elapsed().as_secs_f64(), &outcome);
            let response = result?;
            serde_json::to_vec(&response).map_err(|e| super::error::ApiError::Internal(e.to_string()))
        })
        .await??;
    Ok(([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], json).into_response())
}
