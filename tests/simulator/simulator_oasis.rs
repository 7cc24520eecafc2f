//! `arbiter simulate` and `arbiter sweep` on OASiS's workloads: the three-job fixture under
//! OASiS and each baseline, the study's grid against the library's own run of it, and refusals
//! of flags and stages that belong to the other kind of trace.

use arbiter::lp::Backend;
use arbiter::scheduling::oasis::LowestUtility;
use arbiter::simulator::oasis::study::{run_all, SCHEMES};
use arbiter::simulator::oasis::workload::Settings;
use serde_json::Value;
use std::process::Command;

fn arbiter(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_arbiter")).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap()
}

fn simulate(stage: &[&str]) -> Value {
    let mut args = vec!["simulate", "--trace", "fixtures/oasis.json", "--output", "-"];
    args.extend(stage);
    let out = arbiter(&args);
    assert!(out.status.success(), "{stage:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn refusal(args: &[&str]) -> (String, String) {
    let out = arbiter(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    (e["error"]["code"].as_str().unwrap().to_string(), e["error"]["field"].as_str().unwrap_or("").to_string())
}

/// The fixture: one worker server of 2 GPUs (two workers a slot), two slots; A needs 2
/// worker-slots and is worth 20, B needs 2 and is worth 12 ending in slot 0 and 6 in slot 1, C
/// needs 1 and is worth 8; all arrive in slot 0. OASiS runs A in slot 0 and B in slot 1 and
/// rejects C: 26. The baselines admit all three:
/// - FIFO: A on both workers in slot 0, B in slot 1, C waits: 20 + 6 = 26;
/// - DRF: one worker each for A and B in both slots, both finish in slot 1: 20 + 6 = 26;
/// - RRH: by utility per worker-slot left, A (10) before C (8) and B (6) in slot 0, then C (8)
///   before B (3) in slot 1, where B's one worker does not finish it: 20 + 8 = 28;
/// - Dorm (with HiGHS): C in slot 0, B in slot 1, A unfinished: 8 + 6 = 14.
#[test]
fn the_fixture_under_oasis_and_every_baseline() {
    let oasis = simulate(&["--admission", "oasis"]);
    assert_eq!(oasis["workload"], "oasis");
    assert_eq!((oasis["scheme"].as_str(), oasis["admitted"].as_u64()), (Some("oasis"), Some(2)));
    assert!((oasis["total_utility"].as_f64().unwrap() - 26.0).abs() < 1e-9);
    assert!(oasis["competitive_ratio_bound"].as_f64().unwrap() >= 2.0 && oasis["prices"].is_object());
    let fates: Vec<(&str, bool, Option<u64>)> = oasis["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["id"].as_str().unwrap(), j["admitted"].as_bool().unwrap(), j["completion_slot"].as_u64()))
        .collect();
    assert_eq!(fates, vec![("A", true, Some(0)), ("B", true, Some(1)), ("C", false, None)]);
    // B is time-sensitive (decay ln 3), finished in slot 1 against a target of 1 slot: 1 late.
    assert_eq!(oasis["jobs"][1]["class"], "time_sensitive");
    assert_eq!(oasis["time_sensitive"]["finished"], 1);
    assert_eq!(oasis["time_sensitive"]["mean_slots"], 1.0);
    assert!(oasis["time_critical"]["mean_slots"].is_null());
    // Options of the price estimate reach OASiS and its label.
    assert_eq!(simulate(&["--admission", "oasis:u=0.5:lowest=horizon"])["scheme"], "oasis:lowest=horizon:u=0.5");

    let mut expected = vec![
        ("fifo", 26.0, [Some(0), Some(1), None]),
        ("drf", 26.0, [Some(1), Some(1), None]),
        ("rrh", 28.0, [Some(0), None, Some(1)]),
    ];
    if cfg!(feature = "highs") {
        expected.push(("dorm", 14.0, [None, Some(1), Some(0)]));
    }
    for (name, utility, completions) in expected {
        let run = simulate(&["--admission", "accept_all", "--scheduling", name]);
        assert_eq!(run["scheme"], name);
        assert_eq!(run["admitted"], 3, "{name}");
        let done: Vec<Option<u64>> =
            run["jobs"].as_array().unwrap().iter().map(|j| j["completion_slot"].as_u64()).collect();
        assert_eq!(done, completions, "{name}");
        assert!(run["prices"].is_null() && run["competitive_ratio_bound"].is_null());
        assert!((run["total_utility"].as_f64().unwrap() - utility).abs() < 1e-9, "{name}: {run}");
    }
}

#[test]
fn simulate_writes_the_lateness_plot() {
    let plot = std::env::temp_dir().join(format!("arbiter-oasis-late-{}.svg", std::process::id()));
    let p = plot.to_str().unwrap();
    simulate(&["--scheduling", "drf", "--plot", p]);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("completion minus target") && svg.contains("time-sensitive (1 finished)"), "{svg}");
    let _ = std::fs::remove_file(plot);
}

#[test]
fn stages_and_flags_of_the_other_kind_of_trace_are_refused() {
    let fixture = "fixtures/oasis.json";
    let gavel_trace = std::env::temp_dir().join(format!("arbiter-oasis-gavel-{}.trace", std::process::id()));
    std::fs::write(&gavel_trace, "a\tpython3 a.py\tdir\t--steps\t1\t7200\t1\t1\t-1.000000\t0\n").unwrap();
    let gavel = gavel_trace.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["--trace", fixture], "missing_field", "admission"),
        (
            vec!["--trace", fixture, "--admission", "oasis", "--round-seconds", "60"],
            "malformed_request",
            "round_seconds",
        ),
        (vec!["--trace", fixture, "--admission", "oasis", "--cluster", "v100=1"], "malformed_request", "cluster"),
        // Fields are named with underscores, as the rest of the command line names them.
        (
            vec!["--trace", fixture, "--admission", "oasis", "--gpus-per-server", "8"],
            "malformed_request",
            "gpus_per_server",
        ),
        (vec!["--trace", fixture, "--scheduling", "drf", "--preemption", "none"], "malformed_request", "preemption"),
        // No scheme draws anything at random: the seed would only be ignored.
        (vec!["--trace", fixture, "--admission", "oasis", "--seed", "7"], "malformed_request", "seed"),
        (vec!["--trace", fixture, "--scheduling", "dorm", "--seed", "7"], "malformed_request", "seed"),
        (vec!["--trace", fixture, "--admission", "oasis", "--scheduling", "rrh"], "malformed_request", "scheduling"),
        (vec!["--trace", fixture, "--admission", "accept_x=1.2", "--scheduling", "rrh"], "unsupported", "admission"),
        (vec!["--trace", fixture, "--scheduling", "las"], "unknown_policy", "scheduling"),
        (vec!["--trace", fixture, "--admission", "oasis:u=-1"], "invalid_number", "admission"),
        (vec!["--trace", fixture, "--admission", "oasis:u=1e300"], "invalid_number", "admission"),
        (vec!["--trace", gavel, "--admission", "oasis"], "unsupported", "admission"),
        (vec!["--trace", gavel, "--scheduling", "dorm"], "unsupported", "scheduling"),
        (vec!["--trace", gavel, "--policy", "max_min_fairness"], "missing_field", "cluster"),
        (vec!["--trace", gavel, "--policy", "max_min_fairness", "--cluster", "v100=1"], "missing_field", "throughputs"),
    ];
    for (args, code, field) in cases {
        let mut full = vec!["simulate", "--output", "-"];
        full.extend(&args);
        assert_eq!(refusal(&full), (code.to_string(), field.to_string()), "{args:?}");
    }
    let sweep_cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["--policies", "oasis,las"], "unknown_policy", "policies"),
        (vec!["--policies", "oasis", "--loads", "1"], "malformed_request", "loads"),
        (vec!["--policies", "oasis", "--burst-jobs", "3"], "malformed_request", "burst_jobs"),
        (vec!["--policies", "drf", "--tenants", "3"], "malformed_request", "tenants"),
        (vec!["--policies", "rrh", "--jobs", "25,x"], "malformed_request", "jobs"),
        (vec!["--policies", "rrh", "--jobs", "0"], "invalid_number", "jobs"),
        // Workloads are drawn before any run: 10¹¹ jobs used to run out of memory.
        (vec!["--policies", "oasis", "--jobs", "25,100000000000"], "invalid_number", "jobs"),
        // Within the contract's magnitudes: u=1e300 was run and labelled with 301 digits.
        (vec!["--policies", "oasis:u=1e300"], "invalid_number", "policies"),
        (vec!["--policies", "oasis:l=1e-300"], "invalid_number", "policies"),
        (vec!["--policies", "las", "--cluster", "v100=1"], "missing_field", "throughputs"),
        (vec!["--policies", "las", "--jobs", "25,50"], "malformed_request", "jobs"),
    ];
    for (args, code, field) in sweep_cases {
        let mut full = vec!["sweep", "--output", "-"];
        full.extend(&args);
        assert_eq!(refusal(&full), (code.to_string(), field.to_string()), "{args:?}");
    }
    let _ = std::fs::remove_file(gavel_trace);
}

/// `arbiter sweep --policies oasis,fifo,drf,rrh` runs the same workloads as the study's own
/// runs (`study::run_all`), scheme by scheme: one row per (scheme, jobs, seed), each total
/// utility the study's.
#[test]
fn the_sweep_is_the_study() {
    let out = arbiter(&[
        "sweep",
        "--policies",
        "oasis,fifo,drf,rrh",
        "--jobs",
        "12,30",
        "--seeds",
        "3,4",
        "--threads",
        "2",
        "--output",
        "-",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut rows = text.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = rows.map(|r| r.split(',').collect()).collect();
    assert_eq!(rows.len(), 4 * 2 * 2, "{text}");
    for (jobs, seed) in [(12, 3), (30, 4)] {
        let study = run_all(&Settings::paper(jobs), seed, LowestUtility::AtShortest, Backend::default()).unwrap();
        for (scheme, run) in SCHEMES.iter().zip(&study.runs).filter(|(s, _)| **s != "dorm") {
            let row = rows
                .iter()
                .find(|r| r[0] == *scheme && r[1] == jobs.to_string() && r[2] == seed.to_string())
                .unwrap_or_else(|| panic!("{scheme} {jobs} {seed}: {text}"));
            let utility: f64 = row[column("total_utility")].parse().unwrap();
            assert!(
                (utility - run.total_utility).abs() < 1e-3,
                "{scheme} {jobs} {seed}: {utility} vs {}",
                run.total_utility
            );
            assert_eq!(row[column("admitted")], run.admitted.to_string());
            assert!(row[column("error")].is_empty());
        }
    }
}
