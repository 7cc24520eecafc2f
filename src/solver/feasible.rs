//! The last check before an allocation is answered: every job within its time, every type within
//! its GPUs and, with placement sensitivity, every type's consolidated slots within theirs. An LP
//! whose coefficients span more than double precision holds (a job measured at 10⁻³⁰ steps/s alone
//! and 60 steps/s in a pair) can come back "optimal" and infeasible; such an answer is refused as
//! `solver_failed`, never returned as if it were right.

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::policies::Outcome;
use crate::problem::Problem;

/// How far over a job's time or a type's GPUs an answer may be (round-off and solver tolerance).
const OVER: f64 = 1e-6;

/// `Ok` if `outcome`'s allocation, pairs and unconsolidated time fit the cluster, and its
/// consolidated time the slots that hold it, within [`OVER`].
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
    let slots = problem.consolidated_slots();
    for ((wt, slots), used) in problem.worker_types.iter().zip(&slots).zip(outcome.consolidated_gpus_used(problem)) {
        for (&(s, gpus), &(_, used)) in slots.iter().zip(&used) {
            if used > gpus * (1.0 + OVER) + OVER {
                return Err(infeasible(format!(
                    "{s}-GPU jobs would hold {used} GPUs of {} consolidated, where {gpus} can hold them",
                    wt.name
                )));
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Matrix;

    /// Two 3-GPU jobs on one type of 6 GPUs, a 4-GPU server and a 2-GPU one: one of them at a time
    /// fits consolidated (`formulations/placement_sensitivity.md`'s worked example).
    fn spread_problem() -> Problem {
        let job = |id: &str| {
            format!(
                r#"{{"id": "{id}", "throughput": {{"v100": 10}}, "scale_factor": 3,
                     "unconsolidated_throughput": {{"v100": 6}}}}"#
            )
        };
        let text = format!(
            r#"{{"policy": "max_min_fairness",
                 "cluster": {{"worker_types": {{"v100": {{"count": 6, "gpus_per_server": 4}}}}}},
                 "jobs": [{}, {}]}}"#,
            job("a"),
            job("b")
        );
        Problem::from_json(&text).expect("valid")
    }

    fn outcome(consolidated: f64, spread: f64) -> Outcome {
        let mut outcome = Outcome::of(Matrix::from_rows(&[[consolidated], [consolidated]]), None, 0);
        outcome.unconsolidated = Matrix::from_rows(&[[spread], [spread]]);
        outcome
    }

    #[test]
    fn consolidated_time_past_the_slots_is_refused() {
        let problem = spread_problem();
        // Half the time each, consolidated and spread: 3 GPUs of consolidated slots, 6 in all.
        assert!(check(&problem, &outcome(0.5, 0.5)).is_ok());
        // Both consolidated all the time: 6 GPUs fit the type, but only 3 its consolidated slots.
        let refused = check(&problem, &outcome(1.0, 0.0)).unwrap_err();
        assert_eq!(refused.code, ErrorCode::SolverFailed);
        assert!(refused.message.contains("3-GPU jobs would hold 6 GPUs of v100 consolidated"), "{}", refused.message);
        // Within the tolerance the LP's answers are read with.
        assert!(check(&problem, &outcome(0.5 + 1e-7, 0.5 - 1e-7)).is_ok());
    }
}
