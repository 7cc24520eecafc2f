//! Dorm's allocation (Sun et al., SmartComp 2017), as OASiS's paper runs it for comparison: on
//! each arrival or completion, the numbers of workers and parameter servers of every unfinished
//! job from a MILP that maximizes the cluster's utilization subject to fairness. Aggregate
//! capacities per pool and resource; placement on servers is the caller's.

use crate::error::Result;
use crate::lp::{Backend, LinearProgram, Row, Sense};
use crate::scheduling::oasis::resources::RESOURCE_TYPES;
use crate::scheduling::oasis::Job;

/// One unfinished job: the job and the most workers worth giving it now.
pub struct Demand<'a> {
    pub job: &'a Job,
    pub max_workers: u32,
}

/// Workers per job, maximizing `Σ_j Σ_r (α_j^r w_j / C_W^r + β_j^r s_j / C_P^r)` (the share of
/// every resource in use, summed) subject to the pools' aggregate capacities, `B_j s_j ≥ b_j w_j`,
/// `s_j ≤ w_j`, and fairness: no job takes more than `(1 + θ)/n` of any resource (or one worker's
/// worth, if that is more), and as many jobs as fit get at least one worker (each served job
/// adds `2R` to the objective, more than all the utilization terms together can).
/// `worker_capacity`, `ps_capacity`: the pools' totals.
pub fn allocate(
    demands: &[Demand],
    worker_capacity: &[f64; RESOURCE_TYPES],
    ps_capacity: &[f64; RESOURCE_TYPES],
    theta: f64,
    backend: Backend,
) -> Result<Vec<u32>> {
    if demands.is_empty() {
        return Ok(Vec::new());
    }
    let n = demands.len() as f64;
    let mut lp = LinearProgram::new(Sense::Maximize);
    let mut cols = Vec::with_capacity(demands.len());
    for d in demands {
        let (alpha, beta) = (d.job.spec.worker.amounts(), d.job.spec.parameter_server.amounts());
        let share = |amounts: &[u32; RESOURCE_TYPES], cap: &[f64; RESOURCE_TYPES]| -> f64 {
            (0..RESOURCE_TYPES).filter(|&r| cap[r] > 0.0).map(|r| amounts[r] as f64 / cap[r]).sum()
        };
        let w = lp.add_col(share(&alpha, worker_capacity), 0.0, d.max_workers as f64);
        let s = lp.add_col(share(&beta, ps_capacity), 0.0, d.max_workers as f64);
        let (b, big_b) = (d.job.spec.worker.bandwidth_mbps as f64, d.job.spec.parameter_server.bandwidth_mbps as f64);
        lp.add_row(Row::at_least(0.0, vec![(s, big_b), (w, -b)]));
        let served = lp.add_col(2.0 * RESOURCE_TYPES as f64, 0.0, 1.0);
        lp.add_row(Row::at_most(0.0, vec![(served, 1.0), (w, -1.0)]));
        lp.add_row(Row::at_most(0.0, vec![(s, 1.0), (w, -1.0)]));
        // Fairness: at most (1 + θ)/n of any resource, but always room for one worker and its PS.
        for r in 0..RESOURCE_TYPES {
            if alpha[r] > 0 && worker_capacity[r] > 0.0 {
                let bound = ((1.0 + theta) / n * worker_capacity[r]).max(alpha[r] as f64);
                lp.add_row(Row::at_most(bound, vec![(w, alpha[r] as f64)]));
            }
            if beta[r] > 0 && ps_capacity[r] > 0.0 {
                let bound = ((1.0 + theta) / n * ps_capacity[r]).max(beta[r] as f64);
                lp.add_row(Row::at_most(bound, vec![(s, beta[r] as f64)]));
            }
        }
        cols.push((w, s));
    }
    // Per resource, each pool's capacity over the columns of the jobs whose worker (or
    // parameter server) demands it.
    for r in 0..RESOURCE_TYPES {
        for (capacity, parameter_server) in [(worker_capacity[r], false), (ps_capacity[r], true)] {
            let coefs: Vec<(usize, f64)> = demands
                .iter()
                .zip(&cols)
                .filter_map(|(d, &(w, s))| {
                    let (unit, col) =
                        if parameter_server { (&d.job.spec.parameter_server, s) } else { (&d.job.spec.worker, w) };
                    let amount = unit.amounts()[r];
                    (amount > 0).then_some((col, amount as f64))
                })
                .collect();
            if !coefs.is_empty() {
                lp.add_row(Row::at_most(capacity, coefs));
            }
        }
    }
    let integer: Vec<usize> = (0..lp.num_cols()).collect();
    let mut session = backend.open(lp);
    // Within 0.1% of the best utilization, as a standard solver's default would leave it.
    session.set_integer(&integer, 1e-3)?;
    let solution = session.solve()?;
    Ok(cols.iter().map(|&(w, _)| solution.values[w].round().max(0.0) as u32).collect())
}
