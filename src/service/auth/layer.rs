//! The authentication middleware: for every route but the open ones (`/`, `/healthz`,
//! `/openapi.json`), the bearer token is checked, then the scope the route needs, then the
//! tenant's request rate and (for routes that solve) its concurrent solves, all before the
//! handler runs, so a refused request never reads its body or costs a solve. The request then
//! carries its [`Principal`] for the handlers' owner checks and quotas.

use super::{Principal, Scope};
use crate::service::quotas::with_permit;
use crate::service::state::SharedState;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// What a route asks of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Nothing: served to anyone.
    Open,
    /// A valid token, whatever its scopes (paths with no endpoint: their 404 or 405).
    Token,
    /// A valid token with this scope.
    Scope(Scope),
}

/// What `method` on `route` (a route template such as `/v1/sessions/{id}`, or the raw path when
/// no route matched) needs. Every route under `/v1/admin/` needs `admin`.
pub fn required(method: &Method, route: &str) -> Need {
    let under = |prefix: &str| route == prefix || route.starts_with(&format!("{prefix}/"));
    match route {
        "/" | "/healthz" | "/openapi.json" => Need::Open,
        _ if under("/v1/admin") => Need::Scope(Scope::Admin),
        "/metrics" => Need::Scope(Scope::Metrics),
        "/v1/allocations" | "/v1/throughputs/estimate" => Need::Scope(Scope::Solve),
        _ if under("/v1/sessions") || under("/v1/fitgpp/sessions") || under("/v1/oasis/sessions") => {
            if method == Method::GET || method == Method::HEAD {
                Need::Scope(Scope::SessionsRead)
            } else {
                Need::Scope(Scope::SessionsWrite)
            }
        }
        _ => Need::Token,
    }
}

/// Whether `method` on `route` runs a solve in the solver pool (so counts against the tenant's
/// concurrent solves): the stateless solve and estimate, creating a session, recomputing its
/// allocation and running a round.
pub fn solves(method: &Method, route: &str) -> bool {
    method == Method::POST
        && matches!(
            route,
            "/v1/allocations"
                | "/v1/throughputs/estimate"
                | "/v1/sessions"
                | "/v1/sessions/{id}/allocation"
                | "/v1/sessions/{id}/rounds"
        )
}

/// The middleware (see the module's documentation). Without tokens it only marks the request
/// as [`Principal::open`].
pub async fn authenticate(State(state): State<SharedState>, mut request: Request, next: Next) -> Response {
    let Some(keyring) = &state.keyring else {
        request.extensions_mut().insert(Principal::open());
        return next.run(request).await;
    };
    let route = match request.extensions().get::<MatchedPath>() {
        Some(matched) => matched.as_str().to_string(),
        None => request.uri().path().to_string(),
    };
    let method = request.method().clone();
    let need = required(&method, &route);
    if need == Need::Open {
        return next.run(request).await;
    }
    // Two credentials are one too many: which one a proxy or this server reads would decide who
    // the caller is.
    let mut credentials = request.headers().get_all(header::AUTHORIZATION).iter();
    let (first, second) = (credentials.next(), credentials.next());
    if second.is_some() {
        let message = "more than one Authorization header; send one `Bearer <token>`".to_string();
        return crate::service::error::ApiError::Unauthorized { message, invalid: true }.into_response();
    }
    let principal = match keyring.authenticate(first.map(|v| v.as_bytes())) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if let Need::Scope(scope) = need {
        if !principal.has(scope) {
            let route = format!("{method} {route}");
            return crate::service::error::ApiError::Forbidden { scope: scope.name(), route }.into_response();
        }
    }
    let (Some(tenant), Some(limits)) = (principal.tenant.clone(), principal.limits) else {
        return crate::service::error::ApiError::Internal("an authenticated token without a tenant".into())
            .into_response();
    };
    if let Err(e) = state.quotas.admit_request(&tenant, &limits) {
        return e.into_response();
    }
    let permit = if solves(&method, &route) {
        match state.quotas.solve_permit(&tenant, &limits) {
            Ok(permit) => Some(permit),
            Err(e) => return e.into_response(),
        }
    } else {
        None
    };
    request.extensions_mut().insert(principal);
    match permit {
        Some(permit) => with_permit(permit, next.run(request)).await,
        None => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_needs_its_scope() {
        let get = Method::GET;
        let post = Method::POST;
        let s = |scope| Need::Scope(scope);
        assert_eq!(required(&get, "/healthz"), Need::Open);
        assert_eq!(required(&get, "/"), Need::Open);
        assert_eq!(required(&get, "/openapi.json"), Need::Open);
        assert_eq!(required(&get, "/metrics"), s(Scope::Metrics));
        assert_eq!(required(&post, "/v1/allocations"), s(Scope::Solve));
        assert_eq!(required(&post, "/v1/throughputs/estimate"), s(Scope::Solve));
        assert_eq!(required(&get, "/v1/sessions"), s(Scope::SessionsRead));
        assert_eq!(required(&get, "/v1/sessions/{id}/allocation"), s(Scope::SessionsRead));
        assert_eq!(required(&get, "/v1/fitgpp/sessions/{id}"), s(Scope::SessionsRead));
        assert_eq!(required(&post, "/v1/sessions"), s(Scope::SessionsWrite));
        assert_eq!(required(&post, "/v1/sessions/{id}/allocation"), s(Scope::SessionsWrite));
        assert_eq!(required(&Method::DELETE, "/v1/sessions/{id}"), s(Scope::SessionsWrite));
        assert_eq!(required(&Method::PUT, "/v1/sessions/{id}/throughputs"), s(Scope::SessionsWrite));
        assert_eq!(required(&post, "/v1/fitgpp/sessions/{id}/advance"), s(Scope::SessionsWrite));
        assert_eq!(required(&get, "/v1/oasis/sessions/{id}"), s(Scope::SessionsRead));
        assert_eq!(required(&post, "/v1/oasis/sessions/{id}/jobs"), s(Scope::SessionsWrite));
        assert_eq!(required(&post, "/v1/sessions/{id}/k8s/filter"), s(Scope::SessionsWrite));
        assert_eq!(required(&post, "/v1/sessions/{id}/k8s/bind"), s(Scope::SessionsWrite));
        assert_eq!(required(&get, "/v1/sessions/{id}/k8s/evictions"), s(Scope::SessionsRead));
        assert_eq!(
            required(&Method::DELETE, "/v1/sessions/{id}/k8s/bindings/{namespace}/{name}"),
            s(Scope::SessionsWrite)
        );
        assert_eq!(required(&get, "/v1/admin/backup"), s(Scope::Admin));
        assert_eq!(required(&post, "/v1/admin"), s(Scope::Admin));
        assert_eq!(required(&get, "/v1/administrators"), Need::Token);
        assert_eq!(required(&get, "/v1/sessionsx"), Need::Token);
        assert_eq!(required(&get, "/nowhere"), Need::Token);
    }

    #[test]
    fn routes_that_solve() {
        assert!(solves(&Method::POST, "/v1/allocations"));
        assert!(solves(&Method::POST, "/v1/sessions/{id}/rounds"));
        assert!(solves(&Method::POST, "/v1/sessions"));
        assert!(!solves(&Method::GET, "/v1/sessions/{id}/allocation"));
        assert!(!solves(&Method::POST, "/v1/sessions/{id}/jobs"));
        assert!(!solves(&Method::POST, "/v1/fitgpp/sessions"));
        assert!(!solves(&Method::POST, "/v1/sessions/{id}/k8s/filter"));
    }
}
