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

/// The paper's setting (84 nodes, eight workloads of 5,000 jobs, the middle 4,000 measured):
/// FitGpp preempts a small fraction of the jobs LRTP and RAND preempt (the paper: 0.63% against
/// 9.6% and 9.7%, 1/15), keeps TE p95 near 1 and BE slowdowns within 25% of FIFO's.
#[test]
fn at_the_papers_scale_fitgpp_preempts_a_small_fraction_of_lrtps_jobs() {
    let rows = experiment::run(&ExperimentConfig::paper(5000)).unwrap();
    let mean = |policy: &str, f: &dyn Fn(&experiment::Row) -> f64| {
        let g: Vec<f64> = rows.iter().filter(|r| r.variant.policy == policy).map(f).collect();
        g.iter().sum::<f64>() / g.len() as f64
    };
    let preempted = |p: &str| mean(p, &|r| r.summary.preempted_share);
    assert!(8.0 * preempted("fitgpp") < preempted("lrtp"), "{} against {}", preempted("fitgpp"), preempted("lrtp"));
    assert!(8.0 * preempted("fitgpp") < preempted("rand"), "{} against {}", preempted("fitgpp"), preempted("rand"));
    assert!(mean("fitgpp", &|r| r.summary.te.p95) <= 1.2);
    assert!(mean("none", &|r| r.summary.te.p95) >= 20.0);
    let be50 = |p: &str| mean(p, &|r| r.summary.be.p50);
    let be95 = |p: &str| mean(p, &|r| r.summary.be.p95);
    assert!(be50("fitgpp") <= 1.25 * be50("none") && be95("fitgpp") <= 1.25 * be95("none"));
}

/// The paper's Fig. 7: grace periods scaled 1× and 8× (the same jobs, every grace period times 8).
/// Longer grace periods lengthen the TE tail, less so at a larger λ, and lengthen LRTP's BE tail
/// while FitGpp's stays.
#[test]
fn longer_grace_periods_lengthen_te_tails_and_lrtps_be_tail() {
    let variant = |policy: &str, lambda: f64| experiment::Variant {
        policy: policy.into(),
        lambda,
        max_preemptions: 1,
        random_fallback: false,
    };
    let config = ExperimentConfig {
        grace_scales: vec![1.0, 8.0],
        variants: vec![variant("fitgpp", 1.0), variant("fitgpp", 4.0), variant("lrtp", 0.0)],
        ..ExperimentConfig::paper(5000)
    };
    let workloads = experiment::workloads(&ExperimentConfig { seeds: vec![0], ..config.clone() }).unwrap();
    assert_eq!(workloads.len(), 2);
    for (a, b) in workloads[0].arrivals.iter().zip(&workloads[1].arrivals) {
        assert_eq!((a.time, &a.spec.id, a.spec.demand), (b.time, &b.spec.id, b.spec.demand));
        assert!((b.spec.grace_period_seconds - 8.0 * a.spec.grace_period_seconds).abs() < 1e-9);
    }
    let rows = experiment::run(&config).unwrap();
    let mean = |label: &str, scale: f64, f: &dyn Fn(&experiment::Row) -> f64| {
        let g: Vec<f64> = rows.iter().filter(|r| r.variant.label() == label && r.grace_scale == scale).map(f).collect();
        g.iter().sum::<f64>() / g.len() as f64
    };
    let te99 = |label: &str, scale: f64| mean(label, scale, &|r| r.summary.te.p99);
    let be95 = |label: &str, scale: f64| mean(label, scale, &|r| r.summary.be.p95);
    for label in ["fitgpp(λ=1,P=1)", "fitgpp(λ=4,P=1)", "lrtp(P=1)"] {
        assert!(te99(label, 8.0) > te99(label, 1.0), "{label}");
    }
    assert!(te99("fitgpp(λ=4,P=1)", 8.0) < te99("fitgpp(λ=1,P=1)", 8.0));
    assert!(te99("fitgpp(λ=1,P=1)", 8.0) < te99("lrtp(P=1)", 8.0));
    assert!(be95("lrtp(P=1)", 8.0) > 1.05 * be95("lrtp(P=1)", 1.0));
    assert!(be95("fitgpp(λ=1,P=1)", 8.0) < 1.03 * be95("fitgpp(λ=1,P=1)", 1.0));
}

fn arbiter(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_arbiter")).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap()
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
    // fitgpp at two λ, lrtp, rand (four runs, as the paper), none.
    assert_eq!(lines.len(), 9, "{csv}");
    assert!(lines[0].starts_with("variant,policy,lambda,max_preemptions,load,te_share,grace_scale,seed,run"));
    assert!(lines[1].starts_with("\"fitgpp(λ=0,P=1)\",fitgpp,0,1,2,0.3,1,0,0,"), "{}", lines[1]);
    assert!(std::fs::read_to_string(&table).unwrap().contains("| lrtp(P=1) | 0.3 | 1 |"));
    for kind in ["te", "be"] {
        let svg = std::fs::read_to_string(format!("{prefix}-{kind}.svg")).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("fitgpp P=1 p95"));
    }

    let out = arbiter(&["fitgpp", "--print-distributions"]);
    assert!(out.status.success());
    // A node's three numbers are not summed (4294967295 + 1 overflowed a u32).
    // Nor are they a list of distinct values.
    for node in ["4294967295,1,0", "8,8,8"] {
        let out = arbiter(&["fitgpp", "--node", node, "--print-distributions"]);
        assert!(out.status.success(), "{node}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["be"]["gpus"]["high"], 8.0);
    std::fs::remove_dir_all(&dir).ok();
}

/// `--print-distributions` and `--write-workloads` exit before any simulation: a flag only the
/// simulations use is refused, not ignored (`--output o.csv` wrote no CSV and exited 0).
#[test]
fn flags_an_early_exit_would_ignore_are_refused() {
    for (extra, field) in [
        (&["--print-distributions", "--output", "x"][..], "output"),
        (&["--print-distributions", "--table", "t.md"][..], "table"),
        (&["--print-distributions", "--write-workloads", "wl"][..], "write_workloads"),
        (&["--write-workloads", "wl", "--output", "o.csv"][..], "output"),
        (&["--write-workloads", "wl", "--plot", "p"][..], "plot"),
        (&["--write-workloads", "wl", "--plot-x", "load"][..], "plot_x"),
        // A directory of files, not standard output (it made a directory named `-`).
        (&["--write-workloads", "-"][..], "write_workloads"),
    ] {
        let mut args = vec!["fitgpp", "--seeds", "0", "--nodes", "2", "--jobs", "100"];
        args.extend(extra);
        let out = arbiter(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(out.stdout.is_empty(), "{extra:?}");
        let e: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(
            (e["error"]["code"].as_str(), e["error"]["field"].as_str()),
            (Some("malformed_request"), Some(field)),
            "{extra:?}"
        );
    }
}

#[test]
fn the_command_refuses_bad_flags_with_exit_2() {
    for (extra, code, field) in [
        (&["--preemption", "sjf"][..], "unknown_policy", "preemption"),
        (&["--node", "32,256"][..], "malformed_request", "node"),
        (&["--lambda=-1"][..], "invalid_number", "lambda"),
        (&["--lambda", "-1"][..], "invalid_number", "lambda"),
        (&["--te-share", "1.5"][..], "invalid_number", "te_share"),
        (&["--load", "0"][..], "invalid_number", "load"),
        (&["--load", "1e300"][..], "invalid_number", "load"),
        (&["--load", "2,1e-300"][..], "invalid_number", "load"),
        (&["--plot-x", "seed"][..], "unsupported", "plot_x"),
        (&["--grace-scale", "1,-2"][..], "invalid_number", "grace_scale"),
        // Checked before the calibration, not named after a job's grace period once runs fail.
        (&["--grace-scale", "1e300"][..], "invalid_number", "grace_scale"),
        (&["--grace-scale", "1e-300"][..], "invalid_number", "grace_scale"),
        (&["--nodes", "0"][..], "invalid_number", "nodes"),
        // More nodes than a workload file may hold; u64::MAX used to overflow a vector's capacity.
        (&["--nodes", "100001"][..], "invalid_number", "nodes"),
        (&["--nodes", "18446744073709551615"][..], "invalid_number", "nodes"),
        (&["--jobs", "5"][..], "invalid_number", "jobs"),
        // Every workload is drawn before any run: 10¹¹ jobs used to abort on allocation.
        (&["--jobs", "100000000000"][..], "invalid_number", "jobs"),
        (&["--distributions", "/nonexistent/d.json"][..], "malformed_request", "distributions"),
        // As sweep's: 20,000 threads used to hang, 5,000 to fail after 13 s as `unsupported`.
        (&["--threads", "5000"][..], "invalid_number", "threads"),
        (&["--threads", "20000"][..], "invalid_number", "threads"),
        // Destinations are checked before the runs, not after them.
        (&["--output", "/nonexistent/dir/runs.csv"][..], "malformed_request", "output"),
        (&["--table", "/nonexistent/dir/t.md"][..], "malformed_request", "table"),
        (&["--plot", "/nonexistent/dir/p"][..], "malformed_request", "plot"),
        // Two SVG files cannot go to standard output (they were written as `--te.svg`, `--be.svg`).
        (&["--plot", "-"][..], "malformed_request", "plot"),
        (&["--output", "src"][..], "malformed_request", "output"),
        (&["--output", "r.csv", "--table", "./r.csv"][..], "malformed_request", "table"),
        // Twice the same value would run and print the same rows twice, as sweep refuses.
        (&["--seeds", "0,0"][..], "malformed_request", "seeds"),
        (&["--lambda", "1,1.0"][..], "malformed_request", "lambda"),
        (&["--preemption", "none,none"][..], "malformed_request", "preemption"),
    ] {
        let mut args = vec!["fitgpp"];
        for default in [["--seeds", "0"], ["--output", "-"], ["--nodes", "2"], ["--jobs", "100"]] {
            if !extra.contains(&default[0]) {
                args.extend(default);
            }
        }
        args.extend(extra);
        let out = arbiter(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let e: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!((e["error"]["code"].as_str(), e["error"]["field"].as_str()), (Some(code), Some(field)), "{extra:?}");
    }
}

fn simulate(preemption: &str) -> serde_json::Value {
    let out = arbiter(&["simulate", "--trace", "fixtures/fitgpp.json", "--preemption", preemption, "--output", "-"]);
    assert!(out.status.success(), "{preemption}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `fixtures/fitgpp.json`: one node of 8 GPUs; BE jobs `long` (4 GPUs, 7,200 s, grace 300 s) and
/// `short` (4 GPUs, 1,800 s, grace 60 s) at 0; TE job `trial` (4 GPUs, 600 s) at 600, when the
/// node is full.
/// - FitGpp (λ = 1): both BE jobs free enough and are the same size, so the shorter grace period
///   decides (scores 1 + 60/300 against 2): `short` is told to stop at 600, `trial` starts at 660
///   and ends at 1,260 (slowdown 1.1); `short` (600 s done) restarts then and ends at 2,460
///   (slowdown 2,460/1,800); `long` is untouched.
/// - LRTP: `long` has the longest remaining time; its grace period ends at 900, `trial` ends at
///   1,500 (1.5), `long` restarts then with 6,600 s left and ends at 8,100 (1.125).
/// - FIFO (`none`): `trial` waits for `short` to finish at 1,800 and ends at 2,400 (3.0).
#[test]
fn simulate_runs_a_workload_under_each_policy() {
    let fates = |r: &serde_json::Value| -> Vec<(String, f64, f64)> {
        r["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| {
                (
                    j["id"].as_str().unwrap().to_string(),
                    j["first_start"].as_f64().unwrap(),
                    j["finish"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let own = |v: &[(&str, f64, f64)]| v.iter().map(|&(id, s, f)| (id.to_string(), s, f)).collect::<Vec<_>>();

    let fitgpp = simulate("fitgpp");
    assert_eq!((fitgpp["workload"].as_str(), fitgpp["preemption"].as_str()), (Some("fitgpp"), Some("fitgpp(λ=1,P=1)")));
    assert_eq!(fates(&fitgpp), own(&[("long", 0.0, 7200.0), ("short", 0.0, 2460.0), ("trial", 660.0, 1260.0)]));
    assert_eq!(fitgpp["jobs"][1]["interruptions"][0]["preempted_at"], 600.0);
    assert_eq!(fitgpp["jobs"][1]["interruptions"][0]["restarted_at"], 1260.0);
    assert!((fitgpp["te"]["p95"].as_f64().unwrap() - 1.1).abs() < 1e-12);
    assert!((fitgpp["preempted_share"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(fitgpp["restart_interval_seconds"]["p50"], 660.0);
    assert_eq!((fitgpp["nodes"].as_u64(), fitgpp["window"][1].as_u64()), (Some(1), Some(3)));
    assert_eq!(fitgpp["makespan_seconds"], 7200.0);

    let lrtp = simulate("lrtp");
    assert_eq!(fates(&lrtp), own(&[("long", 0.0, 8100.0), ("short", 0.0, 1800.0), ("trial", 900.0, 1500.0)]));
    assert!((lrtp["jobs"][0]["slowdown"].as_f64().unwrap() - 1.125).abs() < 1e-12);

    let fifo = simulate("none");
    assert_eq!(fates(&fifo), own(&[("long", 0.0, 7200.0), ("short", 0.0, 1800.0), ("trial", 1800.0, 2400.0)]));
    assert_eq!((fifo["te"]["p50"].as_f64(), fifo["preempted_share"].as_f64()), (Some(3.0), Some(0.0)));

    // λ = 0: the sizes tie, so the first candidate (`long`, in node order) goes, as under LRTP.
    assert_eq!(fates(&simulate("fitgpp:lambda=0")), fates(&lrtp));
    // The window measures `trial` alone.
    let out = arbiter(&[
        "simulate",
        "--trace",
        "fixtures/fitgpp.json",
        "--window",
        "2:3",
        "--output",
        "-",
        "--plot",
        &std::env::temp_dir().join(format!("arbiter-fitgpp-{}.svg", std::process::id())).to_string_lossy(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((r["jobs_measured"].as_u64(), r["preempted_share"].as_f64()), (Some(1), Some(0.0)));
    assert_eq!(r["jobs"].as_array().unwrap().iter().filter(|j| j["measured"] == true).count(), 1);
    let svg = std::env::temp_dir().join(format!("arbiter-fitgpp-{}.svg", std::process::id()));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("TE (1 jobs)"));
    std::fs::remove_file(svg).ok();
}

/// A workload `arbiter fitgpp --write-workloads` writes, run by `arbiter simulate` over the same
/// window, gives the experiment's own row; and `arbiter sweep` over FitGpp's policies is the
/// experiment.
#[test]
fn written_workloads_and_the_sweep_reproduce_the_experiment() {
    let dir = std::env::temp_dir().join(format!("arbiter-fitgpp-workloads-{}", std::process::id()));
    let small = ["--jobs", "300", "--seeds", "0,1"];
    let mut args = vec!["fitgpp", "--nodes", "4", "--preemption", "fitgpp,lrtp,none", "--output", "-"];
    args.extend(small);
    let out = arbiter(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = String::from_utf8(out.stdout).unwrap();
    // The fields after the quoted label: policy, λ, P, load, TE share, grace scale, seed, …
    let row = |policy: &str, seed: &str| -> Vec<String> {
        let fields = |l: &str| -> Vec<String> {
            l.split_once("\",").map_or(vec![], |(_, rest)| rest.split(',').map(String::from).collect())
        };
        rows.lines().map(fields).find(|f| f.len() > 6 && f[0] == policy && f[6] == seed).unwrap()
    };

    let write = arbiter(&[
        "fitgpp",
        "--nodes",
        "4",
        "--jobs",
        "300",
        "--seeds",
        "1",
        "--write-workloads",
        &dir.to_string_lossy(),
    ]);
    assert!(write.status.success(), "{}", String::from_utf8_lossy(&write.stderr));
    let file = dir.join("fitgpp-load2-te0.3-seed1.json");
    for policy in ["fitgpp", "lrtp", "none"] {
        let out = arbiter(&[
            "simulate",
            "--trace",
            &file.to_string_lossy(),
            "--preemption",
            policy,
            "--window",
            "30:270",
            "--output",
            "-",
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let expected = row(policy, "1");
        // te_p95, be_p95 and the preempted share, at the CSV's precision.
        assert_eq!(format!("{:.4}", r["te"]["p95"].as_f64().unwrap()), expected[12], "{policy}");
        assert_eq!(format!("{:.4}", r["be"]["p95"].as_f64().unwrap()), expected[15], "{policy}");
        assert_eq!(format!("{:.6}", r["preempted_share"].as_f64().unwrap()), expected[17], "{policy}");
    }

    let mut args = vec!["sweep", "--policies", "fitgpp,lrtp,none", "--cluster", "4x32,256,8", "--output", "-"];
    args.extend(small);
    let out = arbiter(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), rows);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn simulate_and_sweep_refuse_what_belongs_to_rounds() {
    let refusal = |args: &[&str]| -> (String, String) {
        let out = arbiter(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
        let e: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
        (e["error"]["code"].as_str().unwrap().into(), e["error"]["field"].as_str().unwrap_or("").into())
    };
    let fixture = "fixtures/fitgpp.json";
    let gavel = std::env::temp_dir().join(format!("arbiter-fitgpp-gavel-{}.trace", std::process::id()));
    std::fs::write(&gavel, "a\tpython3 a.py\tdir\t--steps\t1\t7200\t1\t1\t-1.000000\t0\n").unwrap();
    let gavel = gavel.to_string_lossy().into_owned();
    for (args, code, field) in [
        (vec!["--trace", fixture, "--policy", "max_min_fairness"], "malformed_request", "policy"),
        (vec!["--trace", fixture, "--cluster", "v100=1"], "malformed_request", "cluster"),
        (vec!["--trace", fixture, "--scheduling", "fifo"], "malformed_request", "scheduling"),
        (vec!["--trace", fixture, "--admission", "accept_all"], "malformed_request", "admission"),
        (vec!["--trace", fixture, "--round-seconds", "60"], "malformed_request", "round_seconds"),
        (vec!["--trace", fixture, "--preemption", "lease"], "unknown_policy", "preemption"),
        (vec!["--trace", fixture, "--preemption", "fitgpp:lambda=-1"], "malformed_request", "preemption"),
        (vec!["--trace", fixture, "--preemption", "none:p=2"], "malformed_request", "preemption"),
        (vec!["--trace", fixture, "--window", "2:9"], "invalid_number", "window"),
        (vec!["--trace", &gavel, "--preemption", "fitgpp"], "unsupported", "preemption"),
        (vec!["--trace", &gavel, "--preemption", "lrtp:p=2", "--policy", "fifo"], "unsupported", "preemption"),
    ] {
        let mut full = vec!["simulate", "--output", "-"];
        full.extend(&args);
        assert_eq!(refusal(&full), (code.to_string(), field.to_string()), "{args:?}");
    }
    for (args, code, field) in [
        (vec!["--policies", "fitgpp,las"], "unknown_policy", "policies"),
        (vec!["--policies", "lrtp", "--cluster", "v100=4"], "malformed_request", "cluster"),
        (vec!["--policies", "rand", "--tenants", "3"], "malformed_request", "tenants"),
        (vec!["--policies", "fitgpp", "--loads", "0"], "invalid_number", "loads"),
        (vec!["--policies", "fitgpp", "--loads", "1e300"], "invalid_number", "loads"),
        (vec!["--policies", "fitgpp", "--jobs", "10,20"], "malformed_request", "jobs"),
        (vec!["--policies", "fitgpp", "--jobs", "10"], "invalid_number", "jobs"),
        (vec!["--policies", "fitgpp", "--jobs", "100000000000"], "invalid_number", "jobs"),
        (vec!["--policies", "fitgpp", "--cluster", "18446744073709551615x32,256,8"], "invalid_number", "cluster"),
    ] {
        let mut full = vec!["sweep", "--output", "-"];
        full.extend(&args);
        assert_eq!(refusal(&full), (code.to_string(), field.to_string()), "{args:?}");
    }
    std::fs::remove_file(gavel).ok();
}
