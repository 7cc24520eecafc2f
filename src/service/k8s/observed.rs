//! What the extender has seen of a session's nodes and pods, in memory only: the labels of nodes
//! sent whole (so `NodeNames`-only calls can be answered) and the job of every pod `filter` saw
//! (`bind`'s body names the pod but carries none of its labels). Lost on restart, bounded in size.

use super::mapping::NodeLabels;
use indexmap::IndexMap;
use std::collections::HashMap;
use std::sync::Mutex;

/// Entries kept of each kind; past it, the oldest half of the pods is dropped, and nodes not
/// seen before are not remembered.
const CAPACITY: usize = 100_000;

/// A pod `filter` saw: its name and the job it names (none: not Arbiter's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenPod {
    pub namespace: String,
    pub name: String,
    pub job: Option<String>,
}

/// The key a pod is remembered by: its UID, or `namespace/name` for a pod sent without one.
pub fn pod_key(uid: &str, namespace: &str, name: &str) -> String {
    if uid.is_empty() {
        format!("{namespace}/{name}")
    } else {
        uid.to_string()
    }
}

#[derive(Debug, Default)]
struct Inner {
    nodes: HashMap<String, NodeLabels>,
    pods: IndexMap<String, SeenPod>,
}

/// One session's observations.
#[derive(Debug, Default)]
pub struct Observed {
    inner: Mutex<Inner>,
}

impl Observed {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers the labels of nodes sent whole.
    pub fn saw_node(&self, name: &str, labels: &NodeLabels) {
        let mut inner = self.inner();
        if inner.nodes.len() < CAPACITY || inner.nodes.contains_key(name) {
            inner.nodes.insert(name.to_string(), labels.clone());
        }
    }

    /// The labels of a node last sent whole, if any was.
    pub fn node(&self, name: &str) -> Option<NodeLabels> {
        self.inner().nodes.get(name).cloned()
    }

    pub fn saw_pod(&self, key: String, pod: SeenPod) {
        let mut inner = self.inner();
        if inner.pods.len() >= CAPACITY && !inner.pods.contains_key(&key) {
            inner.pods.drain(..CAPACITY / 2);
        }
        inner.pods.insert(key, pod);
    }

    pub fn pod(&self, key: &str) -> Option<SeenPod> {
        self.inner().pods.get(key).cloned()
    }
}
