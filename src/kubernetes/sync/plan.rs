//! One pass of `k8s-sync`, without I/O. A node labelled with a worker type and server index is
//! that server of the session: not Ready or unschedulable, its GPUs are reported failed; Ready
//! again, returned. Pods labelled `arbiter.dev/job` are that job: it is added when its first pods
//! appear (its scale factor a pod's GPUs times `arbiter.dev/pods`, or the GPUs of the pods seen),
//! and removed once every pod it had has succeeded, failed for good or been deleted. Bound pods
//! are reported to the scheduler extender, evicted and forgotten as `bindings` decides.

use super::bindings::{is_finished, is_live, namespace, plan_bindings, BindingPlan, PodOnNode};
use crate::kubernetes::jobs;
use crate::kubernetes::keys::{JOB, PODS, SERVER, WORKER_TYPE};
use crate::kubernetes::kueue::reconcile::is_kueue_job;
use crate::kubernetes::objects::{Node, Pod};
use crate::kubernetes::session::{BindingSnapshot, EvictionSnapshot, SessionSnapshot};
use crate::request::JobSpec;
use crate::workload::throughputs::ThroughputTable;
use std::collections::{BTreeMap, BTreeSet};

pub struct SyncInputs<'a> {
    pub nodes: &'a [Node],
    pub pods: &'a [Pod],
    pub session: &'a SessionSnapshot,
    pub reference: Option<&'a ThroughputTable>,
    /// Jobs whose pods this sync has seen: only those are removed when their pods are gone (a job
    /// added through the API, with no pods, is not this sync's to remove).
    pub known: &'a BTreeSet<String>,
    /// The pods the session's scheduler extender has recorded as bound.
    pub bindings: &'a [BindingSnapshot],
    /// The bound pods the session's last round does not run where they are.
    pub evictions: &'a [EvictionSnapshot],
    /// Pods `bind` refused, with the session's rounds when it did: not reported again until
    /// another round has run.
    pub refused: &'a BTreeMap<PodOnNode, u64>,
    /// Evict bound pods that no binding records and that sit where the last round does not run
    /// their job (`misplaced`).
    pub evict_misplaced: bool,
}

#[derive(Debug, Clone, Default)]
pub struct SyncPlan {
    /// Servers (`<type>/<server>`) to report failed, and to report returned.
    pub fail: Vec<String>,
    pub restore: Vec<String>,
    pub add: Vec<JobSpec>,
    pub remove: Vec<String>,
    /// `known` after this pass.
    pub known: BTreeSet<String>,
    pub problems: Vec<String>,
    /// Bound pods to report, evictions to carry out, bindings to forget.
    pub bindings: BindingPlan,
}

/// The server a node is, `<type>/<server>`, checked against the session's cluster, with the GPUs
/// that server holds (the last server of a type holds what is left of its count).
fn server_of(node: &Node, session: &SessionSnapshot) -> Option<Result<(String, u32, u32), String>> {
    let labels = &node.metadata.labels;
    let worker_type = labels.get(WORKER_TYPE)?;
    let name = &node.metadata.name;
    let Some(t) = session.cluster.worker_types.get(worker_type) else {
        return Some(Err(format!(
            "node {name}: worker type {worker_type:?} ({WORKER_TYPE}) is not in the session's cluster"
        )));
    };
    let Some(text) = labels.get(SERVER) else {
        return Some(Err(format!("node {name}: label {WORKER_TYPE} without {SERVER} (its server index)")));
    };
    match text.parse::<u32>() {
        Ok(server) if (server as usize) < t.servers => {
            let gpus = t.count.saturating_sub(server.saturating_mul(t.gpus_per_server)).min(t.gpus_per_server);
            Some(Ok((worker_type.clone(), server, gpus)))
        }
        _ => Some(Err(format!(
            "node {name}: {SERVER}={text:?} is not a server of {worker_type} (0 to {})",
            t.servers.saturating_sub(1)
        ))),
    }
}

/// A job's GPUs: one pod's times its gang's size (`arbiter.dev/pods`, as the scheduler extender
/// reads it), or else the sum over the live pods seen.
fn scale_factor(live: &[&&Pod]) -> Result<u32, String> {
    let first = live.first().ok_or("no live pod")?;
    if let Some(text) = first.metadata.annotations.get(PODS) {
        let pods = text.trim().parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
            format!("pod {}: annotation {PODS}: {text:?} is not a whole number > 0", first.metadata.key())
        })?;
        let gpus = first.spec.gpus().map_err(|e| format!("pod {}: {e}", first.metadata.key()))?;
        return Ok(gpus.saturating_mul(pods));
    }
    live.iter().try_fold(0u32, |sum, pod| {
        pod.spec.gpus().map(|g| sum.saturating_add(g)).map_err(|e| format!("pod {}: {e}", pod.metadata.key()))
    })
}

/// One pass: see the module's documentation.
pub fn plan(inputs: &SyncInputs<'_>) -> SyncPlan {
    let mut out = SyncPlan::default();
    let failed: BTreeSet<&str> = inputs.session.cluster.failed_gpus.iter().map(String::as_str).collect();
    for node in inputs.nodes {
        let (worker_type, server, gpus) = match server_of(node, inputs.session) {
            None => continue,
            Some(Err(problem)) => {
                out.problems.push(problem);
                continue;
            }
            Some(Ok(server)) => server,
        };
        let names: Vec<String> = (0..gpus).map(|g| format!("{worker_type}/{server}/{g}")).collect();
        let server = format!("{worker_type}/{server}");
        if !node.is_usable() && !names.iter().all(|g| failed.contains(g.as_str())) {
            out.fail.push(server);
        } else if node.is_usable() && names.iter().any(|g| failed.contains(g.as_str())) {
            out.restore.push(server);
        }
    }
    let mut by_job: BTreeMap<&str, Vec<&Pod>> = BTreeMap::new();
    for pod in inputs.pods {
        if let Some(job) = pod.metadata.labels.get(JOB) {
            by_job.entry(job.as_str()).or_default().push(pod);
        }
    }
    let worker_types = inputs.session.worker_types();
    let jobs = inputs.session.jobs_by_id();
    for (&job, pods) in &by_job {
        if is_kueue_job(job) {
            out.problems.push(format!("pods labelled {JOB}={job:?}: a job id with '/' is a Kueue workload's"));
            continue;
        }
        let live: Vec<&&Pod> = pods.iter().filter(|p| is_live(p)).collect();
        if live.is_empty() {
            if pods.iter().any(|p| !is_finished(p)) {
                // Only being deleted (e.g. evicted): its controller recreates them, the job stays.
                out.known.insert(job.to_string());
            }
            continue; // finished: removed below if the session has it
        }
        out.known.insert(job.to_string());
        if jobs.contains_key(job) {
            continue;
        }
        let scale_factor = match scale_factor(&live) {
            Ok(s) => s,
            Err(e) => {
                out.problems.push(format!("job {job}: {e}"));
                continue;
            }
        };
        if scale_factor == 0 {
            out.problems.push(format!("job {job}: its pods request no nvidia.com/gpu, so it is not added"));
            continue;
        }
        let annotations: Vec<_> = live.iter().map(|p| &p.metadata.annotations).collect();
        match jobs::job_spec(job, scale_factor, &annotations, &worker_types, inputs.reference) {
            Ok(spec) => out.add.push(spec),
            Err(e) => out.problems.push(format!("job {job} (pod {}): {e}", live[0].metadata.key())),
        }
    }
    out.remove = inputs
        .session
        .jobs
        .iter()
        .map(|j| &j.id)
        .filter(|id| !out.known.contains(*id) && (inputs.known.contains(*id) || by_job.contains_key(id.as_str())))
        .cloned()
        .collect();
    // A removal that fails is tried again next pass; once done, the session lacks the job and
    // it is forgotten.
    out.known.extend(out.remove.iter().cloned());
    out.bindings = plan_bindings(inputs.pods, inputs.bindings, inputs.evictions, inputs.refused, inputs.session.rounds);
    if inputs.evict_misplaced {
        let misplaced = misplaced(inputs);
        out.bindings.bind.retain(|b| !misplaced.iter().any(|e| e.pod.namespace == b.namespace && e.pod.name == b.name));
        out.bindings.misplaced = misplaced;
    }
    out
}

/// Live pods bound where the last round does not run their job, which no binding records: the
/// scheduler placed them alone, as it does past an `ignorable` extender it cannot reach. Only
/// pods of jobs the last round decided about, on nodes that are servers of the session; a job
/// the round runs nowhere has all its bound pods here.
fn misplaced(inputs: &SyncInputs<'_>) -> Vec<EvictionSnapshot> {
    let servers: BTreeMap<&str, String> = inputs
        .nodes
        .iter()
        .filter_map(|n| match server_of(n, inputs.session) {
            Some(Ok((worker_type, server, _))) => Some((n.metadata.name.as_str(), format!("{worker_type}/{server}"))),
            _ => None,
        })
        .collect();
    let recorded: BTreeSet<(&str, &str)> =
        inputs.bindings.iter().map(|b| (b.namespace.as_str(), b.name.as_str())).collect();
    let jobs = inputs.session.jobs_by_id();
    let round = inputs.session.last_round().unwrap_or_default();
    let mut out = Vec::new();
    for pod in inputs.pods.iter().filter(|p| is_live(p)) {
        let (ns, name) = (namespace(pod), pod.metadata.name.as_str());
        let Some(job_id) = pod.metadata.labels.get(JOB).filter(|j| !is_kueue_job(j)) else { continue };
        let Some(node) = pod.spec.node_name.as_deref().filter(|n| !n.is_empty()) else { continue };
        let (Some(job), Some(server)) = (jobs.get(job_id.as_str()), servers.get(node)) else { continue };
        if recorded.contains(&(ns, name)) || !inputs.session.in_last_round(job) {
            continue;
        }
        let runs_on: BTreeSet<&str> = job
            .lease
            .iter()
            .flat_map(|l| &l.gpus)
            .filter_map(|gpu| gpu.rsplit_once('/').map(|(server, _)| server))
            .collect();
        if runs_on.contains(server.as_str()) {
            continue;
        }
        let decided = match runs_on.is_empty() {
            true => "nowhere".to_string(),
            false => format!("on {}", runs_on.into_iter().collect::<Vec<_>>().join(", ")),
        };
        out.push(EvictionSnapshot {
            pod: BindingSnapshot {
                namespace: ns.to_string(),
                name: name.to_string(),
                uid: pod.metadata.uid.clone().unwrap_or_default(),
                node: node.to_string(),
                job: job_id.clone(),
                server: server.clone(),
            },
            reason: format!("bound to {server} outside the rounds: round {round} runs job {job_id} {decided}"),
        });
    }
    out
}
