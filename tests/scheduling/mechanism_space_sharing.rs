//! Space sharing in the round mechanism: colocated pairs are job combinations with their own
//! allocation `Y`, granted like a job's `X`; a job never runs twice in a round; a pair runs on
//! `scale_factor` GPUs of one type, consolidated, each tenant at its paired throughput. Every round
//! goes through `crate::mechanism_support::check_round`.

use crate::mechanism_support::*;
use arbiter::mechanism::{Config, LeaseChange, Mode, Session, Tenants};
use arbiter::problem::Matrix;
use arbiter::{ErrorCode, PolicyKind};
use proptest::prelude::*;

fn session(types: &[(&str, u32, u32)], config: Config) -> Session {
    let types = types.iter().map(|&(name, count, per)| worker_type(name, count, per)).collect();
    Session::new(PolicyKind::MaxMinFairness, true, types, config).expect("a valid cluster")
}

fn add(s: &mut Session, id: &str, scale_factor: u32, throughput: &[f64]) {
    s.add_job(job(id, scale_factor), throughput).expect("a valid job");
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn two_jobs_on_one_gpu_both_run_every_round_when_paired() {
    // Hand-checked: one GPU, a and b at 1 step/s alone and 0.7 / 0.6 together. Time-shared
    // (X = 0.5 each) each runs every other round; paired (Y = 1) both run every round, on the same
    // GPU, renewing it.
    let mut s = session(&[("v100", 1, 1)], Config::default());
    add(&mut s, "a", 1, &[1.0]);
    add(&mut s, "b", 1, &[1.0]);
    s.add_colocation("a", "b", &[[0.7, 0.6]]).unwrap();
    s.set_allocation(&matrix(&[&[0.5], &[0.5]])).unwrap();
    let mut alone = [0, 0];
    for _ in 0..10 {
        let r = round(&mut s);
        assert_eq!(r.placements.len(), 1, "one GPU: one placement per round");
        let Tenants::Single(id) = &r.placements[0].jobs else { panic!("no pair without Y") };
        alone[(id.as_ref() == "b") as usize] += 1;
    }
    assert_eq!(alone, [5, 5], "time-shared: every other round each");

    s.set_colocated_allocation(&matrix(&[&[0.0], &[0.0]]), &matrix(&[&[1.0]])).unwrap();
    for i in 0..10 {
        let r = round(&mut s);
        assert_eq!(r.placements.len(), 1);
        let p = &r.placements[0];
        assert_eq!(p.jobs, Tenants::Pair(["a".into(), "b".into()]));
        assert_eq!(p.gpus.len(), 1);
        assert_eq!(r.jobs[0].placement, Some(0));
        assert_eq!(r.jobs[1].placement, Some(0));
        if i > 0 {
            assert!(r.jobs.iter().all(|j| j.lease == LeaseChange::Renewed), "round {i}: {:?}", r.jobs);
        }
        assert_eq!(s.placement_throughput(p), vec![("a".into(), 0.7), ("b".into(), 0.6)]);
    }
    assert_eq!(s.colocated_received("a", "b").unwrap(), &[3600.0]);
    assert_eq!(s.colocated_received("b", "a").unwrap(), &[3600.0], "either order names the pair");
    assert_eq!(s.received("a").unwrap(), &[0.0], "no time alone since the pair's allocation");
    assert!(close(s.effective_throughput("a").unwrap(), 0.7, 1e-12));
    assert!(close(s.effective_throughput("b").unwrap(), 0.6, 1e-12));
    assert_eq!(s.colocated_throughput("b", "a").unwrap(), vec![[0.6, 0.7]]);
}

#[test]
fn a_job_never_runs_twice_in_one_round() {
    // Two GPUs, a in two pairs and alone, all due every round: a can take only one of them.
    let mut s = session(&[("v100", 2, 2)], Config { work_conserving: true, ..Config::default() });
    for id in ["a", "b", "c"] {
        add(&mut s, id, 1, &[1.0]);
    }
    s.add_colocation("a", "b", &[[0.8, 0.8]]).unwrap();
    s.add_colocation("c", "a", &[[0.8, 0.8]]).unwrap();
    let x = matrix(&[&[0.3], &[0.3], &[0.3]]);
    let y = matrix(&[&[0.35], &[0.35]]);
    s.set_colocated_allocation(&x, &y).unwrap();
    for _ in 0..200 {
        round(&mut s); // check_round: no job twice, no GPU twice, capacity
    }
    for (pair, want) in [(("a", "b"), 0.35), (("c", "a"), 0.35)] {
        let got = s.colocated_received_fraction(pair.0, pair.1).unwrap()[0];
        assert!(close(got, want, 0.02), "{pair:?}: {got} vs {want}");
    }
    for id in ["a", "b", "c"] {
        let got = s.received_fraction(id).unwrap()[0];
        assert!(got >= 0.3 - 0.02, "{id} alone: {got}");
    }
}

#[test]
fn received_pair_time_tracks_y_over_many_rounds() {
    // Two types, jobs of scale factor 1 and 2, pairs between two groups (so every pattern of
    // fractions within the per-job and per-type budgets has a schedule), every GPU booked.
    let mut s = session(&[("v100", 4, 4), ("k80", 4, 2)], Config::default());
    let jobs = [("a0", 1), ("a1", 1), ("a2", 1), ("b0", 1), ("b1", 1), ("b2", 1), ("c0", 2), ("c1", 2), ("d0", 1)];
    for (id, sf) in jobs {
        add(&mut s, id, sf, &[2.0, 1.0]);
    }
    let pairs = [("a0", "b0"), ("a0", "b1"), ("a1", "b1"), ("a2", "b2"), ("c0", "c1")];
    for (a, b) in pairs {
        s.add_colocation(a, b, &[[1.5, 1.2], [0.8, 0.7]]).unwrap();
    }
    // X per job and type; Y per pair and type. Per job ≤ 1; per type Σ sf·X + Σ sf·Y ≤ 4.
    let x = matrix(&[
        &[0.2, 0.1], // a0
        &[0.0, 0.5], // a1
        &[0.3, 0.0], // a2
        &[0.0, 0.4], // b0
        &[0.2, 0.0], // b1
        &[0.0, 0.3], // b2
        &[0.3, 0.0], // c0
        &[0.0, 0.3], // c1
        &[0.6, 0.4], // d0
    ]);
    let y = matrix(&[
        &[0.3, 0.2], // a0+b0
        &[0.2, 0.0], // a0+b1
        &[0.3, 0.0], // a1+b1
        &[0.4, 0.3], // a2+b2
        &[0.4, 0.3], // c0+c1
    ]);
    s.set_colocated_allocation(&x, &y).unwrap();
    run(&mut s, 400);
    let mut worst: f64 = 0.0;
    for (k, (a, b)) in pairs.iter().enumerate() {
        let got = s.colocated_received_fraction(a, b).unwrap();
        for (w, got) in got.into_iter().enumerate() {
            worst = worst.max((got - y.get(k, w)).abs());
        }
    }
    eprintln!(
        "after 400 rounds: pairs max |Y − received| = {worst:.4}, jobs alone max |X − received| = {:.4}",
        max_gap(&s)
    );
    assert!(worst <= 0.02, "pairs: max |Y − received| = {worst}");
    assert!(max_gap(&s) <= 0.02, "jobs alone: max |X − received| = {}", max_gap(&s));
}

/// Three jobs pairwise colocated at `Y = 0.5` each book every job's time exactly, yet any two of
/// the pairs share a job, so a round runs one pair at most: the best any schedule does is 1/3
/// each, and the rounds share the shortfall evenly.
#[test]
fn an_odd_cycle_of_pairs_is_shared_evenly() {
    let mut s = session(&[("v100", 3, 4)], Config::default());
    for id in ["a", "b", "c"] {
        add(&mut s, id, 1, &[1.0]);
    }
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a")] {
        s.add_colocation(a, b, &[[0.9, 0.9]]).unwrap();
    }
    s.set_colocated_allocation(&Matrix::zeros(3, 1), &matrix(&[&[0.5], &[0.5], &[0.5]])).unwrap();
    for _ in 0..300 {
        let r = round(&mut s);
        assert_eq!(r.placements.len(), 1, "one pair per round, every round");
    }
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a")] {
        let got = s.colocated_received_fraction(a, b).unwrap()[0];
        assert!(close(got, 1.0 / 3.0, 0.01), "{a}+{b}: {got}");
    }
    // The check says so before any round: 1 of the 1.5 asked, certified, the losses on pairs.
    let report = arbiter::mechanism::realizability(&s);
    assert!(report.checked && report.certified, "{report:?}");
    assert!(close(report.fraction.unwrap(), 2.0 / 3.0, 1e-9), "{report:?}");
    let lost: f64 = report.shortfall.iter().map(|l| l.requested - l.deliverable).sum();
    assert!(close(lost, 0.5, 1e-9) && report.shortfall.iter().all(|l| l.colocated_with.is_some()), "{report:?}");
    // Rounds that follow the decomposition do not run pairs: the check says why it is skipped.
    let mut c = session(&[("v100", 3, 4)], Config { mode: Mode::Configurations, ..Config::default() });
    for id in ["a", "b", "c"] {
        add(&mut c, id, 1, &[1.0]);
    }
    c.add_colocation("a", "b", &[[0.9, 0.9]]).unwrap();
    c.set_colocated_allocation(&Matrix::zeros(3, 1), &matrix(&[&[0.5]])).unwrap();
    let report = arbiter::mechanism::realizability(&c);
    assert!(!report.checked && report.reason.unwrap().contains("colocated pairs"));
}

#[test]
fn a_pair_occupies_scale_factor_gpus_of_one_server() {
    let mut s = session(&[("v100", 8, 4)], Config::default());
    add(&mut s, "big", 4, &[1.0]);
    add(&mut s, "p", 2, &[1.0]);
    add(&mut s, "q", 2, &[1.0]);
    s.add_colocation("p", "q", &[[0.9, 0.9]]).unwrap();
    s.set_colocated_allocation(&matrix(&[&[1.0], &[0.0], &[0.0]]), &matrix(&[&[1.0]])).unwrap();
    let r = round(&mut s);
    let pair = r.placements.iter().find(|p| matches!(p.jobs, Tenants::Pair(_))).expect("the pair runs");
    assert_eq!(pair.gpus.len(), 2);
    let servers: std::collections::BTreeSet<_> = pair.gpus.iter().map(|&g| s.cluster().gpu_server(g)).collect();
    assert_eq!(servers.len(), 1, "a 2-GPU pair lands on one server");
    assert_eq!(r.placements.len(), 2);
}

#[test]
fn ideal_mode_grants_x_and_y_exactly() {
    let mut s = session(&[("v100", 2, 2), ("k80", 2, 2)], Config { mode: Mode::Ideal, ..Config::default() });
    add(&mut s, "a", 1, &[3.0, 1.0]);
    add(&mut s, "b", 1, &[2.0, 1.0]);
    s.add_colocation("a", "b", &[[2.0, 1.5], [0.8, 0.6]]).unwrap();
    s.set_colocated_allocation(&matrix(&[&[0.25, 0.25], &[0.0, 0.5]]), &matrix(&[&[0.5, 0.0]])).unwrap();
    run(&mut s, 7);
    assert_eq!(s.colocated_received_fraction("a", "b").unwrap(), vec![0.5, 0.0]);
    assert_eq!(s.received_fraction("a").unwrap(), vec![0.25, 0.25]);
    assert_eq!(s.received_fraction("b").unwrap(), vec![0.0, 0.5]);
    // Σ T·X + Σ T_k·Y.
    assert!(close(s.effective_throughput("a").unwrap(), 3.0 * 0.25 + 0.25 + 2.0 * 0.5, 1e-12));
    assert!(close(s.effective_throughput("b").unwrap(), 0.5 + 1.5 * 0.5, 1e-12));
}

#[test]
fn without_pair_allocation_rounds_are_those_of_a_session_without_colocations() {
    let build = |pairs: bool| {
        let mut s = session(&[("v100", 3, 2), ("k80", 2, 2)], Config::default());
        for (m, sf) in [1, 1, 2, 1, 2].into_iter().enumerate() {
            add(&mut s, &format!("j{m}"), sf, &[1.0 + m as f64, 1.0]);
        }
        if pairs {
            s.add_colocation("j0", "j1", &[[0.9, 0.9], [0.5, 0.5]]).unwrap();
            s.add_colocation("j2", "j4", &[[0.9, 0.9], [0.5, 0.5]]).unwrap();
        }
        let x = matrix(&[&[0.5, 0.2], &[0.4, 0.3], &[0.3, 0.4], &[0.6, 0.0], &[0.2, 0.3]]);
        s.set_allocation(&x).unwrap();
        s
    };
    let (mut plain, mut shared) = (build(false), build(true));
    for _ in 0..50 {
        assert_eq!(round(&mut plain), round(&mut shared));
    }
}

#[test]
fn removing_a_job_drops_its_colocations_and_makes_the_allocation_stale() {
    let mut s = session(&[("v100", 2, 2)], Config::default());
    for id in ["a", "b", "c"] {
        add(&mut s, id, 1, &[1.0]);
    }
    s.add_colocation("a", "b", &[[0.8, 0.8]]).unwrap();
    s.add_colocation("b", "c", &[[0.8, 0.8]]).unwrap();
    s.add_colocation("a", "c", &[[0.8, 0.8]]).unwrap();
    s.set_colocated_allocation(&matrix(&[&[0.0], &[0.0], &[0.5]]), &matrix(&[&[0.5], &[0.5], &[0.0]])).unwrap();
    assert!(!s.is_stale());
    round(&mut s);
    s.remove_job("b").unwrap();
    assert!(s.is_stale());
    let left: Vec<[String; 2]> = s.colocations().map(|[a, b]| [a.to_string(), b.to_string()]).collect();
    assert_eq!(left, vec![["a".to_string(), "c".to_string()]]);
    assert_eq!(s.colocated_allocation("a", "b").unwrap_err().code, ErrorCode::UnknownJob);
    assert_eq!(s.colocated_allocation("a", "c").unwrap(), &[0.0]);
    // A new colocation of active jobs also makes the allocation stale.
    s.set_allocation(&matrix(&[&[0.5], &[0.5]])).unwrap();
    s.add_colocation("c", "a", &[[0.7, 0.6]]).unwrap();
    assert!(s.is_stale());
    assert_eq!(s.num_colocations(), 1, "the same pair again replaces its throughputs");
    assert_eq!(s.colocated_throughput("a", "c").unwrap(), vec![[0.6, 0.7]]);
}

#[test]
fn bad_colocations_and_pair_allocations_are_refused() {
    let mut s = session(&[("v100", 2, 2), ("k80", 2, 2)], Config::default());
    add(&mut s, "a", 1, &[1.0, 1.0]);
    add(&mut s, "b", 1, &[1.0, 1.0]);
    add(&mut s, "big", 2, &[1.0, 1.0]);
    let ok = [[0.5, 0.5], [0.5, 0.5]];
    let code = |r: Result<(), arbiter::ArbiterError>| r.unwrap_err();
    let e = code(s.add_colocation("a", "ghost", &ok));
    assert_eq!((e.code, e.field.as_deref()), (ErrorCode::UnknownJob, Some("colocation.jobs[1]")));
    assert_eq!(code(s.add_colocation("a", "a", &ok)).code, ErrorCode::InvalidColocation);
    assert_eq!(code(s.add_colocation("a", "big", &ok)).code, ErrorCode::InvalidColocation);
    assert_eq!(code(s.add_colocation("a", "b", &ok[..1])).code, ErrorCode::MalformedRequest);
    for bad in [f64::NAN, -1.0, f64::INFINITY] {
        let e = code(s.add_colocation("a", "b", &[[0.5, 0.5], [0.5, bad]]));
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidNumber, Some("colocation.throughput.k80[1]")));
    }
    assert_eq!(s.num_colocations(), 0, "nothing added by a refusal");
    s.add_colocation("a", "b", &ok).unwrap();
    let x = Matrix::zeros(3, 2);
    // a's time alone plus its pair's exceeds 1.
    let e =
        code(s.set_colocated_allocation(&matrix(&[&[0.5, 0.0], &[0.0, 0.0], &[0.0, 0.0]]), &matrix(&[&[0.3, 0.3]])));
    assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidNumber, Some("allocation.a")));
    assert_eq!(code(s.set_colocated_allocation(&x, &matrix(&[&[1.5, 0.0]]))).code, ErrorCode::InvalidNumber);
    assert_eq!(code(s.set_colocated_allocation(&x, &Matrix::zeros(2, 2))).code, ErrorCode::MalformedRequest);
    assert_eq!(code(s.remove_colocation("a", "big")).code, ErrorCode::InvalidColocation);
    let e = code(s.report_colocated_progress("a", "b", 0, [1.0, f64::NAN], [1.0, 1.0]));
    assert_eq!(e.code, ErrorCode::InvalidNumber);
    assert_eq!(
        code(s.report_colocated_progress("a", "b", 5, [1.0, 1.0], [1.0, 1.0])).code,
        ErrorCode::UnknownWorkerType
    );
    s.remove_colocation("b", "a").unwrap();
    assert_eq!(s.num_colocations(), 0);
}

#[test]
fn colocated_progress_counts_steps_and_smooths_the_paired_throughput() {
    let mut s = session(&[("v100", 1, 1)], Config { throughput_smoothing: 0.5, ..Config::default() });
    add(&mut s, "a", 1, &[1.0]);
    add(&mut s, "b", 1, &[1.0]);
    s.add_colocation("a", "b", &[[0.8, 0.6]]).unwrap();
    s.set_allocation(&matrix(&[&[0.5], &[0.5]])).unwrap();
    s.report_colocated_progress("b", "a", 0, [10.0, 20.0], [0.6, 0.8]).unwrap();
    assert!(!s.is_stale(), "no change beyond the threshold");
    assert_eq!(s.job("a").unwrap().steps_remaining, Some(1e6 - 20.0));
    assert_eq!(s.job("b").unwrap().steps_remaining, Some(1e6 - 10.0));
    s.report_colocated_progress("a", "b", 0, [0.0, 0.0], [0.4, 0.6]).unwrap();
    let [t] = s.colocated_throughput("a", "b").unwrap()[..] else { panic!("one type") };
    assert!(close(t[0], 0.6, 1e-12) && close(t[1], 0.6, 1e-12), "{t:?}");
    assert!(s.is_stale(), "a moved by 25%");
    assert_eq!(s.throughput("a").unwrap(), &[1.0], "the throughput alone is left as it is");
}

/// A session solved by max-min fairness with space sharing: on one GPU, two jobs that keep 80%
/// of their speed together are better off paired all the time than time-shared (0.8 > 0.5).
#[test]
fn max_min_fairness_solves_pairs_and_the_rounds_run_them() {
    let mut s = session(&[("v100", 1, 1)], Config::default());
    add(&mut s, "a", 1, &[1.0]);
    add(&mut s, "b", 1, &[1.0]);
    s.add_colocation("a", "b", &[[0.8, 0.8]]).unwrap();
    let r = round(&mut s);
    assert!(r.allocation_recomputed);
    let y = s.colocated_allocation("a", "b").unwrap()[0];
    assert!(y > 0.99, "Y = {y}");
    assert_eq!(r.placements[0].jobs, Tenants::Pair(["a".into(), "b".into()]));
    for id in ["a", "b"] {
        let t = s.effective_throughput(id).unwrap();
        assert!(close(t, 0.8, 1e-6), "{id}: {t}");
    }
    run(&mut s, 20);
    assert!(close(s.colocated_received_fraction("a", "b").unwrap()[0], 1.0, 1e-9));
}

/// With a colocation that is worse than time sharing (0.3 + 0.3 < 1), the policy gives the pair
/// nothing and the rounds time-share.
#[test]
fn a_dominated_pair_gets_no_time() {
    let mut s = session(&[("v100", 1, 1)], Config::default());
    add(&mut s, "a", 1, &[1.0]);
    add(&mut s, "b", 1, &[1.0]);
    s.add_colocation("a", "b", &[[0.3, 0.3]]).unwrap();
    run(&mut s, 10);
    assert!(s.colocated_allocation("a", "b").unwrap()[0] < 1e-6);
    assert!(close(s.received_fraction("a").unwrap()[0], 0.5, 1e-9));
}

/// The instance of `an_infeasible_answer_is_refused_not_returned` (tests/solver/numerics.rs) as a
/// session: a job measured at 10⁻³⁰ steps/s alone and 60 in a pair. Its solve either refuses the
/// answer (`solver_failed`, saying why) or gives one within every job's time and every type's
/// GPUs, as a request's does; an answer over the GPUs is never installed rescaled.
#[test]
fn a_session_refuses_an_infeasible_answer_as_a_request_does() {
    let types = [("t0", 4, 4), ("t1", 4, 4), ("t2", 0, 4)].map(|(n, c, p)| worker_type(n, c, p));
    let mut s = Session::new(PolicyKind::MaxMinFairnessWaterFilling, true, types.to_vec(), Config::default())
        .expect("a valid cluster");
    add(&mut s, "j0", 4, &[0.0, 41.9, 0.0]);
    add(&mut s, "j1", 4, &[84.2, 3.24e-5, 69.2]);
    add(&mut s, "j3", 1, &[1e-30, 0.0, 1.6e-6]);
    add(&mut s, "j7", 1, &[70.3, 44.8, 3.1e-9]);
    s.add_colocation("j3", "j7", &[[59.96, 84.08], [0.0, 0.0], [51.9, 1e30]]).unwrap();
    s.add_colocation("j1", "j0", &[[0.0, 0.0], [89.2, 1e-30], [97.5, 85.2]]).unwrap();
    match s.solve_colocated_allocation(arbiter::lp::Backend::default()) {
        Err(e) => {
            assert_eq!(e.code, ErrorCode::SolverFailed, "{}", e.to_json());
            assert!(e.message.contains("infeasible"), "{}", e.to_json());
        }
        Ok(solved) => {
            let (x, y) = (&solved.allocation, &solved.colocated);
            let pairs = [(2, 3, 0), (1, 0, 1)];
            for m in 0..4 {
                let paired: f64 =
                    pairs.iter().filter(|p| p.0 == m || p.1 == m).map(|p| y.row(p.2).iter().sum::<f64>()).sum();
                let time = x.row(m).iter().sum::<f64>() + paired;
                assert!(time <= 1.0 + 1e-6, "job {m} runs {time} of the time");
            }
            let sf = [4.0, 4.0, 1.0, 1.0];
            for (w, count) in [4.0, 4.0, 0.0].into_iter().enumerate() {
                let alone: f64 = (0..4).map(|m| sf[m] * x.get(m, w)).sum();
                let used = alone + pairs.iter().map(|p| sf[p.0] * y.get(p.2, w)).sum::<f64>();
                assert!(used <= count * (1.0 + 1e-6) + 1e-6, "type {w}: {used} GPUs of {count}");
            }
        }
    }
}

// ---- invariants under random sessions with pairs ----

#[derive(Debug, Clone)]
enum Event {
    Round,
    Remove(usize),
    Fail(usize),
    Return(usize),
    Allocate(u64),
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        8 => Just(Event::Round),
        1 => any::<usize>().prop_map(Event::Remove),
        1 => any::<usize>().prop_map(Event::Fail),
        1 => any::<usize>().prop_map(Event::Return),
        1 => any::<u64>().prop_map(Event::Allocate),
    ]
}

/// SplitMix64 for the allocations drawn inside a case.
fn unit(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

/// Any X and Y with every job's time alone and in pairs summing to at most 1 (capacity or not).
fn random_allocation(s: &Session, seed: u64) -> (Matrix, Matrix) {
    let mut state = seed;
    let types = s.cluster().num_types();
    let ids: Vec<String> = s.job_ids().map(|j| j.to_string()).collect();
    let pairs: Vec<[String; 2]> = s.colocations().map(|[a, b]| [a.to_string(), b.to_string()]).collect();
    let mut x = Matrix::zeros(ids.len(), types);
    let mut y = Matrix::zeros(pairs.len(), types);
    for m in 0..ids.len() {
        for w in 0..types {
            x.set(m, w, unit(&mut state));
        }
    }
    for k in 0..pairs.len() {
        for w in 0..types {
            y.set(k, w, unit(&mut state));
        }
    }
    let mut busy: Vec<f64> = (0..ids.len()).map(|m| x.row(m).iter().sum()).collect();
    for (k, [a, b]) in pairs.iter().enumerate() {
        let t: f64 = y.row(k).iter().sum();
        for id in [a, b] {
            busy[ids.iter().position(|i| i == id).unwrap()] += t;
        }
    }
    let scale: Vec<f64> = busy.iter().map(|b| b.max(1.0)).collect();
    for (m, &sm) in scale.iter().enumerate() {
        x.row_mut(m).iter_mut().for_each(|v| *v /= sm);
    }
    for (k, [a, b]) in pairs.iter().enumerate() {
        let sa = scale[ids.iter().position(|i| i == a).unwrap()];
        let sb = scale[ids.iter().position(|i| i == b).unwrap()];
        y.row_mut(k).iter_mut().for_each(|v| *v /= sa.max(sb));
    }
    (x, y)
}

/// `effective_throughput` against `Σ_w T·X + Σ_{k∋m} Σ_w T_k·Y` over `colocations()`.
fn check_effective_throughputs(s: &Session) {
    for id in s.job_ids() {
        let dot = |t: &[f64], x: &[f64]| t.iter().zip(x).map(|(a, b)| a * b).sum::<f64>();
        let mut want = dot(s.throughput(id).unwrap(), &s.allocation(id).unwrap());
        for [a, b] in s.colocations() {
            let other = if a == id {
                b
            } else if b == id {
                a
            } else {
                continue;
            };
            let mine: Vec<f64> = s.colocated_throughput(id, other).unwrap().iter().map(|t| t[0]).collect();
            want += dot(&mine, s.colocated_allocation(id, other).unwrap());
        }
        let got = s.effective_throughput(id).unwrap();
        assert!(close(got, want, 1e-9 * want.max(1.0)), "{id}: {got} vs {want}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn rounds_with_pairs_keep_every_invariant(
        counts in prop::collection::vec((1u32..9, 1u32..5), 1..3),
        jobs in prop::collection::vec((prop::sample::select(vec![1u32, 1, 1, 2, 4]), prop::collection::vec(prop_oneof![Just(0.0), 0.5f64..4.0], 2)), 2..10),
        links in prop::collection::vec((any::<usize>(), any::<usize>(), prop::collection::vec(prop_oneof![Just(0.0), 0.1f64..3.0], 4)), 0..20),
        work_conserving in any::<bool>(),
        seed in any::<u64>(),
        events in prop::collection::vec(event(), 1..40),
    ) {
        let names = ["v100", "k80"];
        let types: Vec<(&str, u32, u32)> = counts.iter().enumerate().map(|(w, &(c, per))| (names[w], c, per)).collect();
        let mut s = session(&types, Config { work_conserving, ..Config::default() });
        for (m, (sf, t)) in jobs.iter().enumerate() {
            let mut row: Vec<f64> = t[..types.len()].to_vec();
            if row.iter().all(|&v| v == 0.0) {
                row[0] = 1.0;
            }
            add(&mut s, &format!("j{m}"), *sf, &row);
        }
        for (a, b, t) in &links {
            let (a, b) = (a % jobs.len(), b % jobs.len());
            if a == b || jobs[a].0 != jobs[b].0 {
                continue;
            }
            let throughput: Vec<[f64; 2]> = (0..types.len()).map(|w| [t[2 * w], t[2 * w + 1]]).collect();
            s.add_colocation(&format!("j{a}"), &format!("j{b}"), &throughput).unwrap();
        }
        let (x, y) = random_allocation(&s, seed);
        s.set_colocated_allocation(&x, &y).unwrap();
        let gpus = s.cluster().num_gpus();
        for e in events {
            match e {
                Event::Round => {
                    check_effective_throughputs(&s);
                    if s.is_stale() {
                        let (x, y) = random_allocation(&s, seed ^ s.rounds());
                        s.set_colocated_allocation(&x, &y).unwrap();
                    }
                    round(&mut s);
                }
                Event::Remove(i) if s.num_jobs() > 0 => {
                    let id = s.job_ids().nth(i % s.num_jobs()).unwrap().to_string();
                    s.remove_job(&id).unwrap();
                    prop_assert!(s.colocations().all(|p| p.iter().all(|j| j.as_ref() != id)));
                }
                Event::Fail(g) if gpus > 0 => {
                    s.set_health(arbiter::mechanism::Worker::Gpu(arbiter::mechanism::GpuId((g % gpus) as u32)), false).unwrap();
                }
                Event::Return(g) if gpus > 0 => {
                    s.set_health(arbiter::mechanism::Worker::Gpu(arbiter::mechanism::GpuId((g % gpus) as u32)), true).unwrap();
                }
                Event::Allocate(seed) => {
                    let (x, y) = random_allocation(&s, seed);
                    s.set_colocated_allocation(&x, &y).unwrap();
                }
                _ => {}
            }
        }
    }
}
