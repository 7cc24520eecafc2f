//! The `arbiter` binary: `solve --input FILE|-`, its exit status and error object on bad input,
//! `--help`, and `demo`.

use crate::common::process::fed;
use crate::common::*;
use serde_json::Value;
use std::process::{Command, Output};

fn arbiter(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbiter")).args(args).output().expect("the binary runs")
}

fn stdout_json(out: &Output) -> Value {
    assert!(out.status.success(), "exit {:?}, stderr: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Exit status 2, nothing on stdout, and exactly one `{"error": {...}}` object on stderr.
fn error_json(out: &Output) -> Value {
    assert_eq!(out.status.code(), Some(2), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "nothing on stdout on failure");
    let err: Value = serde_json::from_slice(&out.stderr)
        .unwrap_or_else(|e| panic!("stderr is not one JSON object ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert!(err["error"]["code"].is_string(), "{err}");
    assert!(err["error"]["message"].is_string(), "{err}");
    err
}

/// The CLI's answer is the library's: the paper example's objective and allocation.
fn assert_paper_answer(response: &Value) {
    let expected = fixture_json("paper_worked_example.expected.json");
    assert_eq!(response["policy"], "max_min_fairness");
    assert_close(response["objective"].as_f64().unwrap(), 8.0 / 11.0, 1e-6, "objective");
    for (job, row) in expected["allocation"].as_object().unwrap() {
        for (w, want) in row.as_object().unwrap() {
            let got = response["allocation"][job][w].as_f64().unwrap();
            assert!((got - want.as_f64().unwrap()).abs() < 1e-6, "{job}/{w}");
        }
    }
    assert!(response["effective_throughput"]["j0"].is_number());
    assert_eq!(response["stats"]["backend"], "highs");
    assert!(response["stats"]["lp_solves"].as_u64().unwrap() >= 1);
}

#[test]
fn solve_reads_a_file() {
    let path = fixture_path("paper_worked_example.json");
    let out = arbiter(&["solve", "--input", &path]);
    let response = stdout_json(&out);
    assert_paper_answer(&response);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim().lines().count(), 1, "compact output is one line");
}

#[test]
fn solve_reads_a_file_named_without_its_flag() {
    let path = fixture_path("paper_worked_example.json");
    assert_paper_answer(&stdout_json(&arbiter(&["solve", &path])));
    assert_paper_answer(&stdout_json(&fed(&["solve", "-"], &fixture_text("paper_worked_example.json"))));
    // One request at a time: two files are refused naming no field (a file is none), a file
    // and `--input` naming the flag.
    for (args, field) in
        [(&["solve", &path, &path][..], Value::Null), (&["solve", "--input", &path, &path], "input".into())]
    {
        let out = arbiter(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err: Value = serde_json::from_slice(&out.stderr).expect("the contract's error object");
        assert_eq!(
            (&err["error"]["code"], &err["error"]["field"]),
            (&Value::from("malformed_request"), &field),
            "{args:?}"
        );
    }
}

#[test]
fn solve_reads_stdin() {
    let out = fed(&["solve", "--input", "-"], &fixture_text("paper_worked_example.json"));
    assert_paper_answer(&stdout_json(&out));
}

#[test]
fn solve_and_rounds_name_the_fields_the_contract_does_not_know() {
    let mut request: Value = serde_json::from_str(&fixture_text("paper_worked_example.json")).unwrap();
    request["jobs"][0]["wieght"] = Value::from(3);
    request["tie_brake"] = Value::from("none");
    let out = fed(&["solve", "-"], &request.to_string());
    let response = stdout_json(&out);
    assert_paper_answer(&response);
    assert_eq!(response["ignored_fields"], serde_json::json!(["jobs[0].wieght", "tie_brake"]));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("warning: jobs[0].wieght is not a field of the contract; it was ignored"), "{said}");
    let out = fed(&["rounds", "--input", "-", "--rounds", "2"], &request.to_string());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: tie_brake is not a field"));
    // Nothing to say, nothing said.
    let out = fed(&["solve", "-"], &fixture_text("paper_worked_example.json"));
    assert!(stdout_json(&out).get("ignored_fields").is_none());
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn solve_pretty_prints_the_same_response() {
    let path = fixture_path("paper_worked_example.json");
    let out = arbiter(&["solve", "--input", &path, "--pretty"]);
    let response = stdout_json(&out);
    assert_paper_answer(&response);
    assert!(String::from_utf8_lossy(&out.stdout).lines().count() > 5);
}

#[test]
fn solve_refuses_bad_input_with_exit_2() {
    let out = fed(&["solve", "--input", "-"], "{ this is not json");
    let err = error_json(&out);
    assert_eq!(err["error"]["code"], "malformed_request");

    let mut request = fixture_json("paper_worked_example.json");
    request["jobs"][2]["throughput"]["v100"] = Value::from(-3.0);
    let out = fed(&["solve", "--input", "-"], &request.to_string());
    let err = error_json(&out);
    assert_eq!(err["error"]["code"], "invalid_number");
    assert_eq!(err["error"]["field"], "jobs[2].throughput.v100");

    let mut request = fixture_json("paper_worked_example.json");
    request["policy"] = Value::from("no_such_policy");
    let out = fed(&["solve", "--input", "-"], &request.to_string());
    let err = error_json(&out);
    assert_eq!(err["error"]["code"], "unknown_policy");
    assert_eq!(err["error"]["field"], "policy");
}

#[test]
fn solve_reports_infeasible_slos_with_the_jobs() {
    let path = fixture_path("policies/min_cost_slo_infeasible.json");
    let err = error_json(&arbiter(&["solve", "--input", &path]));
    assert_eq!(err["error"]["code"], "infeasible");
    assert_eq!(err["error"]["jobs"], serde_json::json!(["a", "b"]));
}

#[test]
fn solve_refuses_a_missing_file() {
    let path = fixture_path("no_such_request.json");
    let err = error_json(&arbiter(&["solve", "--input", &path]));
    assert_eq!(err["error"]["code"], "malformed_request");
    assert!(err["error"]["message"].as_str().unwrap().contains("no_such_request.json"), "{err}");
}

#[test]
fn solve_refuses_an_unknown_backend() {
    let path = fixture_path("paper_worked_example.json");
    let err = error_json(&arbiter(&["solve", "--input", &path, "--backend", "cplex"]));
    assert_eq!(err["error"]["code"], "unsupported");
    assert!(err["error"]["message"].as_str().unwrap().contains("cplex"));
}

#[test]
fn solve_takes_the_method_from_the_command_line() {
    let path = fixture_path("paper_worked_example.json");
    for method in ["lp", "decomposition", "auto"] {
        let response = stdout_json(&arbiter(&["solve", "--input", &path, "--method", method]));
        assert_paper_answer(&response);
        let ran = response["stats"]["method"]["method"].as_str().unwrap().to_string();
        // `auto` keeps the plain LP on a handful of jobs; `decomposition` certifies this one.
        let want = if method == "decomposition" { "decomposition" } else { "lp" };
        assert_eq!(ran, want, "--method {method}: {}", response["stats"]);
    }
    let err = error_json(&arbiter(&["solve", "--input", &path, "--method", "simplex"]));
    assert_eq!(err["error"]["code"], "malformed_request");
    assert_eq!(err["error"]["field"], "method");
}

#[test]
fn solve_needs_an_input() {
    let out = arbiter(&["solve"]);
    assert_eq!(out.status.code(), Some(2));
    let err: Value = serde_json::from_slice(&out.stderr).expect("the contract's error object");
    assert_eq!((&err["error"]["code"], &err["error"]["field"]), (&Value::from("missing_field"), &Value::from("input")));
    assert!(err["error"]["message"].as_str().unwrap().contains("--input"));
}

#[test]
fn flags_clap_cannot_parse_get_the_contracts_error_object() {
    for (args, code, field) in [
        (&["simulate", "--round-seconds", "abc"][..], "malformed_request", Some("round_seconds")),
        (&["solve", "--input", "x", "--no-such-flag"][..], "malformed_request", Some("no_such_flag")),
        (&["no-such-command"][..], "malformed_request", None),
    ] {
        let out = arbiter(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err: Value = serde_json::from_slice(&out.stderr).expect("the contract's error object");
        assert_eq!(err["error"]["code"], code, "{args:?}");
        assert_eq!(err["error"]["field"].as_str(), field, "{args:?}");
    }
    // Without a command: the help, on standard error, and status 2.
    let out = arbiter(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage"));
}

#[test]
fn help_mentions_the_subcommands() {
    let out = arbiter(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("solve"), "{text}");
    assert!(text.contains("demo"), "{text}");

    let out = arbiter(&["solve", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--input"), "{text}");
    assert!(text.contains("--pretty"), "{text}");

    // `help --help` was clap's "unrecognized subcommand", as a JSON error.
    for flag in ["--help", "-h"] {
        let out = arbiter(&["help", flag]);
        assert!(out.status.success(), "{flag}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("solve") && text.contains("Usage"), "{flag}: {text}");
    }
}

#[test]
fn demo_prints_a_table() {
    let out = arbiter(&["demo"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text.lines().next().unwrap();
    for column in ["job", "sf", "weight", "v100", "p100", "k80", "steps/s"] {
        assert!(header.contains(column), "header {header:?} lacks {column}");
    }
    // One row per demo job, each with one number per type between 0 and 1.
    let demo: Value = serde_json::from_str(&fixture_text("demo.json")).unwrap();
    for job in demo["jobs"].as_array().unwrap() {
        let id = job["id"].as_str().unwrap();
        let row = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("no row for {id} in\n{text}"));
        let numbers: Vec<f64> = row.split_whitespace().skip(3).take(3).map(|s| s.parse().unwrap()).collect();
        assert_eq!(numbers.len(), 3, "{row}");
        assert!(numbers.iter().all(|x| (0.0..=1.0).contains(x)), "{row}");
    }
    assert!(text.contains("policy max_min_fairness"), "{text}");
    assert!(text.contains("objective"), "{text}");
}

#[test]
fn demo_json_and_other_policies() {
    let out = arbiter(&["demo", "--policy", "max_sum_throughput", "--json"]);
    let response = stdout_json(&out);
    assert_eq!(response["policy"], "max_sum_throughput");
    assert!(response["objective"].as_f64().unwrap() > 0.0);

    let out = arbiter(&["demo", "--policy", "isolated"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("objective: none"));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("left out"));
    // AlloX runs the single-GPU jobs only, and the table says which it left out.
    let out = arbiter(&["demo", "--policy", "allox"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("left out of the demo's jobs: resnet18x4, bert-x2"), "{text}");

    let err = error_json(&arbiter(&["demo", "--policy", "bogus"]));
    assert_eq!(err["error"]["code"], "unknown_policy");
    // The refusal lists the names a user can pick from.
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("expected one of:") && message.contains("min_cost_slo"), "{message}");
    // A list policy's name says where it goes.
    let err = error_json(&arbiter(&["demo", "--policy", "las"]));
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("list policy") && message.contains("--scheduling las"), "{message}");
}
