//! The Kubernetes controllers: the Kueue reconciler and `k8s-sync`'s planning on fixtures shaped
//! like the upstream objects, and both loops against a fake API server and a real `arbiter serve`.
//! One test crate per layer (one link each); each module is one file beside this one.

#[path = "../service_support/mod.rs"]
mod service_support;

mod fake_api;
mod fixtures;
mod kubernetes_api;
mod kubernetes_binder;
mod kubernetes_kueue;
mod kubernetes_kueue_errors;
mod kubernetes_loops;
mod kubernetes_sync;
mod kubernetes_sync_bindings;
mod kubernetes_sync_loop;
