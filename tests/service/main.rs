//! The HTTP service against the real binary: every endpoint, errors, refused bodies, fuzzed requests, the OpenAPI document, recovery after kill -9, the store under faults and its backups, FitGpp and OASiS sessions, authentication and tenancy, the Kubernetes scheduler extender.
//! One test crate per layer (one link each); each module is one file beside this one.

#[path = "../service_support/mod.rs"]
mod service_support;

mod service_api;
mod service_auth;
mod service_bodies;
mod service_compositions;
mod service_errors;
mod service_fitgpp;
mod service_fuzz;
mod service_hardening;
mod service_k8s;
mod service_oasis;
mod service_openapi;
mod service_recovery;
mod service_storage;
