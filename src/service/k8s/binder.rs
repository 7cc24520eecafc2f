//! The seam through which `bind` reaches the Kubernetes API server: kube-scheduler hands the
//! binding of a pod to an extender with a `bindVerb`, which must then create it itself.

use crate::service::config::Config;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

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

/// The binder `arbiter serve` runs with by default: records only, calls no API server. With it,
/// configure no `bindVerb` (the scheduler binds, and `arbiter k8s-sync` reports bindings to
/// `bind`): a pod whose binding the scheduler delegates to it is recorded but never bound.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecordOnly;

impl Binder for RecordOnly {
    fn bind<'a>(&'a self, _: &'a PodTarget) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The binder of `arbiter serve --kube-api-server`: creates each Binding at the API server with
/// the server's own credentials (the blocking client, on tokio's blocking pool).
#[cfg(feature = "kubernetes")]
pub struct ApiBinder {
    client: Arc<crate::kubernetes::api::Client>,
    server: String,
}

#[cfg(feature = "kubernetes")]
impl std::fmt::Debug for ApiBinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiBinder").field("server", &self.server).finish()
    }
}

#[cfg(feature = "kubernetes")]
impl ApiBinder {
    /// A binder calling `client`, which talks to `server` (named in logs and errors).
    pub fn new(client: crate::kubernetes::api::Client, server: &str) -> ApiBinder {
        ApiBinder { client: Arc::new(client), server: server.to_string() }
    }
}

#[cfg(feature = "kubernetes")]
impl Binder for ApiBinder {
    fn bind<'a>(&'a self, pod: &'a PodTarget) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        let client = self.client.clone();
        let target = pod.clone();
        Box::pin(async move {
            let call = tokio::task::spawn_blocking(move || {
                client.bind_pod(&target.namespace, &target.name, Some(&target.uid), &target.node)
            });
            match call.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(match e.status {
                    Some(status) => format!("the API server {} answered {status}: {}", self.server, e.message),
                    None => format!("the API server {} cannot be reached: {}", self.server, e.message),
                }),
                Err(e) => Err(format!("the call to the API server {} did not complete: {e}", self.server)),
            }
        })
    }
}

/// The binder `config` asks for: `--kube-api-server URL` (with `--kube-token-file` and
/// `--kube-ca-file`) or `in-cluster` → an [`ApiBinder`]; none → [`RecordOnly`].
pub fn from_config(config: &Config) -> Result<Arc<dyn Binder>, String> {
    let Some(server) = config.kube_api_server.as_deref() else {
        for (flag, given) in
            [("--kube-token-file", config.kube_token_file.is_some()), ("--kube-ca-file", config.kube_ca_file.is_some())]
        {
            if given {
                return Err(format!("{flag} is only used with --kube-api-server, which is not given"));
            }
        }
        return Ok(Arc::new(RecordOnly));
    };
    api_binder(server, config)
}

#[cfg(feature = "kubernetes")]
fn api_binder(server: &str, config: &Config) -> Result<Arc<dyn Binder>, String> {
    use crate::kubernetes::api::Client;
    let client = if server == "in-cluster" {
        if config.kube_token_file.is_some() || config.kube_ca_file.is_some() {
            return Err("--kube-api-server in-cluster uses the service account's token and CA: \
                        give --kube-token-file and --kube-ca-file only with a URL"
                .to_string());
        }
        if std::env::var_os("KUBERNETES_SERVICE_HOST").is_none() {
            return Err("--kube-api-server in-cluster: not in a cluster (no KUBERNETES_SERVICE_HOST): give the API \
                        server's URL instead"
                .to_string());
        }
        Client::in_cluster()
    } else {
        Client::new(server, config.kube_token_file.as_deref(), config.kube_ca_file.as_deref())
    };
    let client = client.map_err(|e| format!("--kube-api-server {server}: {e}"))?;
    Ok(Arc::new(ApiBinder::new(client, server)))
}

#[cfg(not(feature = "kubernetes"))]
fn api_binder(server: &str, _: &Config) -> Result<Arc<dyn Binder>, String> {
    Err(format!(
        "--kube-api-server {server}: this arbiter is built without the `kubernetes` feature, which has the \
         Kubernetes API client"
    ))
}
