//! Water-filling (Gavel §4.3, Appendix A.1): raise every active job's weighted normalized
//! throughput at the same rate until some jobs are bottlenecked, freeze those at their level,
//! reweight, repeat until every job is frozen. Shared by `max_min_fairness_water_filling` (fixed
//! weights) and `hierarchical` (weights re-derived from the entity tree after every freeze).
//! Each level is one exact program of the `max_min_ratio` engine, or, when most rows are distinct
//! and the weights come from a forest of entities, a few solves of its price decomposition with
//! the floors as bases (or, where the decomposition does not formulate the model, of the engine's
//! LP), running on past jobs' ceilings (`trajectory`); each bottleneck test is a program.

use super::trajectory::{Forest, Trajectory};
use super::{capacities, colocated, engine, scale_factors, Outcome, WaterFillingReport};
use crate::error::{ErrorCode, Result};
use crate::lp::{Backend, Sense};
use crate::max_min_ratio::{ceiling, Engine, MethodReport, Need, Program, Solved, Terms};
use crate::problem::{Matrix, Problem};
use crate::space_sharing::kept_pairs;

/// Derives each job's weight for the next level from which jobs are frozen; weight 0 means the
/// job keeps its floor but does not rise at this level.
pub trait Reweighting {
    fn weights(&self, problem: &Problem, frozen: &[bool]) -> Vec<f64>;

    /// The unfrozen jobs in the forest of entities their weights come from, if they do (then a
    /// level may run on past jobs that reach their own ceiling: `Levels::gallop`). `None`: levels
    /// go one at a time.
    fn forest(&self, _problem: &Problem, _frozen: &[bool]) -> Option<Forest> {
        None
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

/// A level run on past the jobs that reach their own ceilings (`Levels::gallop`).
struct Galloped {
    /// Every job's throughput at the level's end.
    floor: Vec<f64>,
    /// The jobs the level took to their ceilings, with the weights they rose at.
    capped: Vec<(usize, f64)>,
    /// The jobs still rising at the level's end, their rates and weights there.
    rising: Vec<bool>,
    rate: Vec<f64>,
    weights: Vec<f64>,
    /// The rising jobs the duals prove stuck at the level's end (`None`: no duals).
    binding: Option<Vec<bool>>,
    lp_solves: usize,
}

/// One probe of a galloping level: the further common rise, the jobs its duals prove stuck
/// (`None`: no duals), and its allocation when the decomposition solved it (on the engine it is
/// the kept model's last).
struct Probe {
    c: f64,
    binding: Option<Vec<bool>>,
    allocation: Option<Matrix>,
    lp_solves: usize,
}

/// `rate` of the `rising` jobs, 0 for the others.
fn rates_of(rate: &[f64], rising: &[bool]) -> Vec<f64> {
    rate.iter().zip(rising).map(|(&r, &on)| if on { r } else { 0.0 }).collect()
}

/// Every job's ceiling: its largest throughput on a type with GPUs, consolidated
/// (`max_min_ratio::ceiling`), spread over servers or paired (space sharing). No allocation gives
/// it more, so a job there is stuck whatever the others get. A ceiling no allocation reaches
/// (consolidated time the servers cannot hold) is only never met: the level stops where the job
/// is stuck, by its duals.
fn ceilings(problem: &Problem) -> Vec<f64> {
    let capacity = capacities(problem);
    let mut ceilings: Vec<f64> =
        (0..problem.num_jobs()).map(|m| ceiling(problem.throughput.row(m), &capacity)).collect();
    if let Some(spread) = problem.unconsolidated_throughput() {
        for (m, c) in ceilings.iter_mut().enumerate() {
            *c = c.max(ceiling(spread.row(m), &capacity));
        }
    }
    for pair in kept_pairs(problem) {
        for w in pair.types().filter(|&w| capacity[w] > 0.0) {
            for (&m, &t) in pair.jobs.iter().zip(&pair.throughput[w]) {
                ceilings[m] = ceilings[m].max(t);
            }
        }
    }
    ceilings
}

/// Relative slack under which a level counts as reaching a ceiling, or a probe's rise as 0.
const CEILING_TOLERANCE: f64 = 1e-9;
/// A capacity excess (relative to the GPUs) above this proves needs do not fit.
const EXCESS_TOLERANCE: f64 = 1e-9;
/// How much floors are lowered (relative) when a level's program on the engine finds them
/// infeasible: the drift of many levels' LP tolerances (`Levels::raise_on_engine`).
const DRIFT_SLACK: f64 = 1e-6;
/// How much floors are lowered (relative), besides to what the last decomposed allocation gives,
/// when the engine takes over: the engine's LP may call floors an allocation meets infeasible by
/// its round-off.
const HANDOVER_SLACK: f64 = 1e-9;
/// A waiting job that can get at most this share of its ceiling cannot start (round-off).
const START_TOLERANCE: f64 = 1e-8;

/// Solves the levels: by the price decomposition (`gallop`, when the reweighting gives a
/// `Forest`) while it applies and certifies, then (for good, once it does not) on the engine's kept
/// model (`raise_on_engine`), a hot start after the first level there.
struct Levels<'e, 'a> {
    engine: &'e mut Engine<'a>,
    decompose: bool,
    /// Whether levels gallop with the engine's LP as the probe where the decomposition does not
    /// (`Engine::gallops_on_lp`).
    gallop_on_lp: bool,
    /// The allocation of the last level, when the decomposition solved it.
    decomposed: Option<Matrix>,
    /// Whether the floors come from the decomposition and the engine has not yet taken over.
    unhanded: bool,
}

impl Levels<'_, '_> {
    /// A level run on past ceilings. When every row is its own, most levels end where one job
    /// reaches its own ceiling, so there would be about as many levels as jobs. Instead the level
    /// runs on past ceilings, along `path`: after its first j freezes (at time `τ_j`, with those
    /// jobs at their ceilings, the others where their clocks put them, and the weights re-derived
    /// in their groups), a probe solves for the further rise `c_j` at the rates after the j-th
    /// freeze (negative: `τ_j` is out of reach). The level is the largest j whose probe is
    /// feasible. The Lagrangian over types finds the first j whose needs provably do not fit, and
    /// probes step from the one before it; on the engine's LP (`gallop_on_lp`) where that
    /// Lagrangian does not relax the model, probes double from 0 until one fails. Then
    /// bisection. That probe's rise stops short of the
    /// next freeze, so its binding jobs are the level's stuck ones. Exact: up to `τ_j` no job is
    /// stuck but by its ceiling (the needs at any earlier time are at most those the probe meets).
    /// `None` when the first probe does not certify (the decomposition is then off for good; on
    /// the engine the level is solved the plain way, which lowers floors that drifted).
    fn gallop(&mut self, path: &Trajectory) -> Result<Option<Galloped>> {
        let total = path.freezes();
        let on_lp = !self.decompose;
        let mut lp_solves = 0;
        // The probe the engine's kept model solved last (on the LP).
        let mut last_probe = None;
        // Probe j: its start τ_j, and its answer (None: not certified, infeasible, or out of reach).
        let mut probe = |levels: &mut Self, j: usize| -> Result<Option<(f64, Probe)>> {
            let start = path.time(j);
            let (needs, rates) = (path.needs(j), path.rates(j).0);
            let raised = match on_lp {
                true => {
                    last_probe = Some(j);
                    levels.probe_on_engine(&needs, &rates)?
                }
                false => levels.engine.raise_floors(&needs, &rates)?.map(|r| Probe {
                    c: r.c,
                    binding: Some(r.binding),
                    allocation: Some(r.allocation),
                    lp_solves: r.lp_solves,
                }),
            };
            if let Some(r) = &raised {
                lp_solves += r.lp_solves;
            }
            // Out of reach only beyond round-off, on the scale of the rise (0 at the first probe).
            let scale = path.time((j + 1).min(total)).max(raised.as_ref().map_or(0.0, |r| r.c.abs()));
            Ok(raised.filter(|r| r.c >= -CEILING_TOLERANCE * scale).map(|r| (start, r)))
        };
        // Whether probe j's level reaches the next freeze (it cannot pass it).
        let reaches_next =
            |j: usize, start: f64, c: f64| j < total && start + c >= path.time(j + 1) * (1.0 - CEILING_TOLERANCE);
        // Where the GPUs stop the level, from the Lagrangian over types: the first j whose needs
        // provably do not fit (bisection; the needs only grow with j). Nothing is solved for it,
        // so the first probe is made where the level ends, not from the floors (on the
        // decomposition a probe from the floors of every job is the hardest: its optimum sits at
        // the first ceiling). On the engine's LP it needs the Lagrangian to relax the model
        // (`Engine::types_relax`); otherwise probes start from probe 0, the plain level.
        let lagrangian = !on_lp || self.engine.types_relax();
        let mut high = 1;
        if lagrangian {
            let mut prices = self.engine.method_report().and_then(|r| r.prices).unwrap_or_default();
            let mut low = 1;
            high = total + 1;
            while low < high {
                let mid = low + (high - low) / 2;
                let (excess, at) = self.engine.capacity_excess(&path.needs(mid), &prices, EXCESS_TOLERANCE)?;
                if excess > EXCESS_TOLERANCE {
                    high = mid;
                    prices = at;
                } else {
                    low = mid + 1;
                }
            }
            if !on_lp && !prices.is_empty() {
                self.engine.warm_start(prices);
            }
        }
        // Probes from the last j that fits. `lo` is the last feasible probe (`best` its answer)
        // and its level reaches the next freeze; `out` is the smallest j known out of reach (or
        // not certified). Steps are +1 after the Lagrangian, doubling without it, until a probe
        // fails, then bisection, down to probe 0, which must certify.
        let (mut lo, mut best) = (0, None);
        let mut out: Option<usize> = None;
        let mut j = high - 1;
        loop {
            match probe(self, j)? {
                Some(found) => {
                    let up = reaches_next(j, found.0, found.1.c);
                    (lo, best) = (j, Some(found));
                    if !up || j == total {
                        break;
                    }
                }
                None if j == 0 => {
                    self.decompose = false;
                    return Ok(None);
                }
                None => out = Some(j),
            }
            j = match out {
                Some(out) if out > lo + 1 => lo + (out - lo) / 2,
                Some(_) if best.is_some() => break,
                Some(_) => 0,
                None if !lagrangian => (2 * lo).clamp(lo + 1, total),
                None => lo + 1,
            };
        }
        let Some((start, raised)) = best else {
            self.decompose = false;
            return Ok(None);
        };
        // The allocation at the end is the kept model's last: it must be the level's probe.
        if on_lp && last_probe != Some(lo) {
            let again = self.probe_on_engine(&path.needs(lo), &path.rates(lo).0)?;
            lp_solves += again.map_or(0, |r| r.lp_solves);
        }
        // A level that reaches the next freeze but whose next probe did not certify ends at that
        // freeze, with no job proven stuck (the next level goes on from there).
        let at_next = reaches_next(lo, start, raised.c);
        let (end, c) = match at_next {
            true => (lo + 1, 0.0),
            false => (lo, raised.c.max(0.0)),
        };
        let (rate, weights) = path.rates(end);
        let mut floor = path.needs(end);
        floor.iter_mut().zip(&rate).for_each(|(f, &r)| *f += c * r);
        let binding = match at_next {
            true => Some(vec![false; floor.len()]),
            false => raised.binding,
        };
        self.decomposed = raised.allocation;
        self.unhanded = !on_lp;
        Ok(Some(Galloped {
            floor,
            capped: path.frozen(end),
            rising: rate.iter().map(|&r| r > 0.0).collect(),
            rate,
            weights,
            binding,
            lp_solves,
        }))
    }

    /// One probe of a level galloping on the engine's kept model: `max c` with every job at
    /// `need_m + c·rate_m`. `None` when no job rises, or the LP finds no allocation (the jobs
    /// held at their ceilings do not fit).
    fn probe_on_engine(&mut self, need: &[f64], rate: &[f64]) -> Result<Option<Probe>> {
        let Some(unit) = self.engine.natural_unit(rate).filter(|&u| u > 0.0) else {
            return Ok(None);
        };
        self.decomposed = None;
        match self.engine.solve_program(&level_program(need, rate, unit)) {
            Ok(solved) => Ok(Some(Probe {
                c: solved.vars[0] * unit,
                binding: solved.binding,
                allocation: None,
                lp_solves: solved.lp_solves,
            })),
            Err(error) if error.code == ErrorCode::SolverFailed => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// The largest `c` such that every `rising` job can get `floor + c·rate` while every job keeps
    /// its floor: by the decomposition while galloping (falling back for good when it does not
    /// certify), else on the engine's kept model.
    fn raise(&mut self, floor: &mut [f64], rising: &[bool], rate: &[f64]) -> Result<Level> {
        if self.decompose {
            if let Some(raised) = self.engine.raise_floors(floor, &rates_of(rate, rising))? {
                self.decomposed = Some(raised.allocation);
                self.unhanded = true;
                return Ok(Level { c: raised.c.max(0.0), binding: Some(raised.binding), lp_solves: raised.lp_solves });
            }
            self.decompose = false;
        }
        self.raise_on_engine(floor, rising, rate)
    }

    /// Before the engine's first program after decomposed levels: lowers the floors to what the
    /// last decomposed allocation gives, and by `HANDOVER_SLACK`. Each decomposed level meets the
    /// floors to its recovery LP's tolerance (1e-7) and raises the rising jobs from there, so over
    /// many levels the floors may drift above what any allocation meets (the engine and the
    /// decomposition then call them infeasible); that allocation is within the GPUs.
    fn hand_over(&mut self, floor: &mut [f64]) {
        if !std::mem::take(&mut self.unhanded) {
            return;
        }
        if let Some(allocation) = &self.decomposed {
            let given = self.engine.throughputs(allocation, &[], &self.engine.no_unconsolidated());
            floor.iter_mut().zip(&given).for_each(|(f, &g)| *f = f.min(g));
        }
        floor.iter_mut().for_each(|f| *f *= 1.0 - HANDOVER_SLACK);
    }

    /// Whether none of the `waiting` jobs (at floor 0) can get more than `START_TOLERANCE` of its
    /// `ceiling` while every job keeps its floor: one LP, `max Σ ε_m` with
    /// `thr_m ≥ ε_m·ceiling_m`, `ε ∈ [0, 1]`. A job with no ceiling (it runs nowhere) cannot start.
    fn none_can_start(&mut self, floor: &mut [f64], waiting: &[bool], ceiling: &[f64]) -> Result<(bool, usize)> {
        self.hand_over(floor);
        let mut needs: Vec<Need> = floor.iter().map(|&f| Need { base: f, terms: Terms::new() }).collect();
        let mut program = Program::new(Sense::Maximize, Vec::new());
        for m in (0..floor.len()).filter(|&m| waiting[m] && ceiling[m] > 0.0) {
            let v = program.add_var(1.0, 0.0, 1.0);
            needs[m].terms.push((v, ceiling[m]));
        }
        program.needs = needs;
        let solved = self.solve_at_floors(floor, &mut program)?;
        Ok((solved.vars.iter().all(|&v| v <= START_TOLERANCE), solved.lp_solves))
    }

    /// The engine's exact group test of which `which` jobs cannot rise from `floor` (lowered as
    /// `solve_at_floors` lowers them should they have drifted out of reach).
    fn bottlenecks(&mut self, floor: &mut [f64], which: &[bool]) -> Result<(Vec<bool>, usize)> {
        self.hand_over(floor);
        self.at_floors(floor, |engine, floor| engine.bottlenecks(floor, which))
    }

    /// `raise` on the engine's kept model.
    fn raise_on_engine(&mut self, floor: &mut [f64], rising: &[bool], rate: &[f64]) -> Result<Level> {
        self.hand_over(floor);
        let rate = rates_of(rate, rising);
        self.decomposed = None;
        let unit = self.engine.natural_unit(&rate).filter(|&u| u > 0.0).unwrap_or(1.0);
        let mut program = level_program(floor, &rate, unit);
        let solved = self.solve_at_floors(floor, &mut program)?;
        Ok(Level { c: solved.vars[0].max(0.0) * unit, binding: solved.binding, lp_solves: solved.lp_solves })
    }

    /// Solves `program`, whose needs' bases are `floor` (`at_floors`).
    fn solve_at_floors(&mut self, floor: &mut [f64], program: &mut Program) -> Result<Solved> {
        self.at_floors(floor, |engine, floor| {
            program.needs.iter_mut().zip(floor).for_each(|(need, &f)| need.base = f);
            engine.solve_program(program)
        })
    }

    /// `solve` at `floor`. Each level meets the floors only to the LP's tolerance and the next
    /// one raises from there, so over many levels floors can drift above what any allocation
    /// meets (seen with `fifo` entities, whose next job starts when the GPUs are full: in a
    /// level's program, the test of whether any waiting job can start at all, and the bottleneck
    /// test). When the LP finds the floors infeasible they are lowered (`lower_drifted`) and
    /// `solve` runs again, twice at most.
    fn at_floors<T>(
        &mut self,
        floor: &mut [f64],
        mut solve: impl FnMut(&mut Engine, &[f64]) -> Result<T>,
    ) -> Result<T> {
        let mut attempt = 0;
        loop {
            match solve(self.engine, floor) {
                Err(error) if error.code == ErrorCode::SolverFailed && attempt < 2 => {
                    self.lower_drifted(floor, attempt);
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// Lowers floors that drifted out of reach: at the first attempt to what the last program's
    /// allocation gives (as little as the drift needs) but never by more than `DRIFT_SLACK`
    /// (the last program may predate the floors: the first on the engine after decomposed
    /// levels), at the second by `DRIFT_SLACK`. A blanket 1e-6 alone put 500 jobs' levels 7e-6
    /// off.
    fn lower_drifted(&self, floor: &mut [f64], attempt: usize) {
        if attempt == 0 {
            let given = self.engine.throughputs(
                &self.engine.last_allocation(),
                &self.engine.last_pair_time(),
                &self.engine.last_unconsolidated(),
            );
            let lower = |f: f64, g: f64| f.min(g).max(f * (1.0 - DRIFT_SLACK)) * (1.0 - HANDOVER_SLACK);
            floor.iter_mut().zip(&given).for_each(|(f, &g)| *f = lower(*f, g));
        } else {
            floor.iter_mut().for_each(|f| *f *= 1.0 - DRIFT_SLACK);
        }
    }
}

/// A level on the engine's kept model: `max c` with every job at `floor_m + c·unit·rate_m`, `c`
/// free (its optimum is ≥ 0 when the last allocation meets every floor) so that no bound absorbs
/// its reduced cost and the duals always name binding rows. Only `c`, the duals and the class
/// totals are wanted on the way (`allocate: false`).
fn level_program(floor: &[f64], rate: &[f64], unit: f64) -> Program {
    let needs = (0..floor.len())
        .map(|m| Need {
            base: floor[m],
            terms: if rate[m] > 0.0 { smallvec::smallvec![(0, rate[m] * unit)] } else { Terms::new() },
        })
        .collect();
    let mut program = Program::new(Sense::Maximize, needs);
    program.keep_model = true;
    program.precise = true;
    program.allocate = false;
    program.add_var(1.0, f64::NEG_INFINITY, f64::INFINITY);
    program
}

/// Whether some active jobs are proven stuck and others are still undecided.
fn binding_only(stuck: &[bool], active: &[bool], frozen: &[bool]) -> bool {
    let undecided = (0..stuck.len()).any(|m| active[m] && !stuck[m] && !frozen[m]);
    undecided && stuck.iter().any(|&s| s)
}

/// Runs water-filling with the given reweighting.
pub fn water_fill(problem: &Problem, backend: Backend, reweighting: &dyn Reweighting) -> Result<Outcome> {
    match fill(problem, backend, reweighting, true) {
        // Floors galloping levels built that the engine cannot take over (seen once in many
        // random hierarchies, from the decomposition: HiGHS calls them infeasible although an
        // allocation meets them to 1e-9): water-filling runs again on the engine alone, one
        // level at a time.
        Err(error)
            if error.code == ErrorCode::SolverFailed
                && reweighting.forest(problem, &vec![false; problem.num_jobs()]).is_some() =>
        {
            let mut outcome = fill(problem, backend, reweighting, false)?;
            let why = format!(
                "the galloping levels could not be continued on the LP ({error}); solved one level at a time on the LP"
            );
            outcome.method = Some(MethodReport::lp(Some(why)));
            Ok(outcome)
        }
        other => other,
    }
}

/// Water-filling, with levels galloping past ceilings (on the decomposition, or on the engine's
/// LP) where `gallop`, the reweighting and the rows allow; otherwise one level at a time.
fn fill(problem: &Problem, backend: Backend, reweighting: &dyn Reweighting, gallop: bool) -> Result<Outcome> {
    let n = problem.num_jobs();
    let sf = scale_factors(problem);
    let mut engine = engine(problem, backend);
    let class_of = engine.class_of();
    // Levels gallop past ceilings when the reweighting is a forest of entities; level by level,
    // the decomposition is no faster than the engine's kept model.
    let decompose = gallop && reweighting.forest(problem, &vec![false; n]).is_some();
    let gallop_on_lp = decompose && engine.gallops_on_lp();
    let mut levels = Levels { engine: &mut engine, decompose, gallop_on_lp, decomposed: None, unhanded: false };
    let ceiling = ceilings(problem);
    let thr_equal = problem.equal_share_throughput();
    let rate_unit: Vec<f64> = (0..n).map(|m| thr_equal[m] / sf[m] as f64).collect();

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
        let mut weights = reweighting.weights(problem, &frozen);
        let mut active: Vec<bool> = (0..n).map(|m| !frozen[m] && weights[m] > 0.0).collect();
        if !active.iter().any(|&a| a) {
            break;
        }
        first_weights.get_or_insert_with(|| weights.clone());
        // (sf/w)·Δnt = c for every active job  ⟺  Δthr_m = c · w_m·thr_equal_m/sf_m.
        let mut rate: Vec<f64> = (0..n).map(|m| if active[m] { weights[m] * rate_unit[m] } else { 0.0 }).collect();
        let gallops = levels.decompose || levels.gallop_on_lp;
        let galloped = match gallops.then(|| reweighting.forest(problem, &frozen)).flatten() {
            Some(forest) => {
                if !levels.decompose {
                    levels.hand_over(&mut floor);
                }
                match Trajectory::new(&forest, &floor, &ceiling, &rate_unit) {
                    Some(path) => levels.gallop(&path)?,
                    None => {
                        (levels.decompose, levels.gallop_on_lp) = (false, false);
                        None
                    }
                }
            }
            None => None,
        };
        let before = floor.clone();
        // The jobs a galloping level took to their ceilings, with the weights they rose at.
        let mut capped: Vec<(usize, f64)> = Vec::new();
        let binding = match galloped {
            Some(g) => {
                lp_solves += g.lp_solves;
                // The level ends after its freezes: the rising jobs are those left, at their
                // weights and rates there.
                (floor, capped, active, rate, weights) = (g.floor, g.capped, g.rising, g.rate, g.weights);
                g.binding
            }
            None => {
                let Level { c, binding, lp_solves: solves } = levels.raise_on_engine(&mut floor, &active, &rate)?;
                lp_solves += solves;
                (0..n).filter(|&m| active[m]).for_each(|m| floor[m] += c * rate[m]);
                binding
            }
        };
        // A job still within round-off of 0 (`START_TOLERANCE` of its ceiling) has not risen.
        let rose = (0..n).any(|m| {
            floor[m] - before[m] > RISE_TOLERANCE * before[m]
                && floor[m] > before[m]
                && floor[m] > START_TOLERANCE * ceiling[m]
        });

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
                Some(b) => (0..n).map(|m| active[m] && b[m]).collect(),
                None => {
                    let (found, solves) = levels.bottlenecks(&mut floor, &active)?;
                    lp_solves += solves;
                    found
                }
            }
        };
        capped.iter().for_each(|&(m, _)| stuck[m] = true);
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
            let again = levels.raise(&mut floor, &open, &rate)?;
            lp_solves += again.lp_solves;
            if (0..n).any(|m| open[m] && again.c * rate[m] > RISE_TOLERANCE * floor[m]) {
                break;
            }
            let proven: Vec<usize> =
                (0..n).filter(|&m| open[m] && again.binding.as_ref().is_some_and(|b| b[m])).collect();
            if proven.is_empty() {
                let (found, solves) = levels.bottlenecks(&mut floor, &open)?;
                lp_solves += solves;
                (0..n).filter(|&m| found[m]).for_each(|m| stuck[m] = true);
                break;
            }
            proven.into_iter().for_each(|m| stuck[m] = true);
        }
        if !stuck.iter().any(|&s| s) {
            // At the optimal level some active job is stuck. If the duals' round-off hides it, the
            // exact group test finds it; if that finds none either, stop them all.
            let (found, solves) = levels.bottlenecks(&mut floor, &active)?;
            lp_solves += solves;
            stuck = if found.iter().any(|&s| s) { found } else { active.clone() };
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
        // A job taken to its ceiling on the way froze at the weight it rose at.
        for &(m, weight) in &capped {
            level[m] = sf[m] as f64 / weight * floor[m] / thr_equal[m];
        }
        // A job that froze at 0 had its turn and got no time: the GPUs may be full for the jobs
        // still waiting theirs at 0 (weight 0, behind a `fifo` entity's next job). Floors only
        // rise, so if none of them can start now none ever will: each would take a level of
        // height 0 at its turn, and they freeze at 0 here instead, in one LP. Only once every job
        // of this level still at 0 is frozen (the duals may prove some of them a level of height
        // 0 later), so that the jobs frozen here are those waiting behind them.
        let at_zero = |m: usize| floor[m] <= START_TOLERANCE * ceiling[m];
        let starved = (0..n).any(|m| stuck[m] && at_zero(m)) && !(0..n).any(|m| active[m] && !frozen[m] && at_zero(m));
        if starved && !levels.decompose {
            let next = reweighting.weights(problem, &frozen);
            let waiting: Vec<bool> = (0..n).map(|m| !frozen[m] && next[m] == 0.0 && at_zero(m)).collect();
            if waiting.iter().any(|&w| w) {
                let (none, solves) = levels.none_can_start(&mut floor, &waiting, &ceiling)?;
                lp_solves += solves;
                if none {
                    for m in (0..n).filter(|&m| waiting[m]) {
                        frozen[m] = true;
                        frozen_at[m] = *index;
                        level[m] = 0.0;
                    }
                }
            }
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
