//! The start-up check of the file's structure: `PRAGMA quick_check` reads every page of the
//! database once (b-tree structure, record formats, free list), skipping the index-content checks
//! of `integrity_check`. Its cost grows with the file: docs/service.md gives it measured.

use super::{opening_error, StoreError, StoreResult};
use rusqlite::Connection;
use std::path::Path;
use std::time::{Duration, Instant};

/// Problems listed at most (the pragma stops after this many).
const MAX_PROBLEMS: u32 = 10;

/// Checks the database; returns how long it took, or what is damaged.
pub fn quick_check(conn: &Connection, path: &Path) -> StoreResult<Duration> {
    let start = Instant::now();
    let problems = conn
        .prepare(&format!("PRAGMA quick_check({MAX_PROBLEMS})"))
        .and_then(|mut statement| statement.query_map([], |row| row.get(0))?.collect::<Result<Vec<String>, _>>())
        .map_err(|e| opening_error(path, e))?;
    if problems.len() == 1 && problems[0] == "ok" {
        return Ok(start.elapsed());
    }
    Err(StoreError::failed(format!(
        "{} is damaged (PRAGMA quick_check found: {}); restore it from a backup (docs/service.md, \"Backups\")",
        path.display(),
        problems.join("; ")
    )))
}
