//! What every handler shares, behind one `Arc`: the configuration, the solver limiter, the live
//! sessions (over the store), the metrics and the OpenAPI document. No request state lives here.

use super::auth::keyring::Keyring;
use super::auth::Principal;
use super::config::Config;
use super::error::ApiResult;
use super::fitgpp::FitGppSessions;
use super::k8s::binder::{self, Binder};
use super::limits::SolveLimiter;
use super::metrics::Metrics;
use super::oasis::OasisSessions;
use super::quotas::{Quotas, Reservation};
use super::replayed;
use super::sessions::registry::{Broken, Serving, Sessions};
use super::store::{Opened, Store};
use crate::workload::throughputs::ThroughputTable;
use axum::body::Bytes;
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug)]
pub struct AppState {
    pub config: Config,
    pub limiter: SolveLimiter,
    pub sessions: Sessions,
    /// FitGpp sessions (`fitgpp.rs`), in the same store.
    pub fitgpp: FitGppSessions,
    /// OASiS sessions (`oasis.rs`), in the same store.
    pub oasis: OasisSessions,
    /// The store itself, for what concerns the whole database (`GET /v1/admin/backup`).
    pub store: Arc<Store>,
    pub metrics: Arc<Metrics>,
    /// `GET /openapi.json`, rendered once.
    pub openapi: Bytes,
    pub started: Instant,
    /// `--reference-throughputs`, read once at start.
    pub reference: Option<Arc<ThroughputTable>>,
    /// `--tokens`: `None` serves everyone (no owners, no quotas).
    pub keyring: Option<Keyring>,
    /// Per-tenant counters (used only with tokens).
    pub quotas: Quotas,
    /// Creates the bindings the Kubernetes extender's `bind` accepts (`k8s::binder`).
    pub binder: Arc<dyn Binder>,
}

pub type SharedState = Arc<AppState>;

impl AppState {
    /// A place for one more session (of either kind) of `caller`'s tenant, held until the
    /// creation ends; `quota_exceeded` at its `max_sessions`. None where counts do not apply
    /// (no tokens, or `admin`).
    pub fn reserve_session(&self, caller: &Principal) -> ApiResult<Option<Reservation>> {
        let (Some(limits), Some(tenant)) = (caller.counted(), caller.tenant.as_deref()) else { return Ok(None) };
        let live = || self.sessions.owned_by(tenant) + self.fitgpp.owned_by(tenant) + self.oasis.owned_by(tenant);
        self.quotas.reserve_session(tenant, limits, live).map(Some)
    }

    /// Reads the token file, opens the store and rebuilds its sessions; returns those that could
    /// not be rebuilt too.
    pub fn open(config: Config) -> Result<(SharedState, Vec<Broken>), String> {
        let reference = match &config.reference_throughputs {
            Some(path) => Some(Arc::new(ThroughputTable::from_reference_path(path).map_err(|e| e.to_string())?)),
            None => None,
        };
        let binder = binder::from_config(&config)?;
        if let Some(server) = &config.kube_api_server {
            tracing::info!(api_server = %server, "the scheduler extender's bind creates Bindings at the API server");
        }
        let keyring = config.tokens.as_deref().map(|path| Keyring::open(path, config.tenant_limits())).transpose()?;
        let (store, opened) = Store::open(&config.db, config.db_max_bytes).map_err(|e| e.to_string())?;
        log_opened(&config, &opened);
        let store = Arc::new(store);
        // Every stored session, read once and handed to the registry of its kind.
        let (mut plain, mut fitgpp, mut oasis) = (Vec::new(), Vec::new(), Vec::new());
        for stored in store.load().map_err(|e| e.to_string())? {
            match replayed::kind_of(&stored.spec) {
                Some(super::fitgpp::KEY) => fitgpp.push(stored),
                Some(super::oasis::KEY) => oasis.push(stored),
                _ => plain.push(stored),
            }
        }
        let metrics = Arc::new(Metrics::default());
        let serving = Serving { max_wait: super::config::duration(config.max_queue_seconds), metrics: metrics.clone() };
        let (sessions, mut broken) = Sessions::load(store.clone(), plain, serving.clone());
        let (fitgpp, broken_fitgpp) = FitGppSessions::load(store.clone(), fitgpp, serving.clone());
        let (oasis, broken_oasis) = OasisSessions::load(store.clone(), oasis, serving);
        broken.extend(broken_fitgpp.into_iter().chain(broken_oasis));
        let limiter = SolveLimiter::new(
            config.concurrent_solves(),
            config.queued_solves(),
            super::config::duration(config.max_queue_seconds),
            config.solver_nice,
        );
        let state = AppState {
            config,
            limiter,
            sessions,
            fitgpp,
            oasis,
            store,
            metrics,
            openapi: Bytes::from(super::openapi::json()),
            started: Instant::now(),
            reference,
            keyring,
            quotas: Quotas::default(),
            binder,
        };
        Ok((Arc::new(state), broken))
    }
}

/// What opening the store found: the integrity check's time, the size and the cap.
fn log_opened(config: &Config, opened: &Opened) {
    let db = config.db.display();
    let seconds = opened.checked_in.as_secs_f64();
    tracing::info!(db = %db, bytes = opened.bytes, quick_check_seconds = seconds, "session database checked");
    if opened.marked {
        tracing::info!(db = %db, "marked as an Arbiter database (PRAGMA application_id)");
    }
    if let (Some(asked), Some(cap)) = (config.db_max_bytes, opened.max_bytes) {
        if cap > asked {
            tracing::warn!(
                db = %db,
                db_max_bytes = asked,
                bytes = opened.bytes,
                "the database is already larger than --db-max-bytes; it is capped at its size, and writes that \
                 need more room answer 503 storage_full until deletions free some"
            );
        }
    }
}
