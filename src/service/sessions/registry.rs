//! The live sessions and their durability: each change is applied to a copy of the session,
//! appended to the store (on disk when it returns), and only then published and acknowledged.
//! At start, every stored session is rebuilt by replaying its events.

use super::events::{apply, Applied, Event};
use super::spec::Spec;
use crate::mechanism::Session;
use crate::service::auth::Principal;
use crate::service::error::{ApiError, ApiResult};
use crate::service::k8s::bindings::Bindings;
use crate::service::k8s::observed::Observed;
use crate::service::limits::{blocking, SolveLimiter, RETRY_AFTER_SECONDS};
use crate::service::metrics::Metrics;
use crate::service::quotas::{check_jobs, Limits};
use crate::service::store::{Owner, Store, StoredSession};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// Seconds since the Unix epoch.
pub fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// One session: its spec, the last durable state (what readers see), and the writer lock that
/// orders its events.
#[derive(Debug)]
pub struct Entry {
    pub id: String,
    pub created_at: f64,
    /// Its tenant (seen only by that tenant's tokens and `admin`) and creating token.
    pub owner: Owner,
    pub spec: Arc<Spec>,
    /// What the Kubernetes extender has seen of the session's nodes and pods (not durable).
    pub observed: Observed,
    current: RwLock<Snapshot>,
    writer: Arc<tokio::sync::Mutex<Writer>>,
}

/// The state after one event: the mechanism's session and the pods bound in Kubernetes, read
/// together.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub session: Arc<Session>,
    pub bindings: Arc<Bindings>,
}

#[derive(Debug)]
struct Writer {
    next_seq: i64,
    deleted: bool,
}

impl Entry {
    fn new(id: String, created_at: f64, owner: Owner, spec: Spec, state: (Session, Bindings), next_seq: i64) -> Entry {
        let (session, bindings) = state;
        Entry {
            id,
            created_at,
            owner,
            spec: Arc::new(spec),
            observed: Observed::default(),
            current: RwLock::new(Snapshot { session: Arc::new(session), bindings: Arc::new(bindings) }),
            writer: Arc::new(tokio::sync::Mutex::new(Writer { next_seq, deleted: false })),
        }
    }

    /// The session as of its last acknowledged event.
    pub fn current(&self) -> Arc<Session> {
        self.snapshot().session
    }

    /// The session and its bindings as of its last acknowledged event.
    pub fn snapshot(&self) -> Snapshot {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn publish(&self, session: Session, bindings: Bindings) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) =
            Snapshot { session: Arc::new(session), bindings: Arc::new(bindings) };
    }
}

/// Every live session, by id.
#[derive(Debug)]
pub struct Sessions {
    map: RwLock<HashMap<String, Arc<Entry>>>,
    store: Arc<Store>,
    ids: AtomicU64,
    serving: Serving,
}

/// What a registry of sessions takes from the server: how long a request may wait for a session
/// that another request is changing (a solve can take seconds), and where the events made
/// durable are counted (in the work that stores them, so an event whose client has gone is
/// counted too).
#[derive(Debug, Clone)]
pub struct Serving {
    pub max_wait: Duration,
    pub metrics: Arc<Metrics>,
}

impl Serving {
    /// `mutex` locked, or `overloaded` (429, `Retry-After`) once `max_wait` has passed: a request
    /// waits behind another one on the same session no longer than it would for a solver thread.
    pub async fn lock<T>(&self, mutex: Arc<AsyncMutex<T>>) -> ApiResult<OwnedMutexGuard<T>> {
        tokio::time::timeout(self.max_wait, mutex.lock_owned())
            .await
            .map_err(|_| ApiError::Overloaded { retry_after: RETRY_AFTER_SECONDS })
    }
}

/// A stored session that could not be rebuilt (left in the store, not served).
#[derive(Debug, Clone)]
pub struct Broken {
    pub id: String,
    pub error: String,
}

impl Sessions {
    /// Rebuilds the `stored` sessions by replaying their events (FitGpp and OASiS sessions share
    /// the store; `service::replayed` rebuilds those).
    pub fn load(store: Arc<Store>, stored: Vec<StoredSession>, serving: Serving) -> (Sessions, Vec<Broken>) {
        let mut map = HashMap::new();
        let mut broken = Vec::new();
        for stored in stored {
            let id = stored.id.clone();
            match replay(stored) {
                Ok(entry) => {
                    map.insert(id, Arc::new(entry));
                }
                Err(e) => broken.push(Broken { id, error: e.body().error.message }),
            }
        }
        (Sessions { map: RwLock::new(map), store, ids: AtomicU64::new(0), serving }, broken)
    }

    pub fn len(&self) -> usize {
        self.map.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, id: &str) -> bool {
        self.map.read().unwrap_or_else(|p| p.into_inner()).contains_key(id)
    }

    /// Session `id` if `caller` may see it; `unknown_session` otherwise, exactly as for an id
    /// that does not exist.
    pub fn get(&self, id: &str, caller: &Principal) -> ApiResult<Arc<Entry>> {
        self.map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .filter(|e| caller.can_see(e.owner.tenant.as_deref()))
            .cloned()
            .ok_or_else(|| ApiError::UnknownSession(id.to_string()))
    }

    /// Every session `caller` may see, oldest first.
    pub fn all(&self, caller: &Principal) -> Vec<Arc<Entry>> {
        let mut all: Vec<_> = self
            .map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter(|e| caller.can_see(e.owner.tenant.as_deref()))
            .cloned()
            .collect();
        all.sort_by(|a, b| a.created_at.total_cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        all
    }

    /// Sessions owned by `tenant`.
    pub fn owned_by(&self, tenant: &str) -> usize {
        self.map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter(|e| e.owner.tenant.as_deref() == Some(tenant))
            .count()
    }

    /// A fresh id: 16 hex digits, unguessable enough to not collide across restarts.
    pub fn new_id(&self) -> String {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(self.ids.fetch_add(1, Ordering::Relaxed));
        hasher.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        format!("{:016x}", hasher.finish())
    }

    /// Creates a session from a creation body, owned by `owner`, with no more jobs than
    /// `quota` allows (none: no limit); durable when it returns. Runs on a blocking thread.
    pub fn create(&self, id: String, text: &str, owner: Owner, quota: Option<&Limits>) -> ApiResult<Arc<Entry>> {
        let (spec, session) = check_creation(text, quota)?;
        super::spec::refuse_at_creation(&spec, &session)?;
        if self.contains(&id) {
            return Err(ApiError::Internal(format!("session id {id:?} is taken")));
        }
        let created_at = now();
        self.store.create_session(&id, created_at, text, &owner).map_err(ApiError::from)?;
        let entry = Arc::new(Entry::new(id.clone(), created_at, owner, spec, (session, Bindings::default()), 1));
        self.map.write().unwrap_or_else(|p| p.into_inner()).insert(id, entry.clone());
        Ok(entry)
    }

    /// Applies one event of `caller` to session `id`: `decide` looks at a copy of the session and
    /// returns the event (solving first if it must) and the answer; the event is applied to the
    /// copy, made durable with the caller's token id, counted, then published, and the answer
    /// returned. With a `limiter`, this runs in a solver slot.
    pub async fn update<R, F>(
        &self,
        id: &str,
        caller: &Principal,
        limiter: Option<&SolveLimiter>,
        decide: F,
    ) -> ApiResult<R>
    where
        R: Send + 'static,
        F: FnOnce(&Entry, &mut Session) -> ApiResult<(Event, R)> + Send + 'static,
    {
        let entry = self.get(id, caller)?;
        let token = caller.token_id.clone();
        let mut writer = self.serving.lock(entry.writer.clone()).await?;
        if writer.deleted {
            return Err(ApiError::UnknownSession(id.to_string()));
        }
        let (store, metrics) = (self.store.clone(), self.serving.metrics.clone());
        let work = move || -> ApiResult<R> {
            let current = entry.snapshot();
            let mut next = Session::clone(&current.session);
            let (event, answer) = decide(&entry, &mut next)?;
            let mut bindings = Bindings::clone(&current.bindings);
            bindings.apply(&event);
            let payload = serde_json::to_string(&event).map_err(|e| ApiError::Internal(e.to_string()))?;
            store
                .append(&entry.id, writer.next_seq, event.kind(), now(), &payload, token.as_deref())
                .map_err(ApiError::from)?;
            writer.next_seq += 1;
            metrics.observe_event(event.kind());
            entry.publish(next, bindings);
            Ok(answer)
        };
        match limiter {
            Some(limiter) => limiter.run(work).await?,
            None => blocking(work).await?,
        }
    }

    /// Deletes session `id` and its events; durable when it returns.
    pub async fn delete(&self, id: &str, caller: &Principal) -> ApiResult<()> {
        let entry = self.get(id, caller)?;
        let mut writer = self.serving.lock(entry.writer.clone()).await?;
        if writer.deleted {
            return Err(ApiError::UnknownSession(id.to_string()));
        }
        let store = self.store.clone();
        let key = id.to_string();
        blocking(move || store.delete_session(&key)).await?.map_err(ApiError::from)?;
        writer.deleted = true;
        self.map.write().unwrap_or_else(|p| p.into_inner()).remove(id);
        Ok(())
    }
}

/// A live creation body checked in the order every new session's is, before what only a new
/// session is refused on (`spec::refuse_at_creation`): what space sharing asks, the body itself,
/// the caller's quota. An estimating session's body is checked so before its rows are estimated
/// (`estimates::fill_created`), and is refused as a session that does not estimate refuses it.
pub fn check_creation(text: &str, quota: Option<&Limits>) -> ApiResult<(Spec, Session)> {
    super::spec::refuse_space_sharing(text)?;
    let (spec, session) = Spec::parse(text)?;
    check_jobs(quota, session.num_jobs())?;
    Ok((spec, session))
}

/// Rebuilds one stored session: its creation, then every event in order.
fn replay(stored: StoredSession) -> ApiResult<Entry> {
    let (spec, mut session) = Spec::parse_stored(&stored.spec)?;
    let mut bindings = Bindings::default();
    let mut next_seq = 1;
    for event in &stored.events {
        let parsed: Event = serde_json::from_str(&event.payload)
            .map_err(|e| ApiError::Internal(format!("event {} does not parse: {e}", event.seq)))?;
        apply(&spec, &mut session, &parsed).map_err(|e| {
            ApiError::Internal(format!(
                "event {} ({}) no longer applies: {}",
                event.seq,
                parsed.kind(),
                e.body().error.message
            ))
        })?;
        bindings.apply(&parsed);
        next_seq = event.seq + 1;
    }
    Ok(Entry::new(stored.id, stored.created_at, stored.owner, spec, (session, bindings), next_seq))
}

/// Applies an event built by a live request to the copy, for `Sessions::update`'s `decide`.
pub fn apply_live(entry: &Entry, session: &mut Session, event: Event) -> ApiResult<(Event, Applied)> {
    let applied = apply(&entry.spec, session, &event)?;
    Ok((event, applied))
}
