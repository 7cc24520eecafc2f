//! What a failed store operation means for its caller: no room (the disk, or the cap
//! `--db-max-bytes` sets), which a later retry can get past once space returns, or anything else.

use rusqlite::{Connection, ErrorCode};
use std::fmt;

/// A store operation that failed. Either way nothing of it was written: SQLite rolls the
/// statement (and, outside an explicit transaction, the transaction) back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// No room: SQLite's `SQLITE_FULL` (the disk, or the database's `PRAGMA max_page_count`), or
    /// an I/O error whose operating-system cause was `ENOSPC` or `EDQUOT`.
    Full(String),
    /// Anything else: a damaged file, a failing disk, a bug.
    Failed(String),
}

impl StoreError {
    pub fn failed(message: impl Into<String>) -> StoreError {
        StoreError::Failed(message.into())
    }

    pub fn is_full(&self) -> bool {
        matches!(self, StoreError::Full(_))
    }

    pub fn message(&self) -> &str {
        match self {
            StoreError::Full(message) | StoreError::Failed(message) => message,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for StoreError {}

/// By SQLite's result code alone (where the failing connection is not at hand).
impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        match e.sqlite_error_code() {
            Some(ErrorCode::DiskFull) => StoreError::Full(e.to_string()),
            _ => StoreError::Failed(e.to_string()),
        }
    }
}

/// Classifies `e`, an error of the last operation on `conn`, also by the operating system's
/// error behind an I/O error (SQLite maps `ENOSPC` on `write` to `SQLITE_FULL` itself, but not
/// on `fsync`, `ftruncate` or an `EDQUOT`). Call it before `conn` runs anything else.
pub(crate) fn classify(conn: &Connection, e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(ErrorCode::SystemIoFailure) {
        let errno = system_errno(conn);
        if no_space(errno) {
            let os = std::io::Error::from_raw_os_error(errno);
            return StoreError::Full(format!("{e} ({os})"));
        }
    }
    StoreError::from(e)
}

/// Whether an `errno` says the disk (or the user's quota on it) is full.
pub(crate) fn no_space(errno: i32) -> bool {
    errno == libc::ENOSPC || errno == libc::EDQUOT
}

/// The `errno` of the last failed system call SQLite made for `conn` (0 if none).
fn system_errno(conn: &Connection) -> i32 {
    // SAFETY: `conn` is open for the whole call and used by this thread only (the store holds it
    // behind a mutex); `sqlite3_system_errno` only reads a field of the handle.
    unsafe { rusqlite::ffi::sqlite3_system_errno(conn.handle()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_is_told_apart_from_other_failures() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (x TEXT); PRAGMA max_page_count = 2;").unwrap();
        let e = conn.execute("INSERT INTO t VALUES (?1)", [&"x".repeat(20_000)]).unwrap_err();
        let e = classify(&conn, e);
        assert!(e.is_full(), "{e:?}");
        let e = conn.execute("INSERT INTO nope VALUES (1)", []).unwrap_err();
        assert!(!classify(&conn, e).is_full());
        assert!(no_space(libc::ENOSPC) && no_space(libc::EDQUOT) && !no_space(libc::EIO) && !no_space(0));
    }
}
