//! `arbiter k8s-sync`'s loop: each step lists Nodes and Pods, reads the session, its bindings and
//! its evictions, decides (`plan`), and sends: workers and jobs, the round when it runs them, then
//! evictions, forgotten bindings and bound pods. Errors are logged and retried at the next tick.

use super::bindings::PodOnNode;
use super::plan::{plan, SyncInputs, SyncPlan};
use crate::kubernetes::api::Client;
use crate::kubernetes::arbiter::ArbiterClient;
use crate::kubernetes::objects::{Node, Pod};
use crate::kubernetes::rounds::RoundClock;
use crate::kubernetes::session::{BindingSnapshot, EvictionSnapshot, SessionSnapshot};
use crate::workload::throughputs::ThroughputTable;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// What one step did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SyncReport {
    pub failed: Vec<String>,
    pub returned: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// The indices of the rounds run (`--run-rounds`).
    pub rounds: Vec<u64>,
    /// Pods (`namespace/name`) reported bound and recorded.
    pub bound: Vec<String>,
    /// Pods evicted because the last round does not run them where they are.
    pub evicted: Vec<String>,
    /// Bindings forgotten: the pod was evicted or is gone.
    pub forgotten: Vec<String>,
    /// Bound pods `bind` refused, with its reason (asked again after the next round).
    pub refused: Vec<String>,
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
    /// With `--run-rounds`, when the next round is due; without, this loop runs none.
    rounds: Option<RoundClock>,
    /// Pods `bind` refused, with the session's rounds when it did.
    refused: BTreeMap<PodOnNode, u64>,
    /// Evict the bound pods that sit where the last round does not run their job and that no
    /// binding records (`--evict-misplaced`).
    evict_misplaced: bool,
}

/// What one step reads: from the API server, then from the session.
struct Observed {
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    /// Nodes and pods listed that were not of the expected shape (skipped), one line each.
    malformed: Vec<String>,
    session: SessionSnapshot,
    bindings: Vec<BindingSnapshot>,
    evictions: Vec<EvictionSnapshot>,
}

fn key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

impl Sync {
    pub fn new(kube: Client, arbiter: ArbiterClient, session: String, reference: Option<ThroughputTable>) -> Sync {
        Sync {
            kube,
            arbiter,
            session,
            reference,
            known: BTreeSet::new(),
            reported: BTreeSet::new(),
            rounds: None,
            refused: BTreeMap::new(),
            evict_misplaced: false,
        }
    }

    /// This loop also evicts the pods the scheduler bound where the last round does not run their
    /// job and no binding records (`--evict-misplaced`): placed past an `ignorable` extender.
    pub fn evicting_misplaced(mut self) -> Sync {
        self.evict_misplaced = true;
        self
    }

    /// This loop also runs the session's rounds (`--run-rounds`): at its first step, then every
    /// `round_seconds`. Only where nothing else runs them (not beside `arbiter kueue`).
    pub fn running_rounds(mut self) -> Sync {
        self.rounds = Some(RoundClock::default());
        self
    }

    /// The session, its bindings and evictions, as they are now.
    fn read_session(&self) -> Result<(SessionSnapshot, Vec<BindingSnapshot>, Vec<EvictionSnapshot>), String> {
        let id = &self.session;
        let session = self.arbiter.session(id).map_err(|e| e.to_string())?;
        let bindings = self.arbiter.bindings(id).map_err(|e| e.to_string())?;
        let evictions = self.arbiter.evictions(id).map_err(|e| e.to_string())?.evictions;
        Ok((session, bindings, evictions))
    }

    fn observe(&self) -> Result<Observed, String> {
        let nodes = self.kube.list("/api/v1/nodes").map_err(|e| e.to_string())?;
        let pods = self.kube.list("/api/v1/pods?labelSelector=arbiter.dev%2Fjob").map_err(|e| e.to_string())?;
        let malformed = nodes.malformed.into_iter().chain(pods.malformed).collect();
        let (session, bindings, evictions) = self.read_session()?;
        Ok(Observed { nodes: nodes.items, pods: pods.items, malformed, session, bindings, evictions })
    }

    fn plan(&self, o: &Observed) -> SyncPlan {
        plan(&SyncInputs {
            nodes: &o.nodes,
            pods: &o.pods,
            session: &o.session,
            reference: self.reference.as_ref(),
            known: &self.known,
            bindings: &o.bindings,
            evictions: &o.evictions,
            refused: &self.refused,
            evict_misplaced: self.evict_misplaced,
        })
    }

    /// One step, with the wall clock.
    pub fn step(&mut self) -> Result<SyncReport, String> {
        self.step_at(Instant::now())
    }

    /// One step as if it were `now` (tests advance it past a round's end without sleeping).
    pub fn step_at(&mut self, now: Instant) -> Result<SyncReport, String> {
        let mut observed = self.observe()?;
        let mut decided = self.plan(&observed);
        decided.problems.splice(0..0, observed.malformed.iter().cloned());
        self.known = std::mem::take(&mut decided.known);
        for problem in decided.problems.iter().filter(|p| !self.reported.contains(*p)) {
            tracing::warn!(problem = %problem, "ignored by k8s-sync");
        }
        self.reported = decided.problems.iter().cloned().collect();
        let mut report = SyncReport { errors: std::mem::take(&mut decided.problems), ..SyncReport::default() };
        self.sync_workers_and_jobs(&decided, &mut report);
        if self.run_round_if_due(now, &mut report)? {
            (observed.session, observed.bindings, observed.evictions) = self.read_session()?;
            decided = self.plan(&observed);
        }
        self.evict(&decided, &mut report);
        self.forget(&decided, &mut report);
        self.bind(&decided, &observed, &mut report);
        let listed: BTreeSet<(&str, &str, &str, &str)> = observed
            .pods
            .iter()
            .map(|p| {
                let m = &p.metadata;
                let (ns, uid) = (m.namespace.as_deref().unwrap_or("default"), m.uid.as_deref().unwrap_or_default());
                (ns, m.name.as_str(), uid, p.spec.node_name.as_deref().unwrap_or_default())
            })
            .collect();
        self.refused.retain(|p, _| listed.contains(&(&p.namespace, &p.name, &p.uid, &p.node)));
        Ok(report)
    }

    fn sync_workers_and_jobs(&self, decided: &SyncPlan, report: &mut SyncReport) {
        let id = &self.session;
        for server in &decided.fail {
            match self.arbiter.fail_worker(id, server) {
                Ok(()) => {
                    tracing::info!(server = %server, "node not ready or unschedulable: its GPUs reported failed");
                    report.failed.push(server.clone());
                }
                Err(e) => report.errors.push(e.to_string()),
            }
        }
        for server in &decided.restore {
            match self.arbiter.return_worker(id, server) {
                Ok(()) => {
                    tracing::info!(server = %server, "node ready again: its GPUs returned");
                    report.returned.push(server.clone());
                }
                Err(e) => report.errors.push(e.to_string()),
            }
        }
        for job in &decided.add {
            match self.arbiter.add_job(id, job) {
                Ok(()) => {
                    tracing::info!(job = %job.id, "pods appeared: job added");
                    report.added.push(job.id.clone());
                }
                Err(e) => {
                    tracing::warn!(job = %job.id, error = %e, "cannot add the job");
                    report.errors.push(e.to_string());
                }
            }
        }
        for job in &decided.remove {
            match self.arbiter.remove_job(id, job) {
                Ok(()) => {
                    tracing::info!(job = %job, "its pods finished or are gone: job removed");
                    report.removed.push(job.clone());
                }
                Err(e) if e.status == Some(404) => report.removed.push(job.clone()),
                Err(e) => report.errors.push(e.to_string()),
            }
        }
    }

    /// With `--run-rounds`, runs the session's round when it is due; whether one ran.
    fn run_round_if_due(&mut self, now: Instant, report: &mut SyncReport) -> Result<bool, String> {
        let Some(clock) = self.rounds.as_mut() else { return Ok(false) };
        let session = self.arbiter.session(&self.session).map_err(|e| e.to_string())?;
        match clock.run_if_due(&self.arbiter, &session, now) {
            Ok(None) => Ok(false),
            Ok(Some(index)) => {
                report.rounds.push(index);
                Ok(true)
            }
            Err(e) => {
                tracing::warn!(error = %e, "the round failed; tried again at the next step");
                report.errors.push(e.to_string());
                Ok(false)
            }
        }
    }

    /// Evicts the pods the last round does not run where they are, and forgets each once the API
    /// server has taken the eviction (or the pod is gone). A PodDisruptionBudget's 429 leaves the
    /// binding, so the eviction is tried again at the next step.
    fn evict(&self, decided: &SyncPlan, report: &mut SyncReport) {
        let recorded = decided.bindings.evict.iter().map(|e| (e, true));
        for (e, has_binding) in recorded.chain(decided.bindings.misplaced.iter().map(|e| (e, false))) {
            let pod = key(&e.pod.namespace, &e.pod.name);
            match self.kube.evict_pod(&e.pod.namespace, &e.pod.name) {
                Ok(()) => {
                    tracing::info!(pod = %pod, node = %e.pod.node, job = %e.pod.job, reason = %e.reason, "pod evicted");
                    report.evicted.push(pod.clone());
                }
                Err(call) if call.status == Some(404) => {
                    tracing::info!(pod = %pod, "the pod to evict is gone already");
                }
                Err(call) if call.status == Some(429) => {
                    tracing::info!(pod = %pod, error = %call, "eviction refused for now (a PodDisruptionBudget); tried again next step");
                    report.errors.push(call.to_string());
                    continue;
                }
                Err(call) => {
                    tracing::warn!(pod = %pod, error = %call, "cannot evict the pod; tried again next step");
                    report.errors.push(call.to_string());
                    continue;
                }
            }
            if has_binding {
                self.forget_one(&e.pod.namespace, &e.pod.name, report);
            }
        }
    }

    /// Forgets the bindings whose pod is gone.
    fn forget(&self, decided: &SyncPlan, report: &mut SyncReport) {
        for (namespace, name) in &decided.bindings.forget {
            self.forget_one(namespace, name, report);
        }
    }

    fn forget_one(&self, namespace: &str, name: &str, report: &mut SyncReport) {
        match self.arbiter.forget(&self.session, namespace, name) {
            Ok(()) => {
                tracing::info!(pod = %key(namespace, name), "binding forgotten");
                report.forgotten.push(key(namespace, name));
            }
            Err(e) => report.errors.push(e.to_string()),
        }
    }

    /// Reports the bound pods not recorded yet: each is first shown to the extender as `filter`
    /// shows it (its job, its node's labels), then bound; a refusal is kept until the next round.
    fn bind(&mut self, decided: &SyncPlan, observed: &Observed, report: &mut SyncReport) {
        let id = &self.session;
        for target in &decided.bindings.bind {
            let pod_key = key(&target.namespace, &target.name);
            let Some(pod) = observed.pods.iter().find(|p| {
                let m = &p.metadata;
                m.name == target.name
                    && m.namespace.as_deref().unwrap_or("default") == target.namespace
                    && m.uid.as_deref().unwrap_or_default() == target.uid
            }) else {
                continue;
            };
            let node = observed.nodes.iter().find(|n| n.metadata.name == target.node);
            let pod = match serde_json::to_value(pod) {
                Ok(pod) => pod,
                Err(e) => {
                    report.errors.push(format!("pod {pod_key} cannot be written as JSON: {e}"));
                    continue;
                }
            };
            let node = node.and_then(|n| serde_json::to_value(n).ok());
            if let Err(e) = self.arbiter.filter(id, &pod, node.as_ref()) {
                report.errors.push(e.to_string());
                continue;
            }
            match self.arbiter.bind(id, &target.namespace, &target.name, &target.uid, &target.node) {
                Ok(reason) if reason.is_empty() => {
                    tracing::info!(pod = %pod_key, node = %target.node, "bound pod recorded");
                    report.bound.push(pod_key);
                }
                Ok(reason) => {
                    tracing::warn!(pod = %pod_key, node = %target.node, reason = %reason, "bound pod not recorded; asked again after the next round");
                    self.refused.insert(target.clone(), observed.session.rounds);
                    report.refused.push(format!("{pod_key}: {reason}"));
                }
                Err(e) => report.errors.push(e.to_string()),
            }
        }
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
