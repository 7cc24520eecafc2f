//! Every refusal of `arbiter serve` over HTTP, each with its status and the contract's error
//! object: malformed JSON, wrong types, NaN, unknown policy, oversized body, infeasible SLOs,
//! unknown session/job/worker, unknown route and method, overload (429 + Retry-After), and the
//! solve budget (504), after which the server keeps serving.

use crate::service_support::*;
use serde_json::json;
use std::time::Duration;

#[test]
fn bad_input_is_refused_with_the_field() {
    let f = Fixture::start("bad", &["--no-demo"]);
    let mut c = f.client();
    let post =
        |c: &mut crate::service_support::http::Client, body: &str| c.post("/v1/allocations", body.as_bytes()).unwrap();

    // Not JSON at all, and truncated JSON.
    assert_error(&post(&mut c, "hello"), 400, "malformed_request", None);
    assert_error(&post(&mut c, "{\"policy\": \"max_min_fairness\", "), 400, "malformed_request", None);
    assert_error(&post(&mut c, ""), 400, "malformed_request", None);
    assert_error(&post(&mut c, "[1, 2]"), 400, "malformed_request", None);
    // Invalid UTF-8.
    let reply = c.post("/v1/allocations", &[b'{', 0xff, 0xfe, b'}']).unwrap();
    assert_error(&reply, 400, "malformed_request", None);

    // Wrong types name the field path.
    let mut request = demo_request();
    request["jobs"][2]["weight"] = json!("heavy");
    assert_error(&post(&mut c, &request.to_string()), 400, "malformed_request", Some("jobs[2].weight"));
    let mut request = demo_request();
    request["cluster"]["worker_types"]["v100"]["count"] = json!([4]);
    let field = Some("cluster.worker_types.v100.count");
    assert_error(&post(&mut c, &request.to_string()), 400, "malformed_request", field);

    // NaN and Infinity are not JSON: refused where they stand.
    let text = demo_request().to_string().replacen("10.0", "NaN", 1);
    let body = assert_error(&post(&mut c, &text), 400, "malformed_request", None);
    assert!(body["error"]["field"].as_str().unwrap().starts_with("jobs[0].throughput"), "{body}");
    let text = demo_request().to_string().replacen("10.0", "Infinity", 1);
    assert_error(&post(&mut c, &text), 400, "malformed_request", None);
    // A number out of f64's range is refused too (as a JSON error, never as infinity).
    let text = demo_request().to_string().replacen("10.0", "1e999", 1);
    assert!(matches!(post(&mut c, &text).status, 400), "1e999");
    let mut request = demo_request();
    request["jobs"][1]["throughput"]["k80"] = json!(-1.0);
    let field = Some("jobs[1].throughput.k80");
    assert_error(&post(&mut c, &request.to_string()), 400, "invalid_number", field);

    // Unknown policy and worker type, duplicate ids.
    let mut request = demo_request();
    request["policy"] = json!("fastest_first");
    assert_error(&post(&mut c, &request.to_string()), 400, "unknown_policy", Some("policy"));
    let mut request = demo_request();
    request["jobs"][3]["throughput"]["a100"] = json!(12.0);
    assert_error(&post(&mut c, &request.to_string()), 400, "unknown_worker_type", Some("jobs[3].throughput.a100"));
    let mut request = demo_request();
    request["jobs"][1]["id"] = json!("resnet50");
    assert_error(&post(&mut c, &request.to_string()), 400, "duplicate_job_id", Some("jobs[1].id"));
}

#[test]
fn infeasible_slos_are_422_naming_the_jobs() {
    let f = Fixture::start("slo", &["--no-demo"]);
    let mut c = f.client();
    let mut request = demo_request();
    request["policy"] = json!("min_cost_slo");
    request["jobs"][0]["slo_seconds"] = json!(60);
    let body = assert_error(&c.post("/v1/allocations", &bytes(&request)).unwrap(), 422, "infeasible", None);
    let jobs = body["error"]["jobs"].as_array().expect("the jobs are named");
    assert!(jobs.contains(&json!("resnet50")), "{body}");
}

#[test]
fn a_session_refuses_space_sharing_rather_than_ignore_it() {
    let f = Fixture::start("space-sharing", &["--no-demo"]);
    let mut c = f.client();
    let mut create = demo_request();
    create["space_sharing"] = json!(true);
    assert_error(&c.post("/v1/sessions", &bytes(&create)).unwrap(), 422, "unsupported", Some("space_sharing"));
    let mut pairs = demo_request();
    pairs["colocations"] = json!([{"jobs": ["resnet50", "a3c"]}]);
    assert_error(&c.post("/v1/sessions", &bytes(&pairs)).unwrap(), 422, "unsupported", Some("colocations"));
    // Saying no is fine.
    let mut off = demo_request();
    off["space_sharing"] = json!(false);
    assert_eq!(c.post("/v1/sessions", &bytes(&off)).unwrap().status, 201);
}

#[test]
fn oversized_bodies_are_413() {
    let f = Fixture::start("big", &["--no-demo", "--max-body-bytes", "4096"]);
    let mut c = f.client();
    let big = bytes(&las_request(64));
    assert!(big.len() > 4096);
    assert_error(&c.post("/v1/allocations", &big).unwrap(), 413, "payload_too_large", None);
    assert_error(&c.post("/v1/sessions", &big).unwrap(), 413, "payload_too_large", None);
    // Without a Content-Length (chunked), the limit holds as the body streams in.
    let mut chunked = format!("{:x}\r\n", big.len()).into_bytes();
    chunked.extend_from_slice(&big);
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    let reply = raw_chunked(f.server.addr, &chunked);
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(reply.contains("\"payload_too_large\""), "{reply}");
    // Small bodies still pass.
    assert_eq!(c.post("/v1/allocations", &bytes(&demo_request())).unwrap().status, 200);
}

/// A body that stops arriving is answered and its connection closed once it has been quiet for
/// `--body-idle-seconds`, instead of holding the connection open (it did for minutes).
#[test]
fn a_stalled_body_frees_its_connection() {
    use std::io::{Read, Write};
    let f = Fixture::start("stalled", &["--body-idle-seconds", "1"]);
    let mut s = std::net::TcpStream::connect(f.server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!("POST /v1/allocations HTTP/1.1\r\nHost: {}\r\nContent-Length: 1000\r\n\r\n", f.server.addr);
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(br#"{"policy": "#).unwrap();
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    assert!(reply.contains("the request body stopped arriving"), "{reply}");
    // The server serves on.
    assert_eq!(f.client().get("/healthz").unwrap().status, 200);
}

/// POSTs a chunked body by hand (the test client always sends a Content-Length).
fn raw_chunked(addr: std::net::SocketAddr, chunked_body: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST /v1/allocations HTTP/1.1\r\nHost: {addr}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(chunked_body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn unknown_things_are_404_and_wrong_methods_405() {
    let f = Fixture::start("unknown", &[]);
    let mut c = f.client();
    assert_error(&c.get("/v1/sessions/nope").unwrap(), 404, "unknown_session", None);
    assert_error(&c.post("/v1/sessions/nope/rounds", b"").unwrap(), 404, "unknown_session", None);
    assert_error(&c.post("/v1/sessions/nope/jobs", b"{}").unwrap(), 404, "unknown_session", None);
    assert_error(&c.delete("/v1/sessions/demo/jobs/nope").unwrap(), 404, "unknown_job", Some("job"));
    let progress = json!({"worker_type": "v100", "steps": 1, "throughput": 1.0});
    let reply = c.post("/v1/sessions/demo/jobs/nope/progress", &bytes(&progress)).unwrap();
    assert_error(&reply, 404, "unknown_job", None);
    let update = json!({"throughputs": {"nope": {"v100": 1.0}}});
    assert_error(
        &c.put("/v1/sessions/demo/throughputs", &bytes(&update)).unwrap(),
        404,
        "unknown_job",
        Some("throughputs.nope"),
    );
    assert_error(&c.post("/v1/sessions/demo/workers/v100%2F7/fail", b"").unwrap(), 404, "unknown_worker", None);
    let reply = c.post("/v1/sessions/demo/workers/a100%2F0/fail", b"").unwrap();
    assert_error(&reply, 400, "unknown_worker_type", Some("worker"));
    assert_error(&c.get("/v2/allocations").unwrap(), 404, "not_found", None);
    assert_error(&c.get("/v1/allocations").unwrap(), 405, "method_not_allowed", None);
    assert_error(&c.send("PATCH", "/v1/sessions/demo", b"", &[]).unwrap(), 405, "method_not_allowed", None);
    // A long id or path is echoed by its head and its length, not whole.
    let long = "x".repeat(5_000);
    for (reply, code) in [
        (c.get(&format!("/v1/sessions/{long}")).unwrap(), "unknown_session"),
        (c.delete(&format!("/v1/sessions/demo/jobs/{long}")).unwrap(), "unknown_job"),
        (c.get(&format!("/v2/{long}")).unwrap(), "not_found"),
        (c.post(&format!("/v1/sessions/demo/workers/v100%2F{long}/fail"), b"").unwrap(), "unknown_worker"),
    ] {
        let body = assert_error(&reply, 404, code, None);
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.len() < 300 && message.contains("characters)"), "{message}");
    }
}

#[test]
fn session_events_are_validated() {
    let f = Fixture::start("events", &[]);
    let mut c = f.client();
    let base = "/v1/sessions/demo";
    let before = c.get(base).unwrap().json();
    let job = json!({"id": "resnet50", "throughput": {"v100": 1.0}});
    assert_error(&c.post(&format!("{base}/jobs"), &bytes(&job)).unwrap(), 400, "duplicate_job_id", Some("id"));
    let job = json!({"id": "x", "throughput": {"a100": 1.0}});
    let reply = c.post(&format!("{base}/jobs"), &bytes(&job)).unwrap();
    assert_error(&reply, 400, "unknown_worker_type", Some("throughput.a100"));
    // An id a URL could not address (past 1,024 characters) would make a job no one can remove.
    let job = json!({"id": "x".repeat(1025), "throughput": {"v100": 1.0}});
    assert_error(&c.post(&format!("{base}/jobs"), &bytes(&job)).unwrap(), 400, "malformed_request", Some("id"));
    let job = json!({"id": "x", "throughput": {"v100": 1.0}, "scale_factor": 0});
    assert_error(&c.post(&format!("{base}/jobs"), &bytes(&job)).unwrap(), 400, "invalid_scale_factor", None);
    let job = json!({"id": "x", "throughput": {"v100": "fast"}});
    let reply = c.post(&format!("{base}/jobs"), &bytes(&job)).unwrap();
    assert_error(&reply, 400, "malformed_request", Some("throughput.v100"));
    let progress = json!({"worker_type": "v100", "steps": -5, "throughput": 1.0});
    let reply = c.post(&format!("{base}/jobs/a3c/progress"), &bytes(&progress)).unwrap();
    assert_error(&reply, 400, "invalid_number", Some("steps"));
    // A measurement past the contract's bounds would leave every later solve of the session
    // unable to run (an infinite makespan, an overflowing sum): refused when it comes in.
    let progress = json!({"worker_type": "v100", "steps": 5, "throughput": 5e-324});
    let reply = c.post(&format!("{base}/jobs/a3c/progress"), &bytes(&progress)).unwrap();
    assert_error(&reply, 400, "invalid_number", Some("throughput"));
    let update = json!({"throughputs": {"a3c": {"v100": 1.7e308}}});
    let reply = c.put(&format!("{base}/throughputs"), &bytes(&update)).unwrap();
    assert_error(&reply, 400, "invalid_number", Some("throughputs.a3c.v100"));
    let job = json!({"id": "x", "throughput": {"v100": 1e-300}});
    let reply = c.post(&format!("{base}/jobs"), &bytes(&job)).unwrap();
    assert_error(&reply, 400, "invalid_number", Some("throughput.v100"));
    let progress = json!({"worker_type": "tpu", "steps": 5, "throughput": 1.0});
    let reply = c.post(&format!("{base}/jobs/a3c/progress"), &bytes(&progress)).unwrap();
    assert_error(&reply, 400, "unknown_worker_type", Some("worker_type"));
    // A row that names a type twice says two things about it: malformed, not the last one kept.
    let reply =
        c.put(&format!("{base}/throughputs"), br#"{"throughputs": {"a3c": {"v100": 1.0, "v100": 2.0}}}"#).unwrap();
    assert_error(&reply, 400, "malformed_request", None);
    let message = reply.json()["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("duplicate key \"v100\""), "{message}");
    // All or nothing: a bad row anywhere leaves every row as it was.
    let update = json!({"throughputs": {"a3c": {"v100": 7.0}, "recsys": {"v100": -1.0}}});
    let reply = c.put(&format!("{base}/throughputs"), &bytes(&update)).unwrap();
    assert_error(&reply, 400, "invalid_number", Some("throughputs.recsys.v100"));
    let mut create = demo_request();
    create["round_seconds"] = json!(0);
    assert_error(&c.post("/v1/sessions", &bytes(&create)).unwrap(), 400, "invalid_number", Some("round_seconds"));
    // The knobs keep within the contract's range of magnitudes too.
    create["round_seconds"] = json!(1e300);
    assert_error(&c.post("/v1/sessions", &bytes(&create)).unwrap(), 400, "invalid_number", Some("round_seconds"));
    // A round of 10⁹⁹ s is a mistaken unit: every later arrival would lie past the contract's numbers.
    create["round_seconds"] = json!(1e99);
    assert_error(&c.post("/v1/sessions", &bytes(&create)).unwrap(), 400, "invalid_number", Some("round_seconds"));
    create["round_seconds"] = json!(60);
    // A hierarchical session without entities could take no job.
    let hierarchical = json!({"policy": "hierarchical", "cluster": create["cluster"].clone()});
    let reply = c.post("/v1/sessions", &bytes(&hierarchical)).unwrap();
    assert_error(&reply, 400, "missing_field", Some("entities"));
    create["throughput_smoothing"] = json!(5e-324);
    let reply = c.post("/v1/sessions", &bytes(&create)).unwrap();
    assert_error(&reply, 400, "invalid_number", Some("throughput_smoothing"));
    create.as_object_mut().unwrap().remove("throughput_smoothing");
    create["tie_break"] = json!("fair");
    assert_error(&c.post("/v1/sessions", &bytes(&create)).unwrap(), 400, "malformed_request", Some("tie_break"));
    create["tie_break"] = json!("water_filling");
    create["policy"] = json!("finish_time_fairness");
    assert_error(&c.post("/v1/sessions", &bytes(&create)).unwrap(), 422, "unsupported", Some("tie_break"));
    create["tie_break"] = json!("none");
    create["policy"] = json!("nope");
    assert_error(&c.post("/v1/sessions", &bytes(&create)).unwrap(), 400, "unknown_policy", Some("policy"));
    // Nothing refused changed the session.
    assert_eq!(c.get(base).unwrap().json(), before);
}

#[test]
fn overload_is_429_with_retry_after_never_a_queue() {
    // The only solver is held 1.5 s by a solve the server's ceiling then cuts short.
    let flags = ["--no-demo", "--max-concurrent-solves", "1", "--max-queued-solves", "0", "--max-solve-seconds", "1.5"];
    let f = Fixture::start("busy", &flags);
    let addr = f.server.addr;
    let slow = bytes(&slow_request(8192));
    let busy =
        std::thread::spawn(move || crate::service_support::http::Client::new(addr).post("/v1/allocations", &slow));
    std::thread::sleep(Duration::from_millis(250));
    let mut c = f.client();
    let reply = c.post("/v1/allocations", &bytes(&demo_request())).unwrap();
    let body = assert_error(&reply, 429, "overloaded", None);
    assert_eq!(reply.header("retry-after"), Some("1"), "{body}");
    // Health does not wait for solvers.
    let health = c.get("/healthz").unwrap().json();
    assert_eq!(health["solves_running"], 1);
    assert_error(&busy.join().unwrap().unwrap(), 504, "timeout", None);
    // The slot is free the moment the answer is out.
    assert_eq!(c.post("/v1/allocations", &bytes(&demo_request())).unwrap().status, 200);
}

#[test]
fn queued_solves_wait_a_bounded_time() {
    let flags = [
        "--no-demo",
        "--max-concurrent-solves",
        "1",
        "--max-queued-solves",
        "1",
        "--max-queue-seconds",
        "0.1",
        "--max-solve-seconds",
        "1.5",
    ];
    let f = Fixture::start("queue", &flags);
    let addr = f.server.addr;
    let slow = bytes(&slow_request(8192));
    let busy =
        std::thread::spawn(move || crate::service_support::http::Client::new(addr).post("/v1/allocations", &slow));
    std::thread::sleep(Duration::from_millis(250));
    let mut c = f.client();
    let reply = c.post("/v1/allocations", &bytes(&demo_request())).unwrap();
    assert_error(&reply, 429, "overloaded", None);
    assert!(reply.header("retry-after").is_some());
    assert_error(&busy.join().unwrap().unwrap(), 504, "timeout", None);
}

#[test]
fn solve_budget_is_504_and_the_server_keeps_serving() {
    // The server's ceiling cuts a long solve short.
    let f = Fixture::start("budget", &["--max-solve-seconds", "0.2"]);
    let mut c = f.client();
    let start = std::time::Instant::now();
    let reply = c.post("/v1/allocations", &bytes(&slow_request(8192))).unwrap();
    assert_error(&reply, 504, "timeout", None);
    assert!(start.elapsed() < Duration::from_secs(5), "the budget ends the solve: {:?}", start.elapsed());
    assert_eq!(c.get("/healthz").unwrap().status, 200);
    assert_eq!(c.post("/v1/allocations", &bytes(&demo_request())).unwrap().status, 200);

    // The request's own budget, when smaller, wins.
    let mut request = demo_request();
    request["max_solve_seconds"] = json!(1e-9);
    assert_error(&c.post("/v1/allocations", &bytes(&request)).unwrap(), 504, "timeout", None);
    request["max_solve_seconds"] = json!(-1);
    assert_error(
        &c.post("/v1/allocations", &bytes(&request)).unwrap(),
        400,
        "invalid_number",
        Some("max_solve_seconds"),
    );

    // A session's budget: the round fails with 504 and changes nothing.
    let mut create = demo_request();
    create["max_solve_seconds"] = json!(1e-9);
    let session = c.post("/v1/sessions", &bytes(&create)).unwrap().json();
    let base = format!("/v1/sessions/{}", session["id"].as_str().unwrap());
    assert_error(&c.post(&format!("{base}/rounds"), b"").unwrap(), 504, "timeout", None);
    assert_error(&c.post(&format!("{base}/allocation"), b"").unwrap(), 504, "timeout", None);
    let view = c.get(&base).unwrap().json();
    assert_eq!(view["rounds"], 0);
    assert_eq!(view["stale"], true);
    assert!(c.get("/metrics").unwrap().text().contains("arbiter_errors_total{code=\"timeout\"} 4"));

    // A budget asked for one solve replaces the session's own, under the server's ceiling: the
    // session gets its allocation, and its next solve is again held to its own budget.
    for bad in ["0", "-1", "nan", "inf", "x"] {
        let reply = c.post(&format!("{base}/allocation?max_solve_seconds={bad}"), b"").unwrap();
        let code = if bad == "x" { "malformed_request" } else { "invalid_number" };
        assert_error(&reply, 400, code, Some("max_solve_seconds"));
    }
    let recomputed = c.post(&format!("{base}/allocation?max_solve_seconds=30"), b"").unwrap();
    assert_eq!(recomputed.status, 200, "{}", recomputed.text());
    let round = c.post(&format!("{base}/rounds?max_solve_seconds=30"), b"").unwrap();
    assert_eq!(round.status, 200, "{}", round.text());
    assert_eq!(round.json()["allocation_recomputed"], false);
    let job = json!({"id": "late", "throughput": {"k80": 1.0, "p100": 2.0, "v100": 3.0}});
    assert_eq!(c.post(&format!("{base}/jobs"), &bytes(&job)).unwrap().status, 201);
    assert_error(&c.post(&format!("{base}/rounds"), b"").unwrap(), 504, "timeout", None);
    let round = c.post(&format!("{base}/rounds?max_solve_seconds=30"), b"").unwrap();
    assert_eq!(round.status, 200, "{}", round.text());
    assert_eq!(round.json()["allocation_recomputed"], true);
}

/// A request on a session waits for another request changing it (here a round's solve over round
/// configurations, cut at its 1.5 s budget) no longer than `--max-queue-seconds`, then is turned away with 429, as a
/// solve waiting for a solver thread is: nothing queues without bound. Events are counted in
/// `/metrics` where they are stored, FitGpp's too.
#[test]
fn a_request_waits_for_a_busy_session_a_bounded_time() {
    let flags = ["--no-demo", "--max-queue-seconds", "0.1", "--max-solve-seconds", "1.5"];
    let f = Fixture::start("session-queue", &flags);
    let mut c = f.client();
    let created = c.post("/v1/sessions", &bytes(&slow_request(300))).unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    let base = format!("/v1/sessions/{}", created.json()["id"].as_str().unwrap());
    let addr = f.server.addr;
    let rounds = format!("{base}/rounds");
    let busy = std::thread::spawn(move || crate::service_support::http::Client::new(addr).post(&rounds, b""));
    std::thread::sleep(Duration::from_millis(400));
    let start = std::time::Instant::now();
    let progress = json!({"worker_type": "v100", "steps": 10, "throughput": 5.0});
    let reply = c.post(&format!("{base}/jobs/j0/progress"), &bytes(&progress)).unwrap();
    assert_error(&reply, 429, "overloaded", None);
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert!(start.elapsed() < Duration::from_millis(900), "turned away after the queue's wait: {:?}", start.elapsed());
    assert_eq!(busy.join().unwrap().unwrap().status, 200);
    // Free again: the report is applied and counted.
    assert_eq!(c.post(&format!("{base}/jobs/j0/progress"), &bytes(&progress)).unwrap().status, 200);
    let fitgpp = json!({"nodes": [{"count": 1, "cpus": 8, "memory_gb": 64, "gpus": 2}]});
    let created = c.post("/v1/fitgpp/sessions", &bytes(&fitgpp)).unwrap();
    let job = json!({"id": "be", "kind": "be", "cpus": 1, "memory_gb": 1, "gpus": 1, "duration_seconds": 10});
    let path = format!("/v1/fitgpp/sessions/{}/jobs", created.json()["id"].as_str().unwrap());
    assert_eq!(c.post(&path, &bytes(&job)).unwrap().status, 200);
    let metrics = c.get("/metrics").unwrap().text();
    assert!(metrics.contains("arbiter_session_events_total{kind=\"progress\"} 1"), "{metrics}");
    assert!(metrics.contains("arbiter_session_events_total{kind=\"fitgpp_submit\"} 1"), "{metrics}");
}

#[test]
fn session_requests_that_could_never_take_effect_are_refused() {
    let f = Fixture::start("never", &["--no-demo"]);
    let mut c = f.client();
    let create = json!({"policy": "max_min_fairness",
        "cluster": {"worker_types": {"v100": {"count": 4}, "k80": {"count": 0}}},
        "jobs": [{"id": "a", "throughput": {"v100": 2.0}, "steps_remaining": 1e6},
                 {"id": "b", "scale_factor": 4, "throughput": {"v100": 2.0, "k80": 1.0}, "steps_remaining": 1e6}]});
    let reply = c.post("/v1/sessions", &bytes(&create)).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    let id = reply.json()["id"].as_str().unwrap().to_string();

    // A row positive only where there are no GPUs, or on too few for the job's scale factor.
    let path = format!("/v1/sessions/{id}/throughputs");
    let only_k80 = json!({"throughputs": {"a": {"k80": 1.0}}});
    assert_error(&c.put(&path, &bytes(&only_k80)).unwrap(), 400, "job_cannot_run", Some("throughputs.a"));
    let ok = json!({"throughputs": {"b": {"v100": 3.0}}});
    assert_eq!(c.put(&path, &bytes(&ok)).unwrap().status, 200);
    let ghost = json!({"throughputs": {"ghost": {"h100": 1.0}}});
    assert_error(&c.put(&path, &bytes(&ghost)).unwrap(), 404, "unknown_job", Some("throughputs.ghost"));
    let jobs = format!("/v1/sessions/{id}/jobs");
    let wide = json!({"id": "wide", "scale_factor": 8, "throughput": {"v100": 1.0}});
    assert_error(&c.post(&jobs, &bytes(&wide)).unwrap(), 400, "invalid_scale_factor", Some("scale_factor"));

    // A retried progress report is checked like any, and is not recorded again.
    let progress = format!("/v1/sessions/{id}/jobs/a/progress");
    let report = json!({"worker_type": "v100", "steps": 1, "throughput": 2, "sequence": 7});
    assert_eq!(c.post(&progress, &bytes(&report)).unwrap().status, 200);
    let events = |c: &mut crate::service_support::http::Client| {
        c.get(&format!("/v1/sessions/{id}?audit=100")).unwrap().json()["audit"]["events"].as_array().unwrap().len()
    };
    let before = events(&mut c);
    for _ in 0..3 {
        assert_eq!(c.post(&progress, &bytes(&report)).unwrap().status, 200);
    }
    assert_eq!(events(&mut c), before, "retries are answered, not recorded");
    let bad_retry = json!({"worker_type": "v100", "steps": -5, "throughput": 2, "sequence": 3});
    assert_error(&c.post(&progress, &bytes(&bad_retry)).unwrap(), 400, "invalid_number", Some("steps"));

    // Workers are named as the session names them.
    for name in ["v100%2F%2B0", "v100%2F00", "v100%2F0%2F"] {
        let reply = c.post(&format!("/v1/sessions/{id}/workers/{name}/fail"), b"").unwrap();
        assert_error(&reply, 404, "unknown_worker", Some("worker"));
    }
    assert_eq!(c.post(&format!("/v1/sessions/{id}/workers/v100%2F0/fail"), b"").unwrap().status, 200);

    // Space sharing's keys of the wrong type are malformed, not a request for space sharing.
    let mut sharing = create.clone();
    sharing["space_sharing"] = json!("no");
    assert_error(&c.post("/v1/sessions", &bytes(&sharing)).unwrap(), 400, "malformed_request", Some("space_sharing"));
    assert_error(&c.post("/v1/sessions", b"[1]").unwrap(), 400, "malformed_request", None);
    // A worker type needs a name.
    let mut unnamed = create.clone();
    unnamed["cluster"]["worker_types"][""] = json!({"count": 1});
    let field = Some("cluster.worker_types");
    assert_error(&c.post("/v1/sessions", &bytes(&unnamed)).unwrap(), 400, "malformed_request", field);
    let mut slashed = create.clone();
    slashed["cluster"]["worker_types"]["a/b"] = json!({"count": 1});
    let field = Some("cluster.worker_types.a/b");
    assert_error(&c.post("/v1/sessions", &bytes(&slashed)).unwrap(), 400, "malformed_request", field);
    // A key given twice, named.
    let twice = r#"{"policy": "fifo", "policy": "las", "cluster": {"worker_types": {"v100": {"count": 1}}}}"#;
    assert_error(&c.post("/v1/sessions", twice.as_bytes()).unwrap(), 400, "malformed_request", Some("policy"));
}

/// The contract's objects are objects: an array where one is expected (a worker type, a job, an
/// entity) is refused naming it, where serde would read the struct's fields in order; the
/// contract's arrays (a pair's jobs and throughputs) stay arrays.
#[test]
fn an_array_where_an_object_is_expected_is_refused_naming_it() {
    let f = Fixture::start("objects", &["--no-demo"]);
    let mut c = f.client();
    let request = |worker_type: serde_json::Value, job: serde_json::Value| json!({"policy": "max_min_fairness", "cluster": {"worker_types": {"v100": worker_type}}, "jobs": [job]});
    let job = json!({"id": "a", "throughput": {"v100": 1.0}});
    // Read in order, `[4, 1]` would be 4 GPUs, 1 per server.
    let positional = request(json!([4, 1]), job.clone());
    let job_as_list = request(json!({"count": 4}), json!(["a", {"v100": 1.0}]));
    let mut entity_as_list =
        request(json!({"count": 4}), json!({"id": "a", "throughput": {"v100": 1.0}, "entity": "r"}));
    entity_as_list["policy"] = json!("hierarchical");
    entity_as_list["entities"] = json!({"r": [1.0, "fifo"]});
    let cases =
        [(&positional, "cluster.worker_types.v100"), (&job_as_list, "jobs[0]"), (&entity_as_list, "entities.r")];
    for path in ["/v1/allocations", "/v1/sessions"] {
        for (body, field) in cases {
            let refused = assert_error(&c.post(path, &bytes(body)).unwrap(), 400, "malformed_request", Some(field));
            let message = refused["error"]["message"].as_str().unwrap();
            assert!(message.contains("invalid type: sequence, expected struct"), "{path} {body}: {refused}");
        }
    }
    // Given as objects, the same are taken.
    assert_eq!(
        c.post("/v1/allocations", &bytes(&request(json!({"count": 4, "gpus_per_server": 1}), job.clone())))
            .unwrap()
            .status,
        200
    );
    let created = c.post("/v1/sessions", &bytes(&request(json!({"count": 4}), job.clone()))).unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    // A job added as an array is no object either.
    let jobs = format!("/v1/sessions/{}/jobs", created.json()["id"].as_str().unwrap());
    assert_error(&c.post(&jobs, &bytes(&json!(["b", {"v100": 1.0}]))).unwrap(), 400, "malformed_request", None);
    // A pair's jobs and throughputs are arrays.
    let paired = json!({"policy": "max_min_fairness", "space_sharing": true,
        "cluster": {"worker_types": {"v100": {"count": 2}}},
        "jobs": [{"id": "a", "throughput": {"v100": 1.0}}, {"id": "b", "throughput": {"v100": 1.0}}],
        "colocations": [{"jobs": ["a", "b"], "throughput": {"v100": [0.6, 0.6]}}]});
    let reply = c.post("/v1/allocations", &bytes(&paired)).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn fields_no_body_has_are_named_in_the_answer_not_refused() {
    let f = Fixture::start("ignored", &["--no-demo"]);
    let mut c = f.client();
    let request = json!({"policy": "max_min_fairness", "polcy": "fifo",
        "cluster": {"worker_types": {"v100": {"count": 2, "gpus_per_server": 2}}},
        "jobs": [{"id": "a", "throughput": {"v100": 1.0}, "wieght": 2, "model": "resnet50"},
                 {"id": "b", "throughput": {"v100": 2.0}, "model": "a3c"}]});
    let reply = c.post("/v1/allocations", &bytes(&request)).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["ignored_fields"], json!(["polcy", "jobs[0].wieght", "jobs[*].model"]));
    let clean = json!({"policy": "max_min_fairness", "cluster": request["cluster"], "jobs": [{"id": "a", "throughput": {"v100": 1.0}}]});
    let reply = c.post("/v1/allocations", &bytes(&clean)).unwrap();
    assert!(reply.json().get("ignored_fields").is_none(), "{}", reply.text());

    // A session's creation and an added job name theirs; a job's marks (`profile`,
    // `estimated_throughput`) are fields of a session's job, not ignored.
    let mut create = request.clone();
    create["round_secs"] = json!(60);
    // Read, and refused unless they ask for nothing: not ignored.
    create["space_sharing"] = json!(false);
    create["colocations"] = json!([]);
    create["jobs"][1]["profile"] = json!(false);
    let created = c.post("/v1/sessions", &bytes(&create)).unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    let session = created.json();
    assert_eq!(session["ignored_fields"], json!(["polcy", "jobs[0].wieght", "jobs[*].model", "round_secs"]));
    let jobs = format!("/v1/sessions/{}/jobs", session["id"].as_str().unwrap());
    let job = json!({"id": "c", "throughput": {"v100": 1.0}, "profile": false, "estimated_throughput": {},
        "slo": 3600});
    let added = c.post(&jobs, &bytes(&job)).unwrap();
    assert_eq!(added.status, 201, "{}", added.text());
    assert_eq!(added.json()["ignored_fields"], json!(["slo"]));
    // A progress report's too: a misspelt `sequence` would make every retry count.
    let progress = format!("/v1/sessions/{}/jobs/c/progress", session["id"].as_str().unwrap());
    let report = json!({"worker_type": "v100", "steps": 10, "throughput": 1.0, "seq": 1});
    let reported = c.post(&progress, &bytes(&report)).unwrap();
    assert_eq!(reported.status, 200, "{}", reported.text());
    assert_eq!(reported.json()["ignored_fields"], json!(["seq"]));
    // Only the answer to the request that gave them names them.
    let view = c.get(&format!("/v1/sessions/{}", session["id"].as_str().unwrap())).unwrap().json();
    assert!(view.get("ignored_fields").is_none());
    assert!(view["jobs"].as_array().unwrap().iter().all(|j| j.get("ignored_fields").is_none()), "{view}");
}
