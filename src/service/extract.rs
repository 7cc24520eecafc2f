//! Extractors that refuse with the contract's error object instead of axum's plain-text
//! rejections: the request body as UTF-8 text within the size limit, and path parameters.

use super::error::ApiError;
use super::state::SharedState;
use crate::contract::ignored::IgnoredFields;
use crate::contract::json;
use crate::error::{ArbiterError, ErrorCode};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::header::CONTENT_LENGTH;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// The request body, read whole and checked to be UTF-8. The content type is not checked, so
/// `curl -d @request.json` works as well as `-H 'Content-Type: application/json'`.
#[derive(Debug, Clone)]
pub struct Body(Bytes);

impl Body {
    /// The body as text, without a leading byte-order mark (a file saved by some editors starts
    /// with one): every handler, and whatever a session stores of the body, sees the document.
    pub fn text(&self) -> Result<&str, ApiError> {
        let text = std::str::from_utf8(&self.0)
            .map_err(|e| ApiError::malformed(format!("the request body is not UTF-8: {e}")))?;
        Ok(json::without_bom(text))
    }

    pub fn into_bytes(self) -> Bytes {
        self.0
    }
}

impl FromRequest<SharedState> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &SharedState) -> Result<Body, ApiError> {
        let limit = state.config.max_body_bytes;
        // Refuse a declared oversize body before reading any of it.
        let declared = req.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(ApiError::PayloadTooLarge { limit });
        }
        match Bytes::from_request(req, state).await {
            Ok(bytes) => Ok(Body(bytes)),
            Err(rejection) => match ApiError::from(rejection) {
                ApiError::PayloadTooLarge { .. } => Err(ApiError::PayloadTooLarge { limit }),
                other => Err(other),
            },
        }
    }
}

/// `Path<T>` with the contract's error object on rejection.
#[derive(Debug, Clone)]
pub struct Params<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Params<T>, ApiError> {
        let Path(value) = Path::<T>::from_request_parts(parts, state).await?;
        Ok(Params(value))
    }
}

/// `Query<T>` with the contract's error object on rejection (`malformed_request`).
#[derive(Debug, Clone)]
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    /// Parsed as axum's `Query` parses it, with the parameter that failed as the error's field.
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<QueryParams<T>, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let parameters = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(parameters).map(QueryParams).map_err(|e| {
            let (path, inner) = (e.path().to_string(), e.inner().to_string());
            let message = format!("bad query string: {inner}");
            // A parameter given twice fails at the root, named in serde's message.
            let twice = inner.strip_prefix("duplicate field `").and_then(|rest| rest.strip_suffix('`'));
            match (path.as_str(), twice) {
                (".", None) => ApiError::malformed(message),
                (".", Some(field)) | (field, _) => {
                    ApiError::Arbiter(ArbiterError::at(ErrorCode::MalformedRequest, field, message))
                }
            }
        })
    }
}

/// Parses a JSON object from `text` into `T`; a syntax or type error names the field path, and
/// so does an array where an object is expected (`json::read`).
pub fn parse_object<T: DeserializeOwned>(text: &str) -> Result<T, ApiError> {
    expect_object(text)?;
    json::read(text).map_err(|e| ApiError::Arbiter(e.into_error("malformed request: ")))
}

/// [`parse_object`], and the fields of `text` that `T` does not know (`json::read_noting`).
pub fn parse_object_noting<T: DeserializeOwned>(text: &str) -> Result<(T, IgnoredFields), ApiError> {
    expect_object(text)?;
    json::read_noting(text).map_err(|e| ApiError::Arbiter(e.into_error("malformed request: ")))
}

/// [`parse_object`] for a body a session stores and replays (`json::read_stored`): a body taken
/// before an array was refused where an object is expected still replays. A live body is read
/// by `parse_object` before it is stored.
pub fn parse_stored<T: DeserializeOwned>(text: &str) -> Result<T, ApiError> {
    expect_object(text)?;
    json::read_stored(text).map_err(|e| ApiError::Arbiter(e.into_error("malformed request: ")))
}

/// Refuses a body that is not a JSON object: an array would be read as a struct's fields in
/// order (serde's sequence form).
pub fn expect_object(text: &str) -> Result<(), ApiError> {
    match text.trim_start().starts_with('{') {
        true => Ok(()),
        false => Err(ApiError::malformed("malformed request: expected a JSON object")),
    }
}
