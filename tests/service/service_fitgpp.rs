//! FitGpp sessions over HTTP (`src/service/fitgpp.rs`): jobs with kind and resources, a TE job's
//! preemption answered with the victim's grace deadline, the TE job starting when it ends; bad
//! input as the contract's error object; and the session rebuilt after kill -9.

use crate::service_support::http::Client;
use crate::service_support::{assert_error, Server, TempDir};
use serde_json::{json, Value};

fn post(client: &mut Client, path: &str, body: Value) -> crate::service_support::http::Reply {
    client.post(path, body.to_string().as_bytes()).unwrap()
}

/// One node of (8 cores, 64 GB, 2 GPUs) under FitGpp; a BE job holding all of it since 0.
fn session(client: &mut Client) -> String {
    session_with_grace(client, 30)
}

/// [`session`] with the BE job's grace period of `grace` seconds.
fn session_with_grace(client: &mut Client, grace: u32) -> String {
    let created = post(
        client,
        "/v1/fitgpp/sessions",
        json!({"nodes": [{"count": 1, "cpus": 8, "memory_gb": 64, "gpus": 2}], "preemption": "fitgpp"}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let id = created.json()["id"].as_str().unwrap().to_string();
    assert_eq!(created.header("location"), Some(format!("/v1/fitgpp/sessions/{id}").as_str()));
    let be = json!({"id": "be", "kind": "be", "cpus": 8, "memory_gb": 64, "gpus": 2,
                    "duration_seconds": 1000, "grace_period_seconds": grace});
    let pass = post(client, &format!("/v1/fitgpp/sessions/{id}/jobs"), be).json();
    assert_eq!(pass["started"], json!([{"job": "be", "node": 0}]));
    id
}

#[test]
fn a_te_job_preempts_with_a_grace_deadline_and_starts_when_it_ends() {
    let dir = TempDir::new("fitgpp-api");
    let db = dir.path("arbiter.db");
    let mut server = Server::start(&db, &dir.path("first.log"), &["--no-demo"]);
    let mut client = server.client();
    let id = session(&mut client);
    let health = client.get("/healthz").unwrap().json();
    assert_eq!((health["sessions"].as_u64(), health["fitgpp_sessions"].as_u64()), (Some(0), Some(1)));
    let te = json!({"id": "te", "kind": "te", "cpus": 2, "memory_gb": 8, "gpus": 1,
                    "duration_seconds": 100, "at": 10});
    let pass = post(&mut client, &format!("/v1/fitgpp/sessions/{id}/jobs"), te.clone()).json();
    assert_eq!(pass["now"], 10.0);
    assert_eq!(
        pass["preemptions"],
        json!([{"job": "be", "node": 0, "at": 10.0, "grace_deadline": 40.0, "for_job": "te"}])
    );
    assert_eq!(pass["reserved"], json!([{"job": "te", "node": 0, "starts_at": 40.0}]));
    let view = client.get(&format!("/v1/fitgpp/sessions/{id}")).unwrap().json();
    assert_eq!(view["jobs"][0]["phase"], "grace");
    assert_eq!(view["nodes"][0]["free"], json!({"cpus": 0, "memory_gb": 0, "gpus": 0}));

    // Bad input: a duplicate id, a time in the past, an unknown kind, an unknown session.
    let path = format!("/v1/fitgpp/sessions/{id}/jobs");
    assert_error(&post(&mut client, &path, te), 400, "duplicate_job_id", Some("id"));
    let past =
        json!({"id": "late", "kind": "be", "cpus": 1, "memory_gb": 1, "gpus": 0, "duration_seconds": 5, "at": 1});
    assert_error(&post(&mut client, &path, past), 400, "invalid_number", Some("at"));
    // A clock past 10¹² s would lose the job's seconds to rounding (at 10⁹⁹ a 10 s job took none).
    let far =
        json!({"id": "far", "kind": "be", "cpus": 1, "memory_gb": 1, "gpus": 0, "duration_seconds": 10, "at": 1e99});
    assert_error(&post(&mut client, &path, far), 400, "invalid_number", Some("at"));
    let nothing = json!({"id": "nothing", "kind": "be", "cpus": 0, "memory_gb": 0, "gpus": 0, "duration_seconds": 10});
    let refused = assert_error(&post(&mut client, &path, nothing), 400, "invalid_number", None);
    let error = &refused["error"];
    assert!(
        error["field"].is_null() && error["jobs"] == json!(["nothing"]),
        "no one field asks for nothing: {refused}"
    );
    // An array would be read as the fields in order.
    assert_error(&post(&mut client, &path, json!(["arr", "be", 1, 1, 0, 5])), 400, "malformed_request", None);
    let huge = json!({"id": "h", "kind": "be", "cpus": 1, "memory_gb": 1, "gpus": 0, "duration_seconds": 1e308});
    let refused = assert_error(&post(&mut client, &path, huge), 400, "invalid_number", Some("duration_seconds"));
    assert!(refused["error"]["message"].as_str().unwrap().ends_with("got 1e308"), "{refused}");
    let kind = json!({"id": "x", "kind": "urgent", "cpus": 1, "memory_gb": 1, "gpus": 0, "duration_seconds": 5});
    assert_error(&post(&mut client, &path, kind), 400, "malformed_request", Some("kind"));
    let big = json!({"id": "big", "kind": "be", "cpus": 9, "memory_gb": 1, "gpus": 0, "duration_seconds": 5});
    assert_error(&post(&mut client, &path, big), 400, "job_cannot_run", Some("cpus"));
    assert_error(&client.get("/v1/fitgpp/sessions/nope").unwrap(), 404, "unknown_session", None);
    let bad = json!({"nodes": [{"cpus": 8, "memory_gb": 64, "gpus": 2}], "preemption": "sjf"});
    assert_error(&post(&mut client, "/v1/fitgpp/sessions", bad), 400, "unknown_policy", Some("preemption"));
    // Numbers past the contract's range (1e-100 to 1e100 in magnitude): a run of 5e-324 s made
    // a slowdown of 1e300 and more; λ = 1e300 and a clock at 1e300 are refused the same way.
    let tiny = json!({"id": "tiny", "kind": "be", "cpus": 1, "memory_gb": 1, "gpus": 0, "duration_seconds": 5e-324});
    assert_error(&post(&mut client, &path, tiny), 400, "invalid_number", Some("duration_seconds"));
    let lambda = json!({"nodes": [{"cpus": 8, "memory_gb": 64, "gpus": 2}], "lambda": 1e300});
    assert_error(&post(&mut client, "/v1/fitgpp/sessions", lambda), 400, "invalid_number", Some("lambda"));
    // A clock past the range, or back before now (10 s).
    let advance = format!("/v1/fitgpp/sessions/{id}/advance");
    for to in [1e300, 5.0] {
        assert_error(&post(&mut client, &advance, json!({ "to": to })), 400, "invalid_number", Some("to"));
    }

    // Killed before the grace period ends; the restarted server replays to the same state.
    server.kill();
    let server = Server::start(&db, &dir.path("second.log"), &["--no-demo"]);
    let mut client = server.client();
    let before = client.get(&format!("/v1/fitgpp/sessions/{id}")).unwrap().json();
    assert_eq!(before["now"], 10.0);
    assert_eq!(before["jobs"][1]["phase"], "reserved");
    let pass = post(&mut client, &format!("/v1/fitgpp/sessions/{id}/advance"), json!({"to": 40})).json();
    assert_eq!(pass["started"], json!([{"job": "te", "node": 0}]));
    let view = client.get(&format!("/v1/fitgpp/sessions/{id}")).unwrap().json();
    assert_eq!(view["queue"], json!(["be"]), "the victim is back at the head of the queue");
    post(&mut client, &format!("/v1/fitgpp/sessions/{id}/advance"), json!({"to": 2000}));
    let view = client.get(&format!("/v1/fitgpp/sessions/{id}")).unwrap().json();
    assert_eq!(view["jobs"][1]["finish"], 140.0);
    assert_eq!(view["jobs"][1]["slowdown"], 1.3);
    assert_eq!((view["jobs"][0]["finish"].clone(), view["jobs"][0]["preemptions"].clone()), (json!(1130.0), json!(1)));

    // A victim with no grace period leaves at once: the TE job starts in the same answer.
    let other = session_with_grace(&mut client, 0);
    let te = json!({"id": "te", "kind": "te", "cpus": 2, "memory_gb": 8, "gpus": 1, "duration_seconds": 100, "at": 10});
    let pass = post(&mut client, &format!("/v1/fitgpp/sessions/{other}/jobs"), te).json();
    assert_eq!(pass["preemptions"][0]["grace_deadline"], 10.0, "{pass}");
    assert_eq!(pass["started"], json!([{"job": "te", "node": 0}]), "{pass}");
    let view = client.get(&format!("/v1/fitgpp/sessions/{other}")).unwrap().json();
    assert_eq!(
        (view["jobs"][0]["phase"].clone(), view["jobs"][1]["phase"].clone()),
        (json!("queued"), json!("running"))
    );
    assert_eq!(client.delete(&format!("/v1/fitgpp/sessions/{other}")).unwrap().status, 204);

    // The regular sessions do not see it; deleting it is durable.
    let sessions = client.get("/v1/sessions").unwrap().json();
    assert_eq!(sessions["sessions"], json!([]));
    assert_eq!(client.delete(&format!("/v1/fitgpp/sessions/{id}")).unwrap().status, 204);
    assert_error(&client.get(&format!("/v1/fitgpp/sessions/{id}")).unwrap(), 404, "unknown_session", None);
}
