//! The state every stage reads (Blox's `JobState` and `ClusterState`): jobs with their demand,
//! attained service, preemptions, queueing delay, first run and reported metrics; servers with
//! GPUs (type, health, holder), CPU cores, memory and an optional GPU-pair bandwidth table.
//! Stages read it; only the pipeline (`super::Pipeline`) writes it.

use crate::problem::WorkerType;
use std::collections::BTreeMap;

/// A job's position in `Pipeline::jobs` (every job ever submitted, in submission order).
pub type JobIndex = usize;
/// A GPU's position in `ClusterState::gpus`.
pub type GpuIndex = u32;

/// One job as the pipeline sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobState {
    pub id: String,
    /// Seconds; orders FIFO (ties: submission order).
    pub arrival: f64,
    /// GPUs the job occupies while it runs.
    pub scale_factor: u32,
    /// Priority weight (FIFO + priority).
    pub weight: f64,
    /// Steps/s alone on each worker type (0: cannot run there).
    pub throughput: Vec<f64>,
    pub total_steps: f64,
    pub remaining_steps: f64,
    /// CPU cores and memory (GB) the job needs on every server it uses.
    pub cpu_cores: u32,
    pub memory_gb: f64,
    /// Runs markedly slower when its GPUs span servers (a profiled fact the job states).
    pub consolidation_sensitive: bool,
    /// GPU-seconds received so far (Tiresias' attained service).
    pub attained_service: f64,
    /// Seconds the job has run.
    pub executed_seconds: f64,
    /// When it first ran (responsiveness is `first_run − arrival`).
    pub first_run: Option<f64>,
    /// When it last stopped running (or was admitted): starvation is measured from here.
    pub last_run_end: f64,
    /// Times a running job was suspended while unfinished.
    pub preemptions: u32,
    /// Seconds admitted and waiting (not running), over all rounds.
    pub queueing_seconds: f64,
    /// Set when the admission stage lets it in.
    pub admitted_at: Option<f64>,
    pub finish: Option<f64>,
    /// The GPUs it holds this round (its lease); empty: not running.
    pub gpus: Vec<GpuIndex>,
    /// Suspended by a preemption and not yet resumed: its next launch pays the restart overhead.
    pub suspended: bool,
    /// Seconds of its current restart still to pay (a restart longer than a round runs over).
    pub restart_left: f64,
    /// Seconds it has spent restarting after suspensions, over all rounds.
    pub restart_seconds: f64,
    /// Reported metrics (`loss`, `iteration_seconds`, `tensor_skew`, loss-curve fits, ...).
    pub metrics: BTreeMap<String, f64>,
    /// Its tenant: an index into `Pipeline::tenants` (0: the default tenant).
    pub tenant: usize,
    /// `∫ min(Demand, FairShare_job(t)) dt` while present, in GPU-seconds (Astraea's fair GPU
    /// service time; `attained_service` is its `∫ Alloc`).
    pub fair_share_seconds: f64,
    /// When its current lease term began (launch, or the last renewal at a term's end).
    pub lease_start: f64,
    /// A type to run on next, before its fastest: a session profiling the job sets the next
    /// type where its throughput is still an estimate (`None` in simulation).
    pub profile_on: Option<usize>,
}

impl JobState {
    /// A job as it arrives: nothing run, nothing received.
    pub fn new(id: impl Into<String>, arrival: f64, scale_factor: u32, throughput: Vec<f64>, total_steps: f64) -> Self {
        JobState {
            id: id.into(),
            arrival,
            scale_factor,
            weight: 1.0,
            throughput,
            total_steps,
            remaining_steps: total_steps,
            cpu_cores: 0,
            memory_gb: 0.0,
            consolidation_sensitive: false,
            attained_service: 0.0,
            executed_seconds: 0.0,
            first_run: None,
            last_run_end: arrival,
            preemptions: 0,
            queueing_seconds: 0.0,
            admitted_at: None,
            finish: None,
            gpus: Vec::new(),
            suspended: false,
            restart_left: 0.0,
            restart_seconds: 0.0,
            metrics: BTreeMap::new(),
            tenant: 0,
            fair_share_seconds: 0.0,
            lease_start: arrival,
            profile_on: None,
        }
    }

    /// Astraea's long-term GPU-time fairness `ρ_job = ∫ Alloc / ∫ min(Demand, FairShare_job)` so
    /// far (`fairness_ratio`: a new job has 0, so it comes first).
    pub fn ltgf(&self) -> f64 {
        fairness_ratio(self.attained_service, self.fair_share_seconds)
    }

    pub fn is_running(&self) -> bool {
        !self.gpus.is_empty()
    }

    /// Its fastest type among those `fit` admits (ties: the lower index).
    pub fn fastest_type(&self, fit: impl Fn(usize) -> bool) -> Option<usize> {
        (0..self.throughput.len())
            .filter(|&w| self.throughput[w] > 0.0 && fit(w))
            .max_by(|&a, &b| self.throughput[a].total_cmp(&self.throughput[b]).then(b.cmp(&a)))
    }

    /// The type it starts on with `capacity` GPUs free per type (the pipeline's rule): its
    /// profiling type (`profile_on`) when it runs there and that has room, else its fastest with room.
    pub fn type_to_start(&self, capacity: &[u32]) -> Option<usize> {
        let room = |w: usize| w < capacity.len() && capacity[w] >= self.scale_factor;
        self.profile_on
            .filter(|&p| self.throughput.get(p).is_some_and(|&t| t > 0.0) && room(p))
            .or_else(|| self.fastest_type(room))
    }

    /// The fastest steps/s the job has on any type.
    pub fn best_throughput(&self) -> f64 {
        self.throughput.iter().copied().fold(0.0, f64::max)
    }

    /// Seconds left alone on its fastest type (infinite when it can run nowhere).
    pub fn remaining_seconds(&self) -> f64 {
        let rate = self.best_throughput();
        if rate > 0.0 {
            self.remaining_steps / rate
        } else {
            f64::INFINITY
        }
    }

    /// Seconds the whole job takes alone on its fastest type.
    pub fn total_seconds(&self) -> f64 {
        let rate = self.best_throughput();
        if rate > 0.0 {
            self.total_steps / rate
        } else {
            f64::INFINITY
        }
    }

    /// `first_run − arrival`, once it has run.
    pub fn responsiveness(&self) -> Option<f64> {
        self.first_run.map(|t| t - self.arrival)
    }
}

/// `∫ Alloc / ∫ FairShare`: 0 before any service, infinite for service with no fair share yet
/// (a lease granted at the very start counts against its holder).
pub fn fairness_ratio(allocated: f64, fair: f64) -> f64 {
    if fair > 0.0 {
        allocated / fair
    } else if allocated > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

/// A tenant sharing the cluster: its weight (quota `M · W_t / Σ W`) and its GPU-time integrals.
#[derive(Debug, Clone, PartialEq)]
pub struct Tenant {
    pub name: String,
    pub weight: f64,
    /// `∫ Alloc_tenant dt`: GPU-seconds its jobs ran.
    pub allocated: f64,
    /// `∫ min(Demand_tenant, Quota) dt` (Astraea's Eq. 8–9).
    pub fair_share: f64,
    /// `∫ Quota dt` (the adjusted Eq. 16: a tenant lends what it leaves unused).
    pub quota_share: f64,
}

impl Tenant {
    pub fn new(name: impl Into<String>, weight: f64) -> Tenant {
        Tenant { name: name.into(), weight, allocated: 0.0, fair_share: 0.0, quota_share: 0.0 }
    }

    /// `ρ_tenant = ∫ Alloc / ∫ FairShare`, against `min(Demand, Quota)` or (`quota`) the quota
    /// alone (`fairness_ratio`).
    pub fn ltgf(&self, quota: bool) -> f64 {
        fairness_ratio(self.allocated, if quota { self.quota_share } else { self.fair_share })
    }
}

/// A job present during (part of) a round, for `account_fair_shares`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Presence {
    pub tenant: usize,
    pub weight: f64,
    /// GPUs it asks for (`Demand_m`).
    pub demand: f64,
    /// Seconds of the round it was present (a job that finished mid-round: the seconds it ran).
    pub seconds: f64,
}

/// A tenant's shares of the cluster at one moment, in GPUs: its quota `Q_t = M · W_t / Σ W` and
/// its fair share `min(Demand_t, Q_t)` (Astraea's Eq. 8).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TenantShare {
    pub fair: f64,
    pub quota: f64,
}

/// Every tenant's shares of `gpus` healthy GPUs when it demands `demand[t]` GPUs.
pub fn tenant_shares(tenants: &[Tenant], gpus: f64, demand: &[f64]) -> Vec<TenantShare> {
    let total_weight: f64 = tenants.iter().map(|t| t.weight).sum();
    tenants
        .iter()
        .zip(demand)
        .map(|(tenant, &demand)| {
            let quota = gpus * tenant.weight / total_weight;
            TenantShare { fair: demand.min(quota), quota }
        })
        .collect()
}

/// Astraea's fair shares over one round of `seconds` on `gpus` healthy GPUs: every tenant's
/// quota and fair share (`tenant_shares`, its demand averaged over the round) are added to its
/// integrals; returns, per present job, the fair GPU-seconds it is owed,
/// `min(Demand_m, F_t · w_m / Σ w) · present seconds`. See `formulations/ltgf.md`.
pub fn account_fair_shares(tenants: &mut [Tenant], gpus: f64, seconds: f64, present: &[Presence]) -> Vec<f64> {
    if seconds <= 0.0 {
        return vec![0.0; present.len()];
    }
    let (mut demand, mut weight) = (vec![0.0; tenants.len()], vec![0.0; tenants.len()]);
    for p in present {
        let part = p.seconds / seconds;
        demand[p.tenant] += p.demand * part;
        weight[p.tenant] += p.weight * part;
    }
    let shares = tenant_shares(tenants, gpus, &demand);
    for (tenant, share) in tenants.iter_mut().zip(&shares) {
        tenant.fair_share += share.fair * seconds;
        tenant.quota_share += share.quota * seconds;
    }
    present.iter().map(|p| p.demand.min(shares[p.tenant].fair * p.weight / weight[p.tenant]) * p.seconds).collect()
}

/// One GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gpu {
    pub server: u32,
    pub worker_type: u32,
    pub healthy: bool,
    /// The job holding it this round.
    pub holder: Option<JobIndex>,
}

/// One server: GPUs `first_gpu..first_gpu + num_gpus`, all of one type.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    pub worker_type: u32,
    pub first_gpu: GpuIndex,
    pub num_gpus: u32,
    /// Healthy GPUs held by no job.
    pub free_gpus: u32,
    pub cpu_cores: u32,
    pub free_cpu_cores: u32,
    pub memory_gb: f64,
    pub free_memory_gb: f64,
    /// GB/s between GPU `a` and GPU `b` of the server, row-major `num_gpus × num_gpus`; `None`:
    /// every pair alike.
    pub bandwidth: Option<Vec<f64>>,
}

impl Server {
    pub fn gpus(&self) -> std::ops::Range<GpuIndex> {
        self.first_gpu..self.first_gpu + self.num_gpus
    }

    /// Bandwidth between two of its GPUs (by global index); uniform tables give 1.
    pub fn pair_bandwidth(&self, a: GpuIndex, b: GpuIndex) -> f64 {
        match &self.bandwidth {
            Some(table) => table[((a - self.first_gpu) * self.num_gpus + (b - self.first_gpu)) as usize],
            None => 1.0,
        }
    }
}

/// Servers and GPUs of every worker type, in the cluster's type order.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterState {
    pub type_names: Vec<String>,
    pub servers: Vec<Server>,
    pub gpus: Vec<Gpu>,
}

/// CPU cores and memory per server when a cluster does not say (a p3.8xlarge: 32 vCPUs, 244 GB).
pub const DEFAULT_CPU_CORES_PER_SERVER: u32 = 32;
pub const DEFAULT_MEMORY_GB_PER_SERVER: f64 = 244.0;

/// GB/s between the GPUs of a p3.8xlarge (4 V100s): NVLink pairs 0–1, 2–3, 0–2 and 1–3 at 25 GB/s,
/// the diagonals 0–3 and 1–2 through PCIe at 10 GB/s (Blox §4.3's example server).
pub const P3_8XLARGE_BANDWIDTH: [f64; 16] =
    [0.0, 25.0, 25.0, 10.0, 25.0, 0.0, 10.0, 25.0, 25.0, 10.0, 0.0, 25.0, 10.0, 25.0, 25.0, 0.0];

impl ClusterState {
    /// Servers of `gpus_per_server` GPUs per worker type (the last one smaller when the count
    /// does not divide), every GPU healthy and free.
    pub fn new(worker_types: &[WorkerType]) -> ClusterState {
        let mut servers = Vec::new();
        let mut gpus = Vec::new();
        for (w, wt) in worker_types.iter().enumerate() {
            let mut left = wt.count.max(0.0) as u32;
            let per = wt.gpus_per_server.max(1);
            while left > 0 {
                let n = left.min(per);
                let s = servers.len() as u32;
                servers.push(Server {
                    worker_type: w as u32,
                    first_gpu: gpus.len() as GpuIndex,
                    num_gpus: n,
                    free_gpus: n,
                    cpu_cores: DEFAULT_CPU_CORES_PER_SERVER,
                    free_cpu_cores: DEFAULT_CPU_CORES_PER_SERVER,
                    memory_gb: DEFAULT_MEMORY_GB_PER_SERVER,
                    free_memory_gb: DEFAULT_MEMORY_GB_PER_SERVER,
                    bandwidth: None,
                });
                gpus.extend((0..n).map(|_| Gpu { server: s, worker_type: w as u32, healthy: true, holder: None }));
                left -= n;
            }
        }
        ClusterState { type_names: worker_types.iter().map(|w| w.name.clone()).collect(), servers, gpus }
    }

    /// Gives every full server of `gpus` GPUs the same pair-bandwidth table (row-major).
    pub fn with_bandwidth(mut self, gpus: u32, table: &[f64]) -> ClusterState {
        for s in self.servers.iter_mut().filter(|s| s.num_gpus == gpus) {
            s.bandwidth = Some(table.to_vec());
        }
        self
    }

    /// Servers of `worker_type`, in index order (a type's servers are contiguous).
    pub fn servers_of(&self, worker_type: u32) -> impl Iterator<Item = u32> + '_ {
        let start = self.servers.partition_point(|s| s.worker_type < worker_type);
        let end = self.servers.partition_point(|s| s.worker_type <= worker_type);
        start as u32..end as u32
    }

    /// GPUs of `worker_type` (contiguous).
    pub fn gpus_of(&self, worker_type: u32) -> std::ops::Range<GpuIndex> {
        let start = self.gpus.partition_point(|g| g.worker_type < worker_type);
        let end = self.gpus.partition_point(|g| g.worker_type <= worker_type);
        start as GpuIndex..end as GpuIndex
    }

    pub fn num_types(&self) -> usize {
        self.type_names.len()
    }

    /// Healthy GPUs of each type.
    pub fn healthy_per_type(&self) -> Vec<u32> {
        self.count_per_type(|g| g.healthy)
    }

    /// GPUs of each type, healthy or not.
    pub fn gpus_per_type(&self) -> Vec<u32> {
        self.count_per_type(|_| true)
    }

    fn count_per_type(&self, counted: impl Fn(&Gpu) -> bool) -> Vec<u32> {
        let mut n = vec![0; self.num_types()];
        for g in self.gpus.iter().filter(|g| counted(g)) {
            n[g.worker_type as usize] += 1;
        }
        n
    }

    pub fn healthy_gpus(&self) -> u32 {
        self.gpus.iter().filter(|g| g.healthy).count() as u32
    }

    /// Whether `server` has the CPU cores and memory `job` asks of every server it uses.
    pub fn fits_host(&self, server: u32, job: &JobState) -> bool {
        let s = &self.servers[server as usize];
        s.free_cpu_cores >= job.cpu_cores && s.free_memory_gb + 1e-9 >= job.memory_gb
    }

    /// Healthy GPUs of `server` that no job holds, in index order.
    pub fn free_on(&self, server: u32) -> impl Iterator<Item = GpuIndex> + '_ {
        self.servers[server as usize].gpus().filter(|&g| self.is_free(g))
    }

    pub fn is_free(&self, gpu: GpuIndex) -> bool {
        let g = &self.gpus[gpu as usize];
        g.healthy && g.holder.is_none()
    }

    /// Hands `gpus` to `job` (they must be free), with its CPU cores and memory on each server.
    pub(super) fn assign(&mut self, job: JobIndex, state: &JobState, gpus: &[GpuIndex]) {
        let mut hosts: Vec<u32> = Vec::new();
        for &g in gpus {
            let gpu = &mut self.gpus[g as usize];
            debug_assert!(gpu.healthy && gpu.holder.is_none());
            gpu.holder = Some(job);
            let s = gpu.server;
            self.servers[s as usize].free_gpus -= 1;
            if !hosts.contains(&s) {
                hosts.push(s);
            }
        }
        for s in hosts {
            let server = &mut self.servers[s as usize];
            server.free_cpu_cores = server.free_cpu_cores.saturating_sub(state.cpu_cores);
            server.free_memory_gb = (server.free_memory_gb - state.memory_gb).max(0.0);
        }
    }

    /// Takes `gpus` back from their holder, with its CPU cores and memory.
    pub(super) fn release(&mut self, state: &JobState, gpus: &[GpuIndex]) {
        let mut hosts: Vec<u32> = Vec::new();
        for &g in gpus {
            let gpu = &mut self.gpus[g as usize];
            gpu.holder = None;
            let s = gpu.server;
            if gpu.healthy {
                self.servers[s as usize].free_gpus += 1;
            }
            if !hosts.contains(&s) {
                hosts.push(s);
            }
        }
        for s in hosts {
            let server = &mut self.servers[s as usize];
            server.free_cpu_cores = (server.free_cpu_cores + state.cpu_cores).min(server.cpu_cores);
            server.free_memory_gb = (server.free_memory_gb + state.memory_gb).min(server.memory_gb);
        }
    }

    /// Marks a GPU failed or back; returns the job that held it, if any (it loses its lease).
    pub(super) fn set_health(&mut self, gpu: GpuIndex, healthy: bool) -> Option<JobIndex> {
        let g = &mut self.gpus[gpu as usize];
        if g.healthy == healthy {
            return None;
        }
        g.healthy = healthy;
        let free = g.holder.is_none();
        let server = &mut self.servers[g.server as usize];
        match (healthy, free) {
            (true, true) => server.free_gpus += 1,
            (false, true) => server.free_gpus -= 1,
            _ => {}
        }
        if healthy {
            None
        } else {
            g.holder
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wt(name: &str, count: f64, per: u32) -> WorkerType {
        WorkerType { name: name.into(), count, gpus_per_server: per, cost_per_hour: None }
    }

    #[test]
    fn servers_split_by_type_and_size() {
        let c = ClusterState::new(&[wt("v100", 10.0, 4), wt("k80", 4.0, 4)]);
        let sizes: Vec<(u32, u32)> = c.servers.iter().map(|s| (s.worker_type, s.num_gpus)).collect();
        assert_eq!(sizes, [(0, 4), (0, 4), (0, 2), (1, 4)]);
        assert_eq!(c.healthy_per_type(), [10, 4]);
        assert_eq!(c.gpus[9].server, 2);
    }

    #[test]
    fn assign_release_and_failure_keep_free_counts() {
        let mut c = ClusterState::new(&[wt("v100", 4.0, 4)]);
        let mut job = JobState::new("a", 0.0, 2, vec![1.0], 10.0);
        job.cpu_cores = 8;
        c.assign(0, &job, &[0, 1]);
        assert_eq!((c.servers[0].free_gpus, c.servers[0].free_cpu_cores), (2, 24));
        assert_eq!(c.set_health(1, false), Some(0));
        assert_eq!(c.set_health(3, false), None);
        assert_eq!(c.servers[0].free_gpus, 1);
        c.release(&job, &[0, 1]);
        assert_eq!((c.servers[0].free_gpus, c.servers[0].free_cpu_cores), (2, 32));
        assert_eq!(c.free_on(0).collect::<Vec<_>>(), [0, 2]);
    }

    #[test]
    fn p3_table_is_symmetric() {
        let c = ClusterState::new(&[wt("v100", 4.0, 4)]).with_bandwidth(4, &P3_8XLARGE_BANDWIDTH);
        let s = &c.servers[0];
        for a in 0..4 {
            for b in 0..4 {
                assert_eq!(s.pair_bandwidth(a, b), s.pair_bandwidth(b, a));
            }
        }
        assert_eq!(s.pair_bandwidth(0, 1), 25.0);
        assert_eq!(s.pair_bandwidth(0, 3), 10.0);
    }
}
