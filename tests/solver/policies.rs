//! Hand-checkable instances for every policy of the contract. Each expected number is derived in
//! the comment above its test; every allocation that comes back also goes through the shared
//! feasibility check (`crate::common::solve_ok`).

use crate::common::*;
use arbiter::ErrorCode;
use serde_json::{json, Value};

fn policy_fixture(name: &str) -> Value {
    fixture_json(&format!("policies/{name}.json"))
}

fn index_of(p: &arbiter::Problem, id: &str) -> usize {
    p.jobs.iter().position(|j| j.id == id).unwrap()
}

fn type_of(p: &arbiter::Problem, name: &str) -> usize {
    p.worker_types.iter().position(|w| w.name == name).unwrap()
}

/// Asserts `X[job][type] ≈ want` (absolute 1e-6).
fn assert_x(p: &arbiter::Problem, x: &[Vec<f64>], job: &str, ty: &str, want: f64) {
    let got = x[index_of(p, job)][type_of(p, ty)];
    assert!((got - want).abs() < 1e-6, "X[{job}][{ty}] = {got}, want {want}");
}

fn time_share(p: &arbiter::Problem, x: &[Vec<f64>], job: &str) -> f64 {
    x[index_of(p, job)].iter().sum()
}

// ---------------------------------------------------------------------------------------------
// max_min_fairness

/// Paper example with weights [2, 1, 1]: demands w·thr_equal = [5, 2, 1.5], max z s.t. thr_m ≥ z·d_m.
/// Job 2 only on the K80 (f), job 0 only on the V100 (a), job 1 on both (b, c):
/// 4a = 5z, b = 1 − a, c = 1 − f, f = 1.5z, 3b + c = 2z ⇒ 4 − 5.25z = 2z ⇒ z = 16/29,
/// X = [[20/29, 0], [9/29, 5/29], [0, 24/29]]. Dual check: p_v100 = 4u0 = 3u1, p_k80 = u1 = u2, the
/// zero entries have reduced costs u1 − u0 > 0 and 3u1 − 2u2 > 0, all u > 0: optimal and unique.
#[test]
fn las_with_weights() {
    let (p, r, x) = solve_value(&policy_fixture("las_weighted"));
    assert_close(r.objective.unwrap(), 16.0 / 29.0, 1e-6, "objective");
    assert_close(las_value(&p, &x), 16.0 / 29.0, 1e-6, "recomputed objective");
    assert_x(&p, &x, "j0", "v100", 20.0 / 29.0);
    assert_x(&p, &x, "j0", "k80", 0.0);
    assert_x(&p, &x, "j1", "v100", 9.0 / 29.0);
    assert_x(&p, &x, "j1", "k80", 5.0 / 29.0);
    assert_x(&p, &x, "j2", "v100", 0.0);
    assert_x(&p, &x, "j2", "k80", 24.0 / 29.0);
}

/// One type with 2 GPUs, T = throughput on sf GPUs. thr_equal_m = T_m; values (sf/w)·thr/thr_equal:
/// small1: x1, big (sf 2, T 2): 2·x_b, small2 (weight 2): x2/2. Equal values z need x1 = z,
/// x_b = z/2, x2 = 2z and x1 + 2·x_b + x2 = 4z ≤ 2 GPUs ⇒ z = 1/2, X = [1/2, 1/4, 1].
#[test]
fn las_with_scale_factors_and_weights() {
    let (p, r, x) = solve_value(&policy_fixture("las_scale_factors"));
    assert_close(r.objective.unwrap(), 0.5, 1e-6, "objective");
    assert_close(las_value(&p, &x), 0.5, 1e-6, "recomputed objective");
    assert_x(&p, &x, "small1", "a100", 0.5);
    assert_x(&p, &x, "big", "a100", 0.25);
    assert_x(&p, &x, "small2", "a100", 1.0);
    assert_close(r.effective_throughput["big"], 0.5, 1e-6, "big's steps/s");
}

/// Type-blind: every T is 1 and thr_equal = 1, so a job's value is (sf/w)·(its total time t).
/// big (sf 2, weight 3): (2/3)·t_b; s1..s3: t. Equal values z: t_b = 3z/2, t_s = z; GPUs
/// 2·t_b + 3·t_s = 6z ≤ 4 ⇒ z = 2/3, t_b = 1 (its row is full), t_s = 2/3. Only the time totals
/// are unique (the LP is indifferent between V100 and K80), and the effective throughputs are
/// reported with the measured throughputs.
#[test]
fn las_heterogeneity_agnostic() {
    let (p, r, x) = solve_value(&policy_fixture("las_agnostic"));
    assert!(!p.heterogeneity_aware);
    assert_close(r.objective.unwrap(), 2.0 / 3.0, 1e-6, "objective");
    assert_close(las_value(&p, &x), 2.0 / 3.0, 1e-6, "recomputed objective");
    assert!((time_share(&p, &x, "big") - 1.0).abs() < 1e-6);
    for s in ["s1", "s2", "s3"] {
        assert!((time_share(&p, &x, s) - 2.0 / 3.0).abs() < 1e-6, "{s}");
    }
}

/// The same request with heterogeneity_aware: true must differ: big's demand is now
/// 3·thr_equal/2 = 3·6.5/2 and the answer is no longer the type-blind 2/3 of its time — the
/// flag must reach the solver. (Its aware optimum is checked against a plain LP in properties.rs.)
#[test]
fn las_aware_flag_changes_the_problem() {
    let mut request = policy_fixture("las_agnostic");
    request["heterogeneity_aware"] = Value::Bool(true);
    let (p, r, x) = solve_value(&request);
    assert!(p.heterogeneity_aware);
    let objective = r.objective.unwrap();
    assert_close(las_value(&p, &x), objective, 1e-6, "recomputed objective");
    assert!((objective - 2.0 / 3.0).abs() > 1e-3, "aware objective {objective} equals the type-blind one");
}

// ---------------------------------------------------------------------------------------------
// finish_time_fairness

/// All t_m = 0 (and t_iso = 0): ρ_m = thr_iso_m / thr_m whatever r_m is. M = 3 on one V100 and
/// one K80: X_isolated = 1/3 of each, thr_iso = [5/3, 4/3, 1] = (2/3)·thr_equal, so the LP is the
/// paper's LAS example with demands scaled by 2/3: z = (8/11)·(3/2) = 12/11, ρ = 11/12, and X is
/// the paper's (unique) X = [[5/11, 0], [5/11, 1/11], [1/11, 10/11]].
#[test]
fn ftf_with_no_elapsed_time() {
    let (p, r, x) = solve_value(&policy_fixture("ftf_zero_elapsed"));
    assert_close(r.objective.unwrap(), 11.0 / 12.0, 1e-6, "max ρ");
    assert_close(max_rho(&p, &x), 11.0 / 12.0, 1e-6, "max ρ recomputed");
    for rho in ftf_rhos(&p, &x) {
        assert_close(rho, 11.0 / 12.0, 1e-6, "every job is at the max ρ");
    }
    assert_x(&p, &x, "j0", "v100", 5.0 / 11.0);
    assert_x(&p, &x, "j1", "k80", 1.0 / 11.0);
    assert_x(&p, &x, "j2", "k80", 10.0 / 11.0);
}

/// Elapsed time (the bisection path). One GPU, two jobs with T = 1, r = 10: X_iso = 1/2 each,
/// thr_iso = 1/2. old: t = 10, t_iso = 5, D = 5 + 10/0.5 = 25, ρ_old = (10 + 10/x)/25.
/// new: D = 20, ρ_new = (10/y)/20 = 1/(2y). Both fall as their share grows, so at the optimum
/// y = 1 − x and ρ_old = ρ_new: 20(1 − x)(1 + x) = 25x ⇒ 4x² + 5x − 4 = 0 ⇒ x = (√89 − 5)/8,
/// ρ* = 1/(2(1 − x)) = (13 + √89)/20 ≈ 1.121699. (The isolated allocation has ρ = [1.2, 1].)
#[test]
fn ftf_with_elapsed_time() {
    let (p, r, x) = solve_value(&policy_fixture("ftf_elapsed"));
    let rho = (13.0 + 89f64.sqrt()) / 20.0;
    assert_close(r.objective.unwrap(), rho, 1e-6, "max ρ");
    assert_close(max_rho(&p, &x), rho, 1e-6, "max ρ recomputed");
    assert!((x[index_of(&p, "old")][0] - (89f64.sqrt() - 5.0) / 8.0).abs() < 1e-5, "old's share {:?}", x);
}

// ---------------------------------------------------------------------------------------------
// min_makespan

/// One type with 2 GPUs: big (sf 2, 2 steps/s, 40 steps) needs 40 GPU-seconds, b and c (1 step/s,
/// 10 steps) 10 each: 60 GPU-seconds on 2 GPUs cannot take less than 30 s, and 30 s is met by
/// X = [2/3, 1/3, 1/3] (thr = 4/3, 1/3, 1/3: every job finishes at exactly 30 s). Unique: with
/// makespan 30 every job needs at least that share, and together they fill both GPUs.
#[test]
fn makespan_with_scale_factors() {
    let (p, r, x) = solve_value(&policy_fixture("makespan_scale_factors"));
    assert_close(r.objective.unwrap(), 30.0, 1e-6, "makespan");
    assert_close(makespan(&p, &x), 30.0, 1e-6, "makespan recomputed");
    assert_x(&p, &x, "big", "a100", 2.0 / 3.0);
    assert_x(&p, &x, "b", "a100", 1.0 / 3.0);
    assert_x(&p, &x, "c", "a100", 1.0 / 3.0);
}

/// The paper example with r = [500, 400, 300] = 200·thr_equal: max z s.t. thr_m ≥ z·r_m is LAS's
/// LP with demands scaled by 200, so z = (8/11)/200 and the makespan is 1/z = 275 s, with the
/// paper's unique X.
#[test]
fn makespan_on_the_paper_example() {
    let (p, r, x) = solve_value(&policy_fixture("makespan_worked_example"));
    assert_close(r.objective.unwrap(), 275.0, 1e-6, "makespan");
    assert_close(makespan(&p, &x), 275.0, 1e-6, "makespan recomputed");
    assert_x(&p, &x, "j0", "v100", 5.0 / 11.0);
    assert_x(&p, &x, "j2", "k80", 10.0 / 11.0);
}

// ---------------------------------------------------------------------------------------------
// max_sum_throughput

/// Paper example: the V100 is worth 4 to j0 and at most 3 to anyone else, so j0 gets all of it
/// (X = 1, its row is then full); the K80 is worth 1 to j1 or j2, split any way. Σ = 4 + 1 = 5.
#[test]
fn max_sum_throughput_on_the_paper_example() {
    let (p, r, x) = solve_value(&policy_fixture("max_sum_throughput"));
    assert_close(r.objective.unwrap(), 5.0, 1e-6, "total throughput");
    let total: f64 = throughputs(&p, &x).iter().sum();
    assert_close(total, 5.0, 1e-6, "total recomputed");
    assert_x(&p, &x, "j0", "v100", 1.0);
    assert_x(&p, &x, "j0", "k80", 0.0);
    let k80 = type_of(&p, "k80");
    assert!((x[1][k80] + x[2][k80] - 1.0).abs() < 1e-6);
}

/// Three GPUs: big makes 10 steps/s on 2 GPUs (5 per GPU), b and c 4 on one. big runs all the time
/// on 2 GPUs (X = 1) and the third GPU goes to b or c: 10 + 4 = 14 (versus 13 for b, c and half of
/// big).
#[test]
fn max_sum_throughput_with_scale_factors() {
    let (p, r, x) = solve_value(&policy_fixture("max_sum_throughput_scale_factors"));
    assert_close(r.objective.unwrap(), 14.0, 1e-6, "total throughput");
    assert_x(&p, &x, "big", "a100", 1.0);
    assert!((x[1][0] + x[2][0] - 1.0).abs() < 1e-6);
}

// ---------------------------------------------------------------------------------------------
// fifo

/// "late" is listed first but arrives at 5, "early" at 1. Coefficients (M − rank)/max_w T:
/// early 2/3, late 1/4, so the objective is 2·x_e,v100 + (2/3)·x_e,k80 + x_l,v100 + (1/2)·x_l,k80.
/// The V100 is worth 2 to early and 1 to late: early gets its fastest type outright (its row is
/// then full); the K80 goes to late. Objective 2 + 1/2 = 5/2.
#[test]
fn fifo_earlier_arrival_gets_its_fastest_type() {
    let (p, r, x) = solve_value(&policy_fixture("fifo_arrival"));
    assert_close(r.objective.unwrap(), 2.5, 1e-6, "objective");
    assert_close(fifo_value(&p, &x), 2.5, 1e-6, "objective recomputed");
    assert_x(&p, &x, "early", "v100", 1.0);
    assert_x(&p, &x, "early", "k80", 0.0);
    assert_x(&p, &x, "late", "v100", 0.0);
    assert_x(&p, &x, "late", "k80", 1.0);
}

/// Equal arrivals: the order in `jobs` breaks the tie, so "first" has rank 0 (coefficient 2/2)
/// and takes the only GPU; objective (2/2)·2·1 = 2.
#[test]
fn fifo_ties_keep_request_order() {
    let (p, r, x) = solve_value(&policy_fixture("fifo_ties"));
    assert_close(r.objective.unwrap(), 2.0, 1e-6, "objective");
    assert_x(&p, &x, "first", "v100", 1.0);
    assert_x(&p, &x, "second", "v100", 0.0);
    // Swap the ids' positions: the tie now goes the other way.
    let mut request = policy_fixture("fifo_ties");
    request["jobs"].as_array_mut().unwrap().reverse();
    let (p, _, x) = solve_value(&request);
    assert_x(&p, &x, "second", "v100", 1.0);
    assert_x(&p, &x, "first", "v100", 0.0);
}

/// Without `arrival`, arrival is the order in `jobs`.
#[test]
fn fifo_default_arrival_is_request_order() {
    let request = json!({
        "policy": "fifo",
        "cluster": {"worker_types": {"v100": {"count": 1}}},
        "jobs": [
            {"id": "z", "throughput": {"v100": 1.0}},
            {"id": "a", "throughput": {"v100": 1.0}}
        ]
    });
    let (p, _, x) = solve_value(&request);
    assert_x(&p, &x, "z", "v100", 1.0);
    assert_x(&p, &x, "a", "v100", 0.0);
}

// ---------------------------------------------------------------------------------------------
// shortest_job_first

/// Both jobs: 2 steps/s on the V100, 1 on the K80. short (10 steps) takes 5 s on the V100, long
/// (100 steps) 50 s, so short goes first and gets the V100; long gets what is left, the K80.
/// Objective min_m r_m/thr_m = 10/2 = 5 s.
#[test]
fn shortest_job_first_gives_the_shortest_job_its_fastest_type() {
    let (p, r, x) = solve_value(&policy_fixture("shortest_job_first"));
    assert_close(r.objective.unwrap(), 5.0, 1e-6, "objective");
    assert_x(&p, &x, "short", "v100", 1.0);
    assert_x(&p, &x, "short", "k80", 0.0);
    assert_x(&p, &x, "long", "v100", 0.0);
    assert_x(&p, &x, "long", "k80", 1.0);
    let thr = throughputs(&p, &x);
    let shortest =
        p.jobs.iter().enumerate().map(|(m, j)| j.steps_remaining.unwrap() / thr[m]).fold(f64::INFINITY, f64::min);
    assert_close(shortest, 5.0, 1e-6, "objective recomputed");
}

// ---------------------------------------------------------------------------------------------
// min_cost

/// Throughput per dollar-hour of each (job, type): a: 6/3 = 2 on the V100, 2/0.5 = 4 on the K80;
/// b: 1 and 2. A ratio of sums is at most the best single ratio, 4, reached only by a on the
/// K80; among allocations with ratio 4 the most throughput is a on the K80 all the time.
#[test]
fn min_cost_picks_the_best_throughput_per_dollar() {
    let (p, r, x) = solve_value(&policy_fixture("min_cost"));
    assert_close(r.objective.unwrap(), 4.0, 1e-6, "throughput per dollar-hour");
    assert_close(throughput_per_dollar(&p, &x), 4.0, 1e-6, "ratio recomputed");
    assert_x(&p, &x, "a", "k80", 1.0);
    assert_x(&p, &x, "a", "v100", 0.0);
    assert_x(&p, &x, "b", "v100", 0.0);
    assert_x(&p, &x, "b", "k80", 0.0);
}

/// The cost counts every GPU a job occupies: c (sf 2) on the K80 makes 5 steps/s for 2·0.5 $/h,
/// ratio 5, the best column (a: 2 and 4; c on the V100: 12/6 = 2). c alone on both K80s all the
/// time; a would only lower the ratio.
#[test]
fn min_cost_counts_scale_factors() {
    let (p, r, x) = solve_value(&policy_fixture("min_cost_scale_factors"));
    assert_close(r.objective.unwrap(), 5.0, 1e-6, "throughput per dollar-hour");
    assert_close(throughput_per_dollar(&p, &x), 5.0, 1e-6, "ratio recomputed");
    assert_x(&p, &x, "c", "k80", 1.0);
    assert_x(&p, &x, "c", "v100", 0.0);
    assert_x(&p, &x, "a", "v100", 0.0);
    assert_x(&p, &x, "a", "k80", 0.0);
}

// ---------------------------------------------------------------------------------------------
// min_cost_slo

/// a must make 4000 steps in 1000 s: thr_a ≥ 4, beyond the K80's 2, so it needs V100 time:
/// 6x + 2y ≥ 4 with x + y ≤ 1. Its ratio (6x + 2y)/(3x + 0.5y) mixes 2 (V100) and 4 (K80) in
/// proportion to cost, so it is best with y as large and x as small as possible: x = y = 1/2,
/// thr 4 for 1.75 $/h, ratio 16/7. b has no SLO and at most ratio 2 < 16/7, so it gets nothing.
/// By decomposition (`method: decomposition`, formulations/min_cost.md) the same.
#[test]
fn min_cost_slo_meets_the_slo_at_least_cost() {
    for method in ["lp", "decomposition"] {
        let mut request = policy_fixture("min_cost_slo_feasible");
        request["method"] = json!(method);
        let (p, r, x) = solve_value(&request);
        assert_eq!(r.stats.method.as_ref().map(|m| (m.method.as_str(), m.fallback.is_none())), Some((method, true)));
        min_cost_slo_meets_the_slo_at_least_cost_on(&p, &r, &x);
    }
}

fn min_cost_slo_meets_the_slo_at_least_cost_on(p: &arbiter::Problem, r: &arbiter::Response, x: &[Vec<f64>]) {
    assert_close(r.objective.unwrap(), 16.0 / 7.0, 1e-6, "throughput per dollar-hour");
    assert_close(throughput_per_dollar(p, x), 16.0 / 7.0, 1e-6, "ratio recomputed");
    let thr = throughputs(p, x);
    for (m, job) in p.jobs.iter().enumerate() {
        if let Some(slo) = job.slo_seconds {
            let need = job.steps_remaining.unwrap() / slo;
            assert!(thr[m] >= need * (1.0 - 1e-6), "{}: thr {} < r/slo = {need}", job.id, thr[m]);
        }
    }
    assert_x(p, x, "a", "v100", 0.5);
    assert_x(p, x, "a", "k80", 0.5);
    assert_x(p, x, "b", "v100", 0.0);
    assert_x(p, x, "b", "k80", 0.0);
}

/// a needs 5 steps/s (so at least 3/4 of the V100: 6x + 2(1 − x) ≥ 5) and b needs 2; with at most
/// 1/4 of the V100 and its own row ≤ 1, b makes at most 3/4 + 1 = 1.75 < 2. Both SLOs cannot be
/// met and both jobs are held back at the best compromise; c has no SLO and is not named.
#[test]
fn min_cost_slo_refuses_unmeetable_slos_and_names_the_jobs() {
    let err = solve_err(&policy_fixture("min_cost_slo_infeasible").to_string());
    assert_eq!(err.code, ErrorCode::Infeasible, "{}", err.to_json());
    assert_eq!(err.jobs, ["a", "b"], "{}", err.to_json());
    assert_eq!(err.code.http_status(), 422);
    let wire = err.to_json();
    assert_eq!(wire["error"]["code"], "infeasible");
    assert_eq!(wire["error"]["jobs"], json!(["a", "b"]));
}

/// d needs 10 steps/s but makes at most 6 alone on the V100: its SLO can never be met, whatever
/// the others get. b (0.1 steps/s) and e (0.5) can be met easily and together with d's best
/// (the whole V100, leaving the K80 for them), so only d is the culprit.
#[test]
fn min_cost_slo_names_only_the_job_that_cannot_make_it() {
    let err = solve_err(&policy_fixture("min_cost_slo_one_impossible").to_string());
    assert_eq!(err.code, ErrorCode::Infeasible, "{}", err.to_json());
    assert_eq!(err.jobs, ["d"], "{}", err.to_json());
}

// ---------------------------------------------------------------------------------------------
// isolated and proportional

/// 2 V100s and 4 K80s, M = 3: (count_w/M)/sf = [2/3, 4/3] for sf 1, scaled to sum 1: [1/3, 2/3];
/// [1/6, 1/3] for b (sf 4), which already fits. No objective.
#[test]
fn isolated_allocation_by_formula() {
    let (p, r, x) = solve_value(&policy_fixture("isolated"));
    assert_eq!(r.objective, None);
    assert_eq!(r.stats.lp_solves, 0);
    for job in ["a", "c"] {
        assert_x(&p, &x, job, "v100", 1.0 / 3.0);
        assert_x(&p, &x, job, "k80", 2.0 / 3.0);
    }
    assert_x(&p, &x, "b", "v100", 1.0 / 6.0);
    assert_x(&p, &x, "b", "k80", 1.0 / 3.0);
    assert_close(r.effective_throughput["b"], 8.0 / 6.0 + 2.0 / 3.0, 1e-9, "b");
    // The library's own isolated allocation is the same matrix.
    let lib = matrix_rows(&p.isolated_allocation());
    for (m, row) in lib.iter().enumerate() {
        for (w, v) in row.iter().enumerate() {
            assert!((v - x[m][w]).abs() < 1e-12);
        }
    }
}

/// X_equal = [2/6, 4/6]; the jobs occupy Σ sf = 8 GPUs of 6, so everything is scaled by 6/8:
/// every row is [1/4, 1/2], and both types are then exactly full (8·1/4 = 2, 8·1/2 = 4).
#[test]
fn proportional_allocation_scaled_to_fit() {
    let (p, r, x) = solve_value(&policy_fixture("proportional"));
    assert_eq!(r.objective, None);
    for job in ["a", "b", "c", "d"] {
        assert_x(&p, &x, job, "v100", 0.25);
        assert_x(&p, &x, job, "k80", 0.5);
    }
}

/// When the jobs fit there is nothing to scale: two sf-1 jobs on 6 GPUs get X_equal = [1/3, 2/3].
#[test]
fn proportional_allocation_unscaled_when_it_fits() {
    let mut request = policy_fixture("proportional");
    request["jobs"].as_array_mut().unwrap().truncate(1);
    let (p, _, x) = solve_value(&request);
    assert_x(&p, &x, "a", "v100", 1.0 / 3.0);
    assert_x(&p, &x, "a", "k80", 2.0 / 3.0);
}

// ---------------------------------------------------------------------------------------------
// Edges shared by every policy

/// A request with no jobs is answered with an empty allocation by every policy that solves.
#[test]
fn no_jobs_gives_an_empty_allocation() {
    for policy in policies_except(&[]) {
        let request = json!({
            "policy": policy,
            "cluster": {"worker_types": {"v100": {"count": 2, "cost_per_hour": 1.0}}},
            "jobs": []
        });
        let (_, r, _) = solve_value(&request);
        assert!(r.allocation.is_empty(), "{policy}");
        assert!(r.effective_throughput.is_empty(), "{policy}");
    }
}

/// A worker type with no GPUs is allowed and never allocated.
#[test]
fn a_type_with_zero_gpus_gets_nothing() {
    let mut request = fixture_json("paper_worked_example.json");
    request["cluster"]["worker_types"]["a100"] = json!({"count": 0});
    for job in request["jobs"].as_array_mut().unwrap() {
        job["throughput"]["a100"] = json!(100.0);
    }
    let (p, r, x) = solve_value(&request);
    assert_close(r.objective.unwrap(), 8.0 / 11.0, 1e-6, "objective unchanged");
    let a100 = type_of(&p, "a100");
    for row in &x {
        assert_eq!(row[a100], 0.0);
    }
}

/// Type-blind policies spread each job's time over the types in proportion to their GPUs (the
/// evenly spread optimum Gavel's solver returns), keeping the objective; a vertex would pin each
/// job to one type.
#[test]
fn type_blind_allocations_are_spread_over_types() {
    let request = json!({
        "policy": "max_min_fairness",
        "heterogeneity_aware": false,
        "cluster": {"worker_types": {"v100": {"count": 2}, "p100": {"count": 4}, "k80": {"count": 6}}},
        "jobs": (0..8).map(|m| json!({"id": format!("j{m}"), "throughput": {"v100": 4.0, "p100": 2.0, "k80": 1.0},
            "scale_factor": 1 + m % 2})).collect::<Vec<_>>()
    });
    for policy in ["max_min_fairness", "max_min_fairness_water_filling", "max_sum_throughput"] {
        let mut request = request.clone();
        request["policy"] = json!(policy);
        let (p, _, x) = solve_value(&request);
        for row in &x {
            let time: f64 = row.iter().sum();
            for (w, wt) in p.worker_types.iter().enumerate() {
                assert!((row[w] - time * wt.count / 12.0).abs() < 1e-12, "{policy}: {row:?}");
            }
        }
    }
}
