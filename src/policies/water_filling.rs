//! Water-filling (Gavel §4.3, Appendix A.1): raise every active job's weighted normalized
//! throughput at the same rate until some jobs are bottlenecked, freeze those at their level,
//! reweight, repeat until every job is frozen. Shared by `max_min_fairness_water_filling` (fixed
//! weights) and `hierarchical` (weights re-derived from the entity tree after every freeze).
//! Each level and each bottleneck test is one exact program of the `max_min_ratio` engine.

use super::{engine, scale_factors, Outcome, WaterFillingReport};
use crate::error::Result;
use crate::lp::{Backend, Sense};
use crate::max_min_ratio::{Engine, Need, Program, Solved};
use crate::problem::{Matrix, Problem};

/// Derives each job's weight for the next level from which jobs are frozen; weight 0 means the
/// job keeps its floor but does not rise at this level.
pub trait Reweighting {
    fn weights(&self, problem: &Problem, frozen: &[bool]) -> Vec<f64>;
}

/// A common rise below this fraction of a job's floor counts as none (LP round-off stays below).
const RISE_TOLERANCE: f64 = 1e-7;

/// One level: the largest `c` such that every `rising` job can get `floor + c·rate` while every
/// job keeps its floor, solved on the engine's kept model (a hot start after the first level).
fn raise(engine: &mut Engine, floor: &[f64], rising: &[bool], rate: &[f64]) -> Result<(f64, Solved)> {
    let rate: Vec<f64> = rate.iter().zip(rising).map(|(&r, &on)| if on { r } else { 0.0 }).collect();
    let unit = engine.natural_unit(&rate).filter(|&u| u > 0.0).unwrap_or(1.0);
    let needs = (0..floor.len())
        .map(|m| Need { base: floor[m], terms: if rate[m] > 0.0 { vec![(0, rate[m] * unit)] } else { Vec::new() } })
        .collect();
    let mut program = Program::new(Sense::Maximize, needs);
    program.keep_model = true;
    // c is free (its optimum is ≥ 0: the last allocation meets every floor) so that no bound
    // absorbs its reduced cost and the duals always name binding rows.
    program.add_var(1.0, f64::NEG_INFINITY, f64::INFINITY);
    let solved = engine.solve_program(&program)?;
    Ok((solved.vars[0].max(0.0) * unit, solved))
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
    // Levels counted so far, and the last counted one: its index, weights and rising jobs.
    let mut iterations = 0;
    let mut counted: Option<(usize, Vec<f64>, Vec<bool>)> = None;
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
        let (c, solved) = raise(&mut engine, &floor, &active, &rate)?;
        lp_solves += solved.lp_solves;
        let rose = (0..n).any(|m| active[m] && c * rate[m] > RISE_TOLERANCE * floor[m] && c > 0.0);
        for m in (0..n).filter(|&m| active[m]) {
            floor[m] += c * rate[m];
        }
        allocation = solved.allocation;

        // Who is stuck at this level. Active jobs of one class with one floor and one rate are
        // symmetric: at the highest level none can rise without the others, so all are. Otherwise
        // the jobs on a row with a nonzero dual are (that row is tight in every optimum); without
        // duals, the exact group raise test decides.
        let mut symmetric = (0..n).filter(|&m| active[m]).map(|m| (class_of[m], floor[m].to_bits(), rate[m].to_bits()));
        let first = symmetric.next();
        let mut stuck: Vec<bool> = if symmetric.all(|key| Some(key) == first) {
            active.clone()
        } else {
            match &solved.binding {
                Some(b) => (0..n).map(|m| active[m] && b[m]).collect(),
                None => {
                    let (found, solves) = engine.bottlenecks(&floor, &active)?;
                    lp_solves += solves;
                    found
                }
            }
        };
        if !stuck.iter().any(|&s| s) {
            // At the optimal level some active job is stuck; if round-off hides it, stop them all.
            stuck = active.clone();
        }

        // Duals may prove only some of the stuck jobs; the others cannot rise either, so the next
        // level has height 0 and proves them. Stuck-ness does not depend on weights and a level of
        // height 0 moves no floor, so such a job is credited to the last counted level it rose in,
        // with that level's weight: the result and the report are those of freezing every stuck
        // job at once. A level of height 0 counts only if it freezes a job that was not rising.
        if rose || counted.is_none() {
            counted = Some((iterations, weights.clone(), active.clone()));
            iterations += 1;
        } else if let Some((_, _, was_rising)) = &counted {
            if (0..n).any(|m| stuck[m] && !was_rising[m]) {
                counted = Some((iterations, weights.clone(), active.clone()));
                iterations += 1;
            }
        }
        // Every stuck job rose in the counted level (just updated if any did not).
        let (index, level_weights, _) = counted.as_ref().expect("a level was counted");
        for m in (0..n).filter(|&m| stuck[m]) {
            frozen[m] = true;
            frozen_at[m] = *index;
            level[m] = sf[m] as f64 / level_weights[m] * floor[m] / thr_equal[m];
        }
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
        water_filling: Some(WaterFillingReport { normalized_throughput: nt, level, frozen_at, iterations }),
    })
}
