//! Placement sensitivity (`unconsolidated_throughput`): a multi-GPU job runs at its consolidated
//! throughput only while its GPUs sit in whole-job server slots, otherwise at its unconsolidated
//! one. Checked by hand on a cluster whose servers hold one 3-GPU job each.

use crate::common::*;
use serde_json::{json, Value};

/// One type, 6 GPUs as a 4-GPU server and a 2-GPU one: a 3-GPU job fits consolidated only on the
/// first (`3·(⌊4/3⌋·1 + ⌊2/3⌋) = 3` GPUs), so two of them can run at once but only one consolidated.
fn request(policy: &str, unconsolidated: Option<f64>) -> Value {
    let job = |id: &str| {
        let mut job = json!({"id": id, "throughput": {"v100": 10.0}, "scale_factor": 3, "steps_remaining": 1000});
        if let Some(u) = unconsolidated {
            job["unconsolidated_throughput"] = json!({"v100": u});
        }
        job
    };
    json!({
        "policy": policy,
        "cluster": {"worker_types": {"v100": {"count": 6, "gpus_per_server": 4}}},
        "jobs": [job("a"), job("b")]
    })
}

/// LAS: `X_a + X_b ≤ 1` (the one consolidated slot), `3(X + U) ≤ 6` over both, `X + U ≤ 1` each.
/// Total throughput is at most `10·1 + 6·1 = 16`, split evenly: each job 8 steps/s
/// (`X = U = 1/2`), objective `(sf/w)·thr/thr_equal = 3·8/10 = 2.4`. Without the unconsolidated
/// column the contract's model runs both at 10 all the time (objective 3).
#[test]
fn two_three_gpu_jobs_by_hand() {
    let (_, r, x) = solve_value(&request("max_min_fairness", Some(6.0)));
    assert!((r.objective.unwrap() - 2.4).abs() < 1e-9, "{:?}", r.objective);
    for (m, id) in ["a", "b"].iter().enumerate() {
        assert!((r.effective_throughput[*id] - 8.0).abs() < 1e-9);
        let u = r.unconsolidated_allocation[*id]["v100"];
        assert!((x[m][0] - 0.5).abs() < 1e-9 && (u - 0.5).abs() < 1e-9, "X {:?}, U {u}", x[m]);
    }
    let (_, r, _) = solve_value(&request("max_min_fairness", None));
    assert!((r.objective.unwrap() - 3.0).abs() < 1e-9);
    assert!(r.unconsolidated_allocation.is_empty());
}

/// Makespan: both need 1000 steps at 8 steps/s at best together: 125 s. Water-filling: both at 8.
#[test]
fn other_engine_policies() {
    let (_, r, _) = solve_value(&request("min_makespan", Some(6.0)));
    assert!((r.objective.unwrap() - 125.0).abs() < 1e-6, "{:?}", r.objective);
    let (_, r, _) = solve_value(&request("max_min_fairness_water_filling", Some(6.0)));
    for id in ["a", "b"] {
        assert!((r.effective_throughput[id] - 8.0).abs() < 1e-7, "{:?}", r.effective_throughput);
    }
    let (_, r, _) = solve_value(&request("finish_time_fairness", Some(6.0)));
    assert!(r.objective.is_some());
}

/// An unconsolidated rate as fast as the consolidated one changes nothing: the slots stop mattering.
#[test]
fn insensitive_jobs_are_unaffected() {
    let (_, r, _) = solve_value(&request("max_min_fairness", Some(10.0)));
    assert!((r.objective.unwrap() - 3.0).abs() < 1e-9, "{:?}", r.objective);
}

/// Single-GPU jobs are always consolidated (their entries are ignored); policies off the exact
/// engine refuse the field; unknown types and bad numbers are named.
#[test]
fn validation() {
    let mut single = request("max_min_fairness", Some(6.0));
    single["jobs"][0]["scale_factor"] = json!(1);
    single["jobs"][1]["scale_factor"] = json!(1);
    let (p, r, _) = solve_value(&single);
    assert!(p.unconsolidated.is_none() && r.unconsolidated_allocation.is_empty());

    let err = solve_err(&request("max_sum_throughput", Some(6.0)).to_string());
    assert_error(&err, arbiter::ErrorCode::Unsupported, Some("jobs[0].unconsolidated_throughput.v100"));
    let mut unknown = request("max_min_fairness", Some(6.0));
    unknown["jobs"][1]["unconsolidated_throughput"] = json!({"a100": 1.0});
    let err = solve_err(&unknown.to_string());
    assert_error(&err, arbiter::ErrorCode::UnknownWorkerType, Some("jobs[1].unconsolidated_throughput.a100"));
    let err = solve_err(&request("max_min_fairness", Some(-1.0)).to_string());
    assert_error(&err, arbiter::ErrorCode::InvalidNumber, Some("jobs[0].unconsolidated_throughput.v100"));
}
