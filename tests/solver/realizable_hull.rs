//! Policies over the convex hull of round configurations (`arbiter::realizability::hull`): the
//! issue's two examples worked by hand, and tiny random instances against an LP over every
//! configuration, the decomposition it returns checked round by round.

use arbiter::lp::{Backend, LinearProgram, Row, Sense};
use arbiter::problem::Matrix;
use arbiter::realizability::hull::{self, Goal, Hull};
use arbiter::realizability::Budget;
use arbiter::space_sharing::Pair;
use proptest::prelude::*;

fn matrix(rows: &[&[f64]]) -> Matrix {
    Matrix::from_rows(rows)
}

fn solve(throughput: &Matrix, scale_factors: &[u32], capacity: &[u32], goal: Goal) -> Hull {
    let hull = solve_with_pairs(throughput, scale_factors, capacity, &[], goal);
    assert_decomposition(throughput, scale_factors, capacity, &hull);
    hull
}

/// The hull with colocated `pairs`, certified.
fn solve_with_pairs(throughput: &Matrix, scale_factors: &[u32], capacity: &[u32], pairs: &[Pair], goal: Goal) -> Hull {
    let budget = Budget { max_master_entries: usize::MAX, seconds: 60.0, iterations: 10_000, ..Budget::default() };
    let runnable = hull::Runnable { throughput, scale_factors, capacity, pairs };
    let hull = hull::solve(runnable, goal, &hull::Start::default(), &budget, Backend::default()).expect("solved");
    assert_eq!(hull.stopped, None, "not certified");
    assert_eq!(hull.tie_break_stopped, None, "the tie-break is not certified");
    hull
}

/// Every configuration is one round (each job once, gangs within each type's whole GPUs, only
/// where it can run), the weights sum to at most 1 and reproduce the allocation within 1e-9.
fn assert_decomposition(throughput: &Matrix, scale_factors: &[u32], capacity: &[u32], hull: &Hull) {
    let total: f64 = hull.configurations.iter().map(|c| c.0).sum();
    assert!(total <= 1.0 + 1e-9, "weights sum to {total}");
    let mut supplied = Matrix::zeros(throughput.rows(), throughput.cols());
    for (weight, configuration) in &hull.configurations {
        let mut used = vec![0u64; capacity.len()];
        let mut jobs: Vec<u32> = configuration.runs.iter().map(|r| r.0).collect();
        jobs.dedup();
        assert_eq!(jobs.len(), configuration.runs.len(), "a job twice in {configuration:?}");
        for &(m, w) in &configuration.runs {
            let (m, w) = (m as usize, w as usize);
            assert!(throughput.get(m, w) > 0.0, "({m}, {w}) runs where it cannot");
            used[w] += scale_factors[m] as u64;
            supplied.set(m, w, supplied.get(m, w) + weight);
        }
        assert!(used.iter().zip(capacity).all(|(&u, &c)| u <= c as u64), "over capacity: {configuration:?}");
    }
    for m in 0..throughput.rows() {
        for w in 0..throughput.cols() {
            assert!((supplied.get(m, w) - hull.allocation.get(m, w)).abs() <= 1e-9, "({m}, {w})");
        }
    }
}

fn throughputs(throughput: &Matrix, allocation: &Matrix) -> Vec<f64> {
    (0..throughput.rows())
        .map(|m| (0..throughput.cols()).map(|w| throughput.get(m, w) * allocation.get(m, w)).sum())
        .collect()
}

#[test]
fn four_gpus_two_single_jobs_and_a_four_gpu_job() {
    // 4 GPUs of one type; jobs 0 and 1 (1 GPU) need throughput z, job 2 (4 GPUs) z/4 (LAS's
    // demands `w·thr_equal/sf` when every job's equal share is 1). Fractionally z = 1 (x = 1, 1,
    // 1/4 books 3 GPUs). A round runs {j0, j1} or {j2}: z = min(λ_A, 4·λ_B) with λ_A + λ_B = 1,
    // so z = 4/5.
    let t = matrix(&[&[1.0], &[1.0], &[1.0]]);
    let hull = solve(&t, &[1, 1, 4], &[4], Goal::Ratio { demand: &[1.0, 1.0, 0.25], secondary: None });
    assert!((hull.value - 0.8).abs() < 1e-9, "z = {}", hull.value);
    assert!((hull.allocation.get(0, 0) - 0.8).abs() < 1e-9);
    assert!((hull.allocation.get(2, 0) - 0.2).abs() < 1e-9);
}

#[test]
fn a_two_gpu_job_gets_no_time_on_a_type_with_one_gpu() {
    // Fractionally the 2-GPU job takes half the 1-GPU type (2 steps/s) and half of the 2-GPU type
    // (1 step/s): 1.5 steps/s. No round can run it on the first type: 1 step/s.
    let t = matrix(&[&[2.0, 1.0]]);
    let hull = solve(&t, &[2], &[1, 2], Goal::Throughput { value: &[1.0] });
    assert!((hull.value - 1.0).abs() < 1e-9, "{}", hull.value);
    assert_eq!(hull.allocation.get(0, 0), 0.0);
    assert!((hull.allocation.get(0, 1) - 1.0).abs() < 1e-9);
}

#[test]
fn the_tie_break_over_configurations_keeps_z_and_fills_the_gpus() {
    // Two types of 2 GPUs; job 0 (2 GPUs) only on type 0, jobs 1 and 2 (1 GPU) anywhere. z = 1
    // needs job 0 on type 0 all the time; the tie-break then runs jobs 1 and 2 on type 1 all the
    // time, not just as long as z needs.
    let t = matrix(&[&[1.0, 0.0], &[1.0, 1.0], &[1.0, 1.0]]);
    let demand = [1.0, 0.5, 0.5];
    let bare = solve(&t, &[2, 1, 1], &[2, 2], Goal::Ratio { demand: &demand, secondary: None });
    let tied = solve(&t, &[2, 1, 1], &[2, 2], Goal::Ratio { demand: &demand, secondary: Some(&[1.0, 1.0, 1.0]) });
    assert!((bare.value - 1.0).abs() < 1e-9 && (tied.value - 1.0).abs() < 1e-9);
    let thr = throughputs(&t, &tied.allocation);
    assert!((thr[0] - 1.0).abs() < 1e-7 && (thr[1] - 1.0).abs() < 1e-7 && (thr[2] - 1.0).abs() < 1e-7, "{thr:?}");
}

/// Every configuration of a tiny instance: each job on one type it can run on and fits, or none.
fn every_configuration(throughput: &Matrix, scale_factors: &[u32], capacity: &[u32]) -> Vec<Vec<(usize, usize)>> {
    let runs = crate::realizability::every_assignment(throughput.rows(), throughput.cols(), |runs| {
        let mut used = vec![0u32; capacity.len()];
        for &(m, w) in runs {
            used[w as usize] += scale_factors[m as usize];
        }
        runs.iter().all(|&(m, w)| throughput.get(m as usize, w as usize) > 0.0)
            && used.iter().zip(capacity).all(|(u, c)| u <= c)
    });
    runs.into_iter().map(|r| r.into_iter().map(|(m, w)| (m as usize, w as usize)).collect()).collect()
}

/// `max z` s.t. `thr_m ≥ z·demand_m`, then (with `secondary`) `max Σ secondary_m·thr_m` with z
/// held, by an LP over every configuration: (z, secondary value).
fn ratio_by_every_configuration(
    throughput: &Matrix,
    scale_factors: &[u32],
    capacity: &[u32],
    demand: &[f64],
    secondary: &[f64],
) -> (f64, f64) {
    let configurations = every_configuration(throughput, scale_factors, capacity);
    let build = |z_cost: f64, z_lower: f64| {
        let mut lp = LinearProgram::new(Sense::Maximize);
        let z = lp.add_col(z_cost, z_lower, f64::INFINITY);
        let lambda: Vec<usize> = configurations
            .iter()
            .map(|runs| {
                let value = runs.iter().map(|&(m, w)| (1.0 - z_cost) * secondary[m] * throughput.get(m, w)).sum();
                lp.add_col(value, 0.0, 1.0)
            })
            .collect();
        lp.add_row(Row::at_most(1.0, lambda.iter().map(|&c| (c, 1.0)).collect()));
        // A job no configuration runs is left out (the hull names it instead of holding z at 0).
        for (m, &d) in
            demand.iter().enumerate().filter(|&(m, _)| configurations.iter().any(|r| r.iter().any(|x| x.0 == m)))
        {
            let mut row = vec![(z, -d)];
            for (c, runs) in configurations.iter().enumerate() {
                if let Some(&(_, w)) = runs.iter().find(|r| r.0 == m) {
                    row.push((lambda[c], throughput.get(m, w)));
                }
            }
            lp.add_row(Row::at_least(0.0, row));
        }
        Backend::default().solve(lp).expect("feasible").objective
    };
    if !configurations.iter().any(|r| !r.is_empty()) {
        return (0.0, 0.0);
    }
    let z = build(1.0, 0.0);
    (z, build(0.0, z * (1.0 - 1e-7)))
}

/// 1–2 types of 1–8 GPUs, 1–5 jobs of scale factor 1, 2, 4 or 8 (at most the largest type),
/// throughputs 0 or 0.2–3, demands 0.1–2.
fn random_case() -> impl Strategy<Value = (Matrix, Vec<u32>, Vec<u32>, Vec<f64>)> {
    (prop::collection::vec(1u32..=8, 1..=2), 1usize..=5).prop_flat_map(|(capacity, jobs)| {
        let largest = *capacity.iter().max().unwrap();
        let sizes: Vec<u32> = [1, 2, 4, 8].into_iter().filter(|&s| s <= largest).collect();
        let types = capacity.len();
        (
            Just(capacity),
            prop::collection::vec(prop::sample::select(sizes), jobs),
            prop::collection::vec(prop::collection::vec(prop_oneof![Just(0.0), 0.2..3.0f64], types), jobs),
            prop::collection::vec(0.1..2.0f64, jobs),
        )
            .prop_map(|(capacity, scale_factors, rows, demand)| {
                let mut t = Matrix::zeros(rows.len(), capacity.len());
                for (m, row) in rows.iter().enumerate() {
                    t.row_mut(m).copy_from_slice(row);
                }
                (t, scale_factors, capacity, demand)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_hull_solve_matches_an_lp_over_every_configuration(case in random_case()) {
        let (t, sf, capacity, demand) = case;
        let secondary: Vec<f64> = demand.iter().map(|d| 1.0 / d).collect();
        let (best_z, best_secondary) = ratio_by_every_configuration(&t, &sf, &capacity, &demand, &secondary);
        let hull = solve(&t, &sf, &capacity, Goal::Ratio { demand: &demand, secondary: Some(&secondary) });
        prop_assert!((hull.value - best_z).abs() <= 1e-7 * best_z.max(1.0), "z {} vs {best_z}", hull.value);
        let thr = throughputs(&t, &hull.allocation);
        for (m, &d) in demand.iter().enumerate().filter(|(m, _)| !hull.unplaceable.contains(m)) {
            prop_assert!(thr[m] >= d * best_z * (1.0 - 1e-6) - 1e-9, "job {m}: {} < {}", thr[m], d * best_z);
        }
        let got: f64 = thr.iter().zip(&secondary).map(|(x, s)| x * s).sum();
        prop_assert!((got - best_secondary).abs() <= 1e-6 * best_secondary.max(1.0), "secondary {got} vs {best_secondary}");

        let ones = vec![1.0; demand.len()];
        let most = solve(&t, &sf, &capacity, Goal::Throughput { value: &ones });
        let best = every_configuration(&t, &sf, &capacity)
            .iter()
            .map(|runs| runs.iter().map(|&(m, w)| t.get(m, w)).sum::<f64>())
            .fold(0.0, f64::max);
        prop_assert!((most.value - best).abs() <= 1e-9 * best.max(1.0), "throughput {} vs {best}", most.value);
    }
}

/// `arbiter::solve_json` on a request, as JSON.
fn respond(request: serde_json::Value) -> serde_json::Value {
    let response = arbiter::solve_json(&request.to_string(), Backend::default()).expect("solves");
    serde_json::to_value(response).unwrap()
}

fn four_gpu_example(policy: &str, realizable: bool) -> serde_json::Value {
    serde_json::json!({"policy": policy, "realizable": realizable,
        "cluster": {"worker_types": {"v100": {"count": 4}}},
        "jobs": [{"id": "a", "throughput": {"v100": 1}, "steps_remaining": 100},
                 {"id": "b", "throughput": {"v100": 1}, "steps_remaining": 100},
                 {"id": "big", "throughput": {"v100": 1}, "scale_factor": 4, "steps_remaining": 100}]})
}

#[test]
fn a_realizable_request_answers_what_rounds_can_deliver_and_how_far_it_is() {
    let fractional = respond(four_gpu_example("max_min_fairness", false));
    assert_eq!(fractional["objective"], 1.0);
    assert_eq!(fractional["stats"]["realizable"]["fraction"], 0.8);
    assert!(fractional["stats"].get("realizable_solve").is_none());

    let realizable = respond(four_gpu_example("max_min_fairness", true));
    let solve = &realizable["stats"]["realizable_solve"];
    assert_eq!(solve["applied"], true, "{solve}");
    assert_eq!(solve["certified"], true);
    assert_eq!(solve["fractional_objective"], 1.0);
    assert!((realizable["objective"].as_f64().unwrap() - 0.8).abs() < 1e-7, "{realizable}");
    assert!((solve["relative_gap"].as_f64().unwrap() - 0.2).abs() < 1e-7);
    for (id, x) in [("a", 0.8), ("b", 0.8), ("big", 0.2)] {
        assert!((realizable["allocation"][id]["v100"].as_f64().unwrap() - x).abs() < 1e-7, "{id}");
    }
    // Its decomposition is the check's answer: everything delivered, in two configurations.
    let check = &realizable["stats"]["realizable"];
    assert_eq!(check["fraction"], 1.0, "{check}");
    assert_eq!(check["certified"], true);
    assert_eq!(check["configurations"], 2);

    // Makespan (100 steps each): fractionally every job runs at 2/3 step/s (2·2/3 + 4·2/3 = 4
    // GPUs), done in 150 s; rounds run {a, b} or {big}, half the time each: 200 s.
    let makespan = respond(four_gpu_example("min_makespan", true));
    assert_eq!(makespan["stats"]["realizable_solve"]["fractional_objective"], 150.0);
    assert!((makespan["objective"].as_f64().unwrap() - 200.0).abs() < 1e-3, "{makespan}");
    // Max total throughput: {a, b} all the time (2 steps/s), not the fractional 2 + 0.
    let sum = respond(four_gpu_example("max_sum_throughput", true));
    assert!((sum["objective"].as_f64().unwrap() - 2.0).abs() < 1e-9, "{sum}");
}

#[test]
fn a_job_no_round_can_run_is_named_and_other_policies_say_why_they_are_not_covered() {
    // `big` needs 8 GPUs of a 4-GPU cluster: the fractional LP gives it time, no round can.
    let mut request = four_gpu_example("max_min_fairness", true);
    request["jobs"][2]["scale_factor"] = serde_json::json!(8);
    let response = respond(request);
    let solve = &response["stats"]["realizable_solve"];
    assert_eq!(solve["unplaceable"], serde_json::json!(["big"]), "{solve}");
    assert_eq!(response["allocation"]["big"]["v100"], 0.0);
    assert!((response["objective"].as_f64().unwrap() - 1.0).abs() < 1e-7, "{response}");

    let ftf = respond(four_gpu_example("finish_time_fairness", true));
    let solve = &ftf["stats"]["realizable_solve"];
    assert_eq!(solve["applied"], false);
    assert!(solve["reason"].as_str().unwrap().contains("finish_time_fairness"), "{solve}");
    assert_eq!(ftf["allocation"], respond(four_gpu_example("finish_time_fairness", false))["allocation"]);
}

#[test]
fn a_type_blind_policy_gets_no_realizable_time_where_a_job_cannot_run() {
    // Type-blind LAS sees every throughput as 1 and spreads time over both types, also where
    // `a` measures 0; the realizable allocation gives it none there, and `b` takes that type.
    let request = serde_json::json!({"policy": "max_min_fairness", "heterogeneity_aware": false, "realizable": true,
        "cluster": {"worker_types": {"k80": {"count": 1}, "v100": {"count": 1}}},
        "jobs": [{"id": "a", "throughput": {"k80": 0, "v100": 2}}, {"id": "b", "throughput": {"k80": 1, "v100": 1}}]});
    let response = respond(request);
    let solve = &response["stats"]["realizable_solve"];
    assert_eq!(solve["applied"], true, "{response}");
    assert_eq!(solve["fractional_was_realizable"], false, "{response}");
    assert_eq!(response["allocation"]["a"]["k80"], 0.0, "{response}");
    assert_eq!(response["stats"]["realizable"]["fraction"], 1.0, "{response}");
}

// ---- colocated pairs (space sharing) ----

fn pair(jobs: [usize; 2], scale_factor: u32, throughput: Vec<[f64; 2]>) -> Pair {
    Pair { colocation: 0, jobs, scale_factor, throughput }
}

/// Each configuration's gangs, and per job the time alone on each type and the throughput it
/// gets from its pairs: the hull's decomposition checked round by round.
fn assert_decomposition_with_pairs(
    throughput: &Matrix,
    scale_factors: &[u32],
    capacity: &[u32],
    pairs: &[Pair],
    hull: &Hull,
) {
    let total: f64 = hull.configurations.iter().map(|c| c.0).sum();
    assert!(total <= 1.0 + 1e-9, "weights sum to {total}");
    let mut alone = Matrix::zeros(throughput.rows(), throughput.cols());
    let mut together = vec![vec![0.0; capacity.len()]; pairs.len()];
    for (weight, configuration) in &hull.configurations {
        let mut used = vec![0u64; capacity.len()];
        let mut running = vec![false; throughput.rows()];
        for &(m, w) in &configuration.runs {
            assert!(!std::mem::replace(&mut running[m as usize], true), "job {m} twice in {configuration:?}");
            assert!(throughput.get(m as usize, w as usize) > 0.0);
            used[w as usize] += scale_factors[m as usize] as u64;
            alone.set(m as usize, w as usize, alone.get(m as usize, w as usize) + weight);
        }
        for &(k, w) in &configuration.pairs {
            let p = &pairs[k as usize];
            for m in p.jobs {
                assert!(!std::mem::replace(&mut running[m], true), "job {m} twice in {configuration:?}");
            }
            assert!(p.throughput[w as usize] != [0.0, 0.0]);
            used[w as usize] += p.scale_factor as u64;
            together[k as usize][w as usize] += weight;
        }
        assert!(used.iter().zip(capacity).all(|(&u, &c)| u <= c as u64), "over capacity: {configuration:?}");
    }
    for m in 0..throughput.rows() {
        for w in 0..throughput.cols() {
            assert!((alone.get(m, w) - hull.allocation.get(m, w)).abs() <= 1e-9, "({m}, {w})");
        }
    }
    for (k, time) in together.iter().enumerate() {
        for (w, &y) in time.iter().enumerate() {
            assert!((y - hull.pair_time[k][w]).abs() <= 1e-9, "pair {k} on {w}");
        }
    }
}

/// Throughputs alone plus what the pairs' time gives.
fn throughputs_with_pairs(throughput: &Matrix, pairs: &[Pair], hull: &Hull) -> Vec<f64> {
    let mut thr = throughputs(throughput, &hull.allocation);
    for (p, time) in pairs.iter().zip(&hull.pair_time) {
        for (w, &y) in time.iter().enumerate() {
            thr[p.jobs[0]] += p.throughput[w][0] * y;
            thr[p.jobs[1]] += p.throughput[w][1] * y;
        }
    }
    thr
}

#[test]
fn a_colocated_pair_shares_the_rounds_a_two_gpu_job_leaves() {
    // 2 GPUs of one type; a, b, d (1 GPU) and c (2 GPUs), 1 step/s alone; a and b together run at
    // 0.9 each on one GPU. Every job needs z. Rounds: {c}, {a+b together, d}, {a, b}, {a, d}, {b, d}.
    // With λ_c = z, the rest split between {a+b, d} (x) and {a, b} (y): a gets 0.9x + y, d gets
    // x; a = d = z with x + y = 1 − z gives y = 0.1x, 1.1z = 1 − z: z = 10/21 (x = 10/21,
    // y = 1/21). Without the pair only {a, b}, {a, d}, {b, d} share the time: 2(1 − z)/3 = z,
    // z = 2/5. (Fractionally, with the pair, 2z + z/0.9 + z = 2 GPUs: z = 0.4865, more than any
    // round schedule gives.)
    let t = matrix(&[&[1.0], &[1.0], &[1.0], &[1.0]]);
    let (sf, capacity) = ([1, 1, 2, 1], [2]);
    let pairs = [pair([0, 1], 1, vec![[0.9, 0.9]])];
    let goal = Goal::Ratio { demand: &[1.0; 4], secondary: None };
    let hull = solve_with_pairs(&t, &sf, &capacity, &pairs, goal);
    assert_decomposition_with_pairs(&t, &sf, &capacity, &pairs, &hull);
    assert!((hull.value - 10.0 / 21.0).abs() < 1e-9, "z = {}", hull.value);
    assert!((hull.pair_time[0][0] - 10.0 / 21.0).abs() < 1e-9, "{:?}", hull.pair_time);
    assert!((hull.allocation.get(2, 0) - 10.0 / 21.0).abs() < 1e-9);
    assert!((hull.allocation.get(0, 0) - 1.0 / 21.0).abs() < 1e-9);
    let without = solve(&t, &sf, &capacity, goal);
    assert!((without.value - 0.4).abs() < 1e-9, "z = {}", without.value);
}

/// Every configuration of a tiny instance with pairs, as the gangs it runs `(gang, type)`: gang
/// m < jobs is job m alone, jobs + k is pair k; each job at most once, each type within its GPUs.
fn every_configuration_with_pairs(
    t: &Matrix,
    sf: &[u32],
    capacity: &[u32],
    pairs: &[Pair],
) -> Vec<Vec<(usize, usize)>> {
    let jobs = t.rows();
    let gangs: Vec<(Vec<usize>, u32)> =
        (0..jobs).map(|m| (vec![m], sf[m])).chain(pairs.iter().map(|p| (p.jobs.to_vec(), p.scale_factor))).collect();
    let runs_on = |g: usize, w: usize| {
        if g < jobs {
            t.get(g, w) > 0.0
        } else {
            pairs[g - jobs].throughput[w] != [0.0, 0.0]
        }
    };
    // Every choice of no type or one type per gang (mixed radix), kept when it is one round.
    let options = capacity.len() + 1;
    let mut all = Vec::new();
    for code in 0..options.pow(gangs.len() as u32) {
        let mut chosen = Vec::new();
        let (mut used, mut running) = (vec![0u32; capacity.len()], vec![false; jobs]);
        let mut rest = code;
        let mut round = true;
        for (g, (members, size)) in gangs.iter().enumerate() {
            let choice = rest % options;
            rest /= options;
            if choice == 0 {
                continue;
            }
            let w = choice - 1;
            round &= runs_on(g, w) && members.iter().all(|&m| !std::mem::replace(&mut running[m], true));
            used[w] += size;
            chosen.push((g, w));
        }
        if round && used.iter().zip(capacity).all(|(u, c)| u <= c) {
            all.push(chosen);
        }
    }
    all
}

/// `max z` s.t. `thr_m ≥ z·demand_m` over every configuration with pairs (jobs no configuration
/// runs left out), and `max Σ thr_m`.
fn best_with_pairs(t: &Matrix, sf: &[u32], capacity: &[u32], pairs: &[Pair], demand: &[f64]) -> (f64, f64) {
    let jobs = t.rows();
    let configurations = every_configuration_with_pairs(t, sf, capacity, pairs);
    // Each configuration's throughput per job.
    let given: Vec<Vec<f64>> = configurations
        .iter()
        .map(|c| {
            let mut thr = vec![0.0; jobs];
            for &(g, w) in c {
                if g < jobs {
                    thr[g] += t.get(g, w);
                } else {
                    let p = &pairs[g - jobs];
                    thr[p.jobs[0]] += p.throughput[w][0];
                    thr[p.jobs[1]] += p.throughput[w][1];
                }
            }
            thr
        })
        .collect();
    let mut lp = LinearProgram::new(Sense::Maximize);
    let z = lp.add_col(1.0, 0.0, f64::INFINITY);
    let lambda: Vec<usize> = given.iter().map(|_| lp.add_col(0.0, 0.0, 1.0)).collect();
    lp.add_row(Row::at_most(1.0, lambda.iter().map(|&c| (c, 1.0)).collect()));
    for m in (0..jobs).filter(|&m| given.iter().any(|g| g[m] > 0.0)) {
        let mut row = vec![(z, -demand[m])];
        row.extend(given.iter().zip(&lambda).filter(|(g, _)| g[m] > 0.0).map(|(g, &c)| (c, g[m])));
        lp.add_row(Row::at_least(0.0, row));
    }
    let best_z = if given.iter().any(|g| g.iter().any(|&x| x > 0.0)) {
        Backend::default().solve(lp).expect("feasible").objective
    } else {
        0.0
    };
    let best_sum = given.iter().map(|g| g.iter().sum::<f64>()).fold(0.0, f64::max);
    (best_z, best_sum)
}

/// 1–2 types of 1–4 GPUs, 2–4 jobs of scale factor 1 or 2, up to 3 pairs of equal scale factors
/// at 0.4–0.95 of their solo speeds (on a type where both run).
fn random_case_with_pairs() -> impl Strategy<Value = (Matrix, Vec<u32>, Vec<u32>, Vec<Pair>, Vec<f64>)> {
    (prop::collection::vec(1u32..=4, 1..=2), 2usize..=4).prop_flat_map(|(capacity, jobs)| {
        let types = capacity.len();
        (
            Just(capacity),
            prop::collection::vec(prop::sample::select(vec![1u32, 1, 2]), jobs),
            prop::collection::vec(prop::collection::vec(prop_oneof![Just(0.0), 0.2..3.0f64], types), jobs),
            prop::collection::vec(
                (0..jobs, 0..jobs, prop::collection::vec((0.4..0.95f64, 0.4..0.95f64), types)),
                1..=3,
            ),
            prop::collection::vec(0.1..2.0f64, jobs),
        )
            .prop_map(|(capacity, sf, rows, offered, demand)| {
                let mut t = Matrix::zeros(rows.len(), capacity.len());
                for (m, row) in rows.iter().enumerate() {
                    t.row_mut(m).copy_from_slice(row);
                }
                let mut pairs: Vec<Pair> = Vec::new();
                for (a, b, keep) in offered {
                    if a == b || sf[a] != sf[b] || pairs.iter().any(|p| p.jobs == [a, b] || p.jobs == [b, a]) {
                        continue;
                    }
                    let throughput: Vec<[f64; 2]> = (0..capacity.len())
                        .map(|w| match t.get(a, w) > 0.0 && t.get(b, w) > 0.0 {
                            true => [keep[w].0 * t.get(a, w), keep[w].1 * t.get(b, w)],
                            false => [0.0, 0.0],
                        })
                        .collect();
                    pairs.push(pair([a, b], sf[a], throughput));
                }
                (t, sf, capacity, pairs, demand)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// With pairs, the hull's z and total throughput are those of an LP over every configuration,
    /// and its decomposition is rounds that reproduce its allocation and pair time.
    #[test]
    fn the_hull_with_pairs_matches_an_lp_over_every_configuration(case in random_case_with_pairs()) {
        let (t, sf, capacity, pairs, demand) = case;
        let (best_z, best_sum) = best_with_pairs(&t, &sf, &capacity, &pairs, &demand);
        let hull = solve_with_pairs(&t, &sf, &capacity, &pairs, Goal::Ratio { demand: &demand, secondary: None });
        assert_decomposition_with_pairs(&t, &sf, &capacity, &pairs, &hull);
        prop_assert!((hull.value - best_z).abs() <= 1e-7 * best_z.max(1.0), "z {} vs {best_z}", hull.value);
        let thr = throughputs_with_pairs(&t, &pairs, &hull);
        for (m, &d) in demand.iter().enumerate().filter(|(m, _)| !hull.unplaceable.contains(m)) {
            prop_assert!(thr[m] >= d * best_z * (1.0 - 1e-6) - 1e-9, "job {m}: {} < {}", thr[m], d * best_z);
        }
        let ones = vec![1.0; demand.len()];
        let most = solve_with_pairs(&t, &sf, &capacity, &pairs, Goal::Throughput { value: &ones });
        assert_decomposition_with_pairs(&t, &sf, &capacity, &pairs, &most);
        prop_assert!((most.value - best_sum).abs() <= 1e-9 * best_sum.max(1.0), "throughput {} vs {best_sum}", most.value);
    }
}

/// The pair example as a request (`max_min_fairness`: the 2-GPU job's demand is half the others',
/// `w·thr_equal/sf`): `λ_c ≥ z/2`, `{a+b, d}` for `z`, `{a, b}` for `0.1z`: `1.6z = 1`, so
/// `z = 0.625`, against `9/14` fractionally (`z + z/0.9 + z = 2` GPUs). The response carries the
/// pair's time and the decomposition, pair included.
#[test]
fn a_realizable_request_with_space_sharing_gives_the_pair_its_rounds() {
    let job = |id: &str, sf: u32| serde_json::json!({"id": id, "throughput": {"v100": 1.0}, "steps_remaining": 100, "scale_factor": sf});
    let request = serde_json::json!({
        "policy": "max_min_fairness", "realizable": true, "space_sharing": true,
        "cluster": {"worker_types": {"v100": {"count": 2}}},
        "jobs": [job("a", 1), job("b", 1), job("c", 2), job("d", 1)],
        "colocations": [{"jobs": ["a", "b"], "throughput": {"v100": [0.9, 0.9]}}]
    });
    let response = respond(request);
    let solve = &response["stats"]["realizable_solve"];
    assert_eq!(solve["applied"], true, "{response}");
    assert_eq!(solve["certified"], true);
    assert!((solve["fractional_objective"].as_f64().unwrap() - 9.0 / 14.0).abs() < 1e-7, "{solve}");
    assert!((response["objective"].as_f64().unwrap() - 0.625).abs() < 1e-6, "{response}");
    let pair = &response["colocated_allocation"][0];
    assert_eq!(pair["jobs"], serde_json::json!(["a", "b"]));
    assert!((pair["allocation"]["v100"].as_f64().unwrap() - 0.625).abs() < 1e-6, "{pair}");
    for (id, x) in [("a", 0.0625), ("c", 0.3125), ("d", 0.625)] {
        assert!((response["allocation"][id]["v100"].as_f64().unwrap() - x).abs() < 1e-6, "{id}: {response}");
    }
    let check = &response["stats"]["realizable"];
    assert_eq!((check["checked"].as_bool(), check["fraction"].as_f64()), (Some(true), Some(1.0)), "{check}");
}

/// Sessions' and the simulator's default (`Realizable::UnlessPaired`) keeps the fractional
/// allocation while space sharing's pairs are in the solve, and says why; without the pair it
/// solves over round configurations as `realizable: true` does.
#[test]
fn the_default_of_sessions_leaves_paired_solves_fractional() {
    use arbiter::solver::realizable::Realizable;
    let job = |id: &str, sf: u32| serde_json::json!({"id": id, "throughput": {"v100": 1.0}, "steps_remaining": 100, "scale_factor": sf});
    let mut request = serde_json::json!({
        "policy": "max_min_fairness", "space_sharing": true,
        "cluster": {"worker_types": {"v100": {"count": 2}}},
        "jobs": [job("a", 1), job("b", 1), job("c", 2), job("d", 1)],
        "colocations": [{"jobs": ["a", "b"], "throughput": {"v100": [0.9, 0.9]}}]
    });
    let solve = |request: &serde_json::Value| {
        let mut problem = arbiter::Problem::from_json(&request.to_string()).expect("valid");
        problem.realizable = Realizable::UnlessPaired;
        serde_json::to_value(arbiter::solve(&problem, Backend::default()).expect("solves")).unwrap()
    };
    let paired = solve(&request);
    let report = &paired["stats"]["realizable_solve"];
    assert_eq!(report["applied"], false, "{paired}");
    assert!(report["reason"].as_str().unwrap().contains("realizable: true"), "{report}");
    assert!((paired["objective"].as_f64().unwrap() - 9.0 / 14.0).abs() < 1e-7, "{paired}");
    request["colocations"] = serde_json::json!([]);
    let alone = solve(&request);
    assert_eq!(alone["stats"]["realizable_solve"]["applied"], true, "{alone}");
    let mut asked = request.clone();
    asked["realizable"] = serde_json::json!(true);
    assert_eq!(alone["objective"], respond(asked)["objective"]);
}
