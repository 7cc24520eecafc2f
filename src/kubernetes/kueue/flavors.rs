//! Worker types as Kueue sees them: a per-type ResourceFlavor (labelled `arbiter.dev/worker-type`)
//! gives the node labels and tolerations that put a pod on that type's nodes and, annotated, the
//! type's GPUs; from them come the session's cluster and the `podSetUpdates` of a placement.

use super::types::{ClusterQueue, PodSetUpdate, ResourceFlavor, Workload};
use crate::kubernetes::keys::{GPUS, GPUS_PER_SERVER, GPU_RESOURCE, JOB, WORKER_TYPE};
use crate::kubernetes::objects::whole_quantity;
use crate::request::{ClusterSpec, WorkerTypeSpec};
use serde_json::Value;
use std::collections::BTreeMap;

/// One worker type's flavor.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeFlavor {
    pub flavor: String,
    /// The flavor's `nodeLabels`, or `arbiter.dev/worker-type: <type>` when it has none.
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Value>,
    pub gpus: Option<u32>,
    pub gpus_per_server: Option<u32>,
}

fn annotation_number(flavor: &ResourceFlavor, key: &str) -> Result<Option<u32>, String> {
    let Some(text) = flavor.metadata.annotations.get(key) else { return Ok(None) };
    match text.trim().parse::<u32>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(format!(
            "ResourceFlavor {:?}: annotation {key} is {text:?}, not a whole number > 0",
            flavor.metadata.name
        )),
    }
}

/// Worker type → its flavor, from the flavors labelled `arbiter.dev/worker-type`.
pub fn type_flavors(flavors: &[ResourceFlavor]) -> Result<BTreeMap<String, TypeFlavor>, String> {
    let mut types: BTreeMap<String, TypeFlavor> = BTreeMap::new();
    for flavor in flavors {
        let Some(worker_type) = flavor.metadata.labels.get(WORKER_TYPE) else { continue };
        if let Some(other) = types.get(worker_type) {
            return Err(format!(
                "ResourceFlavors {:?} and {:?} both have label {WORKER_TYPE}={worker_type}",
                other.flavor, flavor.metadata.name
            ));
        }
        let node_selector = if flavor.spec.node_labels.is_empty() {
            BTreeMap::from([(WORKER_TYPE.to_string(), worker_type.clone())])
        } else {
            flavor.spec.node_labels.clone()
        };
        types.insert(
            worker_type.clone(),
            TypeFlavor {
                flavor: flavor.metadata.name.clone(),
                node_selector,
                tolerations: flavor.spec.tolerations.clone(),
                gpus: annotation_number(flavor, GPUS)?,
                gpus_per_server: annotation_number(flavor, GPUS_PER_SERVER)?,
            },
        );
    }
    Ok(types)
}

/// The session's cluster from the per-type flavors' `arbiter.dev/gpus` (and
/// `arbiter.dev/gpus-per-server`) annotations.
pub fn cluster(types: &BTreeMap<String, TypeFlavor>) -> Result<ClusterSpec, String> {
    if types.is_empty() {
        return Err(format!("no ResourceFlavor is labelled {WORKER_TYPE}: give the cluster with --cluster, or label the per-type flavors"));
    }
    let mut worker_types = BTreeMap::new();
    for (name, t) in types {
        let count = t.gpus.ok_or_else(|| {
            format!("ResourceFlavor {:?} (worker type {name}) has no annotation {GPUS} giving its GPUs", t.flavor)
        })?;
        // A server cannot hold more GPUs than its type has: a swapped or stale pair of
        // annotations, which the session would lay out as one server of the type's GPUs.
        if let Some(per_server) = t.gpus_per_server.filter(|&g| g > count) {
            return Err(format!(
                "ResourceFlavor {:?} (worker type {name}): annotation {GPUS_PER_SERVER} is {per_server}, more than \
                 the type's {count} GPUs ({GPUS})",
                t.flavor
            ));
        }
        let spec = WorkerTypeSpec {
            count: f64::from(count),
            gpus_per_server: t.gpus_per_server.map(f64::from),
            ..WorkerTypeSpec::default()
        };
        worker_types.insert(name.clone(), spec);
    }
    Ok(ClusterSpec { worker_types })
}

/// GPUs of each pod set of a workload (count × GPUs per pod), in pod-set order.
pub fn pod_set_gpus(workload: &Workload) -> Result<Vec<(String, u32)>, String> {
    workload
        .spec
        .pod_sets
        .iter()
        .map(|ps| {
            let per_pod = ps.template.spec.gpus().map_err(|e| format!("pod set {:?}: {e}", ps.name))?;
            Ok((ps.name.clone(), per_pod.saturating_mul(ps.count)))
        })
        .collect()
}

/// The job's scale factor: every GPU its pods ask for. A workload with none is not a GPU job.
pub fn scale_factor(workload: &Workload) -> Result<u32, String> {
    let total = pod_set_gpus(workload)?.iter().fold(0u32, |sum, (_, g)| sum.saturating_add(*g));
    if total == 0 {
        return Err(format!(
            "no pod set requests {GPU_RESOURCE} (requests or limits of its containers): not a GPU job"
        ));
    }
    Ok(total)
}

/// The first key of `wanted` that `existing` sets to another value.
fn conflict<'a>(
    wanted: &'a BTreeMap<String, String>,
    existing: &BTreeMap<String, String>,
) -> Option<(&'a str, String)> {
    wanted.iter().find_map(|(k, v)| existing.get(k).filter(|e| *e != v).map(|e| (k.as_str(), e.clone())))
}

/// The `podSetUpdates` that put the workload's GPU pod sets on `worker_type`'s nodes, their pods
/// annotated `arbiter.dev/job: <job>` (so the scheduler extender knows them). Kueue refuses (and
/// fails the admission of) an update that sets a key the pod template or the reserved flavor
/// already sets otherwise, so that is an error here, naming the key.
pub fn placement_updates(
    workload: &Workload,
    job: &str,
    worker_type: &str,
    types: &BTreeMap<String, TypeFlavor>,
    flavors: &[ResourceFlavor],
) -> Result<Vec<PodSetUpdate>, String> {
    let t = types.get(worker_type).ok_or_else(|| {
        format!("no ResourceFlavor is labelled {WORKER_TYPE}={worker_type}, so its nodes cannot be selected")
    })?;
    let mut updates = Vec::new();
    for (name, gpus) in pod_set_gpus(workload)? {
        if gpus == 0 {
            continue; // a launcher or parameter server: wherever Kubernetes puts it
        }
        let pod_set = workload.spec.pod_sets.iter().find(|ps| ps.name == name);
        if let Some((key, value)) = pod_set.and_then(|ps| conflict(&t.node_selector, &ps.template.spec.node_selector)) {
            return Err(format!(
                "pod set {name:?} selects {key}={value} itself, so it cannot be put on {worker_type} ({key}={})",
                t.node_selector[key]
            ));
        }
        if let Some(other) = pod_set.and_then(|ps| ps.template.metadata.annotations.get(JOB)).filter(|o| *o != job) {
            return Err(format!("pod set {name:?} is annotated {JOB}={other:?} itself, not {job:?}"));
        }
        let assignment = workload.status.admission.iter().flat_map(|a| &a.pod_set_assignments).find(|a| a.name == name);
        for reserved in assignment.iter().flat_map(|a| a.flavors.values()) {
            let flavor = flavors.iter().find(|f| &f.metadata.name == reserved).ok_or_else(|| {
                format!("pod set {name:?} has quota on ResourceFlavor {reserved:?}, which does not exist")
            })?;
            if let Some((key, value)) = conflict(&t.node_selector, &flavor.spec.node_labels) {
                return Err(format!(
                    "pod set {name:?} has quota on ResourceFlavor {reserved:?}, whose node label {key}={value} \
                     conflicts with {worker_type}'s {key}={}: reserve on a flavor without that label",
                    t.node_selector[key]
                ));
            }
        }
        updates.push(PodSetUpdate {
            name,
            annotations: BTreeMap::from([(JOB.to_string(), job.to_string())]),
            node_selector: t.node_selector.clone(),
            tolerations: t.tolerations.clone(),
            ..PodSetUpdate::default()
        });
    }
    Ok(updates)
}

/// GPU quota (`nvidia.com/gpu` nominal, over every flavor) of the ClusterQueues that require one of
/// `checks`, each with its total; a queue whose quota differs from the session's GPUs admits too
/// few jobs (less) or lets Kueue reserve what the rounds never place (more).
pub fn gpu_quotas<'a>(queues: &'a [ClusterQueue], checks: &[String]) -> Vec<(&'a str, Result<u32, String>)> {
    queues
        .iter()
        .filter(|q| q.check_names().iter().any(|c| checks.iter().any(|o| o == c)))
        .map(|q| {
            let quotas = q.spec.resource_groups.iter().flat_map(|g| &g.flavors).flat_map(|f| &f.resources);
            let total = quotas.filter(|r| r.name == GPU_RESOURCE).try_fold(0u32, |sum, r| {
                whole_quantity(&r.nominal_quota)
                    .map(|n| sum.saturating_add(n))
                    .map_err(|e| format!("ClusterQueue {:?}: nominalQuota of {GPU_RESOURCE}: {e}", q.metadata.name))
            });
            (q.metadata.name.as_str(), total)
        })
        .collect()
}
