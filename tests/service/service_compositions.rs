//! Sessions run by a composition of list-policy stages (`"composition"` at creation): rounds
//! worked by hand for LAS and accept_x admission, the stages' errors, reported metrics, the
//! session metrics of both kinds of session, and replay after a kill.

use crate::service_support::*;
use serde_json::{json, Value};

/// One type of 4 GPUs on one server; three 2-GPU jobs.
fn create(composition: Value) -> Value {
    json!({
        "composition": composition,
        "round_seconds": 100,
        "cluster": {"worker_types": {"v100": {"count": 4, "gpus_per_server": 4}}},
        "jobs": [
            {"id": "a", "scale_factor": 2, "throughput": {"v100": 1.0}, "steps_remaining": 1000, "arrival": 0},
            {"id": "b", "scale_factor": 2, "throughput": {"v100": 1.0}, "steps_remaining": 1000, "arrival": 0},
            {"id": "c", "scale_factor": 2, "throughput": {"v100": 1.0}, "steps_remaining": 1000, "arrival": 0},
        ],
    })
}

fn running(round: &Value) -> Vec<String> {
    let mut ids: Vec<String> = round["placements"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["jobs"].as_array().unwrap().iter().map(|j| j.as_str().unwrap().to_string()))
        .collect();
    ids.sort();
    ids
}

fn job<'a>(session: &'a Value, id: &str) -> &'a Value {
    session["jobs"].as_array().unwrap().iter().find(|j| j["id"] == id).unwrap()
}

#[test]
fn las_composition_preempts_the_most_served_job() {
    let f = Fixture::start("composed", &["--no-demo"]);
    let mut c = f.client();
    let reply = c.post("/v1/sessions", &bytes(&create(json!({"scheduling": "las"})))).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    let session = reply.json();
    assert_eq!(session["policy"], "las");
    assert_eq!(session["composition"], "accept_all+las+consolidated+lease");
    assert_eq!(session["stale"], false, "a composed session never solves");
    let base = format!("/v1/sessions/{}", session["id"].as_str().unwrap());

    // Round 0: nobody has service; ties go by arrival, then submission: a and b on 4 GPUs.
    let r0 = c.post(&format!("{base}/rounds"), b"").unwrap().json();
    assert_eq!(running(&r0), ["a", "b"]);
    assert_eq!(r0["jobs"]["c"]["lease"], "waiting");
    assert_eq!(r0["placements"][0]["gpus"].as_array().unwrap().len(), 2);
    // Round 1: c (no service) first, then a (200 GPU-s, earlier than b) keeps its GPUs; b is preempted.
    let r1 = c.post(&format!("{base}/rounds"), b"").unwrap().json();
    assert_eq!(running(&r1), ["a", "c"]);
    assert_eq!(r1["jobs"]["a"]["lease"], "renewed");
    assert_eq!(r1["jobs"]["b"]["lease"], "preempted");
    assert_eq!(r1["jobs"]["c"]["lease"], "started");
    assert_eq!(r1["preempted"], json!(["b"]));

    // The allocation of a list policy is the current round's: all of its time on the type a job
    // runs on, none while it waits; no LP to solve, so no check of it.
    let allocation = c.get(&format!("{base}/allocation")).unwrap().json();
    assert_eq!(allocation["allocation"], json!({"a": {"v100": 1.0}, "b": {"v100": 0.0}, "c": {"v100": 1.0}}));
    assert_eq!(allocation["effective_throughput"], json!({"a": 1.0, "b": 0.0, "c": 1.0}));
    assert_eq!(allocation["received_fraction"]["b"]["v100"], 0.5);
    assert_eq!(allocation["realizable"]["checked"], false, "{allocation}");
    assert_eq!(c.get(&base).unwrap().json()["jobs"][2]["allocation"], json!({"v100": 1.0}));

    let s = c.get(&base).unwrap().json();
    assert_eq!(job(&s, "b")["preemptions"], 1);
    assert_eq!(job(&s, "c")["first_run"], 100.0);
    assert_eq!(job(&s, "a")["pipeline"]["attained_service_gpu_seconds"], 400.0);
    assert_eq!(job(&s, "c")["pipeline"]["queueing_seconds"], 100.0);
    assert_eq!(job(&s, "b")["total_received_seconds"]["v100"], 100.0);
    let m = &s["metrics"];
    assert_eq!(m["preemptions_per_job"], 1.0 / 3.0);
    assert_eq!(m["average_responsiveness_seconds"], 100.0 / 3.0);
    assert_eq!(m["utilization"], 1.0);
    assert_eq!(m["completed_jobs"], 0);
    assert!(m["average_jct_seconds"].is_null());

    // a finishes (its executor removes it) at session time 200: JCT 200 s.
    assert_eq!(c.delete(&format!("{base}/jobs/a")).unwrap().status, 204);
    let m = c.get(&base).unwrap().json()["metrics"].clone();
    assert_eq!(m["completed_jobs"], 1);
    assert_eq!(m["average_jct_seconds"], 200.0);
    assert_eq!(m["jct_percentiles_seconds"]["p50"], 200.0);
    // Round 2: b and c fill the 4 GPUs; c keeps its lease, b resumes.
    let r2 = c.post(&format!("{base}/rounds"), b"").unwrap().json();
    assert_eq!(running(&r2), ["b", "c"]);
    assert_eq!(r2["jobs"]["c"]["lease"], "renewed");
    assert_eq!(r2["jobs"]["b"]["lease"], "started");

    // No LP allocation behind it: a recomputation is refused; the view shows round 2's placements.
    assert_error(&c.post(&format!("{base}/allocation"), b"").unwrap(), 422, "unsupported", Some("allocation"));
    let allocation = c.get(&format!("{base}/allocation")).unwrap().json();
    assert_eq!(allocation["policy"], "las");
    assert_eq!(allocation["allocation"], json!({"b": {"v100": 1.0}, "c": {"v100": 1.0}}));
}

#[test]
fn accept_x_holds_back_demand_beyond_x_times_the_cluster() {
    let f = Fixture::start("admission", &["--no-demo"]);
    let mut c = f.client();
    let body = create(json!({"admission": {"accept_x": 1.0}, "scheduling": "fifo", "preemption": "none"}));
    let session = c.post("/v1/sessions", &bytes(&body)).unwrap().json();
    assert_eq!(session["composition"], "accept_x=1+fifo+consolidated+none");
    let base = format!("/v1/sessions/{}", session["id"].as_str().unwrap());
    let r0 = c.post(&format!("{base}/rounds"), b"").unwrap().json();
    assert_eq!(running(&r0), ["a", "b"]);
    let s = c.get(&base).unwrap().json();
    assert_eq!(job(&s, "a")["pipeline"]["admitted"], true);
    assert_eq!(job(&s, "b")["pipeline"]["admitted"], true);
    // 4 + 2 GPUs would exceed 1.0 × 4: c waits outside, and its queueing does not start.
    assert_eq!(job(&s, "c")["pipeline"]["admitted"], false);
    assert_eq!(job(&s, "c")["pipeline"]["queueing_seconds"], 0.0);
    // b leaves: c is admitted and runs in the next round.
    assert_eq!(c.delete(&format!("{base}/jobs/b")).unwrap().status, 204);
    let r1 = c.post(&format!("{base}/rounds"), b"").unwrap().json();
    assert_eq!(running(&r1), ["a", "c"]);
}

/// Tiresias with two queue thresholds, 100 and 1,000 GPU-seconds: a round runs a 2-GPU job for
/// 200 GPU-seconds, so a and b (first in FIFO order) pass the first threshold in round 0 and c,
/// still in the first queue, goes ahead of them in round 1, beside a.
#[test]
fn tiresias_takes_its_queue_thresholds_as_a_list() {
    let f = Fixture::start("tiresias-queues", &["--no-demo"]);
    let mut c = f.client();
    let body = create(json!({"scheduling": {"tiresias": [100, 1000]}}));
    let session = c.post("/v1/sessions", &bytes(&body)).unwrap().json();
    assert_eq!(session["composition"], "accept_all+tiresias=100/1000+consolidated+lease");
    let base = format!("/v1/sessions/{}", session["id"].as_str().unwrap());
    let r0 = c.post(&format!("{base}/rounds"), b"").unwrap().json();
    assert_eq!(running(&r0), ["a", "b"]);
    let r1 = c.post(&format!("{base}/rounds"), b"").unwrap().json();
    assert_eq!(running(&r1), ["a", "c"]);
}

#[test]
fn compositions_refuse_bad_stages_with_the_contracts_errors() {
    let f = Fixture::start("composed-errors", &["--no-demo"]);
    let mut c = f.client();
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({"scheduling": "lottery"}), "unknown_policy", "composition.scheduling"),
        (json!({"scheduling": "las", "placement": "anywhere"}), "unknown_policy", "composition.placement"),
        (json!({"scheduling": "las", "admission": {"accept_x": -1}}), "invalid_number", "composition.admission"),
        (json!({"scheduling": "las", "admission": {"accept_x": "lots"}}), "invalid_number", "composition.admission"),
        (json!({"scheduling": 7}), "malformed_request", "composition.scheduling"),
        (json!({"scheduling": {"tiresias": [1000, 100]}}), "invalid_number", "composition.scheduling"),
        (json!({"scheduling": {"tiresias": []}}), "invalid_number", "composition.scheduling"),
        (json!({"scheduling": "tiresias=100/x"}), "invalid_number", "composition.scheduling"),
        (json!({"scheduling": "max_min_fairness", "placement": "random"}), "unsupported", "composition.placement"),
        (json!({"scheduling": "las", "admission": {"accept_x": 1e300}}), "invalid_number", "composition.admission"),
        (
            json!({"scheduling": "las", "preemption": {"lease_term": 1e-320}}),
            "invalid_number",
            "composition.preemption",
        ),
        (json!({"scheduling": "las", "placement": {"random": 1e20}}), "invalid_number", "composition.placement"),
    ];
    for (composition, code, field) in cases {
        let reply = c.post("/v1/sessions", &bytes(&create(composition.clone()))).unwrap();
        let status = if code == "unsupported" { 422 } else { 400 };
        assert_error(&reply, status, code, Some(field));
    }
    // The scheduling stage named twice, or not at all.
    let mut both = create(json!({"scheduling": "las"}));
    both["policy"] = json!("max_min_fairness");
    assert_error(
        &c.post("/v1/sessions", &bytes(&both)).unwrap(),
        400,
        "malformed_request",
        Some("composition.scheduling"),
    );
    // An LP policy with a stage that is not Gavel's: that stage is named.
    let mut lp = create(json!({"admission": {"accept_x": 2}}));
    lp["policy"] = json!("max_min_fairness");
    assert_error(&c.post("/v1/sessions", &bytes(&lp)).unwrap(), 422, "unsupported", Some("composition.admission"));
    let mut neither = create(json!({"placement": "first_free"}));
    neither.as_object_mut().unwrap().remove("policy");
    assert_error(&c.post("/v1/sessions", &bytes(&neither)).unwrap(), 400, "missing_field", Some("policy"));
    let mut no_policy = create(json!(null));
    no_policy.as_object_mut().unwrap().remove("composition");
    assert_error(&c.post("/v1/sessions", &bytes(&no_policy)).unwrap(), 400, "missing_field", Some("policy"));
    // SRTF reads the work left: a job without steps_remaining is refused, at creation and later.
    let mut srtf = create(json!({"scheduling": "srtf"}));
    srtf["jobs"][2].as_object_mut().unwrap().remove("steps_remaining");
    assert_error(
        &c.post("/v1/sessions", &bytes(&srtf)).unwrap(),
        400,
        "missing_field",
        Some("jobs[2].steps_remaining"),
    );
    // Ideal mode is Gavel's mechanism's.
    let mut ideal = create(json!({"scheduling": "las"}));
    ideal["mode"] = json!("ideal");
    assert_error(&c.post("/v1/sessions", &bytes(&ideal)).unwrap(), 422, "unsupported", Some("mode"));
    // An LP policy in the scheduling slot with Gavel's other stages is Gavel's session.
    let gavel = c.post("/v1/sessions", &bytes(&create(json!({"scheduling": "max_min_fairness"})))).unwrap();
    assert_eq!(gavel.status, 201, "{}", gavel.text());
    assert_eq!(gavel.json()["policy"], "max_min_fairness");
    assert!(gavel.json().get("composition").is_none());
}

#[test]
fn progress_metrics_reach_the_job_and_gavel_sessions_report_metrics() {
    let f = Fixture::start("session-metrics", &["--no-demo"]);
    let mut c = f.client();
    let mut body = create(json!(null));
    body.as_object_mut().unwrap().remove("composition");
    body["policy"] = json!("max_min_fairness");
    let session = c.post("/v1/sessions", &bytes(&body)).unwrap().json();
    let base = format!("/v1/sessions/{}", session["id"].as_str().unwrap());
    let progress = json!({"worker_type": "v100", "steps": 10, "throughput": 1.0, "metrics": {"loss": 2.5}});
    let reply = c.post(&format!("{base}/jobs/a/progress"), &bytes(&progress)).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["metrics"]["loss"], 2.5);
    let bad = json!({"worker_type": "v100", "steps": 1, "throughput": 1.0, "metrics": {"loss": "high"}});
    assert_eq!(c.post(&format!("{base}/jobs/a/progress"), &bytes(&bad)).unwrap().status, 400);

    // Gavel's mechanism, 3 jobs of 2 GPUs on 4 GPUs: two run each round, all GPUs busy.
    for _ in 0..3 {
        assert_eq!(c.post(&format!("{base}/rounds"), b"").unwrap().status, 200);
    }
    let m = c.get(&base).unwrap().json()["metrics"].clone();
    assert_eq!(m["utilization"], 1.0);
    assert!(m["average_responsiveness_seconds"].as_f64().unwrap() <= 100.0 / 3.0 + 1e-9, "{m}");
    assert_eq!(c.delete(&format!("{base}/jobs/c")).unwrap().status, 204);
    let m = c.get(&base).unwrap().json()["metrics"].clone();
    assert_eq!(m["completed_jobs"], 1);
    assert_eq!(m["average_jct_seconds"], 300.0);
}

#[test]
fn a_composed_session_replays_to_the_same_state_after_a_kill() {
    let dir = TempDir::new("composed-restart");
    let db = dir.path("arbiter.db");
    let mut server = Server::start(&db, &dir.path("first.log"), &["--no-demo"]);
    let mut c = server.client();
    let body = create(json!({"scheduling": "tiresias", "placement": "random=7", "preemption": {"lease": 30}}));
    let session = c.post("/v1/sessions", &bytes(&body)).unwrap().json();
    let base = format!("/v1/sessions/{}", session["id"].as_str().unwrap());
    for round in 0..6 {
        assert_eq!(c.post(&format!("{base}/rounds"), b"").unwrap().status, 200);
        if round == 2 {
            let late = json!({"id": "d", "scale_factor": 1, "throughput": {"v100": 2.0}, "steps_remaining": 50});
            assert_eq!(c.post(&format!("{base}/jobs"), &bytes(&late)).unwrap().status, 201);
            let fail = c.post(&format!("{base}/workers/v100%2F0%2F3/fail"), b"").unwrap();
            assert_eq!(fail.status, 200, "{}", fail.text());
        }
    }
    let before = c.get(&base).unwrap().json();
    let next_before = {
        server.kill();
        let server = Server::start(&db, &dir.path("second.log"), &["--no-demo"]);
        let mut c = server.client();
        assert_eq!(c.get(&base).unwrap().json(), before, "replay rebuilds the pipeline's state");
        c.post(&format!("{base}/rounds"), b"").unwrap().json()
    };
    assert_eq!(next_before["index"], 6);
}

#[test]
fn an_ltgf_session_shares_by_tenant_and_reports_rho() {
    let f = Fixture::start("ltgf", &["--no-demo"]);
    let mut c = f.client();
    let mut body = create(json!({"scheduling": "ltgf", "preemption": {"lease_term": 100}}));
    body["entities"] = json!({"a": {"weight": 1}, "b": {"weight": 1}});
    for (k, entity) in ["a", "a", "b"].iter().enumerate() {
        body["jobs"][k]["entity"] = json!(entity);
    }
    let reply = c.post("/v1/sessions", &bytes(&body)).unwrap();
    assert_eq!(reply.status, 201, "{}", reply.text());
    let base = format!("/v1/sessions/{}", reply.json()["id"].as_str().unwrap());
    // Round 0: tenant a (first) takes job a, its lease lifts it above b, which takes c.
    let r0 = c.post(&format!("{base}/rounds"), b"").unwrap().json();
    assert_eq!(running(&r0), ["a", "c"]);
    let s = c.get(&base).unwrap().json();
    let tenants = s["tenants"].as_array().unwrap();
    assert_eq!(tenants.len(), 2);
    assert_eq!((tenants[0]["name"].as_str(), tenants[0]["rho"].as_f64()), (Some("a"), Some(1.0)));
    assert_eq!(tenants[1]["fair_share_gpu_seconds"], 200.0);
    assert_eq!((tenants[0]["rho_over_time"].clone(), tenants[0]["hours"].clone()), (json!([]), json!(0)));
    assert_eq!(job(&s, "b")["pipeline"]["rho"], 0.0);
    assert_eq!(job(&s, "a")["pipeline"]["rho"], 2.0);
    // Round 1: b (ρ 0) beats a (ρ 2) within tenant a; c renews; a no longer fits.
    let r1 = c.post(&format!("{base}/rounds"), b"").unwrap().json();
    assert_eq!(running(&r1), ["b", "c"]);
    assert_eq!(r1["jobs"]["a"]["lease"], "preempted");
    // A job of a session with entities names its tenant.
    let orphan = json!({"id": "d", "scale_factor": 1, "throughput": {"v100": 1.0}, "steps_remaining": 10});
    assert_error(&c.post(&format!("{base}/jobs"), &bytes(&orphan)).unwrap(), 400, "missing_field", Some("entity"));
}
