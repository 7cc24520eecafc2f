//! Every way a workload or the configuration can be unusable: the workload's check is Rejected
//! (Kueue deactivates it) with a message naming what is wrong, or, for what is not the
//! workload's fault, a problem is reported and nothing is decided.

use crate::fixtures::*;
use arbiter::kubernetes::kueue::reconcile::{reconcile, Inputs, Plan};
use arbiter::kubernetes::kueue::types::{CheckState, ResourceFlavor, Workload};
use arbiter::kubernetes::session::SessionSnapshot;
use arbiter::workload::throughputs::ThroughputTable;
use serde_json::{json, Value};
use std::collections::BTreeMap;

struct Pass<'a> {
    flavors: Vec<ResourceFlavor>,
    refused: BTreeMap<String, String>,
    reference: Option<&'a ThroughputTable>,
    session: SessionSnapshot,
}

impl Pass<'_> {
    fn new() -> Self {
        Pass { flavors: flavors(), refused: BTreeMap::new(), reference: None, session: snapshot(0, &[]) }
    }

    fn run(&self, objects: &[Value]) -> Plan {
        let workloads: Vec<Workload> = objects.iter().map(workload).collect();
        reconcile(&Inputs {
            workloads: &workloads,
            checks: &checks(),
            flavors: &self.flavors,
            session: &self.session,
            reference: self.reference,
            refused: &self.refused,
            controller_name: "arbiter.dev/admission",
            now: "2026-01-05T10:12:00Z",
            seconds_to_next_round: 60.0,
        })
    }
}

/// The plan rejects the one workload, with a message containing `needle`, and adds nothing.
fn assert_rejected(plan: &Plan, needle: &str) {
    assert!(plan.add.is_empty(), "{:?}", plan.add);
    assert_eq!(plan.workloads.len(), 1, "{:?} {:?}", plan.workloads, plan.problems);
    let check = &plan.workloads[0].check;
    assert_eq!(check.state, CheckState::Rejected);
    assert!(check.message.starts_with("arbiter: "), "{}", check.message);
    assert!(check.message.contains(needle), "{:?} lacks {needle:?}", check.message);
    assert!(plan.problems.iter().any(|p| p.contains(needle)), "{:?}", plan.problems);
}

fn annotate(object: &mut Value, key: &str, value: &str) {
    object["spec"]["podSets"][0]["template"]["metadata"]["annotations"][key] = json!(value);
}

#[test]
fn throughputs_that_are_not_json_are_rejected_naming_the_annotation() {
    let mut w = resnet();
    annotate(&mut w, "arbiter.dev/throughputs", "v100=10");
    assert_rejected(&Pass::new().run(&[w]), "annotation arbiter.dev/throughputs is not a JSON object");
}

#[test]
fn throughputs_on_an_unknown_type_or_negative_are_rejected() {
    let mut w = resnet();
    annotate(&mut w, "arbiter.dev/throughputs", r#"{"a100": 30}"#);
    assert_rejected(&Pass::new().run(&[w]), "worker type \"a100\" is not in the session's cluster (it has: k80, v100)");
    let mut w = resnet();
    annotate(&mut w, "arbiter.dev/throughputs", r#"{"v100": -1}"#);
    assert_rejected(&Pass::new().run(&[w]), "v100: -1 is not a number of steps/s");
}

#[test]
fn a_workload_without_throughputs_or_with_a_bad_weight_is_rejected() {
    let mut w = resnet();
    w["spec"]["podSets"][0]["template"]["metadata"] = json!({});
    assert_rejected(&Pass::new().run(&[w]), "no throughputs: annotate it with arbiter.dev/throughputs");
    let mut w = resnet();
    annotate(&mut w, "arbiter.dev/weight", "0");
    assert_rejected(&Pass::new().run(&[w]), "annotation arbiter.dev/weight: \"0\" is not a number > 0");
}

#[test]
fn a_workload_asking_no_gpu_or_a_fraction_of_one_is_rejected() {
    let mut w = resnet();
    w["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "2"}});
    assert_rejected(&Pass::new().run(&[w]), "no pod set requests nvidia.com/gpu");
    let mut w = resnet();
    w["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] =
        json!("500m");
    assert_rejected(
        &Pass::new().run(&[w]),
        "pod set \"main\": container \"train\": \"500m\" is not a whole number of GPUs",
    );
}

#[test]
fn a_workload_asking_more_gpus_than_any_type_has_is_rejected() {
    // Each type of the session has 4 GPUs: 16 at once could never be placed.
    let mut w = resnet();
    w["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] =
        json!("16");
    assert_rejected(&Pass::new().run(&[w]), "needs 16 GPUs at once, and the worker types it may run on have at most 4");
}

#[test]
fn a_model_resolves_through_the_reference_file_and_fails_clearly_without_it() {
    let mut w = resnet();
    let annotations = &mut w["spec"]["podSets"][0]["template"]["metadata"]["annotations"];
    *annotations = json!({"arbiter.dev/model": "ResNet-50 (batch size 64)"});
    assert_rejected(&Pass::new().run(&[w.clone()]), "no reference throughput file was given");

    let table = ThroughputTable::from_json_str(
        r#"{"v100": {"('ResNet-50 (batch size 64)', 2)": {"null": 19.5}},
            "k80": {"('ResNet-50 (batch size 64)', 2)": {"null": 2.5}, "('A3C', 1)": {"null": 1.0}}}"#,
    )
    .unwrap();
    let mut pass = Pass::new();
    pass.reference = Some(&table);
    let plan = pass.run(&[w.clone()]);
    assert!(plan.problems.is_empty(), "{:?}", plan.problems);
    assert_eq!(plan.add[0].throughput, BTreeMap::from([("k80".into(), Some(2.5)), ("v100".into(), Some(19.5))]));

    w["spec"]["podSets"][0]["template"]["metadata"]["annotations"]["arbiter.dev/model"] = json!("GPT-9");
    assert_rejected(&pass.run(&[w]), "\"GPT-9\" on 2 GPU(s) is not in the reference throughput file");
}

#[test]
fn a_job_the_session_refused_is_rejected_with_the_sessions_message() {
    let mut pass = Pass::new();
    pass.refused.insert("team-a/job-resnet50-7d9c2".into(), "scale factor 16 is above the cluster's GPUs".into());
    assert_rejected(&pass.run(&[resnet()]), "the session refused the job: scale factor 16");
}

#[test]
fn an_unusable_workload_without_quota_is_only_reported() {
    let mut w = resnet();
    annotate(&mut w, "arbiter.dev/throughputs", "{");
    set_condition(&mut w, "QuotaReserved", "False", "Pending");
    let plan = Pass::new().run(&[w]);
    assert!(plan.workloads.is_empty() && plan.add.is_empty());
    assert_eq!(plan.problems.len(), 1, "{:?}", plan.problems);
}

#[test]
fn a_placement_on_a_flavor_that_does_not_exist_or_conflicts_is_rejected() {
    let mut pass = Pass::new();
    pass.session = snapshot(1, &[("team-a/job-resnet50-7d9c2", 0.0, Some("v100"))]);
    let mut w = resnet();
    w["status"]["admission"]["podSetAssignments"][0]["flavors"]["nvidia.com/gpu"] = json!("spot-gpus");
    assert_rejected(&pass.run(&[w]), "has quota on ResourceFlavor \"spot-gpus\", which does not exist");

    // Quota reserved on the K80 flavor (its node label) while the round puts the job on V100s.
    pass.session = snapshot(1, &[("team-a/job-resnet50-7d9c2", 0.0, Some("v100"))]);
    pass.flavors[2].spec.node_labels.insert("arbiter.dev/worker-type".into(), "k80".into());
    let mut w = resnet();
    w["status"]["admission"]["podSetAssignments"][0]["flavors"]["nvidia.com/gpu"] = json!("k80");
    assert_rejected(
        &pass.run(&[w]),
        "node label arbiter.dev/worker-type=k80 conflicts with v100's arbiter.dev/worker-type=v100",
    );

    // The pod template pins its own type.
    let pass = {
        let mut p = Pass::new();
        p.session = snapshot(1, &[("team-a/job-resnet50-7d9c2", 0.0, Some("v100"))]);
        p
    };
    let mut w = resnet();
    w["spec"]["podSets"][0]["template"]["spec"]["nodeSelector"] = json!({"arbiter.dev/worker-type": "k80"});
    assert_rejected(&pass.run(&[w]), "selects arbiter.dev/worker-type=k80 itself");

    // The pod template names another job.
    let mut w = resnet();
    annotate(&mut w, "arbiter.dev/job", "resnet");
    assert_rejected(
        &pass.run(&[w]),
        "is annotated arbiter.dev/job=\"resnet\" itself, not \"team-a/job-resnet50-7d9c2\"",
    );
}

#[test]
fn a_configuration_error_is_reported_and_decides_nothing() {
    // Two flavors claim the V100s: no check state is set, whatever the round says.
    let mut pass = Pass::new();
    pass.session = snapshot(1, &[("team-a/job-resnet50-7d9c2", 0.0, Some("v100"))]);
    let mut twin = pass.flavors[1].clone();
    twin.metadata.name = "v100-spot".into();
    pass.flavors.push(twin);
    let plan = pass.run(&[resnet()]);
    assert!(plan.workloads.is_empty(), "{:?}", plan.workloads);
    assert!(plan.problems[0]
        .contains("ResourceFlavors \"v100\" and \"v100-spot\" both have label arbiter.dev/worker-type=v100"));

    // The round placed a job on a type no flavor is labelled with.
    let mut pass = Pass::new();
    pass.flavors.remove(1);
    pass.session = snapshot(1, &[("team-a/job-resnet50-7d9c2", 0.0, Some("v100"))]);
    let plan = pass.run(&[resnet()]);
    assert!(plan.workloads.is_empty(), "{:?}", plan.workloads);
    assert!(
        plan.problems[0].contains("no ResourceFlavor is labelled arbiter.dev/worker-type=v100"),
        "{:?}",
        plan.problems
    );

    // A per-type flavor with a bad GPU annotation.
    let mut flavors = flavors();
    flavors[1].metadata.annotations.insert("arbiter.dev/gpus".into(), "four".into());
    let err = arbiter::kubernetes::kueue::flavors::type_flavors(&flavors).unwrap_err();
    assert!(err.contains("ResourceFlavor \"v100\": annotation arbiter.dev/gpus is \"four\""), "{err}");
    let mut flavors = super::fixtures::flavors();
    flavors[2].metadata.annotations.clear();
    let types = arbiter::kubernetes::kueue::flavors::type_flavors(&flavors).unwrap();
    let err = arbiter::kubernetes::kueue::flavors::cluster(&types).unwrap_err();
    assert!(err.contains("ResourceFlavor \"k80\" (worker type k80) has no annotation arbiter.dev/gpus"), "{err}");
    // More GPUs per server than the type has.
    let mut flavors = super::fixtures::flavors();
    flavors[1].metadata.annotations.insert("arbiter.dev/gpus-per-server".into(), "8".into());
    let types = arbiter::kubernetes::kueue::flavors::type_flavors(&flavors).unwrap();
    let err = arbiter::kubernetes::kueue::flavors::cluster(&types).unwrap_err();
    assert!(
        err.contains("ResourceFlavor \"v100\" (worker type v100): annotation arbiter.dev/gpus-per-server is 8, more than the type's 4 GPUs"),
        "{err}"
    );
    flavors[1].metadata.annotations.insert("arbiter.dev/gpus-per-server".into(), "4".into());
    let types = arbiter::kubernetes::kueue::flavors::type_flavors(&flavors).unwrap();
    assert!(arbiter::kubernetes::kueue::flavors::cluster(&types).is_ok(), "as many per server as the type has");
    let err = arbiter::kubernetes::kueue::flavors::cluster(&Default::default()).unwrap_err();
    assert!(err.contains("no ResourceFlavor is labelled arbiter.dev/worker-type"), "{err}");
}
