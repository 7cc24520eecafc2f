//! `arbiter kueue` and `arbiter k8s-sync`: their flags, the clients they build from them, the
//! session they create or reuse, and their loops (or one step with `--once`).

use super::api::Client;
use super::arbiter::ArbiterClient;
use super::kueue::controller::{Controller, Settings};
use super::kueue::flavors;
use super::kueue::types::{ResourceFlavor, GROUP};
use super::sync::controller::Sync;
use crate::request::ClusterSpec;
use crate::workload::throughputs::ThroughputTable;
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

/// Where the Kubernetes API and the Arbiter server are, and how often to step.
#[derive(Debug, Clone, clap::Args)]
pub struct Connection {
    /// The Kubernetes API server (`http://127.0.0.1:8001` under `kubectl proxy`), or `in-cluster`
    /// (the default): the cluster this runs in (KUBERNETES_SERVICE_HOST and the service account's
    /// token and CA). The same flag and variable as `arbiter serve`'s; `--api-server` and
    /// ARBITER_K8S_API_SERVER, this flag's earlier names, still work.
    #[arg(
        long = "kube-api-server",
        visible_alias = "api-server",
        value_name = "URL|in-cluster",
        env = "ARBITER_KUBE_API_SERVER"
    )]
    pub api_server: Option<String>,
    /// A bearer token for the API server, read before every call.
    #[arg(
        long = "kube-token-file",
        visible_alias = "token-file",
        value_name = "FILE",
        env = "ARBITER_KUBE_TOKEN_FILE"
    )]
    pub token_file: Option<PathBuf>,
    /// The API server's CA certificates (PEM); default: the public roots.
    #[arg(long = "kube-ca-file", visible_alias = "ca-file", value_name = "FILE", env = "ARBITER_KUBE_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// The Arbiter server (`arbiter serve`) that holds the session.
    #[arg(long, value_name = "URL", env = "ARBITER_URL", default_value = "http://127.0.0.1:8080")]
    pub arbiter: String,
    /// A bearer token for the Arbiter server (`arbiter token create`), when it requires one.
    #[arg(long, value_name = "FILE")]
    pub arbiter_token: Option<PathBuf>,
    /// The reference throughput file that `arbiter.dev/model` annotations name job types of.
    #[arg(long, value_name = "FILE")]
    pub reference_throughputs: Option<PathBuf>,
    /// Seconds between two steps.
    #[arg(long, default_value_t = 10.0)]
    pub tick_seconds: f64,
    /// Run one step, print what it did as JSON, and exit.
    #[arg(long)]
    pub once: bool,
    /// Log level or `tracing` directives.
    #[arg(long, env = "ARBITER_LOG", default_value = "info")]
    pub log: String,
}

#[derive(Debug, Clone, clap::Args)]
pub struct KueueArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// The session to use; without it, one is created (its id is logged: pass it next time).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// `spec.controllerName` of the AdmissionChecks served.
    #[arg(long, default_value = super::keys::CONTROLLER_NAME)]
    pub controller_name: String,
    /// Kueue's API version: `v1beta2` (Kueue 0.15 and later) or `v1beta1`.
    #[arg(long, default_value = "v1beta2")]
    pub kueue_version: String,
    /// A new session's cluster (the contract's `cluster` object); default: from the per-type
    /// ResourceFlavors' `arbiter.dev/gpus` and `arbiter.dev/gpus-per-server` annotations.
    #[arg(long, value_name = "FILE")]
    pub cluster: Option<PathBuf>,
    /// A new session's policy.
    #[arg(long, default_value = "max_min_fairness")]
    pub policy: String,
    /// A new session's round length in seconds.
    #[arg(long, default_value_t = 360.0)]
    pub round_seconds: f64,
    /// A new session estimates the throughputs jobs leave out (the server needs
    /// --reference-throughputs).
    #[arg(long)]
    pub estimate_missing: bool,
}

#[derive(Debug, Clone, clap::Args)]
pub struct SyncArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// The session whose workers and jobs the cluster's Nodes and Pods are.
    #[arg(long, value_name = "ID")]
    pub session: String,
    /// Also run the session's rounds: at the first step, then every `round_seconds` (as `arbiter
    /// kueue` does). Only where nothing else runs them: never beside `arbiter kueue`.
    #[arg(long)]
    pub run_rounds: bool,
    /// Evict the bound pods that sit on a server the last round does not run their job on and
    /// that no binding records: pods the scheduler placed alone, past an `ignorable` extender it
    /// could not reach. Their controllers recreate them, and the extender places the new ones.
    #[arg(long)]
    pub evict_misplaced: bool,
}

fn init_logging(directives: &str) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(directives)
        .map_err(|e| format!("--log {directives:?} is not a level or a filter: {e}"))?;
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).try_init();
    Ok(())
}

fn tick(seconds: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("--tick-seconds {seconds} is not a positive number of seconds"))
}

struct Clients {
    kube: Client,
    arbiter: ArbiterClient,
    reference: Option<ThroughputTable>,
}

fn connect(c: &Connection) -> Result<Clients, String> {
    init_logging(&c.log)?;
    let earlier = std::env::var("ARBITER_K8S_API_SERVER").ok().filter(|v| !v.is_empty());
    if c.api_server.is_none() && earlier.is_some() {
        tracing::warn!(
            "ARBITER_K8S_API_SERVER is read for now; name it ARBITER_KUBE_API_SERVER, as `arbiter serve` does"
        );
    }
    let kube = match c.api_server.clone().or(earlier).as_deref() {
        Some(url) if url != "in-cluster" => Client::new(url, c.token_file.as_deref(), c.ca_file.as_deref())?,
        _ => Client::in_cluster()?,
    };
    let arbiter = ArbiterClient::new(&c.arbiter, c.arbiter_token.as_deref())?;
    let reference = c
        .reference_throughputs
        .as_deref()
        .map(ThroughputTable::from_reference_path)
        .transpose()
        .map_err(|e| e.to_string())?;
    Ok(Clients { kube, arbiter, reference })
}

/// The session to use: `--session`, checked to exist, or a new one.
fn session(args: &KueueArgs, clients: &Clients) -> Result<String, String> {
    if let Some(id) = &args.session {
        clients.arbiter.session(id).map_err(|e| format!("session {id}: {e}"))?;
        return Ok(id.clone());
    }
    let cluster: ClusterSpec = match &args.cluster {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            crate::contract::json::read(&text).map_err(|refusal| {
                let e = refusal.into_error("");
                let at = e.field.map(|path| format!(" (at {path})")).unwrap_or_default();
                format!("{} is not a cluster object: {}{at}", file.display(), e.message)
            })?
        }
        None => {
            let path = format!("/apis/{GROUP}/{}/resourceflavors", args.kueue_version);
            let listed = clients.kube.list::<ResourceFlavor>(&path).map_err(|e| e.to_string())?;
            // The cluster comes from every flavor: one that cannot be read leaves it unknown.
            if let Some(why) = listed.malformed.first() {
                return Err(format!("cannot read the ResourceFlavors for the session's cluster: {why}"));
            }
            flavors::cluster(&flavors::type_flavors(&listed.items)?)?
        }
    };
    let mut body = json!({"policy": args.policy, "cluster": cluster, "round_seconds": args.round_seconds});
    if args.estimate_missing {
        body["estimate_missing"] = json!(true);
    }
    let id = clients.arbiter.create_session(&body).map_err(|e| format!("cannot create the session: {e}"))?;
    tracing::info!(session = %id, "session created; pass --session {id} to reuse it");
    Ok(id)
}

/// `arbiter kueue`: the report of one step with `--once`; otherwise runs until stopped.
pub fn run_kueue(args: &KueueArgs) -> Result<String, String> {
    if !matches!(args.kueue_version.as_str(), "v1beta1" | "v1beta2") {
        return Err(format!("--kueue-version {:?}: expected v1beta2 or v1beta1", args.kueue_version));
    }
    // JSON has no NaN or infinity: serialized, they would become null and the server's default.
    if !args.round_seconds.is_finite() {
        return Err(format!("--round-seconds {} is not a number of seconds", args.round_seconds));
    }
    if args.controller_name.trim().is_empty() {
        return Err("--controller-name is empty: it must be the AdmissionChecks' spec.controllerName".into());
    }
    let tick = tick(args.connection.tick_seconds)?;
    let clients = connect(&args.connection)?;
    let session = session(args, &clients)?;
    let settings = Settings {
        version: args.kueue_version.clone(),
        controller_name: args.controller_name.clone(),
        session,
        reference: clients.reference,
    };
    let mut controller = Controller::new(clients.kube, clients.arbiter, settings);
    if args.connection.once {
        let report = controller.step()?;
        return serde_json::to_string(&report).map_err(|e| e.to_string());
    }
    controller.run(tick);
    Ok(String::new())
}

/// `arbiter k8s-sync`: the report of one step with `--once`; otherwise runs until stopped.
pub fn run_sync(args: &SyncArgs) -> Result<String, String> {
    let tick = tick(args.connection.tick_seconds)?;
    let clients = connect(&args.connection)?;
    clients.arbiter.session(&args.session).map_err(|e| format!("session {}: {e}", args.session))?;
    let mut sync = Sync::new(clients.kube, clients.arbiter, args.session.clone(), clients.reference);
    if args.run_rounds {
        sync = sync.running_rounds();
    }
    if args.evict_misplaced {
        sync = sync.evicting_misplaced();
    }
    if args.connection.once {
        let report = sync.step()?;
        return serde_json::to_string(&report).map_err(|e| e.to_string());
    }
    sync.run(tick);
    Ok(String::new())
}
