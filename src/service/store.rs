//! Durable sessions: one SQLite database (WAL, `synchronous=FULL`) holding each session's creation
//! spec and its accepted events in order. A write returns only once it is on disk; nothing else.

use rusqlite::{params, Connection, OpenFlags};
use std::fmt;
use std::path::Path;
use std::sync::Mutex;

/// The schema this code reads and writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id         TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    spec       TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    at         REAL NOT NULL,
    payload    TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError(e.to_string())
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A session as stored: its creation spec and its events, oldest first.
#[derive(Debug, Clone)]
pub struct StoredSession {
    pub id: String,
    pub created_at: f64,
    pub spec: String,
    pub events: Vec<StoredEvent>,
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
    /// Opens (creating if needed) the database at `path`, or an in-memory one for `:memory:`.
    /// The file is held exclusively: a second server on the same file is refused at start.
    pub fn open(path: &Path) -> StoreResult<Store> {
        let describe = |e: rusqlite::Error| match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked) => {
                StoreError(format!("{} is in use by another process (another arbiter serve?): {e}", path.display()))
            }
            _ => StoreError(format!("cannot open the session database {}: {e}", path.display())),
        };
        let conn = Store::connect(path).map_err(describe)?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0)).map_err(describe)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError(format!(
                "{} has schema version {version}; this arbiter knows up to {SCHEMA_VERSION}: use a newer arbiter",
                path.display()
            )));
        }
        conn.execute_batch(&format!("BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"))
            .map_err(describe)?;
        Ok(Store { conn: Mutex::new(conn) })
    }

    fn connect(path: &Path) -> rusqlite::Result<Connection> {
        let conn = if path.as_os_str() == ":memory:" {
            Connection::open_in_memory()?
        } else {
            let flags =
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            Connection::open_with_flags(path, flags)?
        };
        conn.busy_timeout(std::time::Duration::from_millis(500))?;
        // Exclusive locking: the lock taken by the first write is kept until the process exits
        // (the OS drops it on a crash), so two servers never replay and append to one file.
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(conn)
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable: SQLite rolls back.
        self.conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a new session; durable when it returns.
    pub fn create_session(&self, id: &str, created_at: f64, spec: &str) -> StoreResult<()> {
        self.conn().execute(
            "INSERT INTO sessions (id, created_at, spec) VALUES (?1, ?2, ?3)",
            params![id, created_at, spec],
        )?;
        Ok(())
    }

    /// Appends event `seq` of a session; durable when it returns.
    pub fn append(&self, id: &str, seq: i64, kind: &str, at: f64, payload: &str) -> StoreResult<()> {
        self.conn().execute(
            "INSERT INTO events (session_id, seq, kind, at, payload) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, seq, kind, at, payload],
        )?;
        Ok(())
    }

    /// Deletes a session and its events; durable when it returns. `false` if there was none.
    pub fn delete_session(&self, id: &str) -> StoreResult<bool> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute("DELETE FROM events WHERE session_id = ?1", params![id])?;
        let deleted = tx.execute("DELETE FROM sessions WHERE id = ?1", params![id])?;
        tx.commit()?;
        Ok(deleted > 0)
    }

    /// Every session with its events, sessions in creation order, events in order.
    pub fn load(&self) -> StoreResult<Vec<StoredSession>> {
        let conn = self.conn();
        let mut sessions: Vec<StoredSession> = conn
            .prepare("SELECT id, created_at, spec FROM sessions ORDER BY created_at, id")?
            .query_map([], |row| {
                Ok(StoredSession { id: row.get(0)?, created_at: row.get(1)?, spec: row.get(2)?, events: Vec::new() })
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
}
