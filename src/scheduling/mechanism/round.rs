//! One round: `Session::next_round` (priority selection over job combinations, placement,
//! bookkeeping) and what it decides: the placements (jobs alone and colocated pairs), the
//! combination on every GPU, and each job's lease renewed, started, moved or preempted.

use super::cluster::GpuId;
use super::configurations::{Schedule, AHEAD_ROUNDS};
use super::placement::{self, Placement, Request, Tenants};
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
    /// From the lease a job held last round to the one it holds now.
    pub fn between(old: Option<&super::placement::Lease>, new: Option<&super::placement::Lease>) -> LeaseChange {
        match (old, new) {
            (Some(old), Some(new)) if old == new => LeaseChange::Renewed,
            (Some(_), Some(_)) => LeaseChange::Moved,
            (None, Some(_)) => LeaseChange::Started,
            (Some(_), None) => LeaseChange::Preempted,
            (None, None) => LeaseChange::Waiting,
        }
    }

    pub fn runs(self) -> bool {
        matches!(self, LeaseChange::Renewed | LeaseChange::Started | LeaseChange::Moved)
    }
}

/// One job's part in a round.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRound {
    pub job: JobId,
    pub lease: LeaseChange,
    /// Index into `Round::placements` when the job runs (both tenants of a pair name its
    /// placement).
    pub placement: Option<usize>,
    /// The job has allocation, alone or in a pair, on a worker type where that combination cannot
    /// be placed (its scale factor exceeds the healthy GPUs there, or it cannot run there): that
    /// share is not granted.
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
    /// Per GPU (by `GpuId`): the index of the placement (one job or one pair) running on it.
    pub by_gpu: Vec<Option<u32>>,
}

impl Round {
    /// The placement running on a GPU, if any.
    pub fn on_gpu(&self, gpu: GpuId) -> Option<&Placement> {
        let p = (*self.by_gpu.get(gpu.0 as usize)?)?;
        self.placements.get(p as usize)
    }
}

/// A round's job combinations by index: the jobs alone (`0..n`), then the pairs; each by the
/// positions of its jobs.
struct Combinations {
    singles: Vec<u32>,
    pairs: Vec<[u32; 2]>,
}

impl Combinations {
    fn tenants(&self, c: usize) -> &[u32] {
        match self.singles.get(c..=c) {
            Some(single) => single,
            None => &self.pairs[c - self.singles.len()],
        }
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
        let recomputed = self.is_stale() && due;
        if recomputed {
            self.recompute_allocation()?;
        }
        let seconds = self.config.round_seconds;
        let (placements, jobs) = match self.config.mode {
            _ if self.composed.is_some() => self.run_composed(seconds),
            Mode::Rounds => self.run_placed(seconds),
            Mode::Configurations => self.run_configurations(seconds),
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
        self.record_round(&round);
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
        let n = self.jobs.len();
        let combinations = self.combinations();
        let tenants_of = |c: usize| combinations.tenants(c);
        let mut standings: Vec<Standing> = Vec::with_capacity(n + self.pairs.len());
        for (m, j) in self.jobs.iter().enumerate() {
            standings.push(Standing {
                tenants: tenants_of(m),
                scale_factor: j.job.scale_factor,
                allocation: &j.share.allocation,
                received: &j.share.received,
                carried: &j.share.carried,
                throughput: &j.throughput,
                profile: j.profile_next(),
            });
        }
        for (p, tenants) in self.pairs.iter().zip(&combinations.pairs) {
            standings.push(Standing {
                tenants,
                scale_factor: self.jobs[tenants[0] as usize].job.scale_factor,
                allocation: &p.share.allocation,
                received: &p.share.received,
                carried: &p.share.carried,
                throughput: &p.slowest,
                profile: None,
            });
        }
        let chosen = priority::select(&standings, n, self.elapsed, seconds, &capacity, self.config.work_conserving);
        // (combination, worker type) of every combination chosen; combinations are the jobs alone
        // (0..n), then the pairs.
        let chosen: Vec<(usize, usize)> =
            chosen.into_iter().enumerate().filter_map(|(c, w)| w.map(|w| (c, w))).collect();
        self.run_chosen(&combinations, &chosen, seconds)
    }

    /// `Mode::Configurations`: the round runs the configuration of the allocation's decomposition
    /// (made again when the jobs or the healthy GPUs changed) whose jobs are owed the most of
    /// what it delivers them, each unless running would leave it more than a round and a half
    /// ahead (a decomposition may supply a job more than it asks).
    /// Rounds fall back to the priority selection while there is no certified decomposition
    /// (space sharing, past the check's size budget, its budget ran out).
    fn run_configurations(&mut self, seconds: f64) -> (Vec<Placement>, Vec<JobRound>) {
        if !self.schedule.as_ref().is_some_and(|s| s.is_current(self)) {
            self.schedule = Some(Schedule::decompose(self));
        }
        let Some(Ok(plan)) = self.schedule.as_mut().map(|s| s.plan.as_mut()) else {
            return self.run_placed(seconds);
        };
        let after = self.elapsed + seconds;
        let jobs = &self.jobs;
        let owed = |m: usize, w: usize, d: f64| d * after - jobs[m].share.received[w];
        let chosen = plan.next(owed, seconds, AHEAD_ROUNDS * seconds);
        self.run_chosen(&self.combinations(), &chosen, seconds)
    }

    /// The job combinations of this round: the jobs alone (`0..n`), then the pairs.
    fn combinations(&self) -> Combinations {
        let singles = (0..self.jobs.len() as u32).collect();
        let pairs = self.pairs.iter().map(|p| [self.index[&p.jobs[0]] as u32, self.index[&p.jobs[1]] as u32]).collect();
        Combinations { singles, pairs }
    }

    /// Places the chosen `(combination, worker type)`s, renewing leases where it can, and grants
    /// each placed one the round.
    fn run_chosen(
        &mut self,
        combinations: &Combinations,
        chosen: &[(usize, usize)],
        seconds: f64,
    ) -> (Vec<Placement>, Vec<JobRound>) {
        let n = self.jobs.len();
        let tenants_of = |c: usize| combinations.tenants(c);
        let requests: Vec<Request> = chosen
            .iter()
            .map(|&(c, w)| {
                let tenants = tenants_of(c);
                Request {
                    worker_type: w,
                    scale_factor: self.jobs[tenants[0] as usize].job.scale_factor,
                    previous: [
                        self.jobs[tenants[0] as usize].lease.as_ref(),
                        tenants.get(1).and_then(|&t| self.jobs[t as usize].lease.as_ref()),
                    ],
                }
            })
            .collect();
        let leases = placement::place(&self.cluster, &requests);
        // Per job: the chosen combination (index into `chosen`) it runs in this round.
        let mut runs_in: Vec<Option<usize>> = vec![None; n];
        for (i, (&(c, w), lease)) in chosen.iter().zip(&leases).enumerate() {
            if lease.is_none() {
                continue;
            }
            for &m in tenants_of(c) {
                runs_in[m as usize] = Some(i);
            }
            if c < n {
                self.jobs[c].share.grant(w, seconds);
                self.jobs[c].ran_on[w] = true;
            } else {
                self.pairs[c - n].share.grant(w, seconds);
            }
        }

        let unplaceable = self.unplaceable_jobs();
        let mut placements = Vec::with_capacity(chosen.len());
        let mut placement_of: Vec<Option<usize>> = vec![None; chosen.len()];
        let mut rounds = Vec::with_capacity(n);
        for (m, unplaceable) in unplaceable.into_iter().enumerate() {
            let lease = runs_in[m].and_then(|i| leases[i].clone());
            let placement = runs_in[m].map(|i| {
                *placement_of[i].get_or_insert_with(|| {
                    let (c, w) = chosen[i];
                    let jobs = if c < n {
                        Tenants::Single(self.jobs[c].id.clone())
                    } else {
                        Tenants::Pair(self.pairs[c - n].jobs.clone())
                    };
                    let gpus = leases[i].as_ref().map(|l| l.gpus.clone()).unwrap_or_default();
                    placements.push(Placement { jobs, worker_type: w, gpus });
                    placements.len() - 1
                })
            });
            let j = &mut self.jobs[m];
            let change = LeaseChange::between(j.lease.as_ref(), lease.as_ref());
            j.lease = lease;
            rounds.push(JobRound { job: j.id.clone(), lease: change, placement, unplaceable });
        }
        (placements, rounds)
    }

    /// Per job: it has allocation, alone or in one of its pairs, on a type where that combination
    /// cannot be placed.
    fn unplaceable_jobs(&self) -> Vec<bool> {
        let mut out: Vec<bool> = self.jobs.iter().map(|j| self.unplaceable(j)).collect();
        for p in &self.pairs {
            let stuck =
                (0..self.cluster.num_types()).any(|w| p.share.allocation[w] > 0.0 && !self.pair_placeable(p, w));
            if stuck {
                for id in &p.jobs {
                    out[self.index[id]] = true;
                }
            }
        }
        out
    }

    fn run_ideal(&mut self, seconds: f64) -> (Vec<Placement>, Vec<JobRound>) {
        let unplaceable = self.unplaceable_jobs();
        for p in &mut self.pairs {
            for w in 0..p.share.allocation.len() {
                let y = p.share.allocation[w];
                p.share.grant(w, y * seconds);
            }
        }
        let rounds = self
            .jobs
            .iter_mut()
            .zip(unplaceable)
            .map(|(j, unplaceable)| {
                for w in 0..j.share.allocation.len() {
                    let x = j.share.allocation[w];
                    j.share.grant(w, x * seconds);
                }
                j.lease = None;
                JobRound { job: j.id.clone(), lease: LeaseChange::Fractional, placement: None, unplaceable }
            })
            .collect();
        (Vec::new(), rounds)
    }
}
