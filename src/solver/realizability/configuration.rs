//! A round configuration: which jobs run on which worker type in one round, as the mechanism can
//! run them (every gang whole, one job per GPU, a job on at most one type), and the check of that.

/// The jobs one round runs: `(job, worker type)` pairs, sorted by job.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Configuration {
    pub runs: Vec<(u32, u32)>,
}

/// Why a configuration cannot be one round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Infeasible {
    /// A job or worker type index out of range.
    Unknown { job: u32, worker_type: u32 },
    /// A job on two types, or twice on one.
    JobTwice { job: u32 },
    /// The gangs on a type need more GPUs than it has.
    OverCapacity { worker_type: u32, gpus: u64, capacity: u32 },
}

impl Configuration {
    pub fn new(mut runs: Vec<(u32, u32)>) -> Configuration {
        runs.sort_unstable();
        Configuration { runs }
    }

    /// Whether the mechanism can run this set in one round on a cluster with `capacity[w]` GPUs of
    /// type `w`: each job at most once, and the scale factors on each type summing to at most its
    /// GPUs. Servers add no condition: the mechanism's selection counts a type's free GPUs, and
    /// placement spans servers when no single one has room (`mechanism::placement`).
    pub fn check(&self, scale_factors: &[u32], capacity: &[u32]) -> Result<(), Infeasible> {
        let mut used = vec![0u64; capacity.len()];
        let mut last = None;
        for &(m, w) in &self.runs {
            if m as usize >= scale_factors.len() || w as usize >= capacity.len() {
                return Err(Infeasible::Unknown { job: m, worker_type: w });
            }
            if last == Some(m) {
                return Err(Infeasible::JobTwice { job: m });
            }
            last = Some(m);
            used[w as usize] += scale_factors[m as usize] as u64;
        }
        for (w, (&gpus, &cap)) in used.iter().zip(capacity).enumerate() {
            if gpus > cap as u64 {
                return Err(Infeasible::OverCapacity { worker_type: w as u32, gpus, capacity: cap });
            }
        }
        Ok(())
    }
}
