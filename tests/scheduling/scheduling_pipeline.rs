//! The scheduling pipeline from the outside: hand-checked rounds of list compositions, a trace
//! through `scheduling::simulation`, and the invariants every composition keeps under random
//! event streams (no GPU twice, no job twice, admitted demand within its threshold, a suspended
//! job not running).

use arbiter::problem::WorkerType;
use arbiter::scheduling::{ClusterState, Composition, JobState, Pipeline, RoundDecision};
use arbiter::simulator::SimulationConfig;
use arbiter::workload::throughputs::ThroughputTable;
use arbiter::workload::{Trace, TraceJob};
use proptest::prelude::*;
use std::collections::HashSet;
use std::path::Path;

/// One type of `gpus` V100s, `per_server` to a server.
pub fn cluster(gpus: f64, per_server: u32) -> ClusterState {
    ClusterState::new(&[WorkerType {
        name: "v100".into(),
        count: gpus,
        gpus_per_server: per_server,
        cost_per_hour: None,
    }])
}

fn compose(admission: &str, scheduling: &str, placement: &str, preemption: &str) -> Composition {
    Composition::from_flags(None, Some(admission), Some(scheduling), Some(placement), Some(preemption)).unwrap()
}

/// Runs one round of `seconds`, every running job for the whole round.
fn round(p: &mut Pipeline, seconds: f64) -> RoundDecision {
    let d = p.next_round();
    let ran: Vec<(usize, f64)> = d.running().map(|j| (j, seconds)).collect();
    p.account(&d, &ran, seconds);
    p.advance_to(p.now() + seconds);
    d
}

#[test]
fn las_preempts_the_most_served_job_for_a_newcomer() {
    let mut p = Pipeline::new(&compose("accept_all", "las", "consolidated", "lease"), cluster(4.0, 4), 0).unwrap();
    let a = p.submit(JobState::new("a", 0.0, 4, vec![1.0], 1e6)).unwrap();
    let d = round(&mut p, 300.0);
    assert_eq!((d.launched.as_slice(), d.renewed.as_slice()), (&[a][..], &[][..]));
    assert_eq!(p.jobs[a].attained_service, 1200.0);
    let b = p.submit(JobState::new("b", 300.0, 2, vec![1.0], 1e6)).unwrap();
    // b has attained nothing: it goes first; a (4 GPUs) no longer fits beside it and is suspended.
    let d = round(&mut p, 300.0);
    assert_eq!(d.order, [b, a]);
    assert_eq!((d.launched.as_slice(), d.suspended.as_slice()), (&[b][..], &[a][..]));
    assert_eq!(p.jobs[a].preemptions, 1);
    assert!(p.jobs[a].suspended && p.jobs[a].gpus.is_empty());
    assert_eq!(p.jobs[b].first_run, Some(300.0));
    assert_eq!(p.jobs[a].queueing_seconds, 300.0);
    // b keeps its lease until its service (600 × 2 = 1200) ties a's; then a (earlier) is first.
    let d = round(&mut p, 300.0);
    assert_eq!(d.renewed, [b]);
    let d = round(&mut p, 300.0);
    assert_eq!(d.order, [a, b]);
    assert_eq!((d.launched.as_slice(), d.suspended.as_slice()), (&[a][..], &[b][..]));
}

#[test]
fn non_preemptive_fifo_runs_to_completion_and_accept_x_holds_jobs_back() {
    let mut p = Pipeline::new(&compose("accept_x=1.0", "fifo", "first_free", "none"), cluster(4.0, 4), 0).unwrap();
    let a = p.submit(JobState::new("a", 0.0, 3, vec![1.0], 1e6)).unwrap();
    let b = p.submit(JobState::new("b", 1.0, 1, vec![1.0], 1e6)).unwrap();
    let c = p.submit(JobState::new("c", 2.0, 1, vec![1.0], 1e6)).unwrap();
    let d = round(&mut p, 60.0);
    // 3 + 1 = 4 GPUs ≤ 1.0 × 4: a and b admitted, c waits in the admission queue.
    assert_eq!(d.admitted, [a, b]);
    assert_eq!(p.waiting(), [c]);
    assert_eq!(d.launched, [a, b]);
    assert_eq!(p.jobs[b].gpus, [3]);
    p.complete(b, 70.0);
    let d = round(&mut p, 60.0);
    assert_eq!((d.admitted.as_slice(), d.renewed.as_slice(), d.launched.as_slice()), (&[c][..], &[a][..], &[c][..]));
}

#[test]
fn a_failed_gpu_suspends_its_job_and_it_resumes_elsewhere() {
    let mut p = Pipeline::new(&compose("accept_all", "fifo", "consolidated", "lease=30"), cluster(8.0, 4), 0).unwrap();
    let a = p.submit(JobState::new("a", 0.0, 4, vec![1.0], 1e6)).unwrap();
    round(&mut p, 60.0);
    let failed = p.jobs[a].gpus[0];
    p.set_health(failed, false).unwrap();
    assert_eq!(p.jobs[a].preemptions, 1);
    let d = round(&mut p, 60.0);
    assert_eq!(d.launched, [a]);
    assert!(!p.jobs[a].gpus.contains(&failed));
    assert_eq!(p.restart_seconds(), 30.0);
    assert_eq!(p.set_health(99, false).unwrap_err().code, arbiter::ErrorCode::UnknownWorker);
}

#[test]
fn submit_refuses_bad_numbers_and_jobs_that_cannot_fit() {
    let mut p = Pipeline::new(&compose("accept_all", "las", "consolidated", "lease"), cluster(4.0, 4), 0).unwrap();
    let code = |p: &mut Pipeline, j: JobState| p.submit(j).unwrap_err();
    let e = code(&mut p, JobState::new("nan", 0.0, 1, vec![f64::NAN], 10.0));
    assert_eq!((e.code, e.field.as_deref()), (arbiter::ErrorCode::InvalidNumber, Some("job.throughput")));
    let e = code(&mut p, JobState::new("zero", 0.0, 1, vec![1.0], 0.0));
    assert_eq!((e.code, e.field.as_deref()), (arbiter::ErrorCode::InvalidNumber, Some("job.total_steps")));
    let mut heavy = JobState::new("w", 0.0, 1, vec![1.0], 10.0);
    heavy.weight = -1.0;
    assert_eq!(code(&mut p, heavy).code, arbiter::ErrorCode::InvalidNumber);
    let cannot = |e: arbiter::ArbiterError| (e.code, e.field);
    let run = |f: &str| (arbiter::ErrorCode::JobCannotRun, Some(f.to_string()));
    assert_eq!(cannot(code(&mut p, JobState::new("big", 0.0, 8, vec![1.0], 10.0))), run("job.scale_factor"));
    assert_eq!(cannot(code(&mut p, JobState::new("nowhere", 0.0, 1, vec![0.0], 10.0))), run("job.throughput"));
    assert_eq!(cannot(code(&mut p, JobState::new("shape", 0.0, 1, vec![1.0, 1.0], 10.0))), run("job.throughput"));
    // A job that fits the cluster is taken while GPUs are failed: it waits for them.
    p.set_health(0, false).unwrap();
    p.submit(JobState::new("whole", 0.0, 4, vec![1.0], 10.0)).unwrap();
    p.complete(0, 0.0);
    p.set_health(0, true).unwrap();
    assert!(p.waiting().is_empty());
}

/// One job type on the V100, as Gavel's throughput file has it (these tests need no other).
fn table() -> ThroughputTable {
    ThroughputTable::from_json_str(r#"{"v100": {"('ResNet-18 (batch size 64)', 1)": {"null": 12.5}}}"#).unwrap()
}

/// A simulation on one V100 (the policy field is unused by list compositions).
fn one_v100() -> SimulationConfig {
    SimulationConfig::new(arbiter::simulator::parse_cluster("v100=1", 1, None).unwrap(), arbiter::PolicyKind::Fifo)
}

/// The one job type of `table()`.
const KIND: &str = "ResNet-18 (batch size 64)";

/// A one-GPU job of `KIND` with `seconds` of work on a V100, arriving at `arrival`.
fn job(seconds: f64, arrival: f64) -> TraceJob {
    let rate = table().row(&["v100".to_string()], KIND, 1).unwrap()[0];
    TraceJob {
        job_type: KIND.into(),
        total_steps: seconds * rate,
        scale_factor: 1,
        weight: 1.0,
        slo_seconds: None,
        arrival_seconds: arrival,
        tenant: None,
    }
}

#[test]
fn a_trace_under_fifo_and_srtf_by_hand() {
    let table = table();
    // One V100, two jobs at t = 0: a long one (3 rounds) first in the trace, a short one (1 round).
    let trace = Trace::new(vec![job(3.0 * 300.0, 0.0), job(300.0, 0.0)]);
    let config = SimulationConfig { round_seconds: 300.0, ..one_v100() };
    let run = |s: &str| {
        let c = compose("accept_all", s, "consolidated", "lease");
        arbiter::scheduling::simulation::run(&trace, &table, &config, &c, &mut |_| {}).unwrap()
    };
    let jct =
        |r: &arbiter::simulator::SimulationReport| r.jobs.iter().map(|j| j.jct_seconds.unwrap()).collect::<Vec<_>>();
    let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6);
    let fifo = run("fifo");
    assert!(close(&jct(&fifo), &[900.0, 1200.0]), "{:?}", jct(&fifo));
    assert!((fifo.average_responsiveness_seconds - 450.0).abs() < 1e-9);
    let srtf = run("srtf");
    assert!(close(&jct(&srtf), &[1200.0, 300.0]), "{:?}", jct(&srtf));
    assert_eq!(srtf.composition, "accept_all+srtf+consolidated+lease");
    assert_eq!((srtf.preemptions, srtf.utilization), (0, 1.0));
    // The type-blind variant and space sharing are the LP policies' (Gavel's mechanism).
    let c = compose("accept_all", "las", "consolidated", "lease");
    for blind in [
        SimulationConfig { heterogeneity_aware: false, ..config.clone() },
        SimulationConfig { space_sharing: true, ..config.clone() },
    ] {
        let e = arbiter::scheduling::simulation::run(&trace, &table, &blind, &c, &mut |_| {}).unwrap_err();
        assert_eq!(e.code, arbiter::ErrorCode::Unsupported);
    }
}

#[test]
fn restart_overhead_is_charged_on_resumption() {
    let table = table();
    // LAS on one GPU: a (2 rounds of work) then b arrives; they alternate, each resumption losing 60 s.
    let trace = Trace::new(vec![job(600.0, 0.0), job(300.0, 1.0)]);
    let config = SimulationConfig { round_seconds: 300.0, ..one_v100() };
    let c = compose("accept_all", "las", "consolidated", "lease=60");
    let r = arbiter::scheduling::simulation::run(&trace, &table, &config, &c, &mut |_| {}).unwrap();
    // Round 0: a runs 300 s. Round 1: b (less served) runs 300 s and finishes at 600. Round 2: a
    // resumes, 60 s of restart then its last 300 s do not fit: 240 s. Round 3: a (suspended? no,
    // renewed) finishes its last 60 s at 960.
    let finish: Vec<f64> = r.jobs.iter().map(|j| j.finish_seconds.unwrap()).collect();
    assert!((finish[1] - 600.0).abs() < 1e-6 && (finish[0] - 960.0).abs() < 1e-6, "{finish:?}");
    assert_eq!(r.jobs[0].preemptions, Some(1));
    assert!((r.preemptions_per_job - 0.5).abs() < 1e-12);
}

#[test]
fn a_restart_longer_than_a_round_runs_over_and_lease_terms_pay_it_too() {
    let table = table();
    // One GPU, 10 s rounds, 20 s lease terms, 30 s restarts: a (40 s of work) at t = 0, b (10 s)
    // at t = 1.
    let trace = Trace::new(vec![job(40.0, 0.0), job(10.0, 1.0)]);
    let config = SimulationConfig { round_seconds: 10.0, restart_seconds: 30.0, ..one_v100() };
    let c = compose("accept_all", "las", "consolidated", "lease_term=20");
    let r = arbiter::scheduling::simulation::run(&trace, &table, &config, &c, &mut |_| {}).unwrap();
    // 0–20: a runs under its term (20 s done). 20: the term ends, b (less served) runs and
    // finishes at 30. 30: a resumes and restarts for three rounds, renewing its term at 50 on the
    // same GPU (no second restart), then runs 60–80.
    let finish: Vec<f64> = r.jobs.iter().map(|j| j.finish_seconds.unwrap()).collect();
    assert!((finish[0] - 80.0).abs() < 1e-6 && (finish[1] - 30.0).abs() < 1e-6, "{finish:?}");
    assert_eq!((r.jobs[0].restart_seconds, r.jobs[1].restart_seconds), (Some(30.0), Some(0.0)));
    assert_eq!(r.restart_seconds, 30.0);
    let share = r.restart_overhead_share.unwrap();
    assert!((share - 30.0 / (80.0 + 29.0)).abs() < 1e-9, "{share}");
    // Busy time counts the restart: 20 + 10 + 30 + 20 GPU-seconds over 80.
    assert!((r.utilization - 1.0).abs() < 1e-9, "{}", r.utilization);

    // Without the overhead a resumes at once and finishes at 50; nothing is reported.
    let free = SimulationConfig { restart_seconds: 0.0, ..config.clone() };
    let r = arbiter::scheduling::simulation::run(&trace, &table, &free, &c, &mut |_| {}).unwrap();
    assert!((r.jobs[0].finish_seconds.unwrap() - 50.0).abs() < 1e-6);
    assert_eq!((r.restart_overhead_share, r.jobs[0].restart_seconds), (None, None));

    // One overhead, given once; Gavel's mechanism simulates none; the number must make sense.
    let lease = compose("accept_all", "las", "consolidated", "lease=60");
    let e = arbiter::scheduling::simulation::run(&trace, &table, &config, &lease, &mut |_| {}).unwrap_err();
    assert_eq!((e.code, e.field.as_deref()), (arbiter::ErrorCode::MalformedRequest, Some("restart_seconds")));
    let e = arbiter::simulator::simulate(&trace, &table, &config, &mut |_| {}).unwrap_err();
    assert_eq!((e.code, e.field.as_deref()), (arbiter::ErrorCode::Unsupported, Some("restart_seconds")));
    // Giving the cluster no overhead keeps the stage's own.
    let mut p =
        arbiter::scheduling::Pipeline::new(&lease, arbiter::scheduling::ClusterState::new(&config.cluster), 0).unwrap();
    p.set_restart_seconds(0.0).unwrap();
    assert_eq!(p.restart_seconds(), 60.0);
    p.set_restart_seconds(30.0).unwrap_err();
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let wrong = SimulationConfig { restart_seconds: bad, ..config.clone() };
        let e = arbiter::scheduling::simulation::run(&trace, &table, &wrong, &c, &mut |_| {}).unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (arbiter::ErrorCode::InvalidNumber, Some("restart_seconds")));
    }
}

#[test]
fn a_run_ends_with_its_measured_jobs_while_arrivals_continue() {
    let table = table();
    // LAS on one GPU; job 0 (measured) needs 2 rounds; jobs 1, 2 arrive at 100 s and 400 s with
    // 1 round each, job 3 at 10,000 s. Round 0: 0 runs. Round 1 (300 s): 1 (less served) runs and
    // suspends 0. Round 2 (600 s): 2 runs. Round 3 (900 s): 0 finishes at 1200 s; job 3 never arrives.
    let trace = Trace::new(vec![job(600.0, 0.0), job(300.0, 100.0), job(300.0, 400.0), job(300.0, 10_000.0)]);
    let config = SimulationConfig { round_seconds: 300.0, window: Some((0, 1)), ..one_v100() };
    let r = arbiter::scheduling::simulation::run(
        &trace,
        &table,
        &config,
        &compose("accept_all", "las", "consolidated", "lease"),
        &mut |_| {},
    )
    .unwrap();
    assert!((r.jobs[0].jct_seconds.unwrap() - 1200.0).abs() < 1e-6, "{:?}", r.jobs[0].jct_seconds);
    assert_eq!((r.jobs_total, r.jobs_arrived, r.preemptions), (4, 3, 1));
    assert!((r.preemptions_per_job - 1.0 / 3.0).abs() < 1e-12, "{}", r.preemptions_per_job);
}

// ---- invariants under random compositions and event streams ----

#[derive(Debug, Clone)]
enum Event {
    Submit { scale_factor: u32, rates: [u8; 2], steps: u16, sensitive: bool },
    Complete(usize),
    Fail(u16),
    Return(u16),
    Round,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        3 => (1u32..=8, any::<[u8; 2]>(), 1u16..2000, any::<bool>())
            .prop_map(|(scale_factor, rates, steps, sensitive)| Event::Submit { scale_factor, rates, steps, sensitive }),
        1 => any::<usize>().prop_map(Event::Complete),
        1 => any::<u16>().prop_map(Event::Fail),
        1 => any::<u16>().prop_map(Event::Return),
        4 => Just(Event::Round),
    ]
}

fn composition() -> impl Strategy<Value = Composition> {
    let admission = prop::sample::select(vec!["accept_all", "accept_x=1.0", "accept_x=1.2", "accept_x=1.5"]);
    let scheduling = prop::sample::select(vec![
        "fifo",
        "fifo_priority",
        "las",
        "tiresias",
        "srtf",
        "optimus",
        "themis",
        "ltgf",
        "ltgf_quota",
    ]);
    let placement =
        prop::sample::select(vec!["first_free", "consolidated", "random=3", "profile_guided", "skew", "bandwidth"]);
    let preemption = prop::sample::select(vec!["lease", "lease=30", "lease_term=900", "none"]);
    (admission, scheduling, placement, preemption).prop_map(|(a, s, p, q)| compose(a, s, p, q))
}

fn check(p: &Pipeline, d: &RoundDecision, demand_before: u64, healthy_before: u32) {
    // No job twice.
    let running: Vec<usize> = d.running().collect();
    let set: HashSet<usize> = running.iter().copied().collect();
    assert_eq!(set.len(), running.len(), "a job placed twice: {d:?}");
    // No GPU twice, and every held GPU is healthy, of one type the job runs on, and names its holder.
    let mut seen = HashSet::new();
    for (j, job) in p.jobs.iter().enumerate() {
        if job.gpus.is_empty() {
            continue;
        }
        assert_eq!(job.gpus.len(), job.scale_factor as usize);
        let w = p.cluster.gpus[job.gpus[0] as usize].worker_type;
        assert!(job.throughput[w as usize] > 0.0);
        for &g in &job.gpus {
            assert!(seen.insert(g), "GPU {g} held twice");
            let gpu = &p.cluster.gpus[g as usize];
            assert!(gpu.healthy && gpu.holder == Some(j) && gpu.worker_type == w);
        }
        assert!(set.contains(&j), "job {j} holds GPUs without running");
    }
    for (g, gpu) in p.cluster.gpus.iter().enumerate() {
        if let Some(j) = gpu.holder {
            assert!(p.jobs[j].gpus.contains(&(g as u32)));
        }
    }
    for s in &p.cluster.servers {
        assert_eq!(s.free_gpus as usize, s.gpus().filter(|&g| p.cluster.is_free(g)).count());
    }
    // A suspended job is not running.
    for &j in &d.suspended {
        assert!(!set.contains(&j) && p.jobs[j].gpus.is_empty());
    }
    // Admitted demand within the threshold (a job alone may exceed it).
    if let Some(x) = p.composition().admission.parameter {
        if !d.admitted.is_empty() {
            let after = demand_before + d.admitted.iter().map(|&j| p.jobs[j].scale_factor as u64).sum::<u64>();
            let alone = demand_before == 0 && d.admitted.len() == 1;
            assert!(
                alone || after as f64 <= x * healthy_before as f64 + 1e-9,
                "demand {after} over {x} × {healthy_before}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_composition_keeps_the_invariants(
        c in composition(),
        counts in (0u8..=12, 1u8..=12),
        per_server in 1u32..=8,
        events in prop::collection::vec(event(), 1..80),
    ) {
        let types = [
            WorkerType { name: "v100".into(), count: counts.0 as f64, gpus_per_server: per_server, cost_per_hour: None },
            WorkerType { name: "k80".into(), count: counts.1 as f64, gpus_per_server: per_server, cost_per_hour: None },
        ];
        let cluster = ClusterState::new(&types).with_bandwidth(4, &arbiter::scheduling::state::P3_8XLARGE_BANDWIDTH);
        let gpus = cluster.gpus.len();
        let mut p = Pipeline::new(&c, cluster, 1).unwrap();
        let mut t = 0.0;
        for e in events {
            match e {
                Event::Submit { scale_factor, rates, steps, sensitive } => {
                    let mut job = JobState::new(format!("j{}", p.jobs.len()), t, scale_factor,
                        rates.iter().map(|&r| r as f64 / 16.0).collect(), steps as f64);
                    job.consolidation_sensitive = sensitive;
                    job.metrics.insert("tensor_skew".into(), if sensitive { 0.9 } else { 0.1 });
                    if let Err(e) = p.submit(job) {
                        prop_assert_eq!(e.code, arbiter::ErrorCode::JobCannotRun);
                    }
                }
                Event::Complete(k) => {
                    let active = p.active().to_vec();
                    if !active.is_empty() {
                        p.complete(active[k % active.len()], t);
                    }
                }
                Event::Fail(g) => p.set_health(g as u32 % gpus as u32, false).unwrap(),
                Event::Return(g) => p.set_health(g as u32 % gpus as u32, true).unwrap(),
                Event::Round => {
                    let (demand, healthy) = (p.admitted_demand(), p.cluster.healthy_gpus());
                    let d = round(&mut p, 60.0);
                    check(&p, &d, demand, healthy);
                    t += 60.0;
                }
            }
        }
    }
}

// ---- the command line ----

fn arbiter(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_arbiter")).args(args).output().unwrap()
}

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data/gavel");

#[test]
fn simulate_and_sweep_take_compositions_and_refuse_bad_stages() {
    if !Path::new(DATA).join("simulation_throughputs.json").is_file() {
        println!("skipped: Gavel's data not found at {DATA}");
        return;
    }
    let dir = std::env::temp_dir().join(format!("arbiter-pipeline-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("r.json");
    let (trace, table) =
        (format!("{DATA}/traces/max_min_fairness.trace"), format!("{DATA}/simulation_throughputs.json"));
    let base = ["simulate", "--trace", &trace, "--throughputs", &table, "--cluster", "v100=8,p100=16,k80=24"];
    let mut args: Vec<&str> = base.to_vec();
    let out_s = out.to_str().unwrap();
    args.extend([
        "--admission",
        "accept_x=1.2",
        "--scheduling",
        "tiresias",
        "--placement",
        "consolidated",
        "--preemption",
        "lease=30",
        "--output",
        out_s,
    ]);
    let o = arbiter(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(report["composition"], "accept_x=1.2+tiresias+consolidated+lease=30");
    assert_eq!(report["policy"], "tiresias");
    assert_eq!(report["jobs_finished"], report["jobs_total"]);
    assert!(report["average_responsiveness_seconds"].as_f64().unwrap() >= 0.0);
    assert!(report["jobs"][0]["preemptions"].is_u64());

    for (flag, value, code) in [
        ("--scheduling", "lass", "unknown_policy"),
        ("--admission", "accept_x=-2", "invalid_number"),
        ("--placement", "spread", "unknown_policy"),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(["--output", out_s, flag, value]);
        if flag != "--scheduling" {
            args.extend(["--scheduling", "las"]);
        }
        let o = arbiter(&args);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        let err: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
        assert_eq!(err["error"]["code"], code, "{flag} {value}");
    }

    let mut args: Vec<&str> = base.to_vec();
    args.extend(["--output", out_s, "--synthesizer", "every=2,horizon=6,metric=both", "--round-seconds", "300"]);
    let o = arbiter(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let checks = report["synthesis"].as_array().unwrap();
    assert!(!checks.is_empty());
    assert_eq!(checks[0]["scores"].as_array().unwrap().len(), 9);
    assert!(checks[0]["reason"].as_str().unwrap().contains("both"), "{}", checks[0]);
    assert!(report["composition"].as_str().unwrap().starts_with("synthesizer from accept_all+fifo"));
    let mut args: Vec<&str> = base.to_vec();
    args.extend(["--output", out_s, "--synthesizer", "every=0"]);
    assert_eq!(arbiter(&args).status.code(), Some(2));

    let csv = dir.join("s.csv");
    let o = arbiter(&[
        "sweep",
        "--throughputs",
        &table,
        "--cluster",
        "v100=16",
        "--policies",
        "las:admission=accept_x=1.2,synthesizer:every=4:horizon=8",
        "--loads",
        "4",
        "--jobs",
        "40",
        "--round-seconds",
        "300",
        "--restart-seconds",
        "60",
        "--output",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(rows[1].contains("accept_x=1.2+las+consolidated+lease") && rows[1].ends_with(','), "{text}");
    assert!(rows[2].starts_with("synthesizer:every=4:horizon=8,synthesizer,") && rows[2].ends_with(','), "{text}");
    // Both runs charged the restarts: a share of JCT in [0, 1) in its column.
    let column = rows[0].split(',').position(|c| c == "restart_overhead_share").unwrap();
    for row in &rows[1..] {
        let share: f64 = row.split(',').nth(column).unwrap().parse().unwrap();
        assert!((0.0..1.0).contains(&share), "{row}");
    }
}
