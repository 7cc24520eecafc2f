//! Sessions: clusters run by a policy under the round-based mechanism, changed by events that are
//! durable before they are acknowledged and replayed after a restart.
//!
//! - [`spec`]: the creation request, validated once; a job of the contract into a `Job`.
//! - [`events`]: the stored events and the one `apply` live requests and replay share.
//! - [`solve`]: a session's allocation under a per-request budget.
//! - [`registry`]: the live sessions, durability (copy, apply, store, publish) and replay.
//! - [`estimates`]: `estimate_missing`: estimated throughputs stored in the job events.
//! - [`views`]: what the endpoints answer.
//! - [`handlers`]: the endpoints.

pub mod estimates;
pub mod events;
pub mod handlers;
pub mod registry;
pub mod spec;
pub mod views;
