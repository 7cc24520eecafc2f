//! Water-filling (Gavel §4.3, Appendix A.1): raise every active job's weighted normalized
//! throughput at the same rate until some jobs are bottlenecked, freeze those at their level,
//! reweight, repeat until every job is frozen. Shared by `max_min_fairness_water_filling` (fixed
//! weights) and `hierarchical` (weights re-derived from the entity tree after every freeze).
//! Each level is one exact program of the `max_min_ratio` engine, or, when most rows are distinct,
//! one solve of its price decomposition with the floors as bases; each bottleneck test is a program.

use super::{capacities, colocated, engine, scale_factors, Outcome, WaterFillingReport};
use crate::error::Result;
use crate::lp::{Backend, Sense};
use crate::max_min_ratio::{ceiling, Engine, Need, Program};
use crate::problem::{Matrix, Problem};

/// Derives each job's weight for the next level from which jobs are frozen; weight 0 means the
/// job keeps its floor but does not rise at this level.
pub trait Reweighting {
    fn weights(&self, problem: &Problem, frozen: &[bool]) -> Vec<f64>;

    /// Whether freezing jobs never changes the others' weights (then a level may run on past
    /// jobs that reach their own ceiling: `Levels::gallop`).
    fn fixed(&self) -> bool {
        false
    }
}

/// A common rise below this fraction of a job's floor counts as none (LP round-off stays below).
const RISE_TOLERANCE: f64 = 1e-7;

/// One level's optimum: the common rise and the jobs the duals prove stuck (`None`: no duals).
struct Level {
    c: f64,
    binding: Option<Vec<bool>>,
    lp_solves: usize,
}

/// Jobs whose own ceiling a level passes, and what the level then is (`Levels::gallop`).
struct Galloped {
    /// The rise of every job still rising.
    rise: f64,
    /// The jobs the level took to their ceiling.
    capped: Vec<usize>,
    /// The rising jobs the duals prove stuck at the level's end.
    binding: Vec<bool>,
    lp_solves: usize,
}

/// Every job's ceiling (`max_min_ratio::ceiling`): a job there is stuck whatever the others get.
fn ceilings(problem: &Problem) -> Vec<f64> {
    let capacity = capacities(problem);
    (0..problem.num_jobs()).map(|m| ceiling(problem.throughput.row(m), &capacity)).collect()
}

/// Relative slack under which a level counts as reaching a ceiling, or a probe's rise as 0.
const CEILING_TOLERANCE: f64 = 1e-9;
/// A capacity excess (relative to the GPUs) above this proves needs do not fit.
const EXCESS_TOLERANCE: f64 = 1e-9;

/// Solves the levels: by the price decomposition (`gallop`, fixed weights only) while it applies
/// and certifies, then (for good, once it does not) on the engine's kept model (`raise`), a hot
/// start after the first level there.
struct Levels<'e, 'a> {
    engine: &'e mut Engine<'a>,
    decompose: bool,
    /// The allocation of the last level, when the decomposition solved it.
    decomposed: Option<Matrix>,
}

impl Levels<'_, '_> {
    /// A level with fixed weights on the decomposition. When every row is its own, most levels
    /// end where one job reaches its own ceiling, so there would be about as many levels as jobs.
    /// Instead the level runs on past ceilings: with the j jobs of lowest ceiling (in rise,
    /// `τ_m = (ceiling_m − floor_m)/rate_m`) held at their ceilings and the others raised to
    /// `τ_(j)`, a probe solves for the further rise `c_j` (negative: `τ_(j)` is out of reach). The
    /// level is the largest j whose probe is feasible: the Lagrangian finds the first j whose needs
    /// provably do not fit, and probes step from the one before it. That probe's rise stops short
    /// of the next ceiling, so its binding jobs are the level's stuck ones. Exact: up to `τ_(j)`
    /// no job is stuck but by its ceiling (the needs at any smaller rise are at most those the
    /// probe meets). `None` when the first probe does not certify (the decomposition is then off
    /// for good).
    fn gallop(&mut self, floor: &[f64], active: &[bool], rate: &[f64], ceiling: &[f64]) -> Result<Option<Galloped>> {
        let n = floor.len();
        let reach = |m: usize| ((ceiling[m] - floor[m]) / rate[m]).max(0.0);
        let mut order: Vec<usize> = (0..n).filter(|&m| active[m] && rate[m] > 0.0).collect();
        order.sort_by(|&a, &b| reach(a).total_cmp(&reach(b)));
        let total = order.len();
        let mut lp_solves = 0;
        // τ_(j), and the needs there: the first j jobs at their ceilings, the others raised to it.
        let start_of = |j: usize| if j == 0 { 0.0 } else { reach(order[j - 1]) };
        let needs_at = |j: usize| {
            let (mut need, start) = (floor.to_vec(), start_of(j));
            order[..j].iter().for_each(|&m| need[m] = ceiling[m]);
            order[j..].iter().for_each(|&m| need[m] += start * rate[m]);
            need
        };
        // Probe j: its start τ_(j), and the decomposition's answer (None: not certified, or out of reach).
        let mut probe = |levels: &mut Self, j: usize| -> Result<Option<(f64, crate::max_min_ratio::Raised)>> {
            let start = start_of(j);
            let mut rising = rate.to_vec();
            order[..j].iter().for_each(|&m| rising[m] = 0.0);
            let raised = levels.engine.raise_floors(&needs_at(j), &rising)?;
            if let Some(r) = &raised {
                lp_solves += r.lp_solves;
            }
            Ok(raised.filter(|r| r.c >= -CEILING_TOLERANCE * start.max(r.c.abs())).map(|r| (start, r)))
        };
        // Whether probe j's level reaches the next job's ceiling (it cannot pass it).
        let reaches_next =
            |j: usize, start: f64, c: f64| j < total && start + c >= reach(order[j]) * (1.0 - CEILING_TOLERANCE);
        let Some(first) = probe(self, 0)? else {
            self.decompose = false;
            return Ok(None);
        };
        let (mut lo, mut best) = (0, first);
        if reaches_next(0, best.0, best.1.c) {
            // Where the GPUs stop the level, from the Lagrangian: the first j whose needs provably
            // do not fit (bisection; the needs only grow with j).
            let mut prices = self.engine.method_report().and_then(|r| r.prices).unwrap_or_default();
            let (mut low, mut high) = (1, total + 1);
            while low < high {
                let mid = low + (high - low) / 2;
                let (excess, at) = self.engine.capacity_excess(&needs_at(mid), &prices, EXCESS_TOLERANCE)?;
                if excess > EXCESS_TOLERANCE {
                    high = mid;
                    prices = at;
                } else {
                    low = mid + 1;
                }
            }
            // Probes from the last j that fits, with the prices where the next did not. `lo` is
            // feasible and its level reaches the next ceiling; `out` is the smallest j known out
            // of reach. Steps are +1 until a probe fails, then bisection.
            self.engine.warm_start(prices);
            let mut out: Option<usize> = None;
            let mut j = high - 1;
            loop {
                match probe(self, j)? {
                    Some(found) => {
                        let up = reaches_next(j, found.0, found.1.c);
                        (lo, best) = (j, found);
                        if !up || j == total {
                            break;
                        }
                    }
                    None => out = Some(j),
                }
                j = match out {
                    Some(out) if out > lo + 1 => lo + (out - lo) / 2,
                    Some(_) => break,
                    None => lo + 1,
                };
            }
        }
        let (start, raised) = best;
        self.decomposed = Some(raised.allocation);
        Ok(Some(Galloped {
            rise: start + raised.c.max(0.0),
            capped: order[..lo].to_vec(),
            binding: raised.binding,
            lp_solves,
        }))
    }

    /// The largest `c` such that every `rising` job can get `floor + c·rate` while every job keeps
    /// its floor, on the engine's kept model (a decomposed level is `gallop`'s).
    fn raise(&mut self, floor: &[f64], rising: &[bool], rate: &[f64]) -> Result<Level> {
        let rate: Vec<f64> = rate.iter().zip(rising).map(|(&r, &on)| if on { r } else { 0.0 }).collect();
        self.decomposed = None;
        let unit = self.engine.natural_unit(&rate).filter(|&u| u > 0.0).unwrap_or(1.0);
        let needs = (0..floor.len())
            .map(|m| Need { base: floor[m], terms: if rate[m] > 0.0 { vec![(0, rate[m] * unit)] } else { Vec::new() } })
            .collect();
        let mut program = Program::new(Sense::Maximize, needs);
        program.keep_model = true;
        program.allocate = false;
        // c is free (its optimum is ≥ 0: the last allocation meets every floor) so that no bound
        // absorbs its reduced cost and the duals always name binding rows.
        program.add_var(1.0, f64::NEG_INFINITY, f64::INFINITY);
        let solved = self.engine.solve_program(&program)?;
        Ok(Level { c: solved.vars[0].max(0.0) * unit, binding: solved.binding, lp_solves: solved.lp_solves })
    }
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
    // Only fixed weights gallop past ceilings; level by level, the decomposition is no faster than
    // the engine's kept model.
    let mut levels = Levels { engine: &mut engine, decompose: reweighting.fixed(), decomposed: None };
    let ceiling = ceilings(problem);
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
        let galloped = match levels.decompose {
            true => levels.gallop(&floor, &active, &rate, &ceiling)?,
            false => None,
        };
        let (Level { c, binding, lp_solves: solves }, capped) = match galloped {
            Some(g) => (Level { c: g.rise, binding: Some(g.binding), lp_solves: g.lp_solves }, g.capped),
            None => (levels.raise(&floor, &active, &rate)?, Vec::new()),
        };
        lp_solves += solves;
        let rose = (0..n).any(|m| active[m] && c * rate[m] > RISE_TOLERANCE * floor[m] && c > 0.0);
        for m in (0..n).filter(|&m| active[m]) {
            floor[m] += c * rate[m];
        }
        for &m in &capped {
            floor[m] = ceiling[m];
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
            match &binding {
                Some(b) => {
                    let mut stuck: Vec<bool> = (0..n).map(|m| active[m] && b[m]).collect();
                    capped.iter().for_each(|&m| stuck[m] = true);
                    stuck
                }
                None => {
                    let (found, solves) = levels.engine.bottlenecks(&floor, &active)?;
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
            let again = levels.raise(&floor, &open, &rate)?;
            lp_solves += again.lp_solves;
            if (0..n).any(|m| open[m] && again.c * rate[m] > RISE_TOLERANCE * floor[m]) {
                break;
            }
            let proven: Vec<usize> =
                (0..n).filter(|&m| open[m] && again.binding.as_ref().is_some_and(|b| b[m])).collect();
            if proven.is_empty() {
                let (found, solves) = levels.engine.bottlenecks(&floor, &open)?;
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
    let allocation = match levels.decomposed.take() {
        Some(allocation) => allocation,
        None => engine.last_allocation(),
    };
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
