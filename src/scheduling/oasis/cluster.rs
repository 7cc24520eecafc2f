//! The two server pools OASiS schedules on (servers for workers, `H`; servers for parameter
//! servers, `K`), the horizon of `T` slots, and what is committed on each server in each slot.
//! `used ≤ capacity` always: every change goes through `Pool::commit`, which refuses the rest.

use super::resources::{ResourceVector, RESOURCE_TYPES};
use crate::error::{ArbiterError, ErrorCode, Result};
use serde::{Deserialize, Serialize};

/// The most (slot, server) pairs the pools keep track of.
pub const MAX_SERVER_SLOTS: usize = 50_000_000;

/// The cluster and the horizon, as a user describes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = OasisCluster)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Length of a slot in seconds.
    pub slot_seconds: f64,
    /// `T`, the number of slots.
    pub slots: usize,
    /// Capacities `c_h` of the servers that host workers.
    pub worker_servers: Vec<ResourceVector>,
    /// Capacities `c_k` of the servers that host parameter servers.
    pub ps_servers: Vec<ResourceVector>,
}

impl ClusterSpec {
    pub fn validate(&self) -> Result<()> {
        if !(crate::problem::in_range(self.slot_seconds) && self.slot_seconds > 0.0) {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                "cluster.slot_seconds",
                "must be a finite number > 0 of magnitude between 1e-100 and 1e100",
            ));
        }
        if self.slots == 0 {
            return Err(ArbiterError::at(ErrorCode::InvalidNumber, "cluster.slots", "must be at least 1"));
        }
        for (name, pool) in [("worker_servers", &self.worker_servers), ("ps_servers", &self.ps_servers)] {
            if pool.is_empty() {
                return Err(ArbiterError::at(
                    ErrorCode::MissingField,
                    format!("cluster.{name}"),
                    "needs at least one server",
                ));
            }
            if let Some(i) = pool.iter().position(|server| server.amounts().iter().all(|&a| a == 0)) {
                return Err(ArbiterError::at(
                    ErrorCode::InvalidNumber,
                    format!("cluster.{name}[{i}]"),
                    "a server with no resource at all can host nothing",
                ));
            }
        }
        let cells = self.slots.saturating_mul(self.worker_servers.len() + self.ps_servers.len());
        if cells > MAX_SERVER_SLOTS {
            return Err(ArbiterError::at(
                ErrorCode::Unsupported,
                "cluster.slots",
                format!("slots × servers is {cells}, more than the {MAX_SERVER_SLOTS} the pools keep"),
            ));
        }
        Ok(())
    }
}

/// One pool's servers over the horizon: capacity per server, use per (slot, server).
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    pub capacity: Vec<[u32; RESOURCE_TYPES]>,
    slots: usize,
    /// `g_h^r(t)` at `t * servers + h`.
    used: Vec<[u32; RESOURCE_TYPES]>,
}

impl Pool {
    pub fn new(servers: &[ResourceVector], slots: usize) -> Pool {
        Pool {
            capacity: servers.iter().map(|s| s.amounts()).collect(),
            slots,
            used: vec![[0; RESOURCE_TYPES]; servers.len() * slots],
        }
    }

    pub fn servers(&self) -> usize {
        self.capacity.len()
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    pub fn used(&self, slot: usize, server: usize) -> &[u32; RESOURCE_TYPES] {
        &self.used[slot * self.servers() + server]
    }

    pub fn free(&self, slot: usize, server: usize) -> [u32; RESOURCE_TYPES] {
        let used = self.used(slot, server);
        std::array::from_fn(|r| self.capacity[server][r] - used[r])
    }

    /// Takes `count` copies of `demand` on `server` in `slot` if they fit in what is free;
    /// refuses (and takes nothing) otherwise.
    pub fn commit(&mut self, slot: usize, server: usize, demand: &ResourceVector, count: u32) -> Result<()> {
        if slot >= self.slots || server >= self.servers() || demand.copies_in(&self.free(slot, server)) < count {
            return Err(ArbiterError::new(
                ErrorCode::Infeasible,
                format!("{count} × ({demand}) do not fit on server {server} in slot {slot}"),
            ));
        }
        let amounts = demand.amounts();
        let used = &mut self.used[slot * self.capacity.len() + server];
        for r in 0..RESOURCE_TYPES {
            used[r] += amounts[r] * count;
        }
        Ok(())
    }
}

impl Pool {
    /// Gives back `count` copies of `demand` on `server` in `slot` (never below nothing).
    pub fn release(&mut self, slot: usize, server: usize, demand: &ResourceVector, count: u32) {
        if slot >= self.slots || server >= self.servers() {
            return;
        }
        let amounts = demand.amounts();
        let used = &mut self.used[slot * self.capacity.len() + server];
        for r in 0..RESOURCE_TYPES {
            used[r] = used[r].saturating_sub(amounts[r] * count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_never_commits_past_capacity() {
        let mut pool = Pool::new(&[ResourceVector::new(2, 8, 16, 2000)], 2);
        let worker = ResourceVector::new(1, 2, 4, 1000);
        pool.commit(1, 0, &worker, 2).unwrap();
        assert!(pool.commit(1, 0, &worker, 1).is_err());
        assert!(pool.commit(2, 0, &worker, 1).is_err());
        assert_eq!(pool.free(1, 0), [0, 4, 8, 0]);
        assert_eq!(pool.free(0, 0), [2, 8, 16, 2000]);
    }

    #[test]
    fn bad_clusters_are_refused_with_their_field() {
        let server = ResourceVector::new(2, 8, 16, 2000);
        let ok =
            ClusterSpec { slot_seconds: 3600.0, slots: 10, worker_servers: vec![server], ps_servers: vec![server] };
        assert!(ok.validate().is_ok());
        let field = |c: ClusterSpec| c.validate().unwrap_err().field;
        assert_eq!(
            field(ClusterSpec { slot_seconds: f64::NAN, ..ok.clone() }).as_deref(),
            Some("cluster.slot_seconds")
        );
        assert_eq!(field(ClusterSpec { slots: 0, ..ok.clone() }).as_deref(), Some("cluster.slots"));
        assert_eq!(field(ClusterSpec { slots: usize::MAX, ..ok.clone() }).as_deref(), Some("cluster.slots"));
        assert_eq!(field(ClusterSpec { ps_servers: vec![], ..ok }).as_deref(), Some("cluster.ps_servers"));
    }
}
