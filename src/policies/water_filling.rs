//! Water-filling (Gavel §4.3, Appendix A.1): raise every active job's weighted normalized
//! throughput at the same rate until some jobs are bottlenecked, freeze those at their level,
//! reweight, repeat until every job is frozen. Shared by `max_min_fairness_water_filling` (fixed
//! weights) and `hierarchical` (weights re-derived from the entity tree after every freeze).
//! Each level and each bottleneck test is one exact program of the `max_min_ratio` engine.

use super::{engine, scale_factors, Outcome, WaterFillingReport};
use crate::error::Result;
use crate::lp::{Backend, Sense};
use crate::max_min_ratio::{Need, Program};
use crate::problem::{Matrix, Problem};

/// Derives each job's weight for the next level from which jobs are frozen; weight 0 means the
/// job keeps its floor but does not rise at this level.
pub trait Reweighting {
    fn weights(&self, problem: &Problem, frozen: &[bool]) -> Vec<f64>;
}

/// Runs water-filling with the given reweighting.
pub fn water_fill(problem: &Problem, backend: Backend, reweighting: &dyn Reweighting) -> Result<Outcome> {
    let n = problem.num_jobs();
    let sf = scale_factors(problem);
    let mut engine = engine(problem, backend);
    let class_of = engine.class_of();
    let thr_equal = problem.equal_share_throughput();

    // floor[m]: the throughput job m is guaranteed so far (nt_so_far · thr_equal).
    let mut floor = vec![0.0; n];
    let mut frozen = vec![false; n];
    let mut level = vec![f64::NAN; n];
    let mut frozen_at = vec![0usize; n];
    let mut first_weights: Option<Vec<f64>> = None;
    let mut allocation = Matrix::zeros(n, problem.num_types());
    let mut lp_solves = 0;
    let mut iteration = 0;
    while frozen.iter().any(|f| !f) {
        let weights = reweighting.weights(problem, &frozen);
        let active: Vec<bool> = (0..n).map(|m| !frozen[m] && weights[m] > 0.0).collect();
        if !active.iter().any(|&a| a) {
            break;
        }
        first_weights.get_or_insert_with(|| weights.clone());
        // (sf/w)·Δnt = c for every active job  ⟺  Δthr_m = c · w_m·thr_equal_m/sf_m.
        let rate: Vec<f64> =
            (0..n).map(|m| if active[m] { weights[m] * thr_equal[m] / sf[m] as f64 } else { 0.0 }).collect();
        let scale = rate.iter().cloned().fold(0.0, f64::max);
        let needs = (0..n)
            .map(|m| Need { base: floor[m], terms: if active[m] { vec![(0, rate[m] / scale)] } else { Vec::new() } })
            .collect();
        let mut program = Program::new(Sense::Maximize, needs);
        program.keep_model = true;
        // c is free (its optimum is ≥ 0: the last allocation meets every floor) so that no bound
        // absorbs its reduced cost and the duals always name binding rows.
        program.add_var(1.0, f64::NEG_INFINITY, f64::INFINITY);
        let solved = engine.solve_program(&program)?;
        lp_solves += solved.lp_solves;
        let c = solved.vars[0].max(0.0) / scale;
        for m in (0..n).filter(|&m| active[m]) {
            floor[m] += c * rate[m];
        }
        allocation = solved.allocation;

        // Active jobs of one class with one floor and one rate are symmetric: at the highest level
        // none can rise without the others, so all are stuck and no test is needed.
        let mut symmetric = (0..n).filter(|&m| active[m]).map(|m| (class_of[m], floor[m].to_bits(), rate[m].to_bits()));
        let first = symmetric.next();
        let binding: Vec<bool> = match &solved.binding {
            Some(b) => (0..n).map(|m| active[m] && b[m]).collect(),
            None => vec![false; n],
        };
        let stuck = if symmetric.all(|key| Some(key) == first) {
            active.clone()
        } else if binding.iter().any(|&b| b) {
            // Jobs the level's duals prove stuck. Any stuck job this misses cannot rise at the next
            // level either (that level is then 0) and is found there: the result is the same.
            binding
        } else {
            let (stuck, solves) = engine.bottlenecks(&floor, &active)?;
            lp_solves += solves;
            stuck
        };
        // At the optimal level some active job is stuck; if round-off hides it, stop raising them all.
        let any_stuck = stuck.iter().any(|&s| s);
        for m in (0..n).filter(|&m| active[m] && (stuck[m] || !any_stuck)) {
            frozen[m] = true;
            frozen_at[m] = iteration;
            level[m] = sf[m] as f64 / weights[m] * floor[m] / thr_equal[m];
        }
        iteration += 1;
    }

    let thr = super::throughputs(problem, &allocation);
    let nt: Vec<f64> = (0..n).map(|m| thr[m] / thr_equal[m]).collect();
    let first = first_weights.unwrap_or_else(|| vec![0.0; n]);
    let objective =
        (0..n).filter(|&m| first[m] > 0.0).map(|m| sf[m] as f64 / first[m] * nt[m]).fold(f64::INFINITY, f64::min);
    Ok(Outcome {
        allocation,
        objective: objective.is_finite().then_some(objective),
        lp_solves,
        water_filling: Some(WaterFillingReport { normalized_throughput: nt, level, frozen_at, iterations: iteration }),
    })
}
