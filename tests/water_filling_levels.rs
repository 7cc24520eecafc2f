//! `max_min_fairness_water_filling`, checked through the `levels` it reports: the paper's §4.3
//! example and weighted variants derived by hand, and properties on random instances —
//! feasibility, Pareto efficiency, agreement with LAS on the first level and lexicographic
//! dominance over LAS, and agreement job by job with a plain water-filling written here from the
//! contract (per-job LPs, one bottleneck LP per job).
//!
//! On a single worker type `X_equal = 1`, so `thr_equal_m = T_m` and `nt_m = X_m`.

mod common;

use arbiter::lp::{Backend, Row, Sense};
use arbiter::{Problem, Response};
use common::*;
use proptest::prelude::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// What the response says about each job.

/// `levels` of a water-filling response, in the problem's job order.
#[derive(Debug, Clone)]
struct Filled {
    nt: Vec<f64>,
    level: Vec<f64>,
    iteration: Vec<usize>,
}

fn reported(p: &Problem, r: &Response) -> Filled {
    let levels = r.levels.as_ref().expect("a water-filling response reports levels");
    assert_eq!(levels.len(), p.num_jobs(), "one level per job");
    let mut out = Filled { nt: Vec::new(), level: Vec::new(), iteration: Vec::new() };
    for job in &p.jobs {
        let l = levels.get(&job.id).unwrap_or_else(|| panic!("no level for {}", job.id));
        out.nt.push(l.normalized_throughput);
        out.level.push(l.level);
        out.iteration.push(l.iteration);
    }
    let iterations = r.stats.iterations.expect("a water-filling response reports its iterations");
    assert_eq!(iterations, out.iteration.iter().max().unwrap() + 1, "stats.iterations vs the last freeze");
    assert!(r.stats.lp_solves >= iterations, "at least one LP per level");
    out
}

/// `(sf_m / w_m) · nt_m` of every job, recomputed from the allocation.
fn weighted_levels(p: &Problem, x: &[Vec<f64>]) -> Vec<f64> {
    let thr = throughputs(p, x);
    let eq = equal_share_throughput(p);
    p.jobs.iter().enumerate().map(|(m, j)| j.scale_factor as f64 / j.weight * thr[m] / eq[m]).collect()
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs().max(1e-2)
}

/// What a hand-derived answer says about a job: its nt (its time share, on one type), the level it
/// froze at and the iteration it froze in.
type ByHand<'a> = (&'a str, f64, f64, usize);

/// Checks every job's nt — recomputed from the allocation and as reported — and its effective
/// throughput `T·X` against a hand-derived answer.
fn assert_allocation_by_hand(request: &Value, want: &[ByHand]) -> Response {
    let (p, r, x) = solve_value(request);
    let got = reported(&p, &r);
    let eq = equal_share_throughput(&p);
    let thr = throughputs(&p, &x);
    assert_eq!(want.len(), p.num_jobs());
    for &(id, nt, _, _) in want {
        let m = p.jobs.iter().position(|j| j.id == id).unwrap();
        let from_x = thr[m] / eq[m];
        assert!(close(from_x, nt, 1e-6), "{id}: nt {from_x} from the allocation, want {nt}; {got:?}");
        assert!(close(got.nt[m], nt, 1e-6), "{id}: reported nt {}, want {nt}", got.nt[m]);
        let effective = r.effective_throughput[id];
        let want_thr = p.measured.get(m, 0) * nt;
        assert!(close(effective, want_thr, 1e-6), "{id}: effective throughput {effective}, want {want_thr}");
    }
    r
}

/// Checks every job's reported level and freeze iteration, and `stats.iterations`, against a
/// hand-derived answer.
fn assert_freezes_by_hand(request: &Value, want: &[ByHand]) {
    let (p, r, _) = solve_value(request);
    let got = reported(&p, &r);
    assert_eq!(want.len(), p.num_jobs());
    for &(id, _, level, iteration) in want {
        let m = p.jobs.iter().position(|j| j.id == id).unwrap();
        assert!(close(got.level[m], level, 1e-6), "{id}: level {}, want {level}; {got:?}", got.level[m]);
        assert_eq!(got.iteration[m], iteration, "{id}: froze in iteration {}; {got:?}", got.iteration[m]);
    }
    let levels = want.iter().map(|w| w.3).max().unwrap() + 1;
    assert_eq!(r.stats.iterations, Some(levels), "levels raised; {got:?}");
}

fn assert_by_hand(request: &Value, want: &[ByHand]) -> Response {
    assert_freezes_by_hand(request, want);
    assert_allocation_by_hand(request, want)
}

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
// Plain water-filling, from the contract, for comparison.

/// A job is stuck when its best throughput, with every other job at its floor, beats that floor by
/// at most `STUCK` of it plus `NOISE` of a unit of time on its fastest type (LP round-off).
const STUCK: f64 = 1e-7;
const NOISE: f64 = 1e-8;

/// `(column, T[m][w])` of job m's throughput in a `plain_base_lp`.
fn thr_coefs(p: &Problem, cols: &[Vec<Option<usize>>], m: usize) -> Vec<(usize, f64)> {
    cols[m].iter().enumerate().filter_map(|(w, c)| c.map(|c| (c, policy_throughput(p, m, w)))).collect()
}

fn fastest(p: &Problem, m: usize) -> f64 {
    (0..p.num_types()).map(|w| policy_throughput(p, m, w)).fold(0.0, f64::max)
}

/// `max thr_m` s.t. `thr_k ≥ floor_k` for every other job k, on the base constraints.
fn max_throughput(p: &Problem, floor: &[f64], m: usize) -> f64 {
    try_max_throughput(p, floor, m).expect("bottleneck LP solves")
}

fn try_max_throughput(p: &Problem, floor: &[f64], m: usize) -> Option<f64> {
    let (mut lp, cols) = plain_base_lp(p, Sense::Maximize);
    for (c, t) in thr_coefs(p, &cols, m) {
        lp.cost[c] = t;
    }
    for (k, &f) in floor.iter().enumerate() {
        if k != m && f > 0.0 {
            lp.add_row(Row::at_least(f, thr_coefs(p, &cols, k)));
        }
    }
    Backend::default().solve(lp).ok().map(|s| s.objective)
}

/// Water-filling with per-job LPs, from the contract. Each level: `max c` s.t.
/// `thr_m ≥ floor_m + c·w_m·thr_equal_m/sf_m` for the active jobs (unfrozen, weight > 0) and
/// `thr_m ≥ floor_m` for the rest; then every active job whose best throughput with every other
/// job at its floor does not beat its own floor is stuck, and freezes at `(sf/w)·nt` with this
/// level's weight. `weights_of(frozen)` gives each level's weights.
fn plain_water_filling(p: &Problem, weights_of: impl Fn(&[bool]) -> Vec<f64>) -> Filled {
    let n = p.num_jobs();
    let eq = equal_share_throughput(p);
    let sf: Vec<f64> = p.jobs.iter().map(|j| j.scale_factor as f64).collect();
    let mut floor = vec![0.0; n];
    let mut frozen = vec![false; n];
    let mut out = Filled { nt: vec![0.0; n], level: vec![f64::NAN; n], iteration: vec![usize::MAX; n] };
    let mut iteration = 0;
    while frozen.contains(&false) {
        let w = weights_of(&frozen);
        let active: Vec<bool> = (0..n).map(|m| !frozen[m] && w[m] > 0.0).collect();
        assert!(active.contains(&true), "unfrozen jobs but none with weight: {w:?}");
        let rate: Vec<f64> = (0..n).map(|m| if active[m] { w[m] * eq[m] / sf[m] } else { 0.0 }).collect();
        let scale = rate.iter().cloned().fold(0.0, f64::max);
        let (mut lp, cols) = plain_base_lp(p, Sense::Maximize);
        let c = lp.add_col(1.0, 0.0, f64::INFINITY);
        for m in 0..n {
            let mut coefs = thr_coefs(p, &cols, m);
            if active[m] {
                coefs.push((c, -rate[m] / scale));
            }
            // The floors as they are: the last level's solution meets them (to solver tolerance).
            lp.add_row(Row::at_least(floor[m], coefs));
        }
        let solution = Backend::default().solve(lp).expect("level LP solves");
        let step = solution.values[c].max(0.0) / scale;
        for m in (0..n).filter(|&m| active[m]) {
            floor[m] += step * rate[m];
        }
        // How far each active job can rise, in units of what counts as round-off.
        let rise: Vec<f64> = (0..n)
            .map(|m| {
                if !active[m] {
                    return f64::INFINITY;
                }
                (max_throughput(p, &floor, m) - floor[m]) / (STUCK * floor[m] + NOISE * fastest(p, m))
            })
            .collect();
        // At the optimal level some active job is stuck; should round-off hide it, the least able
        // to rise is the one.
        let least = rise.iter().cloned().fold(f64::INFINITY, f64::min);
        for m in (0..n).filter(|&m| active[m] && (rise[m] <= 1.0 || rise[m] == least)) {
            frozen[m] = true;
            out.level[m] = sf[m] / w[m] * floor[m] / eq[m];
            out.iteration[m] = iteration;
        }
        iteration += 1;
    }
    out.nt = (0..n).map(|m| floor[m] / eq[m]).collect();
    out
}

/// Pareto efficiency: no job's throughput can rise while every other job keeps its own. The others
/// are held at exactly their throughputs; should the allocation be feasible only to solver
/// tolerance, so that the LP is refused, they keep (1 − ε) of them, ε = 1e-9 and then 1e-7. A rise
/// below `NOISE` of a unit of time on the job's fastest type counts as round-off.
fn assert_pareto_efficient(p: &Problem, x: &[Vec<f64>]) {
    let thr = throughputs(p, x);
    for m in 0..p.num_jobs() {
        let (eps, best) = [0.0, 1e-9, 1e-7]
            .into_iter()
            .find_map(|eps| {
                let kept: Vec<f64> = thr.iter().map(|t| t * (1.0 - eps)).collect();
                try_max_throughput(p, &kept, m).map(|best| (eps, best))
            })
            .expect("some slack makes the Pareto LP feasible");
        assert!(
            best <= thr[m] * (1.0 + 1e-5) + NOISE * fastest(p, m),
            "job {} could get {best} > its {} with every other job kept (to within {eps})",
            p.jobs[m].id,
            thr[m]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Random instances.

/// Per job: throughput row, scale factor, weight.
type RandomJob = (Vec<f64>, u32, f64);

fn instances(max_jobs: usize) -> impl Strategy<Value = (Vec<u32>, Vec<RandomJob>)> {
    (1usize..=3).prop_flat_map(move |types| {
        (
            prop::collection::vec(1u32..=8, types),
            prop::collection::vec(
                (
                    prop::collection::vec(prop_oneof![1 => Just(0.0), 3 => 0.1f64..50.0], types),
                    prop::sample::select(vec![1u32, 2, 4]),
                    prop::sample::select(vec![1.0, 5.0]),
                ),
                1..=max_jobs,
            ),
        )
    })
}

const TYPE_NAMES: [&str; 3] = ["v100", "p100", "k80"];

fn request(counts: &[u32], jobs: &[RandomJob], policy: &str, aware: bool) -> Value {
    let largest = *counts.iter().max().unwrap();
    let types: serde_json::Map<String, Value> =
        counts.iter().enumerate().map(|(w, c)| (TYPE_NAMES[w].to_string(), json!({"count": c}))).collect();
    let jobs: Vec<Value> = jobs
        .iter()
        .enumerate()
        .map(|(m, (row, sf, weight))| {
            let mut sf = *sf;
            while sf > largest {
                sf /= 2;
            }
            let mut row = row.clone();
            if row.iter().all(|&t| t == 0.0) {
                let w = m % row.len();
                row[w] = 1.0;
            }
            let thr: serde_json::Map<String, Value> =
                row.iter().enumerate().map(|(w, t)| (TYPE_NAMES[w].to_string(), json!(t))).collect();
            json!({"id": format!("j{m}"), "throughput": thr, "scale_factor": sf, "weight": weight})
        })
        .collect();
    json!({
        "policy": policy,
        "heterogeneity_aware": aware,
        "cluster": {"worker_types": types},
        "jobs": jobs,
    })
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
    #[test]
    fn water_filling_is_pareto_efficient_and_refines_las((counts, jobs) in instances(30)) {
        let (p, r, x) = solve_value(&request(&counts, &jobs, "max_min_fairness_water_filling", true));
        let (_, las, y) = solve_value(&request(&counts, &jobs, "max_min_fairness", true));
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
    fn agnostic_water_filling_is_pareto_efficient((counts, jobs) in instances(30)) {
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
    fn water_filling_matches_plain_water_filling((counts, jobs) in instances(10), aware in any::<bool>()) {
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
