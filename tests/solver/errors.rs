//! Every error code of `src/contract/error.rs` that input can trigger, each asserting the code and the
//! `field` path the refusal names (and, for infeasibility, the jobs). `solver_failed` is the one
//! code no valid input should reach, so it has no test here.

use crate::common::*;
use arbiter::{ErrorCode, Problem, Request};
use serde_json::{json, Value};

/// A valid request every case below breaks in exactly one place.
fn base() -> Value {
    json!({
        "policy": "max_min_fairness",
        "cluster": {"worker_types": {
            "v100": {"count": 2, "gpus_per_server": 2, "cost_per_hour": 2.5},
            "k80": {"count": 2, "gpus_per_server": 2, "cost_per_hour": 0.5}
        }},
        "jobs": [
            {"id": "a", "throughput": {"v100": 4.0, "k80": 1.0}, "steps_remaining": 100},
            {"id": "b", "throughput": {"v100": 3.0, "k80": 1.0}, "steps_remaining": 200}
        ]
    })
}

fn with(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = base();
    edit(&mut v);
    v.to_string()
}

/// Asserts that `text` is refused with `code` at `field`, and that the wire form carries both.
fn refused(text: &str, code: ErrorCode, field: Option<&str>) {
    let err = solve_err(text);
    assert_error(&err, code, field);
    let wire = err.to_json();
    let wire_code = serde_json::to_value(code).unwrap();
    assert_eq!(wire["error"]["code"], wire_code, "{wire}");
    assert!(wire["error"]["message"].is_string(), "{wire}");
    match field {
        Some(f) => assert_eq!(wire["error"]["field"], f, "{wire}"),
        None => assert!(wire["error"].get("field").is_none(), "{wire}"),
    }
    let status = code.http_status();
    match code {
        ErrorCode::Infeasible | ErrorCode::Unsupported => assert_eq!(status, 422),
        _ => assert_eq!(status, 400),
    }
}

/// Validates a request built in memory, where the numbers JSON cannot spell (NaN, ±∞) can occur.
fn refused_request(req: &Request, code: ErrorCode, field: &str) {
    match Problem::from_request(req) {
        Ok(_) => panic!("expected a refusal with {code:?} at {field}"),
        Err(err) => assert_error(&err, code, Some(field)),
    }
}

fn base_request() -> Request {
    Request::from_json(&base().to_string()).unwrap()
}

#[test]
fn the_base_request_is_valid() {
    let (_, r, _) = solve_value(&base());
    assert!(r.objective.is_some());
}

#[test]
fn malformed_request() {
    // Not JSON at all: no field to name.
    refused("not json", ErrorCode::MalformedRequest, None);
    // Cut short: the field it was in.
    refused("{\"policy\": ", ErrorCode::MalformedRequest, Some("policy"));
    refused("", ErrorCode::MalformedRequest, None);
    refused("42", ErrorCode::MalformedRequest, None);
    // A field of the wrong JSON type: its path.
    refused(
        &with(|v| v["jobs"][0]["throughput"]["v100"] = json!("fast")),
        ErrorCode::MalformedRequest,
        Some("jobs[0].throughput.v100"),
    );
    refused(
        &with(|v| v["cluster"]["worker_types"]["k80"]["count"] = json!("two")),
        ErrorCode::MalformedRequest,
        Some("cluster.worker_types.k80.count"),
    );
    refused(&with(|v| v["jobs"] = json!({"a": 1})), ErrorCode::MalformedRequest, Some("jobs"));
    refused(
        &with(|v| v["heterogeneity_aware"] = json!("yes")),
        ErrorCode::MalformedRequest,
        Some("heterogeneity_aware"),
    );
    refused(
        &with(|v| v["colocations"] = json!([{"jobs": ["a"], "throughput": {}}])),
        ErrorCode::MalformedRequest,
        Some("colocations[0].jobs"),
    );
    // JSON has no NaN literal, and a number too large for an f64 is refused where it stands.
    let nan =
        base().to_string().replace("\"k80\":1.0},\"steps_remaining\":200", "\"k80\":NaN},\"steps_remaining\":200");
    assert!(nan.contains("NaN"));
    refused(&nan, ErrorCode::MalformedRequest, Some("jobs[1].throughput.k80"));
    let huge = base().to_string().replacen("4.0", "1e400", 1);
    assert!(huge.contains("1e400"));
    refused(&huge, ErrorCode::MalformedRequest, Some("jobs[0].throughput.v100"));
    // A required field missing from the JSON: `missing_field`, named under its object.
    let err = solve_err(&with(|v| {
        v.as_object_mut().unwrap().remove("policy");
    }));
    assert_error(&err, ErrorCode::MissingField, Some("policy"));
    assert!(err.message.contains("policy"), "{}", err.to_json());
    let err = solve_err(&with(|v| {
        v["jobs"][1].as_object_mut().unwrap().remove("id");
    }));
    assert_error(&err, ErrorCode::MissingField, Some("jobs[1].id"));
}

#[test]
fn unknown_policy() {
    refused(&with(|v| v["policy"] = json!("fastest_first")), ErrorCode::UnknownPolicy, Some("policy"));
    // Names are exact.
    refused(&with(|v| v["policy"] = json!("Max_Min_Fairness")), ErrorCode::UnknownPolicy, Some("policy"));
    let err = solve_err(&with(|v| v["policy"] = json!("las")));
    assert!(err.message.contains("max_min_fairness"), "the message lists the policies: {}", err.message);
}

#[test]
fn unknown_worker_type() {
    refused(
        &with(|v| v["jobs"][1]["throughput"]["a100"] = json!(9.0)),
        ErrorCode::UnknownWorkerType,
        Some("jobs[1].throughput.a100"),
    );
    refused(
        &with(|v| v["colocations"] = json!([{"jobs": ["a", "b"], "throughput": {"h100": [1.0, 1.0]}}])),
        ErrorCode::UnknownWorkerType,
        Some("colocations[0].throughput.h100"),
    );
}

#[test]
fn duplicate_job_id() {
    refused(&with(|v| v["jobs"][1]["id"] = json!("a")), ErrorCode::DuplicateJobId, Some("jobs[1].id"));
    refused(
        &with(|v| {
            let third = json!({"id": "b", "throughput": {"v100": 1.0}, "steps_remaining": 1});
            v["jobs"].as_array_mut().unwrap().push(third);
        }),
        ErrorCode::DuplicateJobId,
        Some("jobs[2].id"),
    );
}

#[test]
fn invalid_number() {
    let cases: Vec<(String, &str)> = vec![
        (with(|v| v["jobs"][0]["throughput"]["k80"] = json!(-1.0)), "jobs[0].throughput.k80"),
        (with(|v| v["jobs"][1]["weight"] = json!(0)), "jobs[1].weight"),
        (with(|v| v["jobs"][1]["weight"] = json!(-2.0)), "jobs[1].weight"),
        (with(|v| v["cluster"]["worker_types"]["k80"]["count"] = json!(-1)), "cluster.worker_types.k80.count"),
        (with(|v| v["cluster"]["worker_types"]["k80"]["count"] = json!(1.5)), "cluster.worker_types.k80.count"),
        (
            with(|v| v["cluster"]["worker_types"]["v100"]["gpus_per_server"] = json!(0)),
            "cluster.worker_types.v100.gpus_per_server",
        ),
        (
            with(|v| v["cluster"]["worker_types"]["v100"]["cost_per_hour"] = json!(-0.1)),
            "cluster.worker_types.v100.cost_per_hour",
        ),
        (
            with(|v| {
                v["policy"] = json!("min_cost");
                v["cluster"]["worker_types"]["k80"]["cost_per_hour"] = json!(0);
            }),
            "cluster.worker_types.k80.cost_per_hour",
        ),
        (with(|v| v["jobs"][0]["steps_remaining"] = json!(-5)), "jobs[0].steps_remaining"),
        (with(|v| v["jobs"][0]["time_elapsed"] = json!(-1)), "jobs[0].time_elapsed"),
        (with(|v| v["jobs"][1]["isolated_time_elapsed"] = json!(-0.5)), "jobs[1].isolated_time_elapsed"),
        (with(|v| v["jobs"][1]["slo_seconds"] = json!(0)), "jobs[1].slo_seconds"),
        (
            with(|v| v["colocations"] = json!([{"jobs": ["a", "b"], "throughput": {"v100": [1.0, -1.0]}}])),
            "colocations[0].throughput.v100[1]",
        ),
        (
            with(|v| {
                v["cluster"]["worker_types"]["v100"]["count"] = json!(0);
                v["cluster"]["worker_types"]["k80"]["count"] = json!(0);
            }),
            "cluster.worker_types",
        ),
    ];
    for (text, field) in &cases {
        refused(text, ErrorCode::InvalidNumber, Some(field));
    }

    // NaN and ±∞ cannot be written in JSON but can reach the library through `Request`.
    let mut req = base_request();
    req.jobs[0].throughput.insert("v100".into(), Some(f64::INFINITY));
    refused_request(&req, ErrorCode::InvalidNumber, "jobs[0].throughput.v100");
    let mut req = base_request();
    req.jobs[1].throughput.insert("k80".into(), Some(f64::NAN));
    refused_request(&req, ErrorCode::InvalidNumber, "jobs[1].throughput.k80");
    let mut req = base_request();
    req.jobs[1].weight = Some(f64::NAN);
    refused_request(&req, ErrorCode::InvalidNumber, "jobs[1].weight");
    let mut req = base_request();
    req.jobs[0].arrival = Some(f64::NEG_INFINITY);
    refused_request(&req, ErrorCode::InvalidNumber, "jobs[0].arrival");
    let mut req = base_request();
    req.jobs[0].steps_remaining = Some(f64::INFINITY);
    refused_request(&req, ErrorCode::InvalidNumber, "jobs[0].steps_remaining");
    let mut req = base_request();
    req.cluster.worker_types.get_mut("k80").unwrap().count = f64::INFINITY;
    refused_request(&req, ErrorCode::InvalidNumber, "cluster.worker_types.k80.count");
}

#[test]
fn invalid_scale_factor() {
    refused(
        &with(|v| v["jobs"][1]["scale_factor"] = json!(0)),
        ErrorCode::InvalidScaleFactor,
        Some("jobs[1].scale_factor"),
    );
    // A fraction of a GPU is refused too, as a bad number or a bad scale factor.
    let err = solve_err(&with(|v| v["jobs"][0]["scale_factor"] = json!(1.5)));
    assert!(matches!(err.code, ErrorCode::InvalidScaleFactor | ErrorCode::InvalidNumber), "{}", err.to_json());
    assert_eq!(err.field.as_deref(), Some("jobs[0].scale_factor"));
    // Above one type's count but within the cluster is the contract's fluid model (Gavel's
    // reference cases have it): accepted.
    let (_, r, _) = solve_ok(&with(|v| v["jobs"][1]["scale_factor"] = json!(4)));
    assert!(r.objective.is_some());
}

/// The contract says a scale factor "above the cluster" is refused, but its own reference cases
/// (computed by Gavel) include one: `ftf_n10_s12` has scale factor 8 on a cluster of 2 + 2 + 2.
/// Arbiter follows the reference: the fluid model gives such a job a fraction of its time that
/// the GPUs can hold (`Σ sf·X ≤ count`), and the round mechanism reports it as unplaceable.
#[test]
fn scale_factor_above_the_cluster_gets_only_what_the_gpus_hold() {
    let (p, r, x) = solve_ok(&with(|v| v["jobs"][1]["scale_factor"] = json!(16)));
    assert!(r.objective.is_some());
    for (w, wt) in p.worker_types.iter().enumerate() {
        let used: f64 = (0..p.num_jobs()).map(|m| p.jobs[m].scale_factor as f64 * x[m][w]).sum();
        assert!(used <= wt.count + 1e-6, "{} uses {used} of {}", wt.name, wt.count);
    }
    assert!(x[1].iter().sum::<f64>() <= 4.0 / 16.0 + 1e-9, "{:?}", x[1]);
}

/// Capacity rows mix every job's scale factor; beyond `MAX_SCALE_FACTOR` a small job's share of
/// the row would fall below what solvers keep, and the answer would overfill the type (a fuzzed
/// request with a scale factor of 1e9 on 2 GPUs once came back using 5).
#[test]
fn scale_factor_beyond_the_ceiling() {
    let most = arbiter::problem::MAX_SCALE_FACTOR;
    refused(
        &with(|v| v["jobs"][1]["scale_factor"] = json!(1e9)),
        ErrorCode::InvalidScaleFactor,
        Some("jobs[1].scale_factor"),
    );
    refused(
        &with(|v| v["jobs"][0]["scale_factor"] = json!(most as u64 + 1)),
        ErrorCode::InvalidScaleFactor,
        Some("jobs[0].scale_factor"),
    );
    let (p, _, x) = solve_ok(&with(|v| v["jobs"][1]["scale_factor"] = json!(most)));
    for (w, wt) in p.worker_types.iter().enumerate() {
        let used: f64 = (0..p.num_jobs()).map(|m| p.jobs[m].scale_factor as f64 * x[m][w]).sum();
        assert!(used <= wt.count + 1e-6, "{} uses {used} of {}", wt.name, wt.count);
    }
}

#[test]
fn job_cannot_run() {
    refused(
        &with(|v| v["jobs"][1]["throughput"] = json!({"v100": 0.0, "k80": 0.0})),
        ErrorCode::JobCannotRun,
        Some("jobs[1].throughput"),
    );
    refused(&with(|v| v["jobs"][0]["throughput"] = json!({})), ErrorCode::JobCannotRun, Some("jobs[0].throughput"));
    refused(
        &with(|v| v["jobs"][0]["throughput"] = json!({"v100": null, "k80": 0})),
        ErrorCode::JobCannotRun,
        Some("jobs[0].throughput"),
    );
    // Only runnable on a type the cluster has none of.
    refused(
        &with(|v| {
            v["cluster"]["worker_types"]["a100"] = json!({"count": 0});
            v["jobs"][1]["throughput"] = json!({"a100": 10.0});
        }),
        ErrorCode::JobCannotRun,
        Some("jobs[1].throughput"),
    );
}

#[test]
fn invalid_colocation() {
    refused(
        &with(|v| v["colocations"] = json!([{"jobs": ["a", "zz"], "throughput": {}}])),
        ErrorCode::InvalidColocation,
        Some("colocations[0].jobs[1]"),
    );
    refused(
        &with(|v| v["colocations"] = json!([{"jobs": ["a", "a"], "throughput": {}}])),
        ErrorCode::InvalidColocation,
        Some("colocations[0].jobs"),
    );
    refused(
        &with(|v| {
            v["jobs"][1]["scale_factor"] = json!(2);
            v["colocations"] = json!([
                {"jobs": ["a", "b"], "throughput": {"v100": [1.0, 1.0]}}
            ]);
        }),
        ErrorCode::InvalidColocation,
        Some("colocations[0].jobs"),
    );
    // The second of two colocations.
    refused(
        &with(|v| {
            v["colocations"] = json!([
                {"jobs": ["a", "b"], "throughput": {}},
                {"jobs": ["nobody", "b"], "throughput": {}}
            ]);
        }),
        ErrorCode::InvalidColocation,
        Some("colocations[1].jobs[0]"),
    );
}

#[test]
fn invalid_entity() {
    let entities = |v: &mut Value| {
        v["entities"] = json!({
            "research": {"weight": 1, "policy": "fifo"},
            "product": {"weight": 2, "policy": "fairness"}
        });
        v["jobs"][0]["entity"] = json!("research");
        v["jobs"][1]["entity"] = json!("product");
    };
    // The base with entities is valid, for hierarchical too.
    solve_ok(&with(|v| {
        entities(v);
        v["policy"] = json!("hierarchical");
    }));
    refused(
        &with(|v| {
            entities(v);
            v["jobs"][1]["entity"] = json!("sales");
        }),
        ErrorCode::InvalidEntity,
        Some("jobs[1].entity"),
    );
    refused(
        &with(|v| {
            entities(v);
            v["entities"]["product"]["policy"] = json!("lottery");
        }),
        ErrorCode::InvalidEntity,
        Some("entities.product.policy"),
    );
    refused(
        &with(|v| {
            entities(v);
            v["entities"]["product"]["parent"] = json!("nobody");
        }),
        ErrorCode::InvalidEntity,
        Some("entities.product.parent"),
    );
    // A nests in B nests in A.
    let err = solve_err(&with(|v| {
        entities(v);
        v["entities"]["product"]["parent"] = json!("research");
        v["entities"]["research"]["parent"] = json!("product");
    }));
    assert_eq!(err.code, ErrorCode::InvalidEntity, "{}", err.to_json());
    assert!(
        matches!(err.field.as_deref(), Some("entities.product.parent" | "entities.research.parent")),
        "{}",
        err.to_json()
    );
    refused(
        &with(|v| {
            entities(v);
            v["entities"]["research"]["weight"] = json!(0);
        }),
        ErrorCode::InvalidNumber,
        Some("entities.research.weight"),
    );
}

#[test]
fn missing_field() {
    for policy in ["min_makespan", "finish_time_fairness", "shortest_job_first"] {
        refused(
            &with(|v| {
                v["policy"] = json!(policy);
                v["jobs"][1].as_object_mut().unwrap().remove("steps_remaining");
            }),
            ErrorCode::MissingField,
            Some("jobs[1].steps_remaining"),
        );
    }
    for policy in ["min_cost", "min_cost_slo"] {
        refused(
            &with(|v| {
                v["policy"] = json!(policy);
                v["jobs"][0]["slo_seconds"] = json!(1000);
                v["cluster"]["worker_types"]["k80"].as_object_mut().unwrap().remove("cost_per_hour");
            }),
            ErrorCode::MissingField,
            Some("cluster.worker_types.k80.cost_per_hour"),
        );
    }
    // min_cost_slo needs at least one SLO, and steps_remaining where there is one.
    refused(&with(|v| v["policy"] = json!("min_cost_slo")), ErrorCode::MissingField, Some("jobs[0].slo_seconds"));
    refused(
        &with(|v| {
            v["policy"] = json!("min_cost_slo");
            v["jobs"][1]["slo_seconds"] = json!(1000);
            v["jobs"][1].as_object_mut().unwrap().remove("steps_remaining");
        }),
        ErrorCode::MissingField,
        Some("jobs[1].steps_remaining"),
    );
    refused(&with(|v| v["cluster"]["worker_types"] = json!({})), ErrorCode::MissingField, Some("cluster.worker_types"));
    refused(&with(|v| v["jobs"][0]["id"] = json!("")), ErrorCode::MissingField, Some("jobs[0].id"));
    // hierarchical needs an entity on every job.
    refused(
        &with(|v| {
            v["policy"] = json!("hierarchical");
            v["entities"] = json!({"research": {"weight": 1}});
            v["jobs"][0]["entity"] = json!("research");
        }),
        ErrorCode::MissingField,
        Some("jobs[1].entity"),
    );
    // Policies that do not read steps_remaining do not need it.
    let (_, r, _) = solve_ok(&with(|v| {
        v["policy"] = json!("max_sum_throughput");
        for job in v["jobs"].as_array_mut().unwrap() {
            job.as_object_mut().unwrap().remove("steps_remaining");
        }
    }));
    assert!(r.objective.is_some());
}

#[test]
fn unsupported() {
    // Space sharing where the policy has no pair formulation.
    refused(
        &with(|v| {
            v["policy"] = json!("fifo");
            v["space_sharing"] = json!(true);
        }),
        ErrorCode::Unsupported,
        Some("space_sharing"),
    );
    for (field, value) in [("colocation_threshold", json!(-1)), ("partitions", json!(0)), ("partitions", json!(1.5))] {
        let err = solve_err(&with(|v| v[field] = value.clone()));
        assert!(matches!(err.code, ErrorCode::InvalidNumber), "{}", err.to_json());
        assert_eq!(err.field.as_deref(), Some(field));
    }
    // space_sharing: false is the default and is accepted, colocations and all.
    let (_, r, _) = solve_ok(&with(|v| {
        v["space_sharing"] = json!(false);
        v["colocations"] = json!([{"jobs": ["a", "b"], "throughput": {"v100": [2.0, 1.5]}}]);
    }));
    assert!(r.colocated_allocation.is_empty());
}

/// a needs 100/10 = 10 steps/s, more than its best (4 on a V100): no allocation meets the SLO.
#[test]
fn infeasible() {
    let text = with(|v| {
        v["policy"] = json!("min_cost_slo");
        v["jobs"][0]["slo_seconds"] = json!(10);
    });
    let err = solve_err(&text);
    assert_error(&err, ErrorCode::Infeasible, None);
    assert_eq!(err.jobs, ["a"], "{}", err.to_json());
    assert!(err.message.contains('a'), "{}", err.message);
    assert_eq!(err.to_json()["error"]["jobs"], json!(["a"]));
    refused(&text, ErrorCode::Infeasible, None);
}

/// JSON lets an object repeat a key and a reader keeps the last; the contract's maps refuse it,
/// naming the map: a second `v100` of 64 GPUs is not silently the cluster.
#[test]
fn a_map_that_repeats_a_key_is_malformed() {
    let cases = [
        (
            r#"{"policy": "max_min_fairness", "cluster": {"worker_types": {"v100": {"count": 4}, "v100": {"count": 64}}},
            "jobs": [{"id": "a", "throughput": {"v100": 1}}]}"#,
            "cluster.worker_types",
        ),
        (
            r#"{"policy": "max_min_fairness", "cluster": {"worker_types": {"v100": {"count": 4}}},
            "jobs": [{"id": "a", "throughput": {"v100": 1, "v100": 2}}]}"#,
            "jobs[0].throughput",
        ),
        (
            r#"{"policy": "hierarchical", "cluster": {"worker_types": {"v100": {"count": 4}}},
            "entities": {"t": {"weight": 1}, "t": {"weight": 2}},
            "jobs": [{"id": "a", "entity": "t", "throughput": {"v100": 1}}]}"#,
            "entities",
        ),
    ];
    for (text, field) in cases {
        let e = solve_err(text);
        assert_error(&e, ErrorCode::MalformedRequest, Some(field));
        assert!(e.message.contains("duplicate key"), "{}", e.message);
    }
}
