//! Valid requests whose numbers span a wide range. Throughputs, steps and costs come in whatever
//! unit the caller measures (steps/s, samples/s, tokens/s; $/h or $/s), so the answer must not
//! depend on their scale, and a number validation accepts must be solved or refused as bad
//! input — never answered wrongly or with `solver_failed`.

use crate::common::*;
use arbiter::{ErrorCode, Outcome};
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

/// Jobs 10¹⁸ apart in steps left (10¹² against 10⁻⁶): the small one needs ~10⁻¹⁸ of a GPU, under
/// the LP's tolerance, and came back with none, so the makespan over it was infinite (objective
/// null), with or without the tie-break. It gets the sliver it needs, and the makespan is the one
/// of the same jobs without it.
#[test]
fn makespan_gives_a_sliver_to_a_job_that_needs_almost_no_time() {
    let request = |tie_break: &str, with_small: bool| {
        let mut jobs = vec![
            json!({"id": "a", "throughput": {"t0": 95.8, "t1": 83.1, "t3": 70.0, "t4": 91.6}, "steps_remaining": 1.0}),
            json!({"id": "b", "throughput": {"t0": 90.8, "t1": 64.6, "t2": 63.7, "t4": 60.1}, "steps_remaining": 1e12}),
            json!({"id": "c", "throughput": {"t1": 5.3, "t2": 51.4, "t4": 20.1}, "steps_remaining": 0.0}),
            json!({"id": "e", "throughput": {"t0": 27.7, "t1": 58.5, "t2": 5.4, "t3": 41.5, "t4": 93.7},
                   "steps_remaining": 1e12}),
        ];
        if with_small {
            jobs.insert(
                3,
                json!({"id": "d", "throughput": {"t1": 63.7, "t2": 24.8, "t3": 1e-6, "t4": 65.4},
                                  "steps_remaining": 1e-6}),
            );
        }
        json!({
            "policy": "min_makespan",
            "tie_break": tie_break,
            "cluster": {"worker_types": {"t0": {"count": 2}, "t1": {"count": 1000}, "t2": {"count": 1},
                                         "t3": {"count": 2}, "t4": {"count": 1}}},
            "jobs": jobs
        })
    };
    for tie_break in ["none", "throughput"] {
        let (p, r, x) = solve_value(&request(tie_break, true));
        let objective = r.objective.unwrap_or_else(|| panic!("tie_break {tie_break}: objective null"));
        assert_close(makespan(&p, &x), objective, 1e-6, "the makespan of the answer");
        let (_, without, _) = solve_value(&request(tie_break, false));
        assert_close(objective, without.objective.expect("a makespan"), 1e-6, "makespan beside the small job");
        for m in 0..p.num_jobs() {
            if p.steps_remaining(m) > 0.0 {
                assert!(r.effective_throughput[&p.jobs[m].id] > 0.0, "tie_break {tie_break}: job {m} starved");
            }
        }
    }
}

/// Weights 10¹⁸ apart: job d's demand `w·thr_equal/sf` is ~10⁻¹⁸ of the others', so its need
/// row reads as met with no time, and LAS's objective, read off the allocation, was 0: with the
/// tie-break its floors were all 0, and it gave d and the light jobs nothing. The objective is the
/// LP's optimum, the one of the same jobs without d, d gets its sliver, and the answer's own
/// value equals it.
#[test]
fn las_keeps_its_optimum_beside_a_job_whose_demand_is_far_below_the_others() {
    let request = |tie_break: &str, with_d: bool| {
        let mut jobs = vec![
            json!({"id": "a", "throughput": {"v100": 95.8, "k80": 70.0}, "weight": 1e9}),
            json!({"id": "b", "throughput": {"v100": 40.2, "k80": 31.5}, "weight": 1e9, "scale_factor": 2}),
            json!({"id": "c", "throughput": {"v100": 12.0, "k80": 2.5}, "weight": 2e9}),
        ];
        if with_d {
            jobs.push(json!({"id": "d", "throughput": {"v100": 3.0, "k80": 1.0}, "weight": 1e-9}));
        }
        json!({
            "policy": "max_min_fairness",
            "tie_break": tie_break,
            "cluster": {"worker_types": {"v100": {"count": 2}, "k80": {"count": 3}}},
            "jobs": jobs
        })
    };
    for tie_break in ["none", "throughput"] {
        let (p, r, x) = solve_value(&request(tie_break, true));
        let objective = r.objective.expect("an objective");
        let (_, without, _) = solve_value(&request(tie_break, false));
        assert_close(objective, without.objective.expect("an objective"), 1e-6, "LAS beside job d");
        assert_close(las_value(&p, &x), objective, 1e-6, "the answer's own value");
        for m in 0..p.num_jobs() {
            assert!(r.effective_throughput[&p.jobs[m].id] > 0.0, "tie_break {tie_break}: job {m} starved");
        }
    }
}

/// Prices 10⁹ apart ($10⁹/h beside $0.45/h): the Charnes–Cooper LP of `min_cost` came back
/// "unbounded" (`solver_failed`). Without SLO floors its ratio is the best column's own, read
/// off the matrix, and the one LP left picks the allocation at it.
#[test]
fn min_cost_solves_with_prices_far_apart() {
    let request = json!({
        "policy": "min_cost",
        "cluster": {"worker_types": {
            "dear": {"count": 4, "cost_per_hour": 1e9},
            "cheap": {"count": 1000, "cost_per_hour": 0.45},
            "dear2": {"count": 8, "cost_per_hour": 1e9}
        }},
        "jobs": [
            {"id": "a", "throughput": {"dear": 47.3, "dear2": 4.0}},
            {"id": "b", "throughput": {"dear": 1.4229e11, "cheap": 63.98}}
        ]
    });
    let (_, r, _) = solve_value(&request);
    assert_close(r.objective.expect("a ratio"), 1.4229e11 / 1e9, 1e-8, "throughput per dollar-hour");
    assert_eq!(r.stats.lp_solves, 1, "one LP without floors");
}

/// A job measured at 10⁻³⁰ steps/s alone and 60 in a pair puts a 10³² coefficient in the
/// water-filling LP, which HiGHS then called optimal at an allocation running a job 106% of the
/// time and a type over its GPUs. Such an answer is refused (`solver_failed`, saying why), never
/// returned; either way nothing infeasible comes back.
#[test]
fn an_infeasible_answer_is_refused_not_returned() {
    let request = json!({
        "policy": "max_min_fairness_water_filling",
        "space_sharing": true,
        "cluster": {"worker_types": {"t0": {"count": 4}, "t1": {"count": 4}, "t2": {"count": 0}}},
        "jobs": [
            {"id": "j0", "throughput": {"t1": 41.9}, "scale_factor": 8},
            {"id": "j1", "throughput": {"t0": 84.2, "t1": 3.24e-5, "t2": 69.2}, "scale_factor": 8},
            {"id": "j3", "throughput": {"t0": 1e-30, "t2": 1.6e-6}},
            {"id": "j7", "throughput": {"t0": 70.3, "t1": 44.8, "t2": 3.1e-9}}
        ],
        "colocations": [
            {"jobs": ["j3", "j7"], "throughput": {"t0": [59.96, 84.08], "t2": [51.9, 1e30]}},
            {"jobs": ["j1", "j0"], "throughput": {"t1": [89.2, 1e-30], "t2": [97.5, 85.2]}}
        ]
    });
    let text = request.to_string();
    match arbiter::solve_json(&text, arbiter::lp::Backend::default()) {
        Ok(r) => {
            checked_allocation(&problem(&text), &r);
        }
        Err(e) => {
            assert_eq!(e.code, ErrorCode::SolverFailed, "{}", e.to_json());
            assert!(e.message.contains("infeasible"), "{}", e.to_json());
        }
    }
}

/// A job measured at 3.4·10⁻⁹ steps/s needing all 4 GPUs beside one at 45 steps/s: the optimum
/// came back over the GPUs by 7·10⁻⁸ (within the LP's tolerance), so floors 10⁻⁹ below it left
/// the tie-break's second solve infeasible (`solver_failed`). The second try's floors are 10⁻⁶
/// below, and the answer is tie-broken, within its GPUs and at the optimum's makespan.
#[test]
fn the_tie_break_meets_floors_of_an_optimum_the_lp_met_within_its_tolerance() {
    let request = json!({
        "policy": "min_makespan",
        "cluster": {"worker_types": {"t0": {"count": 4}}},
        "jobs": [
            {"id": "j0", "throughput": {"t0": 3.35533223146028e-09}, "scale_factor": 4, "steps_remaining": 1.0},
            {"id": "j1", "throughput": {"t0": 45.15542258034344}, "steps_remaining": 1000.0}
        ]
    });
    let (p, r, x) = solve_value(&request);
    assert_eq!(r.stats.tie_break, arbiter::solver::tie_break::TieBreak::Throughput, "{:?}", r.stats.tie_break_skipped);
    assert!(r.stats.tie_break_skipped.is_none());
    assert_close(makespan(&p, &x), r.objective.expect("a makespan"), 1e-5, "the makespan of the answer");
}

/// A second solve that fails twice leaves the optimum standing, and the response says why. Only
/// the library can build such a problem: a throughput of 5·10⁻³²⁴ steps/s is past the contract's
/// bounds, and HiGHS stops on it with its status "unknown".
#[test]
fn a_failed_tie_break_returns_the_optimum_and_says_why() {
    let mut p = problem(
        &json!({
            "policy": "min_makespan",
            "cluster": {"worker_types": {"t0": {"count": 1}}},
            "jobs": [{"id": "a", "throughput": {"t0": 1.0}, "steps_remaining": 1000.0, "scale_factor": 2}]
        })
        .to_string(),
    );
    p.throughput.set(0, 0, 5e-324);
    p.measured.set(0, 0, 5e-324);
    let (response, _) = arbiter::allocate(&p, arbiter::lp::Backend::default()).expect("the optimum stands");
    assert_eq!(response.stats.tie_break, arbiter::solver::tie_break::TieBreak::None);
    let why = response.stats.tie_break_skipped.expect("why the tie-break was skipped");
    assert!(why.contains("tie-break") && why.contains("optimum's own allocation"), "{why}");
}

/// Numbers whose products or quotients leave double precision (a throughput of 5·10⁻³²⁴ steps/s,
/// whose makespan is infinite; 1.7·10³⁰⁸, whose sums overflow) are refused as bad input, naming
/// the field, and the bounds themselves are accepted and solved.
#[test]
fn numbers_past_double_precision_are_refused_at_the_edge() {
    let with = |policy: &str, thr: f64, steps: f64| {
        json!({
            "policy": policy,
            "cluster": {"worker_types": {"g": {"count": 2, "cost_per_hour": 1.0}}},
            "jobs": [
                {"id": "a", "throughput": {"g": thr}, "steps_remaining": steps},
                {"id": "b", "throughput": {"g": 1.0}, "steps_remaining": 10.0}
            ]
        })
        .to_string()
    };
    for policy in ["min_makespan", "min_cost", "max_min_fairness"] {
        for (thr, steps, field) in [
            (5e-324, 1.0, "jobs[0].throughput.g"),
            (1.7e308, 1.0, "jobs[0].throughput.g"),
            (1e-101, 1.0, "jobs[0].throughput.g"),
            (1.0, 1e101, "jobs[0].steps_remaining"),
        ] {
            let e =
                arbiter::solve_json(&with(policy, thr, steps), arbiter::lp::Backend::default()).expect_err("refused");
            assert_eq!(e.code, ErrorCode::InvalidNumber, "{}", e.to_json());
            assert_eq!(e.field.as_deref(), Some(field), "{}", e.to_json());
            assert!(e.message.contains("1e-100") && e.message.contains("1e100"), "{}", e.to_json());
        }
        for (thr, steps) in [(1e-100, 1.0), (1e100, 1.0), (1.0, 1e100)] {
            let (_, r, _) = solve_value(&serde_json::from_str(&with(policy, thr, steps)).unwrap());
            assert!(r.objective.is_some(), "{policy} at {thr}, {steps} steps: {:?}", r.stats);
        }
    }
}

/// Prices 10⁹ apart under an SLO: Charnes–Cooper's LP, which puts the prices in a constraint
/// row, was called unbounded (`solver_failed`), and bounded it returned a ratio 9 times below the
/// optimum (the 8-GPU job on a whole t0 GPU for 10⁻⁶ steps/s of SLO). The optimum runs j4 on t0
/// and gives j2 the sliver of t0 its SLO needs: `(5375184.56 + 10⁻⁶) / (2.48 + 8·2.48·x)`.
#[test]
fn min_cost_slo_with_prices_a_billion_apart_finds_the_best_ratio() {
    let request = json!({
        "policy": "min_cost_slo",
        "cluster": {"worker_types": {
            "t0": {"count": 1000, "cost_per_hour": 2.48},
            "t1": {"count": 4, "cost_per_hour": 1e9},
            "t2": {"count": 100000, "cost_per_hour": 2.48}
        }},
        "jobs": [
            {"id": "j2", "throughput": {"t0": 39.41623167733444, "t1": 23.409460078686884, "t2": 16.779872172537974},
             "scale_factor": 8, "steps_remaining": 1e6, "slo_seconds": 1e12},
            {"id": "j4", "throughput": {"t0": 5375184.56030316, "t1": 96.14634348379735, "t2": 18.525057755434432},
             "steps_remaining": 1e-6}
        ]
    });
    let (p, r, x) = solve_value(&request);
    let thr = throughputs(&p, &x);
    assert!(thr[0] >= 1e-6 * (1.0 - 1e-6), "j2's SLO needs 1e-6 steps/s, got {}", thr[0]);
    let sliver = 1e-6 / 39.41623167733444;
    let best = (5375184.56030316 + 1e-6) / (2.48 + 8.0 * 2.48 * sliver);
    assert_close(r.objective.expect("a ratio"), best, 1e-6, "steps/s per dollar-hour");
}

/// A realizable solve whose pricing returns a configuration the master already has (an 8-GPU
/// job on types of at most 4 GPUs, a job measured at 2.8·10⁻⁷ steps/s beside others near 40): it
/// came back every time, for 2,000 master solves and 1.7 s (10 s in a loaded session) on 8 jobs.
/// The column generation now stops there, at the same objective, and says it is not certified.
#[test]
fn a_realizable_solve_stops_when_pricing_repeats_a_configuration() {
    let request = json!({
        "policy": "max_min_fairness",
        "realizable": true,
        "cluster": {"worker_types": {
            "t0": {"count": 1, "gpus_per_server": 2},
            "t1": {"count": 4, "gpus_per_server": 4},
            "t2": {"count": 2, "gpus_per_server": 4}
        }},
        "jobs": [
            {"id": "j0", "throughput": {"t0": 7.903337195478129, "t1": 8.090485628197847, "t2": 12.634376409077253}, "weight": 5.0},
            {"id": "j1", "throughput": {"t0": 12.56402715099747, "t1": 7.579477369524668}},
            {"id": "j2", "throughput": {"t0": 40.128465791410115, "t1": 44.42492341253219, "t2": 8.960029994499706}, "scale_factor": 8},
            {"id": "j3", "throughput": {"t1": 28.900345018933997}},
            {"id": "j4", "throughput": {"t1": 2.754043653293174e-07, "t2": 30.290155827314702}, "scale_factor": 2, "weight": 5.0},
            {"id": "j6", "throughput": {"t0": 20.641731838716115, "t1": 38.422526537451496, "t2": 25.476431296487927}},
            {"id": "j7", "throughput": {"t0": 20.52361385509162, "t1": 83.87507880089106}},
            {"id": "j10", "throughput": {"t0": 94.27234867927497}}
        ]
    });
    let (_, r, _) = solve_value(&request);
    let solve = r.stats.realizable_solve.as_ref().expect("the realizable solve ran");
    assert!(solve.applied, "{solve:?}");
    assert!(solve.lp_solves < 50, "{} master solves", solve.lp_solves);
    assert!(solve.reason.as_deref().is_some_and(|why| why.contains("already in the master")), "{solve:?}");
    // What 2,000 master solves reached.
    assert_close(r.objective.expect("an objective"), 0.22628229436414654, 1e-9, "the realizable optimum");
}

/// A job with 10⁻⁶ steps left after 10⁶ s of isolated time needs 10⁻¹² of its isolated
/// throughput: below the LP's tolerance, it came back with no time, an infinite ρ and a `null`
/// objective (`tie_break: "none"`; with the tie-break too, which keeps the optimum's objective).
/// The objective is the optimum's `1/z`, and the top-up gives the job its sliver, so its ρ is
/// finite and the objective is the answer's own.
#[test]
fn ftf_reports_the_optimum_when_a_job_needs_less_than_the_tolerance() {
    for tie_break in ["none", "throughput"] {
        let request = json!({
            "policy": "finish_time_fairness",
            "tie_break": tie_break,
            "cluster": {"worker_types": {"t3": {"count": 64}, "t4": {"count": 3}}},
            "jobs": [
                {"id": "j0", "throughput": {"t3": 22.701267264324237, "t4": 79.47554847039856}, "steps_remaining": 1e-6},
                {"id": "j1", "throughput": {"t3": 1989.408151334399, "t4": 50.79113527104109}, "scale_factor": 2,
                 "steps_remaining": 1e-6, "isolated_time_elapsed": 1e6}
            ]
        });
        let (p, r, x) = solve_value(&request);
        let objective = r.objective.unwrap_or_else(|| panic!("{tie_break}: no objective"));
        assert!(objective.is_finite() && objective > 0.0, "{tie_break}: {objective}");
        assert_close(max_rho(&p, &x), objective, 1e-6, "the answer's own max ρ");
    }
}

/// An SLO that needs 1.2·10⁻⁷ of a GPU (10³ steps in 10⁸ s at 83 steps/s): the ratio's first stage
/// lets that floor slip below the LP's tolerance, so its ratio is a hair above what meeting the
/// floor allows, and the second stage (the most throughput at that ratio, with the floor) was
/// infeasible: `solver_failed`. The first stage's allocation stands, and the top-up gives j0 its
/// sliver on its cheapest-per-step type.
#[test]
fn min_cost_slo_meets_an_slo_below_the_tolerance() {
    let request = json!({
        "policy": "min_cost_slo",
        "cluster": {"worker_types": {
            "t0": {"count": 4, "cost_per_hour": 0.45},
            "t1": {"count": 64, "cost_per_hour": 2.48},
            "t4": {"count": 2, "cost_per_hour": 0.45}
        }},
        "jobs": [
            {"id": "j0", "throughput": {"t0": 83.18342105891614}, "steps_remaining": 1000.0, "slo_seconds": 1e8},
            {"id": "j1", "throughput": {"t0": 12.316677065562963, "t1": 43.392992230567636, "t4": 85.98316343444263},
             "steps_remaining": 1000.0}
        ]
    });
    let (p, r, x) = solve_value(&request);
    let thr = throughputs(&p, &x);
    assert!(thr[0] >= 1e-5 * (1.0 - 1e-6), "j0's SLO needs 1e-5 steps/s, got {}", thr[0]);
    let sliver = 1e-5 / 83.18342105891614;
    let best = (85.98316343444263 + 1e-5) / (0.45 + 0.45 * sliver);
    assert_close(r.objective.expect("a ratio"), best, 1e-6, "steps/s per dollar-hour");
}

/// The same on a full cluster: one GPU, which the cheapest ratio gives wholly to j0, and an SLO
/// of j1 that needs 1.6·10⁻¹¹ of it. The sliver is made room for, pro rata from j0.
#[test]
fn min_cost_slo_makes_room_for_an_slo_below_the_tolerance() {
    let request = json!({
        "policy": "min_cost_slo",
        "cluster": {"worker_types": {"t0": {"count": 1, "cost_per_hour": 0.45}}},
        "jobs": [
            {"id": "j0", "throughput": {"t0": 83.96693819942644}, "steps_remaining": 1e6},
            {"id": "j1", "throughput": {"t0": 63.027034316219826}, "steps_remaining": 1e-6, "slo_seconds": 1000.0}
        ]
    });
    let (p, r, x) = solve_value(&request);
    let thr = throughputs(&p, &x);
    assert!(thr[1] >= 1e-9 * (1.0 - 1e-6), "j1's SLO needs 1e-9 steps/s, got {}", thr[1]);
    assert!(x[0][0] + x[1][0] <= 1.0 + 1e-12, "one GPU: {x:?}");
    assert_close(r.objective.expect("a ratio"), (thr[0] + thr[1]) / 0.45, 1e-12, "the answer's own ratio");
    assert_close(r.objective.expect("a ratio"), 83.96693819942644 / 0.45, 1e-9, "j0's ratio, less a sliver");
}

/// Found by generated requests with prices and throughputs decades apart (the floors: j0 needs
/// 5.6·10⁻⁸ steps/s, j1 4.7·10⁻¹⁴, j4 0.05): the engine's decomposition of the feasibility check
/// read z near 0 and refused every SLO. The plain LP confirms a refusal now, and meets them all.
#[test]
fn min_cost_slo_refuses_only_what_the_plain_lp_confirms() {
    let request = json!({"policy": "min_cost_slo", "method": "decomposition", "jobs": [
        {"id": "j0", "throughput": {"v100": 213.43184743594, "p100": 1.1544211218920013, "k80": 123.59763510626766}, "steps_remaining": 651865.441939194, "scale_factor": 4, "slo_seconds": 11575819298082.13},
        {"id": "j1", "throughput": {"v100": 66391.90330765676, "p100": 0.008701344077074088, "k80": 1.4412647758799692e-05}, "steps_remaining": 414562.96673648607, "scale_factor": 1, "slo_seconds": 8.844203945571979e+18},
        {"id": "j2", "throughput": {"p100": 994.1888603131, "k80": 175301.25057934722}, "steps_remaining": 83444.06805013063, "scale_factor": 1},
        {"id": "j3", "throughput": {"v100": 231.49303584341797, "p100": 61705.6659670888, "k80": 38348.75496348533}, "steps_remaining": 869725.1330978055, "scale_factor": 4},
        {"id": "j4", "throughput": {"v100": 120.75638072255386, "p100": 2.366166838130134, "k80": 1681.1942701687803}, "steps_remaining": 746260.6901920182, "scale_factor": 2, "slo_seconds": 15012864.68676157}],
        "cluster": {"worker_types": {"v100": {"count": 4, "cost_per_hour": 0.0003268207002015879}, "p100": {"count": 0, "cost_per_hour": 0.45747134689204766},
            "k80": {"count": 2, "cost_per_hour": 57417.46596383154}}}});
    let (p, r, x) = solve_value(&request);
    assert_feasible(&p, &x);
    let thr = throughputs(&p, &x);
    for (m, job) in p.jobs.iter().enumerate() {
        if let Some(slo) = job.slo_seconds {
            let need = job.steps_remaining.unwrap() / slo;
            assert!(thr[m] >= need * (1.0 - 2e-7), "{} makes {} < {need}", job.id, thr[m]);
        }
    }
    assert_close(throughput_per_dollar(&p, &x), r.objective.unwrap(), 1e-9, "ratio vs its allocation");
}

/// Found by generated requests: prices 10⁸ apart, and floors of 3·10⁻¹², 1.1·10⁻¹¹ and 10⁻¹⁰
/// steps/s, below the tolerance of the decomposition's single LP (five jobs), which read them as
/// met with no time. Such an answer goes to the plain LP, which says why in `fallback`, and whose
/// slipped floors `min_cost_slo` tops up (formulations/min_cost_slo.md, step 3).
#[test]
fn min_cost_slo_by_decomposition_falls_back_when_a_floor_comes_back_short() {
    let jobs = json!([
        {"id": "j0", "throughput": {"v100": 0.00013029338184596763, "p100": 177.46943640692967, "k80": 0.06457889539533919}, "steps_remaining": 829012.5428686938, "scale_factor": 1, "slo_seconds": 2.7670343317763658e+17},
        {"id": "j1", "throughput": {"v100": 505087.2491926885, "k80": 2.6364391157065974e-06}, "steps_remaining": 846215.5237270659, "scale_factor": 2, "slo_seconds": 7.683543689573005e+16},
        {"id": "j2", "throughput": {"v100": 35.135232776586655, "p100": 933.233559516404, "k80": 2853.6391989524454}, "steps_remaining": 64186.92941935434, "scale_factor": 1, "slo_seconds": 15525248.587294096},
        {"id": "j3", "throughput": {"v100": 12.358130295427411, "p100": 0.00027725968255597135, "k80": 36087.785771803705}, "steps_remaining": 992441.1300851328, "scale_factor": 4},
        {"id": "j4", "throughput": {"v100": 0.019799277949300136, "p100": 20.880503354120822, "k80": 6085.890568380695}, "steps_remaining": 72230.36278875619, "scale_factor": 2, "slo_seconds": 699941942055466.0}]);
    let request = |method: &str| {
        json!({"policy": "min_cost_slo", "method": method, "jobs": jobs, "cluster": {"worker_types": {
            "v100": {"count": 16, "cost_per_hour": 8084.2162785387245}, "p100": {"count": 2, "cost_per_hour": 0.0003137938042684672},
            "k80": {"count": 4, "cost_per_hour": 22745.026594699284}}}})
    };
    let (p, r, x) = solve_value(&request("decomposition"));
    let (_, lp, _) = solve_value(&request("lp"));
    let method = r.stats.method.as_ref().expect("a method report");
    assert_eq!(method.method, "lp", "{method:?}");
    assert!(method.fallback.as_deref().is_some_and(|why| why.contains("floor")), "{method:?}");
    assert_close(r.objective.unwrap(), lp.objective.unwrap(), 1e-12, "the LP's ratio");
    let thr = throughputs(&p, &x);
    for (m, job) in p.jobs.iter().enumerate() {
        if let Some(slo) = job.slo_seconds {
            let need = job.steps_remaining.unwrap() / slo;
            assert!(thr[m] >= need * (1.0 - 2e-7), "{} makes {} < {need}", job.id, thr[m]);
        }
    }
}

/// `Outcome::top_up` on one K80 (cheap, full) and one V100 (idle): b needs a sliver it was left
/// without. Taking it from the K80 pro rata, as the top-up did, put a, whose floor fills the K80
/// exactly, under its floor; with thousands of slivers on the one cheapest GPU that came to 0.14%
/// of a floor (a generated `min_cost_slo` request). The sliver goes where there is room: the
/// idle V100 here; the K80 once c, with no floor, runs there, and then only c gives it up.
#[test]
fn a_top_up_never_takes_a_sliver_from_another_jobs_floor() {
    use arbiter::problem::Matrix;
    let request = |jobs: serde_json::Value| {
        problem(
            &json!({"policy": "min_cost", "cluster": {"worker_types": {"k80": {"count": 1, "cost_per_hour": 0.45},
                "v100": {"count": 1, "cost_per_hour": 2.48}}}, "jobs": jobs})
            .to_string(),
        )
    };
    let job = |id: &str| json!({"id": id, "throughput": {"k80": 1.0, "v100": 1.0}, "steps_remaining": 1.0});
    let outcome = |rows: &[[f64; 2]]| Outcome::of(Matrix::from_rows(rows), None, 0);
    let cheapest = |_m: usize, w: usize| if w == 0 { 2.0 } else { 1.0 };
    let (k80, v100) = (0, 1);

    let p = request(json!([job("a"), job("b")]));
    let mut o = outcome(&[[1.0, 0.0], [0.0, 0.0]]);
    assert!(o.top_up(&p, &[1.0, 1e-7], 0.0, cheapest));
    assert_eq!(o.allocation.get(0, k80), 1.0, "a keeps its floor");
    assert!((o.allocation.get(1, v100) - 1e-7).abs() < 1e-18, "b's sliver on the idle V100: {:?}", o.allocation);

    let p = request(json!([job("a"), job("b"), job("c")]));
    let mut o = outcome(&[[0.5, 0.0], [0.0, 0.0], [0.5, 0.0]]);
    assert!(o.top_up(&p, &[0.5, 1e-7, 0.0], 0.0, cheapest));
    assert_eq!(o.allocation.get(0, k80), 0.5, "a keeps its floor");
    assert!((o.allocation.get(1, k80) - 1e-7).abs() < 1e-18, "b's sliver on the K80: {:?}", o.allocation);
    assert!((o.allocation.get(2, k80) - (0.5 - 1e-7)).abs() < 1e-15, "c gives it up: {:?}", o.allocation);
}

/// Rows of 10⁻⁷ steps/s (the contract takes down to 10⁻¹⁰⁰): the solver's optimality tolerance is
/// absolute, and an objective of such coefficients read as worth nothing, so `max_sum_throughput`
/// and `min_cost` gave the one job no time. In units of the largest gain it gets the GPU.
#[test]
fn tiny_throughputs_still_earn_their_gpu() {
    for tiny in [1e-7, 1e-30, 1e-100] {
        for policy in ["max_sum_throughput", "min_cost"] {
            let request = json!({"policy": policy,
                "cluster": {"worker_types": {"t4": {"count": 1, "cost_per_hour": 1.0}}},
                "jobs": [{"id": "a", "throughput": {"t4": tiny}}]});
            let (_, r, x) = solve_value(&request);
            assert_close(x[0][0], 1.0, 1e-9, &format!("{policy} at {tiny:e}: a's time"));
            // Steps/s, and steps/s per dollar-hour of one GPU at $1/h: the same number.
            assert_close(r.objective.unwrap(), tiny, 1e-9, &format!("{policy} at {tiny:e}: objective"));
        }
    }
}

/// Time on a type where the job cannot run adds nothing to any objective; a degenerate vertex
/// left it there (finite-time fairness with `tie_break: "none"` answered with the equal share,
/// a job with no V100 throughput holding V100 time).
#[test]
fn no_time_where_a_job_cannot_run() {
    for method in ["lp", "decomposition", "auto"] {
        for tie_break in ["none", "throughput"] {
            let request = json!({"policy": "finish_time_fairness", "method": method, "tie_break": tie_break,
                "cluster": {"worker_types": {"v100": {"count": 2}, "p100": {"count": 1000}}},
                "jobs": [
                    {"id": "a", "throughput": {"p100": 164.3}, "steps_remaining": 100, "time_elapsed": 94561.3},
                    {"id": "b", "throughput": {"v100": 178.9, "p100": 0.0876}, "steps_remaining": 10,
                     "isolated_time_elapsed": 772.57}]});
            let (p, r, x) = solve_value(&request);
            let v100 = p.worker_types.iter().position(|w| w.name == "v100").unwrap();
            assert_eq!(x[0][v100], 0.0, "{method}, {tie_break}: a has no V100 throughput: {x:?}");
            assert_close(r.objective.unwrap(), max_rho(&p, &x), 1e-6, "the objective is the allocation's");
        }
    }
}

/// A type-blind makespan whose allocation gives a job time only where its measured throughput
/// is 0: the policy took every throughput as 1 (the contract), so its makespan is finite and
/// the answer carries it (it was null, computed with the measured throughputs).
#[test]
fn a_type_blind_makespan_is_answered_with_the_throughputs_it_saw() {
    let request = json!({"policy": "min_makespan", "heterogeneity_aware": false, "method": "decomposition",
        "cluster": {"worker_types": {"a100": {"count": 4}, "k80": {"count": 4}}},
        "jobs": [
            {"id": "j28", "throughput": {"k80": 40.442456}, "steps_remaining": 45},
            {"id": "j34", "throughput": {"a100": 27.224258, "k80": 5.430124}, "scale_factor": 2, "steps_remaining": 361166},
            {"id": "j37", "throughput": {"a100": 74.333492}, "steps_remaining": 1e12},
            {"id": "j38", "throughput": {"a100": 0.320279, "k80": 0.940907}, "steps_remaining": 1000},
            {"id": "j39", "throughput": {"a100": 50.954323}, "steps_remaining": 577364},
            {"id": "j40", "throughput": {"a100": 35.931579, "k80": 0.872025}, "steps_remaining": 1e12},
            {"id": "j41", "throughput": {"k80": 0.161}, "steps_remaining": 75551},
            {"id": "j42", "throughput": {"a100": 1.642887}, "steps_remaining": 31},
            {"id": "j43", "throughput": {"a100": 2.05729, "k80": 161.688575}, "steps_remaining": 100},
            {"id": "j46", "throughput": {"a100": 1.058566, "k80": 0.259993}, "steps_remaining": 0},
            {"id": "j47", "throughput": {"a100": 27.444934, "k80": 1.18546}, "steps_remaining": 141955},
            {"id": "j48", "throughput": {"k80": 91.97046}, "steps_remaining": 1113},
            {"id": "j49", "throughput": {"k80": 20.729375}, "steps_remaining": 169035},
            {"id": "j50", "throughput": {"a100": 1.265962, "k80": 0.354164}, "steps_remaining": 106},
            {"id": "j52", "throughput": {"k80": 0.246735}, "steps_remaining": 100}]});
    let (p, r, x) = solve_value(&request);
    let objective = r.objective.expect("a finite makespan");
    assert_close(objective, makespan(&p, &x), 1e-6, "the allocation's makespan, every throughput 1");
}
