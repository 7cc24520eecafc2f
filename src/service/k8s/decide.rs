//! Every extender verb's answer, and the evictions, as functions of one session snapshot: the
//! current round decides which servers a job's pods may use; Kubernetes decides the rest.

use super::bindings::{Bindings, PodBinding};
use super::mapping::{placed, server_of, waiting, Node, NodeLabels, Placed, Pod};
use super::observed::{pod_key, Observed};
use super::wire::{
    ExtenderFilterResult, ExtenderPreemptionArgs, ExtenderPreemptionResult, HostPriority, MetaPod, MetaVictims,
};
use super::MAX_PRIORITY;
use crate::kubernetes::jobs;
use crate::kubernetes::keys::{GPU_RESOURCE, JOB, MODEL, PODS, THROUGHPUTS};
use crate::mechanism::{ServerId, Session};
use crate::service::error::ApiResult;
use crate::workload::throughputs::ThroughputTable;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// One session as the verbs see it.
pub struct Context<'a> {
    pub id: &'a str,
    pub session: &'a Session,
    pub bindings: &'a Bindings,
    pub observed: &'a Observed,
    /// The server's reference throughputs (`--reference-throughputs`), for `arbiter.dev/model`.
    pub reference: Option<&'a ThroughputTable>,
}

/// The candidate nodes of a call, in the form they came in.
pub enum Candidates {
    /// Whole nodes (`Nodes`): the NodeList as received, and what was read of each item.
    Nodes { list: Value, nodes: Vec<Node> },
    /// Names only (`NodeNames`, `nodeCacheCapable: true`).
    Names(Vec<String>),
}

impl Candidates {
    fn names(&self) -> Vec<&str> {
        match self {
            Candidates::Nodes { nodes, .. } => nodes.iter().map(|n| n.name.as_str()).collect(),
            Candidates::Names(names) => names.iter().map(String::as_str).collect(),
        }
    }

    /// The same form, keeping the nodes `keep` accepts.
    fn keep(&self, keep: impl Fn(&str) -> bool) -> (Option<Value>, Option<Vec<String>>) {
        match self {
            Candidates::Nodes { list, nodes } => {
                // Only the kept nodes are copied: a NodeList of a large cluster is megabytes.
                let items = list.get("items").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
                let kept: Vec<Value> =
                    nodes.iter().zip(items).filter(|(n, _)| keep(&n.name)).map(|(_, v)| v.clone()).collect();
                let mut out: serde_json::Map<String, Value> = list
                    .as_object()
                    .map(|o| o.iter().filter(|(k, _)| *k != "items").map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default();
                out.insert("items".into(), Value::Array(kept));
                (Some(Value::Object(out)), None)
            }
            Candidates::Names(names) => (None, Some(names.iter().filter(|n| keep(n)).cloned().collect())),
        }
    }
}

/// Whose a pod is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// It names no job: not Arbiter's, Kubernetes alone decides.
    NotArbiters,
    /// It names a job of the session.
    Job(String),
    /// It names a job the session does not have; the reason says so.
    Unknown { job: String, reason: String },
}

impl Context<'_> {
    pub fn owner(&self, pod: &Pod) -> Owner {
        match pod.job() {
            None => Owner::NotArbiters,
            Some(job) if self.session.job(job).is_ok() => Owner::Job(job.to_string()),
            Some(job) => Owner::Unknown {
                job: job.to_string(),
                reason: format!(
                    "arbiter: pod {} names job {job:?} ({JOB}), which session {} does not have: add it with POST \
                     /v1/sessions/{}/jobs, or annotate the pod with {THROUGHPUTS} or {MODEL}",
                    pod.display(),
                    self.id,
                    self.id
                ),
            },
        }
    }

    /// The server of a candidate node: from its labels when it came whole, else from the labels
    /// of the last whole copy seen, else from a binding to it.
    fn server(&self, name: &str, labels: Option<&NodeLabels>) -> Result<ServerId, String> {
        if let Some(labels) = labels {
            return server_of(self.session, name, labels);
        }
        if let Some(labels) = self.observed.node(name) {
            return server_of(self.session, name, &labels);
        }
        if let Some(server) = self.bindings.server_of_node(name) {
            return match self.session.cluster().worker(server) {
                Ok(crate::mechanism::Worker::Server(s)) => Ok(s),
                _ => Err(format!("arbiter: node {name} was bound as server {server}, which the session does not have")),
            };
        }
        Err(format!(
            "arbiter: node {name}'s labels are unknown: with nodeCacheCapable the scheduler sends node names only, and \
             Arbiter has not seen this node whole since it started; set nodeCacheCapable: false"
        ))
    }

    fn candidate_servers(&self, candidates: &Candidates) -> Vec<(String, Result<ServerId, String>)> {
        match candidates {
            Candidates::Nodes { nodes, .. } => {
                nodes.iter().map(|n| (n.name.clone(), self.server(&n.name, Some(&n.labels)))).collect()
            }
            Candidates::Names(names) => names.iter().map(|n| (n.clone(), self.server(n, None))).collect(),
        }
    }

    fn not_here(&self, job: &str, placed: &Placed, server: ServerId) -> String {
        format!(
            "arbiter: job {job} runs on {} in round {}, not on {}",
            placed.describe(self.session),
            self.session.rounds().saturating_sub(1),
            self.session.cluster().server_name(server)
        )
    }
}

/// `filter`'s decision: an answer, or first add the job the pod describes.
#[derive(Debug)]
pub enum Filtered {
    Answer(ExtenderFilterResult),
    /// Add this job (a job of the contract, JSON) from the pod's annotations, then ask again.
    AddJob {
        body: String,
    },
}

/// `filter`: the nodes of the servers the round placed the pod's job on pass; every other node is
/// failed as unresolvable with the reason. A pod that is not Arbiter's passes every node.
pub fn filter(ctx: &Context, pod: &Pod, candidates: &Candidates) -> ApiResult<Filtered> {
    let unresolvable = |reasons: BTreeMap<String, String>| {
        let (nodes, node_names) = candidates.keep(|_| false);
        ExtenderFilterResult { nodes, node_names, failed_and_unresolvable_nodes: reasons, ..Default::default() }
    };
    let job = match ctx.owner(pod) {
        Owner::NotArbiters => {
            let (nodes, node_names) = candidates.keep(|_| true);
            return Ok(Filtered::Answer(ExtenderFilterResult { nodes, node_names, ..Default::default() }));
        }
        Owner::Unknown { job, reason } => {
            return Ok(match job_from_annotations(ctx, pod, &job) {
                Some(Ok(body)) => Filtered::AddJob { body },
                Some(Err(error)) => Filtered::Answer(ExtenderFilterResult { error, ..Default::default() }),
                None => Filtered::Answer(ExtenderFilterResult { error: reason, ..Default::default() }),
            })
        }
        Owner::Job(job) => job,
    };
    let Some(placed) = placed(ctx.session, &job)? else {
        let reason = waiting(ctx.session, ctx.id, &job);
        return Ok(Filtered::Answer(unresolvable(
            candidates.names().into_iter().map(|n| (n.to_string(), reason.clone())).collect(),
        )));
    };
    let mut failed = BTreeMap::new();
    for (name, server) in ctx.candidate_servers(candidates) {
        match server {
            Ok(s) if placed.gpus.contains_key(&s) => {}
            Ok(s) => {
                failed.insert(name, ctx.not_here(&job, &placed, s));
            }
            Err(reason) => {
                failed.insert(name, reason);
            }
        }
    }
    let (nodes, node_names) = candidates.keep(|n| !failed.contains_key(n));
    Ok(Filtered::Answer(ExtenderFilterResult {
        nodes,
        node_names,
        failed_and_unresolvable_nodes: failed,
        ..Default::default()
    }))
}

/// The job a pod whose job the session lacks describes with `arbiter.dev/throughputs` or
/// `arbiter.dev/model` (and `arbiter.dev/pods`, `arbiter.dev/weight`), read as the Kueue
/// controller and `k8s-sync` read them (`kubernetes::jobs`): none without either annotation, the
/// reason when they do not describe a job.
fn job_from_annotations(ctx: &Context, pod: &Pod, job: &str) -> Option<Result<String, String>> {
    if !pod.annotations.contains_key(THROUGHPUTS) && !pod.annotations.contains_key(MODEL) {
        return None;
    }
    let who = pod.display();
    let describe = || -> Result<String, String> {
        let pods = match pod.annotations.get(PODS) {
            None => 1,
            Some(n) => n.parse::<u32>().ok().filter(|&n| n >= 1).ok_or_else(|| {
                format!("arbiter: pod {who}'s annotation {PODS} must be a whole number ≥ 1, got {n:?}")
            })?,
        };
        if pod.gpus == 0 {
            return Err(format!(
                "arbiter: pod {who} requests no {GPU_RESOURCE}; a job added from a pod takes its GPU request as scale factor"
            ));
        }
        let cluster = ctx.session.cluster();
        let types: Vec<(String, u32)> =
            (0..cluster.num_types()).map(|w| (cluster.type_name(w).to_string(), cluster.gpu_count(w))).collect();
        let gpus = u64::from(pod.gpus) * u64::from(pods);
        let scale_factor = u32::try_from(gpus).map_err(|_| {
            format!(
                "arbiter: pod {who}: {pods} pods of {} GPUs are {gpus} GPUs at once, more than any cluster has",
                pod.gpus
            )
        })?;
        let spec = jobs::job_spec(job, scale_factor, &[&pod.annotations], &types, ctx.reference)
            .map_err(|e| format!("arbiter: pod {who}: {e}"))?;
        serde_json::to_string(&spec).map_err(|e| format!("arbiter: pod {who}: {e}"))
    };
    Some(describe())
}

/// `prioritize`: 10 for the nodes of the server holding most of the job's GPUs this round, less
/// in proportion on servers holding fewer (at least 1), 0 elsewhere and for pods Arbiter does
/// not place (not Arbiter's, unknown job, waiting: `filter` has answered for them).
pub fn prioritize(ctx: &Context, pod: &Pod, candidates: &Candidates) -> ApiResult<Vec<HostPriority>> {
    let placed = match ctx.owner(pod) {
        Owner::Job(job) => placed(ctx.session, &job)?,
        _ => None,
    };
    Ok(ctx
        .candidate_servers(candidates)
        .into_iter()
        .map(|(host, server)| {
            let score = match (&placed, server) {
                (Some(p), Ok(s)) => p.gpus.get(&s).map_or(0, |&g| score(g, p.most())),
                _ => 0,
            };
            HostPriority { host, score }
        })
        .collect())
}

/// `MAX_PRIORITY · gpus / most`, rounded up, so every server of the job scores at least 1.
fn score(gpus: u32, most: u32) -> i64 {
    if most == 0 {
        return 0;
    }
    (MAX_PRIORITY * i64::from(gpus) + i64::from(most) - 1) / i64::from(most)
}

/// A victim the scheduler offers: its UID and the job it belongs to, if Arbiter knows one.
struct Victim {
    uid: String,
    job: Option<String>,
}

/// `preempt`: for an Arbiter pod, only the nodes of the servers the round placed its job on
/// remain, and of those only the ones whose victims include no pod of a job the round runs on
/// that node's server (evicting it would undo the round). A pod that is not Arbiter's keeps every
/// node and victim: between other pods, Kubernetes' priorities decide.
pub fn preempt(ctx: &Context, pod: &Pod, args: &ExtenderPreemptionArgs) -> ApiResult<ExtenderPreemptionResult> {
    let offered = offered_victims(ctx, args)?;
    let meta = |victims: &[Victim], pdb: i64| MetaVictims {
        pods: victims.iter().map(|v| MetaPod { uid: v.uid.clone() }).collect(),
        num_pdb_violations: pdb,
    };
    let mut result = ExtenderPreemptionResult::default();
    let job = match ctx.owner(pod) {
        Owner::NotArbiters => {
            for (node, (victims, pdb)) in &offered {
                result.node_name_to_meta_victims.insert(node.clone(), meta(victims, *pdb));
            }
            return Ok(result);
        }
        Owner::Unknown { .. } => return Ok(result),
        Owner::Job(job) => job,
    };
    let Some(placed) = placed(ctx.session, &job)? else { return Ok(result) };
    for (node, (victims, pdb)) in &offered {
        let Ok(server) = ctx.server(node, None) else { continue };
        if !placed.gpus.contains_key(&server) {
            continue;
        }
        let protected = victims.iter().filter_map(|v| v.job.as_deref()).any(
            |victim_job| matches!(placed_on(ctx.session, victim_job), Ok(Some(p)) if p.gpus.contains_key(&server)),
        );
        if !protected {
            result.node_name_to_meta_victims.insert(node.clone(), meta(victims, *pdb));
        }
    }
    Ok(result)
}

fn placed_on(session: &Session, job: &str) -> ApiResult<Option<Placed>> {
    if session.job(job).is_err() {
        return Ok(None);
    }
    placed(session, job)
}

/// The victims per node in either form, each with its job: from the pod's own labels when it
/// came whole, else from a binding or a pod `filter` saw with that UID.
fn offered_victims(ctx: &Context, args: &ExtenderPreemptionArgs) -> ApiResult<BTreeMap<String, (Vec<Victim>, i64)>> {
    let known_job = |uid: &str| -> Option<String> {
        ctx.bindings.by_uid(uid).map(|b| b.job.clone()).or_else(|| ctx.observed.pod(uid).and_then(|p| p.job))
    };
    let mut offered = BTreeMap::new();
    if let Some(meta) = &args.node_name_to_meta_victims {
        for (node, victims) in meta {
            let list = victims.pods.iter().map(|p| Victim { uid: p.uid.clone(), job: known_job(&p.uid) }).collect();
            offered.insert(node.clone(), (list, victims.num_pdb_violations));
        }
    } else if let Some(full) = &args.node_name_to_victims {
        for (node, victims) in full {
            let mut list = Vec::with_capacity(victims.pods.len());
            for (i, value) in victims.pods.iter().enumerate() {
                let pod = Pod::read(value, &format!("NodeNameToVictims.{node}.Pods[{i}]"))?;
                let job = pod.job().map(str::to_string).or_else(|| known_job(&pod.uid));
                list.push(Victim { uid: pod.uid, job });
            }
            offered.insert(node.clone(), (list, victims.num_pdb_violations));
        }
    }
    Ok(offered)
}

/// `bind`'s decision on a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindCheck {
    /// Not Arbiter's: bind it, record nothing.
    NotArbiters,
    /// Arbiter's, on a server of its job this round: bind it and record this.
    Record(PodBinding),
    /// Refused, with the reason the scheduler shows.
    Refuse(String),
}

/// `bind`: the pod must have been through `filter` (its body has none of the pod's labels), and
/// the node must be on a server the round placed its job on.
pub fn bind(ctx: &Context, namespace: &str, name: &str, uid: &str, node: &str) -> ApiResult<BindCheck> {
    let Some(seen) = ctx.observed.pod(&pod_key(uid, namespace, name)) else {
        return Ok(BindCheck::Refuse(format!(
            "arbiter: pod {namespace}/{name} (UID {uid:?}) has not been through filter since Arbiter started, so its \
             job is unknown; the scheduler retries it"
        )));
    };
    if (seen.namespace.as_str(), seen.name.as_str()) != (namespace, name) {
        return Ok(BindCheck::Refuse(format!(
            "arbiter: UID {uid:?} went through filter as pod {}/{}, not {namespace}/{name}",
            seen.namespace, seen.name
        )));
    }
    let Some(job) = seen.job else { return Ok(BindCheck::NotArbiters) };
    if ctx.session.job(&job).is_err() {
        return Ok(BindCheck::Refuse(format!(
            "arbiter: job {job} of pod {namespace}/{name} is not in session {}",
            ctx.id
        )));
    }
    let Some(placed) = placed(ctx.session, &job)? else {
        return Ok(BindCheck::Refuse(waiting(ctx.session, ctx.id, &job)));
    };
    let server = match ctx.server(node, None) {
        Ok(s) => s,
        Err(reason) => return Ok(BindCheck::Refuse(reason)),
    };
    if !placed.gpus.contains_key(&server) {
        return Ok(BindCheck::Refuse(ctx.not_here(&job, &placed, server)));
    }
    Ok(BindCheck::Record(PodBinding {
        namespace: namespace.to_string(),
        name: name.to_string(),
        uid: uid.to_string(),
        node: node.to_string(),
        job,
        server: ctx.session.cluster().server_name(server),
        round: ctx.session.rounds().saturating_sub(1),
    }))
}

/// A bound pod the current round does not run where it is.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Eviction {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub node: String,
    pub job: String,
    /// The node's server, `<type>/<server>`.
    pub server: String,
    /// Why: the job waits this round, or runs on other servers.
    pub reason: String,
}

/// The bound pods whose job the current round does not run on their node's server: evict them
/// (and forget each with `DELETE .../k8s/bindings/{namespace}/{name}` once it is gone).
pub fn evictions(ctx: &Context) -> ApiResult<Vec<Eviction>> {
    let cluster = ctx.session.cluster();
    let mut out = Vec::new();
    for b in ctx.bindings.iter() {
        let server = match cluster.worker(&b.server) {
            Ok(crate::mechanism::Worker::Server(s)) => Some(s),
            _ => None,
        };
        let reason = match (placed_on(ctx.session, &b.job)?, server) {
            (None, _) => waiting(ctx.session, ctx.id, &b.job),
            (Some(p), Some(s)) if p.gpus.contains_key(&s) => continue,
            (Some(p), Some(s)) => ctx.not_here(&b.job, &p, s),
            (Some(_), None) => format!("arbiter: server {} is not in session {}", b.server, ctx.id),
        };
        out.push(Eviction {
            namespace: b.namespace.clone(),
            name: b.name.clone(),
            uid: b.uid.clone(),
            node: b.node.clone(),
            job: b.job.clone(),
            server: b.server.clone(),
            reason,
        });
    }
    Ok(out)
}

/// `GET /v1/sessions/{id}/k8s/evictions`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EvictionList {
    pub session: String,
    /// Rounds run so far; the evictions are those of the last one.
    pub rounds: u64,
    pub evictions: Vec<Eviction>,
}

/// `GET /v1/sessions/{id}/k8s/bindings`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BindingList {
    pub session: String,
    pub bindings: Vec<PodBinding>,
}
