//! The simulator on traces small enough to follow by hand: exact completion times under the
//! round-based mechanism and under ideal allocation, mid-round finishes, and clock jumps.

use arbiter::problem::WorkerType;
use arbiter::simulator::{simulate, SimulationConfig, SimulationReport};
use arbiter::workload::throughputs::ThroughputTable;
use arbiter::workload::{Trace, TraceJob};
use arbiter::PolicyKind;

/// One V100; job type `a` runs 1 step/s on it, `b` 2 steps/s.
fn table() -> ThroughputTable {
    ThroughputTable::from_json_str(r#"{"v100": {"('a', 1)": {"null": 1.0}, "('b', 1)": {"null": 2.0}}}"#).unwrap()
}

fn job(job_type: &str, steps: f64, arrival: f64) -> TraceJob {
    TraceJob {
        job_type: job_type.into(),
        total_steps: steps,
        scale_factor: 1,
        weight: 1.0,
        slo_seconds: None,
        arrival_seconds: arrival,
        tenant: None,
    }
}

/// Gavel's fractional allocations: the halves below are exact (a realizable solve's tie-break may
/// move a job by its 1e-9 slack, and a finish 1e-7 s into a round then waits for the round's end).
fn config(ideal: bool) -> SimulationConfig {
    let cluster = vec![WorkerType { name: "v100".into(), count: 1.0, gpus_per_server: 1, cost_per_hour: Some(3.6) }];
    SimulationConfig { round_seconds: 100.0, ideal, ..SimulationConfig::gavel(cluster, PolicyKind::MaxMinFairness) }
}

fn run(trace: &Trace, ideal: bool) -> SimulationReport {
    simulate(trace, &table(), &config(ideal), &mut |_| {}).unwrap()
}

fn jcts(report: &SimulationReport) -> Vec<f64> {
    report.jobs.iter().map(|j| j.jct_seconds.unwrap()).collect()
}

/// Job 0 (`a`, 150 steps) and job 1 (`b`, 100 steps) arrive at 0 and LAS gives each half the GPU.
///
/// Rounds of 100 s: round 0 runs job 0 (tie on priority, first job first): 100 steps. Round 1 runs
/// job 1, which needs 50 s for its 100 steps and finishes at 150; the round ends there, when its
/// last job stops. Job 0, alone now, runs its last 50 steps in 50 s: it finishes at 200.
#[test]
fn two_jobs_under_the_round_mechanism() {
    let trace = Trace::new(vec![job("a", 150.0, 0.0), job("b", 100.0, 0.0)]);
    let r = run(&trace, false);
    assert_eq!(jcts(&r), vec![200.0, 150.0]);
    assert_eq!(r.jobs[0].start_seconds, Some(0.0));
    assert_eq!(r.jobs[1].start_seconds, Some(100.0));
    assert_eq!(r.average_jct_seconds, 175.0);
    assert_eq!(r.makespan_seconds, 200.0);
    assert_eq!(r.rounds, 3);
    // The GPU was busy the whole 200 s: 100 + 50 + 50.
    assert!((r.utilization - 1.0).abs() < 1e-12);
    // 200 GPU-seconds at $3.60 per GPU-hour.
    assert!((r.cost_dollars.unwrap() - 0.2).abs() < 1e-12);
    assert_eq!(r.preemptions, 1);
    assert!(r.jobs.iter().all(|j| j.steps_done == j.total_steps));
}

/// The same jobs with each granted exactly its half: job 1 makes 1 step/s and finishes its 100
/// steps at 100, when job 0 has made 50 of its 150; alone, job 0 makes 1 step/s and finishes at 200.
#[test]
fn two_jobs_under_ideal_allocation() {
    let trace = Trace::new(vec![job("a", 150.0, 0.0), job("b", 100.0, 0.0)]);
    let r = run(&trace, true);
    assert_eq!(jcts(&r), vec![200.0, 100.0]);
    assert_eq!(r.mode, "ideal");
    assert_eq!(r.preemptions, 0);
}

/// A job arriving mid-round joins when the round ends, and its JCT counts from its arrival; with
/// nothing to run the clock jumps to the next arrival.
#[test]
fn arrivals_wait_for_the_round_and_idle_time_is_skipped() {
    // Job 0 runs 0..100 alone. Job 1 arrives at 30 and starts at 100: 50 s for its 100 steps.
    // Job 2 arrives at 1000, on an idle cluster, and runs 1000..1040.
    let trace = Trace::new(vec![job("a", 100.0, 0.0), job("b", 100.0, 30.0), job("a", 40.0, 1000.0)]);
    let r = run(&trace, false);
    assert_eq!(jcts(&r), vec![100.0, 120.0, 40.0]);
    assert_eq!(r.jobs[2].start_seconds, Some(1000.0));
    assert_eq!(r.makespan_seconds, 1040.0);
    // Busy 190 s of 1040.
    assert!((r.utilization - 190.0 / 1040.0).abs() < 1e-12);
}

/// Only the window's jobs are measured, and the run ends once they have finished.
#[test]
fn the_window_selects_the_measured_jobs() {
    let trace = Trace::new(vec![job("a", 150.0, 0.0), job("b", 100.0, 0.0)]);
    let cfg = SimulationConfig { window: Some((1, 2)), ..config(false) };
    let r = simulate(&trace, &table(), &cfg, &mut |_| {}).unwrap();
    assert_eq!((r.jobs_measured, r.jobs_finished), (1, 1));
    assert_eq!(r.average_jct_seconds, 150.0);
    assert_eq!(r.jobs[0].finish_seconds, None);
    assert!(!r.jobs[0].measured && r.jobs[1].measured);
}
