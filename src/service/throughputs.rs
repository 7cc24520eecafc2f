//! `POST /v1/throughputs/estimate`: partial throughput rows in, rows completed by the estimator
//! (`crate::estimator`) out, against the posted reference or the server's `--reference-throughputs`.

use super::error::{ApiError, ApiResult, ErrorResponse};
use super::extract::{parse_object, Body};
use super::state::SharedState;
use crate::estimator::api::{self, EstimateRequest, EstimateResponse};
use axum::extract::{FromRequest, State};
use axum::Json;

/// Estimate the throughputs jobs were not measured on.
///
/// Each job gives what was measured (steps/s alone by worker type, and beside reference jobs);
/// every other entry is completed by low-rank matrix completion against the reference matrix, and
/// says whether it was measured or estimated, with the error such estimates made on the reference.
#[utoipa::path(post, path = "/v1/throughputs/estimate", tag = "throughputs",
    request_body(content = EstimateRequest, description = "Partial rows, and optionally the reference"),
    responses(
        (status = 200, description = "The completed rows", body = EstimateResponse),
        (status = 400, description = "Malformed, an unknown worker type or partner, too few measurements for the rank, or no reference", body = ErrorResponse),
        (status = 429, description = "Every solver is busy and the queue is full; see `Retry-After`", body = ErrorResponse,
            headers(("Retry-After" = u64, description = "Seconds to wait before retrying"))),
    ))]
pub async fn estimate(
    State(state): State<SharedState>,
    request: axum::extract::Request,
) -> ApiResult<Json<EstimateResponse>> {
    state.limiter.check()?;
    let body = Body::from_request(request, &state).await?;
    let shared = state.clone();
    let response = state
        .limiter
        .run(move || -> ApiResult<EstimateResponse> {
            let request: EstimateRequest = parse_object(body.text()?)?;
            api::estimate(&request, shared.reference.as_deref()).map_err(ApiError::from)
        })
        .await??;
    Ok(Json(response))
}
