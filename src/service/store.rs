//! Durable sessions: one SQLite database (WAL, `synchronous=FULL`) holding each session's creation
//! spec and its accepted events in order. A write returns only once it is on disk; nothing else.
//!
//! Opening checks the file before anything is written to it: that it is SQLite and Arbiter's
//! ([`identity`]), not held by another server, not of a newer schema, and not damaged
//! ([`integrity`]). A failed write is told apart as no room or anything else ([`fault`]).

mod fault;
mod identity;
mod integrity;
#[cfg(test)]
mod tests;

pub use fault::StoreError;
pub use identity::APPLICATION_ID;

use identity::Identity;
use rusqlite::{params, Connection, ErrorCode, OpenFlags};
use std::fmt;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// The schema this code reads and writes (`PRAGMA user_version`). Version 2 added each
/// session's owner (tenant) and creating token, and each event's token.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id         TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    spec       TEXT NOT NULL,
    owner      TEXT,
    created_by TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    at         REAL NOT NULL,
    payload    TEXT NOT NULL,
    token_id   TEXT,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
";

/// Version 1 → 2: sessions and events stored before have no owner and no token (NULL), so with
/// tokens configured only `admin` sees those sessions.
const MIGRATE_1_TO_2: &str = "
ALTER TABLE sessions ADD COLUMN owner TEXT;
ALTER TABLE sessions ADD COLUMN created_by TEXT;
ALTER TABLE events ADD COLUMN token_id TEXT;
";

pub type StoreResult<T> = Result<T, StoreError>;

/// A failure while opening the database at `path`, said in terms of the file.
fn opening_error(path: &Path, e: rusqlite::Error) -> StoreError {
    let file = path.display();
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => StoreError::failed(format!(
            "{file} is in use by another process (another arbiter serve?); one server per database file: {e}"
        )),
        Some(ErrorCode::NotADatabase) => StoreError::failed(format!(
            "{file} is not an SQLite database (random bytes, or an overwritten header); point --db at another \
             file, or restore it from a backup (docs/service.md, \"Backups\"): {e}"
        )),
        Some(ErrorCode::DatabaseCorrupt) => match std::fs::metadata(path).map(|m| m.len()) {
            // Shorter than the smallest page: SQLite sees a header cut short as damage.
            Ok(bytes @ 1..MIN_PAGE_BYTES) => StoreError::failed(format!(
                "{file} is truncated ({bytes} bytes, less than one database page): not a whole SQLite database; \
                 point --db at another file, or restore it from a backup (docs/service.md, \"Backups\"): {e}"
            )),
            _ => StoreError::failed(format!(
                "{file} is damaged; restore it from a backup (docs/service.md, \"Backups\"): {e}"
            )),
        },
        Some(ErrorCode::DiskFull) => StoreError::Full(format!(
            "the disk holding {file}, or its --db-max-bytes, is full; free space or raise the limit: {e}"
        )),
        _ => StoreError::failed(format!("cannot open the session database {file}: {e}")),
    }
}

/// SQLite's smallest page size.
const MIN_PAGE_BYTES: u64 = 512;

/// What [`Store::open`] found and did, for the start-up log.
#[derive(Debug, Clone, Copy)]
pub struct Opened {
    /// `PRAGMA quick_check`'s time.
    pub checked_in: Duration,
    /// The database predated Arbiter's `application_id` and was marked now.
    pub marked: bool,
    /// The database's size: its pages (free ones included) times the page size.
    pub bytes: u64,
    /// The cap in force: `--db-max-bytes` rounded down to whole pages, or the database's size if
    /// that is larger (SQLite never lowers the cap below it; writes that need a new page then
    /// fail until deletions free some).
    pub max_bytes: Option<u64>,
}

/// A session as stored: its creation spec and its events, oldest first.
#[derive(Debug, Clone)]
pub struct StoredSession {
    pub id: String,
    pub created_at: f64,
    pub spec: String,
    /// Who it belongs to and who created it: a tenant and a token id (none without tokens).
    pub owner: Owner,
    pub events: Vec<StoredEvent>,
}

/// A session's tenant and the id of the token that created it; both `None` when it was created
/// without tokens (or before they were recorded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owner {
    pub tenant: Option<String>,
    pub created_by: Option<String>,
}

/// One event as the audit shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    pub seq: i64,
    pub kind: String,
    pub at: f64,
    pub token_id: Option<String>,
}

#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub seq: i64,
    pub payload: String,
}

/// The database, behind one connection (SQLite serializes writers anyway).
pub struct Store {
    conn: Mutex<Connection>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Store")
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path`, or an in-memory one for `:memory:`;
    /// `max_bytes` caps its size (`--db-max-bytes`). Refuses a file that is not SQLite, another
    /// application's database, one of a newer schema, a damaged one, and one another process
    /// holds: the file is locked exclusively from here until the process exits.
    pub fn open(path: &Path, max_bytes: Option<u64>) -> StoreResult<(Store, Opened)> {
        let describe = |e: rusqlite::Error| opening_error(path, e);
        let conn = Store::connect(path).map_err(describe)?;
        // Reads only, until the file is known to be Arbiter's and sound.
        let identity = identity::identify(&conn, path)?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0)).map_err(describe)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::failed(format!(
                "{} has schema version {version}; this arbiter knows up to {SCHEMA_VERSION}: use a newer arbiter",
                path.display()
            )));
        }
        let checked_in = integrity::quick_check(&conn, path)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(describe)?;
        conn.pragma_update(None, "synchronous", "FULL").map_err(describe)?;
        let page_size: u64 = conn.pragma_query_value(None, "page_size", |row| row.get(0)).map_err(describe)?;
        let page_size = page_size.max(1);
        let max_pages: Option<u64> = match max_bytes {
            Some(bytes) => {
                let pages = (bytes / page_size).max(1);
                Some(conn.pragma_update_and_check(None, "max_page_count", pages, |row| row.get(0)).map_err(describe)?)
            }
            None => None,
        };
        // A new database gets the current schema; an older one is migrated, in one transaction
        // with the mark.
        let steps = match version {
            0 => SCHEMA,
            1 => MIGRATE_1_TO_2,
            _ => "",
        };
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {steps} PRAGMA application_id = {APPLICATION_ID}; \
             PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))
        .map_err(describe)?;
        let pages: u64 = conn.pragma_query_value(None, "page_count", |row| row.get(0)).map_err(describe)?;
        let opened = Opened {
            checked_in,
            marked: identity == Identity::Unmarked,
            bytes: pages * page_size,
            max_bytes: max_pages.map(|n| n * page_size),
        };
        Ok((Store { conn: Mutex::new(conn) }, opened))
    }

    /// A connection with Arbiter's settings that has not touched the file yet.
    fn connect(path: &Path) -> rusqlite::Result<Connection> {
        let conn = if path.as_os_str() == ":memory:" {
            Connection::open_in_memory()?
        } else {
            let flags =
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            Connection::open_with_flags(path, flags)?
        };
        conn.busy_timeout(Duration::from_millis(500))?;
        // Exclusive locking: locks are kept until the process exits (the OS drops them on a
        // crash), so two servers never replay and append to one file. The first read of a WAL
        // database takes the exclusive lock; a new file gets it when `open` writes the schema.
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(conn)
    }

    /// Runs `op` on the connection; its error is classified before anything else uses it.
    fn with<T>(&self, op: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> StoreResult<T> {
        let mut conn = self.conn();
        op(&mut conn).map_err(|e| fault::classify(&conn, e))
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable: SQLite rolls back.
        self.conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a new session; durable when it returns.
    pub fn create_session(&self, id: &str, created_at: f64, spec: &str, owner: &Owner) -> StoreResult<()> {
        self.with(|conn| {
            conn.execute(
                "INSERT INTO sessions (id, created_at, spec, owner, created_by) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, created_at, spec, owner.tenant, owner.created_by],
            )
        })?;
        Ok(())
    }

    /// Appends event `seq` of a session, made with token `token_id` (none without tokens);
    /// durable when it returns.
    pub fn append(
        &self,
        id: &str,
        seq: i64,
        kind: &str,
        at: f64,
        payload: &str,
        token_id: Option<&str>,
    ) -> StoreResult<()> {
        self.with(|conn| {
            conn.execute(
                "INSERT INTO events (session_id, seq, kind, at, payload, token_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, seq, kind, at, payload, token_id],
            )
        })?;
        Ok(())
    }

    /// The last `n` events of session `id`, oldest first, without their payloads.
    pub fn audit(&self, id: &str, n: u32) -> StoreResult<Vec<EventRecord>> {
        let conn = self.conn();
        let mut statement = conn
            .prepare("SELECT seq, kind, at, token_id FROM events WHERE session_id = ?1 ORDER BY seq DESC LIMIT ?2")?;
        let mut events: Vec<EventRecord> = statement
            .query_map(params![id, n], |row| {
                Ok(EventRecord { seq: row.get(0)?, kind: row.get(1)?, at: row.get(2)?, token_id: row.get(3)? })
            })?
            .collect::<Result<_, _>>()?;
        events.reverse();
        Ok(events)
    }

    /// Deletes a session and its events; durable when it returns. `false` if there was none.
    pub fn delete_session(&self, id: &str) -> StoreResult<bool> {
        self.with(|conn| {
            let tx = conn.transaction()?;
            tx.execute("DELETE FROM events WHERE session_id = ?1", params![id])?;
            let deleted = tx.execute("DELETE FROM sessions WHERE id = ?1", params![id])?;
            tx.commit()?;
            Ok(deleted > 0)
        })
    }

    /// Every session with its events, sessions in creation order, events in order.
    pub fn load(&self) -> StoreResult<Vec<StoredSession>> {
        let conn = self.conn();
        let mut sessions: Vec<StoredSession> = conn
            .prepare("SELECT id, created_at, spec, owner, created_by FROM sessions ORDER BY created_at, id")?
            .query_map([], |row| {
                Ok(StoredSession {
                    id: row.get(0)?,
                    created_at: row.get(1)?,
                    spec: row.get(2)?,
                    owner: Owner { tenant: row.get(3)?, created_by: row.get(4)? },
                    events: Vec::new(),
                })
            })?
            .collect::<Result<_, _>>()?;
        let index: std::collections::HashMap<String, usize> =
            sessions.iter().enumerate().map(|(i, s)| (s.id.clone(), i)).collect();
        let mut statement = conn.prepare("SELECT session_id, seq, payload FROM events ORDER BY session_id, seq")?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let id: String = row.get(0)?;
            if let Some(&i) = index.get(&id) {
                sessions[i].events.push(StoredEvent { seq: row.get(1)?, payload: row.get(2)? });
            }
        }
        Ok(sessions)
    }

    /// Writes a consistent copy of the whole database to the new file `dest` with SQLite's online
    /// backup, through this connection (the only one the exclusive lock allows); writes wait
    /// until it is done.
    pub fn backup_to(&self, dest: &Path) -> StoreResult<()> {
        self.conn().backup(rusqlite::MAIN_DB, dest, None)?;
        Ok(())
    }
}
