//! One pass of the Kueue controller, without I/O: from the observed Workloads, AdmissionChecks and
//! ResourceFlavors and the session (its jobs, and where the last round placed them), the jobs to
//! add and remove and the check states to apply. Ready: placed this round, with the type's node
//! selector; Retry: not placed (Kueue evicts it, requeued for the next round); Rejected: a
//! workload Arbiter cannot schedule (Kueue deactivates it); Pending is left alone.

use super::flavors::{self, TypeFlavor};
use super::types::{AdmissionCheck, AdmissionCheckState, CheckState, PodSetUpdate, ResourceFlavor, Workload, ACTIVE};
use crate::kubernetes::jobs;
use crate::kubernetes::objects::is_true;
use crate::kubernetes::session::{JobSnapshot, SessionSnapshot};
use crate::request::JobSpec;
use crate::workload::throughputs::ThroughputTable;
use std::collections::{BTreeMap, BTreeSet};

/// What one pass reads.
pub struct Inputs<'a> {
    pub workloads: &'a [Workload],
    pub checks: &'a [AdmissionCheck],
    pub flavors: &'a [ResourceFlavor],
    pub session: &'a SessionSnapshot,
    /// Resolves `arbiter.dev/model`.
    pub reference: Option<&'a ThroughputTable>,
    /// Jobs the server refused to add, with its message: their workloads are rejected.
    pub refused: &'a BTreeMap<String, String>,
    /// `spec.controllerName` of the checks served here.
    pub controller_name: &'a str,
    /// RFC 3339, for `lastTransitionTime`.
    pub now: &'a str,
    /// Until the next round starts: how long a workload that waits is kept out of the queue.
    pub seconds_to_next_round: f64,
}

/// A new state of one admission check of one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadPatch {
    pub namespace: String,
    pub name: String,
    /// The version the decision was made on: applying over a newer one is a conflict (409).
    pub resource_version: Option<String>,
    pub check: AdmissionCheckState,
}

/// What one pass decided.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub add: Vec<JobSpec>,
    pub remove: Vec<String>,
    pub workloads: Vec<WorkloadPatch>,
    /// Checks of ours not yet marked `Active`.
    pub activate: Vec<String>,
    /// Why a workload or the configuration could not be used, for the log.
    pub problems: Vec<String>,
}

/// The session job of a workload: `namespace/name`. Session jobs with a `/` in their id are the
/// Kueue controller's (`k8s-sync`'s come from label values, which cannot hold one).
pub fn job_id(workload: &Workload) -> String {
    format!("{}/{}", workload.metadata.namespace.as_deref().unwrap_or("default"), workload.metadata.name)
}

pub fn is_kueue_job(id: &str) -> bool {
    id.contains('/')
}

fn describe(workload: &Workload, inputs: &Inputs<'_>, id: &str) -> Result<JobSpec, String> {
    let scale_factor = flavors::scale_factor(workload)?;
    // Kueue copies a job's pod templates, annotations included, into the pod sets.
    let templates = workload.spec.pod_sets.iter().map(|ps| &ps.template.metadata.annotations);
    let annotations: Vec<_> = std::iter::once(&workload.metadata.annotations).chain(templates).collect();
    jobs::job_spec(id, scale_factor, &annotations, &inputs.session.worker_types(), inputs.reference)
}

fn seconds(s: f64) -> u32 {
    if s.is_finite() && s > 1.0 {
        s.ceil().min(f64::from(u32::MAX)) as u32
    } else {
        1
    }
}

/// The worker type a Ready check's updates select, if they match one.
fn selected_type<'a>(check: &AdmissionCheckState, types: &'a BTreeMap<String, TypeFlavor>) -> Option<&'a str> {
    let selector = &check.pod_set_updates.first()?.node_selector;
    types.iter().find(|(_, t)| &t.node_selector == selector).map(|(w, _)| w.as_str())
}

/// The state a check of a workload whose quota is reserved should have, given the last round.
fn desired(
    workload: &Workload,
    check: &AdmissionCheckState,
    inputs: &Inputs<'_>,
    types: &BTreeMap<String, TypeFlavor>,
    id: &str,
    job: &JobSnapshot,
    plan: &mut Plan,
) -> Option<AdmissionCheckState> {
    let state = |state, message: String, updates: Vec<PodSetUpdate>, requeue: Option<u32>| AdmissionCheckState {
        name: check.name.clone(),
        state,
        last_transition_time: Some(inputs.now.to_string()),
        message,
        requeue_after_seconds: requeue,
        pod_set_updates: updates,
    };
    let reject = |why: String| state(CheckState::Rejected, format!("arbiter: {why}"), Vec::new(), None);
    let session = inputs.session;
    let round = session.last_round()?;
    if !session.in_last_round(job) {
        return None; // arrived since: the next round decides
    }
    let next = seconds(inputs.seconds_to_next_round);
    match job.placement() {
        Some(worker_type) => {
            if !types.contains_key(worker_type) {
                plan.problems.push(format!(
                    "{id} runs on {worker_type}, but no ResourceFlavor is labelled arbiter.dev/worker-type={worker_type}"
                ));
                return None;
            }
            let updates = match flavors::placement_updates(workload, id, worker_type, types, inputs.flavors) {
                Ok(updates) => updates,
                Err(why) => {
                    plan.problems.push(format!("workload {id}: {why}"));
                    return Some(reject(why));
                }
            };
            match check.state {
                CheckState::Ready if check.pod_set_updates == updates => None,
                CheckState::Ready => {
                    let from = selected_type(check, types).unwrap_or("another type");
                    let message = format!(
                        "arbiter: moves from {from} to {worker_type} in round {round}: evicted to restart there"
                    );
                    Some(state(CheckState::Retry, message, Vec::new(), None))
                }
                CheckState::Pending => {
                    let message = format!("arbiter: runs on {worker_type} in round {round}");
                    Some(state(CheckState::Ready, message, updates, None))
                }
                CheckState::Retry | CheckState::Rejected => None,
            }
        }
        None => match check.state {
            CheckState::Ready => {
                let message = format!("arbiter: preempted in round {round}: evicted until the next round in {next} s");
                Some(state(CheckState::Retry, message, Vec::new(), Some(next)))
            }
            CheckState::Pending => {
                let message = format!("arbiter: waits this round (round {round}), next round in {next} s");
                Some(state(CheckState::Retry, message, Vec::new(), Some(next)))
            }
            CheckState::Retry | CheckState::Rejected => None,
        },
    }
}

/// One pass: see the module's documentation.
pub fn reconcile(inputs: &Inputs<'_>) -> Plan {
    let mut plan = Plan::default();
    let ours: Vec<String> = inputs
        .checks
        .iter()
        .filter(|c| c.spec.controller_name == inputs.controller_name)
        .map(|c| c.metadata.name.clone())
        .collect();
    plan.activate = inputs
        .checks
        .iter()
        .filter(|c| c.spec.controller_name == inputs.controller_name && !is_true(&c.status.conditions, ACTIVE))
        .map(|c| c.metadata.name.clone())
        .collect();
    let types = match flavors::type_flavors(inputs.flavors) {
        Ok(types) => Some(types),
        Err(e) => {
            plan.problems.push(e);
            None
        }
    };
    let jobs = inputs.session.jobs_by_id();
    let mut present = BTreeSet::new();
    for workload in inputs.workloads {
        let Some(check) = workload.status.admission_checks.iter().find(|c| ours.contains(&c.name)) else { continue };
        let id = job_id(workload);
        let gone = !workload.is_active()
            || workload.is_finished()
            || workload.metadata.deletion_timestamp.is_some()
            || check.state == CheckState::Rejected;
        if gone {
            continue;
        }
        let job = describe(workload, inputs, &id).and_then(|job| match inputs.refused.get(&id) {
            Some(why) => Err(format!("the session refused the job: {why}")),
            None => Ok(job),
        });
        let reserved = workload.has_quota_reservation() && !workload.is_evicted();
        let job = match job {
            Ok(job) => job,
            Err(why) => {
                plan.problems.push(format!("workload {id}: {why}"));
                if reserved {
                    for check in workload.status.admission_checks.iter().filter(|c| ours.contains(&c.name)) {
                        plan.workloads.push(patch(
                            workload,
                            AdmissionCheckState {
                                name: check.name.clone(),
                                state: CheckState::Rejected,
                                last_transition_time: Some(inputs.now.to_string()),
                                message: format!("arbiter: {why}"),
                                requeue_after_seconds: None,
                                pod_set_updates: Vec::new(),
                            },
                        ));
                    }
                }
                continue;
            }
        };
        present.insert(id.clone());
        let Some(&known) = jobs.get(id.as_str()) else {
            plan.add.push(job); // no round has decided about it yet
            continue;
        };
        let Some(types) = types.as_ref().filter(|_| reserved) else { continue };
        for check in workload.status.admission_checks.iter().filter(|c| ours.contains(&c.name)) {
            if let Some(state) = desired(workload, check, inputs, types, &id, known, &mut plan) {
                plan.workloads.push(patch(workload, state));
            }
        }
    }
    plan.remove = inputs
        .session
        .jobs
        .iter()
        .map(|j| &j.id)
        .filter(|id| is_kueue_job(id) && !present.contains(*id))
        .cloned()
        .collect();
    plan
}

fn patch(workload: &Workload, check: AdmissionCheckState) -> WorkloadPatch {
    WorkloadPatch {
        namespace: workload.metadata.namespace.clone().unwrap_or_else(|| "default".to_string()),
        name: workload.metadata.name.clone(),
        resource_version: workload.metadata.resource_version.clone(),
        check,
    }
}
