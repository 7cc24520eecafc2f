//! The exact engine behind every "raise the worst job" policy. In its general form each job m
//! has a required throughput that is affine in a few shared LP variables,
//! `need_m = base_m + Σ_v coef[m][v]·var_v`, and the engine optimizes a linear objective over
//! those variables subject to `thr_m ≥ need_m` on a feasible allocation. LAS, makespan and
//! finish-time fairness are `need_m = z·demand_m` (maximize z); water-filling adds the frozen
//! jobs' floors to `base`; its bottleneck test raises groups of jobs by `ε_g`.
//!
//! Jobs with the same throughput row and scale factor form a *class*. The LP is solved over
//! class totals `Y[c][w]` (Σ over the class of `X[m][w]`), which is exact because a class can
//! split `Y` among its jobs with required throughputs `d_1 ≥ … ≥ d_n` iff for every k the k
//! largest fit in the k best units of time, `Σ_{i≤k} d_i ≤ F_Y(k) = max{T·y : 0 ≤ y ≤ Y, Σy ≤ k}`
//! (for k = n this is the class-total row, given the class-time row `Σ_w Y ≤ n`). By LP duality
//! `F_Y(k) = min_λ λk + Σ_w (T_w − λ)⁺ Y_w` over `λ ∈ {0} ∪ {T_w}`; so for any set S of k jobs,
//! `Σ_w (T_w − λ)⁺ Y_w − Σ_{m∈S} Σ_v coef[m][v]·var_v ≥ Σ_{m∈S} base_m − λk` is a valid linear
//! cut, added lazily for the most violated (S = the k currently largest, λ) while one is
//! violated. There are finitely many, so the loop ends. The split itself is constructive
//! (`split_class`): the largest remaining job takes the *latest* unit-length window of the
//! remaining speed-sorted time that still meets its need. See `formulations/max_min_ratio.md`.
//!
//! With space sharing, pair columns `Y[k][w]` join the LP: they use `sf` GPUs of `w`, time of
//! both jobs, and add `T_k[m][w]·Y[k][w]` to each job's throughput. A job in a kept pair is a
//! class of its own (its pairs set it apart), so its class rows are its own rows and the pair
//! terms sit in them directly; no cut is ever needed for it.

//!
//! The engine by concern: [`program`] (what a caller states: the instance, the needs, the
//! program and its solution), [`class`] (classes of identical jobs, their top-k cuts and the split
//! of a class total among its jobs), [`model`] (the LP of one program: building it, the cut loop,
//! a kept model's re-solve), [`pricing`] (space sharing's pair columns priced in from the duals),
//! [`decomposition`] (`max_ratio` on mostly distinct rows by prices, in time linear in the jobs),
//! [`method`] (which of the two solves `max_ratio`); this file holds the `Engine` and the entry
//! points.

mod class;
mod decomposition;
mod method;
mod model;
mod pricing;
mod program;

pub use decomposition::DecompositionOptions;
pub(crate) use decomposition::{fatal, fit_capacity, place_ambiguous};
pub(crate) use method::mostly_distinct;
pub use method::{Method, MethodReport};
pub use program::{Instance, Need, Program, Raised, RatioSolution, Solved, Terms};

use crate::error::Result;
use crate::formulation::group_identical;
use crate::lp::{Backend, Sense};
use crate::problem::Matrix;
use crate::space_sharing::Pair;
use class::{split_class, ClassShape, ClassTotal, PoolCut};
use model::Kept;
use rustc_hash::FxHashMap;
use std::collections::HashSet;

/// How far apart (relative) the floors' levels may be for `best_value_at_floors` to take them
/// as one level of the kept ratio's needs.
const FLOOR_AGREEMENT: f64 = 1e-11;

/// `need_m = z·demand_m`, z being the program's first variable.
fn ratio_needs(demand: &[f64]) -> Vec<Need> {
    demand.iter().map(|&d| Need { base: 0.0, terms: smallvec::smallvec![(0, d)] }).collect()
}

/// Relative tolerance under which a top-k condition counts as met.
const CUT_TOLERANCE: f64 = 1e-9;
/// A dual above this marks a binding row (duals here are O(1/jobs); round-off stays far below).
const BINDING_DUAL: f64 = 1e-9;
/// A group whose best relative raise is at most this is a bottleneck (LP round-off stays below).
const RAISE_TOLERANCE: f64 = 1e-6;

/// The engine for one instance: jobs grouped into classes once, and every cut found so far kept
/// to seed the next program, so a sequence of programs (water-filling's levels and bottleneck
/// tests, a bisection's probes) does not rediscover them.
pub struct Engine<'a> {
    instance: Instance<'a>,
    backend: Backend,
    shapes: Vec<ClassShape>,
    /// Whether `shapes` has been built (`shape`).
    shaped: bool,
    pool: Vec<PoolCut>,
    /// Pool index of each cut, by (class, λ index, sorted members).
    pooled: FxHashMap<(usize, usize, Vec<usize>), usize>,
    /// The model of the last program that asked to keep it.
    kept: Option<Kept>,
    /// The class totals of the last program solved without its split (see `last_allocation`).
    last_totals: Option<Vec<ClassTotal>>,
    /// The pair time of that program.
    last_pair_time: Vec<Vec<f64>>,
    /// The unconsolidated time of that program.
    last_unconsolidated: Matrix,
    /// `(pair, type)` columns with time in the last solution: they seed the next fresh model.
    pair_pool: HashSet<(usize, usize)>,
    /// How `max_ratio` is solved, and how hard the decomposition tries.
    method: Method,
    options: DecompositionOptions,
    /// What solved the last `max_ratio`.
    report: Option<MethodReport>,
    /// The prices of the last decomposition: the next one starts from them.
    warm_prices: Option<Vec<f64>>,
    /// Whether `max_ratio` keeps its model for the program that follows (`keeping_models`).
    keep_models: bool,
    /// The demands of the last `max_ratio` whose model is kept, in the LP's unit of `z`, while
    /// its program is the last one solved.
    kept_ratio: Option<Vec<f64>>,
    /// Whether the last program solved was a `max_ratio_deferring_split` that left its split
    /// undone (`last_allocation` makes it).
    split_deferred: bool,
}

impl<'a> Engine<'a> {
    pub fn new(instance: Instance<'a>, backend: Backend) -> Engine<'a> {
        Engine {
            instance,
            backend,
            shapes: Vec::new(),
            shaped: false,
            pool: Vec::new(),
            pooled: FxHashMap::default(),
            kept: None,
            last_totals: None,
            last_pair_time: Vec::new(),
            last_unconsolidated: Matrix::zeros(0, 0),
            pair_pool: HashSet::new(),
            method: Method::Auto,
            options: DecompositionOptions::default(),
            report: None,
            warm_prices: None,
            keep_models: false,
            kept_ratio: None,
            split_deferred: false,
        }
    }

    /// The same engine solving `max_ratio` by `method` (the decomposition with `options`).
    pub fn with_method(mut self, method: Method, options: DecompositionOptions) -> Engine<'a> {
        self.method = method;
        self.options = options;
        self
    }

    /// The same engine starting its first decomposition from `prices` (an earlier solve's on this
    /// cluster) instead of a sample's.
    pub fn with_warm_prices(mut self, prices: Option<Vec<f64>>) -> Engine<'a> {
        self.warm_prices = prices;
        self
    }

    /// The same engine keeping the model of every `max_ratio` it solves by the plain LP on jobs
    /// that repeat rows (`repeats_rows`), so that the program that follows (the tie-break's second
    /// solve) starts from its rows and cuts instead of building a model of its own.
    pub fn keeping_models(mut self) -> Engine<'a> {
        self.keep_models = true;
        self
    }

    /// What solved the last `max_ratio` (`None` before the first, or when no LP was needed).
    pub fn method_report(&self) -> Option<MethodReport> {
        self.report.clone()
    }

    /// Groups the jobs into classes, once (the decomposition never needs them, so they are built
    /// on first use).
    fn shape(&mut self) {
        if self.shaped {
            return;
        }
        self.shaped = true;
        let instance = &self.instance;
        let num_types = instance.throughput.cols();
        let mut paired = vec![false; instance.throughput.rows()];
        for pair in &instance.pairs {
            pair.jobs.iter().for_each(|&m| paired[m] = true);
        }
        // A placement-sensitive job is set apart by its unconsolidated columns.
        if let Some(tu) = &instance.unconsolidated {
            (0..tu.rows()).filter(|&m| tu.row(m).iter().any(|&v| v > 0.0)).for_each(|m| paired[m] = true);
        }
        self.shapes = group_identical(instance.throughput, &instance.scale_factor, &paired)
            .into_iter()
            .map(|jobs| {
                let row = instance.throughput.row(jobs[0]);
                let mut types: Vec<usize> =
                    (0..num_types).filter(|&w| row[w] > 0.0 && instance.capacity[w] > 0.0).collect();
                types.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
                ClassShape { row: row.to_vec(), scale_factor: instance.scale_factor[jobs[0]], types, jobs }
            })
            .collect();
    }

    /// The per-job allocation of the last program solved with `allocate: false`: its class totals
    /// split among their jobs. Every job gets at least its need in that program.
    pub fn last_allocation(&self) -> Matrix {
        let mut allocation = Matrix::zeros(self.instance.throughput.rows(), self.instance.throughput.cols());
        for total in self.last_totals.iter().flatten() {
            split_class(&self.shapes[total.class], &total.y, &total.sorted, &mut allocation);
        }
        allocation
    }

    /// The pair time of that program (`pair_time[i][w]`, aligned with `Instance::pairs`).
    pub fn last_pair_time(&self) -> Vec<Vec<f64>> {
        self.last_pair_time.clone()
    }

    /// The unconsolidated time of that program.
    pub fn last_unconsolidated(&self) -> Matrix {
        self.last_unconsolidated.clone()
    }

    /// No unconsolidated time, in the shape this instance reports it.
    pub fn no_unconsolidated(&self) -> Matrix {
        match &self.instance.unconsolidated {
            Some(tu) => Matrix::zeros(tu.rows(), tu.cols()),
            None => Matrix::zeros(0, 0),
        }
    }

    /// The pairs the engine formulates with.
    pub fn pairs(&self) -> &[Pair] {
        &self.instance.pairs
    }

    /// `thr_m = Σ_w T[m][w]·X[m][w] + Σ_{k∋m} Σ_w T_k[m][w]·Y[k][w] + Σ_w T^u[m][w]·U[m][w]`.
    pub fn throughputs(&self, allocation: &Matrix, pair_time: &[Vec<f64>], unconsolidated: &Matrix) -> Vec<f64> {
        let t = self.instance.throughput;
        let mut thr: Vec<f64> =
            t.row_iter().zip(allocation.row_iter()).map(|(t, x)| crate::problem::dot(t, x)).collect();
        if let Some(tu) = &self.instance.unconsolidated {
            for (m, thr_m) in thr.iter_mut().enumerate().take(unconsolidated.rows()) {
                *thr_m += crate::problem::dot(tu.row(m), unconsolidated.row(m));
            }
        }
        crate::space_sharing::add_pair_throughput(&mut thr, &self.instance.pairs, pair_time);
        thr
    }

    /// The pool index of a cut, adding it if new.
    fn pooled_index(&mut self, class: usize, mut members: Vec<usize>, lambda: usize) -> usize {
        members.sort_unstable();
        let pool = &mut self.pool;
        *self.pooled.entry((class, lambda, members.clone())).or_insert_with(|| {
            pool.push(PoolCut { class, members, lambda, tight: false });
            pool.len() - 1
        })
    }

    /// Solves a `Program` exactly.
    pub fn solve_program(&mut self, program: &Program) -> Result<Solved> {
        // Whatever this program keeps, it is no longer the last `max_ratio`'s model.
        self.kept_ratio = None;
        self.split_deferred = false;
        self.shape();
        let shapes = std::mem::take(&mut self.shapes);
        let result = self.solve_with(&shapes, program);
        self.shapes = shapes;
        result
    }

    /// A unit for a variable that multiplies `rate[m]` in job m's need: the largest value it can
    /// take before some job with a rate needs more than its best type alone gives
    /// (`min_m T_max,m / rate_m`). Measured in it the variable is at most 1, whatever the units
    /// of throughputs and demands. `None` when no job has a rate; 0 when one of them can run nowhere.
    pub fn natural_unit(&self, rate: &[f64]) -> Option<f64> {
        let capacity = &self.instance.capacity;
        self.instance
            .throughput
            .row_iter()
            .zip(rate)
            .filter(|&(_, &r)| r > 0.0)
            .map(|(row, r)| ceiling(row, capacity) / r)
            .filter(|u| u.is_finite())
            .reduce(f64::min)
    }

    /// A solution with `z` and no time for anyone, solved by no LP.
    fn nothing_allocated(&self, z: Option<f64>) -> RatioSolution {
        let (rows, cols) = (self.instance.throughput.rows(), self.instance.throughput.cols());
        RatioSolution {
            z,
            allocation: Matrix::zeros(rows, cols),
            pair_time: vec![vec![0.0; cols]; self.instance.pairs.len()],
            unconsolidated: self.no_unconsolidated(),
            lp_solves: 0,
            classes: 0,
        }
    }

    /// Solves `max z s.t. thr_m ≥ z·demand_m` exactly. Jobs with zero demand get nothing.
    pub fn max_ratio(&mut self, demand: &[f64]) -> Result<RatioSolution> {
        self.max_ratio_with(demand, false)
    }

    /// `max_ratio` for a caller whose next program replaces the allocation (the tie-break's
    /// second solve on the kept model): when the model is kept, the split of its class totals
    /// among the jobs is not made, `RatioSolution::allocation` is 0 × 0 and `split_deferred`
    /// says so; `last_allocation` makes the split if it is wanted after all.
    pub fn max_ratio_deferring_split(&mut self, demand: &[f64]) -> Result<RatioSolution> {
        self.max_ratio_with(demand, true)
    }

    /// Whether the last program solved was a `max_ratio_deferring_split` that left its split
    /// undone.
    pub fn split_deferred(&self) -> bool {
        self.split_deferred
    }

    fn max_ratio_with(&mut self, demand: &[f64], defer_split: bool) -> Result<RatioSolution> {
        // Set again below when the plain LP leaves its split undone; every other path splits.
        self.split_deferred = false;
        let Some(unit) = self.natural_unit(demand) else {
            return Ok(self.nothing_allocated(None));
        };
        if unit == 0.0 {
            // Some job with a demand can run nowhere: no z > 0 is feasible.
            return Ok(self.nothing_allocated(Some(0.0)));
        }
        self.kept_ratio = None;
        // z measured in its natural unit, so the LP is well scaled whatever the demands' units.
        let fallback = match self.decomposition_applies(demand) {
            Ok(()) => {
                let scaled: Vec<f64> = demand.iter().map(|d| d * unit).collect();
                match self.decompose(None, &scaled)? {
                    Ok(found) => {
                        return Ok(RatioSolution {
                            z: Some(found.z * unit),
                            allocation: found.allocation,
                            pair_time: Vec::new(),
                            unconsolidated: self.no_unconsolidated(),
                            lp_solves: found.lp_solves,
                            classes: 0,
                        });
                    }
                    Err(why) => Some(why),
                }
            }
            Err(why) => why,
        };
        self.report = Some(MethodReport::lp(fallback));
        let scaled: Vec<f64> = demand.iter().map(|d| d * unit).collect();
        let mut program = Program::new(Sense::Maximize, ratio_needs(&scaled));
        program.add_var(1.0, 0.0, f64::INFINITY);
        program.keep_model = self.keep_models && self.repeats_rows();
        program.allocate = !(defer_split && program.keep_model);
        let solved = self.solve_program(&program)?;
        if program.keep_model {
            self.kept_ratio = Some(scaled);
        }
        self.split_deferred = !program.allocate;
        Ok(RatioSolution {
            z: Some(solved.vars[0] * unit),
            allocation: solved.allocation,
            pair_time: solved.pair_time,
            unconsolidated: solved.unconsolidated,
            lp_solves: solved.lp_solves,
            classes: solved.classes,
        })
    }

    /// After a `max_ratio` that kept its model, the best allocation for `value` (a unit of job m's
    /// throughput is worth `value[m]`) among those that give every job at least `floor[m]`, when
    /// those floors are that optimum's needs at one level of z within `FLOOR_AGREEMENT` (the
    /// tie-break's: the optimum's, lowered by a relative slack). The model keeps its rows and
    /// cuts, `z` gets the level as its lower bound and no value, and the primal simplex goes on
    /// from the optimum's basis, which stays feasible. `None` when there is no such model or the
    /// floors are not its needs; the caller then solves its own program.
    pub fn best_value_at_floors(&mut self, floor: &[f64], value: &[f64]) -> Option<Result<Solved>> {
        let demand = self.kept_ratio.as_ref()?;
        self.kept.as_ref()?;
        // The level that keeps every need at most its floor, and whether it is the floors' level.
        let mut level = f64::INFINITY;
        let mut highest: f64 = 0.0;
        for (&f, &d) in floor.iter().zip(demand) {
            if d > 0.0 {
                level = level.min(f / d);
                highest = highest.max(f / d);
            } else if f > 0.0 {
                return None;
            }
        }
        if !level.is_finite() || highest > level * (1.0 + FLOOR_AGREEMENT) {
            return None;
        }
        let mut program = Program::new(Sense::Maximize, ratio_needs(demand));
        program.add_var(0.0, level, f64::INFINITY);
        program.keep_model = true;
        program.precise = true;
        program.throughput_value = Some(value.to_vec());
        program.from_last_optimum = true;
        Some(self.solve_program(&program))
    }

    /// `max z s.t. thr_m ≥ base_m + z·demand_m` by the decomposition, from the last solve's
    /// prices; a certified answer is reported and its prices kept for the next solve.
    fn decompose(
        &mut self,
        base: Option<&[f64]>,
        demand: &[f64],
    ) -> Result<std::result::Result<decomposition::Decomposed, String>> {
        let options = self.options;
        let found = decomposition::solve(
            self.instance.throughput,
            &self.instance.scale_factor,
            &self.instance.capacity,
            base,
            demand,
            self.backend,
            &options,
            self.warm_prices.as_deref(),
        )?;
        if let Ok(found) = &found {
            self.report = Some(MethodReport {
                prices: Some(found.prices.clone()),
                ..MethodReport::decomposition(found.rounds, found.ambiguous)
            });
            self.warm_prices = Some(found.prices.clone());
        }
        Ok(found)
    }

    /// One level of water-filling on mostly distinct rows: `max c s.t. thr_m ≥ floor_m + c·rate_m`
    /// by the price decomposition, starting from the last solve's prices. `Ok(None)` when the
    /// decomposition does not apply to the jobs with a rate or a floor (as `max_ratio` decides) or
    /// cannot certify; the report then says which, and the caller solves the level as a
    /// `Program`. A positive rate on a job that can run nowhere is also `None`.
    pub fn raise_floors(&mut self, floor: &[f64], rate: &[f64]) -> Result<Option<Raised>> {
        let Some(unit) = self.natural_unit(rate).filter(|&u| u > 0.0) else {
            return Ok(None);
        };
        let part: Vec<f64> = (0..rate.len()).map(|m| if rate[m] > 0.0 || floor[m] > 0.0 { 1.0 } else { 0.0 }).collect();
        if let Err(why) = self.decomposition_applies(&part) {
            // The plain LP by choice leaves no report, as for any engine program.
            if why.is_some() {
                self.report = Some(MethodReport::lp(why));
            }
            return Ok(None);
        }
        let scaled: Vec<f64> = rate.iter().map(|r| r * unit).collect();
        match self.decompose(Some(floor), &scaled)? {
            Ok(found) => Ok(Some(Raised {
                c: found.z * unit,
                allocation: found.allocation,
                binding: found.binding,
                lp_solves: found.lp_solves,
            })),
            Err(why) => {
                self.report = Some(MethodReport::lp(Some(why)));
                Ok(None)
            }
        }
    }

    /// Whether the fixed throughputs `need` cannot all be given: the largest `Σ_m f_m(p) − G·p`
    /// found over GPU prices p on the simplex (`f_m(p)`: job m's cheapest cost of its need at p),
    /// relative to the GPUs, and the prices where. Positive proves the needs do not fit; at most 0
    /// says they do, as far as the search found. O(jobs × types) per price tried. The search stops
    /// at the first excess above `enough` (relative, as the result).
    pub fn capacity_excess(&self, need: &[f64], start: &[f64], enough: f64) -> Result<(f64, Vec<f64>)> {
        let capacity = &self.instance.capacity;
        let scale = capacity.iter().sum::<f64>().max(1.0);
        let (value, prices) = decomposition::excess(
            self.instance.throughput,
            &self.instance.scale_factor,
            capacity,
            need,
            start,
            enough * scale,
            self.backend,
        )?;
        Ok((value / scale, prices))
    }

    /// Whether water-filling's levels may run on past ceilings with this engine's own LP as the
    /// probe, where the decomposition cannot: `method: auto` on mostly distinct rows, whose levels
    /// nearly all end at one job's ceiling, without pairs. Under `method: lp` levels stay one at a
    /// time. With pairs a probe far from the last basis costs the LP hundreds of near steps (2–5 s
    /// against about 20 ms at 2,000 jobs), and no Lagrangian over types bounds where the level
    /// ends (`types_relax`), so the probes' search made the solve slower.
    pub fn gallops_on_lp(&self) -> bool {
        let every = vec![1.0; self.instance.throughput.rows()];
        self.method == Method::Auto
            && self.instance.pairs.is_empty()
            && method::mostly_distinct(self.instance.throughput, &self.instance.scale_factor, &every)
    }

    /// Whether `capacity_excess` relaxes this engine's model: no pairs, and no job faster spread
    /// over servers than consolidated (then the slot rows only take allocations away).
    pub fn types_relax(&self) -> bool {
        let throughput = self.instance.throughput;
        self.instance.pairs.is_empty()
            && self.instance.unconsolidated.as_ref().is_none_or(|spread| {
                (0..spread.rows()).all(|m| (0..spread.cols()).all(|w| spread.get(m, w) <= throughput.get(m, w)))
            })
    }

    /// Starts the next decomposition from `prices` (an estimate; the certificate decides).
    pub fn warm_start(&mut self, prices: Vec<f64>) {
        self.warm_prices = Some(prices);
    }

    /// Whether `max_ratio(demand)` goes to the decomposition: `Ok(())` if so, otherwise why not
    /// (`None`: the plain LP was the choice, not a fallback).
    fn decomposition_applies(&self, demand: &[f64]) -> std::result::Result<(), Option<String>> {
        let forced = match self.method {
            Method::Lp => return Err(None),
            Method::Decomposition => true,
            Method::Auto => false,
        };
        let refuse = |why: &str| Err(forced.then(|| why.to_string()));
        if !self.instance.pairs.is_empty() {
            return refuse("space sharing pairs are formulated by the plain LP only");
        }
        if self.instance.unconsolidated.is_some() {
            return refuse("placement sensitivity is formulated by the plain LP only");
        }
        if !forced && !method::mostly_distinct(self.instance.throughput, &self.instance.scale_factor, demand) {
            return Err(None);
        }
        Ok(())
    }

    /// Which of the `candidates` are bottlenecked: no allocation gives them more than `floor`
    /// while every job keeps `thr_m ≥ floor[m]`. Exact: jobs of one class with equal floors are
    /// symmetric and share one raise variable `ε_g` (the average of their individual raises
    /// raises them all); `max Σ ε_g` finds at least one raisable group while any exists, and a
    /// zero optimum proves the rest are bottlenecks. Returns the flags and the LP solves.
    pub fn bottlenecks(&mut self, floor: &[f64], candidates: &[bool]) -> Result<(Vec<bool>, usize)> {
        self.shape();
        let mut open: Vec<usize> = (0..floor.len()).filter(|&m| candidates[m] && floor[m] > 0.0).collect();
        let mut lp_solves = 0;
        while !open.is_empty() {
            let mut needs: Vec<Need> = floor.iter().map(|&f| Need { base: f, terms: Terms::new() }).collect();
            let mut program = Program::new(Sense::Maximize, Vec::new());
            let mut group_of: FxHashMap<(usize, u64), usize> = FxHashMap::default();
            let mut members: Vec<Vec<usize>> = Vec::new();
            let class_of = self.class_of();
            for &m in &open {
                let g = *group_of.entry((class_of[m], floor[m].to_bits())).or_insert_with(|| {
                    members.push(Vec::new());
                    program.add_var(1.0, 0.0, 1.0)
                });
                members[g].push(m);
                needs[m].terms.push((g, floor[m]));
            }
            program.needs = needs;
            let solved = self.solve_program(&program)?;
            lp_solves += solved.lp_solves;
            let raised: Vec<usize> = (0..members.len()).filter(|&g| solved.vars[g] > RAISE_TOLERANCE).collect();
            if raised.is_empty() {
                break;
            }
            let raised: HashSet<usize> = raised.into_iter().flat_map(|g| members[g].iter().copied()).collect();
            open.retain(|m| !raised.contains(m));
        }
        let mut flags = vec![false; floor.len()];
        for m in open {
            flags[m] = true;
        }
        Ok((flags, lp_solves))
    }

    /// Whether jobs repeat rows: at most half as many classes as jobs. On mostly distinct rows a
    /// kept model is no faster to re-solve with a new objective than a new one (measured: at 512
    /// jobs each its own class, the tie-break's second solve took 1.6 times as long on the
    /// optimum's model), so `keeping_models` keeps none there.
    fn repeats_rows(&mut self) -> bool {
        self.shape();
        2 * self.shapes.len() <= self.instance.throughput.rows()
    }

    /// `class_of[m]`: the class of job m (jobs in one class share row and scale factor).
    pub fn class_of(&mut self) -> Vec<usize> {
        self.shape();
        let mut class_of = vec![0; self.instance.throughput.rows()];
        for (c, shape) in self.shapes.iter().enumerate() {
            for &m in &shape.jobs {
                class_of[m] = c;
            }
        }
        class_of
    }
}

/// A job's ceiling: its throughput (`row`) with all of its time on its fastest type with GPUs. No
/// allocation gives it more.
pub fn ceiling(row: &[f64], capacity: &[f64]) -> f64 {
    row.iter().zip(capacity).filter(|&(_, &g)| g > 0.0).map(|(&t, _)| t).fold(0.0, f64::max)
}

/// Solves `max z s.t. thr_m ≥ z·demand_m` once (see `Engine::max_ratio`).
pub fn solve(instance: &Instance, demand: &[f64], backend: Backend) -> Result<RatioSolution> {
    Engine::new(instance.clone(), backend).max_ratio(demand)
}

/// Solves one `Program` (see `Engine::solve_program`).
pub fn solve_program(instance: &Instance, program: &Program, backend: Backend) -> Result<Solved> {
    Engine::new(instance.clone(), backend).solve_program(program)
}

/// One bottleneck test (see `Engine::bottlenecks`).
pub fn bottlenecks(
    instance: &Instance,
    floor: &[f64],
    candidates: &[bool],
    backend: Backend,
) -> Result<(Vec<bool>, usize)> {
    Engine::new(instance.clone(), backend).bottlenecks(floor, candidates)
}

#[cfg(test)]
mod tests {
    use super::class::latest_window;
    use super::*;

    fn two_types(rows: &[[f64; 2]]) -> Matrix {
        let mut t = Matrix::zeros(rows.len(), 2);
        for (m, r) in rows.iter().enumerate() {
            t.set(m, 0, r[0]);
            t.set(m, 1, r[1]);
        }
        t
    }

    #[test]
    fn latest_window_meets_need_as_late_as_possible() {
        // One unit at speed 2, one at speed 1: a need of 1.5 is met by [0.5, 1.5].
        let a = latest_window(&[2.0, 1.0], &[1.0, 1.0], 1.5);
        assert!((a - 0.5).abs() < 1e-12, "{a}");
        // A need of 1 fits in the slow unit alone.
        assert!((latest_window(&[2.0, 1.0], &[1.0, 1.0], 1.0) - 1.0).abs() < 1e-12);
    }

    /// Two single-GPU jobs on one GPU of each of two types.
    fn one_gpu_each(t: &Matrix) -> Instance<'_> {
        Instance {
            throughput: t,
            scale_factor: vec![1, 1],
            capacity: vec![1.0, 1.0],
            pairs: Vec::new(),
            unconsolidated: None,
            consolidated_slots: Vec::new(),
        }
    }

    #[test]
    fn equal_demands_share_fast_and_slow_time() {
        // Two identical jobs, each needing 1.5 from one fast (2) and one slow (1) GPU:
        // taking the fastest time first would starve the second job.
        let t = two_types(&[[2.0, 1.0], [2.0, 1.0]]);
        let inst = one_gpu_each(&t);
        let sol = solve(&inst, &[1.0, 1.0], Backend::default()).unwrap();
        let z = sol.z.unwrap();
        assert!((z - 1.5).abs() < 1e-7, "{z}");
        for m in 0..2 {
            let thr = 2.0 * sol.allocation.get(m, 0) + sol.allocation.get(m, 1);
            assert!(thr >= 1.5 - 1e-7, "job {m}: {thr}");
        }
    }

    /// Four jobs of one class that run twice as fast on 4 GPUs of type 0 as on type 1, and one
    /// that runs only on the single GPU of type 1: it is the bottleneck (z = 1 at demands of 1),
    /// and the others can all have a whole GPU of type 0, whatever the optimum's vertex gave them.
    fn one_bottleneck() -> Matrix {
        two_types(&[[2.0, 1.0], [2.0, 1.0], [2.0, 1.0], [2.0, 1.0], [0.0, 1.0]])
    }

    fn on_four_and_one(t: &Matrix) -> Instance<'_> {
        Instance {
            throughput: t,
            scale_factor: vec![1; 5],
            capacity: vec![4.0, 1.0],
            pairs: Vec::new(),
            unconsolidated: None,
            consolidated_slots: Vec::new(),
        }
    }

    #[test]
    fn the_best_value_at_the_optimums_floors_goes_on_from_its_model() {
        let t = one_bottleneck();
        let instance = on_four_and_one(&t);
        let demand = [1.0; 5];
        let mut engine = Engine::new(instance.clone(), Backend::default()).keeping_models();
        let z = engine.max_ratio(&demand).unwrap().z.unwrap();
        assert!((z - 1.0).abs() < 1e-9, "{z}");
        // Floors that are not one level of the needs: the caller solves its own program.
        let uneven = [1.0, 1.0, 1.0, 1.0, 0.5];
        assert!(engine.best_value_at_floors(&uneven, &[1.0; 5]).is_none());
        let floor: Vec<f64> = demand.iter().map(|d| d * z * (1.0 - 1e-9)).collect();
        let solved = engine.best_value_at_floors(&floor, &[1.0; 5]).expect("the optimum's model").unwrap();
        for m in 0..4 {
            assert!((solved.allocation.get(m, 0) - 1.0).abs() < 1e-9, "job {m}: {:?}", solved.allocation.row(m));
        }
        assert!((solved.allocation.get(4, 1) - 1.0).abs() < 1e-9);
        // The model was used once: a second call has nothing to go on from.
        assert!(engine.best_value_at_floors(&floor, &[1.0; 5]).is_none());
        // Without a kept model there is nothing to go on from either.
        let mut fresh = Engine::new(instance, Backend::default());
        fresh.max_ratio(&demand).unwrap();
        assert!(fresh.best_value_at_floors(&floor, &[1.0; 5]).is_none());
    }

    #[test]
    fn the_second_solve_has_every_condition_before_its_first_lp() {
        // Jobs 0-3 are one class (2 steps/s fast, 1 slow) with demands 3, 1, 1, 1; job 4 runs 4
        // on the one fast GPU, job 5 only on the six slow ones with demand 2, which makes it the
        // bottleneck: z* = 1/2, and job 0 needs 1.5 in its unit of time, so at least half a unit
        // fast. The optimum needs no cut for that (its class may hold the fast GPU); the second
        // solve, maximizing throughput, moves fast time to job 4 until job 0's condition binds.
        // With the needs settled, that cut is in the model before its first LP, the only one.
        let t = two_types(&[[2.0, 1.0], [2.0, 1.0], [2.0, 1.0], [2.0, 1.0], [4.0, 1.0], [0.0, 1.0]]);
        let instance = Instance {
            throughput: &t,
            scale_factor: vec![1; 6],
            capacity: vec![1.0, 6.0],
            pairs: Vec::new(),
            unconsolidated: None,
            consolidated_slots: Vec::new(),
        };
        let demand = [3.0, 1.0, 1.0, 1.0, 1.0, 2.0];
        let mut engine = Engine::new(instance.clone(), Backend::default()).keeping_models();
        let z = engine.max_ratio(&demand).unwrap().z.unwrap();
        assert!((z - 0.5).abs() < 1e-9, "{z}");
        let floor: Vec<f64> = demand.iter().map(|d| d * z * (1.0 - 1e-9)).collect();
        let solved = engine.best_value_at_floors(&floor, &[1.0; 6]).expect("the optimum's model").unwrap();
        assert_eq!(solved.lp_solves, 1);
        // Every job at its floor, every job's whole time used: job 0 half fast and half slow
        // (1.5), jobs 1-3 slow (1 each), job 4 the other half of the fast GPU (2.5), job 5 slow.
        let thr = engine.throughputs(&solved.allocation, &solved.pair_time, &solved.unconsolidated);
        assert!(thr.iter().zip(&floor).all(|(t, f)| t >= &(f * (1.0 - 1e-7))), "{thr:?} against {floor:?}");
        assert!((thr[4] - 2.5).abs() < 1e-7 && (thr.iter().sum::<f64>() - 8.0).abs() < 1e-7, "{thr:?}");
        // The same floors as constant needs on a fresh engine: settled too, one LP.
        let needs = floor.iter().map(|&base| Need { base, terms: Terms::new() }).collect();
        let mut program = Program::new(Sense::Maximize, needs);
        program.keep_model = true;
        program.throughput_value = Some(vec![1.0; 6]);
        program.add_var(0.0, 0.0, 0.0);
        let fresh = Engine::new(instance, Backend::default()).solve_program(&program).unwrap();
        assert_eq!(fresh.lp_solves, 1);
        let thr = engine.throughputs(&fresh.allocation, &fresh.pair_time, &fresh.unconsolidated);
        assert!((thr.iter().sum::<f64>() - 8.0).abs() < 1e-7, "{thr:?}");
    }

    #[test]
    fn a_split_left_for_the_second_solve_is_made_on_demand() {
        let t = one_bottleneck();
        let instance = on_four_and_one(&t);
        let demand = [1.0; 5];
        // An engine that keeps no model splits as `max_ratio` does.
        let mut plain = Engine::new(instance.clone(), Backend::default());
        let split = plain.max_ratio_deferring_split(&demand).unwrap();
        assert!(!plain.split_deferred());
        assert_eq!((split.allocation.rows(), split.allocation.cols()), (5, 2));
        // One that keeps it leaves the split undone, and makes it when asked.
        let mut engine = Engine::new(instance, Backend::default()).keeping_models();
        let deferred = engine.max_ratio_deferring_split(&demand).unwrap();
        assert!((deferred.z.unwrap() - 1.0).abs() < 1e-9);
        assert!(engine.split_deferred());
        assert_eq!((deferred.allocation.rows(), deferred.allocation.cols()), (0, 0));
        let made = engine.last_allocation();
        for m in 0..5 {
            let thr = 2.0 * made.get(m, 0) + made.get(m, 1);
            assert!(thr >= 1.0 - 1e-7, "job {m}: {:?}", made.row(m));
        }
        // The second solve goes on from the kept model, and what it solved is split.
        let floor = [1.0 - 1e-9; 5];
        let solved = engine.best_value_at_floors(&floor, &[1.0; 5]).expect("the optimum's model").unwrap();
        assert!(!engine.split_deferred());
        assert!((0..4).all(|m| (solved.allocation.get(m, 0) - 1.0).abs() < 1e-9), "{:?}", solved.allocation);
    }

    #[test]
    fn a_large_demand_needs_its_top_k_cut() {
        // Same class, demands 3:1 on one fast (2) and one slow (1) GPU. Without the k = 1 cut the
        // class total would allow z = 3/4, but the big job alone gets at most 2 → z = 2/3.
        let t = two_types(&[[2.0, 1.0], [2.0, 1.0]]);
        let inst = one_gpu_each(&t);
        let sol = solve(&inst, &[3.0, 1.0], Backend::default()).unwrap();
        assert!((sol.z.unwrap() - 2.0 / 3.0).abs() < 1e-7, "{:?}", sol.z);
        assert!(sol.lp_solves >= 2);
    }

    #[test]
    fn bottlenecks_are_the_jobs_that_cannot_improve() {
        // Job 0 runs only on type 0, job 1 on both; one GPU each. At floors (1, 1) job 0 holds
        // all of type 0 and cannot improve; job 1 could take more of type 1? It already has it all:
        // with floors (1, 0.5) job 1 can rise (to 1), job 0 cannot.
        let t = two_types(&[[1.0, 0.0], [1.0, 1.0]]);
        let inst = one_gpu_each(&t);
        let (flags, _) = bottlenecks(&inst, &[1.0, 0.5], &[true, true], Backend::default()).unwrap();
        assert_eq!(flags, vec![true, false]);
    }
}
