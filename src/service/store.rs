//! Durable sessions: one SQLite database (WAL, `synchronous=FULL`) holding each session's creation
//! spec and its accepted events in order. A write returns only once it is on disk; nothing else.

use rusqlite::{params, Connection, OpenFlags};
use std::fmt;
use std::path::Path;
use std::sync::Mutex;

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
        // A new database gets the current schema; an older one is migrated in one transaction.
        let steps = match version {
            0 => SCHEMA,
            1 => MIGRATE_1_TO_2,
            _ => "",
        };
        conn.execute_batch(&format!("BEGIN IMMEDIATE; {steps} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"))
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
    pub fn create_session(&self, id: &str, created_at: f64, spec: &str, owner: &Owner) -> StoreResult<()> {
        self.conn().execute(
            "INSERT INTO sessions (id, created_at, spec, owner, created_by) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, created_at, spec, owner.tenant, owner.created_by],
        )?;
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
        self.conn().execute(
            "INSERT INTO events (session_id, seq, kind, at, payload, token_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![id, seq, kind, at, payload, token_id],
        )?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema as version 1 wrote it.
    const SCHEMA_V1: &str = "
    CREATE TABLE sessions (id TEXT PRIMARY KEY, created_at REAL NOT NULL, spec TEXT NOT NULL) WITHOUT ROWID;
    CREATE TABLE events (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL, kind TEXT NOT NULL, at REAL NOT NULL, payload TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
    PRAGMA user_version = 1;
    ";

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("arbiter-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("arbiter.db")
    }

    #[test]
    fn a_version_1_database_is_migrated_keeping_its_sessions() {
        let path = scratch("v1");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(SCHEMA_V1).unwrap();
            conn.execute("INSERT INTO sessions VALUES ('old', 1.5, '{}')", []).unwrap();
            conn.execute("INSERT INTO events VALUES ('old', 1, 'round', 2.5, '{\"kind\":\"round\"}')", []).unwrap();
        }
        let store = Store::open(&path).unwrap();
        let version: i64 = store.conn().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let loaded = store.load().unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].owner, Owner::default(), "sessions stored before have no owner");
        assert_eq!(loaded[0].events.len(), 1);
        assert_eq!(
            store.audit("old", 10).unwrap(),
            [EventRecord { seq: 1, kind: "round".into(), at: 2.5, token_id: None }]
        );
        // The new columns are written and read back.
        let owner = Owner { tenant: Some("a".into()), created_by: Some("ci".into()) };
        store.create_session("new", 3.0, "{}", &owner).unwrap();
        store.append("new", 1, "round", 4.0, "{}", Some("ci")).unwrap();
        store.append("new", 2, "progress", 5.0, "{}", None).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded[1].owner, owner);
        let audit = store.audit("new", 1).unwrap();
        assert_eq!(audit, [EventRecord { seq: 2, kind: "progress".into(), at: 5.0, token_id: None }]);
        assert_eq!(store.audit("new", 5).unwrap()[0].token_id.as_deref(), Some("ci"));
        drop(store);
        // Opening it again changes nothing.
        let store = Store::open(&path).unwrap();
        assert_eq!(store.load().unwrap().len(), 2);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_newer_database_is_refused() {
        let path = scratch("v3");
        Connection::open(&path).unwrap().execute_batch("PRAGMA user_version = 3;").unwrap();
        let e = Store::open(&path).unwrap_err();
        assert!(e.0.contains("schema version 3"), "{e}");
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
