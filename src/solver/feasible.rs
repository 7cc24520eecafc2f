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
    // Every entry a share of time, named by its job (a pair's by its first).
    let jobs = problem.num_jobs();
    let rows = (0..jobs.min(outcome.allocation.rows())).map(|m| (m, outcome.allocation.row(m)));
    let rows = rows.chain((0..jobs.min(outcome.unconsolidated.rows())).map(|m| (m, outcome.unconsolidated.row(m))));
    let pairs = problem.colocations.iter().enumerate().take(outcome.colocated.rows());
    for (m, row) in rows.chain(pairs.map(|(k, colocation)| (colocation.jobs[0], outcome.colocated.row(k)))) {
        if let Some((w, x)) = row.iter().enumerate().find(|&(_, &x)| !(x.is_finite() && x >= -OVER)) {
            let (job, name) = (&problem.jobs[m].id, &problem.worker_types[w].name);
            return Err(infeasible(format!("job {job:?} has time {x} on {name}")));
        }
    }
    let time = outcome.time_used(problem);
    if let Some(m) = (0..jobs).find(|&m| time[m] > 1.0 + OVER) {
        return Err(infeasible(format!("job {:?} would run {} of the time", problem.jobs[m].id, time[m])));
    }
    let used = outcome.gpus_used(problem);
    for (wt, &used) in problem.worker_types.iter().zip(&used) {
        if used > wt.count * (1.0 + OVER) + OVER {
            return Err(infeasible(format!("{} would need {used} GPUs of its {}", wt.name, wt.count)));
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
