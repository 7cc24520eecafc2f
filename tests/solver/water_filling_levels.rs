//! `max_min_fairness_water_filling`, checked through the `levels` it reports: the paper's §4.3
//! example and weighted variants derived by hand, and properties on random instances —
//! feasibility, Pareto efficiency, agreement with LAS on the first level and lexicographic
//! dominance over LAS, and agreement job by job with a plain water-filling written from the
//! contract (`crate::common::plain::plain_water_filling`: per-job LPs, one bottleneck LP per job).
//!
//! On a single worker type `X_equal = 1`, so `thr_equal_m = T_m` and `nt_m = X_m`.

use crate::common::levels::*;
use crate::common::plain::*;
use crate::common::random::*;
use crate::common::*;
use proptest::prelude::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Hand-derived instances.

/// Paper §4.3: four identical jobs (T = 1) on four GPUs, weights 3, 1, 1, 1. nt = X, and a level z
/// means X_m = w_m·z. First level: X_1 = 3z, X_2..4 = z; the GPUs allow 6z ≤ 4 (z ≤ 2/3) but
/// job 1's own time X_1 ≤ 1 stops it at z = 1/3: job 1 has throughput 1.0 (a full GPU), level
/// (1/3)·1 = 1/3, and is stuck; jobs 2–4 are at 1/3 and can still rise (4 − 1 − 3·1/3 = 2 GPUs
/// are free). Second level: jobs 2–4 rise together until their own time caps them at X = 1
/// (3 GPUs for 3 jobs: both limits meet), level 1. Everyone ends with a full GPU.
#[test]
fn paper_example_weights_3_1_1_1_on_four_gpus() {
    let request = fixture_json("water_filling/weights_3111.json");
    let r = assert_by_hand(
        &request,
        &[("j1", 1.0, 1.0 / 3.0, 0), ("j2", 1.0, 1.0, 1), ("j3", 1.0, 1.0, 1), ("j4", 1.0, 1.0, 1)],
    );
    // The objective is the minimum (sf/w)·nt: job 1's 1/3, the first level.
    assert!(close(r.objective.unwrap(), 1.0 / 3.0, 1e-6), "objective {:?}", r.objective);
    assert_eq!(r.stats.iterations, Some(2));
}

/// The same jobs on fewer or more GPUs (C), derived the same way (X_1 = 3z, X_2..4 = z):
/// - C = 1: the GPU binds first, 6z ≤ 1, z = 1/6: X = 1/2, 1/6, 1/6, 1/6 — the weighted 3:1:1:1
///   split; every GPU is busy, so all four are stuck at once, level 1/6, iteration 0.
/// - C = 2: 6z ≤ 2 and X_1 ≤ 1 both give z = 1/3: X = 1, 1/3, 1/3, 1/3, all stuck at iteration 0.
/// - C = 3: X_1 ≤ 1 binds first (z = 1/3 < 1/2); then jobs 2–4 share the 2 GPUs left from 1/3
///   up to 2/3 each (level 2/3, iteration 1).
/// - C = 8: as with four GPUs: nothing is short of GPUs, every job ends capped by its own time.
#[test]
fn paper_example_on_other_cluster_sizes() {
    // (GPUs, nt, level, iteration) of j1..j4.
    type Case = (u32, [f64; 4], [f64; 4], [usize; 4]);
    let cases: [Case; 4] = [
        (1, [0.5, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0], [1.0 / 6.0; 4], [0; 4]),
        (2, [1.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0], [1.0 / 3.0; 4], [0; 4]),
        (3, [1.0, 2.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0], [1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0], [0, 1, 1, 1]),
        (8, [1.0; 4], [1.0 / 3.0, 1.0, 1.0, 1.0], [0, 1, 1, 1]),
    ];
    for (count, nt, level, iteration) in cases {
        let mut request = fixture_json("water_filling/weights_3111.json");
        request["cluster"]["worker_types"]["gpu"]["count"] = json!(count);
        let want: Vec<(&str, f64, f64, usize)> =
            ["j1", "j2", "j3", "j4"].iter().enumerate().map(|(m, id)| (*id, nt[m], level[m], iteration[m])).collect();
        let r = assert_by_hand(&request, &want);
        assert!(close(r.objective.unwrap(), level[0].min(level[1]), 1e-6), "C = {count}: objective {:?}", r.objective);
    }
}

/// Scale factors: on four GPUs, a (sf 2, weight 1) and b, c (sf 1, weight 1), T = 1. Values are
/// (sf/w)·X: 2X_a, X_b, X_c; a level z means X_a = z/2, X_b = X_c = z. GPUs: 2X_a + X_b + X_c
/// = 3z ≤ 4; rows: X_b, X_c ≤ 1 give z ≤ 1 first. So z = 1: b and c freeze with a GPU each,
/// a has X = 1/2 (one of its two-GPU slots half the time). Then a rises alone: the 2 free GPUs
/// and its row both allow X_a = 1, level 2·1 = 2.
#[test]
fn scale_factors_count_gpus() {
    let request = scale_factors_request();
    assert_allocation_by_hand(&request, &SCALE_FACTORS_BY_HAND);
}

const SCALE_FACTORS_BY_HAND: [ByHand; 3] = [("a", 1.0, 2.0, 1), ("b", 1.0, 1.0, 0), ("c", 1.0, 1.0, 0)];

fn scale_factors_request() -> Value {
    json!({
        "policy": "max_min_fairness_water_filling",
        "cluster": {"worker_types": {"gpu": {"count": 4}}},
        "jobs": [
            {"id": "a", "throughput": {"gpu": 2.0}, "scale_factor": 2},
            {"id": "b", "throughput": {"gpu": 1.0}},
            {"id": "c", "throughput": {"gpu": 3.0}}
        ]
    })
}

/// The same instance's freezes: b and c are both capped by their own time at the first level
/// (z = 1), so both freeze in iteration 0, and a in iteration 1 at level 2 — two levels in all.
#[test]
fn scale_factors_jobs_stuck_together_freeze_together() {
    assert_freezes_by_hand(&scale_factors_request(), &SCALE_FACTORS_BY_HAND);
}

/// Two types, one GPU each; a runs 4/s on the V100 and 1/s on the K80, b 1/s on both, weights 1.
/// X_equal = (1/2, 1/2), so thr_equal is 5/2 for a and 1 for b, and b's value is its total time.
/// First level: b's own time caps it at z = 1, while a reaches 5/2 easily: b is stuck at 1 and
/// freezes (iteration 0, level 1). Second level: a rises while b keeps a full unit of time; a's
/// best is the whole V100 (4/s, nt 8/5), which leaves b exactly the K80. a is then capped by its
/// own time: level 8/5, iteration 1. The allocation is unique: a on the V100, b on the K80.
#[test]
fn two_types_each_job_on_its_best_type() {
    let request = json!({
        "policy": "max_min_fairness_water_filling",
        "cluster": {"worker_types": {"v100": {"count": 1}, "k80": {"count": 1}}},
        "jobs": [
            {"id": "a", "throughput": {"v100": 4.0, "k80": 1.0}},
            {"id": "b", "throughput": {"v100": 1.0, "k80": 1.0}}
        ]
    });
    let (p, r, x) = solve_value(&request);
    let got = reported(&p, &r);
    assert!(close(got.nt[0], 8.0 / 5.0, 1e-6) && close(got.nt[1], 1.0, 1e-6), "{got:?}");
    assert!(close(got.level[0], 8.0 / 5.0, 1e-6) && close(got.level[1], 1.0, 1e-6), "{got:?}");
    assert_eq!(got.iteration, [1, 0]);
    let v100 = p.worker_types.iter().position(|w| w.name == "v100").unwrap();
    assert!(close(x[0][v100], 1.0, 1e-6) && close(x[1][1 - v100], 1.0, 1e-6), "{x:?}");
    assert!(close(r.effective_throughput["a"], 4.0, 1e-6) && close(r.effective_throughput["b"], 1.0, 1e-6));
}

/// `levels` is only for the water-filling policies.
#[test]
fn las_reports_no_levels() {
    let mut request = fixture_json("water_filling/weights_3111.json");
    request["policy"] = json!("max_min_fairness");
    let (_, r, _) = solve_value(&request);
    assert!(r.levels.is_none() && r.stats.iterations.is_none(), "{r:?}");
}

// ---------------------------------------------------------------------------------------------
// Random instances.

fn request(counts: &[u32], jobs: &[RandomJob], policy: &str, aware: bool) -> Value {
    let types = by_type(counts.iter().map(|c| json!({"count": c})));
    let jobs = random_job_values(jobs, |m, row, sf| {
        fit_scale_factor(sf, counts);
        ensure_runnable(row, m);
    });
    random_request(policy, aware, types, jobs)
}

/// Water-filling's levels rise with its iterations: a job frozen in a later iteration froze at a
/// level no lower.
fn assert_levels_rise(got: &Filled) {
    for a in 0..got.level.len() {
        for b in 0..got.level.len() {
            if got.iteration[a] < got.iteration[b] {
                assert!(
                    got.level[a] <= got.level[b] * (1.0 + 1e-6) + 1e-12,
                    "job {a} froze before job {b} at a higher level: {got:?}"
                );
            }
        }
    }
}

/// `a` is lexicographically at least `b` once both are sorted ascending, with a relative tolerance
/// on what counts as equal.
fn lex_at_least(a: &[f64], b: &[f64], rel: f64) -> Result<(), String> {
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if (x - y).abs() > rel * x.abs().max(y.abs()) {
            return if x > y { Ok(()) } else { Err(format!("position {i}: {x} < {y}\n{a:?}\n{b:?}")) };
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// Feasible (checked on every response by `solve_value`), Pareto efficient, its minimum level
    /// (and objective) is LAS's optimum, and its sorted levels dominate LAS's lexicographically.
    /// LAS is taken bare: its default tie-break holds every floor only to 1 − 1e-9, and where a
    /// job's types differ 300-fold in throughput that slack buys another job a rise of 1e-6, which
    /// a comparison with a tolerance of 1e-6 would read as LAS beating water-filling.
    #[test]
    fn water_filling_is_pareto_efficient_and_refines_las((counts, jobs) in random_jobs(30, 50.0)) {
        let (p, r, x) = solve_value(&request(&counts, &jobs, "max_min_fairness_water_filling", true));
        let mut bare = request(&counts, &jobs, "max_min_fairness", true);
        bare["tie_break"] = json!("none");
        let (_, las, y) = solve_value(&bare);
        let z = las.objective.unwrap();
        let levels = weighted_levels(&p, &x);
        let got = reported(&p, &r);
        for (m, (job, level)) in p.jobs.iter().zip(&levels).enumerate() {
            let nt = level * job.weight / job.scale_factor as f64;
            prop_assert!(close(got.nt[m], nt, 1e-6), "job {}: reported nt {} vs {}", m, got.nt[m], nt);
        }
        let min = levels.iter().cloned().fold(f64::INFINITY, f64::min);
        prop_assert!((min - z).abs() <= 1e-6 * z, "minimum level {} vs LAS {}", min, z);
        prop_assert!((r.objective.unwrap() - z).abs() <= 1e-6 * z, "objective {:?} vs LAS {}", r.objective, z);
        if let Err(e) = lex_at_least(&levels, &weighted_levels(&p, &y), 1e-6) {
            prop_assert!(false, "LAS's levels beat water-filling's: {}", e);
        }
        assert_levels_rise(&got);
        assert_pareto_efficient(&p, &x);
    }

    /// `heterogeneity_aware: false`: feasible and Pareto efficient on the all-ones matrix (the
    /// helpers use the policy's matrix), and still LAS's optimum at the bottom.
    #[test]
    fn agnostic_water_filling_is_pareto_efficient((counts, jobs) in random_jobs(30, 50.0)) {
        let (p, r, x) = solve_value(&request(&counts, &jobs, "max_min_fairness_water_filling", false));
        prop_assert!(!p.heterogeneity_aware);
        let (_, las, _) = solve_value(&request(&counts, &jobs, "max_min_fairness", false));
        let z = las.objective.unwrap();
        prop_assert!((r.objective.unwrap() - z).abs() <= 1e-6 * z, "objective {:?} vs LAS {}", r.objective, z);
        assert_levels_rise(&reported(&p, &r));
        assert_pareto_efficient(&p, &x);
    }

    /// Every job's nt and level agree with the plain reference, and levels never fall from one
    /// iteration to the next (each level raises every unfrozen job: a later freeze is no lower).
    #[test]
    fn water_filling_matches_plain_water_filling((counts, jobs) in random_jobs(10, 50.0), aware in any::<bool>()) {
        let (p, r, _) = solve_value(&request(&counts, &jobs, "max_min_fairness_water_filling", aware));
        let got = reported(&p, &r);
        let weights: Vec<f64> = p.jobs.iter().map(|j| j.weight).collect();
        let want = plain_water_filling(&p, |_| weights.clone());
        for m in 0..p.num_jobs() {
            prop_assert!(close(got.nt[m], want.nt[m], 1e-5) && close(got.level[m], want.level[m], 1e-5),
                "job {}: nt {} level {}, the reference gives {} and {}\narbiter {:?}\nreference {:?}",
                m, got.nt[m], got.level[m], want.nt[m], want.level[m], got, want);
        }
        assert_levels_rise(&got);
        prop_assert_eq!(&got.iteration, &want.iteration, "freeze iterations; arbiter {:?} reference {:?}", got, want);
    }
}
