//! Consolidated placement: the GPUs each job combination chosen for a round gets (a job alone, or
//! a colocated pair sharing the same GPUs), all on as few servers as possible, and a combination
//! that stays on its worker type keeping last round's GPUs (lease renewal).

use super::cluster::{Cluster, GpuId};
use super::JobId;
use std::collections::BTreeSet;

/// Who runs on a placement's GPUs: one job, or a colocated pair sharing all of them (space
/// sharing), in the order the pair's colocation was added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tenants {
    Single(JobId),
    Pair([JobId; 2]),
}

impl Tenants {
    pub fn as_slice(&self) -> &[JobId] {
        match self {
            Tenants::Single(job) => std::slice::from_ref(job),
            Tenants::Pair(jobs) => jobs,
        }
    }
}

/// One round's use of `scale_factor` GPUs of one worker type by one job or one pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub jobs: Tenants,
    pub worker_type: usize,
    pub gpus: Vec<GpuId>,
}

/// The GPUs a job holds from one round to the next, alone or in a pair; renewing it means no
/// checkpoint and restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub worker_type: usize,
    pub gpus: Vec<GpuId>,
}

/// A job combination the priority selection chose for this round.
pub(super) struct Request<'a> {
    pub worker_type: usize,
    pub scale_factor: u32,
    /// The leases of its jobs from last round, if they ran (one per tenant; a pair that ran
    /// together names the same lease twice).
    pub previous: [Option<&'a Lease>; 2],
}

/// Places every request on healthy GPUs of its type, or leaves it `None` if its type has fewer
/// free GPUs than it needs (the selection never asks for that).
///
/// Renewals go first: a request on the type of a tenant's lease keeps the lease's GPUs when all
/// are healthy and none is kept by an earlier request (leases of one round overlap only between
/// the two tenants of a pair, and then only one combination keeps them). The rest are placed in
/// decreasing scale factor, each on the fewest servers that can hold it: one server whenever one
/// has enough free GPUs (the fullest such server, to keep emptier ones whole for bigger jobs),
/// else the emptiest servers first.
pub(super) fn place(cluster: &Cluster, requests: &[Request]) -> Vec<Option<Lease>> {
    let mut taken: Vec<bool> = (0..cluster.num_gpus() as u32).map(|g| !cluster.is_healthy(GpuId(g))).collect();
    let mut out: Vec<Option<Lease>> = requests
        .iter()
        .map(|r| {
            let lease = r.previous.iter().flatten().find(|lease| {
                lease.worker_type == r.worker_type
                    && lease.gpus.len() == r.scale_factor as usize
                    && lease.gpus.iter().all(|g| !taken[g.0 as usize])
            })?;
            for g in &lease.gpus {
                taken[g.0 as usize] = true;
            }
            Some((*lease).clone())
        })
        .collect();

    let mut fresh: Vec<usize> = (0..requests.len()).filter(|&i| out[i].is_none()).collect();
    fresh.sort_unstable_by_key(|&i| {
        let r = &requests[i];
        (r.worker_type, std::cmp::Reverse(r.scale_factor), i)
    });
    for group in fresh.chunk_by(|&a, &b| requests[a].worker_type == requests[b].worker_type) {
        let w = requests[group[0]].worker_type;
        let mut free = FreeGpus::new(cluster, w, &taken);
        for &i in group {
            out[i] = free.take(requests[i].scale_factor).map(|gpus| Lease { worker_type: w, gpus });
        }
    }
    out
}

/// The free GPUs of one worker type, by server, with servers ordered by how many they have free.
struct FreeGpus {
    /// Free GPUs of every server of the type, server after server, lowest id first.
    slots: Vec<GpuId>,
    /// Per server of the type: the range of `slots` still free.
    servers: Vec<(u32, u32)>,
    /// `(free GPUs, server)` for every server with a free GPU.
    by_free: BTreeSet<(u32, u32)>,
    total: u32,
}

impl FreeGpus {
    fn new(cluster: &Cluster, w: usize, taken: &[bool]) -> FreeGpus {
        let mut slots = Vec::new();
        let mut servers = Vec::new();
        let mut by_free = BTreeSet::new();
        for (s, server) in cluster.servers_of_type(w).enumerate() {
            let start = slots.len() as u32;
            slots.extend(cluster.server_gpus(server).filter(|g| !taken[g.0 as usize]));
            let end = slots.len() as u32;
            servers.push((start, end));
            if end > start {
                by_free.insert((end - start, s as u32));
            }
        }
        FreeGpus { total: slots.len() as u32, slots, servers, by_free }
    }

    fn take(&mut self, scale_factor: u32) -> Option<Vec<GpuId>> {
        if scale_factor > self.total {
            return None;
        }
        self.total -= scale_factor;
        let mut gpus = Vec::with_capacity(scale_factor as usize);
        let mut need = scale_factor;
        while need > 0 {
            // The fullest server that fits the rest, else the emptiest server: with the largest
            // free counts taken first, no choice of fewer servers exists.
            let &(free, s) = match self.by_free.range((need, 0)..).next() {
                Some(fit) => fit,
                None => self.by_free.last().expect("total counts these GPUs"),
            };
            self.by_free.remove(&(free, s));
            let n = need.min(free);
            let (start, end) = &mut self.servers[s as usize];
            gpus.extend_from_slice(&self.slots[*start as usize..(*start + n) as usize]);
            *start += n;
            if *end > *start {
                self.by_free.insert((*end - *start, s));
            }
            need -= n;
        }
        Some(gpus)
    }
}
