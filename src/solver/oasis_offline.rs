//! The offline optimum of OASiS's problem (the paper's (1)) as a MILP on HiGHS, for instances
//! small enough to solve exactly (tens of jobs, a few servers and slots): every job's arrival
//! known, the utility of the admitted jobs maximized. The yardstick for OASiS's performance
//! ratio; not an online scheduler. See `formulations/oasis.md`.

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::{Backend, LinearProgram, Row, Sense};
use crate::scheduling::oasis::resources::RESOURCE_TYPES;
use crate::scheduling::oasis::{ClusterSpec, Job};
use serde::Serialize;

/// The optimum: its total utility and each admitted job's completion slot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OfflineOptimum {
    pub total_utility: f64,
    /// `(index in jobs, completion slot)`.
    pub admitted: Vec<(usize, usize)>,
    /// Integer columns of the model.
    pub columns: usize,
    pub rows: usize,
}

/// Column indices of one job.
struct JobCols {
    /// `z[t − a]`: the job completes in slot `t`.
    z: Vec<usize>,
    /// `y[(t − a) * H + h]`, `s[(t − a) * K + k]`.
    y: Vec<usize>,
    s: Vec<usize>,
}

/// Maximizes `Σ_i Σ_t f_i(t − a_i + 1) z_it` subject to (2)–(7) with `t_i` the slot where
/// `z_it = 1` and no workers after it (`formulations/oasis.md`, "Offline optimum").
pub fn solve(cluster: &ClusterSpec, jobs: &[Job], backend: Backend) -> Result<OfflineOptimum> {
    cluster.validate()?;
    let (slots, h_count, k_count) = (cluster.slots, cluster.worker_servers.len(), cluster.ps_servers.len());
    let worker_caps: Vec<[u32; RESOURCE_TYPES]> = cluster.worker_servers.iter().map(|s| s.amounts()).collect();
    let ps_caps: Vec<[u32; RESOURCE_TYPES]> = cluster.ps_servers.iter().map(|s| s.amounts()).collect();
    let mut lp = LinearProgram::new(Sense::Maximize);
    let mut cols = Vec::with_capacity(jobs.len());
    for job in jobs {
        let a = job.spec.arrival_slot;
        if a >= slots {
            return Err(ArbiterError::new(
                ErrorCode::InvalidNumber,
                format!("job {:?} arrives past the horizon", job.spec.id),
            ));
        }
        let n = job.spec.chunks as f64;
        let mut c = JobCols { z: Vec::new(), y: Vec::new(), s: Vec::new() };
        for t in a..slots {
            c.z.push(lp.add_col(job.utility_ending_at(t), 0.0, 1.0));
            for cap in &worker_caps {
                let fit = job.spec.worker.copies_in(cap) as f64;
                c.y.push(lp.add_col(0.0, 0.0, fit.min(n)));
            }
            for cap in &ps_caps {
                let fit = job.spec.parameter_server.copies_in(cap) as f64;
                c.s.push(lp.add_col(0.0, 0.0, fit.min(n)));
            }
        }
        let span = slots - a;
        lp.add_row(Row::at_most(1.0, c.z.iter().map(|&z| (z, 1.0)).collect()));
        // (2): K_i worker-slots if admitted.
        let mut trained: Vec<(usize, f64)> = c.y.iter().map(|&y| (y, 1.0)).collect();
        trained.extend(c.z.iter().map(|&z| (z, -(job.worker_slots as f64))));
        lp.add_row(Row::at_least(0.0, trained));
        let (b, big_b) = (job.spec.worker.bandwidth_mbps as f64, job.spec.parameter_server.bandwidth_mbps as f64);
        for s in 0..span {
            let workers: Vec<(usize, f64)> = (0..h_count).map(|h| (c.y[s * h_count + h], 1.0)).collect();
            let servers: Vec<(usize, f64)> = (0..k_count).map(|k| (c.s[s * k_count + k], 1.0)).collect();
            // (3) and (8): at most N_i workers, and none after the completion slot.
            let mut active = workers.clone();
            active.extend(c.z[s..].iter().map(|&z| (z, -n)));
            lp.add_row(Row::at_most(0.0, active));
            // (6): B_i Σ s ≥ b_i Σ y.
            let mut bandwidth: Vec<(usize, f64)> = servers.iter().map(|&(col, _)| (col, big_b)).collect();
            bandwidth.extend(workers.iter().map(|&(col, _)| (col, -b)));
            lp.add_row(Row::at_least(0.0, bandwidth));
            // (7): Σ s ≤ Σ y.
            let mut fewer: Vec<(usize, f64)> = servers.clone();
            fewer.extend(workers.iter().map(|&(col, _)| (col, -1.0)));
            lp.add_row(Row::at_most(0.0, fewer));
        }
        cols.push(c);
    }
    // (4), (5): capacities per slot, server and resource.
    for t in 0..slots {
        for (pool, caps, count) in [(0, &worker_caps, h_count), (1, &ps_caps, k_count)] {
            for (server, cap) in caps.iter().enumerate() {
                for (r, &capacity) in cap.iter().enumerate() {
                    let mut coefs = Vec::new();
                    for (job, c) in jobs.iter().zip(&cols) {
                        let a = job.spec.arrival_slot;
                        if t < a {
                            continue;
                        }
                        let (demand, col) = if pool == 0 {
                            (job.spec.worker.amounts()[r], c.y[(t - a) * count + server])
                        } else {
                            (job.spec.parameter_server.amounts()[r], c.s[(t - a) * count + server])
                        };
                        if demand > 0 {
                            coefs.push((col, demand as f64));
                        }
                    }
                    if !coefs.is_empty() {
                        lp.add_row(Row::at_most(capacity as f64, coefs));
                    }
                }
            }
        }
    }
    let (columns, rows) = (lp.num_cols(), lp.rows.len());
    let integer: Vec<usize> = (0..columns).collect();
    let mut session = backend.open(lp);
    session.set_integer(&integer, 1e-9)?;
    let solution = session.solve()?;
    let mut admitted = Vec::new();
    for (i, c) in cols.iter().enumerate() {
        if let Some(s) = c.z.iter().position(|&z| solution.values[z] > 0.5) {
            admitted.push((i, jobs[i].spec.arrival_slot + s));
        }
    }
    Ok(OfflineOptimum { total_utility: solution.objective, admitted, columns, rows })
}

#[cfg(all(test, feature = "highs"))]
mod tests {
    use super::*;
    use crate::scheduling::oasis::job::{worked_example_cluster, worked_example_job};
    use crate::scheduling::oasis::Utility;

    /// The OASiS hand example's cluster (one worker server of 2 workers, one PS server of 2
    /// PSs, 2 slots) and its jobs A (2 worker-slots, 20), B (2, sigmoid 12 then 6), C (1, 8).
    /// Offline: 4 worker-slots in all; A and B need 2 each, C 1. Best: A and B in some order
    /// (slot 0 for B: 12, slot 1 for A: 20 → 32) beats any set with C (A + C = 28, B + C ≤ 20).
    #[test]
    fn the_hand_example_offline() {
        let cluster = worked_example_cluster();
        let job =
            |id: &str, epochs, utility| Job::new(worked_example_job(id, epochs, utility), 100.0, 2, "job").unwrap();
        let jobs = [
            job("A", 2, Utility::Constant { value: 20.0 }),
            job("B", 2, Utility::Sigmoid { priority: 24.0, decay: 3f64.ln(), target: 1.0 }),
            job("C", 1, Utility::Constant { value: 8.0 }),
        ];
        let opt = solve(&cluster, &jobs, Backend::highs()).unwrap();
        assert!((opt.total_utility - 32.0).abs() < 1e-6, "{opt:?}");
        assert_eq!(opt.admitted, vec![(0, 1), (1, 0)]);
    }
}
