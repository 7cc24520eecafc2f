//! OASiS sessions over HTTP (`src/service/oasis.rs`): the three-job example of
//! `formulations/oasis.md` worked by hand (admitted, rejected by price, admitted), each decision
//! with its utility, priced cost, payoff and the unit prices it met; bad input as the contract's
//! error object; and the session rebuilt after kill -9.

use crate::service_support::http::Client;
use crate::service_support::{assert_error, Server, TempDir};
use serde_json::{json, Value};

fn post(client: &mut Client, path: &str, body: Value) -> crate::service_support::http::Reply {
    client.post(path, body.to_string().as_bytes()).unwrap()
}

/// One worker server (2 GPUs, 2 Mbit/s), one parameter-server server (2 cores, 4 Mbit/s), two
/// slots of 100 s.
fn cluster() -> Value {
    json!({"slot_seconds": 100, "slots": 2,
           "worker_servers": [{"gpus": 2, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 2}],
           "ps_servers": [{"gpus": 0, "cpus": 2, "memory_gb": 0, "bandwidth_mbps": 4}]})
}

/// `L/2η = 1` and `2Uη/L = 4` for every resource of both pools: a unit costs `4^{use/capacity}`.
fn prices() -> Value {
    let f = json!({"lower": [2.0, 2.0, 2.0, 2.0], "upper": [4.0, 4.0, 4.0, 4.0], "eta": 1.0});
    json!({"workers": f, "parameter_servers": f})
}

/// A job of 5 chunks of 10 mini-batches of 2 s (1 s computing, 62.5 KB over 1 Mbit/s each way):
/// 5 chunks per worker-slot, so `epochs` worker-slots; a worker takes 1 GPU and 1 Mbit/s, a
/// parameter server 1 core and 2 Mbit/s.
fn job(id: &str, epochs: u32, utility: Value) -> Value {
    json!({"id": id, "arrival_slot": 0, "epochs": epochs, "chunks": 5, "minibatches_per_chunk": 10,
           "minibatch_seconds": 1, "gradient_mb": 0.0625,
           "worker": {"gpus": 1, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 1},
           "parameter_server": {"gpus": 0, "cpus": 1, "memory_gb": 0, "bandwidth_mbps": 2},
           "utility": utility})
}

fn close(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-9)
}

#[test]
fn three_jobs_are_decided_with_their_reasons_and_survive_a_restart() {
    let dir = TempDir::new("oasis-api");
    let db = dir.path("arbiter.db");
    let mut server = Server::start(&db, &dir.path("first.log"), &["--no-demo"]);
    let mut client = server.client();
    let created = post(&mut client, "/v1/oasis/sessions", json!({"cluster": cluster(), "prices": prices()}));
    assert_eq!(created.status, 201, "{}", created.text());
    let id = created.json()["id"].as_str().unwrap().to_string();
    assert_eq!(created.header("location"), Some(format!("/v1/oasis/sessions/{id}").as_str()));
    let health = client.get("/healthz").unwrap().json();
    assert_eq!(health["oasis_sessions"].as_u64(), Some(1));
    let listed = client.get("/v1/oasis/sessions").unwrap().json();
    assert_eq!(listed["sessions"][0]["id"], id.as_str());
    assert_eq!(listed["sessions"][0]["jobs"], 0);
    let path = format!("/v1/oasis/sessions/{id}/jobs");

    // A (2 worker-slots, worth 20): 2 workers at 2 and 1 PS at 3 in slot 0, cost 7, payoff 13.
    let a = post(&mut client, &path, job("A", 2, json!({"kind": "constant", "value": 20}))).json();
    assert_eq!(a["admitted"], true, "{a}");
    assert!(close(&a["cost"], 7.0) && close(&a["payoff"], 13.0) && close(&a["utility"], 20.0), "{a}");
    assert_eq!(a["schedule"]["completion_slot"], 0);
    assert_eq!(a["schedule"]["slots"][0]["workers"], json!([{"server": 0, "count": 2, "unit_price": 2.0}]));
    assert_eq!(a["schedule"]["slots"][0]["parameter_servers"], json!([{"server": 0, "count": 1, "unit_price": 3.0}]));
    assert!(a["explanation"].as_str().unwrap().starts_with("admitted"), "{a}");

    // B (sigmoid: 12 ending in slot 0, 6 in slot 1): slot 0 is full, so slot 1 for 7: payoff −1.
    let sigmoid = json!({"kind": "sigmoid", "priority": 24, "decay": 3f64.ln(), "target": 1});
    let b = post(&mut client, &path, job("B", 2, sigmoid)).json();
    assert_eq!(b["admitted"], false, "{b}");
    assert!(close(&b["cost"], 7.0) && close(&b["payoff"], -1.0) && close(&b["utility"], 6.0), "{b}");
    assert_eq!(b["schedule"]["completion_slot"], 1);
    let why = b["explanation"].as_str().unwrap();
    assert!(why.starts_with("rejected") && why.contains("slot 1"), "{why}");

    // C (1 worker-slot, worth 8): slot 1 is empty (B took nothing), 1 worker + 1 PS for 5.
    let c = post(&mut client, &path, job("C", 1, json!({"kind": "constant", "value": 8}))).json();
    assert!(c["admitted"] == true && close(&c["payoff"], 3.0), "{c}");

    // A job that cannot finish within the horizon: no schedule, a null payoff.
    let big = post(&mut client, &path, job("big", 30, json!({"kind": "constant", "value": 1e9}))).json();
    assert!(big["admitted"] == false && big["payoff"].is_null() && big.get("schedule").is_none(), "{big}");
    let why = big["explanation"].as_str().unwrap();
    assert!(why.contains("needs 6 slots from its arrival in slot 0"), "30 worker-slots of 5 chunks: {why}");

    let view = client.get(&format!("/v1/oasis/sessions/{id}")).unwrap().json();
    assert_eq!((view["admitted"].as_u64(), view["rejected"].as_u64()), (Some(2), Some(2)));
    assert_eq!(client.get("/v1/oasis/sessions").unwrap().json()["sessions"][0]["jobs"], 4);
    assert!(close(&view["total_utility"], 28.0), "{view}");
    assert_eq!(view["usage"][0]["workers"], json!({"gpus": 2, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 2}));
    assert_eq!(
        view["usage"][1]["parameter_servers"],
        json!({"gpus": 0, "cpus": 1, "memory_gb": 0, "bandwidth_mbps": 2})
    );

    // Bad input: a utility with a field of another kind, an array for the job.
    assert_error(
        &post(&mut client, &path, job("U", 1, json!({"kind": "constant", "value": 1, "priority": 9}))),
        400,
        "malformed_request",
        Some("utility"),
    );
    assert_error(&post(&mut client, &path, json!(["A", 0, 2])), 400, "malformed_request", None);
    assert_error(
        &post(&mut client, &path, job("A", 1, json!({"kind": "constant", "value": 1}))),
        400,
        "duplicate_job_id",
        Some("id"),
    );
    assert_error(
        &post(&mut client, &path, job("D", 0, json!({"kind": "constant", "value": 1}))),
        400,
        "invalid_number",
        Some("epochs"),
    );
    // The field that makes a chunk longer than a slot is the one named.
    let mut slow = job("S", 1, json!({"kind": "constant", "value": 1}));
    slow["gradient_mb"] = json!(1e99);
    let refused = assert_error(&post(&mut client, &path, slow), 400, "job_cannot_run", Some("gradient_mb"));
    assert!(refused["error"]["message"].as_str().unwrap().contains("1.6e101 s"), "in scientific notation: {refused}");
    let none = json!({"cluster": cluster(), "expected_jobs": []});
    assert_error(&post(&mut client, "/v1/oasis/sessions", none), 400, "missing_field", Some("expected_jobs"));
    let mut unknown = job("E", 1, json!({"kind": "constant", "value": 1}));
    unknown["priority"] = json!(3);
    assert_error(&post(&mut client, &path, unknown), 400, "malformed_request", None);
    let both = json!({"cluster": cluster(), "prices": prices(), "expected_jobs": [job("A", 2, json!({"kind": "constant", "value": 20}))]});
    assert_error(&post(&mut client, "/v1/oasis/sessions", both), 400, "malformed_request", Some("prices"));
    let lowest = json!({"cluster": cluster(), "expected_jobs": [job("A", 2, json!({"kind": "constant", "value": 20}))], "lowest": "median"});
    assert_error(&post(&mut client, "/v1/oasis/sessions", lowest), 400, "malformed_request", Some("lowest"));
    // `lowest` sets how expected jobs estimate L: with prices given it would be ignored.
    let lowest = json!({"cluster": cluster(), "prices": prices(), "lowest": "horizon"});
    assert_error(&post(&mut client, "/v1/oasis/sessions", lowest), 400, "malformed_request", Some("lowest"));
    // Scaled past 2Uη ≥ L, the given prices would fall with use.
    let falling = json!({"cluster": cluster(), "prices": prices(), "l": 5});
    let refused = assert_error(&post(&mut client, "/v1/oasis/sessions", falling), 400, "invalid_number", Some("l"));
    assert!(refused["error"]["message"].as_str().unwrap().contains("fall with use"), "{refused}");
    let falling = json!({"cluster": cluster(), "prices": prices(), "u": 0.2});
    assert_error(&post(&mut client, "/v1/oasis/sessions", falling), 400, "invalid_number", Some("u"));
    let rising = json!({"cluster": cluster(), "prices": prices(), "l": 2, "u": 0.5});
    assert_eq!(post(&mut client, "/v1/oasis/sessions", rising).status, 201);
    // Scale factors beyond the contract's magnitudes, or not numbers > 0.
    for (u, l, field) in [(json!(1e-120), json!(1e-120), "u"), (json!(1), json!(1e120), "l"), (json!(0), json!(1), "u")]
    {
        let tiny = json!({"cluster": cluster(), "prices": prices(), "u": u, "l": l});
        assert_error(&post(&mut client, "/v1/oasis/sessions", tiny), 400, "invalid_number", Some(field));
    }
    // A server with nothing to offer.
    let mut empty = cluster();
    empty["worker_servers"] = json!([{"gpus": 2, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 2},
                                     {"gpus": 0, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 0}]);
    let empty = json!({"cluster": empty, "prices": prices()});
    assert_error(
        &post(&mut client, "/v1/oasis/sessions", empty),
        400,
        "invalid_number",
        Some("cluster.worker_servers[1]"),
    );
    let falling = json!({"cluster": cluster(), "prices": {"workers": {"lower": [2.0, 2.0, 2.0, 2.0], "upper": [0.1, 0.1, 0.1, 0.1], "eta": 1.0},
                                                          "parameter_servers": {"lower": [2.0, 2.0, 2.0, 2.0], "upper": [4.0, 4.0, 4.0, 4.0], "eta": 1.0}}});
    assert_error(
        &post(&mut client, "/v1/oasis/sessions", falling),
        400,
        "invalid_number",
        Some("prices.workers.upper[0]"),
    );
    let mut eta_below_one = prices();
    eta_below_one["parameter_servers"]["eta"] = json!(0.5);
    let eta_below_one = json!({"cluster": cluster(), "prices": eta_below_one});
    assert_error(
        &post(&mut client, "/v1/oasis/sessions", eta_below_one),
        400,
        "invalid_number",
        Some("prices.parameter_servers.eta"),
    );
    let mut no_lower = prices();
    no_lower["workers"]["lower"][2] = json!(0.0);
    let no_lower = json!({"cluster": cluster(), "prices": no_lower});
    assert_error(
        &post(&mut client, "/v1/oasis/sessions", no_lower),
        400,
        "invalid_number",
        Some("prices.workers.lower[2]"),
    );
    assert_error(&client.get("/v1/oasis/sessions/nope").unwrap(), 404, "unknown_session", None);
    let mut vast = cluster();
    vast["slots"] = json!(1_000_000);
    let vast = json!({"cluster": vast, "prices": prices()});
    assert_error(&post(&mut client, "/v1/oasis/sessions", vast), 422, "unsupported", Some("cluster.slots"));
    // A job whose schedule would take too long to find (40 slots × 10⁶ worker-slots) is refused,
    // naming it.
    let mut long = cluster();
    long["slots"] = json!(40);
    let long = post(&mut client, "/v1/oasis/sessions", json!({"cluster": long, "prices": prices()})).json();
    let mut endless = job("endless", 5000, json!({"kind": "constant", "value": 1}));
    endless["chunks"] = json!(1000);
    let long_path = format!("/v1/oasis/sessions/{}/jobs", long["id"].as_str().unwrap());
    let refused = assert_error(&post(&mut client, &long_path, endless), 422, "unsupported", Some("epochs"));
    assert!(refused["error"]["message"].as_str().unwrap().contains("\"endless\""), "{refused}");
    // One too large to find over the session's horizon (500,000 slots × 51 entries): the slots
    // are the creation's, no field of the job's body, so none is named and the horizon is said.
    let mut far = cluster();
    far["slots"] = json!(500_000);
    let far = post(&mut client, "/v1/oasis/sessions", json!({"cluster": far, "prices": prices()})).json();
    let far_path = format!("/v1/oasis/sessions/{}/jobs", far["id"].as_str().unwrap());
    let refused = assert_error(
        &post(&mut client, &far_path, job("far", 50, json!({"kind": "constant", "value": 1}))),
        422,
        "unsupported",
        None,
    );
    assert!(refused["error"].get("field").is_none_or(Value::is_null), "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"far\"") && message.contains("the session's horizon: cluster.slots = 500000"),
        "{refused}"
    );
    // A worker larger than every server: rejected for that, not for what others hold.
    let mut wide = job("wide", 1, json!({"kind": "constant", "value": 1e9}));
    wide["worker"]["gpus"] = json!(3);
    let wide = post(&mut client, &long_path, wide).json();
    let why = wide["explanation"].as_str().unwrap();
    assert!(wide["admitted"] == false && why.contains("fits on no worker server, however free"), "{wide}");

    // Estimated prices: from jobs like those expected, as `arbiter oasis` estimates them.
    let estimated =
        json!({"cluster": cluster(), "expected_jobs": [job("A", 2, json!({"kind": "constant", "value": 20}))]});
    let other = post(&mut client, "/v1/oasis/sessions", estimated);
    assert_eq!(other.status, 201, "{}", other.text());
    let estimated = other.json();
    assert!(estimated["competitive_ratio_bound"].as_f64().is_some_and(|r| r >= 2.0));
    // Those prices given back as they are shown (with the resources jobs demand, as `arbiter
    // oasis` prints them): the same prices and bound.
    let given = post(&mut client, "/v1/oasis/sessions", json!({"cluster": cluster(), "prices": estimated["prices"]}));
    assert_eq!(given.status, 201, "{}", given.text());
    assert_eq!(given.json()["prices"], estimated["prices"]);
    assert_eq!(given.json()["competitive_ratio_bound"], estimated["competitive_ratio_bound"]);

    // Killed; the restarted server replays to the same decisions, and arrivals keep slot order.
    server.kill();
    let server = Server::start(&db, &dir.path("second.log"), &["--no-demo"]);
    let mut client = server.client();
    let again = client.get(&format!("/v1/oasis/sessions/{id}")).unwrap().json();
    assert_eq!(again, view);
    let mut late = job("F", 1, json!({"kind": "constant", "value": 8}));
    late["arrival_slot"] = json!(1);
    assert_eq!(post(&mut client, &path, late).json()["arrival_slot"], 1);
    assert_error(
        &post(&mut client, &path, job("G", 1, json!({"kind": "constant", "value": 8}))),
        400,
        "invalid_number",
        Some("arrival_slot"),
    );
    assert_eq!(client.delete(&format!("/v1/oasis/sessions/{id}")).unwrap().status, 204);
    assert_error(&client.get(&format!("/v1/oasis/sessions/{id}")).unwrap(), 404, "unknown_session", None);
}
