//! The preemption stage: what happens to a job that ran last round. `lease` (Gavel's and Blox's
//! rule) renews the lease of every running job the scheduling stage still picks — same GPUs, no
//! restart — and suspends the rest, each suspension counted and its checkpoint/restart overhead
//! charged when the job resumes. `lease_term` (Astraea's lease-based training) grants a lease of
//! a fixed term: a running job keeps its GPUs until the term ends, then renews or is suspended.
//! `none` never suspends a running job: it runs to completion.

use super::state::JobState;
use std::fmt::Debug;

/// Decides whether running jobs may be suspended and what a resumption costs.
pub trait Preemption: Debug + Send + Sync + dyn_clone::DynClone {
    fn name(&self) -> String;
    /// Whether `job`, running, may be suspended at `now` for jobs ahead of it in this round's order.
    fn preemptible(&self, job: &JobState, now: f64) -> bool;
    /// Seconds a lease lasts before it must be renewed; `None`: one round.
    fn term_seconds(&self) -> Option<f64> {
        None
    }
    /// Seconds of a round a suspended job loses when it resumes (checkpoint and restart).
    fn restart_seconds(&self) -> f64;
}
dyn_clone::clone_trait_object!(Preemption);

/// Lease renewal, with `restart_seconds` charged on every resumption after a suspension.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Lease {
    pub restart_seconds: f64,
}

impl Preemption for Lease {
    fn name(&self) -> String {
        if self.restart_seconds == 0.0 {
            "lease".into()
        } else {
            format!("lease={}", self.restart_seconds)
        }
    }
    fn preemptible(&self, _: &JobState, _: f64) -> bool {
        true
    }
    fn restart_seconds(&self) -> f64 {
        self.restart_seconds
    }
}

/// Run to completion: a started job keeps its GPUs until it finishes (or a GPU of it fails).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NonPreemptive;

impl Preemption for NonPreemptive {
    fn name(&self) -> String {
        "none".into()
    }
    fn preemptible(&self, _: &JobState, _: f64) -> bool {
        false
    }
    fn restart_seconds(&self) -> f64 {
        0.0
    }
}

/// Leases of a fixed term (Astraea, default 900 s): a running job is suspended only at the end of
/// its term, when it renews (a new term, same GPUs) if the scheduling stage picks it again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeaseTerm {
    pub seconds: f64,
}

impl Default for LeaseTerm {
    fn default() -> LeaseTerm {
        LeaseTerm { seconds: 900.0 }
    }
}

impl Preemption for LeaseTerm {
    fn name(&self) -> String {
        format!("lease_term={}", self.seconds)
    }
    fn preemptible(&self, job: &JobState, now: f64) -> bool {
        now >= job.lease_start + self.seconds - 1e-9
    }
    fn restart_seconds(&self) -> f64 {
        0.0
    }
    fn term_seconds(&self) -> Option<f64> {
        Some(self.seconds)
    }
}
