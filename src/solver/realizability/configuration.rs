//! A round configuration: which jobs run on which worker type in one round, as the mechanism can
//! run them (every gang whole, one job per GPU or a colocated pair sharing its GPUs, a job on at
//! most one type), and the check of that.

/// What one entry of the check runs on its GPUs: a job alone, or a colocated pair of jobs of one
/// scale factor sharing the same GPUs (space sharing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gang {
    /// GPUs it takes: the scale factor.
    pub gpus: u32,
    jobs: [u32; 2],
    paired: bool,
}

impl Gang {
    pub fn single(job: u32, gpus: u32) -> Gang {
        Gang { gpus, jobs: [job, job], paired: false }
    }

    pub fn pair(jobs: [u32; 2], gpus: u32) -> Gang {
        Gang { gpus, jobs, paired: true }
    }

    /// Job `m` alone, for every job, with its scale factor.
    pub fn singles(scale_factors: &[u32]) -> Vec<Gang> {
        scale_factors.iter().enumerate().map(|(m, &sf)| Gang::single(m as u32, sf)).collect()
    }

    /// The jobs it runs: one, or the pair's two.
    pub fn jobs(&self) -> &[u32] {
        if self.paired {
            &self.jobs
        } else {
            &self.jobs[..1]
        }
    }

    pub fn is_pair(&self) -> bool {
        self.paired
    }

    /// How many jobs `gangs` span: one more than the largest job any of them runs.
    pub fn jobs_spanned(gangs: &[Gang]) -> usize {
        gangs.iter().flat_map(Gang::jobs).map(|&m| m as usize + 1).max().unwrap_or(0)
    }
}

/// The jobs one round runs: `(job, worker type)` pairs, sorted by job, and the colocated pairs
/// that run together: `(pair, worker type)`, the pair an index into the instance's pairs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Configuration {
    pub runs: Vec<(u32, u32)>,
    pub pairs: Vec<(u32, u32)>,
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
        Configuration { runs, pairs: Vec::new() }
    }

    /// Jobs alone and colocated pairs, each sorted.
    pub fn with_pairs(runs: Vec<(u32, u32)>, mut pairs: Vec<(u32, u32)>) -> Configuration {
        pairs.sort_unstable();
        Configuration { pairs, ..Configuration::new(runs) }
    }

    /// Whether the mechanism can run this set in one round on a cluster with `capacity[w]` GPUs of
    /// type `w`: each job at most once, and the scale factors on each type summing to at most its
    /// GPUs. Servers add no condition: the mechanism's selection counts a type's free GPUs, and
    /// placement spans servers when no single one has room (`mechanism::placement`).
    pub fn check(&self, scale_factors: &[u32], capacity: &[u32]) -> Result<(), Infeasible> {
        self.check_with_pairs(scale_factors, &[], capacity)
    }

    /// `check`, with `pairs[k]` the jobs of colocated pair `k`: a pair takes its scale factor's
    /// GPUs once, for both its jobs, and neither of them runs elsewhere.
    pub fn check_with_pairs(
        &self,
        scale_factors: &[u32],
        pairs: &[[u32; 2]],
        capacity: &[u32],
    ) -> Result<(), Infeasible> {
        // An unknown job takes no GPUs here; `one_round` names it.
        let gpus = |m: u32| scale_factors.get(m as usize).copied().unwrap_or(0);
        let singles = self.runs.iter().map(|&(m, w)| (Gang::single(m, gpus(m)), w));
        let paired = self.pairs.iter().map(|&(k, w)| {
            let jobs = pairs.get(k as usize).copied().unwrap_or([u32::MAX; 2]);
            (Gang::pair(jobs, gpus(jobs[0])), w)
        });
        one_round(singles.chain(paired), scale_factors.len(), capacity)
    }
}

/// Whether gangs run as `(gang, worker type)` are one round for `jobs` jobs on `capacity[w]` GPUs
/// of each type: every job in at most one gang, and each type's gangs within its GPUs.
pub(super) fn one_round(
    runs: impl IntoIterator<Item = (Gang, u32)>,
    jobs: usize,
    capacity: &[u32],
) -> Result<(), Infeasible> {
    let mut used = vec![0u64; capacity.len()];
    let mut running = vec![false; jobs];
    for (gang, w) in runs {
        for &m in gang.jobs() {
            if m as usize >= jobs || w as usize >= capacity.len() {
                return Err(Infeasible::Unknown { job: m, worker_type: w });
            }
            if std::mem::replace(&mut running[m as usize], true) {
                return Err(Infeasible::JobTwice { job: m });
            }
        }
        used[w as usize] += gang.gpus as u64;
    }
    for (w, (&gpus, &cap)) in used.iter().zip(capacity).enumerate() {
        if gpus > cap as u64 {
            return Err(Infeasible::OverCapacity { worker_type: w as u32, gpus, capacity: cap });
        }
    }
    Ok(())
}
