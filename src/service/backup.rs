//! `GET /v1/admin/backup`: a consistent snapshot of the whole database, while the server runs.
//! The server holds its file exclusively, so no other process can copy it; the store copies it
//! with SQLite's online backup into a temporary file (in `TMPDIR`, readable by the owner only),
//! which is opened, unlinked and streamed: nothing is left behind once the answer is sent, or if
//! the client goes away. A server killed mid-copy leaves its file; the next one to start removes it.

use super::error::{ApiError, ApiResult, ErrorResponse};
use super::limits::blocking;
use super::state::SharedState;
use super::store::Store;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// The media type of an SQLite database file.
pub const CONTENT_TYPE: &str = "application/vnd.sqlite3";

static BACKUPS: AtomicU64 = AtomicU64::new(0);

/// How every temporary copy's name starts: `arbiter-backup-<pid>-<n>.db`.
const TEMP_PREFIX: &str = "arbiter-backup-";

/// What SQLite may put beside a copy while it writes it.
const SIDE_FILES: [&str; 3] = ["-journal", "-wal", "-shm"];

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
    let (file, bytes) = blocking(move || copy_database(&store, &std::env::temp_dir())).await??;
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

/// Copies the database into a new file of `dir` and opens it, with its size. The name is gone
/// when this returns; the open file stays readable (on Unix) until it is streamed.
fn copy_database(store: &Store, dir: &Path) -> ApiResult<(File, u64)> {
    let temp = Temp(temp_path(dir));
    // A file left by a process that had this pid before is not ours to append to.
    let _ = std::fs::remove_file(&temp.0);
    // Made before SQLite opens it, so the copy of every session is the owner's alone from its
    // first byte (SQLite gives its journal the same mode); SQLite would make it world-readable.
    create_private(&temp.0)
        .map_err(|e| ApiError::Storage(format!("cannot create the backup copy {}: {e}", temp.0.display())))?;
    store.backup_to(&temp.0).map_err(|e| {
        // The store itself has room; the copy's directory may not: not a `storage_full`.
        ApiError::Storage(format!("cannot copy the database to {}: {e}", temp.0.display()))
    })?;
    let file = File::open(&temp.0).map_err(|e| io_error(&temp.0, e))?;
    let bytes = file.metadata().map_err(|e| io_error(&temp.0, e))?.len();
    Ok((file, bytes))
}

/// A new path in `dir`.
fn temp_path(dir: &Path) -> PathBuf {
    let n = BACKUPS.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{TEMP_PREFIX}{}-{n}.db", std::process::id()))
}

/// Creates the empty file `path`, readable and writable by its owner only; never one that exists
/// (nor through a link another user left in a shared directory).
fn create_private(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map(drop)
}

fn io_error(path: &Path, e: std::io::Error) -> ApiError {
    ApiError::Storage(format!("cannot read the backup copy {}: {e}", path.display()))
}

/// Removes the copies (and their journals) that backups left in `TMPDIR` when their server was
/// killed mid-copy: files named as this module names them whose process no longer runs, or
/// whose pid is this process's (a pid used again, as pid 1 in every container; this server has
/// made no copy yet). Called once at start; returns the number of files removed.
pub fn remove_leftovers() -> usize {
    let dir = std::env::temp_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(copy_pid) else { continue };
        if pid != std::process::id() && process_runs(pid) {
            continue;
        }
        // Only plain files: a copy is never a directory or a link.
        if entry.file_type().is_ok_and(|t| t.is_file()) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The pid in the name of a temporary copy (`arbiter-backup-<pid>-<n>.db`) or of a file SQLite
/// put beside one; `None` for any other name.
fn copy_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(TEMP_PREFIX)?;
    let copy = std::iter::once("")
        .chain(SIDE_FILES)
        .find_map(|side| rest.strip_suffix(side).and_then(|r| r.strip_suffix(".db")))?;
    let (pid, n) = copy.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(pid) && digits(n)) {
        return None;
    }
    pid.parse().ok()
}

/// Whether a process with this id exists (another user's too: signalling it is refused, not
/// unknown). Where it cannot be told, it is taken to run, so nothing is removed.
fn process_runs(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
        if pid <= 0 {
            return false;
        }
        // SAFETY: signal 0 delivers nothing; `kill` only checks that the process exists.
        let sent = unsafe { libc::kill(pid, 0) };
        sent == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// A temporary file, removed when dropped (with what SQLite may have left beside it).
struct Temp(PathBuf);

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        for suffix in SIDE_FILES {
            let mut side = self.0.clone().into_os_string();
            side.push(suffix);
            let _ = std::fs::remove_file(side);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("arbiter-backup-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    #[cfg(unix)]
    fn the_copy_is_the_owners_alone_and_leaves_no_name_behind() {
        use std::os::unix::fs::PermissionsExt;
        let dir = fresh_dir("mode");
        let (store, _) = Store::open(&dir.join("arbiter.db"), None).unwrap();
        let copies = dir.join("copies");
        std::fs::create_dir(&copies).unwrap();
        let (file, bytes) = copy_database(&store, &copies).unwrap();
        assert!(bytes > 0);
        assert_eq!(file.metadata().unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(&copies).unwrap().count(), 0, "the copy's name is removed");
        drop((file, store));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_names_of_copies_and_their_journals_are_leftovers() {
        assert_eq!(copy_pid("arbiter-backup-4242-0.db"), Some(4242));
        assert_eq!(copy_pid("arbiter-backup-4242-17.db-journal"), Some(4242));
        assert_eq!(copy_pid("arbiter-backup-1-3.db-wal"), Some(1));
        assert_eq!(copy_pid("arbiter-backup-1-3.db-shm"), Some(1));
        for other in [
            "arbiter-backup-4242-0",
            "arbiter-backup-4242-0.db.bak",
            "arbiter-backup-4242.db",
            "arbiter-backup-x-0.db",
            "arbiter-backup--0.db",
            "arbiter-backup-4242-0-1.db",
            "arbiter-backup-test-mode-4242",
            "my-arbiter-backup-4242-0.db",
            "arbiter-backup-99999999999-0.db",
        ] {
            assert_eq!(copy_pid(other), None, "{other}");
        }
    }

    #[test]
    #[cfg(unix)]
    fn this_process_runs_and_a_reaped_child_does_not() {
        assert!(process_runs(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_runs(pid));
    }
}
