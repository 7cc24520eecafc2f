//! The pods bound to nodes in a session: recorded by `bind` as `pod_bound` events, dropped by
//! `pod_forgotten` and with their job's removal. A projection of the session's event stream, so a
//! replay after a restart rebuilds it exactly.

use crate::service::sessions::events::Event;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// One pod bound to a node, and the server and job that binding is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PodBinding {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub node: String,
    pub job: String,
    /// The node's server, `<type>/<server>` as in the session's GPU ids.
    pub server: String,
    /// The round the binding was made in (0 for the session's first round).
    pub round: u64,
}

/// Every bound pod of a session, by namespace and name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bindings {
    pods: BTreeMap<(String, String), PodBinding>,
}

impl Bindings {
    /// Follows one event of the session (every event goes through here, in order).
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::PodBound { binding } => {
                self.pods.insert((binding.namespace.clone(), binding.name.clone()), binding.clone());
            }
            Event::PodForgotten { namespace, name } => {
                self.pods.remove(&(namespace.clone(), name.clone()));
            }
            Event::RemoveJob { job } => self.pods.retain(|_, b| &b.job != job),
            _ => {}
        }
    }

    /// Bound pods in namespace, then name, order.
    pub fn iter(&self) -> impl Iterator<Item = &PodBinding> {
        self.pods.values()
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<&PodBinding> {
        self.pods.get(&(namespace.to_string(), name.to_string()))
    }

    pub fn by_uid(&self, uid: &str) -> Option<&PodBinding> {
        self.pods.values().find(|b| !uid.is_empty() && b.uid == uid)
    }

    /// The server a binding recorded for `node` (`<type>/<server>`), if any did.
    pub fn server_of_node(&self, node: &str) -> Option<&str> {
        self.pods.values().find(|b| b.node == node).map(|b| b.server.as_str())
    }
}
