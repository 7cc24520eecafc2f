//! The server's configuration: every `arbiter serve` flag, each with an environment fallback.
//! Only knobs live here; what they do lives in the modules that read them.

use super::quotas::{self, Limits};
use clap::{Args, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

/// How log lines are written (to standard error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// `arbiter serve`: the HTTP allocation service.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port (the bound address is printed).
    #[arg(long, env = "ARBITER_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// SQLite database holding the sessions; created if absent. `:memory:` keeps nothing.
    #[arg(long, env = "ARBITER_DB", default_value = "./arbiter.db")]
    pub db: PathBuf,

    /// Largest size of the database, in bytes (SQLite's `max_page_count`, rounded down to whole
    /// pages); a write past it fails with 503 `storage_full`, as on a full disk. Default: no cap.
    #[arg(long, env = "ARBITER_DB_MAX_BYTES", value_parser = clap::value_parser!(u64).range(65536..))]
    pub db_max_bytes: Option<u64>,

    /// Largest request body accepted, in bytes; larger ones get 413 `payload_too_large`.
    #[arg(long, env = "ARBITER_MAX_BODY_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Longest a request body may go without sending anything, in seconds; then the read fails
    /// with 400 and the connection closes (a stalled upload does not hold it open).
    #[arg(long, env = "ARBITER_BODY_IDLE_SECONDS", default_value_t = 30.0, value_parser = positive_seconds)]
    pub body_idle_seconds: f64,

    /// Solves running at once, 1 to 1024 (each on its own thread); default: the number of cores
    /// (at most 1024).
    #[arg(long, env = "ARBITER_MAX_CONCURRENT_SOLVES", value_parser = solver_threads)]
    pub max_concurrent_solves: Option<u32>,

    /// Solves waiting for a free solver beyond those running; past it, 429 with Retry-After.
    /// Default: 8 per concurrent solve.
    #[arg(long, env = "ARBITER_MAX_QUEUED_SOLVES")]
    pub max_queued_solves: Option<u32>,

    /// Longest a solve waits in the queue for a solver before it is turned away with 429.
    #[arg(long, env = "ARBITER_MAX_QUEUE_SECONDS", default_value_t = 5.0, value_parser = positive_seconds)]
    pub max_queue_seconds: f64,

    /// Server-wide solve budget in seconds; a request's `max_solve_seconds` can only lower it.
    /// A solve past its budget ends with 504 `timeout`.
    #[arg(long, env = "ARBITER_MAX_SOLVE_SECONDS", default_value_t = 60.0, value_parser = positive_seconds)]
    pub max_solve_seconds: f64,

    /// How many nice steps (0 to 19) the solver threads run below the server's own threads:
    /// solves yield the CPU to request handling, so `/healthz` and cheap requests stay fast while
    /// big solves run. 0 disables.
    #[arg(long, env = "ARBITER_SOLVER_NICE", default_value_t = 10, value_parser = clap::value_parser!(i32).range(0..=19))]
    pub solver_nice: i32,

    /// After SIGTERM/SIGINT, in-flight requests get this long to finish before the server exits.
    #[arg(long, env = "ARBITER_SHUTDOWN_GRACE_SECONDS", default_value_t = 90.0, value_parser = positive_seconds)]
    pub shutdown_grace_seconds: f64,

    /// Log filter: a level (`trace`, `debug`, `info`, `warn`, `error`, `off`) or `tracing`
    /// directives such as `info,arbiter::service=debug`. Every request is logged at `debug`.
    #[arg(long, env = "ARBITER_LOG", default_value = "info", value_parser = log_filter)]
    pub log: String,

    /// Log line format.
    #[arg(long, env = "ARBITER_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Do not create the embedded demo session (`demo`) at start.
    #[arg(long, env = "ARBITER_NO_DEMO", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_demo: bool,

    /// The reference matrix of `POST /v1/throughputs/estimate` when a request posts none: a
    /// measured-throughput file in Gavel's format (e.g. `simulation_throughputs.json`).
    #[arg(long, env = "ARBITER_REFERENCE_THROUGHPUTS", value_name = "FILE")]
    pub reference_throughputs: Option<PathBuf>,

    /// Require bearer tokens: the token file (`arbiter token create` makes it), re-read when it
    /// changes. Without it the server serves everyone, and only on a loopback address.
    #[arg(long, env = "ARBITER_TOKENS", value_name = "FILE")]
    pub tokens: Option<PathBuf>,

    /// Serve without tokens on an address other than loopback (e.g. 0.0.0.0:8080), which is
    /// otherwise refused at start: anyone who can reach the port can then do anything.
    #[arg(long, env = "ARBITER_INSECURE", value_parser = clap::builder::BoolishValueParser::new())]
    pub insecure: bool,

    /// The Kubernetes API server at which the scheduler extender's `bind` creates the Bindings it
    /// accepts (`https://HOST:6443`; `http://127.0.0.1:8001` under `kubectl proxy`), or
    /// `in-cluster` for the cluster the server runs in (its service account, which needs `create`
    /// on `pods/binding`). Without it, `bind` records bindings and creates none.
    #[arg(long, env = "ARBITER_KUBE_API_SERVER", value_name = "URL|in-cluster")]
    pub kube_api_server: Option<String>,

    /// With --kube-api-server URL: a bearer token for it, read before every call.
    #[arg(long, env = "ARBITER_KUBE_TOKEN_FILE", value_name = "FILE")]
    pub kube_token_file: Option<PathBuf>,

    /// With --kube-api-server URL: its CA certificates (PEM); default: the public roots.
    #[arg(long, env = "ARBITER_KUBE_CA_FILE", value_name = "FILE")]
    pub kube_ca_file: Option<PathBuf>,

    /// With tokens: live sessions (of both kinds) a tenant may own; `admin` tokens are exempt.
    #[arg(long, env = "ARBITER_TENANT_MAX_SESSIONS", default_value_t = quotas::DEFAULT_MAX_SESSIONS)]
    pub tenant_max_sessions: u64,

    /// With tokens: active jobs in one of a tenant's sessions; `admin` tokens are exempt.
    #[arg(long, env = "ARBITER_TENANT_MAX_JOBS_PER_SESSION", default_value_t = quotas::DEFAULT_MAX_JOBS_PER_SESSION)]
    pub tenant_max_jobs_per_session: u64,

    /// With tokens: solves of one tenant admitted at once (running or queued); past it, 429
    /// `rate_limited` with Retry-After.
    #[arg(long, env = "ARBITER_TENANT_MAX_CONCURRENT_SOLVES", default_value_t = quotas::DEFAULT_MAX_CONCURRENT_SOLVES)]
    pub tenant_max_concurrent_solves: u64,

    /// With tokens: sustained requests per second of one tenant; past it (and its burst), 429
    /// `rate_limited` with Retry-After.
    #[arg(long, env = "ARBITER_TENANT_REQUESTS_PER_SECOND", default_value_t = quotas::DEFAULT_REQUESTS_PER_SECOND, value_parser = positive_rate)]
    pub tenant_requests_per_second: f64,

    /// With tokens: requests one tenant may make at once after a quiet spell.
    #[arg(long, env = "ARBITER_TENANT_BURST", default_value_t = quotas::DEFAULT_BURST, value_parser = clap::value_parser!(u64).range(1..))]
    pub tenant_burst: u64,
}

/// The most solves `--max-concurrent-solves` lets run at once. Each has a thread of its own,
/// started with the server: a bound far above any machine's cores keeps a typo (or `u32::MAX`)
/// from exhausting the process's threads at start.
pub const MAX_CONCURRENT_SOLVES: u32 = 1024;

/// A number of solver threads, 1 to [`MAX_CONCURRENT_SOLVES`].
fn solver_threads(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if (1..=u64::from(MAX_CONCURRENT_SOLVES)).contains(&n) => Ok(n as u32),
        _ => Err(format!(
            "expected a whole number of solves from 1 to {MAX_CONCURRENT_SOLVES} (each runs on a thread of its own), \
             got {text:?}"
        )),
    }
}

/// The levels `--log` takes alone.
const LOG_LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];

/// `--log`: a level, or `tracing` directives. A bare word that is not a level is refused:
/// `tracing` reads it as the name of a target to log, so `warning` or `verbose` would log
/// nothing of the server at all. Directives with a `=` or a span (`arbiter=debug`,
/// `tower_http=info`) are read as written.
pub fn log_filter(text: &str) -> Result<String, String> {
    for directive in text.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let bare = !directive.contains(['=', '[']);
        if bare && !LOG_LEVELS.iter().any(|level| level.eq_ignore_ascii_case(directive)) {
            return Err(format!(
                "{directive:?} is not a level: expected one of {}, or directives that give a target \
                 its level, such as `info,arbiter=debug`",
                LOG_LEVELS.join(", ")
            ));
        }
    }
    match tracing_subscriber::EnvFilter::try_new(text) {
        Ok(_) => Ok(text.to_string()),
        Err(e) => Err(format!("{text:?} is not a level or a filter: {e}")),
    }
}

fn positive_rate(text: &str) -> Result<f64, String> {
    positive(text, "requests per second")
}

fn positive_seconds(text: &str) -> Result<f64, String> {
    // Longer than about 31 years is a mistaken unit (and past u64 seconds, no duration at all:
    // `--max-queue-seconds 1e300` panicked at startup).
    positive(text, "seconds").and_then(|v| {
        (v <= MAX_SECONDS).then_some(v).ok_or_else(|| format!("expected at most {MAX_SECONDS:e} seconds, got {text:?}"))
    })
}

/// Longest time a flag takes, in seconds (about 31 years).
const MAX_SECONDS: f64 = 1e9;

/// A flag's seconds as a duration, within [`MAX_SECONDS`] whatever an embedder set (a
/// `Config` built in code skips the flags' parser).
pub fn duration(seconds: f64) -> std::time::Duration {
    std::time::Duration::try_from_secs_f64(seconds.clamp(0.0, MAX_SECONDS)).unwrap_or_default()
}

/// A finite number of `unit` > 0.
fn positive(text: &str, unit: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a finite number of {unit} > 0, got {text:?}")),
    }
}

impl Config {
    /// The defaults of every flag, with `addr` and `db` given (for tests and embedding).
    pub fn new(addr: SocketAddr, db: impl Into<PathBuf>) -> Config {
        Config {
            addr,
            db: db.into(),
            db_max_bytes: None,
            max_body_bytes: 16 * 1024 * 1024,
            body_idle_seconds: 30.0,
            max_concurrent_solves: None,
            max_queued_solves: None,
            max_queue_seconds: 5.0,
            max_solve_seconds: 60.0,
            solver_nice: 10,
            shutdown_grace_seconds: 90.0,
            log: "info".to_string(),
            log_format: LogFormat::Text,
            no_demo: false,
            reference_throughputs: None,
            tokens: None,
            insecure: false,
            tenant_max_sessions: quotas::DEFAULT_MAX_SESSIONS,
            tenant_max_jobs_per_session: quotas::DEFAULT_MAX_JOBS_PER_SESSION,
            tenant_max_concurrent_solves: quotas::DEFAULT_MAX_CONCURRENT_SOLVES,
            tenant_requests_per_second: quotas::DEFAULT_REQUESTS_PER_SECOND,
            tenant_burst: quotas::DEFAULT_BURST,
            kube_api_server: None,
            kube_token_file: None,
            kube_ca_file: None,
        }
    }

    /// Every tenant's quotas unless the token file overrides them.
    pub fn tenant_limits(&self) -> Limits {
        Limits {
            max_sessions: self.tenant_max_sessions,
            max_jobs_per_session: self.tenant_max_jobs_per_session,
            max_concurrent_solves: self.tenant_max_concurrent_solves,
            requests_per_second: self.tenant_requests_per_second,
            burst: self.tenant_burst,
        }
    }

    /// The safe default: without tokens, only a loopback address is served (unless `--insecure`).
    pub fn check_exposure(&self) -> Result<(), String> {
        if self.tokens.is_none() && !self.addr.ip().is_loopback() && !self.insecure {
            return Err(format!(
                "refusing to serve without authentication on {}, which is not a loopback address: \
                 give --tokens FILE (make one with `arbiter token create`), or --insecure to serve \
                 it to anyone who can reach the port",
                self.addr
            ));
        }
        Ok(())
    }

    /// Solves that run at once: the flag, or the number of cores; 1 to [`MAX_CONCURRENT_SOLVES`]
    /// either way (the flag's parser refuses more; an embedding program's `Config` or a machine
    /// of more cores is held to it).
    pub fn concurrent_solves(&self) -> u32 {
        self.max_concurrent_solves
            .unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
            })
            .clamp(1, MAX_CONCURRENT_SOLVES)
    }

    /// Solves that may wait: the flag, or 8 per concurrent solve.
    pub fn queued_solves(&self) -> u32 {
        self.max_queued_solves.unwrap_or_else(|| self.concurrent_solves().saturating_mul(8))
    }
}
