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
        let slots = slots(problem);
        let cost: Vec<Vec<f64>> = (0..problem.num_jobs())
            .map(|m| slots.iter().map(|s| s.position as f64 * processing[m][s.worker_type]).collect())
            .collect();
        let assignment = min_cost_assignment(&cost, slots.len()).ok_or_else(|| {
            ArbiterError::new(ErrorCode::SolverFailed, "allox: no assignment of every job to a GPU slot exists")
        })?;
        let total: f64 = assignment.iter().enumerate().map(|(m, &s)| cost[m][s]).sum();
        let allocation = heads_of_queues(problem, &processing, |m| slots[assignment[m]].worker_type);
        Ok(Outcome {
            allocation,
            objective: Some(total),
            lp_solves: 0,
            water_filling: None,
            colocated: Matrix::zeros(0, 0),
        })
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

/// A slot: some GPU of `worker_type`, `position` places from the end of its queue (1: runs
/// last). A job in it adds `position · p` to the total completion time: its own completion and
/// that of every job queued behind it wait for it.
#[derive(Debug, Clone, Copy)]
struct Slot {
    worker_type: usize,
    position: usize,
}

/// Slots in order of position, `count_w` per position (the GPUs of a type are interchangeable),
/// `M` per type: enough for every job to queue on one type.
fn slots(problem: &Problem) -> Vec<Slot> {
    let jobs = problem.num_jobs();
    let mut out = Vec::new();
    for (w, worker_type) in problem.worker_types.iter().enumerate() {
        let gpus = worker_type.count as usize;
        if gpus == 0 {
            continue;
        }
        out.extend((0..jobs).map(|i| Slot { worker_type: w, position: i / gpus + 1 }));
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

/// Minimum-cost assignment of every row to a distinct column (rows ≤ columns), by shortest
/// augmenting paths with potentials (the Hungarian method, `O(rows² · columns)`). `∞` marks a
/// forbidden pair. Returns the column of each row, or `None` when no assignment avoids `∞`.
fn min_cost_assignment(cost: &[Vec<f64>], columns: usize) -> Option<Vec<usize>> {
    let rows = cost.len();
    if rows > columns {
        return None;
    }
    // Index 0 is a virtual column/row that anchors each augmenting path.
    let mut u = vec![0.0; rows + 1];
    let mut v = vec![0.0; columns + 1];
    let mut row_of = vec![0usize; columns + 1];
    let mut way = vec![0usize; columns + 1];
    for i in 1..=rows {
        row_of[0] = i;
        let mut j0 = 0;
        let mut min_reduced = vec![f64::INFINITY; columns + 1];
        let mut used = vec![false; columns + 1];
        loop {
            used[j0] = true;
            let i0 = row_of[j0];
            let mut delta = f64::INFINITY;
            let mut j1 = 0;
            for j in 1..=columns {
                if used[j] {
                    continue;
                }
                let reduced = cost[i0 - 1][j - 1] - u[i0] - v[j];
                if reduced < min_reduced[j] {
                    min_reduced[j] = reduced;
                    way[j] = j0;
                }
                if min_reduced[j] < delta {
                    delta = min_reduced[j];
                    j1 = j;
                }
            }
            if !delta.is_finite() {
                return None;
            }
            for j in 0..=columns {
                if used[j] {
                    u[row_of[j]] += delta;
                    v[j] -= delta;
                } else {
                    min_reduced[j] -= delta;
                }
            }
            j0 = j1;
            if row_of[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            row_of[j0] = row_of[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut column_of = vec![0usize; rows];
    for j in 1..=columns {
        if row_of[j] > 0 {
            column_of[row_of[j] - 1] = j - 1;
        }
    }
    Some(column_of)
}

#[cfg(test)]
mod tests {
    use super::min_cost_assignment;

    fn brute_force(cost: &[Vec<f64>], columns: usize) -> f64 {
        fn go(cost: &[Vec<f64>], row: usize, taken: &mut Vec<bool>) -> f64 {
            if row == cost.len() {
                return 0.0;
            }
            let mut best = f64::INFINITY;
            for j in 0..taken.len() {
                if !taken[j] {
                    taken[j] = true;
                    best = best.min(cost[row][j] + go(cost, row + 1, taken));
                    taken[j] = false;
                }
            }
            best
        }
        go(cost, 0, &mut vec![false; columns])
    }

    #[test]
    fn matches_brute_force_on_small_rectangular_instances() {
        let mut state: u64 = 7;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as f64 / (1u64 << 31) as f64
        };
        for rows in 1..=4 {
            for columns in rows..=6 {
                let cost: Vec<Vec<f64>> = (0..rows)
                    .map(|_| {
                        (0..columns)
                            .map(|_| if next() < 0.15 { f64::INFINITY } else { (next() * 10.0).round() })
                            .collect()
                    })
                    .collect();
                let want = brute_force(&cost, columns);
                match min_cost_assignment(&cost, columns) {
                    Some(assign) => {
                        let mut seen = vec![false; columns];
                        for &j in &assign {
                            assert!(!seen[j], "column {j} used twice");
                            seen[j] = true;
                        }
                        let got: f64 = assign.iter().enumerate().map(|(i, &j)| cost[i][j]).sum();
                        assert_eq!(got, want, "{cost:?}");
                    }
                    None => assert!(want.is_infinite(), "{cost:?}: missed an assignment of cost {want}"),
                }
            }
        }
    }
}
