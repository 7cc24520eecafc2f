//! The Kueue reconciler through a multi-round scenario on Workloads shaped like Kueue's: jobs
//! arrive, some run and some wait, a new high-weight job displaces one (evicted through its
//! check's Retry), a job moves type, a finished workload and a deleted one leave the session.

use crate::fixtures::*;
use arbiter::kubernetes::kueue::patch;
use arbiter::kubernetes::kueue::reconcile::{reconcile, Inputs, Plan};
use arbiter::kubernetes::kueue::types::{CheckState, Workload};
use arbiter::kubernetes::session::SessionSnapshot;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const NOW: &str = "2026-01-05T10:12:00Z";

fn pass(workloads: &[Value], session: &SessionSnapshot, to_next_round: f64) -> Plan {
    let workloads: Vec<Workload> = workloads.iter().map(workload).collect();
    let (checks, flavors) = (checks(), flavors());
    let refused = BTreeMap::new();
    reconcile(&Inputs {
        workloads: &workloads,
        checks: &checks,
        flavors: &flavors,
        session,
        reference: None,
        refused: &refused,
        controller_name: "arbiter.dev/admission",
        now: NOW,
        seconds_to_next_round: to_next_round,
    })
}

/// `namespace/name` → (state, message, requeueAfterSeconds, podSetUpdates) of every patch.
fn states(plan: &Plan) -> BTreeMap<String, (CheckState, String, Option<u32>, Value)> {
    plan.workloads
        .iter()
        .map(|p| {
            let updates = serde_json::to_value(&p.check.pod_set_updates).unwrap();
            (
                format!("{}/{}", p.namespace, p.name),
                (p.check.state, p.check.message.clone(), p.check.requeue_after_seconds, updates),
            )
        })
        .collect()
}

const RESNET: &str = "team-a/job-resnet50-7d9c2";
const A3C: &str = "team-b/pytorchjob-a3c-5b1e0";
const TRANSFORMER: &str = "team-a/job-transformer-0c4f8";

fn v100_main(job: &str) -> Value {
    json!([{"name": "main", "annotations": {"arbiter.dev/job": job}, "nodeSelector": {"arbiter.dev/worker-type": "v100"}}])
}

#[test]
fn a_multi_round_scenario_sets_ready_retry_and_evicts_through_the_check() {
    let (mut resnet, mut a3c, mut transformer) = (resnet(), a3c(), transformer());

    // Before any round: both reserved workloads join the session; no decision yet, and the
    // check is marked Active.
    let plan = pass(&[resnet.clone(), a3c.clone()], &snapshot(0, &[]), 0.0);
    let added: Vec<(&str, Option<f64>, Option<f64>)> =
        plan.add.iter().map(|j| (j.id.as_str(), j.scale_factor, j.weight)).collect();
    assert_eq!(added, [(RESNET, Some(2.0), None), (A3C, Some(2.0), Some(2.0))]);
    assert_eq!(plan.add[0].throughput, BTreeMap::from([("k80".into(), Some(1.0)), ("v100".into(), Some(10.0))]));
    assert!(plan.workloads.is_empty(), "no round yet, no decision: {:?}", plan.workloads);
    assert_eq!(plan.activate, ["arbiter"]);
    assert!(plan.remove.is_empty() && plan.problems.is_empty(), "{plan:?}");

    // Round 0 runs resnet on the V100s; a3c waits.
    let round0 = snapshot(1, &[(RESNET, 0.0, Some("v100")), (A3C, 0.0, None)]);
    let plan = pass(&[resnet.clone(), a3c.clone()], &round0, 239.2);
    assert!(plan.add.is_empty() && plan.remove.is_empty());
    let s = states(&plan);
    assert_eq!(s[RESNET].0, CheckState::Ready);
    assert_eq!(s[RESNET].1, "arbiter: runs on v100 in round 0");
    assert_eq!(s[RESNET].3, v100_main(RESNET));
    assert_eq!(
        s[A3C],
        (CheckState::Retry, "arbiter: waits this round (round 0), next round in 240 s".into(), Some(240), json!([]))
    );

    // The patch applied is a server-side apply of our check alone, at the version decided on.
    let body = patch::workload_status("v1beta2", &plan.workloads[0]);
    assert_eq!(body["apiVersion"], "kueue.x-k8s.io/v1beta2");
    assert_eq!(body["kind"], "Workload");
    assert_eq!(
        body["metadata"],
        json!({"name": "job-resnet50-7d9c2", "namespace": "team-a", "resourceVersion": "2001"})
    );
    assert_eq!(body["status"]["admissionChecks"][0]["state"], "Ready");
    assert_eq!(body["status"]["admissionChecks"][0]["lastTransitionTime"], NOW);
    assert_eq!(body["status"]["admissionChecks"][0]["podSetUpdates"], v100_main(RESNET));
    assert_eq!(body["status"].as_object().unwrap().len(), 1, "only admissionChecks: {body}");

    // Kueue admits resnet and evicts a3c (Retry), which waits out its requeue; the transformer
    // arrives. Nothing changes until the next round: resnet's Ready stands, a3c has no quota.
    admitted(&mut resnet, v100_main(RESNET));
    evicted_and_requeued(&mut a3c);
    let plan = pass(&[resnet.clone(), a3c.clone(), transformer.clone()], &round0, 120.0);
    let added: Vec<&str> = plan.add.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(added, [TRANSFORMER]);
    assert_eq!(plan.add[0].scale_factor, Some(4.0), "4 GPUs from the container's limit");
    assert!(plan.workloads.is_empty(), "{:?}", plan.workloads);

    // Round 1 (a3c requeued and reserved again): the transformer (weight 3) displaces resnet
    // from the V100s, a3c runs on the K80s. The transformer arrived at 360 s, before round 1 ended.
    set_condition(&mut a3c, "QuotaReserved", "True", "QuotaReserved");
    a3c["status"]["admission"] = workload_admission(&a3c);
    let round1 = snapshot(2, &[(RESNET, 0.0, None), (A3C, 0.0, Some("k80")), (TRANSFORMER, 360.0, Some("v100"))]);
    let plan = pass(&[resnet.clone(), a3c.clone(), transformer.clone()], &round1, 359.5);
    let s = states(&plan);
    assert_eq!(s.len(), 3);
    assert_eq!(s[TRANSFORMER].0, CheckState::Ready);
    assert_eq!(s[TRANSFORMER].3, v100_main(TRANSFORMER));
    assert_eq!(
        s[RESNET],
        (
            CheckState::Retry,
            "arbiter: preempted in round 1: evicted until the next round in 360 s".into(),
            Some(360),
            json!([])
        )
    );
    let k80 = json!({"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-tesla-k80"},
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]});
    let mut master = k80.clone();
    master["name"] = json!("master");
    master["annotations"] = json!({"arbiter.dev/job": A3C});
    let mut worker = master.clone();
    worker["name"] = json!("worker");
    assert_eq!(s[A3C].0, CheckState::Ready);
    assert_eq!(s[A3C].3, json!([master, worker]), "both GPU pod sets go to the K80 nodes");

    // Round 2: resnet finished (it ran to the end before the eviction took effect), a3c was
    // deleted, the transformer moves to the K80s: evicted to restart there.
    set_condition(&mut resnet, "Finished", "True", "Succeeded");
    admitted(&mut transformer, v100_main(TRANSFORMER));
    let round2 = snapshot(3, &[(RESNET, 0.0, None), (A3C, 0.0, None), (TRANSFORMER, 360.0, Some("k80"))]);
    let plan = pass(&[resnet.clone(), transformer.clone()], &round2, 300.0);
    assert_eq!(plan.remove, [RESNET, A3C]);
    assert!(plan.add.is_empty());
    let s = states(&plan);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[TRANSFORMER].0, CheckState::Retry);
    assert_eq!(s[TRANSFORMER].1, "arbiter: moves from v100 to k80 in round 2: evicted to restart there");
    assert_eq!(s[TRANSFORMER].2, None, "requeued at once, to be admitted on the K80s");
}

fn workload_admission(object: &Value) -> Value {
    let assignments: Vec<Value> = object["spec"]["podSets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ps| json!({"name": ps["name"], "count": ps["count"], "flavors": {"nvidia.com/gpu": "arbiter-gpus"}}))
        .collect();
    json!({"clusterQueue": "arbiter-gpus", "podSetAssignments": assignments})
}

#[test]
fn a_ready_check_that_still_matches_and_a_retry_in_flight_are_left_alone() {
    let mut resnet = resnet();
    admitted(&mut resnet, v100_main(RESNET));
    let mut a3c = a3c();
    set_check(&mut a3c, "Retry", None);
    let round = snapshot(1, &[(RESNET, 0.0, Some("v100")), (A3C, 0.0, None)]);
    let plan = pass(&[resnet, a3c], &round, 100.0);
    assert!(plan.workloads.is_empty(), "no churn: {:?}", plan.workloads);
}

#[test]
fn a_job_that_arrived_after_the_last_round_stays_pending() {
    let round = snapshot(1, &[(RESNET, 360.0, None)]);
    let plan = pass(&[resnet()], &round, 100.0);
    assert!(plan.workloads.is_empty(), "{:?}", plan.workloads);
}

#[test]
fn workloads_without_our_check_evicted_or_without_quota_are_not_decided() {
    let mut other = resnet();
    other["status"]["admissionChecks"] = json!([{"name": "provisioning", "state": "Pending", "message": ""}]);
    let mut unreserved = a3c();
    set_condition(&mut unreserved, "QuotaReserved", "False", "Pending");
    let mut evicted = transformer();
    set_condition(&mut evicted, "Evicted", "True", "AdmissionCheck");
    let round = snapshot(1, &[(A3C, 0.0, None), (TRANSFORMER, 0.0, None)]);
    let plan = pass(&[other, unreserved, evicted], &round, 100.0);
    assert!(plan.workloads.is_empty(), "{:?}", plan.workloads);
    assert!(plan.add.is_empty(), "a3c and the transformer are in the session; resnet is not ours");
    assert!(plan.remove.is_empty());
}

#[test]
fn deactivated_and_deleting_workloads_leave_the_session_and_other_jobs_stay() {
    let mut resnet = resnet();
    resnet["spec"]["active"] = json!(false);
    let mut a3c = a3c();
    a3c["metadata"]["deletionTimestamp"] = json!("2026-01-05T10:30:00Z");
    let round = snapshot(1, &[(RESNET, 0.0, None), (A3C, 0.0, None), ("pod-job", 0.0, Some("k80"))]);
    let plan = pass(&[resnet, a3c], &round, 100.0);
    assert_eq!(plan.remove, [RESNET, A3C], "jobs without '/' are not the Kueue controller's");
    assert!(plan.workloads.is_empty());
}

#[test]
fn an_active_check_is_not_activated_again_and_other_controllers_checks_are_ignored() {
    let mut check = load("admissioncheck.json");
    check["status"]["conditions"] =
        json!([{"type": "Active", "status": "True", "reason": "Active", "message": "", "lastTransitionTime": NOW}]);
    let mut other = load("admissioncheck.json");
    other["metadata"]["name"] = json!("provisioning");
    other["spec"]["controllerName"] = json!("kueue.x-k8s.io/provisioning-request");
    let checks = vec![serde_json::from_value(check).unwrap(), serde_json::from_value(other).unwrap()];
    let refused = BTreeMap::new();
    let session = snapshot(0, &[]);
    let plan = reconcile(&Inputs {
        workloads: &[],
        checks: &checks,
        flavors: &flavors(),
        session: &session,
        reference: None,
        refused: &refused,
        controller_name: "arbiter.dev/admission",
        now: NOW,
        seconds_to_next_round: 0.0,
    });
    assert!(plan.activate.is_empty(), "{:?}", plan.activate);
    let body = patch::check_active("v1beta2", "arbiter", NOW, "s1");
    assert_eq!(body["kind"], "AdmissionCheck");
    assert_eq!(body["status"]["conditions"][0]["type"], "Active");
    assert_eq!(body["status"]["conditions"][0]["status"], "True");
}

#[test]
fn the_cluster_and_the_queue_quota_come_from_the_flavors_and_the_cluster_queue() {
    use arbiter::kubernetes::kueue::flavors;
    let types = flavors::type_flavors(&flavors()).unwrap();
    let cluster = flavors::cluster(&types).unwrap();
    let json = serde_json::to_value(&cluster).unwrap();
    assert_eq!(json["worker_types"]["v100"]["count"], 4.0);
    assert_eq!(json["worker_types"]["v100"]["gpus_per_server"], 4.0);
    assert_eq!(json["worker_types"]["k80"]["gpus_per_server"], 2.0);
    assert!(!types.contains_key("arbiter-gpus"), "the umbrella flavor is no worker type");
    let queues = queues();
    let quotas = flavors::gpu_quotas(&queues, &["arbiter".to_string()]);
    assert_eq!(quotas, [("arbiter-gpus", Ok(8))]);
    assert!(flavors::gpu_quotas(&queues, &["other".to_string()]).is_empty());
}

/// The YAML samples in docs/k8s/ state the same objects as the fixtures (checked line by line for
/// every name, label, annotation, node label and quota the controller reads).
#[test]
fn the_docs_samples_state_the_fixtures_objects() {
    let read = |file: &str| std::fs::read_to_string(format!("{}/docs/k8s/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let lines = |text: &str| text.lines().map(|l| l.trim().trim_start_matches("- ").to_string()).collect::<Vec<_>>();
    let has = |lines: &[String], line: String| assert!(lines.contains(&line), "the sample lacks {line:?}");
    let samples = lines(&read("kueue-flavors.yaml"));
    for flavor in flavors() {
        has(&samples, format!("name: {}", flavor.metadata.name));
        for (k, v) in flavor.metadata.labels.iter().chain(&flavor.spec.node_labels) {
            has(&samples, format!("{k}: {v}"));
        }
        for (k, v) in &flavor.metadata.annotations {
            has(&samples, format!("{k}: \"{v}\""));
        }
    }
    let check = &checks()[0];
    let samples = lines(&read("kueue-admissioncheck.yaml"));
    has(&samples, format!("name: {}", check.metadata.name));
    has(&samples, format!("controllerName: {}", check.spec.controller_name));
    let queue = &queues()[0];
    let samples = lines(&read("kueue-clusterqueue.yaml"));
    has(&samples, format!("name: {}", queue.check_names()[0]));
    let flavor = &queue.spec.resource_groups[0].flavors[0];
    has(&samples, format!("name: {}", flavor.name));
    let gpus = flavor.resources.iter().find(|r| r.name == "nvidia.com/gpu").unwrap();
    has(&samples, format!("nominalQuota: {}", gpus.nominal_quota));
    let samples = lines(&read("kueue-job.yaml"));
    let resnet = workload(&resnet());
    let annotations = &resnet.spec.pod_sets[0].template.metadata.annotations;
    has(&samples, format!("arbiter.dev/throughputs: '{}'", annotations["arbiter.dev/throughputs"]));
}
