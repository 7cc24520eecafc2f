//! The scheduling stage's list policies (Blox §4): each orders the admitted jobs, highest
//! priority first; the pipeline then runs jobs down the list while GPUs last. The LP policies are
//! not here: they run as Gavel's mechanism (`crate::mechanism`), the allocation form of this
//! stage (see `super::composition`).
//!
//! Ties always break by arrival, then by submission order, so every order is deterministic.

use super::state::{ClusterState, JobIndex, JobState, Tenant, TenantShare};
use std::fmt::Debug;

/// Orders the admitted jobs.
pub trait Scheduling: Debug + Send + Sync + dyn_clone::DynClone {
    fn name(&self) -> String;
    /// `active` (admitted, unfinished jobs), highest priority first.
    fn order(&mut self, active: &[JobIndex], jobs: &[JobState], now: f64) -> Vec<JobIndex>;
    /// The list with the round's context in view; a job left out does not run this round. A
    /// policy that decides by what fits (LTGF) reads the cluster and the tenants; the others list
    /// every active job by `order`.
    fn order_in(&mut self, active: &[JobIndex], jobs: &[JobState], now: f64, _: &Context) -> Vec<JobIndex> {
        self.order(active, jobs, now)
    }
}

/// What a round's scheduling stage may read besides the jobs.
pub struct Context<'a> {
    pub cluster: &'a ClusterState,
    pub tenants: &'a [Tenant],
    /// By tenant: its shares of the healthy GPUs now, with the jobs present (admitted or waiting).
    pub shares: &'a [TenantShare],
    /// By job index: running jobs the preemption stage keeps this round whatever the list says.
    pub pinned: &'a [bool],
    /// Seconds of the lease a job granted now holds (a term, or one round).
    pub lease_seconds: f64,
}
dyn_clone::clone_trait_object!(Scheduling);

/// Sorts by a key (smaller first), ties by arrival then index.
fn by_key(active: &[JobIndex], jobs: &[JobState], key: impl Fn(&JobState) -> f64) -> Vec<JobIndex> {
    let mut keyed: Vec<(f64, f64, JobIndex)> = active.iter().map(|&j| (key(&jobs[j]), jobs[j].arrival, j)).collect();
    keyed.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
    keyed.into_iter().map(|k| k.2).collect()
}

/// First in, first out.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fifo;

impl Scheduling for Fifo {
    fn name(&self) -> String {
        "fifo".into()
    }
    fn order(&mut self, active: &[JobIndex], jobs: &[JobState], _: f64) -> Vec<JobIndex> {
        by_key(active, jobs, |_| 0.0)
    }
}

/// Higher weight first, FIFO within a weight.
#[derive(Debug, Clone, Copy, Default)]
pub struct FifoPriority;

impl Scheduling for FifoPriority {
    fn name(&self) -> String {
        "fifo_priority".into()
    }
    fn order(&mut self, active: &[JobIndex], jobs: &[JobState], _: f64) -> Vec<JobIndex> {
        by_key(active, jobs, |j| -j.weight)
    }
}

/// Least attained service (GPU-seconds received), one queue.
#[derive(Debug, Clone, Copy, Default)]
pub struct Las;

impl Scheduling for Las {
    fn name(&self) -> String {
        "las".into()
    }
    fn order(&mut self, active: &[JobIndex], jobs: &[JobState], _: f64) -> Vec<JobIndex> {
        by_key(active, jobs, |j| j.attained_service)
    }
}

/// Shortest remaining time first: steps left over the job's fastest throughput.
#[derive(Debug, Clone, Copy, Default)]
pub struct Srtf;

impl Scheduling for Srtf {
    fn name(&self) -> String {
        "srtf".into()
    }
    fn order(&mut self, active: &[JobIndex], jobs: &[JobState], _: f64) -> Vec<JobIndex> {
        by_key(active, jobs, JobState::remaining_seconds)
    }
}

/// A list policy's parameters as a composition names them: `3600/36000`.
pub fn parameter_list(values: &[f64]) -> String {
    values.iter().map(f64::to_string).collect::<Vec<_>>().join("/")
}

/// Tiresias' discretized two-dimensional LAS: a job's queue is the number of `thresholds`
/// (GPU-seconds of attained service) it has passed; lower queues first, FIFO within a queue. A
/// job that has waited since it last ran for more than `starvation_factor` × the time it has run
/// is promoted to the first queue (Tiresias' promote knob).
#[derive(Debug, Clone, PartialEq)]
pub struct Tiresias {
    pub thresholds: Vec<f64>,
    pub starvation_factor: f64,
}

impl Default for Tiresias {
    fn default() -> Self {
        Tiresias { thresholds: vec![3600.0], starvation_factor: 8.0 }
    }
}

impl Tiresias {
    /// The queue `job` is in at `now`.
    pub fn queue(&self, job: &JobState, now: f64) -> usize {
        let waited = now - job.last_run_end;
        if !job.is_running() && job.executed_seconds > 0.0 && waited > self.starvation_factor * job.executed_seconds {
            return 0;
        }
        self.thresholds.iter().take_while(|&&t| job.attained_service >= t).count()
    }
}

impl Scheduling for Tiresias {
    fn name(&self) -> String {
        match self.thresholds.as_slice() {
            [t] if *t == 3600.0 => "tiresias".into(),
            t => format!("tiresias={}", parameter_list(t)),
        }
    }
    fn order(&mut self, active: &[JobIndex], jobs: &[JobState], now: f64) -> Vec<JobIndex> {
        by_key(active, jobs, |j| self.queue(j, now) as f64)
    }
}

/// Optimus' largest marginal gain: the job whose next GPU-second completes the largest fraction
/// of its remaining work goes first, i.e. the least remaining GPU-seconds (`remaining × sf`).
/// Remaining steps come from the job's reported loss curve when it has one —
/// `loss(k) = 1/(a·k + b) + c` (metrics `loss_curve_a`, `loss_curve_b`, `loss_curve_c`) and a
/// target loss `loss_target`, so steps to converge are `(1/(target − c) − b)/a` — and from its
/// step count otherwise (SRTF's estimate).
#[derive(Debug, Clone, Copy, Default)]
pub struct Optimus;

impl Optimus {
    /// Steps left until the job converges (or its step count runs out, whichever first).
    pub fn remaining_steps(job: &JobState) -> f64 {
        let m = |k: &str| job.metrics.get(k).copied();
        if let (Some(a), Some(b), Some(c), Some(target)) =
            (m("loss_curve_a"), m("loss_curve_b"), m("loss_curve_c"), m("loss_target"))
        {
            if a > 0.0 && target > c {
                let converged_at = (1.0 / (target - c) - b) / a;
                let done = job.total_steps - job.remaining_steps;
                if converged_at.is_finite() {
                    return (converged_at - done).clamp(0.0, job.remaining_steps);
                }
            }
        }
        job.remaining_steps
    }

    /// Remaining GPU-seconds: the inverse of the marginal gain of a GPU-second.
    pub fn remaining_gpu_seconds(job: &JobState) -> f64 {
        let rate = job.best_throughput();
        if rate > 0.0 {
            Self::remaining_steps(job) / rate * job.scale_factor as f64
        } else {
            f64::INFINITY
        }
    }
}

impl Scheduling for Optimus {
    fn name(&self) -> String {
        "optimus".into()
    }
    fn order(&mut self, active: &[JobIndex], jobs: &[JobState], _: f64) -> Vec<JobIndex> {
        by_key(active, jobs, Optimus::remaining_gpu_seconds)
    }
}

/// Themis-style finish-time fairness over rounds: the job with the largest
/// `ρ = (now − arrival + remaining alone) / (whole job alone)` — the most behind its isolated
/// finish — goes first.
#[derive(Debug, Clone, Copy, Default)]
pub struct Themis;

impl Themis {
    pub fn rho(job: &JobState, now: f64) -> f64 {
        let alone = job.total_seconds();
        if alone.is_finite() && alone > 0.0 {
            (now - job.arrival + job.remaining_seconds()) / alone
        } else {
            0.0
        }
    }
}

impl Scheduling for Themis {
    fn name(&self) -> String {
        "themis".into()
    }
    fn order(&mut self, active: &[JobIndex], jobs: &[JobState], now: f64) -> Vec<JobIndex> {
        by_key(active, jobs, |j| -Themis::rho(j, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    /// Which of two jobs a list policy puts first.
    fn before(policy: &mut dyn Scheduling, jobs: &[JobState], a: JobIndex, b: JobIndex, now: f64) -> Ordering {
        if policy.order(&[a, b], jobs, now)[0] == a {
            Ordering::Less
        } else {
            Ordering::Greater
        }
    }

    fn job(i: usize, arrival: f64, sf: u32, rate: f64, total: f64) -> JobState {
        JobState::new(i.to_string(), arrival, sf, vec![rate], total)
    }

    #[test]
    fn fifo_and_priority() {
        let mut jobs = vec![job(0, 5.0, 1, 1.0, 10.0), job(1, 1.0, 1, 1.0, 10.0), job(2, 1.0, 1, 1.0, 10.0)];
        assert_eq!(Fifo.order(&[0, 1, 2], &jobs, 0.0), [1, 2, 0]);
        jobs[0].weight = 5.0;
        assert_eq!(FifoPriority.order(&[0, 1, 2], &jobs, 0.0), [0, 1, 2]);
    }

    #[test]
    fn las_and_srtf() {
        let mut jobs = vec![job(0, 0.0, 1, 1.0, 100.0), job(1, 1.0, 1, 2.0, 100.0), job(2, 2.0, 1, 1.0, 30.0)];
        jobs[0].attained_service = 50.0;
        jobs[1].attained_service = 10.0;
        assert_eq!(Las.order(&[0, 1, 2], &jobs, 0.0), [2, 1, 0]);
        // Remaining seconds: 100, 50, 30.
        assert_eq!(Srtf.order(&[0, 1, 2], &jobs, 0.0), [2, 1, 0]);
    }

    #[test]
    fn tiresias_queues_and_promotion() {
        let t = Tiresias::default();
        let mut jobs = vec![job(0, 0.0, 4, 1.0, 1e6), job(1, 10.0, 1, 1.0, 1e6)];
        // Job 0 has 4 GPUs × 1000 s = 4000 GPU-s ≥ 3600: second queue; job 1 (later) goes first.
        jobs[0].attained_service = 4000.0;
        jobs[0].executed_seconds = 1000.0;
        jobs[0].last_run_end = 1000.0;
        assert_eq!(t.queue(&jobs[0], 2000.0), 1);
        assert_eq!(Tiresias::default().order(&[0, 1], &jobs, 2000.0), [1, 0]);
        // Waiting 8001 s > 8 × 1000 s promotes it to the first queue, where it is first by arrival.
        assert_eq!(t.queue(&jobs[0], 9001.0), 0);
        assert_eq!(Tiresias::default().order(&[0, 1], &jobs, 9001.0), [0, 1]);
    }

    #[test]
    fn optimus_reads_the_loss_curve_and_falls_back_to_steps() {
        // loss(k) = 1/(0.01 k + 1) + 0.1, target 0.2: converged at (1/0.1 − 1)/0.01 = 900 steps.
        let mut a = job(0, 0.0, 1, 1.0, 5000.0);
        for (k, v) in [("loss_curve_a", 0.01), ("loss_curve_b", 1.0), ("loss_curve_c", 0.1), ("loss_target", 0.2)] {
            a.metrics.insert(k.into(), v);
        }
        a.remaining_steps = 4700.0; // 300 done
        assert!((Optimus::remaining_steps(&a) - 600.0).abs() < 1e-9);
        let b = job(1, 0.0, 2, 1.0, 400.0); // no curve: 400 steps × 2 GPUs = 800 GPU-s
        let jobs = vec![a, b];
        assert_eq!(Optimus.order(&[1, 0], &jobs, 0.0), [0, 1]);
        assert_eq!(Srtf.order(&[0, 1], &jobs, 0.0), [1, 0]);
    }

    #[test]
    fn themis_serves_the_most_behind() {
        // Both 100 s alone; job 0 arrived at 0 with 90 s left (ρ = 1.9 at t = 100), job 1 at 50
        // with 100 s left (ρ = 1.5).
        let mut jobs = vec![job(0, 0.0, 1, 1.0, 100.0), job(1, 50.0, 1, 1.0, 100.0)];
        jobs[0].remaining_steps = 90.0;
        assert!((Themis::rho(&jobs[0], 100.0) - 1.9).abs() < 1e-12);
        assert_eq!(before(&mut Themis, &jobs, 1, 0, 100.0), Ordering::Greater);
    }
}
