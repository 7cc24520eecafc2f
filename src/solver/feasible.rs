//! The last check before an allocation is answered: every job within its time and every type
//! within its GPUs. An LP whose coefficients span more than double precision holds (a job measured
//! at 10⁻³⁰ steps/s alone and 60 steps/s in a pair) can come back "optimal" and infeasible; such an
//! answer is refused as `solver_failed`, never returned as if it were right.

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::policies::Outcome;
use crate::problem::Problem;

/// How far over a job's time or a type's GPUs an answer may be (round-off and solver tolerance).
const OVER: f64 = 1e-6;

/// `Ok` if `outcome`'s allocation, pairs and unconsolidated time fit the cluster within [`OVER`].
pub fn check(problem: &Problem, outcome: &Outcome) -> Result<()> {
    let jobs = problem.num_jobs();
    let types = problem.num_types();
    let sf = |m: usize| problem.jobs[m].scale_factor as f64;
    let mut time = vec![0.0; jobs];
    let mut used = vec![0.0; types];
    let mut add = |m: usize, gpus: f64, row: &[f64], time: &mut [f64]| -> Result<()> {
        for (w, &x) in row.iter().enumerate() {
            if !(x.is_finite() && x >= -OVER) {
                return Err(infeasible(format!(
                    "job {:?} has time {x} on {}",
                    problem.jobs[m].id, problem.worker_types[w].name
                )));
            }
            time[m] += x;
            used[w] += gpus * x;
        }
        Ok(())
    };
    for m in 0..jobs.min(outcome.allocation.rows()) {
        add(m, sf(m), outcome.allocation.row(m), &mut time)?;
    }
    for m in 0..jobs.min(outcome.unconsolidated.rows()) {
        add(m, sf(m), outcome.unconsolidated.row(m), &mut time)?;
    }
    for (k, colocation) in problem.colocations.iter().enumerate().take(outcome.colocated.rows()) {
        let [a, b] = colocation.jobs;
        add(a, sf(a), outcome.colocated.row(k), &mut time)?;
        // The pair's GPUs are counted once, with the first job.
        time[b] += outcome.colocated.row(k).iter().sum::<f64>();
    }
    if let Some(m) = (0..jobs).find(|&m| time[m] > 1.0 + OVER) {
        return Err(infeasible(format!("job {:?} would run {} of the time", problem.jobs[m].id, time[m])));
    }
    for (w, wt) in problem.worker_types.iter().enumerate() {
        if used[w] > wt.count * (1.0 + OVER) + OVER {
            return Err(infeasible(format!("{} would need {} GPUs of its {}", wt.name, used[w], wt.count)));
        }
    }
    Ok(())
}

fn infeasible(what: String) -> ArbiterError {
    ArbiterError::new(
        ErrorCode::SolverFailed,
        format!(
            "the solver's answer is infeasible ({what}): the request's numbers span more than the LP \
             solves in double precision; bring throughputs within a few orders of magnitude of each other"
        ),
    )
}
