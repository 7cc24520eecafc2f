//! The three resources a node has and a job asks for (CPU cores, memory in whole GB, GPUs), and a
//! node's bookkeeping of what is committed on it. Not for choosing nodes or jobs (`cluster.rs`,
//! `score.rs`).

use serde::{Deserialize, Serialize};

/// CPU cores, memory (GB) and GPUs: a node's capacity or a job's demand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Resources {
    pub cpus: u32,
    pub memory_gb: u32,
    pub gpus: u32,
}

impl Resources {
    pub const fn new(cpus: u32, memory_gb: u32, gpus: u32) -> Resources {
        Resources { cpus, memory_gb, gpus }
    }

    /// `self ≤ other` in every resource.
    pub fn fits_in(&self, other: &Resources) -> bool {
        self.cpus <= other.cpus && self.memory_gb <= other.memory_gb && self.gpus <= other.gpus
    }

    /// The sum, saturating (no node or demand comes near `u32::MAX`).
    pub fn plus(&self, other: &Resources) -> Resources {
        Resources {
            cpus: self.cpus.saturating_add(other.cpus),
            memory_gb: self.memory_gb.saturating_add(other.memory_gb),
            gpus: self.gpus.saturating_add(other.gpus),
        }
    }

    /// What is left of `self` after `other`, 0 where `other` is larger.
    pub fn minus(&self, other: &Resources) -> Resources {
        Resources {
            cpus: self.cpus.saturating_sub(other.cpus),
            memory_gb: self.memory_gb.saturating_sub(other.memory_gb),
            gpus: self.gpus.saturating_sub(other.gpus),
        }
    }

    /// FitGpp's size of this demand on a node of `capacity` (Eq. 1): `c/C + r/R + g/G`; a
    /// resource the node does not have adds nothing.
    pub fn size_on(&self, capacity: &Resources) -> f64 {
        let share = |d: u32, c: u32| if c == 0 { 0.0 } else { d as f64 / c as f64 };
        share(self.cpus, capacity.cpus) + share(self.memory_gb, capacity.memory_gb) + share(self.gpus, capacity.gpus)
    }

    /// The share of `total` this demand is, averaged over the three resources (the cluster load's
    /// measure).
    pub fn share_of(&self, total: &Resources) -> f64 {
        self.size_on(total) / 3.0
    }
}

impl std::fmt::Display for Resources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} cores, {} GB, {} GPUs", self.cpus, self.memory_gb, self.gpus)
    }
}

/// One node: its capacity and what running jobs, jobs in their grace period and reservations
/// hold of it. `committed ≤ capacity` always: every change goes through `commit`, which refuses
/// what does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Node {
    pub capacity: Resources,
    committed: Resources,
}

impl Node {
    pub fn new(capacity: Resources) -> Node {
        Node { capacity, committed: Resources::default() }
    }

    /// What nothing holds.
    pub fn free(&self) -> Resources {
        self.capacity.minus(&self.committed)
    }

    pub fn committed(&self) -> Resources {
        self.committed
    }

    /// Takes `demand` if it fits in what is free; false (and nothing taken) otherwise.
    pub fn commit(&mut self, demand: &Resources) -> bool {
        if !demand.fits_in(&self.free()) {
            return false;
        }
        self.committed = self.committed.plus(demand);
        true
    }

    /// Gives `demand` back (never below nothing).
    pub fn release(&mut self, demand: &Resources) {
        debug_assert!(demand.fits_in(&self.committed), "releasing {demand} of {}", self.committed);
        self.committed = self.committed.minus(demand);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_is_the_sum_of_shares() {
        let node = Resources::new(32, 256, 8);
        assert_eq!(Resources::new(8, 64, 2).size_on(&node), 0.75);
        assert_eq!(Resources::new(8, 64, 2).size_on(&Resources::new(32, 256, 0)), 0.5);
    }

    #[test]
    fn a_node_never_commits_past_its_capacity() {
        let mut n = Node::new(Resources::new(4, 16, 1));
        assert!(n.commit(&Resources::new(2, 8, 1)));
        assert!(!n.commit(&Resources::new(1, 1, 1)));
        assert_eq!(n.free(), Resources::new(2, 8, 0));
        n.release(&Resources::new(2, 8, 1));
        assert_eq!(n.free(), n.capacity);
    }
}
