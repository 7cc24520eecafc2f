//! Bearer-token authentication and tenancy for `arbiter serve --tokens FILE`.
//!
//! - [`secret`]: tokens drawn from the OS, their SHA-256 digests, the `Authorization` header.
//! - [`file`]: the token file (digests, tenants, scopes, per-tenant quota overrides), written
//!   atomically with mode 0600.
//! - [`keyring`]: the server's view of that file, re-read when it changes.
//! - [`layer`]: the middleware that authenticates a request, checks its scope and the tenant's
//!   request rate and concurrent solves, before any body is read.
//! - [`cli`]: `arbiter token create|list|revoke`.
//!
//! Without `--tokens` every request is served as [`Principal::open`]: no owner checks, no quotas.

pub mod cli;
pub mod file;
pub mod keyring;
pub mod layer;
pub mod secret;

use super::error::ApiError;
use super::quotas::Limits;
use super::state::SharedState;
use super::store::Owner;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What a token may do. `admin` implies every other scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Scope {
    /// `POST /v1/allocations`, `POST /v1/throughputs/estimate`.
    #[serde(rename = "solve")]
    Solve,
    /// Reading sessions and FitGpp sessions.
    #[serde(rename = "sessions:read")]
    SessionsRead,
    /// Everything that creates, changes or deletes a session of either kind.
    #[serde(rename = "sessions:write")]
    SessionsWrite,
    /// `GET /metrics`.
    #[serde(rename = "metrics")]
    Metrics,
    /// Every scope, every tenant's sessions, and every route under `/v1/admin/`.
    #[serde(rename = "admin")]
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 5] = [Scope::Solve, Scope::SessionsRead, Scope::SessionsWrite, Scope::Metrics, Scope::Admin];

    pub fn name(self) -> &'static str {
        match self {
            Scope::Solve => "solve",
            Scope::SessionsRead => "sessions:read",
            Scope::SessionsWrite => "sessions:write",
            Scope::Metrics => "metrics",
            Scope::Admin => "admin",
        }
    }

    /// A comma-separated list such as `solve,sessions:read`, without duplicates, in a fixed order.
    pub fn parse_list(text: &str) -> Result<Vec<Scope>, String> {
        let mut scopes = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            scopes.push(part.parse::<Scope>()?);
        }
        if scopes.is_empty() {
            return Err("no scope given; expected some of solve, sessions:read, sessions:write, metrics, admin".into());
        }
        scopes.sort();
        scopes.dedup();
        Ok(scopes)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scope {
    type Err = String;

    fn from_str(text: &str) -> Result<Scope, String> {
        Scope::ALL.into_iter().find(|s| s.name() == text).ok_or_else(|| {
            format!("unknown scope {text:?}; expected one of solve, sessions:read, sessions:write, metrics, admin")
        })
    }
}

/// Who is asking: with authentication on, a token's id, tenant, scopes and the tenant's quotas;
/// with it off, nobody in particular ([`Principal::open`]), who may do everything.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    /// `None` when authentication is off.
    pub token_id: Option<String>,
    pub tenant: Option<String>,
    pub scopes: Vec<Scope>,
    /// The tenant's quotas; `None` when authentication is off (no quotas at all).
    pub limits: Option<Limits>,
}

impl Principal {
    /// The caller when the server has no tokens: every scope, every session, no quotas.
    pub fn open() -> Principal {
        Principal { token_id: None, tenant: None, scopes: vec![Scope::Admin], limits: None }
    }

    pub fn is_admin(&self) -> bool {
        self.scopes.contains(&Scope::Admin)
    }

    pub fn has(&self, scope: Scope) -> bool {
        self.is_admin() || self.scopes.contains(&scope)
    }

    /// Whether this caller may see a session owned by `owner` (`None`: stored before owners were
    /// recorded, or the demo session). Others get `unknown_session`, as if it did not exist.
    pub fn can_see(&self, owner: Option<&str>) -> bool {
        if self.limits.is_none() || self.is_admin() {
            return true;
        }
        matches!((owner, self.tenant.as_deref()), (Some(o), Some(t)) if o == t)
    }

    /// Who a session created by this caller belongs to: its tenant (none with authentication
    /// off) and the token that created it.
    pub fn owner(&self) -> Owner {
        Owner { tenant: self.limits.as_ref().and(self.tenant.clone()), created_by: self.token_id.clone() }
    }

    /// The quotas that count against this caller: none for `admin` (exempt from the session and
    /// job counts) or with authentication off.
    pub fn counted(&self) -> Option<&Limits> {
        self.limits.as_ref().filter(|_| !self.is_admin())
    }
}

/// The request's [`Principal`], put there by [`layer::authenticate`]. A request that reached a
/// handler without one while tokens are configured is refused (never served as open).
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

impl FromRequestParts<SharedState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &SharedState) -> Result<Caller, ApiError> {
        match parts.extensions.get::<Principal>() {
            Some(principal) => Ok(Caller(principal.clone())),
            None if state.keyring.is_none() => Ok(Caller(Principal::open())),
            None => Err(ApiError::Unauthorized {
                message: "no credentials were checked for this route".into(),
                invalid: false,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(name: &str, scopes: &[Scope]) -> Principal {
        Principal {
            token_id: Some("t".into()),
            tenant: Some(name.into()),
            scopes: scopes.to_vec(),
            limits: Some(Limits::default()),
        }
    }

    #[test]
    fn scopes_parse_in_a_fixed_order_and_refuse_unknown_names() {
        assert_eq!(Scope::parse_list("sessions:read, solve,solve").unwrap(), vec![Scope::Solve, Scope::SessionsRead]);
        assert!(Scope::parse_list("solve,sessions:delete").unwrap_err().contains("sessions:delete"));
        assert!(Scope::parse_list(" , ").is_err());
        for scope in Scope::ALL {
            assert_eq!(scope.name().parse::<Scope>(), Ok(scope));
            assert_eq!(serde_json::to_value(scope).unwrap(), scope.name());
        }
    }

    #[test]
    fn owners_and_admin() {
        let a = tenant("a", &[Scope::SessionsRead]);
        assert!(a.can_see(Some("a")));
        assert!(!a.can_see(Some("b")));
        assert!(!a.can_see(None), "sessions without an owner are for admin only");
        assert!(!a.has(Scope::SessionsWrite));
        let admin = tenant("ops", &[Scope::Admin]);
        assert!(admin.can_see(Some("a")) && admin.can_see(None));
        assert!(admin.has(Scope::Metrics));
        assert!(admin.counted().is_none() && a.counted().is_some());
        let open = Principal::open();
        assert!(open.can_see(Some("a")) && open.can_see(None));
        assert_eq!(open.owner(), Owner::default());
        assert_eq!(a.owner(), Owner { tenant: Some("a".into()), created_by: Some("t".into()) });
    }
}
