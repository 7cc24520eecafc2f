//! A session's audit, shown by `GET /v1/sessions/{id}?audit=N`,
//! `GET /v1/fitgpp/sessions/{id}?audit=N` and `GET /v1/oasis/sessions/{id}?audit=N`: who owns it, which token created it, and its last N
//! stored events with the id of the token that made each (never a secret; none without tokens).

use super::error::{ApiError, ApiResult};
use super::limits::blocking;
use super::store::{EventRecord, Owner, Store};
use crate::error::{ArbiterError, ErrorCode};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use utoipa::{IntoParams, ToSchema};

/// The most events one audit shows.
pub const MAX_AUDIT_EVENTS: u32 = 10_000;

/// The query of a session's `GET`.
#[derive(Debug, Clone, Copy, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Add `audit` to the answer: the owner, the creating token and the last `audit` events
    /// (0 to 10,000), each with its kind, time, sequence number and token id.
    #[param(maximum = 10000)]
    pub audit: Option<u32>,
}

impl AuditQuery {
    /// How many events to show, if an audit was asked for.
    pub fn events(&self) -> ApiResult<Option<u32>> {
        match self.audit {
            Some(n) if n > MAX_AUDIT_EVENTS => Err(ApiError::Arbiter(ArbiterError::at(
                ErrorCode::InvalidNumber,
                "audit",
                format!("audit shows at most {MAX_AUDIT_EVENTS} events, not {n}"),
            ))),
            n => Ok(n),
        }
    }
}

/// Who owns a session and what was done to it lately, by which token.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AuditView {
    /// The tenant it belongs to; `null` when it was created without tokens (or before owners
    /// were recorded): then only `admin` tokens see it.
    pub owner: Option<String>,
    /// The id of the token that created it.
    pub created_by: Option<String>,
    /// The last events asked for, oldest first.
    pub events: Vec<AuditEvent>,
}

/// One stored event.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct AuditEvent {
    /// Its number in the session, from 1.
    pub seq: i64,
    /// `add_job`, `remove_job`, `progress`, `throughputs`, `worker_failed`, `worker_returned`,
    /// `allocation`, `round`, `pod_bound`, `pod_forgotten`; `fitgpp_submit`, `fitgpp_advance`; `oasis_submit`.
    pub kind: String,
    /// When it was stored, in seconds since the Unix epoch.
    pub at: f64,
    /// The id of the token that made it; `null` without tokens.
    pub token_id: Option<String>,
}

impl AuditView {
    /// Session `id`'s audit: `owner` and its last `n` stored events, read off the async runtime.
    pub async fn load(store: &Arc<Store>, id: &str, owner: &Owner, n: u32) -> ApiResult<AuditView> {
        let (store, key) = (store.clone(), id.to_string());
        let events = blocking(move || store.audit(&key, n)).await?.map_err(ApiError::from)?;
        Ok(AuditView::new(owner, events))
    }

    pub fn new(owner: &Owner, events: Vec<EventRecord>) -> AuditView {
        AuditView {
            owner: owner.tenant.clone(),
            created_by: owner.created_by.clone(),
            events: events
                .into_iter()
                .map(|e| AuditEvent { seq: e.seq, kind: e.kind, at: e.at, token_id: e.token_id })
                .collect(),
        }
    }
}
