//! Sessions whose state is a deterministic machine rebuilt by replaying its events (FitGpp's
//! cluster, OASiS's pools): the creation body is stored as `{"<key>": spec}` and each event before
//! it is acknowledged, so a restart replays them to the same state. Holds the map of live
//! sessions, their tenants and the store; the machines and their wire types are the callers'.
//! No scheduling logic here.

use super::auth::Principal;
use super::error::{ApiError, ApiResult};
use super::limits::blocking;
use super::quotas::check_jobs;
use super::sessions::registry::{now, Broken, Serving};
use super::store::{Owner, Store, StoredSession};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, RwLock};

/// A machine a session replays: built from its creation body, moved by its events.
pub trait Replayed: Clone + Debug + Send + Sized + 'static {
    /// The key of the stored creation body, `{"<KEY>": spec}`.
    const KEY: &'static str;
    type Spec: Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static;
    type Event: Serialize + DeserializeOwned + Debug + Send + Sync + 'static;
    /// What an event answers.
    type Answer: Send + 'static;

    /// The empty machine a creation body describes (bad bodies are the contract's errors).
    fn build(spec: &Self::Spec) -> ApiResult<Self>;
    /// Applies one event, or refuses it and changes nothing.
    fn apply(&mut self, event: &Self::Event) -> ApiResult<Self::Answer>;
    /// The jobs it would hold after `event`, when the event adds one (checked against `max_jobs`).
    fn jobs_after(&self, event: &Self::Event) -> Option<usize>;
    /// The jobs it holds (submitted, finished or decided ones included).
    fn jobs(&self) -> usize;
    /// The event's name in the audit.
    fn event_name(event: &Self::Event) -> &'static str;
}

/// The replayed machine a stored creation body belongs to (its key), or `None` for a plain
/// session's.
pub fn kind_of(spec: &str) -> Option<&'static str> {
    let value = serde_json::from_str::<serde_json::Value>(spec).ok()?;
    [super::fitgpp::KEY, super::oasis::KEY].into_iter().find(|key| value.get(key).is_some())
}

/// A JSON body or stored document, refused as the contract's error naming the field.
pub(crate) fn parse<T: DeserializeOwned>(text: &str) -> ApiResult<T> {
    super::extract::expect_object(text)?;
    crate::contract::json::read(text).map_err(|e| ApiError::Arbiter(e.into_error("")))
}

/// One live session: its creation body, its machine and the next event's number.
#[derive(Debug)]
pub struct Live<M: Replayed> {
    pub spec: M::Spec,
    pub created_at: f64,
    pub owner: Owner,
    pub machine: M,
    next_seq: i64,
    deleted: bool,
}

/// One session in the map: its tenant (fixed at creation, readable without waiting for the
/// session's lock) and the session.
#[derive(Debug)]
struct Held<M: Replayed> {
    tenant: Option<String>,
    live: Arc<tokio::sync::Mutex<Live<M>>>,
}

impl<M: Replayed> Clone for Held<M> {
    fn clone(&self) -> Self {
        Held { tenant: self.tenant.clone(), live: self.live.clone() }
    }
}

impl<M: Replayed> Held<M> {
    fn new(live: Live<M>) -> Held<M> {
        Held { tenant: live.owner.tenant.clone(), live: Arc::new(tokio::sync::Mutex::new(live)) }
    }
}

/// One session in a list.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SessionEntry {
    pub id: String,
    /// When it was created, in seconds since the Unix epoch.
    pub created_at: f64,
    /// Jobs submitted to it.
    pub jobs: usize,
}

/// `GET /v1/fitgpp/sessions`, `GET /v1/oasis/sessions`: the live sessions of that kind the
/// caller may see, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SessionEntries {
    pub sessions: Vec<SessionEntry>,
}

/// Every live session of one machine, by id.
#[derive(Debug)]
pub struct ReplayedSessions<M: Replayed> {
    map: RwLock<HashMap<String, Held<M>>>,
    store: Arc<Store>,
    serving: Serving,
}

impl<M: Replayed> ReplayedSessions<M> {
    /// Sessions held.
    pub fn len(&self) -> usize {
        self.map.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rebuilds this machine's `stored` sessions (those `kind_of` gives its key) by replaying
    /// their events; the ids of those that could not be, with why.
    pub fn load(store: Arc<Store>, stored: Vec<StoredSession>, serving: Serving) -> (ReplayedSessions<M>, Vec<Broken>) {
        let mut map = HashMap::new();
        let mut broken = Vec::new();
        for stored in stored {
            let rebuilt = (|| -> ApiResult<Live<M>> {
                let mut wrapped: HashMap<String, M::Spec> = parse(&stored.spec)?;
                let spec = wrapped.remove(M::KEY).ok_or_else(|| ApiError::malformed("no spec"))?;
                let mut machine = M::build(&spec)?;
                let mut next_seq = 1;
                for e in &stored.events {
                    machine.apply(&parse::<M::Event>(&e.payload)?)?;
                    next_seq = e.seq + 1;
                }
                Ok(Live {
                    spec,
                    created_at: stored.created_at,
                    owner: stored.owner.clone(),
                    machine,
                    next_seq,
                    deleted: false,
                })
            })();
            match rebuilt {
                Ok(live) => {
                    map.insert(stored.id, Held::new(live));
                }
                Err(e) => broken.push(Broken { id: stored.id, error: e.body().error.message }),
            }
        }
        (ReplayedSessions { map: RwLock::new(map), store, serving }, broken)
    }

    /// Stores a new session `id` of `spec` (already built into `machine`) durably, then holds it.
    pub async fn create(&self, id: &str, owner: Owner, spec: M::Spec, machine: M) -> ApiResult<f64> {
        let created_at = now();
        let stored = serde_json::json!({ M::KEY: spec }).to_string();
        let (store, key, stored_owner) = (self.store.clone(), id.to_string(), owner.clone());
        blocking(move || store.create_session(&key, created_at, &stored, &stored_owner))
            .await?
            .map_err(ApiError::from)?;
        let live = Live { spec, created_at, owner, machine, next_seq: 1, deleted: false };
        self.map.write().unwrap_or_else(|p| p.into_inner()).insert(id.to_string(), Held::new(live));
        Ok(created_at)
    }

    /// Session `id`, locked, if `caller` may see it (and it is not being deleted);
    /// `unknown_session` otherwise, exactly as for an id that does not exist.
    pub async fn get(&self, id: &str, caller: &Principal) -> ApiResult<tokio::sync::OwnedMutexGuard<Live<M>>> {
        let live = self
            .map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .filter(|held| caller.can_see(held.tenant.as_deref()))
            .map(|held| held.live.clone())
            .ok_or_else(|| ApiError::UnknownSession(id.to_string()))?;
        let live = self.serving.lock(live).await?;
        if live.deleted || !caller.can_see(live.owner.tenant.as_deref()) {
            return Err(ApiError::UnknownSession(id.to_string()));
        }
        Ok(live)
    }

    /// Deletes session `id` and everything stored about it.
    pub async fn delete(&self, id: &str, caller: &Principal) -> ApiResult<()> {
        let mut live = self.get(id, caller).await?;
        let (store, key) = (self.store.clone(), id.to_string());
        blocking(move || store.delete_session(&key)).await?.map_err(ApiError::from)?;
        live.deleted = true;
        self.map.write().unwrap_or_else(|p| p.into_inner()).remove(id);
        Ok(())
    }

    /// The sessions `caller` may see, oldest first.
    pub async fn list(&self, caller: &Principal) -> SessionEntries {
        let held: Vec<(String, Held<M>)> = self
            .map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(_, held)| caller.can_see(held.tenant.as_deref()))
            .map(|(id, held)| (id.clone(), held.clone()))
            .collect();
        let mut sessions = Vec::with_capacity(held.len());
        for (id, held) in held {
            let live = held.live.lock().await;
            if !live.deleted {
                sessions.push(SessionEntry { id, created_at: live.created_at, jobs: live.machine.jobs() });
            }
        }
        sessions.sort_by(|a, b| a.created_at.total_cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        SessionEntries { sessions }
    }

    /// Sessions owned by `tenant`.
    pub fn owned_by(&self, tenant: &str) -> usize {
        self.map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter(|held| held.tenant.as_deref() == Some(tenant))
            .count()
    }

    /// Applies `caller`'s `event` to a copy of session `id`, stores it with the caller's token
    /// id, then publishes the copy. An event that adds a job past `max_jobs` is refused.
    pub async fn update(&self, id: &str, caller: &Principal, event: M::Event) -> ApiResult<M::Answer> {
        let mut live = self.get(id, caller).await?;
        if let Some(jobs) = live.machine.jobs_after(&event) {
            check_jobs(caller.counted(), jobs)?;
        }
        let (store, id, token) = (self.store.clone(), id.to_string(), caller.token_id.clone());
        let metrics = self.serving.metrics.clone();
        blocking(move || -> ApiResult<M::Answer> {
            let mut next = live.machine.clone();
            let answer = next.apply(&event)?;
            let payload = serde_json::to_string(&event).map_err(|e| ApiError::Internal(e.to_string()))?;
            store
                .append(&id, live.next_seq, M::event_name(&event), now(), &payload, token.as_deref())
                .map_err(ApiError::from)?;
            live.next_seq += 1;
            live.machine = next;
            metrics.observe_event(M::event_name(&event));
            Ok(answer)
        })
        .await?
    }
}
