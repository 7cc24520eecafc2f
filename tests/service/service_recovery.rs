//! Crash recovery: a client streams session events (jobs added and removed, progress, throughput
//! updates, worker failures, rounds) at the real server, which is killed with SIGKILL mid-stream.
//! After a restart on the same database, the session must be exactly the state after every
//! acknowledged event (plus, at most, the one in flight when the process died): the same jobs,
//! received times, allocation and leases, checked against a model built in-process from the
//! same events with the library.

use crate::service_support::*;
use arbiter::lp::Backend;
use arbiter::mechanism::Session;
use arbiter::service::sessions::events::{apply, Event, Stored};
use arbiter::service::sessions::spec::Spec;
use arbiter::service::sessions::views;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One scripted event: the HTTP call and the stored event it becomes.
#[derive(Clone)]
enum Step {
    AddJob(Value),
    RemoveJob(String),
    Progress(String, Value),
    Throughputs(Value),
    Fail(String),
    Return(String),
    Round,
}

fn script(len: usize) -> Vec<Step> {
    let mut steps = Vec::with_capacity(len);
    let mut added: Vec<String> = Vec::new();
    let mut failed: Option<String> = None;
    let mut i = 0;
    while steps.len() < len {
        i += 1;
        if i % 7 == 0 {
            let id = format!("n{i}");
            let sf = if i % 3 == 0 { 2 } else { 1 };
            let t = 1.0 + (i % 5) as f64;
            steps.push(Step::AddJob(json!({"id": id, "scale_factor": sf, "steps_remaining": 10000 + i,
                "throughput": {"v100": 2.0 * t, "p100": 1.3 * t, "k80": 0.5 * t}})));
            added.push(id);
        } else if i % 5 == 0 {
            steps.push(Step::Round);
        } else if i % 3 == 0 {
            let job = ["resnet50", "a3c", "transformer"][i % 3].to_string();
            let worker_type = ["v100", "p100", "k80"][i % 3];
            steps.push(Step::Progress(
                job,
                json!({"worker_type": worker_type, "steps": 37 * i, "throughput": 1.0 + (i % 9) as f64 / 3.0}),
            ));
        } else if i % 11 == 0 {
            steps.push(Step::Throughputs(
                json!({"throughputs": {"a3c": {"v100": 2.0 + (i % 4) as f64 / 10.0, "k80": 1.0}}}),
            ));
        } else if i % 13 == 0 {
            match failed.take() {
                Some(worker) => steps.push(Step::Return(worker)),
                None => {
                    let worker = format!("k80/{}", i % 2);
                    steps.push(Step::Fail(worker.clone()));
                    failed = Some(worker);
                }
            }
        } else if i % 17 == 0 && !added.is_empty() {
            steps.push(Step::RemoveJob(added.remove(0)));
        }
    }
    steps
}

fn send(c: &mut crate::service_support::http::Client, base: &str, step: &Step) -> std::io::Result<u16> {
    let reply = match step {
        Step::AddJob(job) => c.post(&format!("{base}/jobs"), &bytes(job))?,
        Step::RemoveJob(job) => c.delete(&format!("{base}/jobs/{job}"))?,
        Step::Progress(job, body) => c.post(&format!("{base}/jobs/{job}/progress"), &bytes(body))?,
        Step::Throughputs(body) => c.put(&format!("{base}/throughputs"), &bytes(body))?,
        Step::Fail(worker) => c.post(&format!("{base}/workers/{}/fail", worker.replace('/', "%2F")), b"")?,
        Step::Return(worker) => c.post(&format!("{base}/workers/{}/return", worker.replace('/', "%2F")), b"")?,
        Step::Round => c.post(&format!("{base}/rounds"), b"")?,
    };
    assert!(reply.status < 300, "a scripted event was refused: {} {}", reply.status, reply.text());
    Ok(reply.status)
}

/// Applies a step to the model as the server does (solving when a round finds the allocation stale).
fn model_apply(spec: &Spec, session: &mut Session, step: &Step) {
    let event = match step {
        Step::AddJob(job) => Event::AddJob { body: job.to_string() },
        Step::RemoveJob(job) => Event::RemoveJob { job: job.clone() },
        Step::Progress(job, body) => Event::Progress { job: job.clone(), body: body.to_string() },
        Step::Throughputs(body) => Event::Throughputs { body: body.to_string() },
        Step::Fail(worker) => Event::WorkerFailed { worker: worker.clone() },
        Step::Return(worker) => Event::WorkerReturned { worker: worker.clone() },
        Step::Round => {
            let allocation = session
                .is_stale()
                .then(|| Stored::new(&session.solve_allocation(Backend::default()).expect("the model solves")));
            Event::Round { allocation }
        }
    };
    apply(spec, session, &event).unwrap_or_else(|e| panic!("the model refuses an event: {:?}", e.body()));
}

#[test]
fn kill_9_mid_stream_loses_nothing_acknowledged() {
    let dir = TempDir::new("crash");
    let db = dir.path("arbiter.db");
    let mut server = Server::start(&db, &dir.path("first.log"), &["--no-demo"]);
    let mut create = demo_request();
    create["round_seconds"] = json!(60);
    create["jobs"] = json!([create["jobs"][0], create["jobs"][1], create["jobs"][2], create["jobs"][6]]);
    let created = server.client().post("/v1/sessions", &bytes(&create)).unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    let id = created.json()["id"].as_str().unwrap().to_string();
    let base = format!("/v1/sessions/{id}");

    let steps = script(400);
    let acked = Arc::new(AtomicUsize::new(0));
    let streamer = {
        let (steps, acked, addr, base) = (steps.clone(), acked.clone(), server.addr, base.clone());
        std::thread::spawn(move || {
            let mut c = crate::service_support::http::Client::new(addr);
            c.timeout = Duration::from_secs(10);
            for step in &steps {
                if send(&mut c, &base, step).is_err() {
                    return;
                }
                acked.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    while acked.load(Ordering::SeqCst) < 60 {
        std::thread::sleep(Duration::from_millis(2));
    }
    server.kill();
    streamer.join().unwrap();
    let k = acked.load(Ordering::SeqCst);
    assert!(k < steps.len(), "the kill came after the whole stream; make it longer");

    let server = Server::start(&db, &dir.path("second.log"), &["--no-demo"]);
    let mut c = server.client();
    let restored = c.get(&base).unwrap();
    assert_eq!(restored.status, 200, "the session is back: {}", restored.text());
    let restored = restored.json();

    // The model: the creation, then the first k (or k + 1) events, through the same library code.
    let (spec, mut model) = Spec::parse(&create.to_string()).unwrap();
    for step in &steps[..k] {
        model_apply(&spec, &mut model, step);
    }
    let created_at = restored["created_at"].as_f64().unwrap();
    // Through text, as the server's answer came: serde_json's float parsing is not always exact.
    let render = |s: &Session| -> Value {
        serde_json::from_str(&serde_json::to_string(&views::session(&id, created_at, &spec, s).unwrap()).unwrap())
            .unwrap()
    };
    let mut expected = render(&model);
    if restored != expected {
        // The event in flight at the kill may have been made durable before its answer was sent.
        model_apply(&spec, &mut model, &steps[k]);
        expected = render(&model);
    }
    assert_eq!(restored, expected, "after {k} acknowledged events the restored session differs");
    eprintln!("killed after {k} acknowledged events of {}; restored {} rounds", steps.len(), restored["rounds"]);
    assert!(restored["rounds"].as_u64().unwrap() > 0);

    // It carries on exactly as the model does.
    let round = c.post(&format!("{base}/rounds"), b"").unwrap().json();
    model_apply(&spec, &mut model, &Step::Round);
    assert_eq!(c.get(&base).unwrap().json(), render(&model), "the next round after the restart: {round}");
    let listed = c.get("/v1/sessions").unwrap().json();
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1);
}

#[test]
fn deleted_sessions_stay_deleted_and_the_demo_is_not_duplicated() {
    let dir = TempDir::new("restart");
    let db = dir.path("arbiter.db");
    let mut server = Server::start(&db, &dir.path("first.log"), &[]);
    let mut c = server.client();
    let created = c.post("/v1/sessions", &bytes(&demo_request())).unwrap().json();
    let gone = created["id"].as_str().unwrap().to_string();
    assert_eq!(c.delete(&format!("/v1/sessions/{gone}")).unwrap().status, 204);
    assert_eq!(c.post("/v1/sessions/demo/rounds", b"").unwrap().status, 200);
    let demo = c.get("/v1/sessions/demo").unwrap().json();
    server.kill();

    let server = Server::start(&db, &dir.path("second.log"), &[]);
    let mut c = server.client();
    assert_error(&c.get(&format!("/v1/sessions/{gone}")).unwrap(), 404, "unknown_session", None);
    assert_eq!(c.get("/v1/sessions/demo").unwrap().json(), demo);
    assert_eq!(c.get("/v1/sessions").unwrap().json()["sessions"].as_array().unwrap().len(), 1);

    // A second server on the same database is refused.
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["serve", "--addr", "127.0.0.1:0", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!status.status.success());
    assert!(String::from_utf8_lossy(&status.stderr).contains("in use"), "{}", String::from_utf8_lossy(&status.stderr));
}
