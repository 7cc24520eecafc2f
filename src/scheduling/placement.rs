//! The placement stage: which free GPUs of its chosen worker type a job that starts this round
//! gets (jobs that keep running keep their lease, see `super::preemption`). A placement may
//! decline: the job then waits this round.
//!
//! - `first_free`: the first free GPUs in index order.
//! - `consolidated`: Gavel's rule — one server whenever one has enough free GPUs (the fullest
//!   such), else the emptiest servers first; never declines when the type has the GPUs.
//! - `random`: free GPUs drawn uniformly (seeded).
//! - `profile_guided`: a consolidation-sensitive job only on the fewest servers that can hold it
//!   (else it waits); any other job is packed into the fullest servers, to leave whole servers.
//! - `skew`: Tiresias' heuristic, the same with "sensitive" meaning a reported `tensor_skew` at or
//!   above a threshold.
//! - `bandwidth`: within a server, the free GPUs whose weakest pair link is fastest (then the
//!   fastest total), from the server's GPU-pair bandwidth table; jobs larger than a server are
//!   consolidated.

use super::state::{ClusterState, GpuIndex, JobState, Server};
use crate::workload::generator::Rng;
use std::fmt::Debug;

/// Chooses GPUs for a starting job.
pub trait Placement: Debug + Send + Sync + dyn_clone::DynClone {
    fn name(&self) -> String;
    /// `job.scale_factor` free GPUs of `worker_type`, on servers with room for its CPU cores and
    /// memory; `None`: the job waits this round.
    fn place(&mut self, job: &JobState, worker_type: u32, cluster: &ClusterState) -> Option<Vec<GpuIndex>>;
}
dyn_clone::clone_trait_object!(Placement);

/// Servers of `worker_type` with free GPUs and room for the job's host demand, in index order.
fn candidates<'a>(job: &'a JobState, worker_type: u32, cluster: &'a ClusterState) -> impl Iterator<Item = u32> + 'a {
    cluster
        .servers_of(worker_type)
        .filter(move |&s| cluster.servers[s as usize].free_gpus > 0 && cluster.fits_host(s, job))
}

/// Takes free GPUs from `servers` in the given order until `need` are taken.
fn take(cluster: &ClusterState, servers: impl IntoIterator<Item = u32>, need: u32) -> Option<Vec<GpuIndex>> {
    let mut gpus = Vec::with_capacity(need as usize);
    for s in servers {
        gpus.extend(cluster.free_on(s).take(need as usize - gpus.len()));
        if gpus.len() == need as usize {
            return Some(gpus);
        }
    }
    None
}

/// Gavel's consolidation: the fullest server that fits, else the emptiest servers first.
fn consolidate(job: &JobState, worker_type: u32, cluster: &ClusterState) -> Option<Vec<GpuIndex>> {
    let need = job.scale_factor;
    let free = |s: u32| cluster.servers[s as usize].free_gpus;
    let mut best: Option<u32> = None;
    for s in candidates(job, worker_type, cluster) {
        if free(s) >= need && best.is_none_or(|b| free(s) < free(b)) {
            best = Some(s);
            if free(s) == need {
                break; // an exact fit: nothing fuller fits
            }
        }
    }
    if let Some(best) = best {
        return take(cluster, [best], need);
    }
    let mut servers: Vec<u32> = candidates(job, worker_type, cluster).collect();
    servers.sort_by_key(|&s| (std::cmp::Reverse(free(s)), s));
    take(cluster, servers, need)
}

/// Servers by increasing free GPUs, index order within a count (a counting sort: servers are
/// small, so this is linear where sorting was the cost of a round).
fn fullest_first(servers: impl Iterator<Item = u32>, cluster: &ClusterState) -> Vec<u32> {
    let mut buckets: Vec<Vec<u32>> = Vec::new();
    for s in servers {
        let free = cluster.servers[s as usize].free_gpus as usize;
        if buckets.len() <= free {
            buckets.resize_with(free + 1, Vec::new);
        }
        buckets[free].push(s);
    }
    buckets.into_iter().flatten().collect()
}

/// Only on the fewest servers that can hold the job (`⌈sf / largest server⌉`), else `None`.
fn strictly_consolidate(job: &JobState, worker_type: u32, cluster: &ClusterState) -> Option<Vec<GpuIndex>> {
    let largest = cluster.servers.iter().filter(|s| s.worker_type == worker_type).map(|s| s.num_gpus).max()?;
    let fewest = job.scale_factor.div_ceil(largest) as usize;
    let gpus = consolidate(job, worker_type, cluster)?;
    let mut servers: Vec<u32> = gpus.iter().map(|&g| cluster.gpus[g as usize].server).collect();
    servers.dedup();
    (servers.len() <= fewest).then_some(gpus)
}

/// Fullest servers first (fewest free GPUs), leaving whole servers for sensitive jobs.
fn pack(job: &JobState, worker_type: u32, cluster: &ClusterState) -> Option<Vec<GpuIndex>> {
    take(cluster, fullest_first(candidates(job, worker_type, cluster), cluster), job.scale_factor)
}

#[derive(Debug, Clone, Copy, Default)]
pub struct FirstFree;

impl Placement for FirstFree {
    fn name(&self) -> String {
        "first_free".into()
    }
    fn place(&mut self, job: &JobState, worker_type: u32, cluster: &ClusterState) -> Option<Vec<GpuIndex>> {
        take(cluster, candidates(job, worker_type, cluster), job.scale_factor)
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Consolidated;

impl Placement for Consolidated {
    fn name(&self) -> String {
        "consolidated".into()
    }
    fn place(&mut self, job: &JobState, worker_type: u32, cluster: &ClusterState) -> Option<Vec<GpuIndex>> {
        consolidate(job, worker_type, cluster)
    }
}

#[derive(Debug, Clone)]
pub struct Random {
    pub seed: u64,
    rng: Rng,
}

impl Random {
    pub fn new(seed: u64) -> Random {
        Random { seed, rng: Rng::new(seed) }
    }
}

impl Placement for Random {
    fn name(&self) -> String {
        format!("random={}", self.seed)
    }
    fn place(&mut self, job: &JobState, worker_type: u32, cluster: &ClusterState) -> Option<Vec<GpuIndex>> {
        let need = job.scale_factor as usize;
        // Draw GPUs of the type until `need` distinct usable ones; a crowded type falls back to
        // drawing from the list of its free GPUs.
        let range = cluster.gpus_of(worker_type);
        let usable = |g: GpuIndex| cluster.is_free(g) && cluster.fits_host(cluster.gpus[g as usize].server, job);
        let mut drawn: Vec<GpuIndex> = Vec::with_capacity(need);
        if !range.is_empty() {
            for _ in 0..64 * need {
                let g = range.start + self.rng.below(range.len()) as GpuIndex;
                if usable(g) && !drawn.contains(&g) {
                    drawn.push(g);
                    if drawn.len() == need {
                        return Some(drawn);
                    }
                }
            }
        }
        let mut free: Vec<GpuIndex> = candidates(job, worker_type, cluster).flat_map(|s| cluster.free_on(s)).collect();
        if free.len() < need {
            return None;
        }
        for k in 0..need {
            let pick = k + self.rng.below(free.len() - k);
            free.swap(k, pick);
        }
        free.truncate(need);
        Some(free)
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ProfileGuided;

impl Placement for ProfileGuided {
    fn name(&self) -> String {
        "profile_guided".into()
    }
    fn place(&mut self, job: &JobState, worker_type: u32, cluster: &ClusterState) -> Option<Vec<GpuIndex>> {
        if job.consolidation_sensitive {
            strictly_consolidate(job, worker_type, cluster)
        } else {
            pack(job, worker_type, cluster)
        }
    }
}

/// Tiresias' skew heuristic: consolidate when the job's reported `tensor_skew` ≥ `threshold`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Skew {
    pub threshold: f64,
}

impl Default for Skew {
    fn default() -> Self {
        Skew { threshold: 0.5 }
    }
}

impl Placement for Skew {
    fn name(&self) -> String {
        format!("skew={}", self.threshold)
    }
    fn place(&mut self, job: &JobState, worker_type: u32, cluster: &ClusterState) -> Option<Vec<GpuIndex>> {
        if job.metrics.get("tensor_skew").is_some_and(|&s| s >= self.threshold) {
            strictly_consolidate(job, worker_type, cluster)
        } else {
            pack(job, worker_type, cluster)
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Bandwidth;

/// Every `k`-subset of `items` (servers have at most a handful of GPUs).
fn subsets(items: &[GpuIndex], k: usize, out: &mut Vec<Vec<GpuIndex>>, current: &mut Vec<GpuIndex>, from: usize) {
    if current.len() == k {
        out.push(current.clone());
        return;
    }
    for i in from..items.len() {
        if items.len() - i < k - current.len() {
            break;
        }
        current.push(items[i]);
        subsets(items, k, out, current, i + 1);
        current.pop();
    }
}

/// A candidate set's weakest link, total bandwidth, and its server's fullness (higher is better).
type LinkScore = (f64, f64, std::cmp::Reverse<u32>);

/// The weakest and the total pair bandwidth of a set of a server's GPUs.
fn links(server: &Server, set: &[GpuIndex]) -> (f64, f64) {
    let (mut weakest, mut total) = (f64::INFINITY, 0.0);
    for (i, &a) in set.iter().enumerate() {
        for &b in &set[i + 1..] {
            let bw = server.pair_bandwidth(a, b);
            weakest = weakest.min(bw);
            total += bw;
        }
    }
    (weakest, total)
}

impl Placement for Bandwidth {
    fn name(&self) -> String {
        "bandwidth".into()
    }
    fn place(&mut self, job: &JobState, worker_type: u32, cluster: &ClusterState) -> Option<Vec<GpuIndex>> {
        let need = job.scale_factor as usize;
        if need == 1 {
            return consolidate(job, worker_type, cluster); // no pair: the fullest server
        }
        // Fullest servers first; stop at the first set whose weakest link is the fastest any
        // server of the type offers (nothing emptier can beat it).
        let servers = fullest_first(
            candidates(job, worker_type, cluster).filter(|&s| {
                let free = cluster.servers[s as usize].free_gpus as usize;
                free >= need && free <= 16
            }),
            cluster,
        );
        // The best score any server could give (its whole table), per distinct table.
        let mut ceiling = (0.0_f64, 0.0_f64);
        let mut last_table: Option<&Vec<f64>> = None;
        for &s in &servers {
            let server = &cluster.servers[s as usize];
            if server.bandwidth.is_some() && server.bandwidth.as_ref() == last_table {
                continue;
            }
            last_table = server.bandwidth.as_ref();
            let all: Vec<GpuIndex> = server.gpus().collect();
            let mut sets = Vec::new();
            subsets(&all, need, &mut sets, &mut Vec::new(), 0);
            for set in sets {
                let score = links(server, &set);
                if score.0 > ceiling.0 || (score.0 == ceiling.0 && score.1 > ceiling.1) {
                    ceiling = score;
                }
            }
        }
        let mut best: Option<(LinkScore, Vec<GpuIndex>)> = None;
        for s in servers {
            let server = &cluster.servers[s as usize];
            let free: Vec<GpuIndex> = cluster.free_on(s).collect();
            if best.as_ref().is_some_and(|(b, _)| (b.0, b.1) >= ceiling) {
                break;
            }
            let mut sets = Vec::new();
            subsets(&free, need, &mut sets, &mut Vec::new(), 0);
            for set in sets {
                let (weakest, total) = links(server, &set);
                // Prefer the fastest weakest link, then total, then the fullest server.
                let score = (weakest, total, std::cmp::Reverse(server.free_gpus));
                let better = match &best {
                    None => true,
                    Some((b, _)) => {
                        score.0 > b.0 || (score.0 == b.0 && (score.1 > b.1 || (score.1 == b.1 && score.2 > b.2)))
                    }
                };
                if better {
                    best = Some((score, set));
                }
            }
        }
        match best {
            Some((_, set)) => Some(set),
            None => consolidate(job, worker_type, cluster),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::WorkerType;
    use crate::scheduling::state::P3_8XLARGE_BANDWIDTH;

    fn cluster(gpus: f64) -> ClusterState {
        ClusterState::new(&[WorkerType { name: "v100".into(), count: gpus, gpus_per_server: 4, cost_per_hour: None }])
    }

    fn job(sf: u32) -> JobState {
        JobState::new("j", 0.0, sf, vec![1.0], 1.0)
    }

    /// Holds GPUs `gpus` for a dummy job.
    fn occupy(c: &mut ClusterState, gpus: &[GpuIndex]) {
        c.assign(99, &job(gpus.len() as u32), gpus);
    }

    #[test]
    fn first_free_takes_index_order() {
        let mut c = cluster(8.0);
        occupy(&mut c, &[0, 2]);
        assert_eq!(FirstFree.place(&job(3), 0, &c), Some(vec![1, 3, 4]));
    }

    #[test]
    fn consolidated_picks_the_fullest_server_that_fits_else_the_emptiest() {
        let mut c = cluster(12.0);
        occupy(&mut c, &[0, 1, 4]); // free: server 0 has 2, server 1 has 3, server 2 has 4
        assert_eq!(Consolidated.place(&job(2), 0, &c), Some(vec![2, 3]));
        assert_eq!(Consolidated.place(&job(3), 0, &c), Some(vec![5, 6, 7]));
        // 6 GPUs fit no server: the emptiest (server 2, then server 1).
        assert_eq!(Consolidated.place(&job(6), 0, &c), Some(vec![8, 9, 10, 11, 5, 6]));
        assert_eq!(Consolidated.place(&job(10), 0, &c), None);
    }

    #[test]
    fn profile_guided_waits_rather_than_split_a_sensitive_job() {
        let mut c = cluster(8.0);
        occupy(&mut c, &[0, 4]);
        let mut sensitive = job(4);
        sensitive.consolidation_sensitive = true;
        assert_eq!(ProfileGuided.place(&sensitive, 0, &c), None);
        // An insensitive job is packed into the fullest servers.
        assert_eq!(ProfileGuided.place(&job(4), 0, &c), Some(vec![1, 2, 3, 5]));
        let mut skewed = job(2);
        skewed.metrics.insert("tensor_skew".into(), 0.9);
        assert_eq!(Skew::default().place(&skewed, 0, &c), Some(vec![1, 2]));
    }

    #[test]
    fn bandwidth_avoids_the_pcie_diagonal() {
        let mut c = cluster(4.0).with_bandwidth(4, &P3_8XLARGE_BANDWIDTH);
        occupy(&mut c, &[0]);
        // Free 1, 2, 3: pairs 1–3 and 2–3 are NVLink (25), 1–2 is PCIe (10); first-free would take 1–2.
        assert_eq!(FirstFree.place(&job(2), 0, &c), Some(vec![1, 2]));
        assert_eq!(Bandwidth.place(&job(2), 0, &c), Some(vec![1, 3]));
    }

    #[test]
    fn random_is_seeded_and_distinct() {
        let c = cluster(16.0);
        let a = Random::new(7).place(&job(5), 0, &c).unwrap();
        assert_eq!(Random::new(7).place(&job(5), 0, &c).unwrap(), a);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 5);
    }
}
