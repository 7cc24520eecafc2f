//! POP (Narayanan et al., SOSP 2021): split the jobs and every type's GPUs into `k` random,
//! equal sub-problems (stratified: each part gets the same mix of job kinds), solve them in parallel, and put the allocations side by side. Each
//! sub-problem is the same policy on `1/k` of every type's GPUs (so `X_equal`, and with it every
//! normalized throughput, is unchanged) and on its own jobs with the pairs among them; the merged
//! allocation is feasible for the whole cluster because the parts' capacities add up to it.
//! It is an approximation: jobs cannot use GPUs of other parts, and pairs across parts are lost.
//! See `formulations/partitioning.md`.

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::policies::{self, Outcome, PolicyKind, WaterFillingReport};
use crate::problem::{Colocation, Matrix, Problem, WorkerType};
use crate::response::Partitioning;
use crate::workload::generator::Rng;
use rayon::prelude::*;
use std::time::Instant;

/// Automatic partitioning starts when the kept pairs exceed this many per part; `k` is the
/// smallest power of two that brings the pairs left in each part (about `P / k²`) under it.
pub const PAIRS_PER_PART: usize = 16_384;
/// Automatic partitioning never makes parts smaller than this many jobs.
pub const MIN_JOBS_PER_PART: usize = 64;

/// Policies whose objective over the whole cluster follows from the parts' objectives (a
/// minimum, a maximum or a sum over jobs).
pub fn supports(policy: PolicyKind) -> bool {
    policy.supports_space_sharing()
}

/// The partitioning to use: the request's `partitions`, or an automatic choice when space sharing
/// keeps more pairs (`kept_pairs`, from `space_sharing::count_kept`) than one part should hold.
/// `None`: solve whole.
pub fn plan(problem: &Problem, kept_pairs: usize) -> Result<Option<(usize, &'static str)>> {
    match problem.partitions {
        Some(1) => Ok(None),
        Some(k) => {
            if !supports(problem.policy) {
                return Err(ArbiterError::at(
                    ErrorCode::Unsupported,
                    "partitions",
                    format!("{} cannot be partitioned; send partitions: 1", problem.policy.name()),
                ));
            }
            Ok(Some((k.min(problem.num_jobs().max(1)), "requested")))
        }
        None => {
            if !supports(problem.policy) || !problem.space_sharing {
                return Ok(None);
            }
            let mut k = 1;
            while kept_pairs / (k * k) > PAIRS_PER_PART && problem.num_jobs() / (2 * k) >= MIN_JOBS_PER_PART {
                k *= 2;
            }
            Ok((k > 1).then_some((k, "automatic")))
        }
    }
}

/// A seeded Fisher–Yates shuffle of `0..n`, so a request always splits the same way.
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i + 1));
    }
    order
}

/// The sub-problem on `jobs` (original indices) with `1/k` of every type's GPUs and the
/// colocations `inside` (indices into `problem.colocations`, both jobs among `jobs`).
fn part(problem: &Problem, jobs: &[usize], inside: &[usize], k: usize) -> (Problem, Vec<usize>) {
    let mut local = vec![usize::MAX; problem.num_jobs()];
    jobs.iter().enumerate().for_each(|(i, &m)| local[m] = i);
    let rows = |matrix: &Matrix| {
        let mut sub = Matrix::zeros(jobs.len(), problem.num_types());
        for (i, &m) in jobs.iter().enumerate() {
            for w in 0..problem.num_types() {
                sub.set(i, w, matrix.get(m, w));
            }
        }
        sub
    };
    let colocations = inside
        .iter()
        .map(|&c| {
            let colocation = &problem.colocations[c];
            Colocation { jobs: colocation.jobs.map(|m| local[m]), throughput: colocation.throughput.clone() }
        })
        .collect();
    let colocation_index = inside.to_vec();
    let worker_types =
        problem.worker_types.iter().map(|w| WorkerType { count: w.count / k as f64, ..w.clone() }).collect();
    let sub = Problem {
        worker_types,
        jobs: jobs.iter().map(|&m| problem.jobs[m].clone()).collect(),
        measured: rows(&problem.measured),
        throughput: rows(&problem.throughput),
        colocations,
        unconsolidated: problem.unconsolidated.as_ref().map(rows),
        partitions: Some(1),
        job_entity: if problem.job_entity.is_empty() {
            Vec::new()
        } else {
            jobs.iter().map(|&m| problem.job_entity[m]).collect()
        },
        ..problem.clone_without_jobs()
    };
    (sub, colocation_index)
}

/// Solves `problem` as `k` parts in parallel and merges them. The whole-cluster objective is the
/// parts' minimum (max-min policies), maximum (makespan, finish-time fairness) or sum (total
/// throughput).
pub fn solve(problem: &Problem, backend: Backend, k: usize, chosen: &str) -> Result<(Outcome, Partitioning)> {
    let n = problem.num_jobs();
    // Stratified: jobs alike (scale factor, weight, throughput row) sit next to each other, in a
    // random order among themselves, so dealing round-robin gives every part the same mix.
    let mut order = shuffled(n, 0x504f_5021 ^ n as u64);
    let key = |m: usize| {
        let job = &problem.jobs[m];
        let row: Vec<u64> = problem.throughput.row(m).iter().map(|v| v.to_bits()).collect();
        (job.scale_factor, job.weight.to_bits(), row)
    };
    order.sort_by_cached_key(|&m| key(m));
    let groups: Vec<Vec<usize>> = (0..k)
        .map(|p| {
            let mut jobs: Vec<usize> = order.iter().copied().skip(p).step_by(k).collect();
            jobs.sort_unstable();
            jobs
        })
        .filter(|jobs| !jobs.is_empty())
        .collect();
    // Each colocation goes to the part holding both its jobs, if one does (one pass over them).
    let mut part_of = vec![0; n];
    for (p, jobs) in groups.iter().enumerate() {
        jobs.iter().for_each(|&m| part_of[m] = p);
    }
    let mut inside: Vec<Vec<usize>> = vec![Vec::new(); groups.len()];
    for (c, colocation) in problem.colocations.iter().enumerate() {
        let [a, b] = colocation.jobs;
        if part_of[a] == part_of[b] {
            inside[part_of[a]].push(c);
        }
    }
    let solved: Vec<(Outcome, Vec<usize>, f64)> = groups
        .par_iter()
        .zip(&inside)
        .map(|(jobs, inside)| {
            let start = Instant::now();
            let (sub, colocation_index) = part(problem, jobs, inside, k);
            let outcome = policies::solve(&sub, backend)?;
            Ok((outcome, colocation_index, start.elapsed().as_secs_f64()))
        })
        .collect::<Result<_>>()?;

    let mut allocation = Matrix::zeros(n, problem.num_types());
    let mut colocated = if problem.space_sharing {
        Matrix::zeros(problem.colocations.len(), problem.num_types())
    } else {
        Matrix::zeros(0, 0)
    };
    let mut unconsolidated = match problem.unconsolidated {
        Some(_) => Matrix::zeros(n, problem.num_types()),
        None => Matrix::zeros(0, 0),
    };
    let mut lp_solves = 0;
    let mut report = WaterFillingReport {
        normalized_throughput: vec![0.0; n],
        level: vec![f64::NAN; n],
        frozen_at: vec![0; n],
        iterations: 0,
    };
    let mut has_report = false;
    let mut objectives = Vec::new();
    for ((outcome, colocation_index, _), jobs) in solved.iter().zip(&groups) {
        for (i, &m) in jobs.iter().enumerate() {
            for w in 0..problem.num_types() {
                allocation.set(m, w, outcome.allocation.get(i, w));
            }
        }
        if outcome.unconsolidated.rows() > 0 {
            for (i, &m) in jobs.iter().enumerate() {
                for w in 0..problem.num_types() {
                    unconsolidated.set(m, w, outcome.unconsolidated.get(i, w));
                }
            }
        }
        for (local, &c) in colocation_index.iter().enumerate().take(outcome.colocated.rows()) {
            for w in 0..problem.num_types() {
                colocated.set(c, w, outcome.colocated.get(local, w));
            }
        }
        if let Some(part_report) = &outcome.water_filling {
            has_report = true;
            for (i, &m) in jobs.iter().enumerate() {
                report.normalized_throughput[m] = part_report.normalized_throughput[i];
                report.level[m] = part_report.level[i];
                report.frozen_at[m] = part_report.frozen_at[i];
            }
            report.iterations = report.iterations.max(part_report.iterations);
        }
        lp_solves += outcome.lp_solves;
        objectives.extend(outcome.objective);
    }
    let objective = match problem.policy {
        PolicyKind::MinMakespan | PolicyKind::FinishTimeFairness => objectives.iter().copied().reduce(f64::max),
        PolicyKind::MaxSumThroughput => Some(objectives.iter().sum()),
        _ => objectives.iter().copied().reduce(f64::min),
    };
    let partitioning = Partitioning {
        partitions: groups.len(),
        chosen: chosen.to_string(),
        jobs: groups.iter().map(Vec::len).collect(),
        slowest_seconds: solved.iter().map(|s| s.2).fold(0.0, f64::max),
    };
    let outcome = Outcome {
        allocation,
        objective,
        lp_solves,
        water_filling: has_report.then_some(report),
        method: None,
        colocated,
        unconsolidated,
    };
    Ok((outcome, partitioning))
}
