//! Running the service: logging, the router and its layers, the embedded demo session, binding
//! (only to loopback without tokens, unless `--insecure`) and printing the URLs to try, and
//! graceful shutdown on SIGTERM/SIGINT.

use super::auth::{layer::authenticate, Principal};
use super::config::{Config, LogFormat};
use super::error::ApiError;
use super::k8s::handlers as k8s;
use super::sessions::events::Event;
use super::sessions::handlers::{self as h, solve_now};
use super::sessions::registry::apply_live;
use super::sessions::spec::CreateSession;
use super::state::{AppState, SharedState};
use super::store::Owner;
use super::{allocations, backup, body_limit, fitgpp, health, metrics, oasis, throughputs};
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, Method, Uri};
use axum::routing::{delete, get, post, put};
use axum::serve::ListenerExt;
use axum::Router;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer};
use tower_http::timeout::RequestBodyTimeoutLayer;

/// The id of the session `arbiter serve` starts with.
pub const DEMO_SESSION: &str = "demo";

/// Every endpoint, with the layers: request ids, metrics and logs, the body limit (its 413s
/// readable, and bodies refused unread drained: `body_limit`), authentication (before any
/// handler reads a body), and panics as 500 error objects.
pub fn router(state: SharedState) -> Router {
    Router::new()
        .route("/", get(health::index))
        .route("/healthz", get(health::healthz))
        .route("/metrics", get(metrics::metrics))
        .route("/openapi.json", get(health::openapi))
        .route("/v1/allocations", post(allocations::solve))
        .route("/v1/throughputs/estimate", post(throughputs::estimate))
        .route("/v1/sessions", get(h::list).post(h::create))
        .route("/v1/sessions/{id}", get(h::get).delete(h::delete))
        .route("/v1/sessions/{id}/jobs", post(h::add_job))
        .route("/v1/sessions/{id}/jobs/{job}", delete(h::remove_job))
        .route("/v1/sessions/{id}/jobs/{job}/progress", post(h::progress))
        .route("/v1/sessions/{id}/throughputs", put(h::throughputs))
        .route("/v1/sessions/{id}/workers/{worker}/fail", post(h::worker_failed))
        .route("/v1/sessions/{id}/workers/{worker}/return", post(h::worker_returned))
        .route("/v1/sessions/{id}/allocation", get(h::allocation).post(h::recompute))
        .route("/v1/sessions/{id}/rounds", post(h::round))
        .route("/v1/sessions/{id}/k8s/filter", post(k8s::filter))
        .route("/v1/sessions/{id}/k8s/prioritize", post(k8s::prioritize))
        .route("/v1/sessions/{id}/k8s/bind", post(k8s::bind))
        .route("/v1/sessions/{id}/k8s/preempt", post(k8s::preempt))
        .route("/v1/sessions/{id}/k8s/evictions", get(k8s::evictions))
        .route("/v1/sessions/{id}/k8s/bindings", get(k8s::bindings))
        .route("/v1/sessions/{id}/k8s/bindings/{namespace}/{name}", delete(k8s::forget))
        .route("/v1/fitgpp/sessions", get(fitgpp::list).post(fitgpp::create))
        .route("/v1/fitgpp/sessions/{id}", get(fitgpp::get).delete(fitgpp::delete))
        .route("/v1/fitgpp/sessions/{id}/jobs", post(fitgpp::submit))
        .route("/v1/fitgpp/sessions/{id}/advance", post(fitgpp::advance))
        .route("/v1/oasis/sessions", get(oasis::list).post(oasis::create))
        .route("/v1/oasis/sessions/{id}", get(oasis::get).delete(oasis::delete))
        .route("/v1/oasis/sessions/{id}/jobs", post(oasis::submit))
        .route("/v1/admin/backup", get(backup::backup))
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.config.max_body_bytes))
        .layer(CatchPanicLayer::custom(panicked))
        .layer(axum::middleware::from_fn_with_state(state.clone(), authenticate))
        // Outside authentication, so a request it refuses unread has its body drained too.
        .layer(axum::middleware::from_fn_with_state(state.config.max_body_bytes, body_limit::refuse_oversized))
        // A body that stops arriving (no frame for `--body-idle-seconds`) frees its connection;
        // a partial body used to hold one open for minutes.
        .layer(RequestBodyTimeoutLayer::new(super::config::duration(state.config.body_idle_seconds)))
        .layer(axum::middleware::from_fn_with_state(state.clone(), metrics::track))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(RequestIds::default()))
        .with_state(state)
}

async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::NoRoute { method: method.to_string(), path: uri.path().to_string() }
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed { method: method.to_string(), path: uri.path().to_string() }
}

fn panicked(_: Box<dyn std::any::Any + Send + 'static>) -> axum::response::Response {
    use axum::response::IntoResponse;
    ApiError::Internal("the handler panicked; the server keeps serving".into()).into_response()
}

/// `x-request-id` for requests that come without one: a counter.
#[derive(Debug, Clone, Default)]
struct RequestIds(Arc<AtomicU64>);

impl MakeRequestId for RequestIds {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        let n = self.0.fetch_add(1, Ordering::Relaxed);
        HeaderValue::from_str(&n.to_string()).ok().map(RequestId::new)
    }
}

fn init_logging(config: &Config) -> Result<(), String> {
    // `--log` was checked when parsed; a `Config` built by an embedding program was not.
    let directives = super::config::log_filter(&config.log).map_err(|e| format!("--log: {e}"))?;
    let filter = tracing_subscriber::EnvFilter::try_new(&directives)
        .map_err(|e| format!("--log {:?} is not a level or a filter: {e}", config.log))?;
    // Colours only on a terminal: a log file or journal gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    let result = match config.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    // Already set (a test, or an embedding program): keep the one there is.
    let _ = result;
    Ok(())
}

/// `arbiter serve`: sets up logging and the runtime, serves until SIGTERM/SIGINT.
pub fn run(config: Config) -> Result<(), String> {
    init_logging(&config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("arbiter-http")
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let result = runtime.block_on(serve(config));
    runtime.shutdown_timeout(Duration::from_secs(5));
    result
}

/// The demo session: the embedded demo cluster and jobs under max-min fairness, its allocation
/// computed, so `curl .../v1/sessions/demo/allocation` answers at once.
async fn create_demo(state: &SharedState) -> Result<(), ApiError> {
    let request = crate::demo::request("max_min_fairness");
    let create = CreateSession {
        policy: request.policy,
        cluster: request.cluster,
        jobs: request.jobs,
        round_seconds: Some(360.0),
        ..CreateSession::default()
    };
    let text = serde_json::to_string(&create).map_err(|e| ApiError::Internal(e.to_string()))?;
    let shared = state.clone();
    // Owned by nobody: with tokens, only `admin` sees it.
    super::limits::blocking(move || shared.sessions.create(DEMO_SESSION.to_string(), &text, Owner::default(), None))
        .await??;
    let shared = state.clone();
    state
        .sessions
        .update(DEMO_SESSION, &Principal::open(), Some(&state.limiter), move |entry, session| {
            let event = Event::Allocation { allocation: solve_now(&shared, entry, session)? };
            Ok((apply_live(entry, session, event)?.0, ()))
        })
        .await?;
    Ok(())
}

/// Serves until SIGTERM or SIGINT, then lets in-flight requests finish (up to the grace period).
pub async fn serve(config: Config) -> Result<(), String> {
    let grace = super::config::duration(config.shutdown_grace_seconds);
    let addr = config.addr;
    let db = config.db.display().to_string();
    config.check_exposure()?;
    let removed = backup::remove_leftovers();
    if removed > 0 {
        let dir = std::env::temp_dir();
        tracing::info!(files = removed, dir = %dir.display(), "removed backup copies left by servers killed mid-backup");
    }
    let (state, broken) = AppState::open(config.clone())?;
    for b in &broken {
        tracing::error!(session = %b.id, error = %b.error, "a stored session could not be rebuilt; it stays in the store and is not served");
    }
    tracing::info!(db = %db, sessions = state.sessions.len(), "sessions restored");
    if !config.no_demo && !state.sessions.contains(DEMO_SESSION) {
        match create_demo(&state).await {
            Ok(()) => {}
            // A full store still serves what it holds, and deletions make room.
            Err(e @ ApiError::StorageFull { .. }) => {
                tracing::warn!(error = %e.body().error.message, "no room for the demo session; serving without it");
            }
            Err(e) => return Err(format!("cannot create the demo session: {}", e.body().error.message)),
        }
    }
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let auth = match &state.keyring {
        Some(keyring) => {
            tracing::info!(file = %keyring.path().display(), active = keyring.active_tokens(), "bearer tokens required");
            format!("bearer tokens required ({} active in {})", keyring.active_tokens(), keyring.path().display())
        }
        None if local.ip().is_loopback() => {
            tracing::warn!("serving without authentication (no --tokens), on loopback only");
            "off (no --tokens): serving without authentication, on loopback only".to_string()
        }
        None => {
            tracing::warn!(addr = %local, "serving WITHOUT authentication on a non-loopback address (--insecure)");
            format!("OFF on {local}, which is not loopback (--insecure): anyone who reaches it can do anything")
        }
    };
    print_urls(local, state.sessions.contains(DEMO_SESSION), &auth, state.keyring.is_some());
    tracing::info!(addr = %local, solvers = state.limiter.max_running(), "listening");

    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let signal = async move {
        shutdown_signal().await;
        tracing::info!("shutting down: finishing in-flight requests");
        let _ = stop_tx.send(true);
    };
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let server = axum::serve(listener, router(state)).with_graceful_shutdown(signal);
    let deadline = async move {
        let _ = stop_rx.wait_for(|stop| *stop).await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        result = server => result.map_err(|e| format!("server error: {e}"))?,
        _ = deadline => tracing::warn!(seconds = grace.as_secs_f64(), "grace period over; exiting with requests in flight"),
    }
    tracing::info!("stopped");
    Ok(())
}

fn print_urls(addr: std::net::SocketAddr, demo: bool, auth: &str, tokens: bool) {
    let base = format!("http://{addr}");
    let curl = if tokens { "curl -H \"Authorization: Bearer $ARBITER_TOKEN\"" } else { "curl" };
    // The demo session belongs to no tenant: with tokens, only an `admin` token sees it, and a
    // hint with any other token would answer 404.
    let admin_curl = if tokens { "curl -H \"Authorization: Bearer $ARBITER_ADMIN_TOKEN\"" } else { "curl" };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "arbiter {} listening on {base}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(out, "authentication: {auth}");
    let _ = writeln!(out, "try:");
    if demo {
        if tokens {
            let _ = writeln!(
                out,
                "  # the demo session is seen by `admin` tokens only (`arbiter token create --scope admin`)"
            );
        }
        let _ = writeln!(out, "  {admin_curl} {base}/v1/sessions/{DEMO_SESSION}/allocation");
        let _ = writeln!(out, "  {admin_curl} -X POST {base}/v1/sessions/{DEMO_SESSION}/rounds");
        let _ = writeln!(out, "  {admin_curl} {base}/v1/sessions/{DEMO_SESSION}");
    }
    let _ = writeln!(out, "  {curl} -d @fixtures/demo.json {base}/v1/allocations");
    let _ = writeln!(out, "  curl {base}/healthz");
    let _ = writeln!(out, "  {curl} {base}/metrics");
    let _ = writeln!(out, "  curl {base}/openapi.json");
    let _ = out.flush();
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
}
