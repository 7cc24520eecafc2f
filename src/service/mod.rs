//! The HTTP allocation service (`arbiter serve`): the contract's solve as `POST /v1/allocations`,
//! durable sessions under the round-based mechanism, health, metrics and the OpenAPI document.
//!
//! The HTTP layer holds no policy or mechanism logic: handlers extract, call the library, map the
//! result. Solves run off the async runtime in a bounded pool ([`limits`]); sessions are event
//! sourced into SQLite ([`store`], [`sessions`]); FitGpp ([`fitgpp`]) and OASiS ([`oasis`])
//! sessions too, rebuilt by replaying their events ([`replayed`]); a session
//! answers Kubernetes' scheduler as an extender ([`k8s`]); every error is
//! the contract's object ([`error`]), a refused body's 413 too ([`body_limit`]); the database can
//! be copied while it runs ([`backup`]). With `--tokens`, requests carry bearer tokens ([`auth`]),
//! sessions belong to tenants, tenants have quotas ([`quotas`]) and events name their token
//! ([`audit`]).

pub mod allocations;
pub mod audit;
pub mod auth;
pub mod backup;
pub mod body_limit;
pub mod config;
pub mod error;
pub mod extract;
pub mod fitgpp;
pub mod health;
pub mod k8s;
pub mod limits;
pub mod metrics;
pub mod oasis;
pub mod openapi;
pub mod quotas;
pub mod replayed;
pub mod server;
pub mod sessions;
pub mod state;
pub mod store;
pub mod throughputs;

pub use config::Config;
pub use server::{router, run, serve};
pub use state::{AppState, SharedState};
