//! Valid requests whose numbers span a wide range. Throughputs, steps and costs come in whatever
//! unit the caller measures (steps/s, samples/s, tokens/s; $/h or $/s), so the answer must not
//! depend on their scale, and a number validation accepts must be solved or refused as bad
//! input — never answered wrongly or with `solver_failed`.

use crate::common::*;
use arbiter::ErrorCode;
use serde_json::json;

fn two_jobs_on_two_gpus(policy: &str, a: f64, b: f64, steps: [f64; 2]) -> serde_json::Value {
    json!({
        "policy": policy,
        "cluster": {"worker_types": {"g": {"count": 2, "cost_per_hour": 1.0}}},
        "jobs": [
            {"id": "a", "throughput": {"g": a}, "steps_remaining": steps[0]},
            {"id": "b", "throughput": {"g": b}, "steps_remaining": steps[1]}
        ]
    })
}

/// Two jobs, two GPUs of one type: thr_equal_m = T_m, so each job's value is just its share x_m and
/// LAS gives both a whole GPU (z = 1) whatever their throughputs.
fn las_gives_both_a_gpu(spread: f64) {
    let (p, r, x) = solve_value(&two_jobs_on_two_gpus("max_min_fairness", 1.0, spread, [1.0, 1.0]));
    assert_close(r.objective.unwrap(), 1.0, 1e-6, "objective");
    assert_close(las_value(&p, &x), 1.0, 1e-6, "recomputed objective");
    assert!((x[0][0] - 1.0).abs() < 1e-6 && (x[1][0] - 1.0).abs() < 1e-6, "{x:?}");
}

#[test]
fn las_is_scale_free_over_a_millionfold_spread() {
    las_gives_both_a_gpu(1e6);
    las_gives_both_a_gpu(1e-6);
}

/// Reproduction: throughputs 1 and 1e9 (say steps/s next to tokens/s) give objective 0 and
/// job a no time at all, below its isolated share. The engine normalizes demands by the
/// largest, and a normalized demand under 1e-9 is what HiGHS drops as a zero coefficient.
#[test]
fn las_is_scale_free_over_a_billionfold_spread() {
    las_gives_both_a_gpu(1e9);
}

/// min_makespan: a (1 step at 1 step/s) and b (1e10 steps at 1e10 steps/s) each finish in 1 s on
/// their own GPU; the makespan is 1 s.
#[test]
fn makespan_is_scale_free_over_a_wide_spread() {
    let (p, r, x) = solve_value(&two_jobs_on_two_gpus("min_makespan", 1.0, 1e10, [1.0, 1e10]));
    assert_close(r.objective.expect("a makespan"), 1.0, 1e-6, "makespan");
    assert_close(makespan(&p, &x), 1.0, 1e-6, "recomputed makespan");
}

#[test]
fn makespan_is_scale_free_over_a_millionfold_spread() {
    let (p, r, x) = solve_value(&two_jobs_on_two_gpus("min_makespan", 1.0, 1e6, [1.0, 1e6]));
    assert_close(r.objective.unwrap(), 1.0, 1e-6, "makespan");
    assert_close(makespan(&p, &x), 1.0, 1e-6, "recomputed makespan");
}

/// FTF with nothing elapsed: the isolated allocation (one GPU each) has ρ = 1, so max ρ ≤ 1.
#[test]
fn ftf_is_scale_free_over_a_wide_spread() {
    let (p, r, x) = solve_value(&two_jobs_on_two_gpus("finish_time_fairness", 1.0, 1e10, [10.0, 10.0]));
    let rho = r.objective.expect("a max ρ");
    assert!(rho <= 1.0 + 1e-6, "max ρ {rho}");
    assert!(max_rho(&p, &x) <= 1.0 + 1e-6);
}

/// min_cost's answer scales with the unit of money: costs in $/s instead of $/h multiply the ratio
/// by 3600; and one job on one type has ratio T / cost.
#[test]
fn min_cost_is_scale_free_in_the_currency() {
    for cost in [1.0, 1.0 / 3600.0, 1e-6, 1e6] {
        let request = json!({
            "policy": "min_cost",
            "cluster": {"worker_types": {
                "v100": {"count": 1, "cost_per_hour": 3.0 * cost},
                "k80": {"count": 1, "cost_per_hour": 0.5 * cost}
            }},
            "jobs": [
                {"id": "a", "throughput": {"v100": 6.0, "k80": 2.0}},
                {"id": "b", "throughput": {"v100": 3.0, "k80": 1.0}}
            ]
        });
        let (_, r, _) = solve_value(&request);
        assert_close(r.objective.unwrap(), 4.0 / cost, 1e-6, "throughput per dollar");
    }
}

/// Numbers validation accepts must be solved, or refused as bad input (a 4xx code); the solver
/// failing on them is a 500 for a request that was never wrong.
#[test]
fn valid_extreme_numbers_never_fail_the_solver() {
    let cases = [
        json!({
            "policy": "max_min_fairness",
            "cluster": {"worker_types": {"g": {"count": 2}}},
            "jobs": [{"id": "a", "throughput": {"g": 1e15}}]
        }),
        json!({
            "policy": "min_cost",
            "cluster": {"worker_types": {"g": {"count": 2, "cost_per_hour": 1e-9}}},
            "jobs": [{"id": "a", "throughput": {"g": 1.0}}]
        }),
        json!({
            "policy": "min_cost_slo",
            "cluster": {"worker_types": {"g": {"count": 2, "cost_per_hour": 1.0}}},
            "jobs": [
                {"id": "a", "throughput": {"g": 1.0}, "steps_remaining": 100, "slo_seconds": 5e-324},
                {"id": "b", "throughput": {"g": 1.0}}
            ]
        }),
    ];
    for request in cases {
        match arbiter::solve_json(&request.to_string(), arbiter::lp::Backend::default()) {
            Ok(r) => {
                let p = problem(&request.to_string());
                checked_allocation(&p, &r);
            }
            Err(e) => {
                assert!(e.code != ErrorCode::SolverFailed && e.code.http_status() < 500, "{request} → {}", e.to_json())
            }
        }
    }
}

/// One job measured far faster than the others (say tokens/s beside steps/s): the throughput
/// objectives' costs then span up to 10²¹, where HiGHS's dual simplex failed ("excessive dual
/// values") and from 10²⁰ took the cost for infinite. They solve, and the fast job gets its GPU.
#[test]
fn a_job_far_faster_than_the_rest_is_solved_by_the_throughput_objectives() {
    for policy in ["max_sum_throughput", "min_cost", "min_cost_slo"] {
        for fast in [1e9, 1e12, 1e18, 1e21] {
            let request = json!({
                "policy": policy,
                "cluster": {"worker_types": {
                    "v100": {"count": 2, "cost_per_hour": 2.48},
                    "k80": {"count": 2, "cost_per_hour": 0.45}
                }},
                "jobs": [
                    {"id": "fast", "throughput": {"v100": fast, "k80": fast / 2.0}, "steps_remaining": 9e4,
                     "slo_seconds": 3.6e4},
                    {"id": "b", "throughput": {"v100": 2.0, "k80": 1.0}, "steps_remaining": 2e4},
                    {"id": "c", "throughput": {"v100": 6.0, "k80": 1.5}, "steps_remaining": 6e4}
                ]
            });
            let r = arbiter::solve_json(&request.to_string(), arbiter::lp::Backend::default())
                .unwrap_or_else(|e| panic!("{policy} at {fast:e}: {}", e.to_json()));
            let p = problem(&request.to_string());
            let x = checked_allocation(&p, &r);
            let objective = r.objective.expect("an objective");
            assert!(objective.is_finite() && objective > 0.0, "{policy} at {fast:e}: {objective}");
            if policy == "max_sum_throughput" {
                // The fast job on a V100 is nearly all of the sum.
                assert_close(objective / fast, 1.0, 1e-6, "sum of throughputs over the fast job's");
                let v100 = p.worker_types.iter().position(|t| t.name == "v100").expect("a v100 type");
                assert!(x[0][v100] > 1.0 - 1e-6, "{x:?}");
            }
        }
    }
}

/// min_makespan with a job that needs almost nothing (10⁴ steps at 10¹⁰ steps/s beside two jobs
/// of 10³ steps at 1 step/s, two GPUs): its share of a GPU is under the LP's tolerance, so the
/// first solve may give it none. The optimum is still 1,000 s, and the tie-break must keep it:
/// it used to take the infinite makespan of that first allocation for the objective, gave the
/// tie-break no floors, and starved a slow job (objective null, one job at 0 steps/s).
#[test]
fn makespan_keeps_its_optimum_beside_a_job_that_needs_almost_nothing() {
    let request = json!({
        "policy": "min_makespan",
        "cluster": {"worker_types": {"g": {"count": 2}}},
        "jobs": [
            {"id": "a", "throughput": {"g": 1e10}, "steps_remaining": 1e4},
            {"id": "b", "throughput": {"g": 1.0}, "steps_remaining": 1e3},
            {"id": "c", "throughput": {"g": 1.0}, "steps_remaining": 1e3}
        ]
    });
    let (p, r, x) = solve_value(&request);
    assert_close(r.objective.expect("a finite makespan"), 1e3, 1e-6, "makespan");
    assert_close(makespan(&p, &x), 1e3, 1e-6, "recomputed makespan");
    // Without the tie-break the first solve's allocation is the answer, and its makespan (which
    // the objective reports) is infinite if the fast job got no time.
    let mut bare = request.clone();
    bare["tie_break"] = json!("none");
    let (p, r, x) = solve_value(&bare);
    let recomputed = makespan(&p, &x);
    match r.objective {
        Some(objective) => assert_close(objective, recomputed, 1e-6, "the makespan of the answer"),
        None => assert!(recomputed.is_infinite(), "objective null for a finite makespan {recomputed}"),
    }
}
