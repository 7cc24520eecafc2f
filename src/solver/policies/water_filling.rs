//! Water-filling (Gavel §4.3, Appendix A.1): raise every active job's weighted normalized
//! throughput at the same rate until some jobs are bottlenecked, freeze those at their level,
//! reweight, repeat until every job is frozen. Shared by `max_min_fairness_water_filling` (fixed
//! weights) and `hierarchical` (weights re-derived from the entity tree after every freeze).
//! Each level and each bottleneck test is one exact program of the `max_min_ratio` engine.

use super::{colocated, engine, scale_factors, Outcome, WaterFillingReport};
use crate::error::Result;
use crate::lp::{Backend, Sense};
use crate::max_min_ratio::{Engine, Need, Program, Solved};
use crate::problem::Problem;

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
    program.allocate = false;
    // c is free (its optimum is ≥ 0: the last allocation meets every floor) so that no bound
    // absorbs its reduced cost and the duals always name binding rows.
    program.add_var(1.0, f64::NEG_INFINITY, f64::INFINITY);
    let solved = engine.solve_program(&program)?;
    Ok((solved.vars[0].max(0.0) * unit, solved))
}

/// Whether some active jobs are proven stuck and others are still undecided.
fn binding_only(stuck: &[bool], active: &[bool], frozen: &[bool]) -> bool {
    let undecided = (0..stuck.len()).any(|m| active[m] && !stuck[m] && !frozen[m]);
    undecided && stuck.iter().any(|&s| s)
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
        // Duals may prove only some of the stuck jobs. The others cannot rise either, and stuck-ness
        // does not depend on weights, so when freezing the proven ones changes nobody's weight and
        // wakes no job, the next level is this one again: it has height 0, proves more, and its
        // freezes are credited here. Otherwise (a hierarchy reweights) the set is completed now:
        // the unproven jobs are raised alone, same weights; a rise of 0 proves more of them.
        while binding_only(&stuck, &active, &frozen) {
            let mut after = frozen.clone();
            (0..n).filter(|&m| stuck[m]).for_each(|m| after[m] = true);
            let next = reweighting.weights(problem, &after);
            let open: Vec<bool> = (0..n).map(|m| active[m] && !stuck[m]).collect();
            if (0..n).all(|m| after[m] || next[m] == if open[m] { weights[m] } else { 0.0 }) {
                break;
            }
            let (rise, again) = raise(&mut engine, &floor, &open, &rate)?;
            lp_solves += again.lp_solves;
            if (0..n).any(|m| open[m] && rise * rate[m] > RISE_TOLERANCE * floor[m]) {
                break;
            }
            let proven: Vec<usize> =
                (0..n).filter(|&m| open[m] && again.binding.as_ref().is_some_and(|b| b[m])).collect();
            if proven.is_empty() {
                let (found, solves) = engine.bottlenecks(&floor, &open)?;
                lp_solves += solves;
                (0..n).filter(|&m| found[m]).for_each(|m| stuck[m] = true);
                break;
            }
            proven.into_iter().for_each(|m| stuck[m] = true);
        }
        if !stuck.iter().any(|&s| s) {
            // At the optimal level some active job is stuck; if round-off hides it, stop them all.
            stuck = active.clone();
        }

        // A level of height 0 with the same rising jobs and weights as the last counted one only
        // finishes it (see above): its freezes are credited to that level. Any other level counts.
        let continues = !rose
            && counted.as_ref().is_some_and(|(_, w, a)| (0..n).all(|m| !active[m] || (a[m] && w[m] == weights[m])));
        if !continues {
            counted = Some((iterations, weights.clone(), active.clone()));
            iterations += 1;
        }
        let (index, level_weights, _) = counted.as_ref().expect("a level was counted");
        for m in (0..n).filter(|&m| stuck[m]) {
            frozen[m] = true;
            frozen_at[m] = *index;
            level[m] = sf[m] as f64 / level_weights[m] * floor[m] / thr_equal[m];
        }
    }

    // The last level meets every final floor (later levels of height 0 move none).
    let allocation = engine.last_allocation();
    let pair_time = engine.last_pair_time();
    let unconsolidated = engine.last_unconsolidated();
    let thr = engine.throughputs(&allocation, &pair_time, &unconsolidated);
    let nt: Vec<f64> = (0..n).map(|m| thr[m] / thr_equal[m]).collect();
    let first = first_weights.unwrap_or_else(|| vec![0.0; n]);
    let objective =
        (0..n).filter(|&m| first[m] > 0.0).map(|m| sf[m] as f64 / first[m] * nt[m]).fold(f64::INFINITY, f64::min);
    Ok(Outcome {
        allocation,
        objective: objective.is_finite().then_some(objective),
        lp_solves,
        water_filling: Some(WaterFillingReport { normalized_throughput: nt, level, frozen_at, iterations }),
        method: engine.method_report(),
        colocated: colocated(problem, engine.pairs(), &pair_time),
        unconsolidated,
    })
}
