//! Every endpoint of `arbiter serve`, driven over HTTP against the real binary on an ephemeral
//! port: the stateless solve (same answer as `arbiter solve`), the session life cycle, health,
//! metrics, the OpenAPI document, and graceful shutdown.

use crate::service_support::*;
use serde_json::{json, Value};
use std::time::Duration;

#[test]
fn allocations_answers_as_the_cli_does() {
    let f = Fixture::start("alloc", &["--no-demo"]);
    let mut c = f.client();
    let request = demo_request();
    let reply = c.post("/v1/allocations", &bytes(&request)).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let http = reply.json();

    let cli = std::process::Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["solve", "--input", &format!("{}/fixtures/demo.json", env!("CARGO_MANIFEST_DIR"))])
        .output()
        .unwrap();
    let mut cli: Value = serde_json::from_slice(&cli.stdout).unwrap();
    let mut http_same = http.clone();
    // Everything but the time the solve took is the same.
    cli["stats"]["solve_seconds"] = json!(0);
    http_same["stats"]["solve_seconds"] = json!(0);
    cli["stats"]["realizable"]["seconds"] = json!(0);
    http_same["stats"]["realizable"]["seconds"] = json!(0);
    assert_eq!(http_same, cli);
    assert!(http["objective"].as_f64().unwrap() > 0.0);
    assert!(reply.header("x-request-id").is_some(), "every answer carries a request id");

    // Content type is not required (curl -d sends form encoding).
    let reply =
        c.send("POST", "/v1/allocations", &bytes(&request), &[("Content-Type", "application/x-www-form-urlencoded")]);
    assert_eq!(reply.unwrap().status, 200);
}

#[test]
fn session_life_cycle() {
    let f = Fixture::start("life", &["--no-demo"]);
    let mut c = f.client();
    let mut create = demo_request();
    create["round_seconds"] = json!(60);
    create["jobs"] = json!([create["jobs"][0], create["jobs"][1]]);
    let reply = c.post("/v1/sessions", &bytes(&create)).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    let session = reply.json();
    let id = session["id"].as_str().unwrap().to_string();
    assert_eq!(reply.header("location"), Some(format!("/v1/sessions/{id}").as_str()));
    assert_eq!(session["round_seconds"], 60.0);
    assert_eq!(session["stale"], true);
    assert_eq!(session["jobs"].as_array().unwrap().len(), 2);
    let base = format!("/v1/sessions/{id}");

    let list = c.get("/v1/sessions").unwrap().json();
    assert_eq!(list["sessions"][0]["id"], id.as_str());

    // Add a job; it arrives at session time 0.
    let job = json!({"id": "gpt2", "throughput": {"v100": 3.2, "p100": 1.9, "k80": 0.4}, "steps_remaining": 5000});
    let reply = c.post(&format!("{base}/jobs"), &bytes(&job)).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(reply.json()["id"], "gpt2");

    // A round recomputes the stale allocation and places jobs.
    let reply = c.post(&format!("{base}/rounds"), b"").unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    let round = reply.json();
    assert_eq!(round["index"], 0);
    assert_eq!(round["allocation_recomputed"], true);
    assert!(!round["placements"].as_array().unwrap().is_empty());
    let second = c.post(&format!("{base}/rounds"), b"{}").unwrap().json();
    assert_eq!(second["index"], 1);
    assert_eq!(second["allocation_recomputed"], false);

    let allocation = c.get(&format!("{base}/allocation")).unwrap().json();
    assert_eq!(allocation["stale"], false);
    assert_eq!(allocation["rounds"], 2);
    assert_eq!(allocation["time"], 120.0);
    let x = &allocation["allocation"]["gpt2"];
    assert!(x.as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum::<f64>() > 0.0);

    // Progress: steps go down, the measured throughput is smoothed in.
    let progress = json!({"worker_type": "v100", "steps": 1000, "throughput": 4.2});
    let reply = c.post(&format!("{base}/jobs/gpt2/progress"), &bytes(&progress)).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    let view = reply.json();
    assert_eq!(view["steps_remaining"], 4000.0);
    assert!((view["throughput"]["v100"].as_f64().unwrap() - 3.7).abs() < 1e-9);

    // Throughputs for several jobs at once.
    let update = json!({"throughputs": {"gpt2": {"v100": 5.0, "k80": 1.0}, "resnet50": {"v100": 9.0, "p100": 6.0}}});
    let reply = c.put(&format!("{base}/throughputs"), &bytes(&update)).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    let jobs = reply.json();
    assert_eq!(jobs["jobs"][0]["throughput"]["p100"], 0.0);
    assert_eq!(c.get(&base).unwrap().json()["stale"], true);

    // A server fails and returns; `/` in the worker name is %2F.
    let reply = c.post(&format!("{base}/workers/v100%2F0/fail"), b"").unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    let cluster = reply.json();
    assert_eq!(cluster["worker_types"]["v100"]["healthy"], 0);
    assert_eq!(cluster["failed_gpus"].as_array().unwrap().len(), 4);
    let round = c.post(&format!("{base}/rounds"), b"").unwrap().json();
    assert!(round["placements"].as_array().unwrap().iter().all(|p| p["worker_type"] != "v100"), "{round}");
    let reply = c.post(&format!("{base}/workers/v100%2F0%2F2/return"), b"").unwrap();
    assert_eq!(reply.json()["worker_types"]["v100"]["healthy"], 1);

    // Recompute now.
    let reply = c.post(&format!("{base}/allocation"), b"").unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["stale"], false);

    // Remove a job, then the session.
    assert_eq!(c.delete(&format!("{base}/jobs/gpt2")).unwrap().status, 204);
    let view = c.get(&base).unwrap().json();
    assert!(view["jobs"].as_array().unwrap().iter().all(|j| j["id"] != "gpt2"));
    assert_eq!(view["rounds"], 3);
    assert_eq!(c.delete(&base).unwrap().status, 204);
    assert_error(&c.get(&base).unwrap(), 404, "unknown_session", None);
    assert_error(&c.delete(&base).unwrap(), 404, "unknown_session", None);
}

/// Numbered progress reports (`sequence`): a retry, with the number of a report already counted,
/// is answered as the job stands and counts nothing, nor does a lower number; a higher one counts;
/// reports without a number always count; after a kill the replayed session knows the numbers.
#[test]
fn a_retried_progress_report_counts_once_even_after_a_restart() {
    let dir = TempDir::new("progress-sequence");
    let db = dir.path("arbiter.db");
    let mut server = Server::start(&db, &dir.path("first.log"), &["--no-demo"]);
    let mut c = server.client();
    let mut create = demo_request();
    create["jobs"] = json!([{"id": "a", "throughput": {"v100": 2.0}, "steps_remaining": 10000}]);
    let reply = c.post("/v1/sessions", &bytes(&create)).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    let base = format!("/v1/sessions/{}", reply.json()["id"].as_str().unwrap());
    let report = |c: &mut crate::service_support::http::Client, steps: f64, sequence: Option<u64>| {
        let mut body = json!({"worker_type": "v100", "steps": steps, "throughput": 2.0});
        if let Some(n) = sequence {
            body["sequence"] = json!(n);
        }
        let reply = c.post(&format!("{base}/jobs/a/progress"), &bytes(&body)).unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text());
        let view = reply.json();
        (view["steps_remaining"].as_f64().unwrap(), view["progress_sequence"].clone())
    };
    assert_eq!(report(&mut c, 100.0, None), (9900.0, Value::Null));
    assert_eq!(report(&mut c, 100.0, Some(1)), (9800.0, json!(1)));
    assert_eq!(report(&mut c, 100.0, Some(1)), (9800.0, json!(1)), "a retry counts nothing");
    assert_eq!(report(&mut c, 100.0, Some(3)), (9700.0, json!(3)));
    assert_eq!(report(&mut c, 100.0, Some(2)), (9700.0, json!(3)), "nor does a lower number");
    assert_eq!(report(&mut c, 100.0, None), (9600.0, json!(3)), "unnumbered reports always count");
    let before = c.get(&base).unwrap().json();
    server.kill();
    let server = Server::start(&db, &dir.path("second.log"), &["--no-demo"]);
    let mut c = server.client();
    assert_eq!(c.get(&base).unwrap().json(), before, "replay gives the same job, numbers included");
    assert_eq!(report(&mut c, 100.0, Some(3)), (9600.0, json!(3)), "the retry after a restart counts nothing");
    assert_eq!(report(&mut c, 100.0, Some(4)), (9500.0, json!(4)));
    // A number must be a whole number ≥ 0.
    for bad in [json!(-1), json!(1.5), json!("4")] {
        let body = json!({"worker_type": "v100", "steps": 1, "throughput": 2.0, "sequence": bad});
        let reply = c.post(&format!("{base}/jobs/a/progress"), &bytes(&body)).unwrap();
        assert_eq!(reply.status, 400, "{bad}: {}", reply.text());
    }
}

#[test]
fn a_session_in_configurations_mode_follows_the_decomposition() {
    let f = Fixture::start("configurations", &["--no-demo"]);
    let mut c = f.client();
    let mut create = demo_request();
    create["mode"] = json!("configurations");
    // The realizable allocation (the default: no `realizable` given) and the fractional one,
    // whose decomposition names a shortfall.
    follows_the_decomposition(&mut c, &create, true);
    create["realizable"] = json!(false);
    follows_the_decomposition(&mut c, &create, false);
    create["mode"] = json!("deficit");
    let reply = c.post("/v1/sessions", &bytes(&create)).unwrap();
    assert_error(&reply, 400, "malformed_request", Some("mode"));
    assert!(reply.text().contains("configurations"), "{}", reply.text());
}

#[test]
fn a_fractional_session_leaves_no_gpu_idle_that_a_job_could_use() {
    let f = Fixture::start("tie-break", &["--no-demo"]);
    let mut c = f.client();
    let demo = demo_request();
    let jobs: std::collections::HashMap<String, Value> =
        demo["jobs"].as_array().unwrap().iter().map(|j| (j["id"].as_str().unwrap().to_string(), j.clone())).collect();
    let count = |wt: &str| demo["cluster"]["worker_types"][wt]["count"].as_f64().unwrap();
    // The session's allocation after one round, with the GPUs it uses on each type and the
    // (job, type) pairs where a job with time left could run on idle GPUs.
    let mut solved = |policy: &str, tie_break: Option<&str>| -> (serde_json::Map<String, Value>, Vec<String>) {
        let mut create = demo.clone();
        create["policy"] = json!(policy);
        create["realizable"] = json!(false);
        if let Some(t) = tie_break {
            create["tie_break"] = json!(t);
        }
        let reply = c.post("/v1/sessions", &bytes(&create)).unwrap();
        assert_eq!(reply.status, 201, "{}", reply.text());
        let base = format!("/v1/sessions/{}", reply.json()["id"].as_str().unwrap());
        assert_eq!(c.post(&format!("{base}/rounds"), b"").unwrap().status, 200);
        let view = c.get(&format!("{base}/allocation")).unwrap().json();
        assert_eq!(view["tie_break"], tie_break.unwrap_or("throughput"), "{view}");
        let allocation = view["allocation"].as_object().unwrap();
        let mut used = serde_json::Map::new();
        for (id, row) in allocation {
            let sf = jobs[id]["scale_factor"].as_f64().unwrap_or(1.0);
            for (wt, x) in row.as_object().unwrap() {
                let total = used.get(wt).and_then(Value::as_f64).unwrap_or(0.0);
                used.insert(wt.clone(), json!(total + x.as_f64().unwrap() * sf));
            }
        }
        let mut could_use = Vec::new();
        for (id, row) in allocation {
            let time: f64 = row.as_object().unwrap().values().map(|x| x.as_f64().unwrap()).sum();
            for (wt, gpus) in &used {
                let runs_there = jobs[id]["throughput"][wt].as_f64().unwrap_or(0.0) > 0.0;
                if time < 1.0 - 1e-6 && runs_there && gpus.as_f64().unwrap() < count(wt) - 1e-6 {
                    could_use.push(format!("{id} on {wt}"));
                }
            }
        }
        (used, could_use)
    };
    for policy in ["max_min_fairness", "finish_time_fairness"] {
        let (bare, idle) = solved(policy, Some("none"));
        assert!(!idle.is_empty(), "{policy}: the bare vertex {bare:?} leaves nothing idle");
        let (filled, idle) = solved(policy, None);
        assert!(idle.is_empty(), "{policy}: {filled:?} leaves GPUs idle for {idle:?}");
        if policy == "max_min_fairness" {
            // The demo: the bare vertex uses a third of one K80 of 8.
            assert!(bare["k80"].as_f64().unwrap() < 1.0, "{bare:?}");
            assert!(filled["k80"].as_f64().unwrap() > 3.0, "{filled:?}");
        }
    }
}

/// A session of `create` in mode `configurations`: after 30 rounds every job has received what the
/// allocation's decomposition delivers it, within a few rounds.
fn follows_the_decomposition(c: &mut crate::service_support::http::Client, create: &Value, realizable: bool) {
    let reply = c.post("/v1/sessions", &bytes(create)).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    let session = reply.json();
    assert_eq!(session["mode"], "configurations");
    let base = format!("/v1/sessions/{}", session["id"].as_str().unwrap());
    for _ in 0..30 {
        let reply = c.post(&format!("{base}/rounds"), b"").unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let allocation = c.get(&format!("{base}/allocation")).unwrap().json();
    assert_eq!(allocation["realizable"]["checked"], true, "{allocation}");
    assert_eq!(allocation["realizable"]["certified"], true, "{allocation}");
    assert!(allocation.get("decomposition_skipped").is_none(), "{allocation}");
    assert_eq!(allocation["realizable_solve"]["applied"].as_bool(), realizable.then_some(true), "{allocation}");
    // Every job gets what the decomposition delivers it, within a few rounds of 30.
    let none = Vec::new();
    let shortfall = allocation["realizable"]["shortfall"].as_array().unwrap_or(&none);
    assert_eq!(shortfall.is_empty(), realizable, "{allocation}");
    for (id, x) in allocation["allocation"].as_object().unwrap() {
        for (wt, x) in x.as_object().unwrap() {
            let deliverable = shortfall
                .iter()
                .find(|s| s["job"] == id.as_str() && s["worker_type"] == wt.as_str())
                .map_or(x.as_f64().unwrap(), |s| s["deliverable"].as_f64().unwrap());
            let received = allocation["received_fraction"][id][wt].as_f64().unwrap();
            assert!((deliverable - received).abs() <= 3.0 / 30.0 + 1e-9, "{id} on {wt}: {received} of {deliverable}");
        }
    }
}

#[test]
fn a_realizable_session_follows_its_own_decomposition_and_replays_it() {
    let dir = TempDir::new("realizable");
    let db = dir.path("arbiter.db");
    let mut server = Server::start(&db, &dir.path("first.log"), &["--no-demo"]);
    let mut c = server.client();
    let mut create = las_request(48);
    create["mode"] = json!("configurations");
    create["realizable"] = json!(true);
    create["round_seconds"] = json!(360);
    let reply = c.post("/v1/sessions", &bytes(&create)).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    let base = format!("/v1/sessions/{}", reply.json()["id"].as_str().unwrap());
    for _ in 0..40 {
        let reply = c.post(&format!("{base}/rounds"), b"").unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let view = c.get(&format!("{base}/allocation")).unwrap().json();
    let solve = &view["realizable_solve"];
    assert_eq!(solve["applied"], true, "{view}");
    assert_eq!(solve["certified"], true, "{view}");
    // The allocation is its own decomposition's: everything is delivered, and the rounds follow it.
    assert_eq!(view["realizable"]["fraction"], 1.0, "{view}");
    assert!(view.get("decomposition_skipped").is_none(), "{view}");
    for (id, row) in view["allocation"].as_object().unwrap() {
        for (wt, x) in row.as_object().unwrap() {
            let received = view["received_fraction"][id][wt].as_f64().unwrap();
            assert!((x.as_f64().unwrap() - received).abs() <= 3.0 / 40.0 + 1e-9, "{id} on {wt}: {received} of {x}");
        }
    }
    // A restart replays the stored solve and its decomposition: the same view (a decomposition
    // looked for again would report its own search), and the rounds go on following it.
    server.terminate(Duration::from_secs(10));
    let server = Server::start(&db, &dir.path("second.log"), &["--no-demo"]);
    let mut c = server.client();
    assert_eq!(c.get(&format!("{base}/allocation")).unwrap().json(), view);
    let reply = c.post(&format!("{base}/rounds"), b"").unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    let after = c.get(&format!("{base}/allocation")).unwrap().json();
    assert!(after.get("decomposition_skipped").is_none(), "{after}");
    assert_eq!(after["realizable_solve"], view["realizable_solve"]);
}

#[test]
fn demo_session_health_metrics_and_openapi() {
    let f = Fixture::start("ops", &[]);
    let mut c = f.client();
    // The demo session is there at once, with an allocation.
    let allocation = c.get("/v1/sessions/demo/allocation").unwrap();
    assert_eq!(allocation.status, 200, "{}", allocation.text());
    let allocation = allocation.json();
    assert_eq!(allocation["stale"], false);
    assert_eq!(allocation["allocation"].as_object().unwrap().len(), 8);
    assert_eq!(c.post("/v1/sessions/demo/rounds", b"").unwrap().status, 200);

    let health = c.get("/healthz").unwrap();
    assert_eq!(health.status, 200);
    let health = health.json();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["sessions"], 1);

    let index = c.get("/").unwrap().json();
    assert_eq!(index["service"], "arbiter");

    assert_eq!(c.post("/v1/allocations", b"{").unwrap().status, 400);
    let metrics = c.get("/metrics").unwrap();
    assert_eq!(metrics.status, 200);
    assert!(metrics.header("content-type").unwrap().starts_with("text/plain"));
    let text = metrics.text();
    for needle in [
        "arbiter_http_requests_total{route=\"/v1/sessions/{id}/rounds\",method=\"POST\",status=\"200\"} 1",
        "arbiter_http_request_duration_seconds_bucket{route=\"/healthz\",method=\"GET\",le=\"+Inf\"} 1",
        "arbiter_solve_duration_seconds_count{endpoint=\"session\",outcome=\"ok\"}",
        "arbiter_errors_total{code=\"malformed_request\"} 1",
        "arbiter_sessions 1",
        "arbiter_session_events_total{kind=\"round\"} 1",
        "# TYPE arbiter_http_request_duration_seconds histogram",
    ] {
        assert!(text.contains(needle), "metrics lack {needle:?}:\n{text}");
    }

    let doc = c.get("/openapi.json").unwrap();
    assert_eq!(doc.status, 200);
    let served = doc.text();
    let file = std::fs::read_to_string(format!("{}/openapi/openapi.json", env!("CARGO_MANIFEST_DIR"))).unwrap();
    assert_eq!(served, file, "the served document is the checked-in one");
}

#[test]
fn sigterm_finishes_in_flight_requests() {
    // Solver threads at normal priority: on a busy CI machine a niced solve could crawl.
    let mut f = Fixture::start("term", &["--no-demo", "--solver-nice", "0"]);
    let body = bytes(&slow_request(4096));
    let addr = f.server.addr;
    let in_flight = std::thread::spawn(move || {
        let mut c = crate::service_support::http::Client::new(addr);
        c.post("/v1/allocations", &body)
    });
    // Let the request reach the server; its solve takes about a second.
    std::thread::sleep(Duration::from_millis(300));
    let status = f.server.terminate(Duration::from_secs(60));
    let reply = in_flight.join().unwrap().expect("the in-flight request is answered");
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(status.success(), "exit status {status:?}");
    assert!(f.server.log_text().contains("shutting down"), "{}", f.server.log_text());
}
