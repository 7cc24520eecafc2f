//! `max Σ_m a_m·thr_m` over per-job floors `thr_m ≥ f_m`, time rows and GPUs by price
//! decomposition, exact in time linear in jobs × types when rows are distinct: the tie-break's
//! second solve (`a_m = 1/thr_equal_m`, the optimum's floors) and `max_sum_throughput` (`a_m = 1`,
//! no floors). Jobs are coupled only through the k capacity rows; at GPU prices p each job's best use of its time is a
//! vertex of a two-row polytope (`best_response.rs`). So: prices that minimize the Lagrangian
//! bound (a sample's, then cutting planes over every job), every job classified by its best
//! response, the jobs nearest a change of vertex (*ambiguous*) kept as full columns in a small
//! recovery LP in which the others are constants in the capacity rows, and a certificate: at the
//! recovery LP's prices every fixed job's vertex is still its best response. Then the Lagrangian
//! bound at those prices equals the allocation's value, which is therefore optimal. Jobs that
//! fail join the ambiguous set; when it outgrows its bound, or the rounds run out, the caller
//! solves the plain LP and says why. See `formulations/max_weighted_throughput.md`.

mod best_response;
mod classification;
mod lagrangian;
mod per_dollar;
mod recovery;

pub(crate) use per_dollar::PerDollar;

use crate::error::Result;
use crate::lp::{Backend, SolveError};
use crate::max_min_ratio::{
    fatal, fit_capacity, mostly_distinct, place_ambiguous, DecompositionOptions, Method, MethodReport,
};
use crate::problem::{Matrix, Problem};
use crate::solver::band::{Absorbed, Band};
use crate::solver::cutting_planes::{self, Region};
use best_response::{JobView, Vertex};
use classification::Classification;
use lagrangian::Lagrangian;

/// The instance as the decomposition reads it.
pub(crate) struct Instance<'a> {
    pub(crate) throughput: &'a Matrix,
    pub(crate) scale_factor: &'a [u32],
    /// `a_m`: the value of one step/s of job m (`1 / thr_equal_m`).
    pub(crate) value: &'a [f64],
    /// The throughput each job must keep.
    pub(crate) floor: &'a [f64],
    /// Types with GPUs.
    pub(crate) usable: Vec<bool>,
    /// What a unit of a GPU's time on each type costs every job before any capacity price:
    /// `min_cost`'s `λ·cost_w` in Dinkelbach's step `max N − λ·D`; 0 for the tie-break.
    pub(crate) charge: &'a [f64],
}

impl Instance<'_> {
    fn job(&self, m: usize) -> JobView<'_> {
        JobView {
            row: self.throughput.row(m),
            sf: self.scale_factor[m] as f64,
            value: self.value[m],
            floor: self.floor[m],
            charge: self.charge,
        }
    }
}

/// An optimum found by decomposition.
pub(crate) struct Decomposed {
    pub(crate) allocation: Matrix,
    pub(crate) lp_solves: usize,
    /// Recovery LPs at the top level.
    pub(crate) rounds: usize,
    /// Jobs with full columns in the last recovery LP.
    pub(crate) ambiguous: usize,
    /// The GPU prices that certify the optimum (0 on types without GPUs).
    pub(crate) prices: Vec<f64>,
}

/// One level's result: its prices, the fixed jobs' vertices and the ambiguous jobs' time. A top
/// level is returned only certified; a sample level carries only its prices.
struct Level {
    prices: Vec<f64>,
    /// How far refining moved the prices from the sample's (`None`: no sample).
    moved: Option<f64>,
    fixed: Vec<(u32, Vertex)>,
    ambiguous: Vec<(u32, Vec<(usize, f64)>)>,
    rounds: usize,
    lp_solves: usize,
}

/// Where the top level's price search may start, before a sample's estimate.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Starts<'a> {
    /// The optimum's GPU prices, for the tie-break after it: their direction (`prices_from_hint`).
    pub(crate) ray: Option<&'a [f64]>,
    /// The last solve's prices on nearly the same jobs and GPUs (a session's previous tie-break):
    /// refined from where they are, in a smaller trust region, with a smaller first band.
    pub(crate) warm: Option<&'a [f64]>,
}

/// Prices are searched in `[0, PRICE_CEILING·P]`, P the most a GPU could be worth to a job with
/// no floor; the trust region starts at `TRUST·P`.
const PRICE_CEILING: f64 = 10.0;
const TRUST: f64 = 0.005;
/// The trust region around warm prices, as a share of `TRUST·P`.
const WARM_TRUST: f64 = 0.25;
/// Cutting-plane evaluations at most per level, and the relative gap at which they stop.
const MAX_CUTS: usize = 40;
const GAP: f64 = 1e-9;
/// A fixed job's vertex is certified when its net value at the recovered prices is within this
/// share of the job's scale of its best response's.
const CERTIFY: f64 = 1e-9;

impl Decomposed {
    pub(crate) fn report(&self) -> MethodReport {
        MethodReport { prices: Some(self.prices.clone()), ..MethodReport::decomposition(self.rounds, self.ambiguous) }
    }
}

/// `max Σ_m value_m·thr_m` over `floor` for `problem`'s jobs and GPUs, by decomposition where
/// its `method` and rows call for it (`decomposition`, or `auto` on mostly distinct rows) and no
/// placement sensitivity is formulated: `Ok(Err(None))` when they do not, `Ok(Err(Some(why)))`
/// when it could not certify an optimum (the caller then solves the plain LP).
pub(crate) fn solve_problem(
    problem: &Problem,
    value: &[f64],
    floor: &[f64],
    backend: Backend,
    options: &DecompositionOptions,
    starts: Starts,
) -> Result<std::result::Result<Decomposed, Option<String>>> {
    let scale_factor = crate::policies::scale_factors(problem);
    if !wanted(problem, &scale_factor) {
        return Ok(Err(None));
    }
    let capacity = crate::policies::capacities(problem);
    let charge = vec![0.0; capacity.len()];
    let instance = Instance {
        throughput: &problem.throughput,
        scale_factor: &scale_factor,
        value,
        floor,
        usable: capacity.iter().map(|&g| g > 0.0).collect(),
        charge: &charge,
    };
    Ok(solve(&instance, &capacity, backend, options, starts)?.map_err(Some))
}

/// Whether `problem`'s method and rows call for the decomposition (`decomposition`, or `auto` on
/// mostly distinct rows) and no placement sensitivity is formulated.
fn wanted(problem: &Problem, scale_factor: &[u32]) -> bool {
    problem.unconsolidated.is_none()
        && match problem.method {
            Method::Lp => false,
            Method::Decomposition => true,
            Method::Auto => mostly_distinct(&problem.throughput, scale_factor, &vec![1.0; problem.num_jobs()]),
        }
}

/// Solves `max Σ_m a_m·thr_m` over the floors by decomposition. `Ok(Err(why))` when it cannot certify an
/// optimum within `options`: the caller then solves the plain LP.
pub(crate) fn solve(
    instance: &Instance,
    capacity: &[f64],
    backend: Backend,
    options: &DecompositionOptions,
    starts: Starts,
) -> Result<std::result::Result<Decomposed, String>> {
    let n = instance.throughput.rows();
    let runs = |m: usize| (0..capacity.len()).any(|w| instance.usable[w] && instance.throughput.get(m, w) > 0.0);
    if let Some(m) = (0..n).find(|&m| instance.floor[m] > 0.0 && !runs(m)) {
        return Ok(Err(format!("job {m} has a floor and no type with GPUs to meet it")));
    }
    let jobs: Vec<u32> = (0..n).filter(|&m| runs(m)).map(|m| m as u32).collect();
    if jobs.len() > u32::MAX as usize - 1 {
        return Ok(Err("too many jobs".into()));
    }
    let level = match solve_level(instance, &jobs, capacity, backend, options, true, starts)? {
        Ok(level) => level,
        Err(why) => return Ok(Err(why)),
    };
    let mut allocation = Matrix::zeros(n, capacity.len());
    for &(m, vertex) in &level.fixed {
        for (w, x) in vertex.used() {
            allocation.set(m as usize, w, x.min(1.0));
        }
    }
    place_ambiguous(&mut allocation, &level.ambiguous);
    if let Err(why) = fit_capacity(&mut allocation, instance.scale_factor, capacity) {
        return Ok(Err(why));
    }
    Ok(Ok(Decomposed {
        allocation,
        lp_solves: level.lp_solves,
        rounds: level.rounds,
        ambiguous: level.ambiguous.len(),
        prices: level.prices,
    }))
}

/// The most a GPU of any type could be worth to one of `jobs` with no floor: `max a_m·T_mw/sf_m`.
fn price_scale(instance: &Instance, jobs: &[u32]) -> f64 {
    jobs.iter()
        .flat_map(|&m| {
            let job = instance.job(m as usize);
            (0..job.row.len()).filter(|&w| instance.usable[w]).map(move |w| job.value * job.row[w] / job.sf)
        })
        .fold(0.0, f64::max)
}

/// Prices that minimize the Lagrangian bound `L(p) = G·p + Σ_m h_m(p)` of `jobs` on `capacity`
/// (`h_m`: job m's best net value), from `start`, by cutting planes on `−L` (`lagrangian.rs`).
fn refine(
    instance: &Instance,
    jobs: &[u32],
    capacity: &[f64],
    start: &[f64],
    scale: f64,
    radius: f64,
    backend: Backend,
) -> std::result::Result<(Vec<f64>, usize, Classification), SolveError> {
    if scale <= 0.0 {
        return Ok((start.to_vec(), 0, Classification::default()));
    }
    let k = capacity.len();
    let region = Region {
        bounds: (0..k).map(|w| instance.usable[w].then_some((0.0, PRICE_CEILING * scale))).collect(),
        simplex: false,
        radius,
        min_radius: GAP * scale,
        gap: GAP * scale * capacity.iter().sum::<f64>().max(1.0),
        max_cuts: MAX_CUTS,
        enough: f64::INFINITY,
    };
    let mut lagrangian = Lagrangian::new(instance, jobs, capacity);
    let found = cutting_planes::maximize(start, &region, backend, |p| lagrangian.negated(p))?;
    Ok((found.point, found.lp_solves, lagrangian.classification().unwrap_or_default()))
}

/// First prices from a `hint` (the optimum's GPU prices, for the tie-break after it), or `None`
/// where they give none. Where the floors are the optimum's needs, every job meets its floor the
/// cheapest way at the optimum's prices, and the tie-break's prices keep those choices, so they
/// lie on the ray through the hint (finish-time fairness on the `tie_break` bench: the same
/// direction to 10⁻¹³). Their scale is the foot of L on that ray: going down from prices at which
/// every job keeps to its floor, the scale at which the jobs that start to take more time (each at
/// its first breakpoint) use up the GPUs' slack over the floors. `None` when the hint is all 0,
/// the floors do not fit, or the first breakpoints do not use up the slack (the foot lies past
/// them): the caller then estimates the prices from a sample.
fn prices_from_hint(instance: &Instance, jobs: &[u32], capacity: &[f64], hint: &[f64], scale: f64) -> Option<Vec<f64>> {
    let largest = hint.iter().zip(&instance.usable).filter(|&(_, &on)| on).map(|(&v, _)| v).fold(0.0, f64::max);
    if largest <= 0.0 || !largest.is_finite() {
        return None;
    }
    let direction: Vec<f64> = hint.iter().map(|v| v.max(0.0) / largest).collect();
    let fits: f64 = capacity.iter().zip(&direction).map(|(g, d)| g * d).sum();
    // At a high enough scale every job meets just its floor, the cheapest way along the ray; going
    // down, each job takes more at its first breakpoint. The foot is where the extra usage first
    // exceeds the GPUs' slack over the floors: one pass, and a walk down the breakpoints.
    let mut slack = fits;
    let mut breakpoints: Vec<(f64, f64)> = Vec::new();
    for &m in jobs {
        let (floor_usage, first) = instance.job(m as usize).first_breakpoint(&instance.usable, &direction)?;
        slack -= floor_usage;
        breakpoints.extend(first);
    }
    if slack < 0.0 {
        return None;
    }
    breakpoints.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let mut extra = 0.0;
    let mut c = None;
    for &(at, jump) in &breakpoints {
        extra += jump;
        if extra > slack {
            c = Some(at);
            break;
        }
    }
    // The jobs' first breakpoints do not use up the slack: the foot lies past them.
    let c = c.filter(|&c| c > 0.0 && c.is_finite() && c <= PRICE_CEILING * scale)?;
    Some(direction.iter().map(|v| c * v).collect())
}

/// Prices for `jobs` from a sample's (solved as a level of its own, recursively), refined over
/// every job by cutting planes; also the classification at the refinement's last anchor and how
/// far the refinement moved the prices.
fn estimate(
    instance: &Instance,
    jobs: &[u32],
    capacity: &[f64],
    scale: f64,
    backend: Backend,
    options: &DecompositionOptions,
    warm: Option<&[f64]>,
) -> Result<(Vec<f64>, usize, Classification, f64)> {
    let num_types = capacity.len();
    let step = options.sample_ratio.max(2);
    let sample: Vec<u32> = jobs.iter().skip(step / 2).step_by(step).copied().collect();
    let share = sample.len() as f64 / jobs.len() as f64;
    let sample_capacity: Vec<f64> = capacity.iter().map(|g| g * share).collect();
    let ceiling = PRICE_CEILING * scale;
    let warm = warm.map(|w| {
        let prices = w.iter().zip(&instance.usable).map(|(&p, &on)| if on { p.clamp(0.0, ceiling) } else { 0.0 });
        (prices.collect(), 0, WARM_TRUST * TRUST * scale)
    });
    let (mut prices, mut lp_solves, radius) = match warm {
        Some(warm) => warm,
        None => match solve_level(instance, &sample, &sample_capacity, backend, options, false, Starts::default())? {
            // A larger sample's prices are closer: the distance the sample's own refinement
            // moved, scaled down by the square root of the ratio, bounds how far to look first.
            Ok(level) => {
                let radius = level.moved.map_or(TRUST * scale, |moved| 2.0 * moved / (step as f64).sqrt());
                (level.prices, level.lp_solves, radius.clamp(GAP * scale, TRUST * scale))
            }
            Err(_) => (vec![0.0; num_types], 0, TRUST * scale),
        },
    };
    let start = prices.clone();
    let classes = match refine(instance, jobs, capacity, &prices, scale, radius, backend) {
        Ok((refined, solves, classes)) => {
            prices = refined;
            lp_solves += solves;
            classes
        }
        Err(e) => {
            fatal(e)?;
            Classification::default()
        }
    };
    let moved = start.iter().zip(&prices).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    Ok((prices, lp_solves, classes, moved))
}

/// Solves one level: `jobs` on `capacity`. At most `options.base` jobs: cutting planes from 0,
/// then (at the top level, or where they failed) one LP over all of them. Otherwise prices from a
/// sample level refined over every job, then (at the top level only) rounds of classify,
/// recover, certify. A sample level (`top` false) gives only its prices; its LP, where it runs,
/// may overflow its GPUs at a high price (its share of the GPUs need not hold its floors).
fn solve_level(
    instance: &Instance,
    jobs: &[u32],
    capacity: &[f64],
    backend: Backend,
    options: &DecompositionOptions,
    top: bool,
    starts: Starts,
) -> Result<std::result::Result<Level, String>> {
    let num_types = capacity.len();
    let scale = price_scale(instance, jobs);
    let ceiling = PRICE_CEILING * scale;
    let overflow = (!top).then_some(ceiling);
    if jobs.len() <= options.base.max(1) {
        // Cutting planes over its jobs from 0 (dense steps over a few hundred jobs). A sample
        // level's prices are only where the level above starts its own search: those are enough,
        // and an LP for their last digits cost more than it saved (`tie_break` bench, 512 and
        // 2,048 distinct rows). A top level's LP starts from their basis (cheaper than the LP's
        // own start) and is the answer.
        let zero = vec![0.0; num_types];
        let (start, searched) = match refine(instance, jobs, capacity, &zero, scale, scale, backend) {
            Ok((prices, solves, _)) => (Some(prices), solves),
            Err(e) => {
                fatal(e)?;
                (None, 0)
            }
        };
        if let (false, Some(prices)) = (top, &start) {
            let level = Level {
                prices: prices.clone(),
                moved: None,
                fixed: Vec::new(),
                ambiguous: Vec::new(),
                rounds: 0,
                lp_solves: searched,
            };
            return Ok(Ok(level));
        }
        let solved = recovery::solve(instance, jobs, capacity, &zero, overflow, start.as_deref(), backend, None);
        return Ok(match solved {
            Ok(rec) => Ok(Level {
                prices: rec.prices,
                moved: None,
                fixed: Vec::new(),
                ambiguous: jobs.iter().copied().zip(rec.time).collect(),
                rounds: 1,
                lp_solves: 1 + searched,
            }),
            Err(e) => Err(fatal(e)?),
        });
    }
    let hinted = match (top, starts.ray) {
        (true, Some(hint)) => prices_from_hint(instance, jobs, capacity, hint, scale),
        _ => None,
    };
    let warm = starts.warm.filter(|w| top && hinted.is_none() && w.len() == num_types);
    let (mut prices, mut lp_solves, mut classes, moved) = match hinted {
        Some(prices) => (prices, 0, Classification::default(), None),
        None => {
            let (prices, lp_solves, classes, moved) =
                estimate(instance, jobs, capacity, scale, backend, options, warm)?;
            (prices, lp_solves, classes, Some(moved))
        }
    };
    if !top {
        // A sample level gives only its prices.
        return Ok(Ok(Level { prices, moved, fixed: Vec::new(), ambiguous: Vec::new(), rounds: 0, lp_solves }));
    }
    let rounds_allowed = options.max_rounds;
    // Warm prices are near the optimum already: fewer jobs sit near a change of vertex (failures
    // still join the band).
    let width = Band::first_width(jobs.len(), options.band);
    let width = if warm.is_some() { (width / 4).max(1) } else { width };
    let first_band = DecompositionOptions { band: width, ..*options };
    let mut band = Band::new(jobs.len(), &first_band);
    let mut margins: Vec<(f64, u32)> = Vec::with_capacity(jobs.len());
    for round in 1..=rounds_allowed.max(1) {
        // Classify every job not yet ambiguous by its best response at the current prices.
        if let Err(m) = classes.move_to(instance, jobs, &prices, &band.contains) {
            return Ok(Err(format!("job {m}'s floor is out of its reach")));
        }
        let scale = |i: usize| instance.job(jobs[i] as usize).scale(&instance.usable, &prices);
        if let Err(m) = classes.margins(instance, jobs, band.width(), scale, &mut margins) {
            return Ok(Err(format!("job {m}'s floor is out of its reach")));
        }
        // The band: the jobs nearest a change of vertex.
        band.add_nearest(&mut margins);
        if band.outgrown() {
            return Ok(Err(format!("the ambiguous set outgrew its bound ({} jobs)", options.max_ambiguous)));
        }
        let mut fixed_usage = vec![0.0; num_types];
        for (i, &m) in jobs.iter().enumerate() {
            if let (false, Some((vertex, _))) = (band.contains[i], classes.get(i)) {
                for (w, x) in vertex.used() {
                    fixed_usage[w] += instance.scale_factor[m as usize] as f64 * x;
                }
            }
        }
        let members: Vec<u32> = band.members.iter().map(|&i| jobs[i]).collect();
        lp_solves += 1;
        // From the basis of the current prices' best responses: the estimate's, then the last
        // recovery LP's.
        let start = Some(prices.as_slice());
        let solved = match recovery::solve(instance, &members, capacity, &fixed_usage, overflow, start, backend, None) {
            Ok(rec) => Ok(rec),
            Err(e) => {
                // The fixed jobs' vertices overfill a type, or leave the ambiguous jobs too little
                // to meet their floors. Solved again with every type allowed to overflow at the
                // price ceiling, its prices say which: the fixed jobs they would move fail the
                // certificate below and join the band.
                let why = fatal(e)?;
                lp_solves += 1;
                recovery::solve(instance, &members, capacity, &fixed_usage, Some(ceiling), start, backend, None)
                    .map_err(|_| why)
            }
        };
        let rec = match solved {
            Ok(rec) => rec,
            Err(why) => {
                if band.widen() {
                    continue;
                }
                return Ok(Err(why));
            }
        };
        // The certificate: every fixed job's vertex still its best response at the new prices.
        let failures: Vec<usize> = (0..jobs.len())
            .filter(|&i| !band.contains[i] && !classes.certifies(instance, i, jobs[i], &rec.prices, CERTIFY))
            .collect();
        let failed = failures.len();
        if band.absorb(&failures) == Absorbed::Widened {
            // The recovered prices are distorted by a misfit the band could not absorb: keep
            // the estimate.
            continue;
        }
        if rec.overflowed && failed == 0 {
            // No fixed job would move at the overflowing prices: only a wider band can help.
            if band.widen() {
                continue;
            }
            return Ok(Err("the fixed jobs' vertices overfill the GPUs".into()));
        }
        prices = rec.prices;
        if failed == 0 {
            let fixed = (0..jobs.len())
                .filter(|&i| !band.contains[i])
                .filter_map(|i| classes.get(i).map(|(v, _)| (jobs[i], v)))
                .collect();
            return Ok(Ok(Level {
                prices,
                moved,
                fixed,
                ambiguous: members.into_iter().zip(rec.time).collect(),
                rounds: round,
                lp_solves,
            }));
        }
    }
    Ok(Err(format!("no certificate after {} recovery LPs", rounds_allowed.max(1))))
}
