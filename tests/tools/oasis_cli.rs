//! `arbiter oasis`: the three-job fixture's decisions, and the contract's error object on bad
//! input.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

fn oasis(args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .arg("oasis")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child.stdin.take().unwrap().write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// With prices estimated from the three jobs, A runs in slot 0 and B in slot 1, each on both
/// GPUs of the one worker server with one parameter server; C finds no room and is rejected.
#[test]
fn decides_the_fixture() {
    let out = oasis(&["--input", "fixtures/oasis.json"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let decisions = v["decisions"].as_array().unwrap();
    let fates: Vec<(&str, bool)> =
        decisions.iter().map(|d| (d["job"].as_str().unwrap(), d["admitted"].as_bool().unwrap())).collect();
    assert_eq!(fates, vec![("A", true), ("B", true), ("C", false)]);
    assert_eq!(decisions[0]["schedule"]["slots"][0]["workers"], serde_json::json!([[0, 2]]));
    assert_eq!(decisions[1]["schedule"]["completion_slot"], 1);
    assert!(decisions[2]["schedule"].is_null() && decisions[2]["payoff"].is_null());
    assert!((v["total_utility"].as_f64().unwrap() - 26.0).abs() < 1e-9); // 20 + 24/(1+3)
    assert!(v["competitive_ratio_bound"].as_f64().unwrap() >= 2.0);
}

#[test]
fn refuses_bad_input_with_exit_2_and_the_field() {
    let out = oasis(
        &["--input", "-"],
        Some(r#"{"cluster": {"slot_seconds": 1, "slots": 0, "worker_servers": [], "ps_servers": []}, "jobs": []}"#),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(err["error"]["field"], "cluster.slots");
    let out = oasis(&["--input", "fixtures/oasis.json", "--lowest", "median"], None);
    assert_eq!(out.status.code(), Some(2));
    let out = oasis(&["--input", "fixtures/oasis.json", "--baselines", "fifo,drf,fifo"], None);
    assert_eq!(out.status.code(), Some(2));
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(
        (err["error"]["code"].as_str(), err["error"]["field"].as_str()),
        (Some("malformed_request"), Some("baselines"))
    );
    // Scale factors within the contract's magnitudes (1e300 was taken), refused before any
    // baseline runs.
    for (flag, value) in [("--u", "1e300"), ("--l", "1e-300"), ("--u", "0")] {
        let out = oasis(&["--input", "fixtures/oasis.json", flag, value, "--baselines", "fifo"], None);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err: Value = serde_json::from_slice(&out.stderr).unwrap();
        assert_eq!(
            (err["error"]["code"].as_str(), err["error"]["field"].as_str()),
            (Some("invalid_number"), Some(&flag[2..]))
        );
    }
}

/// A job whose schedule is too large to compute is refused before any decision, named by its
/// place in the input (`jobs[1].epochs`), where it was named `job.epochs` once the jobs before
/// it had been decided.
#[test]
fn a_job_too_large_to_decide_is_refused_up_front_by_its_index() {
    // A worker of 1 Mbit/s on servers of 4e9 Mbit/s: billions fit. 5,000 epochs of 1,000 chunks,
    // 5 a worker-slot: 10⁶ worker-slots over 40 slots, past the dynamic program's table.
    let server = r#"{"gpus": 0, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 4000000000}"#;
    let job = |id: &str, arrival: u32, epochs: u32, chunks: u32| {
        format!(
            r#"{{"id": "{id}", "arrival_slot": {arrival}, "epochs": {epochs}, "chunks": {chunks},
                "minibatches_per_chunk": 10, "minibatch_seconds": 1, "gradient_mb": 0.0625,
                "worker": {{"gpus": 0, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 1}},
                "parameter_server": {{"gpus": 0, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 2}},
                "utility": {{"kind": "constant", "value": 1}}}}"#
        )
    };
    let input = format!(
        r#"{{"cluster": {{"slot_seconds": 100, "slots": 40, "worker_servers": [{server}], "ps_servers": [{server}]}},
            "jobs": [{}, {}]}}"#,
        job("small", 0, 2, 5),
        job("huge", 1, 5000, 1000)
    );
    let out = oasis(&["--input", "-"], Some(&input));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(out.stdout.is_empty());
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(
        (err["error"]["code"].as_str(), err["error"]["field"].as_str()),
        (Some("unsupported"), Some("jobs[1].epochs")),
        "{err}"
    );
    assert!(err["error"]["message"].as_str().unwrap().contains("\"huge\""), "{err}");
}
