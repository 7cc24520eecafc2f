//! The session database under faults, against the real binary: a full store (`--db-max-bytes`)
//! answers 503 `storage_full` and changes nothing, in memory or on disk, until there is room
//! again; corrupt, foreign and newer files are refused at start, as is a second server on one
//! file; a backup taken while serving starts a second server with the same sessions.

use crate::service_support::http::{Client, Reply};
use crate::service_support::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Asserts a 503 `storage_full` with its `Retry-After`.
fn assert_full(reply: &Reply) {
    assert_error(reply, 503, "storage_full", None);
    let retry: u64 = reply.header("retry-after").expect("Retry-After").parse().expect("whole seconds");
    assert!(retry >= 1);
}

/// Adds jobs to a session until the store is full; returns how many were added.
fn add_jobs_until_full(c: &mut Client, base: &str, from: usize) -> usize {
    for n in from..from + 5000 {
        let job = json!({"id": format!("filler-{n}"), "throughput": {"v100": 2.0, "p100": 1.5, "k80": 0.5},
                         "steps_remaining": 1000 + n});
        let reply = c.post(&format!("{base}/jobs"), &bytes(&job)).unwrap();
        if reply.status == 503 {
            assert_full(&reply);
            return n - from;
        }
        assert_eq!(reply.status, 201, "{}", reply.text());
    }
    panic!("5000 jobs and the store is still not full");
}

/// Everything a client can read of the server's sessions.
fn everything(c: &mut Client, fitgpp: &str) -> Value {
    let listed = c.get("/v1/sessions").unwrap().json();
    let sessions: Vec<Value> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| c.get(&format!("/v1/sessions/{}", s["id"].as_str().unwrap())).unwrap().json())
        .collect();
    json!({"sessions": sessions, "fitgpp": c.get(&format!("/v1/fitgpp/sessions/{fitgpp}")).unwrap().json()})
}

fn wal_bytes(db: &Path) -> u64 {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(0, |m| m.len())
}

#[test]
fn a_full_store_answers_503_changes_nothing_and_recovers() {
    let dir = TempDir::new("full");
    let db = dir.path("arbiter.db");
    let cap = 192 * 1024;
    let flags = ["--no-demo", "--db-max-bytes", "196608"];
    let mut server = Server::start(&db, &dir.path("first.log"), &flags);
    let mut c = server.client();
    let created = c.post("/v1/sessions", &bytes(&demo_request())).unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    let base = format!("/v1/sessions/{}", created.json()["id"].as_str().unwrap());
    assert_eq!(c.post(&format!("{base}/rounds"), b"").unwrap().status, 200);
    let nodes = json!({"nodes": [{"count": 2, "cpus": 32, "memory_gb": 256, "gpus": 8}]});
    let fitgpp = c.post("/v1/fitgpp/sessions", &bytes(&nodes)).unwrap();
    assert_eq!(fitgpp.status, 201, "{}", fitgpp.text());
    let fitgpp = fitgpp.json()["id"].as_str().unwrap().to_string();

    // Large sessions until one does not fit: it is not created, in part or at all.
    let big = bytes(&las_request(64));
    let mut made = Vec::new();
    let refused = loop {
        let reply = c.post("/v1/sessions", &big).unwrap();
        if reply.status != 201 {
            break reply;
        }
        made.push(reply.json()["id"].as_str().unwrap().to_string());
        assert!(made.len() < 100, "100 sessions of {} bytes and the store is not full", big.len());
    };
    assert_full(&refused);
    assert!(!made.is_empty());
    assert_eq!(c.get("/v1/sessions").unwrap().json()["sessions"].as_array().unwrap().len(), made.len() + 1);

    // Events: the one that does not fit changes nothing that a client can read.
    add_jobs_until_full(&mut c, &base, 0);
    let before = everything(&mut c, &fitgpp);
    assert_full(&c.post(&format!("{base}/rounds"), b"").unwrap());
    let job =
        json!({"id": "j".repeat(1024), "kind": "be", "cpus": 4, "memory_gb": 16, "gpus": 1, "duration_seconds": 60});
    assert_full(&c.post(&format!("/v1/fitgpp/sessions/{fitgpp}/jobs"), &bytes(&job)).unwrap());
    assert_full(&c.post("/v1/sessions", &big).unwrap());
    assert_eq!(everything(&mut c, &fitgpp), before, "a refused write changed what the server shows");
    assert_eq!(c.get("/healthz").unwrap().status, 200, "the server keeps serving");
    let metrics = c.get("/metrics").unwrap().text();
    assert!(metrics.contains("arbiter_errors_total{code=\"storage_full\"}"), "{metrics}");

    // Deleting still works when full, and makes room.
    assert_eq!(c.delete(&format!("/v1/sessions/{}", made.pop().unwrap())).unwrap().status, 204);
    let added = add_jobs_until_full(&mut c, &base, 10_000);
    assert!(added > 0, "the deletion made no room");
    let full = everything(&mut c, &fitgpp);
    let wal = wal_bytes(&db);

    // After kill -9, replay agrees with what the server showed, and the store is still full.
    server.kill();
    let mut server = Server::start(&db, &dir.path("second.log"), &flags);
    let mut c = server.client();
    assert_eq!(everything(&mut c, &fitgpp), full, "the replay differs from what was acknowledged");
    add_jobs_until_full(&mut c, &base, 20_000);
    server.terminate(Duration::from_secs(30));
    let on_disk = std::fs::metadata(&db).unwrap().len();
    assert!(on_disk <= cap, "{on_disk} bytes on disk against a cap of {cap}");
    eprintln!("full at {on_disk} bytes (cap {cap}); the WAL held {wal} bytes when the store was full");

    // A larger cap at restart: writes succeed again.
    let server = Server::start(&db, &dir.path("third.log"), &["--no-demo", "--db-max-bytes", "1048576"]);
    let mut c = server.client();
    assert_eq!(c.post("/v1/sessions", &big).unwrap().status, 201);
    assert_eq!(c.post(&format!("{base}/rounds"), b"").unwrap().status, 200);
    assert_eq!(c.post(&format!("/v1/fitgpp/sessions/{fitgpp}/jobs"), &bytes(&job)).unwrap().status, 200);
}

/// Starts `arbiter serve` on `db`, which must refuse to start; returns what it printed.
fn refused_start(db: &Path) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["serve", "--addr", "127.0.0.1:0", "--no-demo", "--db"])
        .arg(db)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("arbiter serve started on {}", db.display());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "exit status {status} for {}: {stderr}", db.display());
    assert!(stderr.contains(&db.display().to_string()), "the message names the file: {stderr}");
    stderr
}

/// Arbiter's schema version 1, as every version so far created it.
const SCHEMA_V1: &str = "
CREATE TABLE sessions (id TEXT PRIMARY KEY, created_at REAL NOT NULL, spec TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE events (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    kind TEXT NOT NULL, at REAL NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
PRAGMA user_version = 1;
";

fn sqlite(path: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(sql).unwrap();
}

#[test]
fn corrupt_foreign_and_newer_files_are_refused_at_start() {
    let dir = TempDir::new("refused");

    let noise = dir.path("noise.db");
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let bytes: Vec<u8> = (0..32 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    std::fs::write(&noise, &bytes).unwrap();
    let said = refused_start(&noise);
    assert!(said.contains("not an SQLite database"), "{said}");
    assert_eq!(std::fs::read(&noise).unwrap(), bytes, "left as it was");

    let cut = dir.path("cut.db");
    sqlite(&cut, SCHEMA_V1);
    let header = std::fs::read(&cut).unwrap()[..40].to_vec();
    std::fs::write(&cut, header).unwrap();
    let said = refused_start(&cut);
    assert!(said.contains("truncated (40 bytes"), "{said}");

    let foreign = dir.path("foreign.db");
    sqlite(&foreign, "CREATE TABLE photos (path TEXT, taken REAL); INSERT INTO photos VALUES ('a.jpg', 1.0);");
    let before = std::fs::read(&foreign).unwrap();
    let said = refused_start(&foreign);
    assert!(said.contains("another application") && said.contains("photos"), "{said}");
    assert_eq!(std::fs::read(&foreign).unwrap(), before, "left as it was");

    let newer = dir.path("newer.db");
    sqlite(&newer, &format!("{SCHEMA_V1} PRAGMA application_id = {}; PRAGMA user_version = 99;", 0x4172_6274));
    assert!(refused_start(&newer).contains("schema version 99"));

    // Damaged pages: a page in the middle of the events overwritten.
    let damaged = dir.path("damaged.db");
    let mut sql = format!("{SCHEMA_V1} INSERT INTO sessions VALUES ('s', 0, '{{}}');");
    for seq in 1..=2000 {
        sql.push_str(&format!("INSERT INTO events VALUES ('s', {seq}, 'progress', 0, '{{\"steps\": {seq}000}}');"));
    }
    sqlite(&damaged, &sql);
    let mut bytes = std::fs::read(&damaged).unwrap();
    let page = bytes.len() / 4096 / 2;
    bytes[page * 4096..(page + 1) * 4096].fill(0x5a);
    std::fs::write(&damaged, &bytes).unwrap();
    let said = refused_start(&damaged);
    assert!(said.contains("damaged") && said.contains("restore it from a backup"), "{said}");
}

#[test]
fn a_database_of_an_arbiter_before_the_mark_opens_and_gets_it() {
    let dir = TempDir::new("unmarked");
    let db = dir.path("old.db");
    let request = demo_request();
    let spec = json!({"policy": request["policy"], "cluster": request["cluster"], "jobs": request["jobs"]});
    sqlite(&db, &format!("{SCHEMA_V1} INSERT INTO sessions VALUES ('old', 1700000000.0, '{spec}');"));
    let mut server = Server::start(&db, &dir.path("server.log"), &["--no-demo"]);
    let session = server.client().get("/v1/sessions/old").unwrap();
    assert_eq!(session.status, 200, "{}", session.text());
    assert!(server.log_text().contains("marked as an Arbiter database"), "{}", server.log_text());
    server.terminate(Duration::from_secs(30));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let id: i32 = conn.pragma_query_value(None, "application_id", |row| row.get(0)).unwrap();
    assert_eq!(id, 0x4172_6274);
}

#[test]
fn a_second_server_on_the_same_file_is_refused_at_once() {
    let dir = TempDir::new("second");
    let db = dir.path("arbiter.db");
    // The first server has written nothing but its schema: no session yet.
    let first = Server::start(&db, &dir.path("first.log"), &["--no-demo"]);
    let started = Instant::now();
    let said = refused_start(&db);
    let took = started.elapsed();
    assert!(said.contains("in use by another process"), "{said}");
    assert!(took < Duration::from_secs(5), "refused after {took:?}");
    eprintln!("the second server was refused in {took:?}");
    assert_eq!(first.client().get("/healthz").unwrap().status, 200, "the first one is unharmed");
}

#[test]
fn a_backup_taken_while_serving_starts_a_second_server_with_the_same_sessions() {
    let dir = TempDir::new("backup");
    let f = Server::start(&dir.path("arbiter.db"), &dir.path("first.log"), &[]);
    let mut c = f.client();
    let created = c.post("/v1/sessions", &bytes(&demo_request())).unwrap().json();
    let id = created["id"].as_str().unwrap();
    assert_eq!(c.post(&format!("/v1/sessions/{id}/rounds"), b"").unwrap().status, 200);
    assert_eq!(c.post("/v1/sessions/demo/rounds", b"").unwrap().status, 200);
    let nodes = json!({"nodes": [{"count": 1, "cpus": 32, "memory_gb": 256, "gpus": 8}]});
    let fitgpp = c.post("/v1/fitgpp/sessions", &bytes(&nodes)).unwrap().json();
    let fitgpp = fitgpp["id"].as_str().unwrap().to_string();
    let job = json!({"id": "train", "kind": "be", "cpus": 16, "memory_gb": 128, "gpus": 8, "duration_seconds": 3600});
    assert_eq!(c.post(&format!("/v1/fitgpp/sessions/{fitgpp}/jobs"), &bytes(&job)).unwrap().status, 200);
    let expected = everything(&mut c, &fitgpp);

    let backup = c.get("/v1/admin/backup").unwrap();
    assert_eq!(backup.status, 200, "{}", backup.text());
    assert_eq!(backup.header("content-type"), Some("application/vnd.sqlite3"));
    let disposition = backup.header("content-disposition").unwrap();
    assert!(disposition.starts_with("attachment; filename=\"arbiter-") && disposition.ends_with(".db\""));
    assert!(backup.body.starts_with(b"SQLite format 3\0"));
    let copy = dir.path("backup.db");
    std::fs::write(&copy, &backup.body).unwrap();
    // The server keeps serving and writing while and after it is copied.
    assert_eq!(c.post("/v1/sessions/demo/rounds", b"").unwrap().status, 200);

    let second = Server::start(&copy, &dir.path("second.log"), &[]);
    assert_eq!(everything(&mut second.client(), &fitgpp), expected);
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("arbiter-backup-{}-", f.pid())))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

/// A session stored before an array was refused where an object is expected replays as it was
/// taken (its worker type read in order: 4 GPUs, 4 per server); a live body like it is refused.
#[test]
fn a_session_stored_with_an_array_for_an_object_replays_as_it_was_taken() {
    let dir = TempDir::new("positional");
    let db = dir.path("old.db");
    let spec = json!({"policy": "max_min_fairness", "cluster": {"worker_types": {"v100": [4, 4]}},
        "jobs": [{"id": "a", "throughput": {"v100": 1.0}}]});
    sqlite(&db, &format!("{SCHEMA_V1} INSERT INTO sessions VALUES ('old', 1700000000.0, '{spec}');"));
    let mut server = Server::start(&db, &dir.path("server.log"), &["--no-demo"]);
    let mut c = server.client();
    let session = c.get("/v1/sessions/old").unwrap();
    assert_eq!(session.status, 200, "{}", session.text());
    let v100 = &session.json()["cluster"]["worker_types"]["v100"];
    assert_eq!((v100["count"].as_u64(), v100["gpus_per_server"].as_u64()), (Some(4), Some(4)), "{v100}");
    let reply = c.post("/v1/sessions", &bytes(&spec)).unwrap();
    assert_error(&reply, 400, "malformed_request", Some("cluster.worker_types.v100"));
    server.terminate(Duration::from_secs(30));
}
