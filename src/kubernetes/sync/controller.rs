//! `arbiter k8s-sync`'s loop: each step lists Nodes and Pods, decides the session events
//! (`plan`), and sends them. Errors are logged and the step is tried again at the next tick.

use super::plan::{plan, SyncInputs};
use crate::kubernetes::api::Client;
use crate::kubernetes::arbiter::ArbiterClient;
use crate::kubernetes::objects::{Node, Pod};
use crate::workload::throughputs::ThroughputTable;
use std::collections::BTreeSet;
use std::time::Duration;

/// What one step did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SyncReport {
    pub failed: Vec<String>,
    pub returned: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub errors: Vec<String>,
}

pub struct Sync {
    kube: Client,
    arbiter: ArbiterClient,
    session: String,
    reference: Option<ThroughputTable>,
    known: BTreeSet<String>,
    /// Problems already logged (each is logged once while it lasts).
    reported: BTreeSet<String>,
}

impl Sync {
    pub fn new(kube: Client, arbiter: ArbiterClient, session: String, reference: Option<ThroughputTable>) -> Sync {
        Sync { kube, arbiter, session, reference, known: BTreeSet::new(), reported: BTreeSet::new() }
    }

    pub fn step(&mut self) -> Result<SyncReport, String> {
        let nodes: Vec<Node> = self.kube.list("/api/v1/nodes").map_err(|e| e.to_string())?;
        let pods: Vec<Pod> =
            self.kube.list("/api/v1/pods?labelSelector=arbiter.dev%2Fjob").map_err(|e| e.to_string())?;
        let session = self.arbiter.session(&self.session).map_err(|e| e.to_string())?;
        let decided = plan(&SyncInputs {
            nodes: &nodes,
            pods: &pods,
            session: &session,
            reference: self.reference.as_ref(),
            known: &self.known,
        });
        self.known = decided.known;
        let id = &self.session;
        for problem in decided.problems.iter().filter(|p| !self.reported.contains(*p)) {
            tracing::warn!(problem = %problem, "ignored by k8s-sync");
        }
        self.reported = decided.problems.iter().cloned().collect();
        let mut report = SyncReport { errors: decided.problems, ..SyncReport::default() };
        for server in decided.fail {
            match self.arbiter.fail_worker(id, &server) {
                Ok(()) => {
                    tracing::info!(server = %server, "node not ready or unschedulable: its GPUs reported failed");
                    report.failed.push(server);
                }
                Err(e) => report.errors.push(e.to_string()),
            }
        }
        for server in decided.restore {
            match self.arbiter.return_worker(id, &server) {
                Ok(()) => {
                    tracing::info!(server = %server, "node ready again: its GPUs returned");
                    report.returned.push(server);
                }
                Err(e) => report.errors.push(e.to_string()),
            }
        }
        for job in decided.add {
            match self.arbiter.add_job(id, &job) {
                Ok(()) => {
                    tracing::info!(job = %job.id, "pods appeared: job added");
                    report.added.push(job.id);
                }
                Err(e) => {
                    tracing::warn!(job = %job.id, error = %e, "cannot add the job");
                    report.errors.push(e.to_string());
                }
            }
        }
        for job in decided.remove {
            match self.arbiter.remove_job(id, &job) {
                Ok(()) => {
                    tracing::info!(job = %job, "its pods finished or are gone: job removed");
                    report.removed.push(job);
                }
                Err(e) if e.status == Some(404) => report.removed.push(job),
                Err(e) => report.errors.push(e.to_string()),
            }
        }
        Ok(report)
    }

    /// Steps every `tick` until the process is stopped; a failed step is logged and retried.
    pub fn run(&mut self, tick: Duration) {
        loop {
            if let Err(e) = self.step() {
                tracing::warn!(error = %e, "step failed; retrying at the next tick");
            }
            std::thread::sleep(tick);
        }
    }
}
