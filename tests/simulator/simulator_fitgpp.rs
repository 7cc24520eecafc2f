//! The FitGpp experiment (`src/simulator/fitgpp/`): the metrics and the load by hand, the rate
//! calibration, the paper's directions on a small cluster, and `arbiter fitgpp` from the outside
//! (the CSV, the table, the plots, refusals as the contract's error object with exit status 2).

use arbiter::scheduling::fitgpp::{Job, JobKind, JobSpec, Resources};
use arbiter::simulator::fitgpp::calibrate::rate_for_fifo_load;
use arbiter::simulator::fitgpp::experiment::{self, ExperimentConfig};
use arbiter::simulator::fitgpp::metrics::summarize;
use arbiter::simulator::fitgpp::run::load;
use arbiter::simulator::fitgpp::workload::{generate, DEFAULT_DISTRIBUTIONS};
use std::process::Command;

fn job(kind: JobKind, arrival: f64, duration: f64, finish: f64, interruptions: &[(f64, f64)]) -> Job {
    let spec = JobSpec {
        id: "j".into(),
        kind,
        demand: Resources::new(8, 64, 2),
        duration_seconds: duration,
        grace_period_seconds: 0.0,
    };
    let mut j = Job::new(spec, arrival);
    j.finish = Some(finish);
    j.preemptions = interruptions.len() as u32;
    j.interruptions = interruptions.iter().map(|&(a, b)| (a, Some(b))).collect();
    j
}

#[test]
fn slowdowns_preempted_shares_and_intervals_by_hand() {
    let jobs = [
        job(JobKind::Te, 0.0, 10.0, 10.0, &[]),                              // slowdown 1
        job(JobKind::Te, 0.0, 10.0, 30.0, &[]),                              // 3
        job(JobKind::Te, 5.0, 10.0, 25.0, &[]),                              // 2
        job(JobKind::Be, 0.0, 100.0, 150.0, &[(10.0, 70.0)]),                // 1.5, interval 60
        job(JobKind::Be, 0.0, 100.0, 400.0, &[(20.0, 50.0), (60.0, 180.0)]), // 4, intervals 30, 120
    ];
    let refs: Vec<&Job> = jobs.iter().collect();
    let s = summarize(&refs);
    assert_eq!(s.jobs_measured, 5);
    assert_eq!((s.te.p50, s.be.p50), (2.0, 2.75));
    assert!((s.te.p95 - 2.9).abs() < 1e-12, "{}", s.te.p95); // 2 + 0.9 · (3 − 2)
    assert_eq!(s.preempted_share, 0.4);
    assert_eq!(s.preempted_times_share, [0.2, 0.2, 0.0]);
    assert_eq!(s.preemptions, 3);
    assert_eq!((s.te_made_room_share, s.te_declined_share), (0.0, 0.0));
    assert_eq!((s.restart_interval_seconds.count, s.restart_interval_seconds.p50), (3, 60.0));
}

#[test]
fn the_load_is_the_demand_present_over_capacity() {
    // One node of (32, 256, 8); a job of a quarter of everything present for the whole window and
    // one of half of it for half the window: 0.25 + 0.5 · 0.5 = 0.5.
    let cap = [Resources::new(32, 256, 8)];
    let mut a = job(JobKind::Be, 0.0, 100.0, 100.0, &[]);
    a.spec.demand = Resources::new(8, 64, 2);
    let mut b = job(JobKind::Be, 50.0, 100.0, 300.0, &[]);
    b.spec.demand = Resources::new(16, 128, 4);
    assert_eq!(load(&[a, b], &cap, 0.0, 100.0), 0.5);
}

#[test]
fn the_rate_makes_fifo_hold_the_load() {
    let unit = generate(&DEFAULT_DISTRIBUTIONS, 1500, 0.3, 3).unwrap();
    let caps = vec![Resources::new(32, 256, 8); 8];
    for target in [0.8, 2.0] {
        let (rate, reached) = rate_for_fifo_load(&unit, &caps, target, (150, 1350)).unwrap();
        assert!(rate > 0.0 && (reached - target).abs() < 0.05 * target, "target {target}: {reached}");
    }
    assert!(rate_for_fifo_load(&unit, &caps, -1.0, (150, 1350)).is_err());
    assert!(rate_for_fifo_load(&unit, &caps, 2.0, (1400, 1300)).is_err());
}

#[test]
fn the_papers_directions_hold_on_a_small_cluster() {
    let config = ExperimentConfig { nodes: 16, seeds: vec![0, 1], ..ExperimentConfig::paper(2000) };
    let rows = experiment::run(&config).unwrap();
    assert_eq!(rows.len(), 8);
    let mean = |policy: &str, f: &dyn Fn(&experiment::Row) -> f64| {
        let g: Vec<f64> = rows.iter().filter(|r| r.variant.policy == policy).map(f).collect();
        g.iter().sum::<f64>() / g.len() as f64
    };
    for r in &rows {
        assert!((r.fifo_load - 2.0).abs() < 0.1, "{}", r.fifo_load);
    }
    let te95 = |p: &str| mean(p, &|r| r.summary.te.p95);
    let be50 = |p: &str| mean(p, &|r| r.summary.be.p50);
    let be95 = |p: &str| mean(p, &|r| r.summary.be.p95);
    let preempted = |p: &str| mean(p, &|r| r.summary.preempted_share);
    assert!(te95("fitgpp") < 0.2 * te95("none"), "{} against {}", te95("fitgpp"), te95("none"));
    assert!(be50("fitgpp") <= 1.25 * be50("none") && be95("fitgpp") <= 1.25 * be95("none"));
    assert!(preempted("fitgpp") < preempted("lrtp") && preempted("fitgpp") < preempted("rand"));
    assert_eq!(preempted("none"), 0.0);
    // Every preemptive policy made room for some TE jobs; FIFO for none.
    assert!(mean("fitgpp", &|r| r.summary.te_made_room_share) > 0.0);
    assert_eq!(mean("none", &|r| r.summary.te_made_room_share), 0.0);
}

fn arbiter(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_arbiter")).args(args).output().unwrap()
}

#[test]
fn the_command_writes_a_csv_a_table_and_plots() {
    let dir = std::env::temp_dir().join(format!("arbiter-fitgpp-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = dir.join("p").to_string_lossy().into_owned();
    let table = dir.join("t.md").to_string_lossy().into_owned();
    let small = ["fitgpp", "--jobs", "300", "--nodes", "4", "--seeds", "0", "--output", "-"];
    let mut args = small.to_vec();
    args.extend(["--lambda", "0,2", "--table", &table, "--plot", &prefix]);
    let out = arbiter(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    // fitgpp at two λ, lrtp, rand, none.
    assert_eq!(lines.len(), 6, "{csv}");
    assert!(lines[0].starts_with("variant,policy,lambda,max_preemptions,te_share,seed,run"));
    assert!(lines[1].starts_with("\"fitgpp(λ=0,P=1)\",fitgpp,0,1,0.3,0,0,"), "{}", lines[1]);
    assert!(std::fs::read_to_string(&table).unwrap().contains("| lrtp(P=1) | 0.3 | 1 |"));
    for kind in ["te", "be"] {
        let svg = std::fs::read_to_string(format!("{prefix}-{kind}.svg")).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("fitgpp P=1 p95"));
    }

    let out = arbiter(&["fitgpp", "--print-distributions"]);
    assert!(out.status.success());
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["be"]["gpus"]["high"], 8.0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_command_refuses_bad_flags_with_exit_2() {
    for (extra, code, field) in [
        (&["--preemption", "sjf"][..], "unknown_policy", "preemption"),
        (&["--node", "32,256"][..], "malformed_request", "node"),
        (&["--lambda=-1"][..], "malformed_request", "lambda"),
        (&["--te-share", "1.5"][..], "malformed_request", "te-share"),
        (&["--load", "0"][..], "invalid_number", "load"),
        (&["--plot-x", "seed"][..], "unsupported", "plot_x"),
        (&["--jobs", "5"][..], "invalid_number", "jobs"),
        (&["--distributions", "/nonexistent/d.json"][..], "malformed_request", "distributions"),
    ] {
        let mut args = vec!["fitgpp", "--seeds", "0", "--nodes", "2", "--output", "-"];
        if !extra.contains(&"--jobs") {
            args.extend(["--jobs", "100"]);
        }
        args.extend(extra);
        let out = arbiter(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let e: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!((e["error"]["code"].as_str(), e["error"]["field"].as_str()), (Some(code), Some(field)), "{extra:?}");
    }
}
