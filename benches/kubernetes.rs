//! One pass of the Kueue controller's decisions (`kubernetes::kueue::reconcile`) over N
//! Workloads, against reading the Workload list the API server sends for them (the step's own
//! unavoidable cost), timed in the same run.
//!
//! The Workloads are `fixtures/kueue/workload-resnet50.json` renamed, each with its own throughput
//! row; the session has a job for each, half of them placed by the last round (on `v100` or
//! `k80`) and half waiting, so every pass decides a check state for every Workload (`Ready` or
//! `Retry`). Patches are not applied: that is one API call per changed Workload.
//!
//! `cargo bench --bench kubernetes` runs 1,000 and 10,000 Workloads (median of 11 passes);
//! without `--bench` (as `cargo test --benches` runs it) 100 Workloads, 3 passes.

use arbiter::kubernetes::kueue::reconcile::{reconcile, Inputs};
use arbiter::kubernetes::kueue::types::{AdmissionCheck, ResourceFlavor, Workload};
use arbiter::kubernetes::objects::List;
use arbiter::kubernetes::session::SessionSnapshot;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn fixture(name: &str) -> Value {
    let path = format!("{}/fixtures/kueue/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("the fixture")).expect("JSON")
}

/// The Workload list of `n` jobs as the API server sends it, and the session that has them.
fn instance(n: usize) -> (String, SessionSnapshot) {
    let template = fixture("workload-resnet50.json");
    let mut items = Vec::with_capacity(n);
    let mut jobs = Vec::with_capacity(n);
    for i in 0..n {
        let mut w = template.clone();
        w["metadata"]["name"] = json!(format!("job-{i}"));
        w["metadata"]["uid"] = json!(format!("c1a2b3d4-0000-4c4c-a1a1-{i:012}"));
        let row = json!({"v100": 5.0 + (i % 997) as f64 / 100.0, "k80": 1.0 + (i % 89) as f64 / 100.0});
        w["spec"]["podSets"][0]["template"]["metadata"]["annotations"]["arbiter.dev/throughputs"] =
            json!(row.to_string());
        items.push(w);
        let lease = match i % 4 {
            0 => json!({"worker_type": "v100", "gpus": ["v100/0/0", "v100/0/1"]}),
            1 => json!({"worker_type": "k80", "gpus": ["k80/0/0", "k80/0/1"]}),
            _ => Value::Null,
        };
        jobs.push(json!({"id": format!("team-a/job-{i}"), "arrival": 0.0, "lease": lease}));
    }
    let list = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadList", "items": items}).to_string();
    let gpus = (n as u32).max(2) * 2;
    let session = serde_json::from_value(json!({
        "id": "bench", "round_seconds": 360.0, "rounds": 1, "time": 360.0,
        "cluster": {"worker_types": {
            "v100": {"count": gpus, "servers": gpus / 4, "gpus_per_server": 4},
            "k80": {"count": gpus, "servers": gpus / 2, "gpus_per_server": 2},
        }},
        "jobs": jobs,
    }))
    .expect("a session snapshot");
    (list, session)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (sizes, passes): (&[usize], usize) = if full { (&[1_000, 10_000], 11) } else { (&[100], 3) };
    let flavors: Vec<ResourceFlavor> =
        serde_json::from_value::<List<ResourceFlavor>>(fixture("resourceflavors.json")).expect("flavors").items;
    let checks: Vec<AdmissionCheck> = vec![serde_json::from_value(fixture("admissioncheck.json")).expect("a check")];
    let refused = BTreeMap::new();
    println!("| Workloads | read the list (baseline) | decide every check | × baseline | patches |");
    println!("|---:|---:|---:|---:|---:|");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut last: Option<(usize, Duration)> = None;
    for &n in sizes {
        let (list, session) = instance(n);
        let mut read = Vec::new();
        let mut decide = Vec::new();
        let mut patches = 0;
        for _ in 0..passes {
            let t = Instant::now();
            let workloads: Vec<Workload> = serde_json::from_str::<List<Workload>>(&list).expect("the list").items;
            read.push(t.elapsed());
            let t = Instant::now();
            let plan = reconcile(&Inputs {
                workloads: &workloads,
                checks: &checks,
                flavors: &flavors,
                session: &session,
                reference: None,
                refused: &refused,
                controller_name: "arbiter.dev/admission",
                now: "2026-01-05T10:12:00Z",
                seconds_to_next_round: 120.0,
            });
            decide.push(t.elapsed());
            assert!(plan.problems.is_empty(), "{:?}", plan.problems);
            patches = plan.workloads.len();
        }
        assert_eq!(patches, n, "every Workload's check is decided");
        let (read, decide) = (median(read), median(decide));
        println!(
            "| {n} | {:.2} ms | {:.2} ms | {:.2} | {patches} |",
            ms(read),
            ms(decide),
            decide.as_secs_f64() / read.as_secs_f64()
        );
        if let Some((m, before)) = last {
            let growth = (decide.as_secs_f64() / before.as_secs_f64()).ln() / (n as f64 / m as f64).ln();
            println!("\ndeciding grows as n^{growth:.2} from {m} to {n} Workloads");
        }
        last = Some((n, decide));
    }
}
