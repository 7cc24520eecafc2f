//! The pure half of `k8s-sync`'s binding duties: which bound pods to report to the scheduler
//! extender's `bind`, which of the last round's evictions to carry out, which bindings to forget.
//!
//! A live pod (not `Succeeded`/`Failed`, not being deleted) labelled `arbiter.dev/job` that has a
//! `spec.nodeName` and is not recorded (by namespace, name and UID) is reported, unless `bind`
//! refused that very pod and node since the last round ran. An eviction whose pod is still live is
//! carried out; a binding (evicted or not) whose pod is gone is forgotten, unless a new pod of the
//! same name is bound, whose report replaces it.

use crate::kubernetes::keys::JOB;
use crate::kubernetes::kueue::reconcile::is_kueue_job;
use crate::kubernetes::objects::Pod;
use crate::kubernetes::session::{BindingSnapshot, EvictionSnapshot};
use std::collections::{BTreeMap, BTreeSet};

/// A pod on the node it is bound to: what `bind` is told.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodOnNode {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub node: String,
}

/// What to do about bindings this pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BindingPlan {
    pub bind: Vec<PodOnNode>,
    pub evict: Vec<EvictionSnapshot>,
    /// Bound pods no binding records, on a server the last round does not run their job on
    /// (`--evict-misplaced`): evicted, with no binding to forget.
    pub misplaced: Vec<EvictionSnapshot>,
    /// `(namespace, name)` of bindings whose pod is gone.
    pub forget: Vec<(String, String)>,
}

/// `Succeeded` or `Failed`.
pub fn is_finished(pod: &Pod) -> bool {
    matches!(pod.status.phase.as_deref(), Some("Succeeded") | Some("Failed"))
}

/// Not finished and not being deleted.
pub fn is_live(pod: &Pod) -> bool {
    !is_finished(pod) && pod.metadata.deletion_timestamp.is_none()
}

pub(super) fn namespace(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or("default")
}

/// One pass over the listed pods, the recorded bindings and the last round's evictions;
/// `refused` holds the pods `bind` refused, with the session's rounds at the time.
pub fn plan_bindings(
    pods: &[Pod],
    bindings: &[BindingSnapshot],
    evictions: &[EvictionSnapshot],
    refused: &BTreeMap<PodOnNode, u64>,
    rounds: u64,
) -> BindingPlan {
    let live: BTreeMap<(&str, &str), &Pod> = pods
        .iter()
        .filter(|p| is_live(p) && p.metadata.labels.get(JOB).is_some_and(|job| !is_kueue_job(job)))
        .map(|p| ((namespace(p), p.metadata.name.as_str()), p))
        .collect();
    let uid = |p: &Pod| p.metadata.uid.clone().unwrap_or_default();
    let recorded: BTreeSet<(&str, &str, &str)> =
        bindings.iter().map(|b| (b.namespace.as_str(), b.name.as_str(), b.uid.as_str())).collect();

    let mut out = BindingPlan::default();
    for (&(ns, name), pod) in &live {
        let Some(node) = pod.spec.node_name.as_deref().filter(|n| !n.is_empty()) else { continue };
        let uid = uid(pod);
        if recorded.contains(&(ns, name, uid.as_str())) {
            continue;
        }
        let target = PodOnNode { namespace: ns.to_string(), name: name.to_string(), uid, node: node.to_string() };
        if refused.get(&target) == Some(&rounds) {
            continue; // refused in this round already: asked again once another round has run
        }
        out.bind.push(target);
    }
    let reported: BTreeSet<(&str, &str)> = out.bind.iter().map(|b| (b.namespace.as_str(), b.name.as_str())).collect();
    // The pod a binding names is still there: the same UID (an empty one matches), and live.
    let present = |ns: &str, name: &str, binding_uid: &str| {
        live.get(&(ns, name)).is_some_and(|p| binding_uid.is_empty() || uid(p) == binding_uid)
    };
    let mut gone: BTreeSet<(String, String)> = BTreeSet::new();
    for e in evictions {
        if present(&e.pod.namespace, &e.pod.name, &e.pod.uid) {
            out.evict.push(e.clone());
        } else {
            gone.insert((e.pod.namespace.clone(), e.pod.name.clone()));
        }
    }
    for b in bindings {
        if !present(&b.namespace, &b.name, &b.uid) {
            gone.insert((b.namespace.clone(), b.name.clone()));
        }
    }
    out.forget = gone.into_iter().filter(|(ns, name)| !reported.contains(&(ns.as_str(), name.as_str()))).collect();
    out
}
