//! One round's priority selection (Gavel §5, Algorithm 1): the priority of every (job combination,
//! worker type), a combination being a job alone or a colocated pair, and which run this round. Which servers and GPUs they get is `placement`'s job.

/// Where one job combination (a job alone, or a colocated pair) stands when a round begins, one
/// entry per worker type.
pub(super) struct Standing<'a> {
    /// The jobs (by index) the combination runs: one, or a pair.
    pub tenants: &'a [u32],
    /// GPUs the combination occupies: its jobs' scale factor.
    pub scale_factor: u32,
    /// `X[m][·]` or `Y[k][·]`, the combination's allocation.
    pub allocation: &'a [f64],
    /// Seconds run on each type since the last reset.
    pub received: &'a [f64],
    /// Seconds owed on each type from before the last reset (negative: run ahead).
    pub carried: &'a [f64],
    /// Steps/s on each type (for a pair, the slower tenant's paired throughput); 0 means the
    /// combination cannot run there.
    pub throughput: &'a [f64],
    /// A type to profile the job on this round (it has no measurement there yet): taken before
    /// every other candidate, if it fits.
    pub profile: Option<usize>,
}

/// How far behind its allocation a job on one type would be at the end of this round if it did not
/// run in it, in seconds: `owed + X·R`, where `owed = carried + X·elapsed − received`. Positive:
/// the job is *due* there. The selection takes combinations in decreasing priority, so the jobs
/// furthest behind in absolute time go first. Finite always; 0 on a type without allocation.
///
/// Not Gavel's `X / (received / elapsed)`: that ratio ranks a small allocation slightly behind
/// above a large one far behind, so on a type whose allocation cannot be met exactly (a job with
/// `X = 1` next to jobs that need every GPU of the type) the large allocations lose every round
/// the conflict costs; ordering by absolute lag shares it evenly. See
/// `formulations/round_mechanism.md`.
pub fn priority(allocation: f64, owed: f64, round_seconds: f64) -> f64 {
    owed + allocation * round_seconds
}

/// Whether a job can run on a type at all as the cluster stands: it has throughput there and its
/// scale factor fits the type's healthy GPUs. Allocation elsewhere is never granted.
pub(super) fn placeable(scale_factor: u32, throughput: f64, capacity: u32) -> bool {
    throughput > 0.0 && scale_factor <= capacity
}

struct Candidate {
    /// `priority(..)`: seconds behind at the end of the round if the combination does not run.
    priority: f64,
    allocation: f64,
    combination: u32,
    worker_type: u32,
}

/// Picks at most one worker type per job combination, and never a job twice (alone and in a
/// pair, or in two pairs): (combination, type) candidates in decreasing priority (the one furthest
/// behind first; ties by larger allocation, then combination order, then type), skipping one with
/// a job already chosen and any needing more GPUs than remain of the type. Only due candidates
/// (priority > 0) are taken unless `work_conserving`, which lets the others fill what is left,
/// least ahead first, and then single jobs on types their allocation does not use. `capacity[w]` is the healthy GPU count of type `w`; candidates that can
/// never fit (scale factor above it, or a type the combination cannot run on) are not candidates
/// at all. `jobs` is the number of jobs the tenants index.
pub(super) fn select(
    standings: &[Standing],
    jobs: usize,
    elapsed: f64,
    round_seconds: f64,
    capacity: &[u32],
    work_conserving: bool,
) -> Vec<Option<usize>> {
    let mut candidates = Vec::with_capacity(standings.len() * capacity.len());
    for (c, s) in standings.iter().enumerate() {
        if let Some(w) = s.profile.filter(|&w| placeable(s.scale_factor, s.throughput[w], capacity[w])) {
            let x = s.allocation[w];
            candidates.push(Candidate {
                priority: f64::INFINITY,
                allocation: x,
                combination: c as u32,
                worker_type: w as u32,
            });
        }
        for (w, &cap) in capacity.iter().enumerate() {
            let x = s.allocation[w];
            if !placeable(s.scale_factor, s.throughput[w], cap) {
                continue;
            }
            if x <= 0.0 {
                // Work-conserving, a job alone may also fill a type its allocation does not use
                // (as Gavel's scheduler fills idle GPUs with any job that runs there), after every
                // candidate the allocation asks for.
                if work_conserving && s.tenants.len() == 1 {
                    let filler = Candidate {
                        priority: f64::NEG_INFINITY,
                        allocation: 0.0,
                        combination: c as u32,
                        worker_type: w as u32,
                    };
                    candidates.push(filler);
                }
                continue;
            }
            let owed = s.carried[w] + x * elapsed - s.received[w];
            let priority = priority(x, owed, round_seconds);
            if priority > 0.0 || work_conserving {
                candidates.push(Candidate { priority, allocation: x, combination: c as u32, worker_type: w as u32 });
            }
        }
    }
    candidates.sort_unstable_by(|a, b| {
        b.priority
            .total_cmp(&a.priority)
            .then(b.allocation.total_cmp(&a.allocation))
            .then(a.combination.cmp(&b.combination))
            .then(a.worker_type.cmp(&b.worker_type))
    });

    let mut free = capacity.to_vec();
    let mut left: u64 = capacity.iter().map(|&c| c as u64).sum();
    let mut chosen = vec![None; standings.len()];
    let mut running = vec![false; jobs];
    for c in candidates {
        if left == 0 {
            break;
        }
        let (k, w) = (c.combination as usize, c.worker_type as usize);
        let s = &standings[k];
        if s.scale_factor > free[w] || s.tenants.iter().any(|&m| running[m as usize]) {
            continue;
        }
        free[w] -= s.scale_factor;
        left -= s.scale_factor as u64;
        for &m in s.tenants {
            running[m as usize] = true;
        }
        chosen[k] = Some(w);
    }
    chosen
}
