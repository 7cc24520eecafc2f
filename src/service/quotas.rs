//! Per-tenant quotas, enforced only when the server has tokens: live sessions per tenant, active
//! jobs per session, solves admitted at once, and requests per second (a token bucket with a
//! burst). Defaults come from `arbiter serve`'s flags; the token file's `tenants` table overrides
//! them per tenant. The counts (sessions, jobs) do not apply to `admin` tokens; the request rate
//! and concurrent solves do, since they protect the capacity every tenant shares.

use super::error::{ApiError, ApiResult};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Default of `--tenant-max-sessions`.
pub const DEFAULT_MAX_SESSIONS: u64 = 100;
/// Default of `--tenant-max-jobs-per-session`.
pub const DEFAULT_MAX_JOBS_PER_SESSION: u64 = 10_000;
/// Default of `--tenant-max-concurrent-solves`.
pub const DEFAULT_MAX_CONCURRENT_SOLVES: u64 = 4;
/// Default of `--tenant-requests-per-second`.
pub const DEFAULT_REQUESTS_PER_SECOND: f64 = 100.0;
/// Default of `--tenant-burst`.
pub const DEFAULT_BURST: u64 = 200;

/// One tenant's quotas.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Live sessions (allocation and FitGpp sessions together) the tenant may own.
    pub max_sessions: u64,
    /// Active jobs in one allocation session; jobs held by one FitGpp session (finished ones stay
    /// in its view, so they count).
    pub max_jobs_per_session: u64,
    /// Solves of the tenant admitted at once (running or waiting for a solver thread).
    pub max_concurrent_solves: u64,
    /// Sustained requests per second (the bucket's refill rate), > 0.
    pub requests_per_second: f64,
    /// Requests that may come at once after a quiet spell (the bucket's size), ≥ 1.
    pub burst: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_jobs_per_session: DEFAULT_MAX_JOBS_PER_SESSION,
            max_concurrent_solves: DEFAULT_MAX_CONCURRENT_SOLVES,
            requests_per_second: DEFAULT_REQUESTS_PER_SECOND,
            burst: DEFAULT_BURST,
        }
    }
}

/// A token bucket: `burst` requests at once, refilled at `rate` per second.
#[derive(Debug, Clone, Copy)]
pub struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Bucket {
    /// A full bucket.
    pub fn new(now: Instant, burst: u64) -> Bucket {
        Bucket { tokens: burst.max(1) as f64, last: now }
    }

    /// Takes one request's token at `now`; without one, the whole seconds (≥ 1) until there is.
    /// A lowered `burst` takes effect at once (the bucket never holds more than it).
    pub fn take(&mut self, now: Instant, rate: f64, burst: u64) -> Result<(), u64> {
        let size = burst.max(1) as f64;
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + rate * elapsed).min(size);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        let wait = if rate > 0.0 { (1.0 - self.tokens) / rate } else { f64::INFINITY };
        Err(if wait.is_finite() { (wait.ceil() as u64).max(1) } else { u64::MAX })
    }
}

/// Held while one solve of a tenant is admitted; releases its place when dropped. The request's
/// middleware holds it, and the solver pool keeps a clone with the job until the job has run (or
/// been dropped unrun), so a client that hangs up does not free its place early.
#[derive(Debug)]
pub struct SolvePermit(Arc<AtomicU64>);

impl Drop for SolvePermit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

tokio::task_local! {
    /// The permit of the request being served, if its route solves (see `layer::authenticate`).
    static PERMIT: Arc<SolvePermit>;
}

/// Runs `future` (the rest of a request) with `permit` as the request's solve permit.
pub async fn with_permit<F: std::future::Future>(permit: Arc<SolvePermit>, future: F) -> F::Output {
    PERMIT.scope(permit, future).await
}

/// The solve permit of the request this task serves, for the solver pool to hold with its job.
pub fn current_permit() -> Option<Arc<SolvePermit>> {
    PERMIT.try_with(Arc::clone).ok()
}

/// Held while a session of a tenant is being created: counted with the tenant's live sessions,
/// so two creations at once cannot both take the last place.
#[derive(Debug)]
pub struct Reservation(Arc<AtomicU64>);

impl Drop for Reservation {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Debug)]
struct Tenant {
    bucket: Bucket,
    solves: Arc<AtomicU64>,
    creating: Arc<AtomicU64>,
}

/// Every tenant's counters (one entry per tenant that has made a request).
#[derive(Debug, Default)]
pub struct Quotas {
    tenants: Mutex<HashMap<String, Tenant>>,
}

impl Quotas {
    fn with<R>(&self, tenant: &str, limits: &Limits, f: impl FnOnce(&mut Tenant) -> R) -> R {
        let mut tenants = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
        let entry = tenants.entry(tenant.to_string()).or_insert_with(|| Tenant {
            bucket: Bucket::new(Instant::now(), limits.burst),
            solves: Arc::default(),
            creating: Arc::default(),
        });
        f(entry)
    }

    /// One request of `tenant` now: `rate_limited` (429) when its bucket is empty.
    pub fn admit_request(&self, tenant: &str, limits: &Limits) -> ApiResult<()> {
        let taken =
            self.with(tenant, limits, |t| t.bucket.take(Instant::now(), limits.requests_per_second, limits.burst));
        taken.map_err(|retry_after| ApiError::RateLimited {
            retry_after,
            why: format!(
                "the tenant's quota of {} requests per second (burst {}) is used up",
                limits.requests_per_second, limits.burst
            ),
        })
    }

    /// A place for one solve of `tenant`: `rate_limited` (429) when it already has
    /// `max_concurrent_solves` admitted.
    pub fn solve_permit(&self, tenant: &str, limits: &Limits) -> ApiResult<Arc<SolvePermit>> {
        let counter = self.with(tenant, limits, |t| t.solves.clone());
        let max = limits.max_concurrent_solves;
        match counter.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1)) {
            Ok(_) => Ok(Arc::new(SolvePermit(counter))),
            Err(_) => Err(ApiError::RateLimited {
                retry_after: super::limits::RETRY_AFTER_SECONDS,
                why: format!(
                    "the tenant already has its quota of {max} concurrent solves (max_concurrent_solves) running"
                ),
            }),
        }
    }

    /// A place for one more session of `tenant`, which owns `live()` now (counted under the same
    /// lock as the reservations): `quota_exceeded` (403) at `max_sessions`.
    pub fn reserve_session(
        &self,
        tenant: &str,
        limits: &Limits,
        live: impl FnOnce() -> usize,
    ) -> ApiResult<Reservation> {
        self.with(tenant, limits, |t| {
            let held = live() as u64 + t.creating.load(Ordering::Acquire);
            if held >= limits.max_sessions {
                return Err(ApiError::QuotaExceeded { quota: "max_sessions", limit: limits.max_sessions });
            }
            t.creating.fetch_add(1, Ordering::AcqRel);
            Ok(Reservation(t.creating.clone()))
        })
    }
}

/// `quota_exceeded` (403) if a session holding `jobs` jobs would be past `max_jobs_per_session`.
pub fn check_jobs(limits: Option<&Limits>, jobs: usize) -> ApiResult<()> {
    match limits {
        Some(l) if jobs as u64 > l.max_jobs_per_session => {
            Err(ApiError::QuotaExceeded { quota: "max_jobs_per_session", limit: l.max_jobs_per_session })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bucket_allows_a_burst_then_the_rate() {
        let t0 = Instant::now();
        let mut b = Bucket::new(t0, 3);
        for _ in 0..3 {
            assert_eq!(b.take(t0, 2.0, 3), Ok(()));
        }
        assert_eq!(b.take(t0, 2.0, 3), Err(1), "empty: half a second to the next token, told 1 s");
        // Half a second at 2/s is one token.
        assert_eq!(b.take(t0 + Duration::from_millis(500), 2.0, 3), Ok(()));
        assert!(b.take(t0 + Duration::from_millis(500), 2.0, 3).is_err());
        // A long quiet spell refills to the burst, no more.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(b.take(later, 2.0, 3), Ok(()));
        }
        assert!(b.take(later, 2.0, 3).is_err());
    }

    #[test]
    fn slow_rates_ask_for_whole_seconds() {
        let t0 = Instant::now();
        let mut b = Bucket::new(t0, 1);
        assert_eq!(b.take(t0, 0.25, 1), Ok(()));
        assert_eq!(b.take(t0, 0.25, 1), Err(4));
        assert_eq!(b.take(t0 + Duration::from_millis(2500), 0.25, 1), Err(2));
        assert_eq!(b.take(t0 + Duration::from_secs(4), 0.25, 1), Ok(()));
        // A clock that seems to go back (a reordered call) takes nothing and adds nothing.
        assert!(b.take(t0, 0.25, 1).is_err());
    }

    #[test]
    fn lowering_the_burst_caps_the_bucket_at_once() {
        let t0 = Instant::now();
        let mut b = Bucket::new(t0, 100);
        assert_eq!(b.take(t0, 1.0, 2), Ok(()));
        assert_eq!(b.take(t0, 1.0, 2), Ok(()));
        assert!(b.take(t0, 1.0, 2).is_err());
    }

    #[test]
    fn concurrent_solves_are_counted_until_every_holder_lets_go() {
        let quotas = Quotas::default();
        let limits = Limits { max_concurrent_solves: 2, ..Limits::default() };
        let a = quotas.solve_permit("t", &limits).unwrap();
        let held_by_the_pool = a.clone();
        let _b = quotas.solve_permit("t", &limits).unwrap();
        let refused = quotas.solve_permit("t", &limits).unwrap_err();
        assert_eq!(refused.status(), 429);
        assert!(matches!(refused, ApiError::RateLimited { retry_after: 1, .. }));
        assert!(quotas.solve_permit("other", &limits).is_ok(), "tenants are counted apart");
        drop(a);
        assert!(quotas.solve_permit("t", &limits).is_err(), "the pool still holds the first solve");
        drop(held_by_the_pool);
        assert!(quotas.solve_permit("t", &limits).is_ok());
    }

    #[test]
    fn session_reservations_count_with_the_live_sessions() {
        let quotas = Quotas::default();
        let limits = Limits { max_sessions: 2, ..Limits::default() };
        let first = quotas.reserve_session("t", &limits, || 1).unwrap();
        let full = quotas.reserve_session("t", &limits, || 1).unwrap_err();
        assert_eq!(full.status(), 403);
        assert!(full.body().error.message.contains("max_sessions"), "{:?}", full.body());
        drop(first);
        assert!(quotas.reserve_session("t", &limits, || 1).is_ok());
        assert!(quotas.reserve_session("t", &Limits { max_sessions: 0, ..limits }, || 0).is_err());
    }

    #[test]
    fn job_counts() {
        let limits = Limits { max_jobs_per_session: 3, ..Limits::default() };
        assert!(check_jobs(Some(&limits), 3).is_ok());
        let e = check_jobs(Some(&limits), 4).unwrap_err();
        assert_eq!(e.status(), 403);
        assert!(e.body().error.message.contains("max_jobs_per_session") && e.body().error.message.contains('3'));
        assert!(check_jobs(None, 1_000_000).is_ok());
    }

    #[tokio::test]
    async fn the_permit_is_visible_to_the_request_task_only() {
        let quotas = Quotas::default();
        let permit = quotas.solve_permit("t", &Limits::default()).unwrap();
        assert!(current_permit().is_none());
        let seen = with_permit(permit, async { current_permit().is_some() }).await;
        assert!(seen);
        assert!(current_permit().is_none());
    }
}
