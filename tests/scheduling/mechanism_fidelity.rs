//! Fidelity of the round-based mechanism: after enough rounds every job has received, on every
//! worker type, the fraction of time its allocation gives it; and the gap shrinks as rounds grow.
//!
//! `fixtures/mechanism_gavel_*.json` are synthetic, seeded and shaped like Gavel's benchmark (three
//! types, n/4 GPUs of each in servers of 4, scale factors 1/2/4/8 at 70/10/15/5 %, a fifth of the
//! jobs at weight 5, throughputs k80 < p100 < v100); `mechanism_paper.json` is the paper's §4.1
//! example.

use crate::mechanism_support::*;
use arbiter::mechanism::{realizability, Config, LeaseChange, Mode, Session};
use arbiter::solver::tie_break::TieBreak;
use arbiter::{PolicyKind, Problem};
use std::path::Path;

const FIXTURES: [&str; 6] = [
    "mechanism_paper.json",
    "mechanism_gavel_n16.json",
    "mechanism_gavel_n32.json",
    "mechanism_gavel_n64.json",
    "mechanism_gavel_n48_makespan.json",
    "mechanism_gavel_n40_ftf.json",
];

/// Prints (and returns) the jobs whose allocation includes a type they can never be placed on.
fn note_unplaceable(name: &str, session: &Session) -> usize {
    let mut count = 0;
    for id in session.job_ids() {
        let types = session.unplaceable_types(id).unwrap();
        if !types.is_empty() {
            let names: Vec<&str> = types.iter().map(|&w| session.cluster().type_name(w)).collect();
            println!(
                "{name}: job {id} (scale factor {}) has allocation on {names:?} but more GPUs than \
                 there are: excluded there, never placed there",
                session.job(id).unwrap().scale_factor
            );
            count += 1;
        }
    }
    count
}

/// A fixture with Gavel's allocation: the LP's bare vertex (`tie_break: "none"`). The default
/// tie-break fills every GPU a job could use, and rounds deliver such an allocation only as far as
/// its realizability says (`tie_broken_allocations_are_delivered_as_far_as_they_are_realizable`).
fn gavel_fixture(name: &str) -> Problem {
    Problem { tie_break: TieBreak::None, ..fixture(name) }
}

#[test]
fn received_time_is_within_005_of_the_allocation_after_200_rounds() {
    for name in FIXTURES {
        let session = run_problem(&gavel_fixture(name), 200, Config::default());
        note_unplaceable(name, &session);
        for (id, w, x, received) in gaps(&session) {
            assert!(
                (x - received).abs() <= 0.05,
                "{name}: job {id} on type {w}: allocation {x:.4}, received {received:.4}"
            );
        }
    }
}

#[test]
fn the_gavel_shaped_instance_with_four_gpus_per_type_has_an_unplaceable_job() {
    // n = 16: 4 GPUs of each type, so its scale-factor-8 job fits nowhere; the contract's LP still
    // gives it time, which the rounds report and never grant.
    let session = run_problem(&fixture("mechanism_gavel_n16.json"), 20, Config::default());
    assert_eq!(note_unplaceable("mechanism_gavel_n16.json", &session), 1);
    let id = session.job_ids().find(|id| !session.unplaceable_types(id).unwrap().is_empty()).unwrap().clone();
    assert_eq!(session.job(&id).unwrap().scale_factor, 8);
    assert!(session.allocation(&id).unwrap().iter().sum::<f64>() > 0.0);
    assert!(session.total_received(&id).unwrap().iter().all(|&r| r == 0.0));
}

#[test]
fn the_mean_gap_shrinks_as_rounds_grow() {
    let problem = gavel_fixture("mechanism_gavel_n64.json");
    let mut session = Session::from_problem(&problem, Config::default()).unwrap();
    let mut means = Vec::new();
    let mut done = 0;
    for rounds in [50, 200, 800] {
        run(&mut session, rounds - done);
        done = rounds;
        means.push(mean_gap(&session));
    }
    println!("mean |allocation − received| after 50, 200, 800 rounds: {means:?}");
    assert!(means[0] > means[1] && means[1] > means[2], "{means:?}");
    assert!(means[2] < 0.001, "{means:?}");
}

#[test]
fn ideal_mode_grants_exactly_the_allocation() {
    let config = Config { mode: Mode::Ideal, ..Config::default() };
    let session = run_problem(&fixture("mechanism_gavel_n32.json"), 7, config);
    for id in session.job_ids() {
        let x = session.allocation(id).unwrap();
        let received = session.received_fraction(id).unwrap();
        for w in 0..x.len() {
            assert!((x[w] - received[w]).abs() < 1e-12);
        }
    }
}

#[test]
fn ideal_rounds_place_nothing() {
    let config = Config { mode: Mode::Ideal, ..Config::default() };
    let mut session = Session::from_problem(&fixture("mechanism_paper.json"), config).unwrap();
    let round = round(&mut session);
    assert!(round.placements.is_empty());
    assert!(round.jobs.iter().all(|j| j.lease == LeaseChange::Fractional));
}

/// LP-feasible (Σ sf·X = 4 on 4 GPUs) but not time-shareable on whole GPUs: the 4-GPU job can
/// run only when neither 1-GPU job does, so `y_big + y_a ≤ 1`. The best any schedule can do
/// leaves every job 0.25 short (big 0.25, a and b 0.75); ordering by absolute lag shares the
/// conflict exactly so, with no idle round. (Gavel's ratio `X / received` would give big 1/3 and
/// a, b 2/3: a third short.)
#[test]
fn an_allocation_no_schedule_can_meet_is_shared_evenly_without_idle_rounds() {
    let mut session =
        Session::new(PolicyKind::MaxSumThroughput, true, vec![worker_type("v100", 4, 4)], Config::default()).unwrap();
    for (id, sf) in [("big", 4), ("a", 1), ("b", 1)] {
        session.add_job(job(id, sf), &[1.0]).unwrap();
    }
    let x = matrix(&[&[0.5], &[1.0], &[1.0]]);
    session.set_allocation(&x).unwrap();
    let best = best_gap(&session, 0);
    assert!((best - 0.25).abs() < 1e-6, "{best}");
    assert_eq!(unrealizable_types(&session).len(), 1);
    run(&mut session, 300);
    let got = |id: &str| session.received_fraction(id).unwrap()[0];
    println!("big {:.3}, a {:.3}, b {:.3}", got("big"), got("a"), got("b"));
    assert!((got("big") + got("a") - 1.0).abs() < 1e-9, "no round left idle");
    assert!((got("a") - got("b")).abs() < 1e-9);
    assert!(max_gap(&session) <= best + 2.0 / 300.0, "{} against the best {best}", max_gap(&session));
}

/// `mechanism_gavel_n32.json` as max-min fairness solves it now: v100 booked exactly full
/// (Σ sf·X = 8 on 8) with three 8-GPU jobs at about 0.02 each next to j22 at X = 1. An 8-GPU job
/// runs only in rounds j22 does not, so `X_j22 + Σ X_8GPU = 1.065 > 1`: no schedule meets this
/// allocation, the best leaves a job 0.016 short. (The allocation is pinned here, since LAS
/// optima are not unique and a solver change may move them.) The ratio rule left j22 0.07 short.
#[test]
fn the_n32_allocation_that_books_v100_beyond_whole_gpus_is_met_within_005() {
    let problem = fixture("mechanism_gavel_n32.json");
    let pinned: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/fixtures/mechanism_gavel_n32_allocation.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    let mut session = Session::from_problem(&problem, Config::default()).unwrap();
    let types: Vec<String> =
        (0..session.cluster().num_types()).map(|w| session.cluster().type_name(w).into()).collect();
    let ids: Vec<String> = session.job_ids().map(|id| id.to_string()).collect();
    let mut x = arbiter::problem::Matrix::zeros(ids.len(), types.len());
    for (m, id) in ids.iter().enumerate() {
        for (w, t) in types.iter().enumerate() {
            x.set(m, w, pinned["allocation"][id][t].as_f64().unwrap_or(0.0));
        }
    }
    session.set_allocation(&x).unwrap();
    let v100 = types.iter().position(|t| t == "v100").unwrap();
    let booked: f64 =
        ids.iter().enumerate().map(|(m, id)| session.job(id).unwrap().scale_factor as f64 * x.get(m, v100)).sum();
    assert!((booked - 8.0).abs() < 1e-6, "v100 booked {booked} of 8");
    let best = best_gap(&session, v100);
    println!("v100: the best schedule on whole GPUs leaves a job {best:.4} short");
    assert!(best > 0.01 && best < 0.02, "{best}");
    run(&mut session, 200);
    let worst = max_gap(&session);
    println!("after 200 rounds: max |allocation − received| {worst:.4}");
    assert!(worst <= 0.05 && worst <= best + 0.01, "{worst}");
}

#[test]
fn conformance_requests_within_005_after_200_rounds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("skipped: no conformance cases at {}", dir.display());
        return;
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let mut checked = 0;
    for path in paths {
        let case: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let name = case["name"].as_str().unwrap_or_default().to_string();
        let problem = match Problem::from_json(&case["request"].to_string()) {
            Ok(p) => p,
            Err(e) => {
                println!("{name}: skipped, the request is refused: {e}");
                continue;
            }
        };
        if problem.policy.policy().is_none() {
            println!("{name}: skipped, policy {} not available yet", problem.policy.name());
            continue;
        }
        let session = run_problem(&problem, 200, Config::default());
        note_unplaceable(&name, &session);
        let mut worst = vec![0.0f64; session.cluster().num_types()];
        for (id, w, x, received) in gaps(&session) {
            // Never more than one round ahead, met or not.
            assert!(received <= x + 1.0 / 200.0 + 1e-9, "{name}: {id} on {w} over-served");
            worst[w] = worst[w].max((x - received).abs());
        }
        for (w, &worst) in worst.iter().enumerate() {
            let type_name = session.cluster().type_name(w);
            // A type no schedule on whole GPUs can meet is held to the best one can do.
            let best = if worst > 0.05 { best_gap(&session, w) } else { 0.0 };
            if best > 1e-6 {
                println!("{name}: {type_name} is not realizable on whole GPUs, the best leaves {best:.4}");
            }
            println!("{name}: {type_name}: max |allocation − received| after 200 rounds {worst:.4}");
            assert!(worst <= best + 0.05, "{name}: a job on {type_name} is {worst:.4} from its allocation");
        }
        checked += 1;
    }
    println!("{checked} conformance requests within 0.05");
}

/// The mechanism fixtures, and every public reference case's request (when `../shared` is there).
fn fixtures_and_reference_cases() -> Vec<(String, Problem)> {
    let mut problems: Vec<(String, Problem)> = FIXTURES.iter().map(|name| (name.to_string(), fixture(name))).collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        paths.sort();
        for path in paths {
            let case: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            if let Ok(problem) = Problem::from_json(&case["request"].to_string()) {
                problems.push((case["name"].as_str().unwrap_or_default().to_string(), problem));
            }
        }
    } else {
        println!("note: no conformance cases at {}; the fixtures only", dir.display());
    }
    problems
}

/// With rounds that follow the allocation's decomposition, every job receives what rounds on
/// whole GPUs can deliver of its allocation, within 0.02 after 200 rounds: the fixtures here, and
/// every public reference case (when `../shared` is there).
#[test]
fn rounds_that_follow_the_decomposition_deliver_it_within_002() {
    let config = Config { mode: Mode::Configurations, ..Config::default() };
    let problems = fixtures_and_reference_cases();
    for (name, problem) in problems {
        let session = run_problem(&problem, 200, config);
        let report = realizability(&session);
        let gap = decomposition_gap(&session);
        println!(
            "{name}: fraction {:.4} (at most {:.4}), {}; max |deliverable − received| {gap:.4}",
            report.fraction.unwrap_or(f64::NAN),
            report.fraction_upper_bound.unwrap_or(f64::NAN),
            session.decomposition_skipped().unwrap_or("followed"),
        );
        match session.decomposition_skipped() {
            None => assert!(gap <= 0.02, "{name}: {gap:.4} from what the decomposition delivers"),
            // Not certified: the rounds chose jobs by priority, held to the priority tests' bound.
            Some(_) => assert!(max_gap(&session) <= 0.05 || gap <= 0.05, "{name}: {gap:.4}"),
        }
    }
}

/// With a realizable solve (`realizable: true`) and rounds that follow its decomposition, every
/// job receives its (realizable) allocation within 0.02 after 200 rounds: the fixtures here and
/// every public reference case of `max_min_fairness`, `min_makespan` and `max_sum_throughput`
/// (when `../shared` is there).
#[test]
fn realizable_allocations_are_delivered_within_002() {
    let config = Config { mode: Mode::Configurations, ..Config::default() };
    let covered = [PolicyKind::MaxMinFairness, PolicyKind::MinMakespan, PolicyKind::MaxSumThroughput];
    let problems = fixtures_and_reference_cases();
    let mut checked = 0;
    for (name, mut problem) in problems.into_iter().filter(|(_, p)| covered.contains(&p.policy)) {
        problem.realizable = arbiter::solver::realizable::Realizable::On;
        let session = run_problem(&problem, 200, config);
        let solve = session.realizable_solve().expect("a realizable solve ran").clone();
        assert!(solve.applied && solve.certified, "{name}: {solve:?}");
        assert_eq!(session.decomposition_skipped(), None, "{name}");
        let gap = max_gap(&session);
        println!(
            "{name}: objective {:?} against {:?} fractional (gap {:.2e}), max |allocation − received| {gap:.4}",
            solve.objective,
            solve.fractional_objective,
            solve.relative_gap.unwrap_or(f64::NAN)
        );
        assert!(gap <= 0.02, "{name}: {gap:.4} from the realizable allocation");
        checked += 1;
    }
    assert!(checked >= 2, "the fixtures alone hold LAS and makespan");
}

/// The issue's first example in a session: two 1-GPU jobs and a 4-GPU job on 4 GPUs, LAS. The
/// fractional optimum (1, 1, 1/4) cannot be run; the realizable one runs {a, b} 4/5 of the time
/// and {big} 1/5, and rounds deliver it.
#[test]
fn a_realizable_session_runs_the_four_gpu_example_as_solved() {
    let request = r#"{"policy": "max_min_fairness", "realizable": true,
        "cluster": {"worker_types": {"v100": {"count": 4, "gpus_per_server": 4}}},
        "jobs": [{"id": "a", "throughput": {"v100": 1}}, {"id": "b", "throughput": {"v100": 1}},
                 {"id": "big", "throughput": {"v100": 1}, "scale_factor": 4}]}"#;
    let problem = Problem::from_json(request).unwrap();
    let config = Config { mode: Mode::Configurations, ..Config::default() };
    let session = run_problem(&problem, 200, config);
    let solve = session.realizable_solve().unwrap();
    assert!((solve.objective.unwrap() - 0.8).abs() < 1e-7 && solve.fractional_objective == Some(1.0), "{solve:?}");
    for (id, x) in [("a", 0.8), ("b", 0.8), ("big", 0.2)] {
        assert!((session.allocation(id).unwrap()[0] - x).abs() < 1e-7, "{id}");
        let received = session.received_fraction(id).unwrap()[0];
        assert!((received - x).abs() <= 0.02, "{id}: {received} of {x}");
    }
}

/// A session's default (`Realizable::UnlessPaired`) solves the same example realizably, and past
/// the realizable solve's size budget (8,192 jobs) keeps the fractional allocation without the
/// tie-break that would start it, naming the budget.
#[test]
fn a_sessions_default_is_realizable_within_its_size_budget() {
    use arbiter::solver::realizable::Realizable;
    let request = r#"{"policy": "max_min_fairness",
        "cluster": {"worker_types": {"v100": {"count": 4, "gpus_per_server": 4}}},
        "jobs": [{"id": "a", "throughput": {"v100": 1}}, {"id": "b", "throughput": {"v100": 1}},
                 {"id": "big", "throughput": {"v100": 1}, "scale_factor": 4}]}"#;
    let mut problem = Problem::from_json(request).unwrap();
    problem.realizable = Realizable::UnlessPaired;
    let session = run_problem(&problem, 1, Config::default());
    let solve = session.realizable_solve().unwrap();
    assert!(solve.applied && (solve.objective.unwrap() - 0.8).abs() < 1e-7, "{solve:?}");

    let jobs: Vec<String> = (0..8_193)
        .map(|m| format!(r#"{{"id": "j{m}", "throughput": {{"v100": {}}}}}"#, 1.0 + (m % 7) as f64))
        .collect();
    let request = format!(
        r#"{{"policy": "max_min_fairness", "cluster": {{"worker_types": {{"v100": {{"count": 2048}}}}}},
            "jobs": [{}]}}"#,
        jobs.join(",")
    );
    let mut problem = Problem::from_json(&request).unwrap();
    problem.realizable = Realizable::UnlessPaired;
    let mut session = Session::from_problem(&problem, Config::default()).unwrap();
    session.recompute_allocation().unwrap();
    let solve = session.realizable_solve().unwrap();
    assert!(!solve.applied && solve.reason.as_deref().unwrap().contains("8192 jobs"), "{solve:?}");
    // The bare LP's allocation: every job at its share, as with `realizable: false`.
    problem.realizable = Realizable::Off;
    let mut off = Session::from_problem(&problem, Config::default()).unwrap();
    off.recompute_allocation().unwrap();
    for m in [0, 1, 4_096, 8_192] {
        let id = format!("j{m}");
        assert_eq!(session.allocation(&id).unwrap(), off.allocation(&id).unwrap(), "{id}");
    }
}

#[test]
fn tie_broken_allocations_are_delivered_as_far_as_they_are_realizable() {
    // GPU-time per round a session's jobs received, and the time its allocation gives them.
    let received = |s: &Session| -> f64 {
        s.job_ids()
            .map(|id| {
                let sf = s.job(id).unwrap().scale_factor as f64;
                s.received_fraction(id).unwrap().iter().sum::<f64>() * sf
            })
            .sum()
    };
    let allocated = |s: &Session| -> f64 { s.job_ids().map(|id| s.allocation(id).unwrap().iter().sum::<f64>()).sum() };
    for name in FIXTURES {
        let tie_broken = run_problem(&fixture(name), 200, Config::default());
        let bare = run_problem(&gavel_fixture(name), 200, Config::default());
        let report = realizability(&tie_broken);
        let worst = gaps(&tie_broken).into_iter().map(|(_, _, x, r)| x - r).fold(0.0f64, f64::max);
        println!(
            "{name}: time allocated {:.3} (bare {:.3}), GPU-time received per round {:.3} (bare {:.3}), \
             realizable fraction {:?}, worst shortfall {worst:.4}",
            allocated(&tie_broken),
            allocated(&bare),
            received(&tie_broken),
            received(&bare),
            report.fraction
        );
        assert!(allocated(&tie_broken) >= allocated(&bare) - 1e-6, "{name}");
        assert!(received(&tie_broken) >= received(&bare) - 1e-6, "{name}");
        // Rounds fall short of a full allocation where whole GPUs cannot deliver it (the check's
        // fraction, 0.97 at worst here), and by little.
        assert!(worst <= 0.1, "{name}: {worst}");
    }
    // Max-min fairness on 64 jobs: the bare vertex leaves most of the cluster idle.
    let n64 = fixture("mechanism_gavel_n64.json");
    let (tie_broken, bare) = (
        run_problem(&n64, 1, Config::default()),
        run_problem(&gavel_fixture("mechanism_gavel_n64.json"), 1, Config::default()),
    );
    assert!(allocated(&tie_broken) > 2.0 * allocated(&bare), "{} vs {}", allocated(&tie_broken), allocated(&bare));
}
