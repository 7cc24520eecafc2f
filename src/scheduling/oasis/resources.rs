//! The resource vector of OASiS's servers and of its workers and parameter servers: GPUs, CPU
//! cores and memory (as FitGpp's nodes) plus the NIC bandwidth a worker or parameter server
//! reserves. Owns
//! nothing else; what is committed where is `cluster.rs`'s.

use serde::{Deserialize, Serialize};

/// The number of resource types `R` (GPU, CPU, memory, bandwidth).
pub const RESOURCE_TYPES: usize = 4;
/// The resource types' names, in the order of [`ResourceVector::amounts`].
pub const RESOURCE_NAMES: [&str; RESOURCE_TYPES] = ["gpus", "cpus", "memory_gb", "bandwidth_mbps"];

/// A server's capacity `c_h^r` or one worker's (parameter server's) demand `α_i^r` (`β_i^r`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = OasisResources)]
#[serde(deny_unknown_fields)]
pub struct ResourceVector {
    pub gpus: u32,
    /// CPU cores.
    pub cpus: u32,
    pub memory_gb: u32,
    /// Bandwidth reserved on the NIC, Mbit/s (`b_i`, `B_i` for a worker, a parameter server).
    pub bandwidth_mbps: u32,
}

impl ResourceVector {
    pub const fn new(gpus: u32, cpus: u32, memory_gb: u32, bandwidth_mbps: u32) -> ResourceVector {
        ResourceVector { gpus, cpus, memory_gb, bandwidth_mbps }
    }

    /// The amounts in the order of [`RESOURCE_NAMES`].
    pub fn amounts(&self) -> [u32; RESOURCE_TYPES] {
        [self.gpus, self.cpus, self.memory_gb, self.bandwidth_mbps]
    }

    pub fn is_zero(&self) -> bool {
        self.amounts().iter().all(|&a| a == 0)
    }

    /// How many copies of `self` fit in `free` (`u32::MAX` for an empty demand).
    pub fn copies_in(&self, free: &[u32; RESOURCE_TYPES]) -> u32 {
        self.amounts().iter().zip(free).filter(|(&d, _)| d > 0).map(|(&d, &f)| f / d).min().unwrap_or(u32::MAX)
    }
}

impl std::fmt::Display for ResourceVector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} GPUs, {} cores, {} GB, {} Mbit/s", self.gpus, self.cpus, self.memory_gb, self.bandwidth_mbps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_limited_by_the_scarcest_resource() {
        let worker = ResourceVector::new(1, 4, 8, 1000);
        assert_eq!(worker.copies_in(&[4, 36, 60, 10_000]), 4);
        assert_eq!(worker.copies_in(&[4, 36, 60, 2_500]), 2);
        assert_eq!(worker.copies_in(&[0, 36, 60, 10_000]), 0);
        assert_eq!(ResourceVector::default().copies_in(&[0; 4]), u32::MAX);
    }
}
