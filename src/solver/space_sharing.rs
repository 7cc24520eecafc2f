//! Space sharing (Gavel §3.1): pairs of jobs that run together on the same GPUs, each at its
//! colocated throughput. Which offered pairs the formulations keep, and in which units.
//!
//! A pair `k = (a, b)` on type `w` gives each job a fraction of its solo speed there:
//! `p_a = T_k[a][w] / T[a][w]` and `p_b = T_k[b][w] / T[b][w]` (measured throughputs). When
//! `p_a + p_b ≤ 1` the pair is dominated: running `a` alone for `p_a·y` and `b` alone for `p_b·y`
//! gives both the same steps with no more GPU time and no more of either job's time. Such
//! (pair, type) columns are pruned; with the default threshold 1 this loses nothing, a higher
//! threshold trades optimality for a smaller program. See `formulations/space_sharing.md`.

use crate::problem::Problem;

/// Pairs whose combined normalized throughput does not exceed this are pruned by default.
pub const DEFAULT_THRESHOLD: f64 = 1.0;

/// A kept pair as the formulations see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// Index into `Problem::colocations` (the row of `Outcome::colocated`).
    pub colocation: usize,
    pub jobs: [usize; 2],
    pub scale_factor: u32,
    /// `throughput[w]`: each job's throughput while paired on `w`, in the policy's units (the
    /// measured steps/s, or the fraction of solo speed when heterogeneity-agnostic, where solo is
    /// 1); `[0, 0]` where the pair is pruned or cannot run.
    pub throughput: Vec<[f64; 2]>,
}

impl Pair {
    /// The types where the pair may run.
    pub fn types(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.throughput.len()).filter(|&w| self.throughput[w] != [0.0, 0.0])
    }

    /// Job `m`'s throughput in this pair on `w` (0 if `m` is not in it).
    pub fn throughput_of(&self, m: usize, w: usize) -> f64 {
        if self.jobs[0] == m {
            self.throughput[w][0]
        } else if self.jobs[1] == m {
            self.throughput[w][1]
        } else {
            0.0
        }
    }
}

/// Adds to each job's throughput `thr` what its pairs' time gives it:
/// `Σ_{k∋m} Σ_w T_k[m][w]·Y[k][w]`, `pair_time[k]` aligned with `pairs`.
pub fn add_pair_throughput(thr: &mut [f64], pairs: &[Pair], pair_time: &[Vec<f64>]) {
    for (pair, time) in pairs.iter().zip(pair_time) {
        for (w, &y) in time.iter().enumerate() {
            thr[pair.jobs[0]] += pair.throughput[w][0] * y;
            thr[pair.jobs[1]] += pair.throughput[w][1] * y;
        }
    }
}

/// Job `a`'s and job `b`'s throughput in colocation `k` on type `w`, in the policy's units, when
/// that (pair, type) is kept: both jobs can run on `w` alone, the type has GPUs, and
/// `p_a + p_b > threshold`. `None` where it is pruned.
fn kept_on(problem: &Problem, k: usize, w: usize) -> Option<[f64; 2]> {
    let colocation = &problem.colocations[k];
    let [a, b] = colocation.jobs;
    let (solo_a, solo_b) = (problem.measured.get(a, w), problem.measured.get(b, w));
    let [pa, pb] = colocation.throughput[w];
    let usable = solo_a > 0.0 && solo_b > 0.0 && problem.worker_types[w].count > 0.0;
    if !usable || pa / solo_a + pb / solo_b <= problem.colocation_threshold {
        return None;
    }
    Some(if problem.heterogeneity_aware {
        [pa, pb]
    } else {
        [pa / solo_a * problem.throughput.get(a, w), pb / solo_b * problem.throughput.get(b, w)]
    })
}

/// The problem's offered colocations with every dominated or unusable (pair, type) dropped, and
/// the pairs left with no type at all. Empty unless `space_sharing` is on.
pub fn kept_pairs(problem: &Problem) -> Vec<Pair> {
    if !problem.space_sharing {
        return Vec::new();
    }
    (0..problem.colocations.len())
        .filter_map(|k| {
            let throughput: Vec<[f64; 2]> =
                (0..problem.num_types()).map(|w| kept_on(problem, k, w).unwrap_or([0.0, 0.0])).collect();
            let jobs = problem.colocations[k].jobs;
            let pair = Pair { colocation: k, jobs, scale_factor: problem.jobs[jobs[0]].scale_factor, throughput };
            let runs_somewhere = pair.types().next().is_some();
            runs_somewhere.then_some(pair)
        })
        .collect()
}

/// How many pairs `kept_pairs` keeps, without building them.
pub fn count_kept(problem: &Problem) -> usize {
    if !problem.space_sharing {
        return 0;
    }
    (0..problem.colocations.len())
        .filter(|&k| (0..problem.num_types()).any(|w| kept_on(problem, k, w).is_some()))
        .count()
}
