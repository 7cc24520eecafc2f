//! The admission stage: which arriving jobs become schedulable this round. `accept_all` lets
//! every job in; `accept_x` (Blox's FIFO admission with a threshold) lets jobs in, in arrival
//! order, while the GPUs demanded by admitted, unfinished jobs stay within `x` times the
//! cluster's healthy GPUs; the rest wait in FIFO order.

use super::state::{ClusterState, JobIndex, JobState};
use std::fmt::Debug;

/// Decides which waiting jobs are admitted.
pub trait Admission: Debug + Send + Sync + dyn_clone::DynClone {
    /// The stage's name with its parameters, as compositions spell it.
    fn name(&self) -> String;
    /// From `waiting` (arrival order), the jobs admitted now; `admitted_demand` is the GPUs
    /// demanded by jobs already admitted and unfinished.
    fn admit(
        &self,
        waiting: &[JobIndex],
        jobs: &[JobState],
        admitted_demand: u64,
        cluster: &ClusterState,
    ) -> Vec<JobIndex>;
}
dyn_clone::clone_trait_object!(Admission);

/// Every job is schedulable as soon as it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptAll;

impl Admission for AcceptAll {
    fn name(&self) -> String {
        "accept_all".into()
    }

    fn admit(&self, waiting: &[JobIndex], _: &[JobState], _: u64, _: &ClusterState) -> Vec<JobIndex> {
        waiting.to_vec()
    }
}

/// FIFO admission within `x` × the healthy GPUs. A job demanding more than the threshold on its
/// own is admitted when nothing else is admitted, so it cannot wait forever.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AcceptX {
    pub x: f64,
}

impl AcceptX {
    /// The most GPUs admitted jobs may demand together.
    pub fn limit(&self, cluster: &ClusterState) -> f64 {
        self.x * cluster.healthy_gpus() as f64
    }
}

impl Admission for AcceptX {
    fn name(&self) -> String {
        format!("accept_x={}", self.x)
    }

    fn admit(
        &self,
        waiting: &[JobIndex],
        jobs: &[JobState],
        admitted_demand: u64,
        cluster: &ClusterState,
    ) -> Vec<JobIndex> {
        let limit = self.limit(cluster);
        let mut demand = admitted_demand;
        let mut admitted = Vec::new();
        for &j in waiting {
            let next = demand + jobs[j].scale_factor as u64;
            if next as f64 > limit + 1e-9 && demand > 0 {
                break;
            }
            demand = next;
            admitted.push(j);
        }
        admitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::WorkerType;

    fn cluster(gpus: f64) -> ClusterState {
        ClusterState::new(&[WorkerType { name: "v100".into(), count: gpus, gpus_per_server: 4, cost_per_hour: None }])
    }

    fn jobs(scale_factors: &[u32]) -> Vec<JobState> {
        scale_factors
            .iter()
            .enumerate()
            .map(|(i, &sf)| JobState::new(i.to_string(), i as f64, sf, vec![1.0], 1.0))
            .collect()
    }

    #[test]
    fn accept_all_admits_everyone() {
        let j = jobs(&[8, 8, 8]);
        assert_eq!(AcceptAll.admit(&[2, 0, 1], &j, 1000, &cluster(4.0)), [2, 0, 1]);
    }

    #[test]
    fn accept_x_stops_at_the_threshold_in_fifo_order() {
        // 8 GPUs × 1.5 = 12: 4 already admitted; 4 + 4 = 8, + 2 = 10, + 4 = 14 > 12 stops, and the
        // 1-GPU job behind it waits too (FIFO, no skipping).
        let j = jobs(&[4, 2, 4, 1]);
        let a = AcceptX { x: 1.5 };
        assert_eq!(a.admit(&[0, 1, 2, 3], &j, 4, &cluster(8.0)), [0, 1]);
        // From nothing: 4 + 2 + 4 + 1 = 11 ≤ 12, everyone.
        assert_eq!(a.admit(&[0, 1, 2, 3], &j, 0, &cluster(8.0)), [0, 1, 2, 3]);
        assert_eq!(a.name(), "accept_x=1.5");
    }

    #[test]
    fn an_oversized_job_gets_in_alone() {
        let j = jobs(&[16, 1]);
        let a = AcceptX { x: 1.0 };
        assert_eq!(a.admit(&[0, 1], &j, 0, &cluster(8.0)), [0]);
        assert!(a.admit(&[0, 1], &j, 1, &cluster(8.0)).is_empty());
    }
}
