//! Refusals at start and small answers that must say the right thing: `--max-concurrent-solves`
//! above what threads allow and `--log` words that are not levels refused with the contract's
//! error object; backup copies left by a killed server removed at the next start; the start-up
//! hints with tokens; one reason for a bare `Bearer`; which servers a type has; `mode`'s code; a
//! byte-order mark before a body; and the OpenAPI document's 422 of session creation and `GET /`.

use crate::service_support::http::Client;
use crate::service_support::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// `arbiter serve` on an ephemeral loopback port, in-memory, without the demo, with `flags`.
fn serve(flags: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_arbiter"));
    command.args(["serve", "--addr", "127.0.0.1:0", "--db", ":memory:", "--no-demo"]).args(flags);
    command.env_remove("ARBITER_LOG").env_remove("ARBITER_MAX_CONCURRENT_SOLVES");
    command
}

/// Status 2 and exactly the contract's error object on stderr, at `field`; its message.
fn refused_at(out: &Output, field: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let error: Value =
        serde_json::from_str(stderr.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {stderr}"));
    assert_eq!(error["error"]["code"], "malformed_request", "{error}");
    assert_eq!(error["error"]["field"], field, "{error}");
    error["error"]["message"].as_str().unwrap().to_string()
}

/// A server started by hand (for its environment or its start-up text), killed when dropped.
struct Started {
    child: Child,
    addr: SocketAddr,
    /// Standard output up to and including the last start-up hint.
    printed: String,
}

impl Started {
    /// Starts `command` and reads its standard output through the hints it prints.
    fn start(mut command: Command, log: &Path) -> Started {
        let stderr = std::fs::File::create(log).expect("create the server log");
        let mut child = command.stdout(Stdio::piped()).stderr(stderr).spawn().expect("start arbiter serve");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let (mut printed, mut addr) = (String::new(), None);
        loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = child.kill();
                panic!(
                    "arbiter serve stopped printing:\n{printed}\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            printed.push_str(&line);
            if let Some(rest) = line.split("listening on http://").nth(1) {
                addr = Some(rest.trim().parse::<SocketAddr>().expect("the bound address"));
            }
            // The last hint.
            if line.trim_end().ends_with("/openapi.json") {
                break;
            }
        }
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stdout.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
        Started { child, addr: addr.expect("the address line comes first"), printed }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn more_concurrent_solves_than_threads_allow_are_refused_at_start() {
    let help = Command::new(env!("CARGO_BIN_EXE_arbiter")).args(["serve", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("1 to 1024"), "the help states the bound");
    // A count the pool could still start, past the bound, comes first: on a build without the
    // bound the test fails there, before asking for four billion threads.
    for count in ["1025", "4294967295", "0"] {
        let message = refused_at(&must_exit(&mut serve(&["--max-concurrent-solves", count])), "max_concurrent_solves");
        assert!(message.contains("1 to 1024") && message.contains(count), "{count}: {message}");
    }
    let out = must_exit(serve(&[]).env("ARBITER_MAX_CONCURRENT_SOLVES", "100000"));
    assert!(refused_at(&out, "max_concurrent_solves").contains("1024"));
    // The bound itself is a count of threads the server starts.
    let f = Fixture::start("solvers", &["--no-demo", "--max-concurrent-solves", "1024"]);
    let health = f.client().get("/healthz").unwrap().json();
    assert_eq!(health["max_concurrent_solves"], 1024, "{health}");
}

#[test]
fn a_log_word_that_is_not_a_level_is_refused_and_directives_are_read() {
    for word in ["warning", "verbose", "info,loud"] {
        let message = refused_at(&must_exit(&mut serve(&["--log", word])), "log");
        for level in ["trace", "debug", "info", "warn", "error", "off"] {
            assert!(message.contains(level), "{word}: the levels are listed: {message}");
        }
    }
    let out = must_exit(serve(&[]).env("ARBITER_LOG", "verbose"));
    assert!(refused_at(&out, "log").contains("\"verbose\" is not a level"));

    // Levels in any case, and full directives, still start the server and log.
    for filter in ["WARN", "arbiter=debug,tower_http=info"] {
        let f = Fixture::start("log", &["--no-demo", "--log", filter]);
        assert_eq!(f.client().get("/healthz").unwrap().status, 200);
        if filter.contains("arbiter=debug") {
            let log = f.server.log_text();
            assert!(log.contains("listening"), "{filter}: the server logs: {log}");
        }
    }
}

#[test]
fn backup_copies_left_by_dead_servers_are_removed_at_start_and_nothing_else() {
    let dir = TempDir::new("hardening-tmp");
    let tmp = dir.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // A pid that no process has: a child that has exited and been reaped.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let alive = std::process::id();
    let left = [format!("arbiter-backup-{dead}-0.db"), format!("arbiter-backup-{dead}-0.db-journal")];
    let kept = [
        // A running server's copy in flight.
        format!("arbiter-backup-{alive}-3.db"),
        // Names that only look alike.
        format!("arbiter-backup-{dead}-0.db.keep"),
        format!("arbiter-backup-{dead}.db"),
        "arbiter-backup-notes.db".to_string(),
        "other.db".to_string(),
    ];
    for name in left.iter().chain(&kept) {
        std::fs::write(tmp.join(name), b"SQLite format 3\0").unwrap();
    }
    // Not a file: left alone whatever its name.
    std::fs::create_dir(tmp.join(format!("arbiter-backup-{dead}-1.db"))).unwrap();

    let mut command = serve(&[]);
    command.env("TMPDIR", &tmp);
    let server = Started::start(command, &dir.path("server.log"));
    for name in &left {
        assert!(!tmp.join(name).exists(), "{name} is a dead server's copy");
    }
    for name in &kept {
        assert!(tmp.join(name).exists(), "{name} is not ours to remove");
    }
    assert!(tmp.join(format!("arbiter-backup-{dead}-1.db")).is_dir());
    let log = std::fs::read_to_string(dir.path("server.log")).unwrap();
    assert!(log.contains("removed backup copies"), "{log}");

    // A backup through this server leaves nothing new in its TMPDIR.
    let before = std::fs::read_dir(&tmp).unwrap().count();
    let backup = Client::new(server.addr).get("/v1/admin/backup").unwrap();
    assert_eq!(backup.status, 200, "{}", backup.text());
    assert!(backup.body.starts_with(b"SQLite format 3\0"));
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), before);
}

#[test]
fn with_tokens_the_hints_send_an_admin_token_for_the_demo_session() {
    let dir = TempDir::new("hardening-hints");
    let tokens = dir.path("tokens.json");
    let admin = create_token(&tokens, "ops", "admin", "ops");
    let reader = create_token(&tokens, "team-a", "sessions:read", "reader");
    let mut command = Command::new(env!("CARGO_BIN_EXE_arbiter"));
    command.args(["serve", "--addr", "127.0.0.1:0", "--db"]).arg(dir.path("arbiter.db")).arg("--tokens").arg(&tokens);
    let server = Started::start(command, &dir.path("server.log"));
    let demo_hint =
        server.printed.lines().find(|l| l.ends_with("/v1/sessions/demo/allocation")).expect("the demo hint");
    assert!(demo_hint.contains("$ARBITER_ADMIN_TOKEN"), "{}", server.printed);
    assert!(server.printed.contains("`admin` tokens only"), "{}", server.printed);
    let solve_hint = server.printed.lines().find(|l| l.ends_with("/v1/allocations")).expect("the solve hint");
    assert!(solve_hint.contains("$ARBITER_TOKEN"), "{}", server.printed);
    // What the hint says: only `admin` sees the demo session.
    let path = "/v1/sessions/demo/allocation";
    assert_eq!(Client::with_token(server.addr, &admin).get(path).unwrap().status, 200);
    assert_error(&Client::with_token(server.addr, &reader).get(path).unwrap(), 404, "unknown_session", None);

    // Without tokens, plain `curl`.
    let f = Started::start(serve(&[]), &dir.path("open.log"));
    assert!(!f.printed.contains("ARBITER_ADMIN_TOKEN") && !f.printed.contains("Authorization"), "{}", f.printed);
}

#[test]
fn a_bearer_header_without_a_token_says_what_is_expected_once() {
    let dir = TempDir::new("hardening-bearer");
    let tokens = dir.path("tokens.json");
    let token = create_token(&tokens, "ops", "admin", "ops");
    let server =
        Server::start(&dir.path("arbiter.db"), &dir.path("server.log"), &["--tokens", tokens.to_str().unwrap()]);
    let mut c = server.client();
    // Two credentials are refused, whichever one is good; one is taken.
    let bearer = format!("Bearer {token}");
    let twice = [("Authorization", bearer.as_str()), ("Authorization", "Bearer arb_other")];
    let body = assert_error(&c.send("GET", "/v1/sessions", &[], &twice).unwrap(), 401, "unauthorized", None);
    assert!(body["error"]["message"].as_str().unwrap().contains("more than one Authorization header"), "{body}");
    assert_eq!(c.send("GET", "/v1/sessions", &[], &twice[..1]).unwrap().status, 200);
    for (header, why) in [
        ("Bearer", "the token is empty"),
        ("Bearer    ", "the token is empty"),
        ("arb_abc", "the scheme or the token is missing"),
    ] {
        let reply = c.send("GET", "/v1/sessions", &[], &[("Authorization", header)]).unwrap();
        let body = assert_error(&reply, 401, "unauthorized", None);
        let message = body["error"]["message"].as_str().unwrap();
        assert_eq!(message.matches("expected `Bearer <token>`").count(), 1, "{header:?}: {message}");
        assert!(message.contains(why), "{header:?}: {message}");
    }
}

#[test]
fn an_unknown_server_or_gpu_names_those_there_are() {
    let f = Fixture::start("hardening-workers", &["--no-demo"]);
    let mut c = f.client();
    let create = json!({
        "policy": "max_min_fairness",
        "cluster": {"worker_types": {"v100": {"count": 4, "gpus_per_server": 4}, "k80": {"count": 8, "gpus_per_server": 4}}},
        "jobs": [{"id": "a", "throughput": {"v100": 2.0, "k80": 1.0}}]
    });
    let reply = c.post("/v1/sessions", &bytes(&create)).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    let id = reply.json()["id"].as_str().unwrap().to_string();
    let said = |c: &mut Client, worker: &str| {
        let reply = c.post(&format!("/v1/sessions/{id}/workers/{worker}/fail"), b"").unwrap();
        assert_error(&reply, 404, "unknown_worker", Some("worker"))["error"]["message"].as_str().unwrap().to_string()
    };
    let one = said(&mut c, "v100%2F1");
    assert!(one.contains("type v100 has one server, 0"), "{one}");
    assert!(!one.contains("0..1"), "{one}");
    let two = said(&mut c, "k80%2F2");
    assert!(two.contains("type k80 has servers 0 to 1"), "{two}");
    let gpu = said(&mut c, "k80%2F1%2F4");
    assert!(gpu.contains("that server has GPUs 0 to 3"), "{gpu}");
}

#[test]
fn an_unknown_mode_is_malformed_as_an_unknown_tie_break_is() {
    let f = Fixture::start("hardening-mode", &["--no-demo"]);
    let mut c = f.client();
    for (field, value) in [("mode", "bogus"), ("tie_break", "bogus")] {
        let mut create = demo_request();
        create[field] = json!(value);
        let reply = c.post("/v1/sessions", &bytes(&create)).unwrap();
        let body = assert_error(&reply, 400, "malformed_request", Some(field));
        assert!(body["error"]["message"].as_str().unwrap().contains("bogus"), "{body}");
    }
}

#[test]
fn a_body_that_starts_with_a_byte_order_mark_is_read() {
    let f = Fixture::start("hardening-bom", &["--no-demo"]);
    let mut c = f.client();
    let with_bom = |value: &Value| [&b"\xef\xbb\xbf"[..], &bytes(value)].concat();
    let request = demo_request();
    let plain = c.post("/v1/allocations", &bytes(&request)).unwrap();
    let marked = c.post("/v1/allocations", &with_bom(&request)).unwrap();
    assert_eq!(marked.status, 200, "{}", marked.text());
    assert_eq!(marked.json()["allocation"], plain.json()["allocation"]);

    // A session made and fed from such files works as any other, restart included.
    let created = c.post("/v1/sessions", &with_bom(&request)).unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    let id = created.json()["id"].as_str().unwrap().to_string();
    let job = json!({"id": "gpt2", "throughput": {"v100": 3.2, "p100": 1.9, "k80": 0.4}, "steps_remaining": 50000});
    let added = c.post(&format!("/v1/sessions/{id}/jobs"), &with_bom(&job)).unwrap();
    assert_eq!(added.status, 201, "{}", added.text());
    let round = c.post(&format!("/v1/sessions/{id}/rounds"), b"").unwrap();
    assert_eq!(round.status, 200, "{}", round.text());
    // Anywhere but the start it is still a stray character.
    let late = [&bytes(&request)[..], b"\xef\xbb\xbf"].concat();
    assert_error(&c.post("/v1/allocations", &late).unwrap(), 400, "malformed_request", None);
}

#[test]
fn the_document_lists_session_creations_422_and_the_landing_page() {
    let doc: Value = serde_json::from_str(&arbiter::service::openapi::json()).unwrap();
    let create = &doc["paths"]["/v1/sessions"]["post"]["responses"]["422"];
    assert!(create["description"].as_str().unwrap().contains("unsupported"), "{create}");
    let example = &create["content"]["application/json"]["example"];
    assert_eq!(example["error"]["code"], "unsupported", "{example}");
    assert_eq!(example["error"]["field"], "space_sharing", "{example}");
    let index = &doc["paths"]["/"]["get"];
    assert!(index.is_object(), "GET / is documented");
    assert!(index.get("security").is_none(), "GET / needs no token: {index}");

    // And the server answers as documented.
    let f = Fixture::start("hardening-openapi", &["--no-demo"]);
    let mut c = f.client();
    let mut paired = demo_request();
    paired["space_sharing"] = json!(true);
    assert_error(&c.post("/v1/sessions", &bytes(&paired)).unwrap(), 422, "unsupported", Some("space_sharing"));
    let landing = c.get("/").unwrap();
    assert_eq!(landing.status, 200);
    assert_eq!(landing.json(), index["responses"]["200"]["content"]["application/json"]["example"]);
}
