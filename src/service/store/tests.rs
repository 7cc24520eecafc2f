//! The store against real files: what opening refuses, a full database, backups.

use super::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

static DIRS: AtomicUsize = AtomicUsize::new(0);

/// The schema as version 1 wrote it (before owners and tokens).
const SCHEMA_V1: &str = "
CREATE TABLE sessions (id TEXT PRIMARY KEY, created_at REAL NOT NULL, spec TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, kind TEXT NOT NULL, at REAL NOT NULL, payload TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
PRAGMA user_version = 1;
";

/// A fresh directory, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        let n = DIRS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("arbiter-store-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn open(path: &Path) -> StoreResult<Store> {
    Store::open(path, None).map(|(store, _)| store)
}

fn refusal(path: &Path) -> String {
    match Store::open(path, None) {
        Ok(_) => panic!("{} was opened", path.display()),
        Err(e) => e.to_string(),
    }
}

fn application_id(path: &Path) -> i32 {
    let conn = Connection::open(path).unwrap();
    conn.pragma_query_value(None, "application_id", |row| row.get(0)).unwrap()
}

/// A store with `sessions` sessions of `events` events each (written in one transaction), closed
/// (so all of it is in the file).
fn filled(path: &Path, sessions: usize, events: i64) {
    let store = open(path).unwrap();
    let mut conn = store.conn();
    let tx = conn.transaction().unwrap();
    for s in 0..sessions {
        let id = format!("s{s}");
        tx.execute("INSERT INTO sessions (id, created_at, spec) VALUES (?1, ?2, '{}')", params![id, s as f64]).unwrap();
        for seq in 1..=events {
            let payload = format!("{{\"steps\": {}}}", seq * 1000);
            tx.execute(
                "INSERT INTO events (session_id, seq, kind, at, payload) VALUES (?1, ?2, 'progress', 0, ?3)",
                params![id, seq, payload],
            )
            .unwrap();
        }
    }
    tx.commit().unwrap();
}

#[test]
fn a_new_database_is_marked_and_an_unmarked_one_of_ours_gets_the_mark() {
    let dir = Dir::new();
    let fresh = dir.file("fresh.db");
    let (store, opened) = Store::open(&fresh, None).unwrap();
    assert!(!opened.marked);
    drop(store);
    assert_eq!(application_id(&fresh), APPLICATION_ID);

    // What an Arbiter that predates the mark wrote: the same tables, version 1, no id.
    let old = dir.file("old.db");
    let conn = Connection::open(&old).unwrap();
    conn.execute_batch(SCHEMA_V1).unwrap();
    conn.execute("INSERT INTO sessions VALUES ('a', 1.0, '{}')", []).unwrap();
    drop(conn);
    let (store, opened) = Store::open(&old, None).unwrap();
    assert!(opened.marked);
    assert_eq!(store.load().unwrap().len(), 1);
    drop(store);
    assert_eq!(application_id(&old), APPLICATION_ID);
    let (_, opened) = Store::open(&old, None).unwrap();
    assert!(!opened.marked, "marked once");
}

#[test]
fn another_applications_database_is_refused_and_left_as_it_was() {
    let dir = Dir::new();
    let path = dir.file("app.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada');").unwrap();
    drop(conn);
    let before = std::fs::read(&path).unwrap();
    let message = refusal(&path);
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("another application") && message.contains("users"), "{message}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the file is not written to");
    assert!(!dir.file("app.db-wal").exists());

    // Our tables, but another application's id.
    let path = dir.file("marked.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(&format!("{SCHEMA} PRAGMA application_id = 1234;")).unwrap();
    drop(conn);
    let message = refusal(&path);
    assert!(message.contains("application_id 0x000004d2"), "{message}");
}

#[test]
fn a_file_that_is_not_a_database_is_refused() {
    let dir = Dir::new();
    let path = dir.file("noise.db");
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let noise: Vec<u8> = (0..64 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    std::fs::write(&path, &noise).unwrap();
    let message = refusal(&path);
    assert!(message.contains("not an SQLite database") && message.contains("noise.db"), "{message}");
    assert_eq!(std::fs::read(&path).unwrap(), noise);

    // A real database cut inside its 100-byte header.
    let whole = dir.file("whole.db");
    filled(&whole, 1, 1);
    let cut = dir.file("cut.db");
    std::fs::write(&cut, &std::fs::read(&whole).unwrap()[..60]).unwrap();
    let message = refusal(&cut);
    assert!(message.contains("truncated (60 bytes"), "{message}");
}

#[test]
fn damaged_pages_are_found_at_start() {
    let dir = Dir::new();
    let path = dir.file("damaged.db");
    filled(&path, 40, 50);
    let mut bytes = std::fs::read(&path).unwrap();
    let pages = bytes.len() / 4096;
    assert!(pages > 8, "{pages} pages");
    // Overwrite a page in the middle (a b-tree page of the events) with a pattern.
    let page = pages / 2;
    for (i, b) in bytes[page * 4096..(page + 1) * 4096].iter_mut().enumerate() {
        *b = (i * 7 + 13) as u8;
    }
    std::fs::write(&path, &bytes).unwrap();
    let message = refusal(&path);
    assert!(message.contains("damaged") && message.contains("damaged.db"), "{message}");

    // A copy cut short: the pages past the cut are missing.
    let path = dir.file("short.db");
    filled(&path, 40, 50);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let message = refusal(&path);
    assert!(message.contains("damaged"), "{message}");
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = Dir::new();
    let path = dir.file("newer.db");
    drop(open(&path).unwrap());
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
    drop(conn);
    let message = refusal(&path);
    assert!(message.contains("schema version") && message.contains("newer arbiter"), "{message}");
}

#[test]
fn a_second_store_on_the_same_file_is_refused() {
    let dir = Dir::new();
    let path = dir.file("one.db");
    let first = open(&path).unwrap();
    let started = std::time::Instant::now();
    let message = refusal(&path);
    assert!(message.contains("in use") && message.contains("one.db"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(3), "refused after {:?}", started.elapsed());
    drop(first);
    drop(open(&path).unwrap());
}

#[test]
fn a_full_store_keeps_nothing_of_a_failed_write_and_deletions_make_room() {
    let dir = Dir::new();
    let path = dir.file("full.db");
    let cap = 128 * 1024;
    let (store, opened) = Store::open(&path, Some(cap)).unwrap();
    assert_eq!(opened.max_bytes, Some(cap));
    let payload = "x".repeat(1500);
    store.create_session("a", 1.0, "{}", &Owner::default()).unwrap();
    store.create_session("b", 2.0, "{}", &Owner::default()).unwrap();
    let mut seq = 0;
    let error = loop {
        seq += 1;
        assert!(seq < 10_000, "never full");
        let id = if seq % 2 == 0 { "a" } else { "b" };
        if let Err(e) = store.append(id, seq, "progress", 0.0, &payload, None) {
            break e;
        }
    };
    assert!(error.is_full(), "{error:?}");
    assert!(error.to_string().contains("full"), "{error}");
    let failed = seq;
    let rows = |store: &Store| store.load().unwrap().iter().map(|s| s.events.len()).sum::<usize>();
    assert_eq!(rows(&store), failed as usize - 1, "the failed row is not there");
    assert!(store.create_session("c", 3.0, &payload.repeat(30), &Owner::default()).unwrap_err().is_full());
    assert_eq!(store.load().unwrap().len(), 2);

    // Deleting works when full, and frees room for more writes.
    assert!(store.delete_session("b").unwrap());
    store.append("a", failed + 1, "progress", 0.0, &payload, None).unwrap();
    drop(store);
    let on_disk = std::fs::metadata(&path).unwrap().len();
    assert!(on_disk <= cap, "{on_disk} bytes on disk against a cap of {cap}");

    // A larger cap at restart: room again.
    let store = Store::open(&path, Some(4 * cap)).unwrap().0;
    for n in 0..40 {
        store.append("a", failed + 2 + n, "progress", 0.0, &payload, None).unwrap();
    }
    drop(store);
    // A cap below the database's size: it cannot shrink, it just cannot grow.
    let (store, opened) = Store::open(&path, Some(cap)).unwrap();
    assert!(opened.max_bytes.unwrap() > cap && opened.max_bytes == Some(opened.bytes), "{opened:?}");
    assert!(store.append("a", 10_000, "progress", 0.0, &payload.repeat(8), None).unwrap_err().is_full());
}

#[test]
fn a_backup_is_the_whole_database() {
    let dir = Dir::new();
    let path = dir.file("live.db");
    filled(&path, 5, 20);
    let store = open(&path).unwrap();
    store.append("s0", 21, "round", 0.0, "{}", Some("ci")).unwrap();
    let copy = dir.file("copy.db");
    store.backup_to(&copy).unwrap();
    let load = |s: &Store| -> Vec<(String, Vec<i64>)> {
        s.load().unwrap().into_iter().map(|s| (s.id, s.events.iter().map(|e| e.seq).collect())).collect()
    };
    let expected = load(&store);
    drop(store);
    let restored = open(&copy).unwrap();
    assert_eq!(load(&restored), expected);
    assert_eq!(application_id_of(&restored), APPLICATION_ID);
}

fn application_id_of(store: &Store) -> i32 {
    store.conn().pragma_query_value(None, "application_id", |row| row.get(0)).unwrap()
}

#[test]
fn a_version_1_database_is_migrated_keeping_its_sessions() {
    let dir = Dir::new();
    let path = dir.file("v1.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(SCHEMA_V1).unwrap();
        conn.execute("INSERT INTO sessions VALUES ('old', 1.5, '{}')", []).unwrap();
        conn.execute("INSERT INTO events VALUES ('old', 1, 'round', 2.5, '{\"kind\":\"round\"}')", []).unwrap();
    }
    let store = open(&path).unwrap();
    let version: i64 = store.conn().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(application_id_of(&store), APPLICATION_ID, "marked in the same transaction");
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
    assert_eq!(open(&path).unwrap().load().unwrap().len(), 2);
}
