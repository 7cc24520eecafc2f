//! Shared by the `service_*` tests: the real `arbiter serve` binary started on an ephemeral port
//! with its own database in a fresh directory, a client for it, and request generators.
#![allow(dead_code)]

pub mod http;
pub mod k8s;

use http::{Client, Reply};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static DIRS: AtomicUsize = AtomicUsize::new(0);

/// A fresh, empty directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let n = DIRS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("arbiter-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temporary directory");
        TempDir(dir)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `arbiter serve`, killed when dropped.
pub struct Server {
    child: Option<Child>,
    pub addr: SocketAddr,
    pub db: PathBuf,
    pub log: PathBuf,
}

impl Server {
    /// Starts the server on `127.0.0.1:0` with database `db` and extra flags; waits until it
    /// prints the address it is listening on.
    pub fn start(db: &Path, log: &Path, flags: &[&str]) -> Server {
        Server::start_at("127.0.0.1:0", db, log, flags)
    }

    /// As `start`, on `addr` (e.g. `0.0.0.0:0`); `addr` is then where the client connects, with
    /// an unspecified IP replaced by loopback.
    pub fn start_at(bind: &str, db: &Path, log: &Path, flags: &[&str]) -> Server {
        let stderr = std::fs::File::create(log).expect("create the server log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
            .arg("serve")
            .args(["--addr", bind, "--db"])
            .arg(db)
            .args(flags)
            .env("ARBITER_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .expect("start arbiter serve");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        let addr = loop {
            line.clear();
            if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = child.wait();
                panic!("arbiter serve exited before listening:\n{}", std::fs::read_to_string(log).unwrap_or_default());
            }
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let mut addr = rest.trim().parse::<SocketAddr>().expect("a socket address after `listening on`");
                if addr.ip().is_unspecified() {
                    addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
                }
                break addr;
            }
        };
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stdout.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
        Server { child: Some(child), addr, db: db.to_path_buf(), log: log.to_path_buf() }
    }

    pub fn client(&self) -> Client {
        Client::new(self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// SIGKILL: no shutdown path runs at all.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM and waits (at most `timeout`) for the process to exit.
    pub fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        // SAFETY: signalling our own child process by its pid.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let end = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait().expect("wait for the server") {
                return status;
            }
            if Instant::now() > end {
                let _ = child.kill();
                panic!("the server did not exit within {timeout:?} of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A server with its own directory (dropped after the server).
pub struct Fixture {
    pub server: Server,
    pub dir: TempDir,
}

impl Fixture {
    pub fn start(name: &str, flags: &[&str]) -> Fixture {
        let dir = TempDir::new(name);
        let server = Server::start(&dir.path("arbiter.db"), &dir.path("server.log"), flags);
        Fixture { server, dir }
    }

    pub fn client(&self) -> Client {
        self.server.client()
    }
}

/// Asserts an error reply: status, the contract's object, its code and (if given) field.
pub fn assert_error(reply: &Reply, status: u16, code: &str, field: Option<&str>) -> Value {
    assert_eq!(reply.status, status, "expected {status} {code}, got {}: {}", reply.status, reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"), "error content type");
    let body = reply.json();
    let error = &body["error"];
    assert!(error.is_object(), "no error object: {body}");
    assert_eq!(error["code"], code, "wrong code: {body}");
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "no message: {body}");
    if let Some(field) = field {
        assert_eq!(error["field"], field, "wrong field: {body}");
    }
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["error"], "the body is exactly {{\"error\": ...}}: {body}");
    body
}

/// The demo request of the contract (`fixtures/demo.json`).
pub fn demo_request() -> Value {
    let text = std::fs::read_to_string(format!("{}/fixtures/demo.json", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `n` jobs of a few model types on `n/4` GPUs of each of three types, max-min fairness.
pub fn las_request(n: usize) -> Value {
    let models =
        [[10.0, 6.0, 1.0], [2.0, 1.7, 1.0], [6.0, 3.5, 1.2], [5.0, 3.4, 1.1], [3.0, 2.2, 0.9], [1.5, 1.3, 1.0]];
    let jobs: Vec<Value> = (0..n)
        .map(|m| {
            let t = models[m % models.len()];
            let sf = [1, 1, 1, 2, 1, 4][(m / models.len()) % 6];
            json!({"id": format!("j{m}"), "throughput": {"v100": t[0] * sf as f64, "p100": t[1] * sf as f64, "k80": t[2] * sf as f64},
                   "scale_factor": sf, "weight": if m % 5 == 0 { 5.0 } else { 1.0 }, "steps_remaining": 1000 + 37 * m})
        })
        .collect();
    let count = (n / 4).max(8);
    json!({
        "policy": "max_min_fairness",
        "method": "lp",
        "cluster": {"worker_types": {
            "v100": {"count": count, "gpus_per_server": 4},
            "p100": {"count": count, "gpus_per_server": 4},
            "k80": {"count": count, "gpus_per_server": 4}}},
        "jobs": jobs
    })
}

pub fn bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

/// `n` jobs whose throughput rows all differ, so the solver gets no aggregation, solved by the
/// plain LP (`method: lp`, the reference path; the price decomposition takes well under a second):
/// a slow solve (about a second at 4096 jobs, well over ten at 8192), for tests that need one in
/// flight.
pub fn slow_request(n: usize) -> Value {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut unit = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let jobs: Vec<Value> = (0..n)
        .map(|m| {
            let v100 = 10f64.powf(0.3 + 2.0 * unit());
            let k80 = v100 / 10f64.powf(0.08 + 0.9 * unit());
            let sf = [1, 1, 1, 2, 4][(unit() * 5.0) as usize % 5];
            json!({"id": format!("j{m}"), "scale_factor": sf, "steps_remaining": 1000 + m,
                   "throughput": {"v100": v100 * sf as f64, "p100": (v100 + k80) / 2.0 * sf as f64, "k80": k80 * sf as f64}})
        })
        .collect();
    let count = n / 4;
    json!({
        "policy": "max_min_fairness",
        "method": "lp",
        "cluster": {"worker_types": {
            "v100": {"count": count, "gpus_per_server": 4},
            "p100": {"count": count, "gpus_per_server": 4},
            "k80": {"count": count, "gpus_per_server": 4}}},
        "jobs": jobs
    })
}

/// Runs `command`, which must exit by itself (a server refusing to start); one still running
/// after 20 s is killed and the test fails, rather than waiting for it forever.
pub fn must_exit(command: &mut std::process::Command) -> std::process::Output {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run arbiter");
    let start = Instant::now();
    while child.try_wait().expect("wait for arbiter").is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect its output");
            panic!("arbiter kept running instead of refusing to start:\n{}", String::from_utf8_lossy(&out.stdout));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect its output")
}

/// `arbiter token create`: the token it prints (and nothing else on stdout).
pub fn create_token(file: &std::path::Path, tenant: &str, scopes: &str, id: &str) -> String {
    let file = file.to_str().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["token", "create", "--file", file, "--tenant", tenant, "--scope", scopes, "--id", id])
        .output()
        .expect("run arbiter token create");
    assert!(out.status.success(), "token create failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "only the token on stdout: {stdout:?}");
    stdout.trim().to_string()
}
