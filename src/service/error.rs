//! The HTTP layer's one error type: every refusal and failure rendered as the contract's
//! `{"error": {...}}` object with its status. Library errors pass through as the CLI prints them.

use super::store::StoreError;
use crate::error::{clipped, quoted, ArbiterError, ErrorCode};
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// Codes of refusals the HTTP layer makes itself (the library's are `ErrorCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServiceCode {
    /// No session has this id (never created, or deleted), or it belongs to another tenant.
    UnknownSession,
    /// The server requires a bearer token and the request has none, a malformed one, or one
    /// that is unknown or revoked (401, with `WWW-Authenticate: Bearer`).
    Unauthorized,
    /// The token is valid but lacks the scope the route needs; the message names it (403).
    Forbidden,
    /// A tenant quota on what it holds (sessions, jobs per session) is reached; the message
    /// names the quota and its limit (403).
    QuotaExceeded,
    /// A tenant quota on its rate (requests per second, concurrent solves) is used up (429, with
    /// `Retry-After`).
    RateLimited,
    /// No endpoint at this path.
    NotFound,
    /// The path exists but not with this method.
    MethodNotAllowed,
    /// The body is larger than the server's `--max-body-bytes` (413).
    PayloadTooLarge,
    /// Every solver is busy and the queue is full (429, with `Retry-After`).
    Overloaded,
    /// The session store could not make an event durable (500): the event was not applied.
    StorageFailed,
    /// The disk holding the session store, or its `--db-max-bytes`, is full (503, with
    /// `Retry-After`): the event was not applied; writes succeed again once there is room.
    StorageFull,
    /// A bug: the server caught a panic or an unexpected failure (500).
    Internal,
}

/// Either kind of code, as the wire's `code` string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum Code {
    Library(ErrorCode),
    Service(ServiceCode),
}

impl Code {
    /// The `code` string, for metrics and logs.
    pub fn as_str(self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(s)) => s,
            _ => "internal".to_string(),
        }
    }
}

/// The contract's error object.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorObject {
    pub code: Code,
    /// What went wrong and, where it helps, what would be right.
    pub message: String,
    /// Path of the offending field in the request, e.g. `jobs[3].throughput.v100`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Jobs an infeasibility is about (e.g. those whose SLOs cannot all be met).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(default = json!([]))]
    pub jobs: Vec<String>,
}

/// Every error body: `{"error": {...}}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorResponse {
    pub error: ErrorObject,
}

/// A refusal or failure of a request.
#[derive(Debug, Clone)]
pub enum ApiError {
    /// The library refused the input or failed to solve (validation, infeasible, timeout, ...).
    Arbiter(ArbiterError),
    UnknownSession(String),
    NoRoute {
        method: String,
        path: String,
    },
    MethodNotAllowed {
        method: String,
        path: String,
    },
    PayloadTooLarge {
        limit: usize,
    },
    /// Try again after `retry_after` seconds.
    Overloaded {
        retry_after: u64,
    },
    Storage(String),
    /// No room in the store: try again after `retry_after` seconds (once there is room).
    StorageFull {
        retry_after: u64,
        why: String,
    },
    Internal(String),
    /// No usable credentials; `invalid`: some were given (a malformed, unknown or revoked token).
    Unauthorized {
        message: String,
        invalid: bool,
    },
    /// The token lacks `scope`, which `route` (`METHOD /path`) needs.
    Forbidden {
        scope: &'static str,
        route: String,
    },
    /// The tenant holds `limit` of what `quota` counts.
    QuotaExceeded {
        quota: &'static str,
        limit: u64,
    },
    /// A tenant's rate quota: try again after `retry_after` seconds.
    RateLimited {
        retry_after: u64,
        why: String,
    },
}

/// Seconds a client whose write found the store full is told to wait (`Retry-After`): room comes
/// back when an operator frees space or raises the cap, or when a deletion frees pages.
pub const STORAGE_FULL_RETRY_AFTER_SECONDS: u64 = 30;

/// Put on every error response, so the metrics layer can count errors by code.
#[derive(Debug, Clone)]
pub struct ErrorTag(pub String);

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn malformed(message: impl Into<String>) -> ApiError {
        ApiError::Arbiter(ArbiterError::new(ErrorCode::MalformedRequest, message))
    }

    pub fn code(&self) -> Code {
        match self {
            ApiError::Arbiter(e) => Code::Library(e.code),
            ApiError::UnknownSession(_) => Code::Service(ServiceCode::UnknownSession),
            ApiError::NoRoute { .. } => Code::Service(ServiceCode::NotFound),
            ApiError::MethodNotAllowed { .. } => Code::Service(ServiceCode::MethodNotAllowed),
            ApiError::PayloadTooLarge { .. } => Code::Service(ServiceCode::PayloadTooLarge),
            ApiError::Overloaded { .. } => Code::Service(ServiceCode::Overloaded),
            ApiError::Storage(_) => Code::Service(ServiceCode::StorageFailed),
            ApiError::StorageFull { .. } => Code::Service(ServiceCode::StorageFull),
            ApiError::Internal(_) => Code::Service(ServiceCode::Internal),
            ApiError::Unauthorized { .. } => Code::Service(ServiceCode::Unauthorized),
            ApiError::Forbidden { .. } => Code::Service(ServiceCode::Forbidden),
            ApiError::QuotaExceeded { .. } => Code::Service(ServiceCode::QuotaExceeded),
            ApiError::RateLimited { .. } => Code::Service(ServiceCode::RateLimited),
        }
    }

    pub fn status(&self) -> StatusCode {
        let status = match self {
            ApiError::Arbiter(e) => e.code.http_status(),
            ApiError::UnknownSession(_) | ApiError::NoRoute { .. } => 404,
            ApiError::MethodNotAllowed { .. } => 405,
            ApiError::PayloadTooLarge { .. } => 413,
            ApiError::Overloaded { .. } | ApiError::RateLimited { .. } => 429,
            ApiError::Unauthorized { .. } => 401,
            ApiError::Forbidden { .. } | ApiError::QuotaExceeded { .. } => 403,
            ApiError::Storage(_) | ApiError::Internal(_) => 500,
            ApiError::StorageFull { .. } => 503,
        };
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The wire object. A library error is rendered exactly as `arbiter solve` prints it.
    pub fn body(&self) -> ErrorResponse {
        let (message, field, jobs) = match self {
            ApiError::Arbiter(e) => (e.message.clone(), e.field.clone(), e.jobs.clone()),
            ApiError::UnknownSession(id) => {
                (format!("unknown session {}: it was never created or has been deleted", quoted(id)), None, vec![])
            }
            ApiError::NoRoute { method, path } => {
                (format!("no endpoint {method} {}; GET /openapi.json lists them", clipped(path)), None, vec![])
            }
            ApiError::MethodNotAllowed { method, path } => {
                (format!("{} does not take {method}; GET /openapi.json lists its methods", clipped(path)), None, vec![])
            }
            ApiError::PayloadTooLarge { limit } => {
                (format!("the request body is larger than this server's limit of {limit} bytes"), None, vec![])
            }
            ApiError::Overloaded { retry_after } => {
                (format!("every solver is busy and the queue is full; retry after {retry_after} s"), None, vec![])
            }
            ApiError::Storage(why) => (format!("the session store failed, nothing was changed: {why}"), None, vec![]),
            ApiError::StorageFull { retry_after, why } => (
                format!(
                    "the session store is full (its disk, or the server's --db-max-bytes), nothing was changed; \
                     retry after {retry_after} s, once an operator has made room: {why}"
                ),
                None,
                vec![],
            ),
            ApiError::Internal(why) => (format!("internal error: {why}"), None, vec![]),
            ApiError::Unauthorized { message, .. } => (message.clone(), None, vec![]),
            ApiError::Forbidden { scope, route } => {
                (format!("this token lacks the scope {scope:?}, which {route} needs"), None, vec![])
            }
            ApiError::QuotaExceeded { quota, limit } => {
                (format!("the tenant's quota {quota} is {limit}, and this request would go past it"), None, vec![])
            }
            ApiError::RateLimited { retry_after, why } => (format!("{why}; retry after {retry_after} s"), None, vec![]),
        };
        ErrorResponse { error: ErrorObject { code: self.code(), message, field, jobs } }
    }
}

impl From<ArbiterError> for ApiError {
    fn from(e: ArbiterError) -> ApiError {
        ApiError::Arbiter(e)
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::Full(why) => ApiError::StorageFull { retry_after: STORAGE_FULL_RETRY_AFTER_SECONDS, why },
            StoreError::Failed(why) => ApiError::Storage(why),
        }
    }
}

impl From<BytesRejection> for ApiError {
    fn from(rejection: BytesRejection) -> ApiError {
        // axum's own length limit (DefaultBodyLimit) answers 413; anything else is a broken body.
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge { limit: 0 }
        } else if timed_out(&rejection) {
            ApiError::malformed("the request body stopped arriving: nothing came for --body-idle-seconds".to_string())
        } else {
            ApiError::malformed(format!("cannot read the request body: {}", rejection.body_text()))
        }
    }
}

/// Whether the body's read failed because it went quiet (`Config::body_idle_seconds`).
fn timed_out(rejection: &BytesRejection) -> bool {
    let first: &(dyn std::error::Error + 'static) = rejection;
    std::iter::successors(Some(first), |e| e.source()).any(|e| e.is::<tower_http::timeout::TimeoutError>())
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> ApiError {
        ApiError::malformed(format!("bad path parameter: {}", rejection.body_text()))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let code = self.code().as_str();
        let body = serde_json::to_vec(&self.body()).unwrap_or_else(|_| b"{\"error\":{}}".to_vec());
        let mut response =
            (status, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response();
        match self {
            ApiError::Overloaded { retry_after }
            | ApiError::RateLimited { retry_after, .. }
            | ApiError::StorageFull { retry_after, .. } => {
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after.max(1)));
            }
            ApiError::Unauthorized { invalid, .. } => {
                // RFC 6750: no error code when no credentials were sent.
                let challenge = if invalid { "Bearer error=\"invalid_token\"" } else { "Bearer" };
                response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
            }
            _ => {}
        }
        response.extensions_mut().insert(ErrorTag(code));
        response
    }
}
