//! One round: `Session::next_round` (priority selection, placement, bookkeeping) and what it
//! decides: the placements, the job on every GPU, and each job's lease renewed, started, moved or
//! preempted.

use super::cluster::GpuId;
use super::placement::{self, Lease, Placement, Request, Tenants};
use super::priority::{self, Standing};
use super::session::Session;
use super::{JobId, Mode};
use crate::error::Result;

/// What happened to a job's lease at the start of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseChange {
    /// It keeps exactly the GPUs of last round: no checkpoint, no restart.
    Renewed,
    /// It did not run last round and runs now.
    Started,
    /// It ran last round and runs now on other GPUs (or another type): checkpoint and restart.
    Moved,
    /// It ran last round and does not now.
    Preempted,
    /// It neither ran last round nor runs now.
    Waiting,
    /// Ideal mode: it received exactly its allocation's fractions, with no placement.
    Fractional,
}

impl LeaseChange {
    pub fn runs(self) -> bool {
        matches!(self, LeaseChange::Renewed | LeaseChange::Started | LeaseChange::Moved)
    }
}

/// One job's part in a round.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRound {
    pub job: JobId,
    pub lease: LeaseChange,
    /// Index into `Round::placements` when the job runs.
    pub placement: Option<usize>,
    /// The job has allocation on a worker type it cannot be placed on (its scale factor exceeds
    /// the healthy GPUs there, or it cannot run there): that share is not granted.
    pub unplaceable: bool,
}

/// One round of the mechanism.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// 0 for the session's first round.
    pub index: u64,
    /// Session time at which the round starts, in seconds.
    pub start: f64,
    pub seconds: f64,
    /// The allocation was recomputed (and received time reset) before this round.
    pub allocation_recomputed: bool,
    pub placements: Vec<Placement>,
    /// Every active job, in the session's order.
    pub jobs: Vec<JobRound>,
    /// Per GPU (by `GpuId`): the index of the placement running on it.
    pub by_gpu: Vec<Option<u32>>,
}

impl Round {
    /// The placement running on a GPU, if any.
    pub fn on_gpu(&self, gpu: GpuId) -> Option<&Placement> {
        let p = (*self.by_gpu.get(gpu.0 as usize)?)?;
        self.placements.get(p as usize)
    }
}

impl Session {
    /// Runs one round: recomputes a stale allocation if the interval allows, chooses the jobs by
    /// priority, places them, and advances session time by one round. A policy failure is
    /// returned as is, with nothing changed.
    pub fn next_round(&mut self) -> Result<Round> {
        let due = match self.last_solve {
            None => true,
            Some(t) => self.time - t >= self.config.min_solve_interval,
        };
        let recomputed = self.stale && due;
        if recomputed {
            self.recompute_allocation()?;
        }
        let seconds = self.config.round_seconds;
        let (placements, jobs) = match self.config.mode {
            Mode::Rounds => self.run_placed(seconds),
            Mode::Ideal => self.run_ideal(seconds),
        };
        let mut by_gpu = vec![None; self.cluster.num_gpus()];
        for (p, placement) in placements.iter().enumerate() {
            for g in &placement.gpus {
                by_gpu[g.0 as usize] = Some(p as u32);
            }
        }
        let round = Round {
            index: self.rounds,
            start: self.time,
            seconds,
            allocation_recomputed: recomputed,
            placements,
            jobs,
            by_gpu,
        };
        for j in &mut self.jobs {
            j.job.time_elapsed += seconds;
        }
        self.time += seconds;
        self.elapsed += seconds;
        self.rounds += 1;
        Ok(round)
    }

    fn run_placed(&mut self, seconds: f64) -> (Vec<Placement>, Vec<JobRound>) {
        let capacity = self.capacity();
        let standings: Vec<Standing> = self
            .jobs
            .iter()
            .map(|j| Standing {
                scale_factor: j.job.scale_factor,
                allocation: &j.allocation,
                received: &j.received,
                carried: &j.carried,
                throughput: &j.throughput,
            })
            .collect();
        let chosen = priority::select(&standings, self.elapsed, seconds, &capacity, self.config.work_conserving);
        let chosen: Vec<(usize, usize)> =
            chosen.into_iter().enumerate().filter_map(|(m, w)| w.map(|w| (m, w))).collect();
        let requests: Vec<Request> = chosen
            .iter()
            .map(|&(m, w)| Request {
                worker_type: w,
                scale_factor: self.jobs[m].job.scale_factor,
                previous: self.jobs[m].lease.as_ref(),
            })
            .collect();
        let mut new_leases: Vec<Option<Lease>> = vec![None; self.jobs.len()];
        for (&(m, _), lease) in chosen.iter().zip(placement::place(&self.cluster, &requests)) {
            new_leases[m] = lease;
        }

        let unplaceable: Vec<bool> = self.jobs.iter().map(|j| self.unplaceable(j)).collect();
        let mut placements = Vec::with_capacity(chosen.len());
        let mut rounds = Vec::with_capacity(self.jobs.len());
        for ((j, lease), unplaceable) in self.jobs.iter_mut().zip(new_leases).zip(unplaceable) {
            let change = match (&j.lease, &lease) {
                (Some(old), Some(new)) if old == new => LeaseChange::Renewed,
                (Some(_), Some(_)) => LeaseChange::Moved,
                (None, Some(_)) => LeaseChange::Started,
                (Some(_), None) => LeaseChange::Preempted,
                (None, None) => LeaseChange::Waiting,
            };
            let placement = lease.as_ref().map(|l| {
                j.received[l.worker_type] += seconds;
                j.total_received[l.worker_type] += seconds;
                placements.push(Placement {
                    jobs: Tenants::Single(j.id.clone()),
                    worker_type: l.worker_type,
                    gpus: l.gpus.clone(),
                });
                placements.len() - 1
            });
            j.lease = lease;
            rounds.push(JobRound { job: j.id.clone(), lease: change, placement, unplaceable });
        }
        (placements, rounds)
    }

    fn run_ideal(&mut self, seconds: f64) -> (Vec<Placement>, Vec<JobRound>) {
        let unplaceable: Vec<bool> = self.jobs.iter().map(|j| self.unplaceable(j)).collect();
        let rounds = self
            .jobs
            .iter_mut()
            .zip(unplaceable)
            .map(|(j, unplaceable)| {
                for (w, x) in j.allocation.iter().enumerate() {
                    j.received[w] += x * seconds;
                    j.total_received[w] += x * seconds;
                }
                j.lease = None;
                JobRound { job: j.id.clone(), lease: LeaseChange::Fractional, placement: None, unplaceable }
            })
            .collect();
        (Vec::new(), rounds)
    }
}
