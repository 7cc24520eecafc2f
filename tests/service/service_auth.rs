//! Authentication and tenancy (`arbiter serve --tokens FILE`, `arbiter token`): 401 without a
//! good token (none, malformed, unknown, revoked while the server runs), 403 without the scope,
//! tenants' sessions invisible to each other on every route (404 exactly as for a session that
//! does not exist) and to every list, `admin` seeing all, each tenant quota, the loopback-only
//! default and `--insecure`, the audit of a session's events with their token ids, the token
//! command line, and a version-1 database migrated at start.

use crate::service_support::http::{Client, Reply};
use crate::service_support::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn arbiter(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_arbiter")).args(args).output().expect("run arbiter")
}

/// Adds per-tenant quota overrides to a token file.
fn set_tenants(file: &Path, tenants: Value) {
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    doc["tenants"] = tenants;
    std::fs::write(file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}

fn create_session(c: &mut Client, jobs: usize) -> Reply {
    let mut body = demo_request();
    body["jobs"] = Value::Array(body["jobs"].as_array().unwrap()[..jobs].to_vec());
    c.post("/v1/sessions", &bytes(&body)).unwrap()
}

fn created_id(reply: &Reply) -> String {
    assert_eq!(reply.status, 201, "{}", reply.text());
    reply.json()["id"].as_str().unwrap().to_string()
}

fn fitgpp_session(c: &mut Client) -> Reply {
    c.post("/v1/fitgpp/sessions", br#"{"nodes": [{"count": 1, "cpus": 8, "memory_gb": 64, "gpus": 2}]}"#).unwrap()
}

fn fitgpp_job(id: &str) -> Vec<u8> {
    json!({"id": id, "kind": "be", "cpus": 1, "memory_gb": 1, "gpus": 0, "duration_seconds": 100})
        .to_string()
        .into_bytes()
}

fn oasis_session(c: &mut Client) -> Reply {
    let f = json!({"lower": [2.0, 2.0, 2.0, 2.0], "upper": [4.0, 4.0, 4.0, 4.0], "eta": 1.0});
    let body = json!({"cluster": {"slot_seconds": 100, "slots": 4,
                                  "worker_servers": [{"gpus": 2, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 2}],
                                  "ps_servers": [{"gpus": 0, "cpus": 2, "memory_gb": 0, "bandwidth_mbps": 4}]},
                      "prices": {"workers": f, "parameter_servers": f}});
    c.post("/v1/oasis/sessions", body.to_string().as_bytes()).unwrap()
}

fn oasis_job(id: &str) -> Vec<u8> {
    json!({"id": id, "arrival_slot": 0, "epochs": 1, "chunks": 5, "minibatches_per_chunk": 10,
           "minibatch_seconds": 1, "gradient_mb": 0.0625,
           "worker": {"gpus": 1, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 1},
           "parameter_server": {"gpus": 0, "cpus": 1, "memory_gb": 0, "bandwidth_mbps": 2},
           "utility": {"kind": "constant", "value": 8}})
    .to_string()
    .into_bytes()
}

fn ids(list: &Reply) -> Vec<String> {
    assert_eq!(list.status, 200, "{}", list.text());
    list.json()["sessions"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()).collect()
}

/// A server with a token file holding an admin token and one more per `(tenant, scopes, id)`.
struct Authed {
    fixture: Fixture,
    file: std::path::PathBuf,
    admin: String,
    tokens: Vec<String>,
}

impl Authed {
    fn start(name: &str, tokens: &[(&str, &str, &str)], tenants: Option<Value>, flags: &[&str]) -> Authed {
        let dir = TempDir::new(name);
        let file = dir.path("tokens.json");
        let admin = create_token(&file, "ops", "admin", "root");
        let tokens = tokens.iter().map(|(tenant, scopes, id)| create_token(&file, tenant, scopes, id)).collect();
        if let Some(tenants) = tenants {
            set_tenants(&file, tenants);
        }
        let mut all = vec!["--tokens", file.to_str().unwrap()];
        all.extend_from_slice(flags);
        let server = Server::start(&dir.path("arbiter.db"), &dir.path("server.log"), &all);
        Authed { fixture: Fixture { server, dir }, file, admin, tokens }
    }

    fn client(&self, token: &str) -> Client {
        Client::with_token(self.fixture.server.addr, token)
    }

    fn anonymous(&self) -> Client {
        self.fixture.server.client()
    }
}

fn assert_unauthorized(reply: &Reply, invalid: bool) {
    let body = assert_error(reply, 401, "unauthorized", None);
    let challenge = reply.header("www-authenticate").unwrap_or_else(|| panic!("no WWW-Authenticate: {body}"));
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    assert_eq!(challenge.contains("invalid_token"), invalid, "{challenge}");
}

#[test]
fn requests_without_a_good_token_are_401_and_open_routes_stay_open() {
    let s = Authed::start("auth-401", &[("a", "solve,sessions:read,sessions:write,metrics", "a1")], None, &[]);
    let mut anon = s.anonymous();
    for (method, path) in [
        ("POST", "/v1/allocations"),
        ("GET", "/v1/sessions"),
        ("GET", "/v1/sessions/demo"),
        ("POST", "/v1/sessions/demo/rounds"),
        ("GET", "/v1/fitgpp/sessions/x"),
        ("GET", "/metrics"),
        ("GET", "/v1/admin/backup"),
        ("GET", "/no/such/route"),
    ] {
        let reply = anon.send(method, path, &bytes(&demo_request()), &[]).unwrap();
        assert_unauthorized(&reply, false);
    }
    for header in ["Basic YTpi", "Bearer", "Bearer ", "Bearer two words", "Token arb_x", "bearer\tarb_x"] {
        let reply = anon.send("GET", "/v1/sessions", b"", &[("Authorization", header)]).unwrap();
        assert_unauthorized(&reply, true);
    }
    let unknown = format!("arb_{}", "A".repeat(43));
    let reply = anon.send("GET", "/v1/sessions", b"", &[("Authorization", &format!("Bearer {unknown}"))]).unwrap();
    let body = assert_error(&reply, 401, "unauthorized", None);
    assert!(body["error"]["message"].as_str().unwrap().contains("unknown or revoked"), "{body}");
    // A token that is almost right is still wrong.
    let almost = &s.tokens[0][..s.tokens[0].len() - 1];
    let reply = anon.send("GET", "/v1/sessions", b"", &[("Authorization", &format!("Bearer {almost}"))]).unwrap();
    assert_unauthorized(&reply, true);

    for path in ["/healthz", "/", "/openapi.json"] {
        assert_eq!(anon.get(path).unwrap().status, 200, "{path} needs no token");
    }
    let mut a = s.client(&s.tokens[0]);
    assert_eq!(a.post("/v1/allocations", &bytes(&demo_request())).unwrap().status, 200);
    // The scheme is case-insensitive.
    let lower = format!("bearer {}", s.tokens[0]);
    assert_eq!(anon.send("GET", "/v1/sessions", b"", &[("Authorization", &lower)]).unwrap().status, 200);

    // Refused before the body is read: a request declaring 8 MiB (within the 16 MiB limit; a
    // larger one is a 413 before authentication) that sends almost none is answered.
    use std::io::{Read, Write};
    let mut raw = std::net::TcpStream::connect(s.fixture.server.addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(b"POST /v1/allocations HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\n\r\n{\"policy\":").unwrap();
    let mut answer = vec![0u8; 512];
    let n = raw.read(&mut answer).expect("answered without the body");
    assert!(
        String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 401"),
        "{}",
        String::from_utf8_lossy(&answer[..n])
    );

    // Refusals cost no solve: only the one allowed request was solved.
    let metrics = a.get("/metrics").unwrap().text();
    let solved: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("arbiter_solve_duration_seconds_count{endpoint=\"allocations\""))
        .collect();
    assert_eq!(solved.len(), 1, "{solved:?}");
    assert!(solved[0].ends_with(" 1"), "{solved:?}");
    assert!(metrics.contains("arbiter_errors_total{code=\"unauthorized\"}"), "401s are counted");
    let log = s.fixture.server.log_text();
    assert!(!log.contains(&s.tokens[0]) && !log.contains(&s.admin), "no secret in the log");
}

/// A client that writes a whole 3 MiB body (within the limit) before reading, without a token: the
/// 401 is answered before the body is read, and the body is then drained, so the client's writes
/// succeed and it reads the 401 instead of a reset.
#[test]
fn a_refusal_is_readable_by_a_client_that_writes_its_whole_body_first() {
    let s = Authed::start("auth-drain", &[], None, &[]);
    for _ in 0..5 {
        let answer =
            crate::service_bodies::post_whole_body_first(s.fixture.server.addr, "/v1/allocations", 3 << 20, false);
        assert!(answer.status_line.starts_with("HTTP/1.1 401"), "{}", answer.status_line);
        assert!(answer.body.contains("\"unauthorized\""), "{}", answer.body);
    }
}

#[test]
fn a_token_revoked_while_the_server_runs_is_refused_and_a_broken_file_keeps_the_last_good_set() {
    let s = Authed::start("auth-revoke", &[("a", "sessions:read", "a1"), ("a", "sessions:read", "a2")], None, &[]);
    let mut a1 = s.client(&s.tokens[0]);
    let mut a2 = s.client(&s.tokens[1]);
    assert_eq!(a1.get("/v1/sessions").unwrap().status, 200);
    let out = arbiter(&["token", "revoke", "--file", s.file.to_str().unwrap(), "a1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let start = Instant::now();
    loop {
        let reply = a1.get("/v1/sessions").unwrap();
        if reply.status == 401 {
            assert_unauthorized(&reply, true);
            break;
        }
        assert_eq!(reply.status, 200);
        assert!(start.elapsed() < Duration::from_secs(10), "the revocation was not seen within 10 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(a2.get("/v1/sessions").unwrap().status, 200, "the other token still works");

    // A file broken by hand: the server keeps what it had and says so.
    std::fs::write(&s.file, "{\"version\": 1, \"tokens\": [").unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(a2.get("/v1/sessions").unwrap().status, 200);
    assert_eq!(a1.get("/v1/sessions").unwrap().status, 401);
    let log = s.fixture.server.log_text();
    assert!(log.contains("keeping the last good tokens"), "{log}");
}

#[test]
fn tokens_without_the_scope_are_403_naming_it() {
    let s = Authed::start(
        "auth-scope",
        &[("a", "solve", "solver"), ("a", "sessions:read", "reader"), ("a", "metrics", "scraper")],
        None,
        &[],
    );
    let mut solver = s.client(&s.tokens[0]);
    let mut reader = s.client(&s.tokens[1]);
    let mut scraper = s.client(&s.tokens[2]);
    let mut admin = s.client(&s.admin);
    let forbidden = |reply: &Reply, scope: &str| {
        let body = assert_error(reply, 403, "forbidden", None);
        assert!(body["error"]["message"].as_str().unwrap().contains(&format!("\"{scope}\"")), "{body}");
    };
    forbidden(&solver.get("/v1/sessions").unwrap(), "sessions:read");
    forbidden(&solver.get("/metrics").unwrap(), "metrics");
    forbidden(&reader.post("/v1/allocations", &bytes(&demo_request())).unwrap(), "solve");
    forbidden(&reader.post("/v1/sessions", &bytes(&demo_request())).unwrap(), "sessions:write");
    forbidden(&reader.delete("/v1/sessions/demo").unwrap(), "sessions:write");
    forbidden(&reader.post("/v1/fitgpp/sessions", b"{}").unwrap(), "sessions:write");
    forbidden(&reader.post("/v1/throughputs/estimate", b"{}").unwrap(), "solve");
    forbidden(&scraper.get("/v1/fitgpp/sessions/x").unwrap(), "sessions:read");
    forbidden(&reader.post("/v1/oasis/sessions", b"{}").unwrap(), "sessions:write");
    forbidden(&scraper.get("/v1/oasis/sessions/x").unwrap(), "sessions:read");
    forbidden(&reader.get("/v1/admin/backup").unwrap(), "admin");
    assert_eq!(solver.post("/v1/allocations", &bytes(&demo_request())).unwrap().status, 200);
    assert_eq!(reader.get("/v1/sessions").unwrap().status, 200);
    assert_eq!(scraper.get("/metrics").unwrap().status, 200);
    // admin implies every scope; under /v1/admin/ it gets past authentication to the route.
    assert_eq!(admin.get("/metrics").unwrap().status, 200);
    assert_eq!(admin.post("/v1/sessions/demo/rounds", b"").unwrap().status, 200);
    assert_error(&admin.get("/v1/admin/nothing-here").unwrap(), 404, "not_found", None);
}

#[test]
fn tenants_never_see_each_others_sessions() {
    let rw = "solve,sessions:read,sessions:write";
    let s = Authed::start("auth-tenants", &[("a", rw, "a1"), ("b", rw, "b1")], None, &[]);
    let mut a = s.client(&s.tokens[0]);
    let mut b = s.client(&s.tokens[1]);
    let mut admin = s.client(&s.admin);
    let mine = created_id(&create_session(&mut a, 3));
    let fit = created_id(&fitgpp_session(&mut a));
    assert_eq!(a.post(&format!("/v1/fitgpp/sessions/{fit}/jobs"), &fitgpp_job("j")).unwrap().status, 200);
    let priced = created_id(&oasis_session(&mut a));
    assert_eq!(a.post(&format!("/v1/oasis/sessions/{priced}/jobs"), &oasis_job("j")).unwrap().status, 200);
    let theirs = created_id(&create_session(&mut b, 2));

    // Every session route, for a's session and for one that does not exist: the same answer.
    let ghost = "0123456789abcdef";
    assert_eq!(ghost.len(), mine.len());
    let job = br#"{"id": "x", "throughput": {"v100": 1.0}}"#;
    let progress = br#"{"worker_type": "v100", "steps": 1, "throughput": 1.0}"#;
    let routes: Vec<(&str, String, &[u8])> = vec![
        ("GET", "/v1/sessions/{}".into(), b""),
        ("GET", "/v1/sessions/{}?audit=5".into(), b""),
        ("DELETE", "/v1/sessions/{}".into(), b""),
        ("POST", "/v1/sessions/{}/jobs".into(), job),
        ("DELETE", "/v1/sessions/{}/jobs/resnet50".into(), b""),
        ("POST", "/v1/sessions/{}/jobs/resnet50/progress".into(), progress),
        ("PUT", "/v1/sessions/{}/throughputs".into(), br#"{"throughputs": {"resnet50": {"v100": 2.0}}}"#),
        ("POST", "/v1/sessions/{}/workers/k80%2F1/fail".into(), b""),
        ("POST", "/v1/sessions/{}/workers/k80%2F1/return".into(), b""),
        ("GET", "/v1/sessions/{}/allocation".into(), b""),
        ("POST", "/v1/sessions/{}/allocation".into(), b""),
        ("POST", "/v1/sessions/{}/rounds".into(), b""),
    ];
    let fit_routes: Vec<(&str, String, Vec<u8>)> = vec![
        ("GET", "/v1/fitgpp/sessions/{}".into(), vec![]),
        ("GET", "/v1/fitgpp/sessions/{}?audit=5".into(), vec![]),
        ("DELETE", "/v1/fitgpp/sessions/{}".into(), vec![]),
        ("POST", "/v1/fitgpp/sessions/{}/jobs".into(), fitgpp_job("k")),
        ("POST", "/v1/fitgpp/sessions/{}/advance".into(), br#"{"to": 5}"#.to_vec()),
    ];
    let oasis_routes: Vec<(&str, String, Vec<u8>)> = vec![
        ("GET", "/v1/oasis/sessions/{}".into(), vec![]),
        ("GET", "/v1/oasis/sessions/{}?audit=5".into(), vec![]),
        ("DELETE", "/v1/oasis/sessions/{}".into(), vec![]),
        ("POST", "/v1/oasis/sessions/{}/jobs".into(), oasis_job("k")),
    ];
    let all = routes
        .iter()
        .map(|(m, p, body)| (*m, p.clone(), body.to_vec(), &mine))
        .chain(fit_routes.iter().map(|(m, p, body)| (*m, p.clone(), body.clone(), &fit)))
        .chain(oasis_routes.iter().map(|(m, p, body)| (*m, p.clone(), body.clone(), &priced)));
    for (method, path, body, id) in all {
        let other = b.send(method, &path.replace("{}", id), &body, &[]).unwrap();
        let none = b.send(method, &path.replace("{}", ghost), &body, &[]).unwrap();
        assert_error(&other, 404, "unknown_session", None);
        assert_eq!(other.status, none.status, "{method} {path}");
        assert_eq!(
            other.text().replace(id.as_str(), ghost),
            none.text(),
            "{method} {path}: differs from a missing session"
        );
    }
    // Nothing b tried changed a's sessions.
    let view = a.get(&format!("/v1/sessions/{mine}")).unwrap().json();
    assert_eq!(view["jobs"].as_array().unwrap().len(), 3);
    assert_eq!(view["rounds"], 0);
    assert_eq!(view["cluster"]["failed_gpus"], json!([]));
    let fit_view = a.get(&format!("/v1/fitgpp/sessions/{fit}")).unwrap().json();
    assert_eq!(fit_view["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(fit_view["now"], 0.0);
    let priced_view = a.get(&format!("/v1/oasis/sessions/{priced}")).unwrap().json();
    assert_eq!(priced_view["decisions"].as_array().unwrap().len(), 1);

    // Lists: each tenant its own; the demo session (no owner) and everything for admin only.
    assert_eq!(ids(&a.get("/v1/sessions").unwrap()), vec![mine.clone()]);
    assert_eq!(ids(&b.get("/v1/sessions").unwrap()), vec![theirs.clone()]);
    assert_eq!(ids(&admin.get("/v1/sessions").unwrap()), ["demo".to_string(), mine.clone(), theirs.clone()]);
    assert_error(&a.get("/v1/sessions/demo").unwrap(), 404, "unknown_session", None);
    assert_eq!(admin.get(&format!("/v1/sessions/{mine}")).unwrap().status, 200);
    assert_eq!(admin.get(&format!("/v1/fitgpp/sessions/{fit}")).unwrap().status, 200);
    for kind in ["fitgpp", "oasis"] {
        let of = |c: &mut Client| ids(&c.get(&format!("/v1/{kind}/sessions")).unwrap());
        let own = if kind == "fitgpp" { fit.clone() } else { priced.clone() };
        assert_eq!((of(&mut a), of(&mut b), of(&mut admin)), (vec![own.clone()], vec![], vec![own]), "{kind}");
    }
    assert_eq!(admin.post(&format!("/v1/sessions/{theirs}/rounds"), b"").unwrap().status, 200);
    // The owner may still do everything, and delete.
    assert_eq!(a.post(&format!("/v1/sessions/{mine}/rounds"), b"").unwrap().status, 200);
    assert_eq!(a.delete(&format!("/v1/fitgpp/sessions/{fit}")).unwrap().status, 204);
    assert_eq!(admin.delete(&format!("/v1/sessions/{mine}")).unwrap().status, 204);
    assert_eq!(ids(&a.get("/v1/sessions").unwrap()), Vec::<String>::new());

    // Owners survive a restart.
    let Fixture { mut server, dir } = s.fixture;
    server.kill();
    let server = Server::start(&server.db, &dir.path("second.log"), &["--tokens", s.file.to_str().unwrap()]);
    let mut b = Client::with_token(server.addr, &s.tokens[1]);
    let mut a = Client::with_token(server.addr, &s.tokens[0]);
    assert_eq!(ids(&b.get("/v1/sessions").unwrap()), vec![theirs.clone()]);
    assert_error(&a.get(&format!("/v1/sessions/{theirs}")).unwrap(), 404, "unknown_session", None);
}

#[test]
fn session_and_job_quotas_are_403_naming_the_quota() {
    let rw = "solve,sessions:read,sessions:write";
    let tenants = json!({"a": {"max_sessions": 2, "max_jobs_per_session": 3}, "ops": {"max_sessions": 0, "max_jobs_per_session": 1}});
    let s = Authed::start("auth-quota", &[("a", rw, "a1"), ("b", rw, "b1")], Some(tenants), &["--no-demo"]);
    let mut a = s.client(&s.tokens[0]);
    let quota = |reply: &Reply, name: &str, limit: u64| {
        let body = assert_error(reply, 403, "quota_exceeded", None);
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(name) && message.contains(&limit.to_string()), "{body}");
    };
    quota(&create_session(&mut a, 4), "max_jobs_per_session", 3);
    let first = created_id(&create_session(&mut a, 2));
    let add = |c: &mut Client, id: &str, job: &str| {
        c.post(
            &format!("/v1/sessions/{id}/jobs"),
            json!({"id": job, "throughput": {"v100": 1.0}}).to_string().as_bytes(),
        )
        .unwrap()
    };
    assert_eq!(add(&mut a, &first, "x1").status, 201);
    quota(&add(&mut a, &first, "x2"), "max_jobs_per_session", 3);
    // A removed job frees its place.
    assert_eq!(a.delete(&format!("/v1/sessions/{first}/jobs/x1")).unwrap().status, 204);
    assert_eq!(add(&mut a, &first, "x2").status, 201);

    // Sessions of both kinds count together.
    let fit = created_id(&fitgpp_session(&mut a));
    quota(&create_session(&mut a, 1), "max_sessions", 2);
    quota(&fitgpp_session(&mut a), "max_sessions", 2);
    for j in ["f1", "f2", "f3"] {
        assert_eq!(a.post(&format!("/v1/fitgpp/sessions/{fit}/jobs"), &fitgpp_job(j)).unwrap().status, 200);
    }
    quota(&a.post(&format!("/v1/fitgpp/sessions/{fit}/jobs"), &fitgpp_job("f4")).unwrap(), "max_jobs_per_session", 3);
    // Other tenants have the defaults.
    let mut b = s.client(&s.tokens[1]);
    for _ in 0..3 {
        created_id(&create_session(&mut b, 5));
    }
    // `arbiter token quota` sets an override, which the running server applies within about a
    // second; `--clear` removes it.
    let file = s.file.to_str().unwrap();
    let out = arbiter(&["token", "quota", "--file", file, "b", "--max-sessions", "3"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tenant b: {\"max_sessions\":3}\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = create_session(&mut b, 1);
        if reply.status == 403 {
            quota(&reply, "max_sessions", 3);
            break;
        }
        assert_eq!(reply.status, 201, "{}", reply.text());
        assert!(Instant::now() < deadline, "the override was not applied");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = arbiter(&["token", "quota", "--file", file, "b", "--max-sessions", "0", "--burst", "0"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("burst must be at least 1"), "{out:?}");
    let out = arbiter(&["token", "quota", "--file", file, "b", "--clear"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tenant b: none (the server's flags)\n");
    // Deleting makes room.
    assert_eq!(a.delete(&format!("/v1/fitgpp/sessions/{fit}")).unwrap().status, 204);
    created_id(&create_session(&mut a, 1));
    // admin is exempt from the counts, even with quotas of 0 and 1 for its own tenant.
    let mut admin = s.client(&s.admin);
    let big = created_id(&create_session(&mut admin, 8));
    assert_eq!(add(&mut admin, &big, "x9").status, 201);
    assert_eq!(add(&mut admin, &first, "x8").status, 201, "admin may add past a's quota too");
}

#[test]
fn request_rate_is_429_with_retry_after_per_tenant() {
    let tenants = json!({"slow": {"requests_per_second": 0.2, "burst": 3}});
    let s = Authed::start(
        "auth-rate",
        &[("slow", "sessions:read", "s1"), ("fast", "sessions:read", "f1")],
        Some(tenants),
        &["--no-demo"],
    );
    let mut slow = s.client(&s.tokens[0]);
    let mut fast = s.client(&s.tokens[1]);
    for _ in 0..3 {
        assert_eq!(slow.get("/v1/sessions").unwrap().status, 200);
    }
    let reply = slow.get("/v1/sessions").unwrap();
    let body = assert_error(&reply, 429, "rate_limited", None);
    assert!(body["error"]["message"].as_str().unwrap().contains("requests per second"), "{body}");
    let wait: u64 = reply.header("retry-after").expect("Retry-After").parse().expect("whole seconds");
    assert!((1..=5).contains(&wait), "one request at 0.2/s is 5 s away at most: {wait}");
    for _ in 0..20 {
        assert_eq!(fast.get("/v1/sessions").unwrap().status, 200, "another tenant is not limited");
    }
    // A 429 costs no token: after the wait it is served.
    std::thread::sleep(Duration::from_secs(wait));
    assert_eq!(slow.get("/v1/sessions").unwrap().status, 200);
}

#[test]
fn concurrent_solves_per_tenant_are_429_with_retry_after() {
    let tenants = json!({"a": {"max_concurrent_solves": 1}});
    let s = Authed::start(
        "auth-solves",
        &[("a", "solve,sessions:read,sessions:write", "a1"), ("b", "solve", "b1")],
        Some(tenants),
        &["--no-demo", "--max-concurrent-solves", "2"],
    );
    let addr = s.fixture.server.addr;
    let token = s.tokens[0].clone();
    let slow = std::thread::spawn(move || {
        let mut c = Client::with_token(addr, &token);
        c.post("/v1/allocations", &bytes(&slow_request(4096))).unwrap().status
    });
    let mut probe = s.anonymous();
    let start = Instant::now();
    while probe.get("/healthz").unwrap().json()["solves_running"] == 0 {
        assert!(start.elapsed() < Duration::from_secs(30), "the slow solve never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut a = s.client(&s.tokens[0]);
    let reply = a.post("/v1/allocations", &bytes(&demo_request())).unwrap();
    let body = assert_error(&reply, 429, "rate_limited", None);
    assert!(body["error"]["message"].as_str().unwrap().contains("concurrent solves"), "{body}");
    assert!(reply.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
    // Creating a session solves too; reading does not.
    assert_error(&create_session(&mut a, 2), 429, "rate_limited", None);
    assert_eq!(a.get("/v1/sessions").unwrap().status, 200);
    let mut b = s.client(&s.tokens[1]);
    assert_eq!(b.post("/v1/allocations", &bytes(&demo_request())).unwrap().status, 200, "b has its own count");
    // Its answer, or on a machine oversubscribed many times over its budget's 504: either way the
    // solve has ended and its place must be free.
    let status = slow.join().unwrap();
    assert!(status == 200 || status == 504, "the slow solve: {status}");
    assert_eq!(a.post("/v1/allocations", &bytes(&demo_request())).unwrap().status, 200, "the place is free again");
}

#[test]
fn without_tokens_only_loopback_is_served_unless_insecure() {
    // The default: loopback, without authentication, and it says so.
    let f = Fixture::start("auth-default", &["--no-demo"]);
    assert_eq!(f.client().get("/v1/sessions").unwrap().status, 200);
    assert!(f.server.log_text().contains("without authentication"), "{}", f.server.log_text());

    // 0.0.0.0 without tokens: refused at start, with what to do.
    let dir = TempDir::new("auth-exposed");
    let db = dir.path("arbiter.db");
    let out = must_exit(
        Command::new(env!("CARGO_BIN_EXE_arbiter"))
            .args(["serve", "--addr", "0.0.0.0:0", "--no-demo", "--db"])
            .arg(&db)
            .env_remove("ARBITER_INSECURE")
            .env_remove("ARBITER_TOKENS"),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("refusing") && stderr.contains("--tokens") && stderr.contains("--insecure"), "{stderr}");
    assert!(!db.exists(), "refused before the database is touched");

    // --insecure serves it (reached here over loopback), and says so.
    let server = Server::start_at("0.0.0.0:0", &db, &dir.path("insecure.log"), &["--no-demo", "--insecure"]);
    assert_eq!(server.client().get("/v1/sessions").unwrap().status, 200);
    assert!(server.log_text().contains("WITHOUT authentication"), "{}", server.log_text());
    drop(server);

    // With tokens, 0.0.0.0 is served and wants a token.
    let file = dir.path("tokens.json");
    let token = create_token(&file, "a", "sessions:read", "a1");
    let server =
        Server::start_at("0.0.0.0:0", &db, &dir.path("tokens.log"), &["--no-demo", "--tokens", file.to_str().unwrap()]);
    assert_unauthorized(&server.client().get("/v1/sessions").unwrap(), false);
    assert_eq!(Client::with_token(server.addr, &token).get("/v1/sessions").unwrap().status, 200);

    // A missing token file is refused at start.
    let out = must_exit(
        Command::new(env!("CARGO_BIN_EXE_arbiter"))
            .args(["serve", "--addr", "127.0.0.1:0", "--no-demo", "--tokens"])
            .arg(dir.path("missing.json"))
            .arg("--db")
            .arg(dir.path("other.db")),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.json"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_audit_shows_each_event_with_its_token_id() {
    let rw = "solve,sessions:read,sessions:write";
    let s = Authed::start("auth-audit", &[("a", rw, "alice"), ("a", rw, "bob")], None, &["--no-demo"]);
    let mut alice = s.client(&s.tokens[0]);
    let mut bob = s.client(&s.tokens[1]);
    let id = created_id(&create_session(&mut alice, 3));
    let base = format!("/v1/sessions/{id}");
    assert_eq!(bob.post(&format!("{base}/rounds"), b"").unwrap().status, 200);
    let job = br#"{"id": "x", "throughput": {"v100": 1.0}}"#;
    assert_eq!(alice.post(&format!("{base}/jobs"), job).unwrap().status, 201);
    assert_eq!(bob.post(&format!("{base}/workers/k80%2F1/fail"), b"").unwrap().status, 200);
    // Failing it again, or one of its GPUs, changes nothing and records nothing.
    for worker in ["k80%2F1", "k80%2F1%2F0"] {
        let again = bob.post(&format!("{base}/workers/{worker}/fail"), b"").unwrap();
        assert_eq!(again.status, 200, "{}", again.text());
        assert_eq!(again.json()["worker_types"]["k80"]["healthy"], 4, "{}", again.text());
    }

    assert!(alice.get(&base).unwrap().json().get("audit").is_none(), "no audit unless asked");
    let audit = alice.get(&format!("{base}?audit=10")).unwrap().json()["audit"].clone();
    assert_eq!(audit["owner"], "a");
    assert_eq!(audit["created_by"], "alice");
    let events = audit["events"].as_array().unwrap();
    let seen: Vec<(u64, &str, &str)> = events
        .iter()
        .map(|e| (e["seq"].as_u64().unwrap(), e["kind"].as_str().unwrap(), e["token_id"].as_str().unwrap()))
        .collect();
    assert_eq!(seen, [(1, "round", "bob"), (2, "add_job", "alice"), (3, "worker_failed", "bob")]);
    assert!(events.iter().all(|e| e["at"].as_f64().unwrap() > 1.0e9));
    let last = alice.get(&format!("{base}?audit=1")).unwrap().json()["audit"]["events"].clone();
    assert_eq!(last.as_array().unwrap().len(), 1);
    assert_eq!(last[0]["seq"], 3);
    assert_eq!(alice.get(&format!("{base}?audit=0")).unwrap().json()["audit"]["events"], json!([]));
    assert_error(&alice.get(&format!("{base}?audit=lots")).unwrap(), 400, "malformed_request", Some("audit"));
    assert_error(&alice.get(&format!("{base}?audit=-1")).unwrap(), 400, "malformed_request", Some("audit"));
    assert_error(&alice.get(&format!("{base}?audit=1&audit=2")).unwrap(), 400, "malformed_request", Some("audit"));
    assert_error(&alice.get(&format!("{base}?audit=10001")).unwrap(), 400, "invalid_number", Some("audit"));
    let raw = std::fs::read_to_string(&s.file).unwrap();
    assert!(!raw.contains(&s.tokens[0]), "the file holds no secret");

    // FitGpp sessions share the events table and the audit.
    let fit = created_id(&fitgpp_session(&mut bob));
    assert_eq!(alice.post(&format!("/v1/fitgpp/sessions/{fit}/jobs"), &fitgpp_job("j")).unwrap().status, 200);
    assert_eq!(bob.post(&format!("/v1/fitgpp/sessions/{fit}/advance"), br#"{"to": 50}"#).unwrap().status, 200);
    let audit = alice.get(&format!("/v1/fitgpp/sessions/{fit}?audit=5")).unwrap().json()["audit"].clone();
    assert_eq!(audit["created_by"], "bob");
    let kinds: Vec<(&str, &str)> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["token_id"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, [("fitgpp_submit", "alice"), ("fitgpp_advance", "bob")]);

    // Without tokens the audit has no token ids.
    let f = Fixture::start("auth-audit-open", &["--no-demo"]);
    let mut c = f.client();
    let id = created_id(&create_session(&mut c, 2));
    assert_eq!(c.post(&format!("/v1/sessions/{id}/rounds"), b"").unwrap().status, 200);
    let audit = c.get(&format!("/v1/sessions/{id}?audit=3")).unwrap().json()["audit"].clone();
    assert_eq!(
        audit,
        json!({"owner": null, "created_by": null, "events": [
        {"seq": 1, "kind": "round", "at": audit["events"][0]["at"], "token_id": null}]})
    );
}

#[test]
fn the_token_command_line_creates_lists_and_revokes() {
    let dir = TempDir::new("auth-cli");
    let file = dir.path("tokens.json");
    let f = file.to_str().unwrap();
    let token = create_token(&file, "team-a", "sessions:read,solve", "ci");
    assert!(token.starts_with("arb_") && token.len() == 47, "{token}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let stored = std::fs::read_to_string(&file).unwrap();
    assert!(!stored.contains(&token) && !stored.contains(&token[4..]), "the secret is not stored");
    let doc: Value = serde_json::from_str(&stored).unwrap();
    let digest = doc["tokens"][0]["sha256"].as_str().unwrap().to_string();
    assert_eq!(digest.len(), 64);

    // Without --id, a generated one; a second token never equals the first.
    let out = arbiter(&["token", "create", "--file", f, "--tenant", "team-b", "--scope", "admin"]);
    assert!(out.status.success());
    let second = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_ne!(second, token);
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(note.contains("tok-") && note.contains("once"), "{note}");

    let list = arbiter(&["token", "list", "--file", f]);
    assert!(list.status.success());
    let text = String::from_utf8(list.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ID") && lines[0].contains("TENANT") && lines[0].contains("SCOPES"), "{text}");
    assert!(lines[0].contains("CREATED") && lines[0].contains("REVOKED"), "{text}");
    assert!(
        lines[1].starts_with("ci") && lines[1].contains("team-a") && lines[1].contains("solve,sessions:read"),
        "{text}"
    );
    assert!(lines[1].trim_end().ends_with('-'), "not revoked: {text}");
    assert!(lines[2].starts_with("tok-") && lines[2].contains("admin"), "{text}");
    for secret in [&token, &second, &digest] {
        assert!(!text.contains(secret.as_str()), "list shows no secret or digest: {text}");
    }

    // Refusals: exit 2, the error object, the file unchanged.
    let before = std::fs::read(&file).unwrap();
    for (args, says) in [
        (vec!["token", "create", "--file", f, "--tenant", "x", "--scope", "solve", "--id", "ci"], "already"),
        (vec!["token", "create", "--file", f, "--tenant", "x", "--scope", "solve,root"], "root"),
        (vec!["token", "create", "--file", f, "--tenant", "x y", "--scope", "solve"], "tenant"),
        (vec!["token", "create", "--file", f, "--tenant", "x", "--scope", "solve", "--id", "a/b"], "token id"),
        (vec!["token", "revoke", "--file", f, "nobody"], "nobody"),
    ] {
        let out = arbiter(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
    let bad = arbiter(&["token", "list", "--file", dir.path("none.json").to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));

    let out = arbiter(&["token", "revoke", "--file", f, "ci"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(arbiter(&["token", "list", "--file", f]).stdout).unwrap();
    let ci = text.lines().find(|l| l.starts_with("ci")).unwrap();
    assert!(ci.trim_end().ends_with('Z'), "the revocation time: {text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "still 0600");
    }
    let again = arbiter(&["token", "revoke", "--file", f, "ci"]);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("already"));
    // The file is also found through ARBITER_TOKENS.
    let out = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["token", "list"])
        .env("ARBITER_TOKENS", &file)
        .output()
        .unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("team-b"));
}

/// The version-1 schema, as the server wrote it before owners and tokens were recorded.
const SCHEMA_V1: &str = "
CREATE TABLE sessions (id TEXT PRIMARY KEY, created_at REAL NOT NULL, spec TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, kind TEXT NOT NULL, at REAL NOT NULL, payload TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
PRAGMA user_version = 1;
";

#[test]
fn a_version_1_database_is_migrated_and_its_sessions_are_admins() {
    let dir = TempDir::new("auth-migrate");
    let db = dir.path("arbiter.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(SCHEMA_V1).unwrap();
        let spec =
            json!({"policy": "max_min_fairness", "cluster": demo_request()["cluster"], "jobs": demo_request()["jobs"]});
        conn.execute("INSERT INTO sessions VALUES ('old', 1700000000.0, ?1)", [spec.to_string()]).unwrap();
        conn.execute(
            "INSERT INTO events VALUES ('old', 1, 'worker_failed', 1700000001.0, '{\"kind\":\"worker_failed\",\"worker\":\"k80/1\"}')",
            [],
        )
        .unwrap();
    }
    let file = dir.path("tokens.json");
    let admin = create_token(&file, "ops", "admin", "root");
    let tenant = create_token(&file, "a", "sessions:read,sessions:write", "a1");
    let mut server = Server::start(&db, &dir.path("server.log"), &["--no-demo", "--tokens", file.to_str().unwrap()]);
    let mut root = Client::with_token(server.addr, &admin);
    let mut a = Client::with_token(server.addr, &tenant);
    let view = root.get("/v1/sessions/old?audit=5").unwrap();
    assert_eq!(view.status, 200, "{}", view.text());
    let view = view.json();
    assert_eq!(view["cluster"]["failed_gpus"].as_array().unwrap().len(), 4, "the stored event was replayed: {view}");
    assert_eq!(view["audit"]["owner"], Value::Null);
    assert_eq!(
        view["audit"]["events"],
        json!([{"seq": 1, "kind": "worker_failed", "at": 1700000001.0, "token_id": null}])
    );
    assert_error(&a.get("/v1/sessions/old").unwrap(), 404, "unknown_session", None);
    assert_eq!(ids(&a.get("/v1/sessions").unwrap()), Vec::<String>::new());
    assert_eq!(root.post("/v1/sessions/old/workers/k80%2F1/return", b"").unwrap().status, 200);
    let events = root.get("/v1/sessions/old?audit=5").unwrap().json()["audit"]["events"].clone();
    assert_eq!(events[1]["token_id"], "root");
    server.kill();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, 2);
    let token: Option<String> =
        conn.query_row("SELECT token_id FROM events WHERE session_id = 'old' AND seq = 2", [], |r| r.get(0)).unwrap();
    assert_eq!(token.as_deref(), Some("root"));
}
