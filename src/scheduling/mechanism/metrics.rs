//! What a session has achieved so far, whatever runs its rounds (Gavel's mechanism or a
//! composition of list-policy stages): job completion times of the jobs that left, responsiveness
//! (arrival → first round run), preemptions per job and GPU utilization, as the simulator reports
//! them. A job's completion is the session time it was removed at.

use super::round::{LeaseChange, Round};
use super::session::Session;
use crate::simulator::report::percentile;

/// A job that left the session: what its completion time and responsiveness are read from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Completed {
    /// Session time it was added: the contract's `arrival` orders FIFO and need not be session
    /// time (a request's jobs without one arrive at their index).
    pub(super) added_at: f64,
    pub(super) left: f64,
    pub(super) first_run: Option<f64>,
    pub(super) preemptions: u32,
}

/// GPU-seconds busy and healthy over every round run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Usage {
    pub(super) busy: f64,
    pub(super) healthy: f64,
}

/// The session's metrics; `None` where nothing is measured yet.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionMetrics {
    /// Jobs removed from the session (finished or withdrawn).
    pub completed_jobs: usize,
    /// Over the removed jobs: removal − the session time they were added, in seconds.
    pub average_jct_seconds: Option<f64>,
    /// Median, 95th and 99th percentile of those completion times.
    pub jct_percentiles_seconds: Option<[f64; 3]>,
    /// Over every job that has run: first round run − the session time it was added, in seconds.
    pub average_responsiveness_seconds: Option<f64>,
    /// Checkpoint-restarts (a running job preempted or moved) per job, removed and active.
    pub preemptions_per_job: Option<f64>,
    /// Busy GPU-seconds over healthy GPU-seconds, over every round run.
    pub utilization: Option<f64>,
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

impl Session {
    /// Counts one round into the jobs' first runs and preemptions and the GPU usage.
    pub(super) fn record_round(&mut self, round: &Round) {
        let start = round.start;
        for (j, r) in self.jobs.iter_mut().zip(&round.jobs) {
            if r.lease.runs() {
                j.first_run.get_or_insert(start);
            }
            if matches!(r.lease, LeaseChange::Preempted | LeaseChange::Moved) {
                j.preemptions += 1;
            }
        }
        let placed: usize = round.placements.iter().map(|p| p.gpus.len()).sum();
        let fractional: f64 = self
            .jobs
            .iter()
            .zip(&round.jobs)
            .filter(|(_, r)| r.lease == LeaseChange::Fractional)
            .map(|(j, _)| j.share.allocation.iter().sum::<f64>() * j.job.scale_factor as f64)
            .sum();
        let healthy: u32 = (0..self.cluster.num_types()).map(|w| self.cluster.healthy_count(w)).sum();
        self.usage.busy += (placed as f64 + fractional) * round.seconds;
        self.usage.healthy += healthy as f64 * round.seconds;
    }

    /// JCT, responsiveness, preemptions and utilization so far.
    pub fn metrics(&self) -> SessionMetrics {
        let mut jcts: Vec<f64> = self.completed.iter().map(|c| c.left - c.added_at).collect();
        jcts.sort_by(f64::total_cmp);
        let arrival_first: Vec<(f64, Option<f64>)> = self
            .completed
            .iter()
            .map(|c| (c.added_at, c.first_run))
            .chain(self.jobs.iter().map(|j| (j.added_at, j.first_run)))
            .collect();
        let responsiveness: Vec<f64> = arrival_first.iter().filter_map(|&(a, f)| Some(f? - a)).collect();
        let preemptions: Vec<f64> = self
            .completed
            .iter()
            .map(|c| c.preemptions as f64)
            .chain(self.jobs.iter().map(|j| j.preemptions as f64))
            .collect();
        SessionMetrics {
            completed_jobs: self.completed.len(),
            average_jct_seconds: mean(&jcts),
            jct_percentiles_seconds: (!jcts.is_empty())
                .then(|| [percentile(&jcts, 50.0), percentile(&jcts, 95.0), percentile(&jcts, 99.0)]),
            average_responsiveness_seconds: mean(&responsiveness),
            preemptions_per_job: mean(&preemptions),
            utilization: (self.usage.healthy > 0.0).then(|| self.usage.busy / self.usage.healthy),
        }
    }

    /// Job `id`'s first round run (session time) and its checkpoint-restarts so far.
    pub fn run_history(&self, id: &str) -> crate::error::Result<(Option<f64>, u32)> {
        let j = self.slot(id)?;
        Ok((j.first_run, j.preemptions))
    }
}
