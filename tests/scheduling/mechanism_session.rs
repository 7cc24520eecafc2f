//! The session's behaviour event by event: GPU ids, consolidation, lease renewal, failures,
//! recomputation and its interval, progress reports, deficits across resets, and refusals.

use crate::mechanism_support::*;
use arbiter::mechanism::{Config, GpuId, LeaseChange, Session, Worker};
use arbiter::{ErrorCode, PolicyKind};
use std::collections::BTreeSet;

fn session(types: &[(&str, u32, u32)], policy: PolicyKind, config: Config) -> Session {
    let types = types.iter().map(|&(name, count, per_server)| worker_type(name, count, per_server)).collect();
    Session::new(policy, true, types, config).unwrap()
}

/// One worker type of `count` GPUs on servers of `per_server`, jobs of the given scale factors.
fn one_type(count: u32, per_server: u32, scale_factors: &[u32]) -> Session {
    let mut s = session(&[("v100", count, per_server)], PolicyKind::MaxMinFairness, Config::default());
    for (m, &sf) in scale_factors.iter().enumerate() {
        s.add_job(job(&format!("j{m}"), sf), &[1.0]).unwrap();
    }
    s
}

fn servers_of(session: &Session, gpus: &[GpuId]) -> BTreeSet<u32> {
    gpus.iter().map(|&g| session.cluster().gpu_server(g).0).collect()
}

#[test]
fn gpu_ids_are_unique_and_name_type_server_and_slot() {
    let s = session(&[("v100", 10, 4), ("k80", 3, 8)], PolicyKind::MaxMinFairness, Config::default());
    let c = s.cluster();
    let names: Vec<String> = (0..c.num_gpus() as u32).map(|g| c.gpu_name(GpuId(g))).collect();
    let unique: BTreeSet<_> = names.iter().collect();
    assert_eq!(unique.len(), 13);
    assert_eq!(names[0], "v100/0/0");
    assert_eq!(names[9], "v100/2/1", "the last server holds the rest");
    assert_eq!(names[10], "k80/0/0");
    assert_eq!(c.num_servers(), 4);
    for (g, name) in names.iter().enumerate() {
        assert_eq!(c.worker(name).unwrap(), Worker::Gpu(GpuId(g as u32)));
    }
    let Ok(Worker::Server(server)) = c.worker("v100/2") else {
        panic!("v100/2 is a server");
    };
    assert_eq!(c.server_name(server), "v100/2");
    assert_eq!(c.server_gpus(server).count(), 2);
    for bad in ["a100/0/0", "v100/3", "v100/2/2", "v100/x", "v100/0/0/0", ""] {
        assert!(c.worker(bad).is_err(), "{bad:?} accepted");
    }
    assert_eq!(c.worker("a100/0").unwrap_err().code, ErrorCode::UnknownWorkerType);
}

#[test]
fn four_and_eight_gpu_jobs_land_on_whole_servers() {
    // 16 GPUs in servers of 4; everything fits at once.
    let mut s = one_type(16, 4, &[1, 4, 2, 8, 1]);
    s.set_allocation(&matrix(&[&[1.0], &[1.0], &[1.0], &[1.0], &[1.0]])).unwrap();
    let r = round(&mut s);
    for jr in &r.jobs {
        let p = &r.placements[jr.placement.expect("everything fits")];
        let want = p.gpus.len().div_ceil(4);
        assert_eq!(servers_of(&s, &p.gpus).len(), want, "{}", jr.job);
    }
}

#[test]
fn a_new_four_gpu_job_takes_a_free_server_rather_than_the_gaps_between_renewed_jobs() {
    // Round 0: two 1-GPU jobs (packed on server 0 by best fit), and a 2-GPU job.
    let mut s = one_type(12, 4, &[1, 1, 2]);
    s.set_allocation(&matrix(&[&[1.0], &[1.0], &[1.0]])).unwrap();
    round(&mut s);
    // A 4-GPU job arrives; the allocation is set again with the old jobs' leases intact.
    s.add_job(job("big", 4), &[1.0]).unwrap();
    s.set_allocation(&matrix(&[&[1.0], &[1.0], &[1.0], &[1.0]])).unwrap();
    let r = round(&mut s);
    let used_before: BTreeSet<u32> =
        r.jobs[..3].iter().flat_map(|j| servers_of(&s, &r.placements[j.placement.unwrap()].gpus)).collect();
    assert!(r.jobs[..3].iter().all(|j| j.lease == LeaseChange::Renewed));
    let big = &r.placements[r.jobs[3].placement.unwrap()];
    let servers = servers_of(&s, &big.gpus);
    assert_eq!(servers.len(), 1);
    assert!(servers.is_disjoint(&used_before));
}

#[test]
fn a_job_that_stays_on_its_type_keeps_its_gpus() {
    let mut s = one_type(8, 4, &[2, 1, 4]);
    s.set_allocation(&matrix(&[&[1.0], &[1.0], &[1.0]])).unwrap();
    let first = round(&mut s);
    for _ in 0..10 {
        let r = round(&mut s);
        for (a, b) in first.jobs.iter().zip(&r.jobs) {
            assert_eq!(b.lease, LeaseChange::Renewed);
            assert_eq!(first.placements[a.placement.unwrap()].gpus, r.placements[b.placement.unwrap()].gpus);
        }
    }
}

#[test]
fn time_shared_jobs_are_started_and_preempted() {
    // Two 1-GPU jobs sharing one GPU half and half.
    let mut s = one_type(1, 1, &[1, 1]);
    s.set_allocation(&matrix(&[&[0.5], &[0.5]])).unwrap();
    let mut changes = Vec::new();
    for _ in 0..4 {
        let r = round(&mut s);
        changes.push((r.jobs[0].lease, r.jobs[1].lease));
    }
    use LeaseChange::*;
    assert_eq!(changes, vec![(Started, Waiting), (Preempted, Started), (Started, Preempted), (Preempted, Started)]);
}

#[test]
fn failed_gpus_are_never_used_and_their_jobs_move() {
    let mut s = one_type(8, 4, &[2, 2]);
    s.set_allocation(&matrix(&[&[1.0], &[1.0]])).unwrap();
    let r = round(&mut s);
    let held = r.placements[r.jobs[0].placement.unwrap()].gpus[0];
    let name = s.cluster().gpu_name(held);
    s.worker_failed(&name).unwrap();
    assert_eq!(s.cluster().healthy_count(0), 7);
    assert!(s.is_stale());
    let r = round(&mut s);
    assert!(r.allocation_recomputed);
    assert_eq!(r.jobs[0].lease, LeaseChange::Moved);
    assert_eq!(r.jobs[1].lease, LeaseChange::Renewed);
    assert!(r.on_gpu(held).is_none());

    // A whole server fails: the jobs fit in the other one.
    s.worker_returned(&name).unwrap();
    s.worker_failed("v100/0").unwrap();
    assert_eq!(s.cluster().healthy_count(0), 4);
    let r = round(&mut s);
    for p in &r.placements {
        assert!(p.gpus.iter().all(|&g| s.cluster().gpu_server(g).0 == 1));
    }
    // Everything fails: nobody runs, nothing breaks.
    s.worker_failed("v100/1").unwrap();
    let r = round(&mut s);
    assert!(r.placements.is_empty());
    assert!(r.jobs.iter().all(|j| j.lease == LeaseChange::Preempted));
    // And everything returns.
    s.set_health(Worker::Server(arbiter::mechanism::ServerId(0)), true).unwrap();
    s.worker_returned("v100/1").unwrap();
    let r = round(&mut s);
    assert_eq!(r.placements.len(), 2);
    assert!(s.set_health(Worker::Gpu(GpuId(8)), false).is_err());
}

#[test]
fn a_job_larger_than_every_type_is_reported_and_never_placed() {
    // The contract lets the LP give a fraction to a job of 4 GPUs on a cluster of 1 GPU per type.
    let mut s = session(&[("v100", 1, 4), ("k80", 1, 4)], PolicyKind::MaxMinFairness, Config::default());
    s.add_job(job("wide", 4), &[2.0, 1.0]).unwrap();
    s.add_job(job("narrow", 1), &[2.0, 1.0]).unwrap();
    for _ in 0..20 {
        let r = round(&mut s);
        assert!(r.jobs[0].unplaceable);
        assert_eq!(r.jobs[0].lease, LeaseChange::Waiting);
        assert!(!r.jobs[1].unplaceable);
    }
    assert!(s.allocation("wide").unwrap().iter().sum::<f64>() > 0.0);
    assert_eq!(s.unplaceable_types("wide").unwrap().len(), 2);
    assert!(s.total_received("narrow").unwrap().iter().sum::<f64>() > 0.0);
}

#[test]
fn the_allocation_is_recomputed_when_jobs_change_but_not_more_often_than_the_interval() {
    let config = Config { min_solve_interval: 3.0 * 360.0, ..Config::default() };
    let mut s = session(&[("v100", 2, 2)], PolicyKind::MaxMinFairness, config);
    s.add_job(job("a", 1), &[1.0]).unwrap();
    let r = round(&mut s);
    assert!(r.allocation_recomputed);
    assert!((s.allocation("a").unwrap()[0] - 1.0).abs() < 1e-6);
    assert!(!round(&mut s).allocation_recomputed, "nothing changed");

    s.add_job(job("b", 2), &[1.0]).unwrap();
    assert!(s.is_stale());
    // The last solve was at t = 0, the next is due at t = 1080 (the fourth round): "b" waits
    // through the third with no allocation.
    assert_eq!(s.time(), 720.0);
    let r = round(&mut s);
    assert!(!r.allocation_recomputed);
    assert_eq!(r.jobs[1].lease, LeaseChange::Waiting);
    assert_eq!(*s.allocation("b").unwrap(), [0.0]);
    let r = round(&mut s);
    assert!(r.allocation_recomputed);
    assert!(s.allocation("b").unwrap()[0] > 0.0);
    assert!(!s.is_stale());
}

#[test]
fn a_removed_job_frees_its_gpus_at_once() {
    let mut s = one_type(2, 2, &[2, 2]);
    s.set_allocation(&matrix(&[&[0.5], &[0.5]])).unwrap();
    let r = round(&mut s);
    let running = if r.jobs[0].placement.is_some() { "j0" } else { "j1" };
    let other = if running == "j0" { "j1" } else { "j0" };
    let removed = s.remove_job(running).unwrap();
    assert_eq!(removed.id, running);
    assert_eq!(s.num_jobs(), 1);
    let r = round(&mut s);
    assert_eq!(r.jobs.len(), 1);
    assert_eq!(&*r.jobs[0].job, other);
    assert_eq!(r.jobs[0].lease, LeaseChange::Started);
    assert!(s.remove_job(running).is_err());
}

#[test]
fn progress_reports_fold_throughput_in_as_a_moving_average() {
    let mut s = one_type(1, 1, &[1]);
    s.report_progress("j0", 0, 400.0, 1.05).unwrap();
    assert!((s.throughput("j0").unwrap()[0] - 1.025).abs() < 1e-12);
    assert_eq!(s.job("j0").unwrap().steps_remaining, Some(1e6 - 400.0));
    round(&mut s);
    assert!(!s.is_stale());
    // A 5% move is below the default 10% threshold; a doubling is not.
    s.report_progress("j0", 0, 1e7, 1.1).unwrap();
    assert!(!s.is_stale());
    assert_eq!(s.job("j0").unwrap().steps_remaining, Some(0.0));
    s.report_progress("j0", 0, 0.0, 4.0).unwrap();
    assert!(s.is_stale());

    let err = s.report_progress("nope", 0, 1.0, 1.0).unwrap_err();
    assert!(err.message.contains("nope"));
    assert_eq!(s.report_progress("j0", 3, 1.0, 1.0).unwrap_err().code, ErrorCode::UnknownWorkerType);
    assert_eq!(s.report_progress("j0", 0, f64::NAN, 1.0).unwrap_err().code, ErrorCode::InvalidNumber);
    assert_eq!(s.report_progress("j0", 0, 1.0, -1.0).unwrap_err().code, ErrorCode::InvalidNumber);
}

/// A report numbered at or below the job's highest number so far is not new (a retry); the numbers
/// are per job.
#[test]
fn only_a_report_numbered_above_the_last_is_new() {
    let mut s = one_type(2, 2, &[1, 1]);
    assert_eq!(s.report_sequence("j0").unwrap(), None);
    assert!(s.new_report("j0", 0).unwrap());
    assert!(!s.new_report("j0", 0).unwrap());
    assert!(s.new_report("j0", 5).unwrap());
    assert!(!s.new_report("j0", 4).unwrap());
    assert!(!s.new_report("j0", 5).unwrap());
    assert_eq!(s.report_sequence("j0").unwrap(), Some(5));
    assert!(s.new_report("j1", 1).unwrap(), "each job has its own numbers");
    assert_eq!(s.new_report("nope", 1).unwrap_err().code, ErrorCode::UnknownJob);
}

#[test]
fn throughput_updates_make_the_allocation_stale() {
    let mut s = session(&[("v100", 1, 1), ("k80", 1, 1)], PolicyKind::MaxMinFairness, Config::default());
    s.add_job(job("a", 1), &[4.0, 1.0]).unwrap();
    s.add_job(job("b", 1), &[2.0, 1.0]).unwrap();
    round(&mut s);
    s.update_throughput("a", &[4.0, 3.0]).unwrap();
    assert!(s.is_stale());
    assert!(round(&mut s).allocation_recomputed);
    s.update_throughput_matrix(&matrix(&[&[1.0, 1.0], &[1.0, 1.0]])).unwrap();
    assert_eq!(s.throughput("b").unwrap(), &[1.0, 1.0]);
    assert!(s.update_throughput("a", &[0.0, 0.0]).is_err());
    assert!(s.update_throughput("a", &[1.0]).is_err());
    assert!(s.update_throughput_matrix(&matrix(&[&[1.0, 1.0], &[1.0, f64::INFINITY]])).is_err());
    assert_eq!(s.throughput("b").unwrap(), &[1.0, 1.0], "all or nothing");
}

#[test]
fn deficits_are_carried_across_a_reset_within_their_bound() {
    // Three 1-GPU jobs on one GPU at a third each; after 4 rounds someone is owed time.
    let mut s = one_type(1, 1, &[1, 1, 1]);
    let third = 1.0 / 3.0;
    s.set_allocation(&matrix(&[&[third], &[third], &[third]])).unwrap();
    run(&mut s, 4);
    let owed: Vec<f64> = ["j0", "j1", "j2"].iter().map(|id| s.deficit(id).unwrap()[0]).collect();
    assert!((owed.iter().sum::<f64>()).abs() < 1e-6, "{owed:?}");
    // The same allocation again: received time resets, what was owed is carried.
    s.set_allocation(&matrix(&[&[third], &[third], &[third]])).unwrap();
    assert_eq!(s.elapsed_since_reset(), 0.0);
    for (id, before) in ["j0", "j1", "j2"].iter().zip(&owed) {
        assert_eq!(s.received(id).unwrap(), &[0.0]);
        assert!((s.deficit(id).unwrap()[0] - before).abs() < 1e-6);
    }
    // A most-owed job goes first after the reset, although none has received anything since.
    let most = owed.iter().copied().fold(f64::MIN, f64::max);
    for (id, o) in ["j0", "j1", "j2"].iter().zip(&owed) {
        // The priority: seconds behind at the end of the round if the job does not run.
        assert!((s.priorities(id).unwrap()[0] - (o + third * 360.0)).abs() < 1e-6);
    }
    let r = round(&mut s);
    let ran: Vec<usize> = (0..3).filter(|&m| r.jobs[m].lease.runs()).collect();
    assert_eq!(ran.len(), 1);
    assert_eq!(owed[ran[0]], most, "{owed:?}");
    assert!(owed.iter().any(|&o| o < most), "the test needs someone owed less");
    let after = s.priorities(&format!("j{}", ran[0])).unwrap()[0];
    assert!((after - (most + third * 360.0 - 360.0 + third * 360.0)).abs() < 1e-6, "{after}");

    // Bounded by `max_deficit_rounds` rounds of time.
    let bound = Config::default().max_deficit_rounds * 360.0;
    let mut s = one_type(1, 1, &[1, 1]);
    s.set_allocation(&matrix(&[&[1.0], &[1.0]])).unwrap();
    run(&mut s, 20);
    s.set_allocation(&matrix(&[&[0.5], &[0.5]])).unwrap();
    for id in ["j0", "j1"] {
        assert!(s.deficit(id).unwrap()[0].abs() <= bound + 1e-9);
    }
}

#[test]
fn a_work_conserving_session_fills_gpus_the_allocation_leaves_unused() {
    for (work_conserving, expected) in [(false, 0.25), (true, 1.0)] {
        let config = Config { work_conserving, ..Config::default() };
        let mut s = session(&[("v100", 1, 1)], PolicyKind::MaxMinFairness, config);
        s.add_job(job("a", 1), &[1.0]).unwrap();
        s.set_allocation(&matrix(&[&[0.25]])).unwrap();
        run(&mut s, 40);
        let got = s.received_fraction("a").unwrap()[0];
        assert!((got - expected).abs() < 1e-9, "{work_conserving}: {got}");
    }
}

/// Work-conserving rounds also fill a type the allocation leaves out, as Gavel's scheduler fills
/// idle GPUs: two jobs share one V100 half and half; the K80 beside it is allocated to nobody, so
/// only the work-conserving session runs the waiting job there, every round.
#[test]
fn a_work_conserving_session_fills_types_the_allocation_leaves_out() {
    for (work_conserving, expected_k80) in [(false, 0.0), (true, 1.0)] {
        let config = Config { work_conserving, ..Config::default() };
        let mut s = session(&[("v100", 1, 1), ("k80", 1, 1)], PolicyKind::MaxMinFairness, config);
        s.add_job(job("a", 1), &[2.0, 1.0]).unwrap();
        s.add_job(job("b", 1), &[2.0, 1.0]).unwrap();
        s.set_allocation(&matrix(&[&[0.5, 0.0], &[0.5, 0.0]])).unwrap();
        run(&mut s, 40);
        let k80: f64 = ["a", "b"].iter().map(|id| s.received_fraction(id).unwrap()[1]).sum();
        let v100: f64 = ["a", "b"].iter().map(|id| s.received_fraction(id).unwrap()[0]).sum();
        assert!((k80 - expected_k80).abs() < 1e-9, "{work_conserving}: K80 busy {k80}");
        assert!((v100 - 1.0).abs() < 1e-9, "{work_conserving}: V100 busy {v100}");
    }
}

#[test]
fn a_policy_failure_is_returned_and_changes_nothing() {
    let mut s = session(&[("v100", 2, 2)], PolicyKind::MaxMinFairnessWaterFilling, Config::default());
    s.add_job(job("a", 1), &[1.0]).unwrap();
    if PolicyKind::MaxMinFairnessWaterFilling.policy().is_some() {
        println!("skipped: water filling is available now, no unsupported policy left to try");
        return;
    }
    let err = s.next_round().unwrap_err();
    assert_eq!(err.code, ErrorCode::Unsupported);
    assert_eq!(s.time(), 0.0);
    assert_eq!(s.rounds(), 0);
    assert!(s.is_stale());
}

#[test]
fn bad_events_are_refused_with_the_contracts_errors() {
    let mut s = session(&[("v100", 4, 4), ("k80", 0, 4)], PolicyKind::MinMakespan, Config::default());
    s.add_job(job("a", 1), &[1.0, 0.0]).unwrap();
    let code = |r: arbiter::error::Result<()>| r.unwrap_err().code;
    let mut dup = job("a", 1);
    assert_eq!(code(s.add_job(dup.clone(), &[1.0, 0.0])), ErrorCode::DuplicateJobId);
    dup.id = "b".into();
    assert_eq!(code(s.add_job(job("", 1), &[1.0, 0.0])), ErrorCode::MissingField);
    assert_eq!(code(s.add_job(job("b", 0), &[1.0, 0.0])), ErrorCode::InvalidScaleFactor);
    assert_eq!(code(s.add_job(dup.clone(), &[1.0])), ErrorCode::MalformedRequest);
    assert_eq!(code(s.add_job(dup.clone(), &[f64::NAN, 0.0])), ErrorCode::InvalidNumber);
    assert_eq!(code(s.add_job(dup.clone(), &[0.0, 5.0])), ErrorCode::JobCannotRun, "k80 has no GPUs");
    let mut w = dup.clone();
    w.weight = 0.0;
    assert_eq!(code(s.add_job(w, &[1.0, 0.0])), ErrorCode::InvalidNumber);
    let mut no_steps = dup.clone();
    no_steps.steps_remaining = None;
    assert_eq!(code(s.add_job(no_steps, &[1.0, 0.0])), ErrorCode::MissingField);
    assert_eq!(s.num_jobs(), 1, "refused jobs leave no trace");

    assert!(s.allocation("zz").is_err());
    assert!(s.worker_failed("v100/9").is_err());
    assert!(s.set_allocation(&matrix(&[&[1.0]])).is_err(), "shape");
    assert!(s.set_allocation(&matrix(&[&[0.7, 0.7]])).is_err(), "row above 1");
    assert!(s.set_allocation(&matrix(&[&[-0.1, 0.0]])).is_err());

    let bad = Config { round_seconds: 0.0, ..Config::default() };
    let err = Session::new(PolicyKind::MaxMinFairness, true, vec![worker_type("v100", 1, 1)], bad).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("round_seconds"));
    assert!(Session::new(PolicyKind::MaxMinFairness, true, vec![worker_type("v100", 1, 0)], Config::default()).is_err());
    assert!(Session::new(PolicyKind::MaxMinFairness, true, vec![], Config::default()).is_err());
    let huge = vec![worker_type("v100", u32::MAX, 8)];
    let err = Session::new(PolicyKind::MaxMinFairness, true, huge, Config::default()).unwrap_err();
    assert_eq!(err.code, ErrorCode::Unsupported);
    // 2^20 GPUs in all, and no more: one GPU past it, split over two types, is refused.
    let most = vec![worker_type("v100", 1 << 19, 8), worker_type("k80", 1 << 19, 8)];
    assert!(Session::new(PolicyKind::MaxMinFairness, true, most, Config::default()).is_ok());
    let past = vec![worker_type("v100", 1 << 19, 8), worker_type("k80", (1 << 19) + 1, 1)];
    let err = Session::new(PolicyKind::MaxMinFairness, true, past, Config::default()).unwrap_err();
    assert_eq!(err.code, ErrorCode::Unsupported, "{err}");
}

#[test]
fn an_empty_session_runs_empty_rounds() {
    let mut s = session(&[("v100", 4, 4)], PolicyKind::MaxMinFairness, Config::default());
    let r = round(&mut s);
    assert!(r.placements.is_empty() && r.jobs.is_empty());
    assert_eq!(s.time(), 360.0);
}

#[test]
fn a_composed_session_profiles_a_job_on_each_estimated_type_then_returns_it_to_its_fastest() {
    // v100 (measured, fastest) and k80 and p100 (estimates): under LAS the job runs one round on
    // k80, one on p100, then goes back to v100, though v100 had room all along.
    let types = vec![worker_type("v100", 2, 2), worker_type("k80", 2, 2), worker_type("p100", 2, 2)];
    let problem = arbiter::Problem::empty(PolicyKind::MaxMinFairness, true, types);
    let las = arbiter::scheduling::Composition::from_flags(None, None, Some("las"), None, None).unwrap();
    let mut s = Session::composed(&problem, Config::default(), &las).unwrap();
    s.add_job(job("p", 1), &[4.0, 1.0, 2.0]).unwrap();
    s.mark_estimated("p", 1).unwrap();
    s.mark_estimated("p", 2).unwrap();
    s.mark_for_profiling("p").unwrap();
    assert_eq!(s.profiling_pending("p").unwrap(), [1, 2]);
    let on = |s: &mut Session| {
        let r = round(s);
        assert_eq!(r.placements.len(), 1, "{r:?}");
        s.cluster().type_name(r.placements[0].worker_type).to_string()
    };
    assert_eq!(on(&mut s), "k80");
    s.report_progress("p", 1, 10.0, 1.5).unwrap();
    assert_eq!(on(&mut s), "p100");
    assert!(s.profiling_pending("p").unwrap().is_empty());
    assert_eq!(on(&mut s), "v100");
    assert_eq!(on(&mut s), "v100");
    // Without profiling the same job starts on v100.
    let mut plain = Session::composed(&problem, Config::default(), &las).unwrap();
    plain.add_job(job("q", 1), &[4.0, 1.0, 2.0]).unwrap();
    plain.mark_estimated("q", 1).unwrap();
    assert_eq!(on(&mut plain), "v100");
}

#[test]
fn a_composed_session_refuses_a_cluster_past_the_gpus_it_tracks_before_laying_it_out() {
    // 10⁹ GPUs: refused at once (the pipeline would lay out every GPU: tens of GB), as the
    // mechanism's sessions are.
    let problem =
        arbiter::Problem::empty(PolicyKind::MaxMinFairness, true, vec![worker_type("v100", 1_000_000_000, 8)]);
    let las = arbiter::scheduling::Composition::from_flags(None, None, Some("las"), None, None).unwrap();
    let e = Session::composed(&problem, Config::default(), &las).unwrap_err();
    assert_eq!((e.code, e.field.as_deref()), (ErrorCode::Unsupported, Some("cluster.worker_types")));
}

#[test]
fn session_metrics_count_from_when_a_job_was_added_not_from_its_fifo_arrival() {
    // The demo's jobs give no arrival: FIFO orders them by index (0, 1, …), which is not a time.
    // Responsiveness and JCT count from session time 0, when they were added.
    let mut s = Session::from_problem(&fixture("demo.json"), Config::default()).unwrap();
    run(&mut s, 3);
    let m = s.metrics();
    assert!(m.average_responsiveness_seconds.is_some_and(|r| r >= 0.0), "{m:?}");
    let id = "a3c";
    s.remove_job(id).unwrap();
    let m = s.metrics();
    assert_eq!(m.average_jct_seconds, Some(3.0 * Config::default().round_seconds), "{m:?}");
}

#[test]
fn a_composed_session_of_gavels_composition_is_the_mechanisms_session() {
    // What `Composition::from_request` gives for {"scheduling": "min_makespan"}: the LP policy
    // with the default stages. `Session::composed` runs it as `from_problem` does, with that policy.
    let gavel = arbiter::Composition::gavel(PolicyKind::MinMakespan);
    let mut s = Session::composed(&fixture("demo.json"), Config::default(), &gavel).unwrap();
    assert_eq!(s.policy(), PolicyKind::MinMakespan);
    let r = round(&mut s);
    assert!(r.allocation_recomputed && !r.placements.is_empty(), "{r:?}");
}

/// A session whose jobs give their throughputs with GPUs spread over servers (placement
/// sensitivity) keeps each job's row with the job: adding one (its own row taken) and removing
/// another re-solve without a panic and without shifting rows onto other jobs. The session held
/// the creation's matrix, indexed past its end once a job was added.
#[test]
fn placement_sensitive_jobs_keep_their_rows_as_jobs_come_and_go() {
    let request = serde_json::json!({"policy": "max_min_fairness",
        "cluster": {"worker_types": {"v100": {"count": 8, "gpus_per_server": 4}}},
        "jobs": [
            {"id": "a", "scale_factor": 4, "throughput": {"v100": 4.0}, "unconsolidated_throughput": {"v100": 1.0}},
            {"id": "b", "throughput": {"v100": 1.0}}]});
    let problem = arbiter::Problem::from_json(&request.to_string()).unwrap();
    let mut s = Session::from_problem(&problem, Config::default()).unwrap();
    let backend = arbiter::lp::Backend::default();
    let alone = s.solve_allocation(backend).expect("solves");
    let job = |id: &str, sf: u32| {
        let mut job = problem.jobs[0].clone();
        job.id = id.to_string();
        job.scale_factor = sf;
        job
    };
    // A second 4-GPU job, with its own row spread.
    s.add_job_spread(job("c", 4), &[4.0], Some(&[3.9])).unwrap();
    let three = s.solve_allocation(backend).expect("re-solves after an add");
    assert_eq!(three.rows(), 3);
    s.remove_job("a").unwrap();
    let two = s.solve_allocation(backend).expect("re-solves after a removal");
    assert_eq!(two.rows(), 2);
    assert_eq!(alone.rows(), 2);
    // A row of the wrong length is refused.
    let err = s.add_job_spread(job("d", 4), &[4.0], Some(&[1.0, 2.0])).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidNumber);
}
