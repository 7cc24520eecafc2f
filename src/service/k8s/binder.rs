//! The seam through which `bind` reaches the Kubernetes API server: kube-scheduler hands the
//! binding of a pod to an extender with a `bindVerb`, which must then create it itself.

use std::future::Future;
use std::pin::Pin;

/// A pod and the node the scheduler chose for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodTarget {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub node: String,
}

/// What `bind` calls for every pod it accepts (Arbiter's or not), before recording anything:
/// an implementation creates the Binding (`POST /api/v1/namespaces/{namespace}/pods/{name}/binding`
/// with the pod's UID as a precondition) with its credentials. An error is shown on the pod and
/// nothing is recorded; the scheduler retries.
pub trait Binder: Send + Sync + std::fmt::Debug {
    fn bind<'a>(&'a self, pod: &'a PodTarget) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;
}

/// The binder `arbiter serve` runs with: records only, calls no API server. With it, configure
/// no `bindVerb` (the scheduler binds, and a sync loop reports bindings to `bind`): a pod whose
/// binding the scheduler delegates to it is recorded but never bound in Kubernetes.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecordOnly;

impl Binder for RecordOnly {
    fn bind<'a>(&'a self, _: &'a PodTarget) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(std::future::ready(Ok(())))
    }
}
