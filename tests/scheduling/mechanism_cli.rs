//! `arbiter rounds`: the JSON it prints for a fixed request, the ideal mode, and its refusals.

use serde_json::Value;
use std::collections::BTreeSet;
use std::process::{Command, Output};

fn arbiter(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbiter")).args(args).output().expect("the binary runs")
}

fn fixture(name: &str) -> String {
    format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn rounds(args: &[&str]) -> Value {
    let out = arbiter(args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn rounds_prints_placements_and_received_fractions() {
    let input = fixture("mechanism_gavel_n32.json");
    let report = rounds(&["rounds", "--input", &input, "--rounds", "40"]);
    assert_eq!(report["mode"], "rounds");
    assert_eq!(report["round_seconds"], 360.0);
    let all_rounds = report["rounds"].as_array().unwrap();
    assert_eq!(all_rounds.len(), 40);
    let jobs = report["jobs"].as_object().unwrap();
    assert_eq!(jobs.len(), 32);
    assert_eq!(jobs.keys().next().unwrap(), "j0", "the request's order");

    let mut ran: std::collections::HashMap<(String, String), usize> = Default::default();
    for round in all_rounds {
        let mut gpus = BTreeSet::new();
        let mut placed = BTreeSet::new();
        for p in round["placements"].as_array().unwrap() {
            let ids = p["jobs"].as_array().unwrap();
            assert_eq!(ids.len(), 1);
            let job = ids[0].as_str().unwrap().to_string();
            assert!(placed.insert(job.clone()), "{job} twice in a round");
            let wt = p["worker_type"].as_str().unwrap().to_string();
            for g in p["gpus"].as_array().unwrap() {
                let g = g.as_str().unwrap();
                assert!(g.starts_with(&format!("{wt}/")), "{g} is a {wt} GPU");
                assert_eq!(g.split('/').count(), 3);
                assert!(gpus.insert(g.to_string()), "{g} holds two jobs");
            }
            *ran.entry((job, wt)).or_default() += 1;
        }
        for list in ["started", "moved", "preempted"] {
            assert!(round[list].is_array());
        }
    }
    for (id, job) in jobs {
        let received = job["received"].as_object().unwrap();
        assert_eq!(received.len(), 3);
        for (wt, fraction) in received {
            let count = ran.get(&(id.clone(), wt.clone())).copied().unwrap_or(0);
            let expected = count as f64 / 40.0;
            assert!((fraction.as_f64().unwrap() - expected).abs() < 1e-12);
        }
        assert!(job["allocation"].as_object().unwrap().len() == 3);
        assert!(job["unplaceable"].as_array().unwrap().is_empty());
    }
}

#[test]
fn rounds_report_unplaceable_types() {
    let input = fixture("mechanism_gavel_n16.json");
    let report = rounds(&["rounds", "--input", &input, "--rounds", "3", "--round-seconds", "60"]);
    assert_eq!(report["round_seconds"], 60.0);
    let unplaceable: Vec<&str> = report["jobs"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, j)| !j["unplaceable"].as_array().unwrap().is_empty())
        .map(|(id, _)| id.as_str())
        .collect();
    assert_eq!(unplaceable, ["j12"]);
}

#[test]
fn ideal_rounds_receive_exactly_the_allocation() {
    let input = fixture("mechanism_paper.json");
    let report = rounds(&["rounds", "--input", &input, "--rounds", "9", "--ideal"]);
    assert_eq!(report["mode"], "ideal");
    for round in report["rounds"].as_array().unwrap() {
        assert!(round["placements"].as_array().unwrap().is_empty());
    }
    for job in report["jobs"].as_object().unwrap().values() {
        for (wt, x) in job["allocation"].as_object().unwrap() {
            let got = job["received"][wt].as_f64().unwrap();
            assert!((x.as_f64().unwrap() - got).abs() < 1e-12);
        }
    }
}

#[test]
fn realizable_rounds_deliver_the_realizable_allocation() {
    // n32 asks for time rounds cannot give (fraction 0.993); solved over round configurations
    // its allocation is delivered within 0.02 after 200 rounds, and the report says what it cost.
    let input = fixture("mechanism_gavel_n32.json");
    let report = rounds(&["rounds", "--input", &input, "--rounds", "200", "--configurations", "--realizable"]);
    let solve = &report["realizable_solve"];
    assert_eq!(solve["applied"], true, "{solve}");
    assert_eq!(solve["certified"], true, "{solve}");
    assert!(solve["relative_gap"].as_f64().unwrap() < 1e-6, "{solve}");
    assert_eq!(report["realizable"]["fraction"], 1.0);
    assert!(report.get("decomposition_skipped").is_none());
    for (id, job) in report["jobs"].as_object().unwrap() {
        for (wt, x) in job["allocation"].as_object().unwrap() {
            let got = job["received"][wt].as_f64().unwrap();
            assert!((x.as_f64().unwrap() - got).abs() <= 0.02, "{id} on {wt}: {got} of {x}");
        }
    }
}

#[test]
fn configuration_rounds_deliver_what_the_decomposition_says() {
    // n32: the check says rounds can deliver 99.3% of the allocation; following its decomposition
    // each job receives what it delivers it, within 0.02 after 200 rounds.
    let input = fixture("mechanism_gavel_n32.json");
    let report = rounds(&["rounds", "--input", &input, "--rounds", "200", "--configurations"]);
    assert_eq!(report["mode"], "configurations");
    assert!(report.get("decomposition_skipped").is_none(), "{}", report["decomposition_skipped"]);
    let realizable = &report["realizable"];
    assert_eq!(realizable["certified"], true);
    assert!(realizable["fraction"].as_f64().unwrap() < 1.0);
    let short = realizable["shortfall"].as_array().unwrap();
    let mut worst: f64 = 0.0;
    for (id, job) in report["jobs"].as_object().unwrap() {
        for (wt, x) in job["allocation"].as_object().unwrap() {
            if job["unplaceable"].as_array().unwrap().iter().any(|u| u == wt) {
                continue;
            }
            let deliverable = short
                .iter()
                .find(|s| s["job"] == id.as_str() && s["worker_type"] == wt.as_str())
                .map_or(x.as_f64().unwrap(), |s| s["deliverable"].as_f64().unwrap());
            worst = worst.max((deliverable - job["received"][wt].as_f64().unwrap()).abs());
        }
    }
    assert!(worst <= 0.02, "{worst}");
    // One mode at a time.
    let out = arbiter(&["rounds", "--input", &input, "--rounds", "2", "--configurations", "--ideal"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn rounds_reads_standard_input() {
    let text = std::fs::read_to_string(fixture("mechanism_paper.json")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["rounds", "--input", "-", "--rounds", "1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["rounds"].as_array().unwrap().len(), 1);
    assert!((report["jobs"]["j0"]["allocation"]["v100"].as_f64().unwrap() - 0.4545).abs() < 1e-3);
}

#[test]
fn bad_input_exits_2_with_the_error_object() {
    let dir = std::env::temp_dir().join(format!("arbiter-rounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"policy": "max_min_fairness", "cluster": {"worker_types": {"v100": {"count": 2}}}, "jobs": [{"id": "a", "throughput": {"tpu": 1}}]}"#).unwrap();
    let good = fixture("mechanism_paper.json");
    let cases: [(Vec<&str>, &str); 9] = [
        // Ideal rounds choose no job by priority: --work-conserving would be ignored (and was
        // reported as work_conserving: true).
        (vec!["--input", &good, "--rounds", "3", "--ideal", "--work-conserving"], "malformed_request"),
        // No round: every job would be reported as having received nothing.
        (vec!["--input", &good, "--rounds", "0"], "invalid_number"),
        (vec!["--input", bad.to_str().unwrap(), "--rounds", "3"], "unknown_worker_type"),
        (vec!["--input", "/nonexistent.json", "--rounds", "3"], "malformed_request"),
        (vec!["--input", &good, "--rounds", "3", "--round-seconds", "0"], "invalid_number"),
        (vec!["--input", &good, "--rounds", "3", "--round-seconds", "NaN"], "invalid_number"),
        (vec!["--input", &good, "--rounds", "3", "--round-seconds", "1e99"], "invalid_number"),
        (vec!["--input", &good, "--rounds", "3", "--round-seconds", "1e-9"], "invalid_number"),
        // The report lists every round: a hundred million of them was 300 GB, now refused at once.
        (vec!["--input", &good, "--rounds", "100000000"], "unsupported"),
    ];
    for (args, code) in cases {
        let mut all = vec!["rounds"];
        all.extend(args);
        let out = arbiter(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        assert!(out.stdout.is_empty());
        let err: Value = serde_json::from_slice(&out.stderr).expect("the error object");
        assert_eq!(err["error"]["code"], code, "{all:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn rounds_with_space_sharing_report_pairs() {
    let dir = std::env::temp_dir().join(format!("arbiter-rounds-pairs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("pairs.json");
    std::fs::write(
        &input,
        r#"{"policy": "max_min_fairness", "space_sharing": true,
            "cluster": {"worker_types": {"v100": {"count": 2, "gpus_per_server": 2}}},
            "jobs": [{"id": "a", "throughput": {"v100": 1.0}}, {"id": "b", "throughput": {"v100": 1.0}},
                     {"id": "c", "throughput": {"v100": 1.0}}, {"id": "d", "throughput": {"v100": 1.0}}],
            "colocations": [{"jobs": ["a", "b"], "throughput": {"v100": [0.8, 0.8]}},
                            {"jobs": ["c", "d"], "throughput": {"v100": [0.8, 0.8]}}]}"#,
    )
    .unwrap();
    let report = rounds(&["rounds", "--input", input.to_str().unwrap(), "--rounds", "20"]);
    std::fs::remove_dir_all(&dir).ok();
    let pairs = report["pairs"].as_array().expect("a pairs section");
    assert_eq!(pairs.len(), 2);
    assert_eq!(pairs[0]["jobs"], serde_json::json!(["a", "b"]));
    let mut paired_rounds = 0;
    for round in report["rounds"].as_array().unwrap() {
        let mut placed = BTreeSet::new();
        for p in round["placements"].as_array().unwrap() {
            let ids = p["jobs"].as_array().unwrap();
            assert!(ids.len() == 1 || ids.len() == 2);
            paired_rounds += (ids.len() == 2) as usize;
            for id in ids {
                assert!(placed.insert(id.as_str().unwrap().to_string()), "{id} twice in a round");
            }
            assert_eq!(p["gpus"].as_array().unwrap().len(), 1);
        }
    }
    assert!(paired_rounds > 0, "max-min fairness pairs jobs that keep 80% of their speed together");
    // Each pair ran together in exactly the fraction of rounds it reports.
    let together: f64 = pairs.iter().map(|p| p["received"]["v100"].as_f64().unwrap() * 20.0).sum();
    assert_eq!(together.round() as usize, paired_rounds);
    for p in pairs {
        let (y, got) = (p["allocation"]["v100"].as_f64().unwrap(), p["received"]["v100"].as_f64().unwrap());
        assert!((y - got).abs() <= 0.05 + 1e-9, "{p}");
    }
}
