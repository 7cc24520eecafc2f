//! What the Kubernetes controllers read of an Arbiter session (`GET /v1/sessions/{id}`): its
//! worker types, failed GPUs, round length, rounds run and each job's lease from the last round;
//! and of its scheduler extender: the pods recorded as bound and those the last round evicts.

use serde::Deserialize;
use std::collections::HashMap;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SessionSnapshot {
    pub id: String,
    pub round_seconds: f64,
    pub rounds: u64,
    /// Session time: rounds run × round length.
    #[serde(default)]
    pub time: f64,
    pub cluster: ClusterSnapshot,
    #[serde(default)]
    pub jobs: Vec<JobSnapshot>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ClusterSnapshot {
    /// In the session's order.
    pub worker_types: indexmap::IndexMap<String, WorkerTypeSnapshot>,
    #[serde(default)]
    pub failed_gpus: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct WorkerTypeSnapshot {
    pub count: u32,
    pub servers: usize,
    pub gpus_per_server: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct JobSnapshot {
    pub id: String,
    /// Session time it arrived at.
    #[serde(default)]
    pub arrival: f64,
    #[serde(default)]
    pub lease: Option<LeaseSnapshot>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct LeaseSnapshot {
    pub worker_type: String,
    #[serde(default)]
    pub gpus: Vec<String>,
}

impl SessionSnapshot {
    /// The jobs by id, built once per pass: a pass asks about every workload or pod's job.
    pub fn jobs_by_id(&self) -> HashMap<&str, &JobSnapshot> {
        self.jobs.iter().map(|j| (j.id.as_str(), j)).collect()
    }

    /// Every worker type with its GPUs (healthy or not), in the session's order.
    pub fn worker_types(&self) -> Vec<(String, u32)> {
        self.cluster.worker_types.iter().map(|(name, t)| (name.clone(), t.count)).collect()
    }

    /// Whether the last round decided about `job`: it arrived before that round ended (a job
    /// added since arrives at the session's time).
    pub fn in_last_round(&self, job: &JobSnapshot) -> bool {
        self.rounds > 0 && job.arrival < self.time
    }

    /// The index of the last round run, if any.
    pub fn last_round(&self) -> Option<u64> {
        self.rounds.checked_sub(1)
    }
}

impl JobSnapshot {
    /// The worker type it runs on in the last round (none: it waits).
    pub fn placement(&self) -> Option<&str> {
        self.lease.as_ref().map(|l| l.worker_type.as_str())
    }
}

/// A pod recorded as bound (`GET /v1/sessions/{id}/k8s/bindings`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct BindingSnapshot {
    pub namespace: String,
    pub name: String,
    #[serde(default)]
    pub uid: String,
    pub node: String,
    pub job: String,
    /// `<type>/<server>`.
    #[serde(default)]
    pub server: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct BindingListSnapshot {
    pub bindings: Vec<BindingSnapshot>,
}

/// A bound pod the last round does not run where it is (`GET /v1/sessions/{id}/k8s/evictions`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct EvictionSnapshot {
    /// The pod's binding, as `GET .../k8s/bindings` lists it.
    #[serde(flatten)]
    pub pod: BindingSnapshot,
    #[serde(default)]
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct EvictionListSnapshot {
    /// Rounds run when the list was made.
    pub rounds: u64,
    pub evictions: Vec<EvictionSnapshot>,
}
