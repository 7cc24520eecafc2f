//! `GET /v1/admin/backup`: a consistent snapshot of the whole database, while the server runs.
//! The server holds its file exclusively, so no other process can copy it; the store copies it
//! with SQLite's online backup into a temporary file (in `TMPDIR`), which is opened, unlinked and
//! streamed: nothing is left behind once the answer is sent, or if the client goes away.

use super::error::{ApiError, ApiResult, ErrorResponse};
use super::limits::blocking;
use super::state::SharedState;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// The media type of an SQLite database file.
pub const CONTENT_TYPE: &str = "application/vnd.sqlite3";

static BACKUPS: AtomicU64 = AtomicU64::new(0);

/// The answer's body in the OpenAPI document: an SQLite database file, as bytes.
pub struct DatabaseFile;

impl PartialSchema for DatabaseFile {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .description(Some("An SQLite database file"))
            .into()
    }
}

impl ToSchema for DatabaseFile {}

/// Download a consistent snapshot of the session database (SQLite's online backup). Restore it
/// by stopping the server, replacing its `--db` file (and removing any `-wal` file beside it) with
/// the snapshot, and starting it again.
#[utoipa::path(get, path = "/v1/admin/backup", tag = "admin",
    responses(
        (status = 200, description = "The database as one SQLite file; writes wait while it is copied",
            content_type = "application/vnd.sqlite3", body = inline(DatabaseFile),
            headers(("Content-Disposition" = String, description = "attachment; filename=\"arbiter-<unix seconds>.db\""))),
        (status = 500, description = "The copy failed (the message says why: no room in `TMPDIR`, say)", body = ErrorResponse),
    ))]
pub async fn backup(State(state): State<SharedState>) -> ApiResult<Response> {
    let store = state.store.clone();
    let (file, bytes) = blocking(move || -> ApiResult<(std::fs::File, u64)> {
        let temp = Temp(temp_path());
        // A file left by a process that had this pid before is not ours to append to.
        let _ = std::fs::remove_file(&temp.0);
        store.backup_to(&temp.0).map_err(|e| {
            // The store itself has room; the copy's directory may not: not a `storage_full`.
            ApiError::Storage(format!("cannot copy the database to {}: {e}", temp.0.display()))
        })?;
        let file = std::fs::File::open(&temp.0).map_err(|e| io_error(&temp.0, e))?;
        let bytes = file.metadata().map_err(|e| io_error(&temp.0, e))?.len();
        Ok((file, bytes))
        // `temp` is removed here; the open file stays readable (on Unix) until it is streamed.
    })
    .await??;
    let seconds = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let disposition = format!("attachment; filename=\"arbiter-{seconds}.db\"");
    let stream = tokio_util::io::ReaderStream::new(tokio::fs::File::from_std(file));
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes));
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// A new path in the temporary directory.
fn temp_path() -> PathBuf {
    let n = BACKUPS.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("arbiter-backup-{}-{n}.db", std::process::id()))
}

fn io_error(path: &std::path::Path, e: std::io::Error) -> ApiError {
    ApiError::Storage(format!("cannot read the backup copy {}: {e}", path.display()))
}

/// A temporary file, removed when dropped (with what SQLite may have left beside it).
struct Temp(PathBuf);

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        for suffix in ["-journal", "-wal", "-shm"] {
            let mut side = self.0.clone().into_os_string();
            side.push(suffix);
            let _ = std::fs::remove_file(side);
        }
    }
}
