//! The baseline policies Gavel compares against, `gandiva` and `allox`: hand-checked instances
//! (each expected number derived in the comment above its test), feasibility of every returned
//! allocation including the colocated pairs' time, determinism, and refusals.

use crate::common::*;
use arbiter::lp::Backend;
use arbiter::{policies, ErrorCode, Outcome, Problem};
use serde_json::{json, Value};

fn baseline_fixture(name: &str) -> Value {
    fixture_json(&format!("baselines/{name}.json"))
}

/// Validates and solves through `policies::solve`, then checks the contract's constraints on
/// singles and pairs: `X, Y ≥ 0`; per job `Σ_w X[m][w] + Σ_{k∋m} Σ_w Y[k][w] ≤ 1`; per type
/// `Σ_m sf_m·X[m][w] + Σ_k sf_k·Y[k][w] ≤ count_w`.
fn solve_checked(request: &Value) -> (Problem, Outcome) {
    let p = problem(&request.to_string());
    let outcome = policies::solve(&p, Backend::default()).unwrap_or_else(|e| panic!("solve failed: {}", e.to_json()));
    let x = matrix_rows(&outcome.allocation);
    assert_feasible(&p, &x);
    let y = &outcome.colocated;
    assert!(y.rows() == 0 || y.rows() == p.colocations.len(), "one Y row per offered colocation");
    let mut busy: Vec<f64> = x.iter().map(|row| row.iter().sum()).collect();
    let mut used: Vec<f64> = (0..p.num_types())
        .map(|w| x.iter().zip(&p.jobs).map(|(row, j)| j.scale_factor as f64 * row[w]).sum())
        .collect();
    for k in 0..y.rows() {
        let c = &p.colocations[k];
        for (w, &v) in y.row(k).iter().enumerate() {
            assert!(v.is_finite() && v >= 0.0, "Y[{k}][{w}] = {v}");
            used[w] += p.jobs[c.jobs[0]].scale_factor as f64 * v;
        }
        let time: f64 = y.row(k).iter().sum();
        for m in c.jobs {
            busy[m] += time;
        }
    }
    for (m, b) in busy.iter().enumerate() {
        assert!(*b <= 1.0 + FEAS_TOL, "job {} busy {b} > 1 with its pairs", p.jobs[m].id);
    }
    for (w, u) in used.iter().enumerate() {
        assert!(*u <= p.worker_types[w].count + FEAS_TOL, "type {} uses {u} GPUs", p.worker_types[w].name);
    }
    (p, outcome)
}

/// A small seeded generator for random instances.
struct Lcg(u64);

impl Lcg {
    /// Uniform in [0, 1).
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as f64 / (1u64 << 31) as f64
    }
}

fn job(p: &Problem, id: &str) -> usize {
    p.jobs.iter().position(|j| j.id == id).unwrap()
}

fn ty(p: &Problem, name: &str) -> usize {
    p.worker_types.iter().position(|w| w.name == name).unwrap()
}

/// Job `id`'s row of `X` in the order of `types`.
fn x_of(p: &Problem, out: &Outcome, id: &str, types: &[&str]) -> Vec<f64> {
    types.iter().map(|t| out.allocation.get(job(p, id), ty(p, t))).collect()
}

fn assert_row(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-9, "{what}: got {got:?}, want {want:?}");
    }
}

/// The pairs `Y` gives time to, as sorted job-id pairs.
fn chosen_pairs(p: &Problem, outcome: &Outcome) -> Vec<[String; 2]> {
    let mut pairs: Vec<[String; 2]> = (0..outcome.colocated.rows())
        .filter(|&k| outcome.colocated.row(k).iter().any(|&v| v > 0.0))
        .map(|k| {
            let [a, b] = p.colocations[k].jobs;
            let mut ids = [p.jobs[a].id.clone(), p.jobs[b].id.clone()];
            ids.sort();
            ids
        })
        .collect();
    pairs.sort();
    pairs
}

// ---------------------------------------------------------------------------------------------
// gandiva

/// 8 single-GPU jobs on 4 GPUs: oversubscribed, so Gandiva packs. Offered pairs, normalized
/// throughput `Σ_w Σ_i T_k[i][w]/T[i][w]`: (a,b) 0.75+0.75+0.8+0.7 = 3.0 and (c,d)
/// 2/3+2/3+0.6+0.6 ≈ 2.53 help; (e,f) 0.4 < 1 does not; (g,h) cannot run on the K80 at all. Six
/// combinations (two pairs, e, f, g, h) each get count_w/6 = 1/3 of every type (row sum 2/3 ≤ 1).
#[test]
fn gandiva_packs_the_pairs_that_help_when_oversubscribed() {
    let (p, out) = solve_checked(&baseline_fixture("gandiva_packing"));
    assert_eq!(chosen_pairs(&p, &out), vec![["a".to_string(), "b".to_string()], ["c".into(), "d".into()]]);
    let third = [1.0 / 3.0, 1.0 / 3.0];
    assert_row(out.colocated.row(0), &third, "Y[a,b]");
    assert_row(out.colocated.row(1), &third, "Y[c,d]");
    assert_row(out.colocated.row(2), &[0.0, 0.0], "Y[e,f]");
    assert_row(out.colocated.row(3), &[0.0, 0.0], "Y[g,h]");
    for id in ["a", "b", "c", "d"] {
        assert_row(out.allocation.row(job(&p, id)), &[0.0, 0.0], id);
    }
    for id in ["e", "f", "g", "h"] {
        assert_row(out.allocation.row(job(&p, id)), &third, id);
    }
    assert_eq!(out.objective, None);
    assert_eq!(out.lp_solves, 0);
}

/// 1 + 1 + 2 = 4 GPUs requested of 4: no packing; the allocation is X_isolated. a, b:
/// 2/3 of each type, row sum 4/3 scaled to (1/2, 1/2); c (sf 2): 2/3/2 = 1/3 of each.
#[test]
fn gandiva_does_not_pack_when_the_jobs_fit() {
    let (p, out) = solve_checked(&baseline_fixture("gandiva_fits"));
    assert!(chosen_pairs(&p, &out).is_empty());
    assert_row(out.allocation.row(job(&p, "a")), &[0.5, 0.5], "a");
    assert_row(out.allocation.row(job(&p, "b")), &[0.5, 0.5], "b");
    assert_row(out.allocation.row(job(&p, "c")), &[1.0 / 3.0, 1.0 / 3.0], "c");
    assert_eq!(matrix_rows(&out.allocation), isolated_by_hand(&p));
}

/// Gandiva's time shares ignore throughputs: the type-blind request gets the same allocation.
#[test]
fn gandiva_is_heterogeneity_agnostic() {
    let mut request = baseline_fixture("gandiva_packing");
    let (_, aware) = solve_checked(&request);
    request["heterogeneity_aware"] = json!(false);
    let (_, blind) = solve_checked(&request);
    assert_eq!(aware.allocation, blind.allocation);
    assert_eq!(aware.colocated, blind.colocated);
}

/// Colocations are used whatever `space_sharing` says.
#[test]
fn gandiva_uses_offered_colocations_without_space_sharing() {
    let mut request = baseline_fixture("gandiva_packing");
    let (_, on) = solve_checked(&request);
    request["space_sharing"] = json!(false);
    let (_, off) = solve_checked(&request);
    assert_eq!(on.colocated, off.colocated);
}

/// Three jobs (sf 2) on 4 GPUs, every pair offered and helpful: 6 GPUs requested, so one pair
/// and one single. Two combinations: count_w/2/2 = 1/2 of each of v100 (2) and k80 (2), row sum
/// 1. Which pair is random, but fixed by the job ids: reordering the request keeps it.
#[test]
fn gandiva_random_pairing_is_a_function_of_the_job_ids() {
    let jobs = ["x", "y", "z"]
        .map(|id| json!({"id": id, "throughput": {"v100": 2.0, "k80": 1.0}, "scale_factor": 2}))
        .to_vec();
    let pair = |a: &str, b: &str| json!({"jobs": [a, b], "throughput": {"v100": [1.5, 1.5], "k80": [0.8, 0.8]}});
    let pairs = vec![pair("x", "y"), pair("y", "z"), pair("x", "z")];
    let request = |jobs: Vec<Value>, pairs: Vec<Value>| {
        json!({"policy": "gandiva", "space_sharing": true,
               "cluster": {"worker_types": {"v100": {"count": 2}, "k80": {"count": 2}}},
               "jobs": jobs, "colocations": pairs})
    };
    let (p, out) = solve_checked(&request(jobs.clone(), pairs.clone()));
    let chosen = chosen_pairs(&p, &out);
    assert_eq!(chosen.len(), 1);
    let k = (0..3).find(|&k| out.colocated.row(k)[0] > 0.0).unwrap();
    assert_row(out.colocated.row(k), &[0.5, 0.5], "the pair");
    let single = p.jobs.iter().position(|j| !chosen[0].contains(&j.id)).unwrap();
    assert_row(out.allocation.row(single), &[0.5, 0.5], "the single job");

    let reversed_jobs: Vec<Value> = jobs.iter().rev().cloned().collect();
    let reversed_pairs: Vec<Value> = pairs.iter().rev().cloned().collect();
    let (p2, out2) = solve_checked(&request(reversed_jobs, reversed_pairs));
    assert_eq!(chosen_pairs(&p2, &out2), chosen);
}

/// Random oversubscribed instances with random offered pairs: every allocation is feasible, each
/// job is in at most one chosen pair, chosen pairs help, and the same request gives the same answer.
#[test]
fn gandiva_allocations_are_feasible_on_random_instances() {
    let mut rng = Lcg(0x5eed);
    for _ in 0..50 {
        let jobs_n = 2 + (rng.next() * 14.0) as usize;
        let jobs: Vec<Value> = (0..jobs_n)
            .map(|m| {
                let sf = [1, 1, 1, 2, 4][(rng.next() * 5.0) as usize];
                json!({"id": format!("j{m}"), "scale_factor": sf,
                       "throughput": {"v100": 0.5 + 3.0 * rng.next(), "k80": 0.1 + rng.next()}})
            })
            .collect();
        let mut pairs = Vec::new();
        for a in 0..jobs_n {
            for b in a + 1..jobs_n {
                if jobs[a]["scale_factor"] == jobs[b]["scale_factor"] && rng.next() < 0.5 {
                    let mut v = |solo: &Value| solo.as_f64().unwrap() * rng.next();
                    pairs.push(json!({"jobs": [format!("j{a}"), format!("j{b}")], "throughput": {
                        "v100": [v(&jobs[a]["throughput"]["v100"]), v(&jobs[b]["throughput"]["v100"])],
                        "k80": [v(&jobs[a]["throughput"]["k80"]), v(&jobs[b]["throughput"]["k80"])]}}));
                }
            }
        }
        let request = json!({"policy": "gandiva",
            "cluster": {"worker_types": {"v100": {"count": 1 + (rng.next() * 4.0) as u32}, "k80": {"count": (rng.next() * 4.0) as u32 + 4}}},
            "jobs": jobs, "colocations": pairs});
        let (p, out) = solve_checked(&request);
        let mut in_pairs = vec![0; p.num_jobs()];
        for k in 0..out.colocated.rows() {
            if out.colocated.row(k).iter().any(|&v| v > 0.0) {
                let c = &p.colocations[k];
                let normalized: f64 = (0..p.num_types())
                    .map(|w| {
                        c.throughput[w][0] / p.measured.get(c.jobs[0], w)
                            + c.throughput[w][1] / p.measured.get(c.jobs[1], w)
                    })
                    .sum();
                assert!(normalized >= 1.0, "a chosen pair must help: {normalized}");
                for m in c.jobs {
                    in_pairs[m] += 1;
                    assert_row(out.allocation.row(m), &vec![0.0; p.num_types()], "a paired job runs only in its pair");
                }
            }
        }
        assert!(in_pairs.iter().all(|&n| n <= 1), "a job in two pairs: {in_pairs:?}");
        let (_, again) = solve_checked(&request);
        assert_eq!(out.allocation, again.allocation);
        assert_eq!(out.colocated, again.colocated);
    }
}

// ---------------------------------------------------------------------------------------------
// allox

/// One V100 and one K80; processing times r/T: a 100 s on the V100, 400 s on the K80; b 150 s
/// and 200 s. Total completion time of each assignment: a→V100, b→K80: 100 + 200 = 300; both on
/// the V100 (a first): 100 + 250 = 350; a→K80, b→V100: 550; both on the K80: 800. So a runs on
/// the V100 and b on the K80, objective 300 s.
#[test]
fn allox_matches_jobs_to_types_on_completion_time() {
    let (p, out) = solve_checked(&baseline_fixture("allox_two_types"));
    assert_row(&x_of(&p, &out, "a", &["v100", "k80"]), &[1.0, 0.0], "a");
    assert_row(&x_of(&p, &out, "b", &["v100", "k80"]), &[0.0, 1.0], "b");
    assert!((out.objective.unwrap() - 300.0).abs() < 1e-9);
    let r = arbiter::solve_json(&baseline_fixture("allox_two_types").to_string(), Backend::default()).unwrap();
    assert_eq!(r.policy, "allox");
    assert!((r.effective_throughput["a"] - 4.0).abs() < 1e-12);
    assert!((r.effective_throughput["b"] - 1.5).abs() < 1e-12);
}

/// Both jobs take 10 s on the V100 and 100 s on the K80: queueing both on the V100 costs
/// 10 + 20 = 30 < 10 + 100, so the K80 stays idle and one job (the first, on a tie) runs now.
#[test]
fn allox_queues_behind_a_fast_gpu_rather_than_use_a_slow_one() {
    let (p, out) = solve_checked(&baseline_fixture("allox_queue"));
    assert_row(&x_of(&p, &out, "a", &["v100", "k80"]), &[1.0, 0.0], "a");
    assert_row(&x_of(&p, &out, "b", &["v100", "k80"]), &[0.0, 0.0], "b");
    assert!((out.objective.unwrap() - 30.0).abs() < 1e-9);
}

/// Type-blind, every processing time is r = 100 s on either GPU: one job on each, 100 + 100.
#[test]
fn allox_heterogeneity_agnostic_spreads_over_every_gpu() {
    let mut request = baseline_fixture("allox_queue");
    request["heterogeneity_aware"] = json!(false);
    let (_, out) = solve_checked(&request);
    let x = matrix_rows(&out.allocation);
    assert_eq!(x.iter().map(|row| row.iter().sum::<f64>()).sum::<f64>(), 2.0);
    assert_eq!((0..2).map(|w| x[0][w] + x[1][w]).collect::<Vec<_>>(), vec![1.0, 1.0]);
    assert!((out.objective.unwrap() - 200.0).abs() < 1e-9);
}

/// One type with 2 GPUs, five jobs with processing times 50, 10, 40, 20, 30: shortest first,
/// round robin, so the two shortest (10 and 20) run now. Completion times 10, 20, 10+30,
/// 20+40, 40+50: total 10 + 20 + 40 + 60 + 90 = 220.
#[test]
fn allox_runs_the_shortest_jobs_first_on_identical_gpus() {
    let jobs: Vec<Value> = [50.0, 10.0, 40.0, 20.0, 30.0]
        .iter()
        .enumerate()
        .map(|(m, r)| json!({"id": format!("j{m}"), "throughput": {"a100": 1.0}, "steps_remaining": r}))
        .collect();
    let request = json!({"policy": "allox", "cluster": {"worker_types": {"a100": {"count": 2}}}, "jobs": jobs});
    let (p, out) = solve_checked(&request);
    let running: Vec<&str> =
        (0..p.num_jobs()).filter(|&m| out.allocation.get(m, 0) == 1.0).map(|m| p.jobs[m].id.as_str()).collect();
    assert_eq!(running, vec!["j1", "j3"]);
    assert!((out.objective.unwrap() - 220.0).abs() < 1e-9);
}

/// The minimum total completion time by brute force: every map of jobs to types, each type's
/// jobs shortest first dealt round robin over its GPUs.
fn allox_brute_force(p: &Problem) -> f64 {
    let (jobs, types) = (p.num_jobs(), p.num_types());
    let time = |m: usize, w: usize| {
        let t = p.measured.get(m, w);
        if t > 0.0 && p.worker_types[w].count >= 1.0 {
            p.jobs[m].steps_remaining.unwrap() / t
        } else {
            f64::INFINITY
        }
    };
    let mut best = f64::INFINITY;
    for code in 0..types.pow(jobs as u32) {
        let choice: Vec<usize> = (0..jobs).map(|m| code / types.pow(m as u32) % types).collect();
        let mut total = 0.0;
        for w in 0..types {
            let mut times: Vec<f64> = (0..jobs).filter(|&m| choice[m] == w).map(|m| time(m, w)).collect();
            times.sort_by(f64::total_cmp);
            let gpus = p.worker_types[w].count as usize;
            let mut finish = vec![0.0; gpus.max(1)];
            for (i, t) in times.iter().enumerate() {
                finish[i % gpus.max(1)] += t;
                total += finish[i % gpus.max(1)];
            }
        }
        best = best.min(total);
    }
    best
}

/// Random small instances: the matching's objective equals the brute-force minimum, and the jobs
/// running now fill at most count_w GPUs of each type.
#[test]
fn allox_is_optimal_on_random_small_instances() {
    let mut rng = Lcg(0xa110c);
    for _ in 0..60 {
        let jobs: Vec<Value> = (0..1 + (rng.next() * 6.0) as usize)
            .map(|m| {
                let mut thr = |zero_chance: f64| {
                    let (u, v) = (rng.next(), rng.next());
                    if u < zero_chance {
                        0.0
                    } else {
                        (1.0 + 9.0 * v).round()
                    }
                };
                let (p100, k80) = (thr(0.3), thr(0.3));
                json!({"id": format!("j{m}"), "steps_remaining": (1.0 + 99.0 * rng.next()).round(),
                       "throughput": {"v100": (1.0 + 9.0 * rng.next()).round(), "p100": p100, "k80": k80}})
            })
            .collect();
        let request = json!({"policy": "allox", "cluster": {"worker_types": {
            "v100": {"count": 1 + (rng.next() * 2.0) as u32}, "p100": {"count": (rng.next() * 3.0) as u32},
            "k80": {"count": 1 + (rng.next() * 2.0) as u32}}}, "jobs": jobs});
        let (p, out) = solve_checked(&request);
        let want = allox_brute_force(&p);
        let got = out.objective.unwrap();
        assert!((got - want).abs() <= 1e-9 * want.max(1.0), "objective {got}, brute force {want}: {request}");
        for m in 0..p.num_jobs() {
            for w in 0..p.num_types() {
                let v = out.allocation.get(m, w);
                assert!(v == 0.0 || (v == 1.0 && p.measured.get(m, w) > 0.0), "X[{m}][{w}] = {v}");
            }
        }
    }
}

#[test]
fn allox_refusals_name_the_field() {
    let mut request = baseline_fixture("allox_two_types");
    request["jobs"][1].as_object_mut().unwrap().remove("steps_remaining");
    assert_error(&solve_err(&request.to_string()), ErrorCode::MissingField, Some("jobs[1].steps_remaining"));

    let mut request = baseline_fixture("allox_two_types");
    request["jobs"][0]["scale_factor"] = json!(2);
    request["cluster"]["worker_types"]["v100"]["count"] = json!(2);
    assert_error(&solve_err(&request.to_string()), ErrorCode::Unsupported, Some("jobs[0].scale_factor"));

    let mut request = baseline_fixture("allox_two_types");
    request["space_sharing"] = json!(true);
    assert_error(&solve_err(&request.to_string()), ErrorCode::Unsupported, Some("space_sharing"));
}

#[test]
fn baselines_with_no_jobs_return_an_empty_allocation() {
    for policy in ["gandiva", "allox"] {
        let request = json!({"policy": policy, "cluster": {"worker_types": {"v100": {"count": 1}}}, "jobs": []});
        let (p, out) = solve_checked(&request);
        assert_eq!(p.num_jobs(), 0);
        assert_eq!(out.allocation.rows(), 0);
    }
}

/// Extreme but valid numbers (throughputs from 1e-100 to 1e100, the contract's bounds, zero steps, types with no GPUs,
/// huge counts): every request is answered with a feasible allocation or refused with an error,
/// never a panic.
#[test]
fn baselines_never_panic_on_extreme_numbers() {
    let mut rng = Lcg(0xe87e);
    let values = [0.0, 1e-100, 1e-9, 1.0, 3.0, 1e9, 1e100];
    for case in 0..400 {
        let mut pick = |choices: &[f64]| choices[(rng.next() * choices.len() as f64) as usize];
        let jobs: Vec<Value> = (0..1 + case % 7)
            .map(|m| {
                json!({"id": format!("j{m}"), "steps_remaining": pick(&[0.0, 1.0, 1e6, 1e100]),
                       "throughput": {"v100": pick(&values[1..]), "k80": pick(&values)}})
            })
            .collect();
        let colocations: Vec<Value> = (1..jobs.len())
            .map(|m| {
                json!({"jobs": ["j0", format!("j{m}")], "throughput": {
                    "v100": [pick(&values), pick(&values)], "k80": [pick(&values), pick(&values)]}})
            })
            .collect();
        let cluster = json!({"worker_types": {"v100": {"count": pick(&[1.0, 2.0, 4e9])}, "k80": {"count": pick(&[0.0, 1.0, 3.0])}}});
        for policy in ["gandiva", "allox"] {
            let request = json!({"policy": policy, "cluster": cluster, "jobs": jobs, "colocations": colocations});
            let text = request.to_string();
            if let Ok(p) = Problem::from_json(&text) {
                match policies::solve(&p, Backend::default()) {
                    Ok(_) => {
                        solve_checked(&request);
                    }
                    Err(e) => assert!(!e.message.is_empty()),
                }
            }
        }
    }
}

/// A remaining time past f64::MAX (steps over throughput) cannot be asked: both numbers are
/// refused past the contract's bounds (`problem::SMALLEST`, `problem::LARGEST`), and within them
/// the largest remaining time, 10²⁰⁰ seconds, is finite.
#[test]
fn allox_never_meets_a_remaining_time_that_overflows() {
    let request = |thr: f64, steps: f64| {
        json!({"policy": "allox", "cluster": {"worker_types": {"v100": {"count": 1}}},
            "jobs": [{"id": "a", "throughput": {"v100": thr}, "steps_remaining": steps}]})
        .to_string()
    };
    assert_error(&solve_err(&request(1e-300, 1.0)), ErrorCode::InvalidNumber, Some("jobs[0].throughput.v100"));
    assert_error(&solve_err(&request(1.0, 1e300)), ErrorCode::InvalidNumber, Some("jobs[0].steps_remaining"));
    let (_, out) = solve_checked(&json!({"policy": "allox", "cluster": {"worker_types": {"v100": {"count": 1}}},
        "jobs": [{"id": "a", "throughput": {"v100": 1e-100}, "steps_remaining": 1e100}]}));
    assert_eq!(out.allocation.row(0), &[1.0]);
}
