//! Readable 413s. A server that refuses a body and closes the connection at once, while the
//! client is still sending it, makes the client's kernel see a reset, and the client often never
//! reads the answer. So:
//!
//! - a request whose `Content-Length` is over `--max-body-bytes` gets 413 at once, before any of
//!   the body is read. With `Expect: 100-continue` (curl sends it for large bodies) hyper has not
//!   sent `100 Continue`, and nothing polls the body, so it never does: the client gets the 413
//!   and does not send the body. Without it, the body is drained (below) while the answer goes
//!   out;
//! - every other request body is watched: when the handler drops it unread (a chunked body that
//!   crossed the limit while streaming, or a refusal before reading), the rest is drained;
//! - every 413 says `Connection: close`.
//!
//! Draining reads and discards at most [`DRAIN_BYTES`] for at most [`DRAIN_TIME`], with at most
//! [`MAX_DRAINS`] at once server-wide; hyper keeps reading the socket while the body is held, and
//! closes the connection when it is dropped before its end. A body drained to its end leaves the
//! connection as reusable as any other (but a 413 closes it anyway).

use super::error::ApiError;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::header::{CONNECTION, CONTENT_LENGTH, EXPECT};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// Most bytes of a refused body read and thrown away before the connection is closed.
pub const DRAIN_BYTES: u64 = 4 << 20;
/// Longest a refused body is drained.
pub const DRAIN_TIME: Duration = Duration::from_secs(5);
/// Most bodies drained at once; past that, the connection is closed without draining.
pub const MAX_DRAINS: usize = 64;

static DRAINING: AtomicUsize = AtomicUsize::new(0);

/// The middleware: `from_fn_with_state(max_body_bytes, refuse_oversized)`.
pub async fn refuse_oversized(State(limit): State<usize>, request: Request, next: Next) -> Response {
    let expects_continue = expects_continue(request.headers());
    let (parts, body) = request.into_parts();
    if declared_length(&parts.headers).is_some_and(|n| n > limit as u64) {
        if !expects_continue {
            drain(body);
        }
        return closing(ApiError::PayloadTooLarge { limit }.into_response());
    }
    let body = Body::new(Watched { inner: Some(body), expects_continue, polled: false, ended: false });
    let response = next.run(Request::from_parts(parts, body)).await;
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE {
        closing(response)
    } else {
        response
    }
}

fn expects_continue(headers: &HeaderMap) -> bool {
    headers.get(EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Reads and discards what is left of `body`, within the bounds, on its own task.
fn drain(mut body: Body) {
    if body.is_end_stream() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    if DRAINING.fetch_add(1, Ordering::AcqRel) >= MAX_DRAINS {
        DRAINING.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    runtime.spawn(async move {
        let discard = async {
            let mut read = 0u64;
            while read <= DRAIN_BYTES {
                match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                    Some(Ok(frame)) => read += frame.data_ref().map_or(0, |d| d.len() as u64),
                    Some(Err(_)) | None => return,
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_TIME, discard).await;
        DRAINING.fetch_sub(1, Ordering::AcqRel);
    });
}

/// A request body that drains what is left of itself when dropped unread, unless the client is
/// still waiting for `100 Continue` (then it has sent nothing, and must not be told to).
struct Watched {
    inner: Option<Body>,
    expects_continue: bool,
    /// Someone asked for the body: hyper has sent `100 Continue` if it was expected.
    polled: bool,
    ended: bool,
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        self.polled = true;
        let Some(inner) = self.inner.as_mut() else { return Poll::Ready(None) };
        let frame = Pin::new(inner).poll_frame(cx);
        if matches!(frame, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.ended = true;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.as_ref().map_or_else(|| SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let Some(body) = self.inner.take() else { return };
        if self.ended || (self.expects_continue && !self.polled) {
            return;
        }
        drain(body);
    }
}
