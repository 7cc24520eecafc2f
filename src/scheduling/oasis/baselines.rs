//! The schemes OASiS's paper compares against, slot by slot on the same pools: FIFO (fixed
//! worker counts, strict arrival order), DRF (max-min on dominant shares, all jobs admitted),
//! RRH (admission iff utility minus the delay it causes exceeds a threshold; fixed counts;
//! jobs that can no longer earn are paused) and Dorm (a utilization MILP with fairness on every
//! arrival and completion). Workers and parameter servers are placed round-robin, as the paper
//! places them for these schemes. Not OASiS (`online.rs`), which fixes whole schedules ahead.

use super::cluster::{ClusterSpec, Pool};
use super::job::Job;
use super::resources::RESOURCE_TYPES;
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::solver::dorm;

/// A job's state in the slot simulation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    pub admitted: bool,
    /// Worker-slots trained so far (`K_i` finishes it).
    pub done: u64,
    pub completion_slot: Option<usize>,
    /// Once it has run (FIFO and RRH keep a started job's count).
    pub started: bool,
    /// RRH gave up on it.
    pub paused: bool,
}

impl Progress {
    pub fn remaining(&self, job: &Job) -> u64 {
        job.worker_slots.saturating_sub(self.done)
    }
}

/// One slot's pools, placing workers and parameter servers round-robin over the servers.
#[derive(Debug)]
pub struct Placer {
    pub workers: Pool,
    pub parameter_servers: Pool,
    next_worker_server: usize,
    next_ps_server: usize,
    /// Workers given to each job this slot.
    pub given: Vec<u32>,
}

impl Placer {
    pub fn new(cluster: &ClusterSpec, jobs: usize) -> Placer {
        Placer {
            workers: Pool::new(&cluster.worker_servers, 1),
            parameter_servers: Pool::new(&cluster.ps_servers, 1),
            next_worker_server: 0,
            next_ps_server: 0,
            given: vec![0; jobs],
        }
    }

    fn place_one(pool: &mut Pool, next: &mut usize, demand: &super::ResourceVector) -> Option<usize> {
        let n = pool.servers();
        for step in 0..n {
            let server = (*next + step) % n;
            if pool.commit(0, server, demand, 1).is_ok() {
                *next = (server + 1) % n;
                return Some(server);
            }
        }
        None
    }

    /// One more worker for job `i` (and one more parameter server if `⌈w b/B⌉` grows); false,
    /// with nothing taken, if they do not fit.
    pub fn add_worker(&mut self, i: usize, job: &Job) -> bool {
        let w = self.given[i];
        let Some(server) = Self::place_one(&mut self.workers, &mut self.next_worker_server, &job.spec.worker) else {
            return false;
        };
        if job.parameter_servers_for(w + 1) > job.parameter_servers_for(w)
            && Self::place_one(&mut self.parameter_servers, &mut self.next_ps_server, &job.spec.parameter_server)
                .is_none()
        {
            self.workers.release(0, server, &job.spec.worker, 1);
            return false;
        }
        self.given[i] = w + 1;
        true
    }

    /// Up to `n` workers for job `i`; with `all_or_nothing`, either all `n` or none (then what
    /// was taken is given back). Returns how many it got.
    pub fn add_workers(&mut self, i: usize, job: &Job, n: u32, all_or_nothing: bool) -> u32 {
        let (workers, ps, cursors) =
            (self.workers.clone(), self.parameter_servers.clone(), (self.next_worker_server, self.next_ps_server));
        let before = self.given[i];
        while self.given[i] - before < n && self.add_worker(i, job) {}
        let got = self.given[i] - before;
        if all_or_nothing && got < n {
            self.workers = workers;
            self.parameter_servers = ps;
            (self.next_worker_server, self.next_ps_server) = cursors;
            self.given[i] = before;
            return 0;
        }
        got
    }
}

/// A scheme that decides slot by slot.
pub trait SlotScheme {
    fn name(&self) -> &'static str;
    /// Whether job `i`, arriving in `slot`, is admitted (jobs arrive in order). Every job, unless
    /// the scheme has an admission rule.
    fn admit(&mut self, _i: usize, _slot: usize, _jobs: &[Job], _progress: &[Progress]) -> bool {
        true
    }
    /// Places the workers of admitted, unfinished, arrived jobs for `slot`.
    fn allocate(&mut self, slot: usize, jobs: &[Job], progress: &[Progress], placer: &mut Placer) -> Result<()>;
}

/// The unfinished admitted jobs present in `slot`, in arrival order.
fn active(slot: usize, jobs: &[Job], progress: &[Progress]) -> Vec<usize> {
    (0..jobs.len())
        .filter(|&i| {
            let p = &progress[i];
            p.admitted && p.completion_slot.is_none() && !p.paused && jobs[i].spec.arrival_slot <= slot
        })
        .collect()
}

/// The fixed worker count FIFO and RRH give a job: `min(N_i, K_i, fixed)`.
fn fixed_count(job: &Job, fixed: u32) -> u32 {
    fixed.min(job.max_workers).max(1)
}

/// Hadoop's and Spark's default: every job admitted; in arrival order each starts with its
/// fixed number of workers when they all fit, and the first that does not blocks the rest.
#[derive(Debug, Clone)]
pub struct Fifo {
    pub fixed_workers: u32,
}

impl SlotScheme for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn allocate(&mut self, slot: usize, jobs: &[Job], progress: &[Progress], placer: &mut Placer) -> Result<()> {
        // Started jobs first (re-placed each slot), then the queue in order.
        let mut order = active(slot, jobs, progress);
        order.sort_by_key(|&i| (!progress[i].started, i));
        for i in order {
            let n = fixed_count(&jobs[i], self.fixed_workers).min(progress[i].remaining(&jobs[i]) as u32);
            if placer.add_workers(i, &jobs[i], n, true) == 0 && !progress[i].started {
                break;
            }
        }
        Ok(())
    }
}

/// Dominant resource fairness (YARN's and Mesos's default): every job admitted; each slot,
/// progressive filling gives one more worker (with its parameter server when one is due) to the
/// job of least dominant share that can still take one.
#[derive(Debug, Clone, Default)]
pub struct Drf;

impl SlotScheme for Drf {
    fn name(&self) -> &'static str {
        "drf"
    }
    fn allocate(&mut self, slot: usize, jobs: &[Job], progress: &[Progress], placer: &mut Placer) -> Result<()> {
        let totals = |pool: &Pool| -> [f64; RESOURCE_TYPES] {
            std::array::from_fn(|r| pool.capacity.iter().map(|c| c[r] as f64).sum())
        };
        let (cw, cp) = (totals(&placer.workers), totals(&placer.parameter_servers));
        let dominant = |job: &Job, w: u32| -> f64 {
            let (a, b, s) =
                (job.spec.worker.amounts(), job.spec.parameter_server.amounts(), job.parameter_servers_for(w));
            (0..RESOURCE_TYPES)
                .map(|r| {
                    let x = if cw[r] > 0.0 { (a[r] * w) as f64 / cw[r] } else { 0.0 };
                    let y = if cp[r] > 0.0 { (b[r] * s) as f64 / cp[r] } else { 0.0 };
                    x.max(y)
                })
                .fold(0.0, f64::max)
        };
        let mut open: Vec<usize> = active(slot, jobs, progress);
        while !open.is_empty() {
            let (k, &i) = open
                .iter()
                .enumerate()
                .min_by(|a, b| {
                    dominant(&jobs[*a.1], placer.given[*a.1]).total_cmp(&dominant(&jobs[*b.1], placer.given[*b.1]))
                })
                .expect("open is not empty");
            let cap = jobs[i].max_workers.min(progress[i].remaining(&jobs[i]) as u32);
            if placer.given[i] >= cap || !placer.add_worker(i, &jobs[i]) {
                open.swap_remove(k);
            }
        }
        Ok(())
    }
}

/// The risk-reward heuristic (Irwin et al., HPDC'04) as OASiS's paper runs it: a job is
/// admitted iff its utility at its expected completion minus the utility its admission costs
/// the admitted jobs (each delayed by its share of the cluster's GPU-time) exceeds `threshold`.
/// Admitted jobs run with a fixed worker count; those whose best remaining utility has fallen
/// below `threshold` are paused for good; the rest start in order of utility per worker-slot left.
#[derive(Debug, Clone)]
pub struct Rrh {
    pub fixed_workers: u32,
    pub threshold: f64,
    /// GPUs of the worker pool (set on the first call).
    pub gpus: f64,
}

impl Rrh {
    /// Slots job `i` needs at its fixed count.
    fn run_slots(&self, job: &Job, progress: &Progress) -> usize {
        progress.remaining(job).div_ceil(fixed_count(job, self.fixed_workers) as u64) as usize
    }

    /// Slots of backlog ahead of a new job: the admitted unfinished jobs' GPU-slots over the GPUs.
    fn backlog(&self, jobs: &[Job], progress: &[Progress], upto: usize) -> usize {
        let gpu_slots: f64 = (0..upto)
            .filter(|&j| progress[j].admitted && progress[j].completion_slot.is_none() && !progress[j].paused)
            .map(|j| (progress[j].remaining(&jobs[j]) * jobs[j].spec.worker.gpus as u64) as f64)
            .sum();
        (gpu_slots / self.gpus.max(1.0)).floor() as usize
    }
}

impl SlotScheme for Rrh {
    fn name(&self) -> &'static str {
        "rrh"
    }
    fn admit(&mut self, i: usize, slot: usize, jobs: &[Job], progress: &[Progress]) -> bool {
        let job = &jobs[i];
        let wait = self.backlog(jobs, progress, i);
        let own = self.run_slots(job, &progress[i]);
        let reward = job.utility_ending_at(slot + wait + own - 1);
        // The delay it imposes: its GPU-slots spread over the cluster.
        let delay = ((job.worker_slots * job.spec.worker.gpus as u64) as f64 / self.gpus.max(1.0)).ceil() as usize;
        let risk: f64 = (0..i)
            .filter(|&j| progress[j].admitted && progress[j].completion_slot.is_none() && !progress[j].paused)
            .map(|j| {
                let end = slot + self.run_slots(&jobs[j], &progress[j]).max(1) - 1;
                jobs[j].utility_ending_at(end) - jobs[j].utility_ending_at(end + delay)
            })
            .sum();
        reward - risk > self.threshold
    }
    fn allocate(&mut self, slot: usize, jobs: &[Job], progress: &[Progress], placer: &mut Placer) -> Result<()> {
        let mut order: Vec<(usize, f64)> = Vec::new();
        for i in active(slot, jobs, progress) {
            let best = jobs[i].utility_ending_at(slot + self.run_slots(&jobs[i], &progress[i]).max(1) - 1);
            if best <= self.threshold {
                continue; // paused: nothing left to earn
            }
            order.push((i, best / progress[i].remaining(&jobs[i]).max(1) as f64));
        }
        order.sort_by(|a, b| {
            progress[b.0].started.cmp(&progress[a.0].started).then(b.1.total_cmp(&a.1)).then(a.0.cmp(&b.0))
        });
        for (i, _) in order {
            let n = fixed_count(&jobs[i], self.fixed_workers).min(progress[i].remaining(&jobs[i]) as u32);
            placer.add_workers(i, &jobs[i], n, true);
        }
        Ok(())
    }
}

/// Dorm: every job admitted; on each arrival or completion the worker counts of all unfinished
/// jobs come from `solver::dorm`'s utilization MILP (fairness `θ`); between events they are
/// kept (capped by what is left), and placed round-robin as far as the servers allow.
#[derive(Debug, Clone)]
pub struct Dorm {
    pub theta: f64,
    pub backend: Backend,
    counts: Vec<u32>,
    active: Vec<usize>,
}

impl Dorm {
    pub fn new(theta: f64, backend: Backend) -> Dorm {
        Dorm { theta, backend, counts: Vec::new(), active: Vec::new() }
    }
}

impl SlotScheme for Dorm {
    fn name(&self) -> &'static str {
        "dorm"
    }
    fn allocate(&mut self, slot: usize, jobs: &[Job], progress: &[Progress], placer: &mut Placer) -> Result<()> {
        if self.counts.len() != jobs.len() {
            self.counts = vec![0; jobs.len()];
        }
        let now = active(slot, jobs, progress);
        if now != self.active {
            let totals = |pool: &Pool| -> [f64; RESOURCE_TYPES] {
                std::array::from_fn(|r| pool.capacity.iter().map(|c| c[r] as f64).sum())
            };
            let demands: Vec<dorm::Demand> = now
                .iter()
                .map(|&i| dorm::Demand {
                    job: &jobs[i],
                    max_workers: jobs[i].max_workers.min(progress[i].remaining(&jobs[i]) as u32),
                })
                .collect();
            let counts = dorm::allocate(
                &demands,
                &totals(&placer.workers),
                &totals(&placer.parameter_servers),
                self.theta,
                self.backend,
            )
            .map_err(|e| {
                ArbiterError::new(ErrorCode::SolverFailed, format!("Dorm's MILP in slot {slot}: {}", e.message))
            })?;
            for (&i, c) in now.iter().zip(counts) {
                self.counts[i] = c;
            }
            self.active = now.clone();
        }
        for i in now {
            let n = self.counts[i].min(progress[i].remaining(&jobs[i]) as u32);
            placer.add_workers(i, &jobs[i], n, false);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::oasis::job::worked_example_job;
    use crate::scheduling::oasis::{JobSpec, ResourceVector, Utility};

    /// One worker server of 4 GPUs (and 4 Mbit/s), one PS server of 4 cores; jobs of 1-GPU,
    /// 1-Mbit/s workers and 1-core, 2-Mbit/s PSs, q = 5 (as in the worked example's jobs).
    fn cluster() -> ClusterSpec {
        ClusterSpec {
            slot_seconds: 100.0,
            slots: 4,
            worker_servers: vec![ResourceVector::new(4, 0, 0, 4)],
            ps_servers: vec![ResourceVector::new(0, 4, 0, 8)],
        }
    }

    fn job(id: &str, epochs: u32, chunks: u32) -> Job {
        let spec = JobSpec { chunks, ..worked_example_job(id, epochs, Utility::Constant { value: 1.0 }) };
        Job::new(spec, 100.0, 4, "job").unwrap()
    }

    fn admitted(n: usize) -> Vec<Progress> {
        vec![Progress { admitted: true, ..Progress::default() }; n]
    }

    /// Two identical jobs of up to 10 workers share 4 GPUs 2 and 2 under DRF.
    #[test]
    fn drf_splits_equal_jobs_equally() {
        let jobs = [job("a", 10, 10), job("b", 10, 10)];
        let mut placer = Placer::new(&cluster(), 2);
        Drf.allocate(0, &jobs, &admitted(2), &mut placer).unwrap();
        assert_eq!(placer.given, vec![2, 2]);
        assert_eq!(placer.workers.free(0, 0), [0, 0, 0, 0]);
        // 2 workers each need one 2-Mbit/s PS each: 2 PSs.
        assert_eq!(placer.parameter_servers.free(0, 0), [0, 2, 0, 4]);
    }

    /// FIFO with 3 fixed workers: the first job takes 3 of 4 GPUs; the second cannot have its 3
    /// and blocks the third (1 worker would fit).
    #[test]
    fn fifo_head_of_line_blocks() {
        let jobs = [job("a", 10, 10), job("b", 10, 10), job("c", 1, 1)];
        let mut placer = Placer::new(&cluster(), 3);
        Fifo { fixed_workers: 3 }.allocate(0, &jobs, &admitted(3), &mut placer).unwrap();
        assert_eq!(placer.given, vec![3, 0, 0]);
    }

    /// Dorm with a generous fairness slack fills the GPUs; a job never gets more than it can use.
    #[cfg(feature = "highs")]
    #[test]
    fn dorm_fills_the_cluster_within_what_jobs_use() {
        let jobs = [job("a", 1, 1), job("b", 10, 10)];
        let mut placer = Placer::new(&cluster(), 2);
        Dorm::new(1.0, Backend::highs()).allocate(0, &jobs, &admitted(2), &mut placer).unwrap();
        assert_eq!(placer.given[0], 1, "a needs one worker-slot");
        assert_eq!(placer.given[1], 3);
    }

    /// A worker whose parameter server does not fit is given back.
    #[test]
    fn a_worker_without_its_parameter_server_is_not_placed() {
        let c = ClusterSpec { ps_servers: vec![ResourceVector::new(0, 1, 0, 2)], ..cluster() };
        let jobs = [job("a", 10, 10)];
        let mut placer = Placer::new(&c, 1);
        assert_eq!(placer.add_workers(0, &jobs[0], 4, false), 2, "one PS serves two workers");
        assert_eq!(placer.workers.free(0, 0), [2, 0, 0, 2]);
        assert_eq!(placer.add_workers(0, &jobs[0], 2, true), 0);
        assert_eq!(placer.given[0], 2);
    }
}
