//! What every handler shares, behind one `Arc`: the configuration, the solver limiter, the live
//! sessions (over the store), the metrics and the OpenAPI document. No request state lives here.

use super::auth::keyring::Keyring;
use super::config::Config;
use super::fitgpp::FitGppSessions;
use super::limits::SolveLimiter;
use super::metrics::Metrics;
use super::quotas::Quotas;
use super::sessions::registry::{Broken, Sessions};
use super::store::Store;
use crate::workload::throughputs::ThroughputTable;
use axum::body::Bytes;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct AppState {
    pub config: Config,
    pub limiter: SolveLimiter,
    pub sessions: Sessions,
    /// FitGpp sessions (`fitgpp.rs`), in the same store.
    pub fitgpp: FitGppSessions,
    pub metrics: Metrics,
    /// `GET /openapi.json`, rendered once.
    pub openapi: Bytes,
    pub started: Instant,
    /// `--reference-throughputs`, read once at start.
    pub reference: Option<Arc<ThroughputTable>>,
    /// `--tokens`: `None` serves everyone (no owners, no quotas).
    pub keyring: Option<Keyring>,
    /// Per-tenant counters (used only with tokens).
    pub quotas: Quotas,
}

pub type SharedState = Arc<AppState>;

impl AppState {
    /// Reads the token file, opens the store and rebuilds its sessions; returns those that could
    /// not be rebuilt too.
    pub fn open(config: Config) -> Result<(SharedState, Vec<Broken>), String> {
        let reference = match &config.reference_throughputs {
            Some(path) => Some(Arc::new(ThroughputTable::from_path(path).map_err(|e| e.to_string())?)),
            None => None,
        };
        let keyring = config.tokens.as_deref().map(|path| Keyring::open(path, config.tenant_limits())).transpose()?;
        let store = Arc::new(Store::open(&config.db).map_err(|e| e.to_string())?);
        let (sessions, mut broken) = Sessions::load(store.clone()).map_err(|e| e.to_string())?;
        let (fitgpp, broken_fitgpp) = FitGppSessions::load(store).map_err(|e| e.to_string())?;
        broken.extend(broken_fitgpp.into_iter().map(|(id, error)| Broken { id, error }));
        let limiter = SolveLimiter::new(
            config.concurrent_solves(),
            config.queued_solves(),
            Duration::from_secs_f64(config.max_queue_seconds),
            config.solver_nice,
        );
        let state = AppState {
            config,
            limiter,
            sessions,
            fitgpp,
            metrics: Metrics::default(),
            openapi: Bytes::from(super::openapi::json()),
            started: Instant::now(),
            reference,
            keyring,
            quotas: Quotas::default(),
        };
        Ok((Arc::new(state), broken))
    }
}
