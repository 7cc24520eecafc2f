//! `arbiter kueue`'s loop: each step lists Kueue's objects, brings the session's jobs in line with
//! the Workloads, runs a round when one is due, and applies the admission-check states the
//! reconciler decides. Errors are logged and the step is tried again at the next tick.

use super::flavors;
use super::patch;
use super::reconcile::{reconcile, Inputs, Plan};
use super::types::{AdmissionCheck, ClusterQueue, ResourceFlavor, Workload, GROUP};
use crate::kubernetes::api::Client;
use crate::kubernetes::arbiter::ArbiterClient;
use crate::kubernetes::http::segment;
use crate::kubernetes::rounds::RoundClock;
use crate::kubernetes::session::SessionSnapshot;
use crate::workload::throughputs::ThroughputTable;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

pub struct Settings {
    /// `v1beta2` (Kueue 0.15 and later) or `v1beta1`.
    pub version: String,
    pub controller_name: String,
    pub session: String,
    pub reference: Option<ThroughputTable>,
}

/// What one step did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct StepReport {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// The index of the round run, if one was.
    pub round: Option<u64>,
    /// `namespace/name` and the state applied.
    pub patched: Vec<(String, String)>,
    pub activated: Vec<String>,
    /// Calls that failed (tried again next step) and workloads or settings that could not be used.
    pub errors: Vec<String>,
}

/// A Workload's path, its namespace and name percent-encoded as path segments.
fn workload_path(version: &str, namespace: &str, name: &str) -> String {
    format!("/apis/{GROUP}/{version}/namespaces/{}/workloads/{}", segment(namespace), segment(name))
}

pub struct Controller {
    kube: Client,
    arbiter: ArbiterClient,
    settings: Settings,
    /// When the next round is due.
    rounds: RoundClock,
    /// Jobs the server refused, with its message: their workloads are rejected.
    refused: BTreeMap<String, String>,
    /// Problems already logged (each is logged once while it lasts).
    reported: BTreeSet<String>,
}

/// What one step lists from the API server.
struct Observed {
    workloads: Vec<Workload>,
    checks: Vec<AdmissionCheck>,
    flavors: Vec<ResourceFlavor>,
    queues: Vec<ClusterQueue>,
    /// Objects listed that were not of the expected shape (skipped), one line each.
    malformed: Vec<String>,
}

impl Controller {
    pub fn new(kube: Client, arbiter: ArbiterClient, settings: Settings) -> Controller {
        Controller {
            kube,
            arbiter,
            settings,
            rounds: RoundClock::default(),
            refused: BTreeMap::new(),
            reported: BTreeSet::new(),
        }
    }

    fn path(&self, plural: &str) -> String {
        format!("/apis/{GROUP}/{}/{plural}", self.settings.version)
    }

    /// One step, with the wall clock.
    pub fn step(&mut self) -> Result<StepReport, String> {
        self.step_at(Instant::now())
    }

    /// One step as if it were `now` (tests advance it past a round's end without sleeping).
    pub fn step_at(&mut self, now: Instant) -> Result<StepReport, String> {
        let observed = self.observe()?;
        let session = self.arbiter.session(&self.settings.session).map_err(|e| e.to_string())?;
        let mut report = StepReport::default();
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let present: Vec<String> = observed.workloads.iter().map(super::reconcile::job_id).collect();
        self.refused.retain(|id, _| present.contains(id));

        let refused = self.refused.clone();
        let plan = reconcile(&self.inputs(&observed, &session, &refused, &stamp, now));
        self.update_jobs(&plan, &mut report);
        let session = self.round_if_due(now, &mut report)?;
        let refused = self.refused.clone();
        let decided = reconcile(&self.inputs(&observed, &session, &refused, &stamp, now));
        let problems: Vec<String> =
            (observed.malformed.iter().cloned()).chain(plan.problems).chain(decided.problems.iter().cloned()).collect();
        self.report_problems(problems, &mut report);
        self.check_quotas(&observed, &session, &mut report);
        self.apply_states(&decided, &stamp, &mut report);
        Ok(report)
    }

    /// The objects of one kind; those not of the expected shape are added to `malformed`.
    fn list<T: serde::de::DeserializeOwned>(
        &self,
        plural: &str,
        malformed: &mut Vec<String>,
    ) -> Result<Vec<T>, String> {
        let listed = self.kube.list(&self.path(plural)).map_err(|e| e.to_string())?;
        malformed.extend(listed.malformed);
        Ok(listed.items)
    }

    fn observe(&self) -> Result<Observed, String> {
        let mut malformed = Vec::new();
        let workloads = self.list("workloads", &mut malformed)?;
        let checks = self.list("admissionchecks", &mut malformed)?;
        let flavors = self.list("resourceflavors", &mut malformed)?;
        let queues = self.list("clusterqueues", &mut malformed)?;
        Ok(Observed { workloads, checks, flavors, queues, malformed })
    }

    fn inputs<'a>(
        &'a self,
        observed: &'a Observed,
        session: &'a SessionSnapshot,
        refused: &'a BTreeMap<String, String>,
        stamp: &'a str,
        now: Instant,
    ) -> Inputs<'a> {
        Inputs {
            workloads: &observed.workloads,
            checks: &observed.checks,
            flavors: &observed.flavors,
            session,
            reference: self.settings.reference.as_ref(),
            refused,
            controller_name: &self.settings.controller_name,
            now: stamp,
            seconds_to_next_round: self.rounds.seconds_to_next(now),
        }
    }

    /// Adds and removes the plan's jobs; a job the session refuses (4xx) is remembered, so its
    /// workload is rejected with the session's reason.
    fn update_jobs(&mut self, plan: &Plan, report: &mut StepReport) {
        let id = &self.settings.session;
        for job in &plan.add {
            match self.arbiter.add_job(id, job) {
                Ok(()) => {
                    tracing::info!(job = %job.id, scale_factor = ?job.scale_factor, "job added to the session");
                    report.added.push(job.id.clone());
                }
                Err(e) if e.status.is_some_and(|s| (400..500).contains(&s) && s != 429) => {
                    tracing::warn!(job = %job.id, error = %e, "the session refused the job; its workload is rejected");
                    self.refused.insert(job.id.clone(), e.message.clone());
                    report.errors.push(e.to_string());
                }
                Err(e) => report.errors.push(e.to_string()),
            }
        }
        for job in &plan.remove {
            match self.arbiter.remove_job(id, job) {
                Ok(()) => {
                    tracing::info!(job = %job, "job removed from the session (finished, deactivated or deleted)");
                    report.removed.push(job.clone());
                }
                Err(e) if e.status == Some(404) => report.removed.push(job.clone()),
                Err(e) => report.errors.push(e.to_string()),
            }
        }
    }

    /// Runs the next round if it is due and the session has jobs; the session as it is then.
    fn round_if_due(&mut self, now: Instant, report: &mut StepReport) -> Result<SessionSnapshot, String> {
        let id = &self.settings.session;
        let session = self.arbiter.session(id).map_err(|e| e.to_string())?;
        match self.rounds.run_if_due(&self.arbiter, &session, now) {
            Ok(None) => Ok(session),
            Ok(Some(index)) => {
                report.round = Some(index);
                self.arbiter.session(id).map_err(|e| e.to_string())
            }
            Err(e) => {
                tracing::warn!(error = %e, "the round failed; tried again at the next step");
                report.errors.push(e.to_string());
                Ok(session)
            }
        }
    }

    /// Logs each problem once while it lasts; every step's report lists them all.
    fn report_problems(&mut self, problems: Vec<String>, report: &mut StepReport) {
        for problem in &problems {
            if !self.reported.contains(problem) {
                tracing::warn!(problem = %problem, "not scheduled by arbiter");
            }
        }
        self.reported = problems.iter().cloned().collect();
        report.errors.extend(problems);
    }

    /// Warns when a queue's GPU quota is not the session's GPUs (see `flavors::gpu_quotas`).
    fn check_quotas(&self, observed: &Observed, session: &SessionSnapshot, report: &mut StepReport) {
        let total: u32 = session.cluster.worker_types.values().map(|t| t.count).sum();
        let ours: Vec<String> = observed
            .checks
            .iter()
            .filter(|c| c.spec.controller_name == self.settings.controller_name)
            .map(|c| c.metadata.name.clone())
            .collect();
        for (queue, quota) in flavors::gpu_quotas(&observed.queues, &ours) {
            match quota {
                Ok(q) if q != total => {
                    tracing::warn!(cluster_queue = %queue, quota = q, session_gpus = total, "the queue's GPU quota differs from the session's GPUs");
                }
                Ok(_) => {}
                Err(e) => report.errors.push(e),
            }
        }
    }

    /// Server-side applies the decided check states and `Active` conditions.
    fn apply_states(&self, decided: &Plan, stamp: &str, report: &mut StepReport) {
        let version = &self.settings.version;
        for p in &decided.workloads {
            let path = workload_path(version, &p.namespace, &p.name);
            let key = format!("{}/{}", p.namespace, p.name);
            match self.kube.apply_status(&path, &patch::workload_status(version, p)) {
                Ok(_) => {
                    tracing::info!(workload = %key, check = %p.check.name, state = ?p.check.state, message = %p.check.message, "admission check set");
                    report.patched.push((key, format!("{:?}", p.check.state)));
                }
                Err(e) => {
                    tracing::warn!(workload = %key, error = %e, "cannot set the admission check; tried again next step");
                    report.errors.push(e.to_string());
                }
            }
        }
        for name in &decided.activate {
            let path = format!("{}/{}", self.path("admissionchecks"), segment(name));
            match self.kube.apply_status(&path, &patch::check_active(version, name, stamp, &self.settings.session)) {
                Ok(_) => report.activated.push(name.clone()),
                Err(e) => report.errors.push(e.to_string()),
            }
        }
    }

    /// Steps every `tick` until the process is stopped; a failed step is logged and retried.
    pub fn run(&mut self, tick: Duration) {
        loop {
            match self.step() {
                Ok(report) if !report.errors.is_empty() => {
                    tracing::debug!(errors = report.errors.len(), "step done with errors")
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "step failed; retrying at the next tick"),
            }
            std::thread::sleep(tick);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_workload_path_escapes_its_namespace_and_name() {
        assert_eq!(
            super::workload_path("v1beta2", "team a", "job/1?x#y"),
            "/apis/kueue.x-k8s.io/v1beta2/namespaces/team%20a/workloads/job%2F1%3Fx%23y"
        );
        assert_eq!(
            super::workload_path("v1beta2", "team-a", "job-resnet50-7d9c2"),
            "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/job-resnet50-7d9c2"
        );
    }
}
