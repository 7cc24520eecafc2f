//! `arbiter simulate` and `arbiter sweep` from the outside: the command line scripts rely on, the
//! JSON it writes, refusals as the contract's error object with exit status 2, and (when Gavel's
//! data is present) the paper's Table 3 traces.

use crate::process::fed;
use std::path::{Path, PathBuf};
use std::process::Command;

const TABLE: &str = r#"{
  "v100": {"('a', 1)": {"null": 2.0, "('b', 1)": [1.5, 1.0]}, "('b', 1)": {"null": 1.0, "('a', 1)": [1.0, 1.5]}},
  "k80": {"('a', 1)": {"null": 0.5, "('b', 1)": [0.4, 0.3]}, "('b', 1)": {"null": 0.4, "('a', 1)": [0.3, 0.4]}}
}"#;
const TRACE: &str = "a\tpython3 a.py\tdir\t--steps\t1\t7200\t1\t1\t-1.000000\t0\n\
                     b\tpython3 b.py\tdir\t--steps\t1\t1800\t1\t1\t-1.000000\t0\n\
                     a\tpython3 a.py\tdir\t--steps\t1\t3600\t1\t5\t-1.000000\t1000\n";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("arbiter-simulator-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

fn arbiter(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_arbiter")).args(args).output().unwrap()
}

fn simulate_args<'a>(trace: &'a str, table: &'a str, output: &'a str) -> Vec<&'a str> {
    vec![
        "simulate",
        "--trace",
        trace,
        "--throughputs",
        table,
        "--cluster",
        "v100=1,k80=1",
        "--gpus-per-server",
        "1",
        "--policy",
        "max_min_fairness",
        "--output",
        output,
    ]
}

#[test]
fn simulate_writes_the_report_and_plot() {
    let dir = scratch("ok");
    let (trace, table) = (write(&dir, "t.trace", TRACE), write(&dir, "t.json", TABLE));
    let (output, plot) = (dir.join("out.json"), dir.join("cdf.svg"));
    let (output, plot) = (output.to_str().unwrap(), plot.to_str().unwrap());
    let mut args = simulate_args(&trace, &table, output);
    args.extend(["--heterogeneity-aware", "false", "--round-seconds", "360", "--seed", "3", "--plot", plot]);
    let out = arbiter(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(output).unwrap()).unwrap();
    for key in ["average_jct_seconds", "makespan_seconds", "utilization", "jobs", "jct_percentiles_seconds", "ftf_rho"]
    {
        assert!(report.get(key).is_some(), "missing {key}");
    }
    assert_eq!(report["jobs"].as_array().unwrap().len(), 3);
    assert_eq!(report["heterogeneity_aware"], false);
    assert_eq!(report["seed"], 3);
    assert!(std::fs::read_to_string(plot).unwrap().starts_with("<svg"));
    // Not a terminal: nothing on stderr.
    assert!(out.stderr.is_empty());
}

/// `--trace -` and `--throughputs -` read standard input, as `solve`, `rounds`, `estimate` and
/// `oasis` read `-`; both at once are refused naming the second, throughputs.
#[test]
fn simulate_reads_standard_input_for_one_input() {
    let dir = scratch("stdin");
    let (trace, table) = (write(&dir, "t.trace", TRACE), write(&dir, "t.json", TABLE));
    let jobs = |out: &std::process::Output| {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["jobs"].clone()
    };
    let from_files = jobs(&arbiter(&simulate_args(&trace, &table, "-")));
    assert_eq!(jobs(&fed(&simulate_args("-", &table, "-"), TRACE)), from_files);
    assert_eq!(jobs(&fed(&simulate_args(&trace, "-", "-"), TABLE)), from_files);

    let out = fed(&simulate_args("-", "-", "-"), TRACE);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let error: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(error["error"]["code"], "malformed_request", "{error}");
    assert_eq!(error["error"]["field"], "throughputs", "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("standard input"), "{error}");
}

/// A trace of any kind that starts with a UTF-8 byte-order mark reads as it does without one, as
/// `arbiter solve` reads a request (a mark used to make every JSON workload a Gavel trace, and
/// to glue itself to a Gavel trace's first job type).
#[test]
fn a_trace_may_start_with_a_byte_order_mark() {
    let dir = scratch("bom");
    let table = write(&dir, "t.json", TABLE);
    let job = r#"{"job_type": "a", "total_steps": 10, "scale_factor": 1, "weight": 1, "slo_seconds": null, "arrival_seconds": 0}"#;
    let fixture = |name: &str| std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap();
    let rounds =
        ["--throughputs", &table, "--cluster", "v100=1,k80=1", "--gpus-per-server", "1", "--scheduling", "las"];
    let cases: [(&str, String, &[&str]); 4] = [
        ("gavel.trace", TRACE.to_string(), &rounds),
        ("jobs.json", format!(r#"{{"jobs": [{job}]}}"#), &rounds),
        ("fitgpp.json", fixture("fixtures/fitgpp.json"), &["--preemption", "fitgpp"]),
        ("oasis.json", fixture("fixtures/oasis.json"), &["--admission", "oasis"]),
    ];
    for (name, text, flags) in cases {
        let mut jobs = Vec::new();
        for (file, text) in [(name.to_string(), text.clone()), (format!("bom-{name}"), format!("\u{feff}{text}"))] {
            let trace = write(&dir, &file, &text);
            let mut args = vec!["simulate", "--trace", &trace, "--output", "-"];
            args.extend(flags);
            let out = arbiter(&args);
            assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            jobs.push(report["jobs"].clone());
        }
        assert!(jobs[0].as_array().is_some_and(|j| !j.is_empty()), "{name}");
        assert_eq!(jobs[0], jobs[1], "{name}");
    }
}

/// The policy is solved over round configurations unless told otherwise (`--realizable false`),
/// or unless space sharing is on, where `--realizable` alone turns it on.
#[test]
fn simulate_solves_over_round_configurations_by_default() {
    let dir = scratch("realizable");
    let (trace, table) = (write(&dir, "t.trace", TRACE), write(&dir, "t.json", TABLE));
    let output = dir.join("out.json").to_string_lossy().into_owned();
    for (extra, realizable) in [
        (vec![], true),
        (vec!["--realizable", "false"], false),
        (vec!["--realizable"], true),
        (vec!["--space-sharing"], false),
        (vec!["--space-sharing", "--realizable"], true),
    ] {
        let mut args = simulate_args(&trace, &table, &output);
        args.extend(&extra);
        let out = arbiter(&args);
        assert!(out.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
        assert_eq!(report["realizable"], realizable, "{extra:?}");
        assert_eq!(report["jobs_finished"], 3, "{extra:?}");
    }
}

/// `args` with `extra` flags, a flag it has already taking the new value.
fn with_flags<'a>(mut args: Vec<&'a str>, extra: &[&'a str]) -> Vec<&'a str> {
    for pair in extra.chunks(2) {
        match args.iter().position(|a| *a == pair[0]) {
            Some(i) if pair.len() == 2 => args[i + 1] = pair[1],
            _ => args.extend(pair),
        }
    }
    args
}

/// The tie-break follows each optimum unless Gavel's fractional allocations are asked for
/// (`--realizable false`: its bare vertices), and `--tie-break` says otherwise.
#[test]
fn simulate_tie_breaks_unless_reproducing_gavel() {
    let dir = scratch("tie-break");
    let (trace, table) = (write(&dir, "t.trace", TRACE), write(&dir, "t.json", TABLE));
    let output = dir.join("out.json").to_string_lossy().into_owned();
    for (extra, tie_break) in [
        (vec![], "throughput"),
        (vec!["--realizable", "false"], "none"),
        (vec!["--realizable", "false", "--tie-break", "throughput"], "throughput"),
        (vec!["--tie-break", "water_filling"], "water_filling"),
        (vec!["--policy", "finish_time_fairness"], "throughput"),
        (vec!["--policy", "max_sum_throughput"], "none"),
    ] {
        let args = with_flags(simulate_args(&trace, &table, &output), &extra);
        let out = arbiter(&args);
        assert!(out.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
        assert_eq!(report["tie_break"], tie_break, "{extra:?}");
        assert_eq!(report["jobs_finished"], 3, "{extra:?}");
    }
    for (extra, code) in [
        (vec!["--tie-break", "fair"], "malformed_request"),
        (vec!["--policy", "min_makespan", "--tie-break", "water_filling"], "unsupported"),
    ] {
        let args = with_flags(simulate_args(&trace, &table, &output), &extra);
        let out = arbiter(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let error: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(error["error"]["code"], code, "{extra:?}: {error}");
        assert_eq!(error["error"]["field"], "tie_break", "{extra:?}: {error}");
    }
}

#[test]
fn simulate_refuses_bad_input_with_the_error_object() {
    let dir = scratch("bad");
    let (trace, table) = (write(&dir, "t.trace", TRACE), write(&dir, "t.json", TABLE));
    let output = dir.join("out.json").to_string_lossy().into_owned();
    let unknown_type = write(&dir, "u.trace", "c\tcmd\tdir\t-s\t1\t10\t1\t1\t-1\t0\n");
    let short_line = write(&dir, "s.trace", "a\tcmd\n");
    let bad_table = write(&dir, "b.json", r#"{"v100": {"('a', 1)": {"null": "fast"}}}"#);
    let job = r#"{"job_type": "a", "total_steps": 10, "scale_factor": 1, "weight": 1, "slo_seconds": null, "arrival_seconds": 0"#;
    let misspelled = write(&dir, "m.json", &format!(r#"{{"jobs": [{job}, "slo_secs": 5}}]}}"#));
    let empty = write(&dir, "e.json", r#"{"jobs": []}"#);
    let empty_gavel = write(&dir, "e.trace", "");
    let weightless = write(&dir, "w.json", &format!(r#"{{"jobs": [{job}, "tenant": "t"}}], "tenants": {{"t": 0}}}}"#));
    // Past 10⁹ s a round's seconds vanish in rounding: 1e20 gave a JCT of 0, 1e300 was taken.
    let late_gavel = write(&dir, "l.trace", &TRACE.replace("\t1000\n", "\t1e20\n"));
    let late_job = job.replace(r#""arrival_seconds": 0"#, r#""arrival_seconds": 1e300"#);
    let late = write(&dir, "l.json", &format!(r#"{{"jobs": [{late_job}}}]}}"#));
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["--policy", "las"], "unknown_policy", "policy"),
        (vec!["--cluster", "v100"], "malformed_request", "cluster"),
        (vec!["--cluster", "a100=4"], "unknown_worker_type", "cluster"),
        (vec!["--window", "2:1"], "invalid_number", "window"),
        (vec!["--round-seconds", "0"], "invalid_number", "round_seconds"),
        (vec!["--profiled-types", "0"], "invalid_number", "profiled_types"),
        (vec!["--profiled-types", "3"], "invalid_number", "profiled_types"),
        (vec!["--round-seconds", "-1"], "invalid_number", "round_seconds"),
        (vec!["--min-solve-seconds", "-1"], "invalid_number", "min_solve_seconds"),
        (vec!["--min-solve-seconds", "1e300"], "invalid_number", "min_solve_seconds"),
        (vec!["--synthesizer", "every=1,every=2"], "malformed_request", "synthesizer"),
        // Named as the flag, not as `metric` or `every_rounds`.
        (vec!["--synthesizer", "metric=speed"], "malformed_request", "synthesizer"),
        (vec!["--synthesizer", "every=0"], "invalid_number", "synthesizer"),
        (vec!["--policy", "min_cost"], "missing_field", "prices"),
        (vec!["--policy", "min_cost", "--prices", "v100=1e300,k80=1"], "invalid_number", "prices.v100"),
        (vec!["--prices", "v100=1,k80=1e-300"], "invalid_number", "prices.k80"),
        (vec!["--trace", &unknown_type], "job_cannot_run", "trace.line[1].job_type"),
        (vec!["--trace", &short_line], "malformed_request", "trace.line[1]"),
        (vec!["--throughputs", &bad_table], "malformed_request", "throughputs.v100.('a', 1).null"),
        (vec!["--trace", "/nonexistent/trace"], "malformed_request", "trace"),
        // A misspelled field is refused, not ignored; a trace of no jobs simulates nothing.
        (vec!["--trace", &misspelled], "malformed_request", "trace.jobs[0].slo_secs"),
        (vec!["--trace", &empty], "missing_field", "trace.jobs"),
        (vec!["--trace", &empty_gavel], "missing_field", "trace.jobs"),
        (vec!["--trace", &weightless], "invalid_number", "trace.tenants.t"),
        (vec!["--trace", &late_gavel], "invalid_number", "trace.line[3].arrival_seconds"),
        (vec!["--trace", &late], "invalid_number", "trace.jobs[0].arrival_seconds"),
        // A destination that cannot be written is refused before the run, not after it.
        (vec!["--plot", "/nonexistent/dir/cdf.svg"], "malformed_request", "plot"),
        (vec!["--output", "/nonexistent/dir/report.json"], "malformed_request", "output"),
        // An SVG cannot go to standard output (it went to a file named `-`), and two flags naming
        // one file would overwrite each other.
        (vec!["--output", "-", "--plot", "-"], "malformed_request", "plot"),
        (vec!["--plot", &output], "malformed_request", "plot"),
        // A directory is refused before the run, as a missing one is.
        (vec!["--output", dir.to_str().unwrap()], "malformed_request", "output"),
        (vec!["--plot", dir.to_str().unwrap()], "malformed_request", "plot"),
    ];
    for (overrides, code, field) in cases {
        let args = with_flags(simulate_args(&trace, &table, &output), &overrides);
        let out = arbiter(&args);
        assert_eq!(out.status.code(), Some(2), "{overrides:?}");
        let error: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(error["error"]["code"], code, "{overrides:?}: {error}");
        assert_eq!(error["error"]["field"], field, "{overrides:?}: {error}");
    }
}

/// A job the run cannot place is named where the trace has it (a Gavel trace's line), and the
/// message says what is missing: the job type from the throughput file, the job type at its scale
/// factor, or a worker type of the cluster with GPUs enough.
#[test]
fn a_job_that_cannot_run_is_named_by_its_line_and_what_is_missing() {
    let dir = scratch("cannot-run");
    let table = write(
        &dir,
        "t.json",
        &TABLE.replace(r#""('b', 1)": {"null": 0.4"#, r#""('a', 2)": {"null": 1.0}, "('b', 1)": {"null": 0.4"#),
    );
    let first = "a\tcmd\tdir\t-s\t1\t10\t1\t1\t-1\t0\n\n";
    let json_job = r#"{"job_type": "Foo", "total_steps": 10, "scale_factor": 1, "weight": 1, "slo_seconds": null, "arrival_seconds": 0}"#;
    let cases = [
        (
            format!("{first}Foo\tcmd\tdir\t-s\t1\t10\t2\t1\t-1\t0\n"),
            "trace.line[3].job_type",
            "job type \"Foo\" is not in the throughput file",
        ),
        (
            format!("{first}b\tcmd\tdir\t-s\t1\t10\t2\t1\t-1\t0\n"),
            "trace.line[3].scale_factor",
            "job type \"b\" is not in the throughput file at scale factor 2 (only at 1)",
        ),
        (
            format!("{first}a\tcmd\tdir\t-s\t1\t10\t2\t1\t-1\t0\n"),
            "trace.line[3]",
            "job type \"a\" at scale factor 2 has no throughput on any worker type of the cluster with 2 GPUs",
        ),
        (
            format!(r#"{{"jobs": [{json_job}]}}"#),
            "trace.jobs[0].job_type",
            "job type \"Foo\" is not in the throughput file",
        ),
    ];
    for (i, (text, field, message)) in cases.iter().enumerate() {
        let trace = write(&dir, &format!("{i}.trace"), text);
        let mut args = vec!["simulate", "--trace", &trace, "--throughputs", &table, "--cluster", "v100=1,k80=1"];
        args.extend(["--gpus-per-server", "1", "--policy", "max_min_fairness", "--output", "-"]);
        let out = arbiter(&args);
        assert_eq!(out.status.code(), Some(2), "{text}");
        let error: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(error["error"]["code"], "job_cannot_run", "{error}");
        assert_eq!(error["error"]["field"], *field, "{error}");
        assert_eq!(error["error"]["message"], *message, "{error}");
    }
}

#[test]
fn a_list_policy_refuses_what_only_shapes_an_lp_allocation() {
    let dir = scratch("list-flags");
    let (trace, table) = (write(&dir, "t.trace", TRACE), write(&dir, "t.json", TABLE));
    let cases: [(&[&str], &str, &str); 7] = [
        (&["--tie-break", "water_filling"], "unsupported", "tie_break"),
        (&["--profiled-types", "1"], "unsupported", "profiled_types"),
        (&["--configurations"], "unsupported", "configurations"),
        (&["--realizable", "false"], "unsupported", "realizable"),
        (&["--work-conserving", "false"], "unsupported", "work_conserving"),
        (&["--min-solve-seconds", "600"], "unsupported", "min_solve_seconds"),
        (&["--restart-seconds", "1e300"], "invalid_number", "restart_seconds"),
    ];
    for (extra, code, field) in cases {
        let mut args = vec!["simulate", "--trace", &trace, "--throughputs", &table, "--cluster", "v100=1,k80=1"];
        args.extend(["--scheduling", "srtf", "--output", "-"]);
        args.extend(extra);
        let out = arbiter(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let error: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(error["error"]["code"], code, "{extra:?}: {error}");
        assert_eq!(error["error"]["field"], field, "{extra:?}: {error}");
    }
    // The same run without them is fine.
    let args = ["simulate", "--trace", &trace, "--throughputs", &table, "--cluster", "v100=1,k80=1"];
    let out = arbiter(&[&args[..], &["--scheduling", "srtf", "--output", "-"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_run_past_the_rounds_it_plays_is_refused_not_left_running() {
    // 10¹² steps at 2 steps/s: 1.4·10¹⁰ rounds of 6 minutes. The run stops at 10⁷ rounds and
    // says why (it used to run for hours).
    let dir = scratch("endless");
    let trace = write(&dir, "t.trace", "a\tpython3 a.py\tdir\t--steps\t1\t1000000000000\t1\t1\t-1.000000\t0\n");
    let table = write(&dir, "t.json", TABLE);
    let out = arbiter(&[
        "simulate",
        "--trace",
        &trace,
        "--throughputs",
        &table,
        "--cluster",
        "v100=1,k80=1",
        "--scheduling",
        "las",
        "--output",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let error: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(error["error"]["code"], "unsupported", "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("10000000 rounds"), "{error}");
}

/// What a sweep would refuse in every run, or could not hold, is refused before it generates any
/// trace: a burst of 10⁸ jobs took 5.5 GB, 10,000 threads 2 GB.
#[test]
fn a_sweep_refuses_at_once_what_no_run_could_take() {
    let dir = scratch("sweep-refused");
    let table = write(&dir, "t.json", TABLE);
    let csv = dir.join("o.csv").to_string_lossy().into_owned();
    let directory = dir.to_str().unwrap();
    let fairness = dir.join("f").to_string_lossy().into_owned();
    let cases: [(&[&str], &str, &str); 27] = [
        (&["--plot", "/nonexistent/dir/jct.svg"], "plot", "malformed_request"),
        (&["--plot", directory], "plot", "malformed_request"),
        (&["--output", directory], "output", "malformed_request"),
        (&["--fairness-plots", "/nonexistent/dir/f"], "fairness_plots", "malformed_request"),
        // A prefix of two SVG files, not standard output (they were `--tenants.svg`, `--jobs.svg`).
        (&["--tenants", "2", "--fairness-plots", "-"], "fairness_plots", "malformed_request"),
        (&["--cdf-plot", "-"], "cdf_plot", "malformed_request"),
        (&["--output", &csv, "--cdf-plot", &csv], "cdf_plot", "malformed_request"),
        (&["--tenants", "1001"], "tenants", "invalid_number"),
        (&["--tenants", "18446744073709551615"], "tenants", "invalid_number"),
        (&["--seeds", "0,0"], "seeds", "malformed_request"),
        (&["--loads", "1,2,1"], "loads", "malformed_request"),
        (&["--policies", "las,max_min_fairness,las"], "policies", "malformed_request"),
        // A modifier, a stage or an option named twice: one of them would be ignored.
        (&["--policies", "max_min_fairness:agnostic:agnostic"], "policies", "malformed_request"),
        (&["--policies", "las:admission=accept_all:admission=accept_x=1.2"], "policies", "malformed_request"),
        (&["--policies", "synthesizer:every=1:every=2"], "policies", "malformed_request"),
        // The synthesizer's options name the entry they came in, not `metric` or `every_rounds`.
        (&["--policies", "synthesizer:metric=speed"], "policies", "malformed_request"),
        (&["--policies", "synthesizer:every=0"], "policies", "invalid_number"),
        (&["--threads", "5000"], "threads", "invalid_number"),
        (&["--burst-jobs", "100000000"], "burst_jobs", "invalid_number"),
        (&["--jobs", "0"], "jobs", "invalid_number"),
        (&["--jobs", "100000000"], "jobs", "invalid_number"),
        (&["--loads", "1e300"], "loads", "invalid_number"),
        // Generated traces are checked as read ones are: arrivals past 10⁹ s were simulated.
        (&["--loads", "1e-9"], "loads", "invalid_number"),
        (&["--round-seconds", "0"], "round_seconds", "invalid_number"),
        (&["--window", "5:3"], "window", "invalid_number"),
        (&["--cdf-load", "7"], "cdf_load", "invalid_number"),
        // Without --tenants the fairness plots were written empty.
        (&["--fairness-plots", &fairness], "fairness_plots", "malformed_request"),
    ];
    for (extra, field, code) in cases {
        let mut args = vec!["sweep", "--throughputs", &table, "--cluster", "v100=2,k80=2", "--jobs", "20"];
        args.extend(["--policies", "max_min_fairness,las", "--loads", "1", "--output", "-"]);
        let out = arbiter(&with_flags(args, extra));
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(out.stdout.is_empty(), "{extra:?}: no row is written");
        let error: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(error["error"]["code"], code, "{extra:?}: {error}");
        assert_eq!(error["error"]["field"], field, "{extra:?}: {error}");
    }
}

/// A sweep's refusals say what is wrong: a window backwards (not bounded by usize::MAX jobs), a
/// --cdf-load under --static (which has no loads), a GPU count past u32's (its limit said).
#[test]
fn sweep_refusals_say_what_is_wrong() {
    let dir = scratch("sweep-messages");
    let table = write(&dir, "t.json", TABLE);
    let cases: [(&[&str], &str, &str, &str); 3] = [
        (&["--window", "3:2"], "window", "invalid_number", "the window 3:2 must have first < last"),
        (
            &["--static", "--cdf-load", "1"],
            "cdf_load",
            "malformed_request",
            "--cdf-load picks the load of the CDF plots, and a --static sweep has none: every job arrives at time 0",
        ),
        (
            &["--cluster", "v100=1e20"],
            "cluster.v100",
            "invalid_number",
            "a GPU count must be a whole number from 0 to 4294967295, got 1e20",
        ),
    ];
    for (extra, field, code, message) in cases {
        let mut args = vec!["sweep", "--throughputs", &table, "--jobs", "20", "--policies", "las", "--output", "-"];
        if !extra.contains(&"--cluster") {
            args.extend(["--cluster", "v100=2,k80=2"]);
        }
        args.extend(extra);
        let out = arbiter(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let error: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(error["error"]["code"], code, "{extra:?}: {error}");
        assert_eq!(error["error"]["field"], field, "{extra:?}: {error}");
        assert_eq!(error["error"]["message"], message, "{extra:?}: {error}");
    }
}

#[test]
fn sweep_writes_one_row_per_simulation_and_plots() {
    let dir = scratch("sweep");
    let table = write(&dir, "t.json", TABLE);
    let (csv, plot, cdf) = (dir.join("s.csv"), dir.join("jct.svg"), dir.join("cdf.svg"));
    let out = arbiter(&[
        "sweep",
        "--throughputs",
        &table,
        "--cluster",
        "v100=2,k80=2",
        "--gpus-per-server",
        "2",
        "--policies",
        "max_min_fairness:agnostic,max_min_fairness",
        "--loads",
        "1,2",
        "--seeds",
        "0,1",
        "--jobs",
        "20",
        "--window",
        "5:15",
        "--threads",
        "2",
        "--output",
        csv.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
        "--cdf-plot",
        cdf.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 1 + 2 * 2 * 2, "{text}");
    assert!(rows[0].starts_with("variant,policy,heterogeneity_aware"));
    // Every simulation measured its 10 jobs, solved realizably (the default) and none failed.
    assert!(rows[1..].iter().all(|r| r.contains(",10,") && r.ends_with(",true,")), "{text}");
    for svg in [plot, cdf] {
        let svg = std::fs::read_to_string(svg).unwrap();
        assert_eq!(svg.matches("<polyline").count(), 2);
    }
    // `--realizable false`: Gavel's fractional allocations.
    let fractional = arbiter(&[
        "sweep",
        "--throughputs",
        &table,
        "--cluster",
        "v100=2,k80=2",
        "--policies",
        "max_min_fairness",
        "--jobs",
        "10",
        "--realizable",
        "false",
        "--output",
        "-",
    ]);
    assert!(fractional.status.success(), "{}", String::from_utf8_lossy(&fractional.stderr));
    let text = String::from_utf8(fractional.stdout).unwrap();
    assert!(text.lines().nth(1).is_some_and(|r| r.ends_with(",false,")), "{text}");
    let bad =
        arbiter(&["sweep", "--throughputs", &table, "--cluster", "v100=2", "--policies", "lass", "--output", "-"]);
    assert_eq!(bad.status.code(), Some(2));
    // Every run failed (a window past the trace): the rows say why, and the sweep fails with it.
    let sweep = |extra: &[&str]| {
        let mut args = vec!["sweep", "--throughputs", &table, "--cluster", "v100=2,k80=2", "--policies"];
        args.extend(["max_min_fairness", "--jobs", "5", "--loads", "1,2", "--output", "-"]);
        args.extend(extra);
        arbiter(&args)
    };
    let failed = sweep(&["--window", "3:10"]);
    assert_eq!(failed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&failed.stdout).contains("window"), "the rows are written first");
    let error: serde_json::Value = serde_json::from_slice(&failed.stderr).unwrap();
    assert!(error["error"]["message"].as_str().unwrap().contains("every run of the sweep failed"), "{error}");
    // A CDF at a load the sweep did not run.
    let cdf_at = dir.join("cdf3.svg");
    let off = sweep(&["--cdf-plot", cdf_at.to_str().unwrap(), "--cdf-load", "3"]);
    assert_eq!(off.status.code(), Some(2));
    let error: serde_json::Value = serde_json::from_slice(&off.stderr).unwrap();
    assert_eq!(error["error"]["field"], "cdf_load", "{error}");
}

/// `sweep --throughputs -` reads the table from standard input, as `simulate` does (it was taken
/// as a file named `-`).
#[test]
fn sweep_reads_the_throughputs_from_standard_input() {
    let dir = scratch("sweep-stdin");
    let table = write(&dir, "t.json", TABLE);
    let sweep = |table: &str| {
        let args = ["sweep", "--throughputs", table, "--cluster", "v100=2,k80=2", "--policies", "las", "--jobs", "10"];
        let out = fed(&with_flags(args.to_vec(), &["--loads", "1,2", "--output", "-"]), TABLE);
        assert!(out.status.success(), "--throughputs {table}: {}", String::from_utf8_lossy(&out.stderr));
        // Every column but the run's wall_seconds.
        let rows = String::from_utf8(out.stdout).unwrap();
        let columns = |row: &str| -> Vec<String> {
            row.split(',').enumerate().filter(|(i, _)| *i != 18).map(|(_, c)| c.to_string()).collect()
        };
        rows.lines().map(columns).collect::<Vec<_>>()
    };
    let from_file = sweep(&table);
    assert_eq!(from_file[0][17], "rounds", "{:?}", from_file[0]);
    assert_eq!(from_file.len(), 3);
    assert_eq!(sweep("-"), from_file);
}

/// Gavel's data, when this checkout sits next to it (`ARBITER_GAVEL_DATA` or `../shared/data/gavel`).
fn gavel_data() -> Option<PathBuf> {
    let dir = std::env::var_os("ARBITER_GAVEL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/gavel"));
    if dir.join("traces/max_min_fairness.trace").is_file() {
        Some(dir)
    } else {
        eprintln!("note: Gavel's data is not at {} (set ARBITER_GAVEL_DATA); skipping", dir.display());
        None
    }
}

fn table3(data: &Path, trace: &str, policy: &str, extra: &[&str]) -> serde_json::Value {
    let out_path = scratch("table3").join(format!("{trace}-{policy}-{}.json", extra.join("")));
    let trace_path = data.join("traces").join(trace);
    let table_path = data.join("simulation_throughputs.json");
    let mut args = vec![
        "simulate",
        "--trace",
        trace_path.to_str().unwrap(),
        "--throughputs",
        table_path.to_str().unwrap(),
        "--cluster",
        "v100=8,p100=16,k80=24",
        "--gpus-per-server",
        "4",
        "--policy",
        policy,
        // Gavel's fractional allocations, as the numbers compared with its simulator need.
        "--realizable",
        "false",
        "--output",
        out_path.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = arbiter(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap()
}

/// The paper's Table 3 traces: every job finishes, heterogeneity-aware LAS beats the type-blind
/// one, and `min_makespan` and `gandiva` land within 15% of Gavel's own simulator (17.98 h and
/// 21.1 h of makespan), as does aware LAS (4.06 h average JCT).
#[test]
fn table3_traces() {
    let Some(data) = gavel_data() else { return };
    let hours = |r: &serde_json::Value, key: &str| r[key].as_f64().unwrap() / 3600.0;
    let within = |value: f64, target: f64| (value - target).abs() / target < 0.15;
    let aware = table3(&data, "max_min_fairness.trace", "max_min_fairness", &[]);
    let agnostic = table3(&data, "max_min_fairness.trace", "max_min_fairness", &["--heterogeneity-aware", "false"]);
    assert_eq!(aware["jobs_finished"], 96);
    assert!(hours(&aware, "average_jct_seconds") < hours(&agnostic, "average_jct_seconds"));
    assert!(within(hours(&aware, "average_jct_seconds"), 4.06), "{}", hours(&aware, "average_jct_seconds"));
    let makespan = table3(&data, "minimize_makespan.trace", "min_makespan", &[]);
    assert!(within(hours(&makespan, "makespan_seconds"), 17.98), "{}", hours(&makespan, "makespan_seconds"));
    let gandiva = table3(&data, "minimize_makespan.trace", "gandiva", &[]);
    assert!(within(hours(&gandiva, "makespan_seconds"), 21.1), "{}", hours(&gandiva, "makespan_seconds"));
    assert!(hours(&makespan, "makespan_seconds") < hours(&gandiva, "makespan_seconds"));
}

/// Estimated throughputs (`--profiled-types K`): with every type profiled nothing is estimated and
/// the run is today's to the second; with one type profiled every job still finishes and the
/// average JCT stays between the aware and the type-blind policy's.
#[test]
fn estimated_throughputs_cost_little_and_vanish_when_every_type_is_measured() {
    let Some(data) = gavel_data() else { return };
    let jct = |r: &serde_json::Value| r["average_jct_seconds"].as_f64().unwrap();
    let truth = table3(&data, "max_min_fairness.trace", "max_min_fairness", &[]);
    let all = table3(&data, "max_min_fairness.trace", "max_min_fairness", &["--profiled-types", "3"]);
    assert_eq!(jct(&all), jct(&truth));
    let one = table3(&data, "max_min_fairness.trace", "max_min_fairness", &["--profiled-types", "1"]);
    let blind = table3(&data, "max_min_fairness.trace", "max_min_fairness", &["--heterogeneity-aware", "false"]);
    assert_eq!(one["jobs_measured"], truth["jobs_measured"]);
    assert!(
        jct(&one) >= jct(&truth) * 0.99 && jct(&one) < jct(&blind),
        "{} vs {} / {}",
        jct(&one),
        jct(&truth),
        jct(&blind)
    );
}
