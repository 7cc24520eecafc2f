//! AlloX, the completion-time baseline Gavel compares against: a min-cost bipartite matching of
//! jobs to (GPU, position) slots on expected completion time; each GPU runs the job at the head
//! of its queue for the whole allocation. See `formulations/allox.md`.
//!
//! Gavel's AlloX keeps a job on the GPU it was first given; a policy here sees one request, so
//! every request re-solves the whole matching (running jobs, having fewer steps left, tend to
//! keep the head of a queue by themselves).

use super::{Outcome, Policy};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::problem::{Matrix, Problem};

pub struct Allox;

impl Policy for Allox {
    fn solve(&self, problem: &Problem, _backend: Backend) -> Result<Outcome> {
        for (m, job) in problem.jobs.iter().enumerate() {
            if job.scale_factor != 1 {
                return Err(ArbiterError::at(
                    ErrorCode::Unsupported,
                    format!("jobs[{m}].scale_factor"),
                    format!(
                        "allox gives each job one GPU (as AlloX and Gavel do); job {:?} has scale factor {}",
                        job.id, job.scale_factor
                    ),
                ));
            }
        }
        let processing = processing_times(problem);
        if let Some(m) = processing.iter().position(|row| row.iter().all(|p| !p.is_finite())) {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                format!("jobs[{m}].steps_remaining"),
                format!(
                    "job {:?} would need more than f64::MAX seconds on every type with GPUs (steps_remaining / throughput)",
                    problem.jobs[m].id
                ),
            ));
        }
        let slots = slots(problem);
        let cost: Vec<Vec<f64>> = (0..problem.num_jobs())
            .map(|m| slots.iter().map(|s| s.position as f64 * processing[m][s.worker_type]).collect())
            .collect();
        let capacity: Vec<usize> = slots.iter().map(|s| s.gpus).collect();
        let assignment = min_cost_assignment(&cost, &capacity).ok_or_else(|| {
            ArbiterError::new(ErrorCode::SolverFailed, "allox: no assignment of every job to a GPU slot exists")
        })?;
        let total: f64 = assignment.iter().enumerate().map(|(m, &s)| cost[m][s]).sum();
        let allocation = heads_of_queues(problem, &processing, |m| slots[assignment[m]].worker_type);
        Ok(Outcome::of(allocation, Some(total), 0))
    }
}

/// `p[m][w] = r_m / T[m][w]`: seconds job m needs alone on one GPU of type w; `∞` where it cannot
/// run there or the type has no GPUs.
fn processing_times(problem: &Problem) -> Vec<Vec<f64>> {
    (0..problem.num_jobs())
        .map(|m| {
            (0..problem.num_types())
                .map(|w| {
                    let throughput = problem.throughput.get(m, w);
                    if throughput > 0.0 && problem.worker_types[w].count >= 1.0 {
                        problem.steps_remaining(m) / throughput
                    } else {
                        f64::INFINITY
                    }
                })
                .collect()
        })
        .collect()
}

/// A class of slots: position `position` from the end of the queue (1: runs last) on each of the
/// `gpus` GPUs of `worker_type`. A job in such a slot adds `position · p` to the total completion
/// time: its own completion and that of every job queued behind it wait for it.
#[derive(Debug, Clone, Copy)]
struct Slots {
    worker_type: usize,
    position: usize,
    gpus: usize,
}

/// Every type's positions `1..=⌈M / count_w⌉`, each with `count_w` slots (the GPUs of a type are
/// interchangeable): enough for all `M` jobs to queue on one type.
fn slots(problem: &Problem) -> Vec<Slots> {
    let jobs = problem.num_jobs();
    let mut out = Vec::new();
    for (w, worker_type) in problem.worker_types.iter().enumerate() {
        let gpus = worker_type.count as usize;
        if gpus == 0 {
            continue;
        }
        out.extend((1..=jobs.div_ceil(gpus)).map(|position| Slots { worker_type: w, position, gpus }));
    }
    out
}

/// `X[m][w] = 1` for the jobs at the heads of the queues. On `count_w` identical GPUs the jobs a
/// matching sends to type `w` complete soonest in total shortest-first, dealt round robin, so
/// the `count_w` shortest of them run now.
fn heads_of_queues(problem: &Problem, processing: &[Vec<f64>], type_of: impl Fn(usize) -> usize) -> Matrix {
    let mut allocation = Matrix::zeros(problem.num_jobs(), problem.num_types());
    for (w, worker_type) in problem.worker_types.iter().enumerate() {
        let mut queue: Vec<usize> = (0..problem.num_jobs()).filter(|&m| type_of(m) == w).collect();
        queue.sort_by(|&a, &b| processing[a][w].total_cmp(&processing[b][w]).then(a.cmp(&b)));
        for &m in queue.iter().take(worker_type.count as usize) {
            allocation.set(m, w, 1.0);
        }
    }
    allocation
}

/// Minimum-cost assignment of every row to a column, column `c` taking at most `capacity[c]`
/// rows: the Hungarian method's shortest augmenting paths with potentials, over columns that
/// each stand for `capacity[c]` identical slots. `O(rows · columns · (rows + columns))`; costs
/// must be `≥ 0`, `∞` marks a forbidden pair. Returns the column of each row, or `None` when
/// every assignment uses a forbidden pair.
fn min_cost_assignment(cost: &[Vec<f64>], capacity: &[usize]) -> Option<Vec<usize>> {
    let (rows, columns) = (cost.len(), capacity.len());
    // Reduced cost `cost[i][c] − u[i] − v[c]` stays ≥ 0, and 0 on every assigned pair.
    let mut u = vec![0.0; rows];
    let mut v = vec![0.0; columns];
    let mut column_of: Vec<Option<usize>> = vec![None; rows];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); columns];
    let reduced = |u: &[f64], v: &[f64], i: usize, c: usize| cost[i][c] - u[i] - v[c];
    for new_row in 0..rows {
        // Dijkstra from the new row: to a column by its reduced cost, from a full column back to
        // any of its rows at no cost. `through[c]`: the row a column was last reached from.
        let mut to_column: Vec<f64> = (0..columns).map(|c| reduced(&u, &v, new_row, c)).collect();
        let mut through = vec![new_row; columns];
        let mut column_done = vec![false; columns];
        let mut to_row: Vec<Option<f64>> = vec![None; rows];
        to_row[new_row] = Some(0.0);
        let end = loop {
            let next = (0..columns)
                .filter(|&c| !column_done[c])
                .min_by(|&a, &b| to_column[a].total_cmp(&to_column[b]).then(a.cmp(&b)))?;
            if !to_column[next].is_finite() {
                return None;
            }
            if members[next].len() < capacity[next] {
                break next;
            }
            column_done[next] = true;
            for &i in &members[next] {
                if to_row[i].is_some() {
                    continue;
                }
                to_row[i] = Some(to_column[next]);
                for c in (0..columns).filter(|&c| !column_done[c]) {
                    let d = to_column[next] + reduced(&u, &v, i, c);
                    if d < to_column[c] {
                        to_column[c] = d;
                        through[c] = i;
                    }
                }
            }
        };
        let length = to_column[end];
        for (i, d) in to_row.iter().enumerate() {
            if let Some(d) = d {
                u[i] += length - d;
            }
        }
        for c in 0..columns {
            if to_column[c] < length {
                v[c] -= length - to_column[c];
            }
        }
        // Shift along the path: each row on it moves to the column it reached.
        let mut column = end;
        loop {
            let row = through[column];
            let previous = column_of[row];
            if let Some(p) = previous {
                members[p].retain(|&r| r != row);
            }
            members[column].push(row);
            column_of[row] = Some(column);
            match previous {
                Some(p) if row != new_row => column = p,
                _ => break,
            }
        }
    }
    column_of.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::min_cost_assignment;

    /// The cheapest assignment by trying every one, with columns expanded into unit slots.
    fn brute_force(cost: &[Vec<f64>], capacity: &[usize]) -> f64 {
        fn go(cost: &[Vec<f64>], row: usize, left: &mut Vec<usize>) -> f64 {
            if row == cost.len() {
                return 0.0;
            }
            let mut best = f64::INFINITY;
            for c in 0..left.len() {
                if left[c] > 0 {
                    left[c] -= 1;
                    best = best.min(cost[row][c] + go(cost, row + 1, left));
                    left[c] += 1;
                }
            }
            best
        }
        go(cost, 0, &mut capacity.to_vec())
    }

    #[test]
    fn matches_brute_force_on_small_instances() {
        let mut state: u64 = 7;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as f64 / (1u64 << 31) as f64
        };
        for rows in 1..=5 {
            for columns in 1..=5 {
                for _ in 0..20 {
                    let capacity: Vec<usize> = (0..columns).map(|_| (next() * 3.0) as usize).collect();
                    let cost: Vec<Vec<f64>> = (0..rows)
                        .map(|_| {
                            (0..columns)
                                .map(|_| if next() < 0.15 { f64::INFINITY } else { (next() * 10.0).round() })
                                .collect()
                        })
                        .collect();
                    let want = brute_force(&cost, &capacity);
                    match min_cost_assignment(&cost, &capacity) {
                        Some(assign) => {
                            for (c, &cap) in capacity.iter().enumerate() {
                                assert!(assign.iter().filter(|&&a| a == c).count() <= cap, "column {c} over capacity");
                            }
                            let got: f64 = assign.iter().enumerate().map(|(i, &c)| cost[i][c]).sum();
                            assert_eq!(got, want, "{cost:?} {capacity:?}");
                        }
                        None => assert!(want.is_infinite(), "{cost:?} {capacity:?}: missed cost {want}"),
                    }
                }
            }
        }
    }
}
