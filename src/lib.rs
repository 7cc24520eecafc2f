//! Arbiter: heterogeneity-aware allocation of a shared GPU cluster among training jobs.
//!
//! Data flows one way: a [`Request`] (the wire contract) is validated once into a [`Problem`]
//! (dense indices, a throughput matrix), a policy turns it into an allocation through the
//! [`lp`] layer, and a [`Response`] renders it back with the request's ids.
//!
//! ```no_run
//! let text = std::fs::read_to_string("request.json").unwrap();
//! match arbiter::solve_json(&text, arbiter::lp::Backend::default()) {
//!     Ok(response) => println!("{}", serde_json::to_string(&response).unwrap()),
//!     Err(error) => eprintln!("{}", error.to_json()),
//! }
//! ```

// The layers, in the order data flows: the contract and validated problem, the throughput
// estimator that may complete it, the solver, scheduling over rounds, the simulator, the service,
// and the Kubernetes controllers that drive a session from a cluster; then the command line over
// all of them.
pub mod cli;
pub mod contract;
pub mod demo;
pub mod estimator;
pub mod kubernetes;
pub mod scheduling;
pub mod service;
pub mod simulator;
pub mod solver;

// The stable paths of the library's modules, whichever layer holds them.
pub use contract::{error, problem, request, response};
pub use scheduling::mechanism;
pub use simulator::workload;
pub use solver::{formulation, lp, max_min_ratio, partition, policies, realizability, space_sharing};

pub use error::{ArbiterError, ErrorCode};
pub use policies::{Outcome, PolicyKind};
pub use problem::Problem;
pub use request::Request;
pub use response::Response;
pub use scheduling::{Composition, CompositionRequest, Pipeline};
pub use solver::realizable::Realizable;
pub use solver::tie_break::TieBreak;

use std::time::Instant;

/// Solves a validated problem with its policy, within its `max_solve_seconds` if it has one, and
/// checks how much of the allocation rounds on whole GPUs can deliver (`stats.realizable`).
pub fn solve(problem: &Problem, backend: lp::Backend) -> error::Result<Response> {
    // One deadline for the solve and the check.
    let backend = match problem.max_solve_seconds {
        Some(seconds) => backend.within(seconds),
        None => backend,
    };
    let (mut response, outcome) = allocate(problem, backend)?;
    // A realizable solve reports its own decomposition.
    if response.stats.realizable.is_none() {
        let budget = realizability::Budget::default();
        response.stats.realizable = Some(realizability::report(problem, &outcome, &budget, backend));
    }
    Ok(response)
}

/// The policy's solve alone, and with `realizable` its solve over round configurations: the
/// response (with `stats.realizable` only when the realizable solve decomposed the allocation),
/// and the outcome it renders.
pub fn allocate(problem: &Problem, backend: lp::Backend) -> error::Result<(Response, Outcome)> {
    allocate_unhinted(problem, backend).map_err(|e| numbers_hint(problem, e))
}

/// A solver failure on numbers many orders of magnitude apart says so, with the span: the LP
/// solves in double precision, and a span of 10¹² or more is where it was seen to fail.
pub(crate) fn numbers_hint(problem: &Problem, mut e: ArbiterError) -> ArbiterError {
    if e.code != ErrorCode::SolverFailed || e.message.contains("orders of magnitude") {
        return e;
    }
    let alone = || problem.measured.row_iter().flatten().copied();
    let paired = || problem.colocations.iter().flat_map(|c| c.throughput.iter().flatten().copied());
    let positive = || alone().chain(paired()).filter(|&t| t > 0.0);
    let (Some(low), Some(high)) = (positive().reduce(f64::min), positive().reduce(f64::max)) else { return e };
    if high > low * 1e12 {
        e.message = format!(
            "{}; the request's throughputs span {low:e} to {high:e} steps/s, more orders of magnitude than \
             the LP solves reliably in double precision: bring them closer",
            e.message
        );
    }
    e
}

fn allocate_unhinted(problem: &Problem, backend: lp::Backend) -> error::Result<(Response, Outcome)> {
    let start = Instant::now();
    let backend = match problem.max_solve_seconds {
        Some(seconds) => backend.within(seconds),
        None => backend,
    };
    // Counted once: automatic partitioning and the response's pair stats both read it.
    let kept_pairs = problem.space_sharing.then(|| space_sharing::count_kept(problem));
    let (applied, partitioning) = match partition::plan(problem, kept_pairs.unwrap_or(0))? {
        Some((k, chosen)) => {
            let (outcome, partitioning) = partition::solve(problem, backend, k, chosen)?;
            (solver::tie_break::Applied::bare(outcome), Some(partitioning))
        }
        None => (solver::tie_break::solve(problem, backend)?, None),
    };
    let (outcome, tie_break) = (applied.outcome, applied.tie_break);
    let (outcome, realized) = if problem.realizable.runs_for(problem.policy) {
        let realized = if partitioning.is_some() {
            let why = "a partitioned solve is not formulated over round configurations".to_string();
            solver::realizable::Realized::not_applied(outcome, why)
        } else {
            solver::realizable::apply(problem, outcome, tie_break != solver::tie_break::TieBreak::None, backend)
        };
        (realized.outcome, Some((realized.report, realized.decomposition)))
    } else {
        (outcome, None)
    };
    solver::feasible::check(problem, &outcome)?;
    let seconds = start.elapsed().as_secs_f64();
    let mut response = Response::new(problem, &outcome, kept_pairs, backend.name(), seconds);
    if let Some((report, decomposition)) = realized {
        response.stats.realizable = decomposition.map(|d| {
            let (jobs, types) = realizability::names(problem);
            realizability::report_of(&d, &jobs, &types, report.seconds)
        });
        response.stats.realizable_solve = Some(report);
    }
    response.stats.partitioning = partitioning;
    response.stats.tie_break = tie_break;
    response.stats.tie_break_method = applied.method;
    response.stats.tie_break_skipped = applied.skipped;
    Ok((response, outcome))
}

/// Parses, validates and solves a request given as JSON text. A request with
/// `estimate_missing` needs a reference: use [`solve_request`].
/// The response names the fields of `text` the contract does not know (`ignored_fields`).
pub fn solve_json(text: &str, backend: lp::Backend) -> error::Result<Response> {
    let (request, ignored) = Request::from_json_noting(text)?;
    let mut response = solve_request(request, None, backend)?;
    response.ignored_fields = ignored;
    Ok(response)
}

/// Solves a request of the contract; with `estimate_missing`, the throughputs its jobs leave out
/// are first estimated against `reference` (the estimator, `estimator::fill`), and the response
/// lists them.
pub fn solve_request(
    mut request: Request,
    reference: Option<&workload::throughputs::ThroughputTable>,
    backend: lp::Backend,
) -> error::Result<Response> {
    let filled = estimator::fill::fill_missing(&mut request, reference)?;
    let mut response = solve(&Problem::from_request(&request)?, backend)?;
    response.estimated_throughput = filled.throughput;
    response.estimated_colocations = filled.colocations;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_jobs(a: f64, b: f64) -> Problem {
        let text = format!(
            r#"{{"policy": "max_min_fairness", "cluster": {{"worker_types": {{"g": {{"count": 1}}}}}},
                "jobs": [{{"id": "a", "throughput": {{"g": {a:e}}}}}, {{"id": "b", "throughput": {{"g": {b:e}}}}}]}}"#
        );
        Problem::from_json(&text).expect("valid")
    }

    #[test]
    fn a_solver_failure_on_numbers_far_apart_names_their_span() {
        let failed = || ArbiterError::new(ErrorCode::SolverFailed, "the LP is infeasible");
        let hinted = numbers_hint(&two_jobs(1e-20, 1e20), failed());
        assert!(hinted.message.starts_with("the LP is infeasible; "), "{}", hinted.message);
        assert!(hinted.message.contains("span 1e-20 to 1e20 steps/s"), "{}", hinted.message);
        // Within 10¹², or another kind of error: left as it is.
        assert_eq!(numbers_hint(&two_jobs(1e-3, 1e6), failed()).message, "the LP is infeasible");
        let timeout = numbers_hint(&two_jobs(1e-20, 1e20), ArbiterError::new(ErrorCode::Timeout, "budget"));
        assert_eq!(timeout.message, "budget");
    }
}
