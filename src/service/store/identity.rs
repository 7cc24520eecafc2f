//! Whose file this is, decided before anything is written to it: Arbiter marks its databases with
//! `PRAGMA application_id`; an SQLite database of another application is refused with what it is
//! instead of being taken over.

use super::{opening_error, StoreError, StoreResult};
use rusqlite::Connection;
use std::path::Path;

/// Arbiter's `application_id`: "Arbt" in ASCII.
pub const APPLICATION_ID: i32 = 0x4172_6274;

/// The tables of schema version 1, sorted: what an Arbiter that predates the mark created.
const UNMARKED_TABLES: [&str; 2] = ["events", "sessions"];

/// What the file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// Nothing yet (a new or empty file): Arbiter creates its tables and the mark.
    Empty,
    /// Arbiter's tables without the mark (written before there was one): it gets the mark.
    Unmarked,
    /// Marked as Arbiter's.
    Arbiter,
}

/// Reads the mark and the table names; refuses another application's database. This is the first
/// read of the file, so a file that is not a database, or one held by another server, fails here.
pub fn identify(conn: &Connection, path: &Path) -> StoreResult<Identity> {
    let read = || -> rusqlite::Result<(i32, Vec<String>)> {
        let id: i32 = conn.pragma_query_value(None, "application_id", |row| row.get(0))?;
        let tables = conn
            .prepare(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!' \
                 ORDER BY name",
            )?
            .query_map([], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok((id, tables))
    };
    let (id, tables) = read().map_err(|e| opening_error(path, e))?;
    let foreign = |what: String| {
        StoreError::failed(format!(
            "{} is an SQLite database of another application ({what}), not an Arbiter session database; \
             point --db at another file",
            path.display()
        ))
    };
    match id {
        APPLICATION_ID => Ok(Identity::Arbiter),
        0 if tables.is_empty() => Ok(Identity::Empty),
        0 if tables == UNMARKED_TABLES => Ok(Identity::Unmarked),
        0 => Err(foreign(format!("tables {} and no Arbiter application_id", tables.join(", ")))),
        other => Err(foreign(format!("application_id {other:#010x}, Arbiter's is {APPLICATION_ID:#010x}"))),
    }
}
