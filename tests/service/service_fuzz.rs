//! Arbitrary JSON, and mutations of valid requests, fed to the request parser and validators
//! (the stateless request, a session's creation, a job) and to the HTTP endpoints of a real
//! server, and of OASiS sessions to their build and decisions: nothing panics, and every refusal is
//! a 4xx with the contract's error object.

use crate::service_support::*;
use arbiter::service::error::ApiError;
use arbiter::service::sessions::spec::Spec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        prop_oneof![Just(0.0), Just(-0.0), Just(1e308), Just(-1e308), Just(5e-324), Just(4294967296.0)]
            .prop_map(Value::from),
        "[a-z0-9_/]{0,12}".prop_map(Value::from),
        prop_oneof![Just("max_min_fairness"), Just("min_cost_slo"), Just("hierarchical"), Just("v100"), Just("k80")]
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("policy".to_string()),
                    Just("cluster".to_string()),
                    Just("worker_types".to_string()),
                    Just("jobs".to_string()),
                    Just("throughput".to_string()),
                    Just("count".to_string()),
                    Just("id".to_string()),
                    Just("scale_factor".to_string()),
                    "[a-z_]{1,8}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Every JSON path (as a list of keys and indices) in `v`.
fn paths(v: &Value, prefix: Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(prefix.clone());
    match v {
        Value::Object(m) => m.iter().for_each(|(k, c)| {
            let mut p = prefix.clone();
            p.push(json!(k));
            paths(c, p, out)
        }),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, c)| {
            let mut p = prefix.clone();
            p.push(json!(i));
            paths(c, p, out)
        }),
        _ => {}
    }
}

fn replace_at(v: &mut Value, path: &[Value], with: Value) {
    let mut at = v;
    for key in path {
        at = match key {
            Value::String(k) => &mut at[k.as_str()],
            Value::Number(i) => &mut at[i.as_u64().unwrap() as usize],
            _ => unreachable!(),
        };
    }
    *at = with;
}

/// A valid request with the value at one of its paths replaced by arbitrary JSON.
fn mutated_request() -> impl Strategy<Value = Value> {
    let base = demo_request();
    let mut all = Vec::new();
    paths(&base, Vec::new(), &mut all);
    (prop::sample::select(all), arbitrary_json()).prop_map(move |(path, with)| {
        let mut v = base.clone();
        replace_at(&mut v, &path, with);
        v
    })
}

/// Extreme and ordinary numbers, for the numeric fields of a valid request.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(-1.0),
            Just(0.5),
            Just(1e-308),
            Just(5e-324),
            Just(1e308),
            Just(-1e308)
        ]
        .prop_map(Value::from),
        prop_oneof![Just(u64::MAX), Just(u32::MAX as u64 + 1), Just(1u64 << 53)].prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
    ]
}

/// The paths of every number in `base`.
fn numeric_paths(base: &Value) -> Vec<Vec<Value>> {
    let mut all = Vec::new();
    paths(base, Vec::new(), &mut all);
    all.into_iter()
        .filter(|p| {
            let mut at = base;
            for k in p {
                at = match k {
                    Value::String(s) => &at[s.as_str()],
                    Value::Number(i) => &at[i.as_u64().unwrap() as usize],
                    _ => unreachable!(),
                };
            }
            at.is_number()
        })
        .collect()
}

/// A valid request with one of its numbers replaced: often still valid, so it reaches the solver.
fn renumbered_request() -> impl Strategy<Value = Value> {
    let base = demo_request();
    let numeric = numeric_paths(&base);
    (prop::sample::select(numeric), number()).prop_map(move |(path, with)| {
        let mut v = base.clone();
        replace_at(&mut v, &path, with);
        v
    })
}

fn input() -> impl Strategy<Value = String> {
    prop_oneof![
        arbitrary_json().prop_map(|v| v.to_string()),
        mutated_request().prop_map(|v| v.to_string()),
        renumbered_request().prop_map(|v| v.to_string()),
        renumbered_request().prop_map(|v| v["jobs"][0].to_string()),
        mutated_request().prop_map(|v| {
            // Cut short somewhere: malformed JSON.
            let text = v.to_string();
            let cut = (0..=text.len() * 2 / 3).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            text[..cut].to_string()
        }),
        "\\PC{0,64}",
    ]
}

fn is_refusal(e: &ApiError) -> bool {
    (400..500).contains(&e.status().as_u16())
}

#[test]
fn parser_and_validators_never_panic_and_refuse_with_4xx() {
    let mut runner = TestRunner::new(Config { cases: 600, failure_persistence: None, ..Config::default() });
    runner
        .run(&input(), |text| {
            if let Err(e) = arbiter::Problem::from_json(&text) {
                let e = ApiError::from(e);
                prop_assert!(is_refusal(&e), "{text} → {:?}", e.body());
            }
            if let Err(e) = Spec::parse(&text) {
                prop_assert!(is_refusal(&e), "session {text} → {:?}", e.body());
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn endpoints_answer_arbitrary_bodies_with_4xx_or_success() {
    let f = Fixture::start("fuzz", &["--max-solve-seconds", "5"]);
    let c = std::cell::RefCell::new(f.client());
    let mut runner = TestRunner::new(Config { cases: 300, failure_persistence: None, ..Config::default() });
    runner
        .run(&input(), |text| {
            for path in ["/v1/allocations", "/v1/sessions", "/v1/sessions/demo/jobs", "/v1/sessions/demo/throughputs"] {
                let method = if path.ends_with("throughputs") { "PUT" } else { "POST" };
                let reply = c.borrow_mut().send(method, path, text.as_bytes(), &[]).expect("the server answers");
                if reply.status >= 300 {
                    prop_assert!(
                        (400..500).contains(&reply.status),
                        "{path} {text} → {} {}",
                        reply.status,
                        reply.text()
                    );
                    let body = reply.json();
                    prop_assert!(body["error"]["code"].is_string(), "{path} → {body}");
                }
            }
            Ok(())
        })
        .unwrap();
    // Random bytes, not even UTF-8.
    let mut runner = TestRunner::new(Config { cases: 40, failure_persistence: None, ..Config::default() });
    runner
        .run(&prop::collection::vec(any::<u8>(), 0..256), |body| {
            let reply = c.borrow_mut().post("/v1/allocations", &body).expect("the server answers");
            prop_assert_eq!(reply.status, 400);
            Ok(())
        })
        .unwrap();
    assert_eq!(c.borrow_mut().get("/healthz").unwrap().status, 200);
}

/// An OASiS session (the three-job example of `formulations/oasis.md`: its cluster, prices and
/// jobs in one document) with up to three of its numbers replaced by extreme or ordinary ones.
fn renumbered_oasis() -> impl Strategy<Value = Value> {
    let f = json!({"lower": [2.0, 2.0, 2.0, 2.0], "upper": [4.0, 4.0, 4.0, 4.0], "eta": 1.0});
    let job = |id: &str, epochs: u32, utility: Value| {
        json!({"id": id, "arrival_slot": 0, "epochs": epochs, "chunks": 5, "minibatches_per_chunk": 10,
               "minibatch_seconds": 1, "gradient_mb": 0.0625,
               "worker": {"gpus": 1, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 1},
               "parameter_server": {"gpus": 0, "cpus": 1, "memory_gb": 0, "bandwidth_mbps": 2},
               "utility": utility})
    };
    let base = json!({
        "create": {"cluster": {"slot_seconds": 100, "slots": 2,
                               "worker_servers": [{"gpus": 2, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 2}],
                               "ps_servers": [{"gpus": 0, "cpus": 2, "memory_gb": 0, "bandwidth_mbps": 4}]},
                   "prices": {"workers": f, "parameter_servers": f}},
        "jobs": [job("A", 2, json!({"kind": "constant", "value": 20})),
                 job("B", 2, json!({"kind": "sigmoid", "priority": 24, "decay": 1.0986, "target": 1})),
                 job("C", 1, json!({"kind": "constant", "value": 8}))]
    });
    let numeric = numeric_paths(&base);
    prop::collection::vec((prop::sample::select(numeric), number()), 1..=3).prop_map(move |changes| {
        let mut v = base.clone();
        for (path, with) in changes {
            replace_at(&mut v, &path, with);
        }
        v
    })
}

/// OASiS sessions built and fed jobs from renumbered documents: nothing panics, every refusal is
/// a 4xx, and every decision that took time returned (a schedule too large to compute is refused).
#[test]
fn oasis_sessions_never_panic_and_refuse_with_4xx() {
    use arbiter::service::oasis::{CreateOasisSession, Event, OasisSession};
    use arbiter::service::replayed::Replayed;
    let mut runner = TestRunner::new(Config { cases: 400, failure_persistence: None, ..Config::default() });
    runner
        .run(&renumbered_oasis(), |doc| {
            let Ok(create) = serde_json::from_value::<CreateOasisSession>(doc["create"].clone()) else { return Ok(()) };
            let mut session = match OasisSession::build(&create) {
                Ok(session) => session,
                Err(e) => {
                    prop_assert!(is_refusal(&e), "{doc} → {:?}", e.body());
                    return Ok(());
                }
            };
            for job in doc["jobs"].as_array().unwrap() {
                let Ok(spec) = serde_json::from_value(job.clone()) else { continue };
                let started = std::time::Instant::now();
                if let Err(e) = session.apply(&Event::Submit(spec)) {
                    prop_assert!(is_refusal(&e), "{doc} → {:?}", e.body());
                }
                prop_assert!(started.elapsed().as_secs_f64() < 10.0, "{job}: {:?}", started.elapsed());
            }
            Ok(())
        })
        .unwrap();
}
