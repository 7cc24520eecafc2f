//! Gandiva, the space-sharing baseline Gavel compares against: when the jobs ask for more GPUs
//! than the cluster has, pair jobs at random and split time equally over the resulting
//! combinations, heterogeneity-agnostic. See `formulations/gandiva.md`.
//!
//! Gavel keeps its pairs between calls; a policy here sees one request, so the random pairing is
//! drawn from a hash of the pair's job ids. A pair then stays chosen for as long as both jobs are
//! present and no pair that ranks before it claims one of them.

use super::{Outcome, Policy};
use crate::error::Result;
use crate::lp::Backend;
use crate::problem::{Matrix, Problem};

pub struct Gandiva;

impl Policy for Gandiva {
    fn solve(&self, problem: &Problem, _backend: Backend) -> Result<Outcome> {
        let pairs = if oversubscribed(problem) { random_pairs(problem) } else { Vec::new() };
        let (allocation, colocated) = equal_time_shares(problem, &pairs);
        Ok(Outcome {
            allocation,
            objective: None,
            lp_solves: 0,
            water_filling: None,
            method: None,
            colocated,
            unconsolidated: Matrix::zeros(0, 0),
        })
    }
}

/// `Σ_m sf_m > Σ_w count_w`: only then does Gandiva pack.
fn oversubscribed(problem: &Problem) -> bool {
    let requested: f64 = problem.jobs.iter().map(|j| j.scale_factor as f64).sum();
    requested > problem.total_gpus()
}

/// Gavel's test that packing a pair helps: on every type with GPUs both jobs make progress while
/// paired, and the pair's normalized throughput `Σ_w (T_k[a][w]/T[a][w] + T_k[b][w]/T[b][w])`,
/// summed over types as Gavel sums it, is at least 1. Solo throughputs are the measured ones
/// (the allocation is type-blind, the packing test is not); a type where a job cannot run alone
/// adds nothing to the sum.
fn packing_helps(problem: &Problem, k: usize) -> bool {
    let colocation = &problem.colocations[k];
    let [a, b] = colocation.jobs;
    let mut normalized = 0.0;
    for (w, worker_type) in problem.worker_types.iter().enumerate() {
        if worker_type.count <= 0.0 {
            continue;
        }
        let paired = colocation.throughput[w];
        if paired[0] <= 0.0 || paired[1] <= 0.0 {
            return false;
        }
        for (i, m) in [a, b].into_iter().enumerate() {
            let solo = problem.measured.get(m, w);
            if solo > 0.0 {
                normalized += paired[i] / solo;
            }
        }
    }
    normalized >= 1.0
}

/// A random maximal matching over the offered pairs that help: pairs are taken in the order of a
/// pseudo-random key of their two job ids, each when neither job is paired yet. Returns indices
/// into `Problem::colocations`, in the order taken.
fn random_pairs(problem: &Problem) -> Vec<usize> {
    let mut candidates: Vec<(u64, usize)> = (0..problem.colocations.len())
        .filter(|&k| packing_helps(problem, k))
        .map(|k| {
            let [a, b] = problem.colocations[k].jobs;
            (pair_key(&problem.jobs[a].id, &problem.jobs[b].id), k)
        })
        .collect();
    candidates.sort_unstable();
    let mut paired = vec![false; problem.num_jobs()];
    let mut chosen = Vec::new();
    for (_, k) in candidates {
        let [a, b] = problem.colocations[k].jobs;
        if !paired[a] && !paired[b] {
            paired[a] = true;
            paired[b] = true;
            chosen.push(k);
        }
    }
    chosen
}

/// Every combination (a chosen pair, or a job not in one) gets `count_w / C` of every type's
/// GPU-time, divided by its scale factor, its row scaled down to sum to at most 1 (`C`: number of
/// combinations). Returns `X` (singles) and `Y` (one row per offered colocation).
fn equal_time_shares(problem: &Problem, pairs: &[usize]) -> (Matrix, Matrix) {
    let types = problem.num_types();
    let mut allocation = Matrix::zeros(problem.num_jobs(), types);
    let mut colocated = Matrix::zeros(problem.colocations.len(), types);
    let mut in_pair = vec![false; problem.num_jobs()];
    for &k in pairs {
        for m in problem.colocations[k].jobs {
            in_pair[m] = true;
        }
    }
    let combinations = pairs.len() + in_pair.iter().filter(|&&p| !p).count();
    let share = |scale_factor: u32, row: &mut [f64]| {
        for (w, worker_type) in problem.worker_types.iter().enumerate() {
            row[w] = worker_type.count / combinations as f64 / scale_factor as f64;
        }
        let sum: f64 = row.iter().sum();
        if sum > 1.0 {
            row.iter_mut().for_each(|v| *v /= sum);
        }
    };
    for (m, job) in problem.jobs.iter().enumerate() {
        if !in_pair[m] {
            share(job.scale_factor, allocation.row_mut(m));
        }
    }
    for &k in pairs {
        let scale_factor = problem.jobs[problem.colocations[k].jobs[0]].scale_factor;
        share(scale_factor, colocated.row_mut(k));
    }
    (allocation, colocated)
}

/// A 64-bit key of an unordered pair of job ids: FNV-1a over both ids (sorted, separated by a
/// byte no UTF-8 text contains), then the SplitMix64 finalizer so nearby ids spread out.
fn pair_key(a: &str, b: &str) -> u64 {
    let (first, second) = if a <= b { (a, b) } else { (b, a) };
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in first.bytes().chain(std::iter::once(0xff)).chain(second.bytes()) {
        hash ^= byte as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

#[cfg(test)]
mod tests {
    use super::pair_key;

    #[test]
    fn pair_key_is_symmetric_and_separates_ids() {
        assert_eq!(pair_key("a", "b"), pair_key("b", "a"));
        assert_ne!(pair_key("ab", "c"), pair_key("a", "bc"));
    }
}
