//! Space sharing: pairs of jobs on the same GPUs (the contract's `colocations`), for every policy
//! that formulates them. Hand-checked pair examples, pruning, and "colocation can only help"
//! against the same request solved without sharing, on random instances.

use crate::common::*;
use arbiter::workload::generator::Rng;
use serde_json::{json, Value};

/// Two jobs, one GPU, each 1 step/s alone; together 0.6 and 0.7.
fn two_jobs_one_gpu(policy: &str) -> Value {
    json!({
        "policy": policy,
        "space_sharing": true,
        "cluster": {"worker_types": {"v100": {"count": 1}}},
        "jobs": [
            {"id": "a", "throughput": {"v100": 1.0}, "steps_remaining": 100},
            {"id": "b", "throughput": {"v100": 1.0}, "steps_remaining": 100}
        ],
        "colocations": [{"jobs": ["a", "b"], "throughput": {"v100": [0.6, 0.7]}}]
    })
}

/// LAS: max z with `0.6y + x_a ≥ z`, `0.7y + x_b ≥ z`, `y + x_a + x_b ≤ 1` (one GPU). At the optimum
/// a gets the GPU alone for x_a and b never runs alone: `0.6y + x_a = 0.7y`, `y + x_a = 1` give
/// `y = 10/11`, `x_a = 1/11`, z = 7/11 (against 1/2 without sharing: each alone half the time).
#[test]
fn two_jobs_one_gpu_by_hand() {
    let (_, r, x) = solve_value(&two_jobs_one_gpu("max_min_fairness"));
    let z = r.objective.unwrap();
    assert!((z - 7.0 / 11.0).abs() < 1e-9, "objective {z}");
    assert_eq!(r.colocated_allocation.len(), 1);
    let y = r.colocated_allocation[0].allocation["v100"];
    assert!((y - 10.0 / 11.0).abs() < 1e-9, "Y = {y}");
    assert!((x[0][0] - 1.0 / 11.0).abs() < 1e-9 && x[1][0].abs() < 1e-9, "X = {x:?}");
    for id in ["a", "b"] {
        assert!((r.effective_throughput[id] - 7.0 / 11.0).abs() < 1e-9);
    }
    let pairs = r.stats.pairs.as_ref().expect("pair stats with space sharing");
    assert_eq!((pairs.offered, pairs.kept, pairs.used), (1, 1, 1));

    // The same request without sharing: each job alone half the time.
    let mut unshared = two_jobs_one_gpu("max_min_fairness");
    unshared["space_sharing"] = json!(false);
    let (_, r, _) = solve_value(&unshared);
    assert!((r.objective.unwrap() - 0.5).abs() < 1e-9);
    assert!(r.colocated_allocation.is_empty() && r.stats.pairs.is_none());
}

/// Makespan: both jobs have 100 steps; running paired all the time finishes b at 100/0.7 and a at
/// 100/0.6; the best mix equalizes them at the LAS point: 100 / (7/11) = 1100/7 s.
/// Max sum throughput: pair all the time, 1.3 steps/s. Water-filling: a at 7/11, then b is
/// bottlenecked too (the GPU is full): both at 7/11.
#[test]
fn two_jobs_one_gpu_other_policies() {
    let (_, r, _) = solve_value(&two_jobs_one_gpu("min_makespan"));
    assert!((r.objective.unwrap() - 1100.0 / 7.0).abs() < 1e-6, "{:?}", r.objective);
    let (_, r, _) = solve_value(&two_jobs_one_gpu("max_sum_throughput"));
    assert!((r.objective.unwrap() - 1.3).abs() < 1e-9, "{:?}", r.objective);
    let (_, r, _) = solve_value(&two_jobs_one_gpu("max_min_fairness_water_filling"));
    let levels = r.levels.as_ref().unwrap();
    for id in ["a", "b"] {
        assert!((levels[id].normalized_throughput - 7.0 / 11.0).abs() < 1e-7, "{levels:?}");
    }
    let (_, r, _) = solve_value(&two_jobs_one_gpu("finish_time_fairness"));
    assert!(r.objective.is_some());
    assert_eq!(r.colocated_allocation.len(), 1);
}

/// A pair whose jobs together do no more than one of them alone (0.4 + 0.5 ≤ 1) is pruned: it is
/// dominated by time-sharing, so the answer is the unshared one.
#[test]
fn dominated_pairs_are_pruned() {
    let mut request = two_jobs_one_gpu("max_min_fairness");
    request["colocations"][0]["throughput"]["v100"] = json!([0.4, 0.5]);
    let (_, r, _) = solve_value(&request);
    let pairs = r.stats.pairs.as_ref().unwrap();
    assert_eq!((pairs.offered, pairs.kept, pairs.used), (1, 0, 0));
    assert!((r.objective.unwrap() - 0.5).abs() < 1e-9);
    // A threshold above what the pair reaches prunes a helpful pair too.
    let mut request = two_jobs_one_gpu("max_min_fairness");
    request["colocation_threshold"] = json!(1.5);
    let (_, r, _) = solve_value(&request);
    assert_eq!(r.stats.pairs.as_ref().unwrap().kept, 0);
    assert!((r.objective.unwrap() - 0.5).abs() < 1e-9);
}

/// A random request in Gavel's shape with every same-size pair offered.
fn random_packed(rng: &mut Rng, policy: &str, jobs: usize) -> Value {
    let types = ["v100", "p100", "k80"];
    let count = (jobs / 4).max(1) as f64;
    let mut list = Vec::new();
    let mut rows = Vec::new();
    for m in 0..jobs {
        let base = 1.0 + 9.0 * rng.uniform();
        let row: Vec<f64> = (0..3).map(|w| base * [3.0, 2.0, 1.0][w] * (0.5 + rng.uniform())).collect();
        let sf = if rng.uniform() < 0.8 { 1 } else { 2 };
        let weight = if rng.uniform() < 0.2 { 5.0 } else { 1.0 };
        list.push(json!({
            "id": format!("j{m}"),
            "throughput": {"v100": row[0], "p100": row[1], "k80": row[2]},
            "scale_factor": sf,
            "weight": weight,
            "steps_remaining": 1000.0 + 1e5 * rng.uniform(),
            "time_elapsed": if policy == "finish_time_fairness" { 100.0 * rng.uniform() } else { 0.0 },
            "arrival": m,
        }));
        rows.push((row, sf));
    }
    let mut colocations = Vec::new();
    for a in 0..jobs {
        for b in a + 1..jobs {
            if rows[a].1 != rows[b].1 {
                continue;
            }
            let mut throughput = serde_json::Map::new();
            for (w, name) in types.iter().enumerate() {
                // Each keeps 30–90% of its solo speed: some pairs help, some do not.
                let pa = rows[a].0[w] * (0.3 + 0.6 * rng.uniform());
                let pb = rows[b].0[w] * (0.3 + 0.6 * rng.uniform());
                throughput.insert(name.to_string(), json!([pa, pb]));
            }
            colocations.push(json!({"jobs": [format!("j{a}"), format!("j{b}")], "throughput": throughput}));
        }
    }
    json!({
        "policy": policy,
        "space_sharing": true,
        "cluster": {"worker_types": {
            "v100": {"count": count}, "p100": {"count": count}, "k80": {"count": count}
        }},
        "jobs": list,
        "colocations": colocations,
    })
}

/// Whether `packed` is at least as good as `unpacked` for the policy's objective (1e-7 relative).
fn no_worse(policy: &str, packed: f64, unpacked: f64) -> bool {
    let slack = 1e-7 * unpacked.abs().max(1e-12);
    match policy {
        "min_makespan" | "finish_time_fairness" => packed <= unpacked + slack,
        _ => packed >= unpacked - slack,
    }
}

/// Colocation can only help: every policy's objective with the pairs is at least the objective
/// without them (the unshared allocation is still feasible), and every answer is feasible with its
/// pairs counted (`solve_value` checks).
#[test]
fn sharing_never_hurts() {
    let mut rng = Rng::new(17);
    let policies = [
        "max_min_fairness",
        "max_min_fairness_water_filling",
        "finish_time_fairness",
        "min_makespan",
        "max_sum_throughput",
    ];
    let mut used = 0;
    for round in 0..6 {
        for policy in policies {
            let packed = random_packed(&mut rng, policy, 6 + 3 * round);
            let mut unpacked = packed.clone();
            unpacked["space_sharing"] = json!(false);
            let (_, with, _) = solve_value(&packed);
            let (_, without, _) = solve_value(&unpacked);
            let (a, b) = (with.objective.unwrap(), without.objective.unwrap());
            assert!(no_worse(policy, a, b), "{policy} round {round}: {a} with pairs, {b} without");
            used += with.stats.pairs.as_ref().unwrap().used;
        }
    }
    assert!(used > 0, "no instance gave time to a pair: the test would not notice pairs being ignored");
}

/// Hierarchical fairness formulates pairs too: an entity of two jobs that pair well on one GPU.
#[test]
fn hierarchical_with_pairs() {
    let mut request = two_jobs_one_gpu("hierarchical");
    request["entities"] = json!({"team": {"weight": 1.0, "policy": "fairness"}});
    for job in request["jobs"].as_array_mut().unwrap() {
        job["entity"] = json!("team");
    }
    let (_, r, _) = solve_value(&request);
    let levels = r.levels.as_ref().unwrap();
    for id in ["a", "b"] {
        assert!((levels[id].normalized_throughput - 7.0 / 11.0).abs() < 1e-7, "{levels:?}");
    }
}

/// POP: a partitioned answer is feasible for the whole cluster (each part had 1/k of every type),
/// no better than the exact one, and `stats.partitioning` says how it was split.
#[test]
fn partitioned_answers_fit_the_whole_cluster() {
    let mut rng = Rng::new(29);
    for policy in ["max_min_fairness", "max_min_fairness_water_filling", "min_makespan", "max_sum_throughput"] {
        let exact_request = random_packed(&mut rng, policy, 24);
        let mut request = exact_request.clone();
        request["partitions"] = json!(4);
        let (_, exact, _) = solve_value(&exact_request);
        let (_, split, _) = solve_value(&request);
        let partitioning = split.stats.partitioning.as_ref().expect("partitioning reported");
        assert_eq!(partitioning.partitions, 4);
        assert_eq!(partitioning.chosen, "requested");
        assert_eq!(partitioning.jobs.iter().sum::<usize>(), 24);
        assert!(exact.stats.partitioning.is_none());
        // The exact optimum is at least as good as any feasible allocation, the split one included.
        let (e, s) = (exact.objective.unwrap(), split.objective.unwrap());
        assert!(no_worse(policy, e, s), "{policy}: exact {e}, partitioned {s}");
    }
    // partitions: 1 solves whole; a policy without a part-wise objective refuses to be split.
    let mut request = random_packed(&mut rng, "max_min_fairness", 8);
    request["partitions"] = json!(1);
    assert!(solve_value(&request).1.stats.partitioning.is_none());
    let mut request = random_packed(&mut rng, "fifo", 8);
    request["space_sharing"] = json!(false);
    request["partitions"] = json!(2);
    assert_eq!(solve_err(&request.to_string()).code, arbiter::ErrorCode::Unsupported);
}
