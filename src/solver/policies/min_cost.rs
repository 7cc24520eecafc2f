//! Minimum cost: maximize throughput per dollar, `Σ_m thr_m / Σ_m Σ_w cost_w·sf_m·X[m][w]`, a
//! linear-fractional program: its optimal ratio is read off the matrix without floors, and found
//! by Dinkelbach's iteration with them. The ratio does not fix the scale of X, so a last LP on the
//! same model takes, among allocations with the optimal ratio, the one with the most throughput.
//! See `formulations/min_cost.md`.

use super::{throughputs, Outcome, Policy};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::formulation::{BaseLp, Groups};
use crate::lp::{Backend, LinearProgram, Row, Sense, Solution, SolveError};
use crate::max_min_ratio::MethodReport;
use crate::problem::{Matrix, Problem};
use crate::solver::max_weighted_throughput::PerDollar;

pub struct MinCost;

/// Relative slack on the optimal ratio in the second stage, so it stays feasible after round-off.
const RATIO_SLACK: f64 = 1e-9;
/// A second stage whose answer falls short of the ratio by more than this has lost it.
const RATIO_KEPT: f64 = 1e-6;

impl Policy for MinCost {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        cheapest(problem, backend, &vec![0.0; problem.num_jobs()])
    }
}

/// `Σ thr / Σ cost` of an allocation: steps/s per dollar-hour of the GPUs it occupies.
pub fn throughput_per_dollar(problem: &Problem, allocation: &Matrix) -> f64 {
    let (thr, cost) = steps_and_dollars(problem, allocation);
    if cost > 0.0 {
        thr / cost
    } else {
        0.0
    }
}

/// `(N(X), D(X))` of an allocation: its steps/s and the dollars per hour of the GPUs it occupies.
fn steps_and_dollars(problem: &Problem, allocation: &Matrix) -> (f64, f64) {
    let thr: f64 = throughputs(problem, allocation).iter().sum();
    let cost: f64 = (0..problem.num_jobs())
        .map(|m| {
            let sf = problem.jobs[m].scale_factor as f64;
            (0..problem.num_types()).map(|w| type_cost(problem, w) * sf * allocation.get(m, w)).sum::<f64>()
        })
        .sum();
    (thr, cost)
}

fn type_cost(problem: &Problem, w: usize) -> f64 {
    problem.worker_types[w].cost_per_hour.unwrap_or(0.0)
}

/// One of Dinkelbach's steps at λ: an allocation maximizing `N(X) − λ·D(X)` (`S`: however the
/// step holds it) with its `N` and `D`, or why it could not be certified.
type Step<S> = std::result::Result<(S, f64, f64), String>;

/// Dinkelbach's iteration for `max N(X)/D(X)`, `step(λ)` solving `max N(X) − λ·D(X)`: from
/// `λ = 0`, take `λ ← N(X)/D(X)` until `N(X) − λ·D(X)` is 0 within [`CONVERGED`] of `N(X)`. Each `λ`
/// is the ratio of an allocation the rows admit, so it rises to the optimum, which it reaches in
/// finitely many steps (the LP has finitely many vertices), superlinearly. The optimal ratio, the
/// last step's `S` (an allocation at that ratio), the λ that step solved for and the steps taken;
/// or why a step could not be certified. Charnes–Cooper's single LP puts the prices in a
/// constraint row, where prices 10⁹ apart made HiGHS answer "unbounded", or, bounded, a ratio 9
/// times below the optimum; here they are only in the objective.
fn best_ratio<S>(
    mut step: impl FnMut(f64) -> Result<Step<S>>,
) -> Result<std::result::Result<(f64, S, f64, usize), String>> {
    let mut lambda = 0.0;
    for steps in 1..=MOST_RATIO_STEPS {
        let (solution, n, d) = match step(lambda)? {
            Ok(solved) => solved,
            Err(why) => return Ok(Err(why)),
        };
        if d <= 0.0 {
            // Only the idle allocation pays nothing: the floors are all 0 or met by no GPU time.
            return Ok(Ok((lambda, solution, lambda, steps)));
        }
        let next = n / d;
        if n - lambda * d <= CONVERGED * n || next <= lambda {
            return Ok(Ok((lambda.max(next), solution, lambda, steps)));
        }
        lambda = next;
    }
    Err(ArbiterError::new(
        ErrorCode::SolverFailed,
        format!("the ratio of throughput to cost did not settle in {MOST_RATIO_STEPS} steps"),
    ))
}

/// `(N(X), D(X))` of `solution`: its steps/s and its dollars/h.
fn sums(columns: &[(usize, f64, f64)], solution: &Solution) -> (f64, f64) {
    columns.iter().fold((0.0, 0.0), |(n, d), &(c, t, cost)| {
        let x = solution.values.get(c).map_or(0.0, |x| x.max(0.0));
        (n + t * x, d + cost * x)
    })
}

/// The decomposition's ratio stands when the last step's Lagrangian bound puts no allocation's
/// ratio more than this share above it.
const RATIO_CERTIFIED: f64 = 1e-9;
/// The decomposition's answer stands when every floor is met within this share of it.
const FLOOR_KEPT: f64 = 1e-9;

/// Dinkelbach's iteration stops when the best allocation gains less than this share of its
/// throughput over the current ratio.
const CONVERGED: f64 = 1e-10;
/// Its LP solves at most (it takes a handful: one per vertex it passes, superlinearly).
const MOST_RATIO_STEPS: usize = 100;

/// The min-cost allocation where every job m also gets `thr_m ≥ floor[m]`.
pub(super) fn cheapest(problem: &Problem, backend: Backend, floor: &[f64]) -> Result<Outcome> {
    if floor.iter().all(|&f| f == 0.0) {
        return most_per_dollar(problem, backend);
    }
    let fallback = match PerDollar::new(problem, floor) {
        Some(per_dollar) => match decomposed(problem, &per_dollar, backend)? {
            Ok(outcome) => return Ok(outcome),
            Err(why) => Some(why),
        },
        None => None,
    };
    let mut outcome = cheapest_by_lp(problem, backend, floor)?;
    outcome.method = Some(MethodReport::lp(fallback));
    Ok(outcome)
}

/// Both stages by the price decomposition (`max_weighted_throughput::PerDollar`), on mostly
/// distinct rows: each of Dinkelbach's steps certified, the second stage moving only the jobs
/// tied at the last step's prices. `Err(why)` when a step could not be certified.
fn decomposed(
    problem: &Problem,
    per_dollar: &PerDollar,
    backend: Backend,
) -> Result<std::result::Result<Outcome, String>> {
    let mut lp_solves = 0;
    let mut previous: Option<(f64, Vec<f64>)> = None;
    let found = best_ratio(|lambda| {
        let warm = previous.as_ref().map(|(at, prices)| (*at, prices.as_slice()));
        Ok(per_dollar.step(lambda, warm, backend)?.map(|step| {
            lp_solves += step.lp_solves;
            previous = Some((lambda, step.prices.clone()));
            let (n, d) = steps_and_dollars(problem, &step.allocation);
            (step, n, d)
        }))
    })?;
    let (ratio, last, at, _) = match found {
        Ok(found) => found,
        Err(why) => return Ok(Err(why)),
    };
    // The certificate of the ratio: at the last step's prices, no allocation meeting the floors
    // has `N − λ·D` more than `gap` above 0, so none has a ratio above `λ + gap/D_min`. Each step
    // was certified by its recovery LP, within that LP's tolerances; prices 10⁹ apart can hide a
    // better vertex there, which this exact enumeration does not.
    let gap = per_dollar.gap(at, &last.prices, &last.allocation).unwrap_or(f64::INFINITY);
    let least_cost = per_dollar.least_cost();
    let certified = gap <= RATIO_CERTIFIED * ratio * least_cost;
    if !certified {
        return Ok(Err(format!(
            "the ratio {ratio:.9e} is certified only within {:.1e} of itself",
            gap / (ratio * least_cost)
        )));
    }
    // Stage 2; the last step's allocation, which is at the ratio, stands when it fails, loses
    // the ratio or misses a floor (its recovery LP can read a floor below its tolerance as met
    // with no time).
    lp_solves += 1;
    let allocation = match per_dollar.most_throughput(at, ratio * (1.0 - RATIO_SLACK), &last, backend)? {
        Ok(most)
            if {
                let (n, d) = steps_and_dollars(problem, &most);
                n >= ratio * (1.0 - RATIO_KEPT) * d && per_dollar.floors_kept(&most, FLOOR_KEPT)
            } =>
        {
            most
        }
        _ => last.allocation.clone(),
    };
    if !per_dollar.floors_kept(&allocation, FLOOR_KEPT) {
        return Ok(Err("a floor came back short of the recovery LP's tolerance".into()));
    }
    let mut outcome = outcome(problem, allocation, lp_solves);
    outcome.method = Some(last.report());
    Ok(Ok(outcome))
}

/// Both stages on one HiGHS model of every job's columns.
fn cheapest_by_lp(problem: &Problem, backend: Backend, floor: &[f64]) -> Result<Outcome> {
    let groups = Groups::singletons(problem.num_jobs());
    // One model for both stages: the base rows and the floors, `T·X_m ≥ floor_m`. Each solve
    // sets its own objective from `columns`.
    let mut base = BaseLp::new(problem, groups, Sense::Maximize);
    for (g, members) in base.groups.members.clone().iter().enumerate() {
        if floor[members[0]] > 0.0 {
            let thr = base.terms(g, |w| problem.throughput.get(members[0], w));
            base.lp.add_row(Row::at_least(floor[members[0]], thr));
        }
    }
    // Per column: its steps/s and its dollars/h per unit of time.
    let columns: Vec<(usize, f64, f64)> = base
        .cols
        .iter()
        .enumerate()
        .flat_map(|(g, row)| {
            let m = base.groups.members[g][0];
            let sf = problem.jobs[m].scale_factor as f64;
            let per_type = row.iter().enumerate();
            per_type.filter_map(move |(w, c)| c.map(|c| (c, problem.throughput.get(m, w), type_cost(problem, w) * sf)))
        })
        .collect();
    let mut session = backend.open(std::mem::replace(&mut base.lp, LinearProgram::new(Sense::Maximize)));

    // Stage 1: the optimal ratio, by Dinkelbach's iteration on the model.
    let found = best_ratio(|lambda| {
        session.set_costs(&columns.iter().map(|&(c, t, d)| (c, t - lambda * d)).collect::<Vec<_>>());
        let solution = session.solve()?;
        let (n, d) = sums(&columns, &solution);
        Ok(Ok((solution, n, d)))
    })?;
    let (ratio, at_ratio, _, ratio_solves) = found.map_err(|why| ArbiterError::new(ErrorCode::SolverFailed, why))?;

    // Stage 2: max Σ T·X  s.t. base rows, floors, Σ T·X − ratio·Σ cost·sf·X ≥ 0.
    let keep_ratio: Vec<(usize, f64)> =
        columns.iter().map(|&(c, t, d)| (c, t - ratio * (1.0 - RATIO_SLACK) * d)).collect();
    session.add_rows(&[Row::at_least(0.0, keep_ratio)]);
    session.set_costs(&columns.iter().map(|&(c, t, _)| (c, t)).collect::<Vec<_>>());
    // Stage 1's allocation is at the ratio, and stands for stage 2 when stage 2 loses it: a ratio
    // row whose coefficients span more than the LP's tolerance (prices 10⁹ apart) can read as met
    // far below the ratio, and a floor below the tolerance that stage 1 let slip (its ratio then a
    // hair above what meeting the floor allows) can leave the row and the floor infeasible.
    let solution = match session.solve() {
        Ok(most)
            if {
                let (n, d) = sums(&columns, &most);
                n < ratio * (1.0 - RATIO_KEPT) * d
            } =>
        {
            at_ratio
        }
        Ok(most) => most,
        Err(SolveError::Infeasible) => at_ratio,
        Err(e) => return Err(e.into()),
    };
    let allocation = base.allocation(&solution, problem.num_jobs(), problem.num_types());
    Ok(outcome(problem, allocation, ratio_solves + 1))
}

/// Without floors, a ratio of sums is at most its largest term, so the optimal ratio is the best
/// column's own, `max T[m][w]/(cost_w·sf_m)`, read off the matrix. Stage 2's ratio row then admits
/// only the columns within its slack of it: every other column's term is below the ratio, and
/// would pull the sum under it. So its LP is `max Σ T·X` over those columns alone, and the row
/// holds by itself: on distinct rows a column or two, where the whole model took 1.7 s at 16,384
/// jobs.
fn most_per_dollar(problem: &Problem, backend: Backend) -> Result<Outcome> {
    let ratio_of = |m: usize, w: usize| {
        let t = problem.throughput.get(m, w);
        let usable = t > 0.0 && problem.worker_types[w].count > 0.0;
        if usable {
            t / (type_cost(problem, w) * problem.jobs[m].scale_factor as f64)
        } else {
            0.0
        }
    };
    let num_types = problem.num_types();
    let best = (0..problem.num_jobs())
        .flat_map(|m| (0..num_types).map(move |w| (m, w)))
        .map(|(m, w)| ratio_of(m, w))
        .filter(|r| r.is_finite())
        .fold(0.0, f64::max);
    if best <= 0.0 {
        return Ok(outcome(problem, Matrix::zeros(problem.num_jobs(), num_types), 0));
    }
    let reaches = |m: usize, w: usize| ratio_of(m, w) >= best * (1.0 - RATIO_SLACK);
    let mut groups = Groups::identical_jobs(problem, &[]);
    groups.members.retain(|members| (0..num_types).any(|w| reaches(members[0], w)));
    let mut base = BaseLp::on_columns(problem, groups, Sense::Maximize, reaches);
    // In units of the largest throughput kept: the solver's optimality tolerance is absolute, so
    // rows of 10⁻⁷ steps/s would read as worth nothing and get no time.
    let largest = (0..problem.num_jobs())
        .flat_map(|m| (0..num_types).filter(move |&w| reaches(m, w)).map(move |w| problem.throughput.get(m, w)))
        .fold(0.0, f64::max);
    let unit = if largest > 0.0 { largest } else { 1.0 };
    base.set_objective(|m, w| problem.throughput.get(m, w) / unit);
    let solution = backend.solve(std::mem::replace(&mut base.lp, LinearProgram::new(Sense::Maximize)))?;
    let allocation = base.allocation(&solution, problem.num_jobs(), num_types);
    Ok(outcome(problem, allocation, 1))
}

fn outcome(problem: &Problem, allocation: Matrix, lp_solves: usize) -> Outcome {
    let objective = throughput_per_dollar(problem, &allocation);
    Outcome::of(allocation, Some(objective), lp_solves)
}
