//! The price decomposition of `max z s.t. thr_m ≥ z·d_m`, exact in time linear in jobs × types when
//! rows are distinct. Jobs are coupled only through the k capacity rows; at GPU prices p each job's
//! cheapest way to its need is a tiny LP whose optimum has one of two *structures* (one type with
//! time to spare, or all of its time on two hull types), and given the structure its allocation is
//! affine in z. So: prices from a sample of the jobs (solved the same way, recursively), every job
//! classified by its best response, the jobs near a change of structure (*ambiguous*) kept as full
//! columns in a small recovery LP in which every other job is folded into the capacity rows, and a
//! certificate: at the recovery LP's prices, each fixed job's structure is dual- and primal-feasible.
//! Then the recovery LP's primal and dual are feasible for the full LP with equal objectives: the
//! optimum. Jobs that fail join the ambiguous set and the LP is solved again; when the set outgrows
//! its bound, or the rounds run out, the caller falls back to the plain LP and says why.
//! See `formulations/decomposition.md`.

mod best_response;
mod prices;
mod recovery;

use crate::error::{ArbiterError, Result};
use crate::lp::{Backend, SolveError};
use crate::problem::Matrix;
use crate::solver::band::{Absorbed, Band};
use best_response::{best_response, JobView, Scratch, Structure};

/// How hard the decomposition tries before it gives up (and the engine solves the plain LP).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecompositionOptions {
    /// At most this many jobs: solved as one LP with every job ambiguous (exact, no sample).
    pub base: usize,
    /// One job in this many is in the sample that gives a level its first prices.
    pub sample_ratio: usize,
    /// Jobs nearest a change of structure added to the ambiguous set each round.
    pub band: usize,
    /// The ambiguous set may not grow past this many jobs.
    pub max_ambiguous: usize,
    /// Recovery LPs per level at most.
    pub max_rounds: usize,
}

/// A whole instance of at most this many jobs is one LP (`DecompositionOptions::base` bounds the
/// samples').
const TOP_BASE: usize = 64;

impl Default for DecompositionOptions {
    fn default() -> DecompositionOptions {
        DecompositionOptions { base: 256, sample_ratio: 8, band: 256, max_ambiguous: 20_000, max_rounds: 40 }
    }
}

/// The instance as the decomposition reads it: job m needs `base[m] + z·demand[m]` (base 0 when
/// there is none). A job with neither takes no part.
struct Ratio<'a> {
    throughput: &'a Matrix,
    scale_factor: &'a [u32],
    /// Floors (water-filling's frozen levels); with them z may be 0 and the binding jobs are read
    /// from the duals.
    base: Option<&'a [f64]>,
    demand: &'a [f64],
    /// Types with GPUs.
    usable: Vec<bool>,
    /// With floors, the largest z at which every job with a demand could still meet its need
    /// alone (all of its time on its fastest type): no estimate need look past it, which keeps
    /// the estimates of a level near a job's ceiling in range. Without floors, infinite: there an
    /// optimum is often exactly at such a ceiling, and an estimate held there leaves that job's
    /// margin at 0 rather than marking it out of range, so it may miss the first band.
    ceiling: f64,
}

impl Ratio<'_> {
    fn job(&self, m: usize) -> JobView<'_> {
        JobView {
            row: self.throughput.row(m),
            sf: self.scale_factor[m] as f64,
            base: self.base.map_or(0.0, |b| b[m]),
            demand: self.demand[m],
        }
    }

    /// Job m's throughput with all of its time on its fastest type with GPUs.
    fn fastest(&self, m: usize) -> f64 {
        self.fastest_type(m).map_or(0.0, |(_, t)| t)
    }

    /// Job m's fastest type with GPUs and its throughput there (`None`: it can run on none).
    fn fastest_type(&self, m: usize) -> Option<(usize, f64)> {
        let mut best: Option<(usize, f64)> = None;
        for (w, &t) in self.throughput.row(m).iter().enumerate() {
            if self.usable[w] && t > 0.0 && best.is_none_or(|(_, b)| t > b) {
                best = Some((w, t));
            }
        }
        best
    }

    /// Whether job m takes part: it has a demand or a floor.
    fn takes_part(&self, m: usize) -> bool {
        self.demand[m] > 0.0 || self.base.is_some_and(|b| b[m] > 0.0)
    }
}

/// How far (relative) an allocation may fall short of a need and still meet it: the recovery
/// LP's feasibility tolerance.
const NEED_TOLERANCE: f64 = 1e-7;

/// How far (relative, or of 10⁻³ near 0) the level an allocation gives may fall below the
/// certified one before the answer goes to the plain LP instead.
const READ_BACK_SLACK: f64 = 1e-6;

/// An exact optimum found by decomposition.
pub(super) struct Decomposed {
    pub(super) z: f64,
    pub(super) allocation: Matrix,
    pub(super) lp_solves: usize,
    /// Recovery LPs at the top level (the sample levels' are in `lp_solves`).
    pub(super) rounds: usize,
    /// Jobs with full columns in the last recovery LP.
    pub(super) ambiguous: usize,
    /// The capacity rows' duals: a warm start for the next solve on the same instance.
    pub(super) prices: Vec<f64>,
    /// With floors: the jobs whose need row has a positive dual, so that they sit at their need
    /// in every optimum (empty without floors).
    pub(super) binding: Vec<bool>,
}

/// One level's result: its ratio and prices, how each job is allocated, and whether the
/// certificate holds (a sample level's prices are useful even when it does not).
struct Level {
    z: f64,
    prices: Vec<f64>,
    /// `(job, structure)` for the fixed jobs.
    fixed: Vec<(u32, Structure)>,
    /// `(job, time per type)` for the ambiguous jobs.
    ambiguous: Vec<(u32, Vec<(usize, f64)>)>,
    /// The ambiguous jobs' need-row duals, in the same order.
    ambiguous_duals: Vec<f64>,
    certified: bool,
    rounds: usize,
    lp_solves: usize,
    why_not: Option<String>,
    /// How far the level moved the prices it started from (`prices::moved`): the next level up
    /// starts its search for prices that near its start.
    moved: f64,
}

/// Solves `max z s.t. thr_m ≥ base_m + z·demand_m` (z in the caller's unit; no `base`: 0) by
/// decomposition. `Ok(Err(why))` when it cannot certify an optimum within its options: the caller
/// then solves the plain LP. `warm`: prices of an earlier solve on the same jobs and GPUs (other
/// demands), used instead of the sample's; if they lead nowhere the solve starts again from the
/// sample.
#[allow(clippy::too_many_arguments)]
pub(super) fn solve(
    throughput: &Matrix,
    scale_factor: &[u32],
    capacity: &[f64],
    base: Option<&[f64]>,
    demand: &[f64],
    backend: Backend,
    options: &DecompositionOptions,
    warm: Option<&[f64]>,
) -> Result<std::result::Result<Decomposed, String>> {
    let ratio = Ratio::new(throughput, scale_factor, capacity, base, demand);
    if let Some(prices) = warm.filter(|p| p.len() == capacity.len()) {
        if let Ok(found) = solve_from(&ratio, capacity, backend, options, Some(prices))? {
            return Ok(Ok(found));
        }
    }
    solve_from(&ratio, capacity, backend, options, None)
}

impl<'a> Ratio<'a> {
    fn new(
        throughput: &'a Matrix,
        scale_factor: &'a [u32],
        capacity: &[f64],
        base: Option<&'a [f64]>,
        demand: &'a [f64],
    ) -> Ratio<'a> {
        let usable: Vec<bool> = capacity.iter().map(|&g| g > 0.0).collect();
        let ceiling = match base {
            None => f64::INFINITY,
            Some(base) => (0..throughput.rows())
                .filter(|&m| demand[m] > 0.0)
                .map(|m| (super::ceiling(throughput.row(m), capacity) - base[m]) / demand[m])
                .fold(f64::INFINITY, f64::min)
                .max(0.0),
        };
        Ratio { throughput, scale_factor, base, demand, usable, ceiling }
    }
}

fn solve_from(
    ratio: &Ratio,
    capacity: &[f64],
    backend: Backend,
    options: &DecompositionOptions,
    warm: Option<&[f64]>,
) -> Result<std::result::Result<Decomposed, String>> {
    let (throughput, demand) = (ratio.throughput, ratio.demand);
    let jobs: Vec<u32> = (0..throughput.rows()).filter(|&m| ratio.takes_part(m)).map(|m| m as u32).collect();
    if !jobs.iter().any(|&m| demand[m as usize] > 0.0) {
        return Ok(Err("no job has a demand".into()));
    }
    if jobs.len() > u32::MAX as usize - 1 {
        return Ok(Err("too many jobs".into()));
    }
    let level = match solve_level(ratio, &jobs, capacity, backend, options, true, warm)? {
        Ok(level) => level,
        Err(why) => return Ok(Err(why)),
    };
    if !level.certified {
        return Ok(Err(level.why_not.unwrap_or_else(|| "no certificate".into())));
    }
    let (allocation, exact) = match allocate(ratio, &level, capacity) {
        Ok(found) => found,
        Err(why) => return Ok(Err(why)),
    };
    // The level the allocation gives, `min (thr − base)/demand`, or the recovery LP's where the
    // allocation meets every need at that level to the LP's tolerance: a job with a large base and
    // a small demand turns round-off in its throughput into a large error in z (a level read as 0
    // from an allocation 1e-9 short of a floor of 7, whose job then froze 6e-4 below its level).
    let given = |m: u32| crate::problem::dot(ratio.job(m as usize).row, allocation.row(m as usize));
    let meets_need = |m: u32| {
        let need = ratio.job(m as usize).need(level.z);
        given(m) >= need - NEED_TOLERANCE * need.abs().max(f64::MIN_POSITIVE)
    };
    // Fixed jobs whose times stand meet their needs by construction: only the recovery LP's
    // jobs are checked then.
    let meets = match exact {
        true => level.ambiguous.iter().all(|&(m, _)| meets_need(m)),
        false => jobs.iter().all(|&m| meets_need(m)),
    };
    let z = match meets {
        true => level.z,
        false => jobs
            .iter()
            .filter(|&&m| demand[m as usize] > 0.0)
            .map(|&m| (given(m) - ratio.job(m as usize).base) / demand[m as usize])
            .fold(f64::INFINITY, f64::min),
    };
    // The certificate proves `level.z`; an allocation that gives less proves nothing. (z is in
    // its natural unit, at most about 1: near 0, round-off is absolute.)
    if z < level.z - READ_BACK_SLACK * level.z.abs().max(1e-3) {
        return Ok(Err(format!("the allocation reaches a level of {z:e}, below the certified {:e}", level.z)));
    }
    let binding = if ratio.base.is_some() { binding(ratio, &level) } else { Vec::new() };
    Ok(Ok(Decomposed {
        z,
        allocation,
        lp_solves: level.lp_solves,
        rounds: level.rounds,
        ambiguous: level.ambiguous.len(),
        prices: level.prices,
        binding,
    }))
}

/// A need-row dual counts as positive above this share of `Σ_m u_m·need_m`, or, for a job with
/// a demand, of `Σ_m u_m·demand_m` (a binding job's share is at least about one over the jobs),
/// and only if it is also positive on the equilibrated row (`super::BINDING_DUAL`). The recovery
/// LP's relative tolerance: a round-off dual of 2.5e-10 had a share of 2.5e-10 and froze a job
/// 20% below its level. A binding job missed is no error: the level is played again, or the
/// exact group test finds it.
const BINDING_SHARE: f64 = 1e-7;

/// The jobs whose need row has a positive dual in the certified solution: fixed jobs' duals in
/// closed form from their structure at the level's prices, ambiguous jobs' from the recovery LP.
/// Two shares, since either can vanish alone: a job raised from a floor of 0 at a level of 0
/// needs nothing, yet its dual may carry the whole level (`Σ_m u_m·demand_m` is the level's
/// objective coefficient); a job with a floor and no demand carries nothing of the level. A share
/// alone does not tell a dual from round-off, though: a job on a type of price 0 with a dual of
/// 6e-12 (its reduced costs' round-off, over its throughput) had a share of 1.8e-10 and froze at
/// a third of its level. So the dual must also be positive on the equilibrated row, the dual
/// times the row's largest throughput, as the engine judges its rows: its reduced costs' scale.
fn binding(ratio: &Ratio, level: &Level) -> Vec<bool> {
    let n = ratio.throughput.rows();
    let mut dual = vec![0.0; n];
    for &(m, structure) in &level.fixed {
        dual[m as usize] = ratio.job(m as usize).duals(structure, &level.prices).0.max(0.0);
    }
    for (&(m, _), &u) in level.ambiguous.iter().zip(&level.ambiguous_duals) {
        dual[m as usize] = u;
    }
    let on_need: Vec<f64> = (0..n).map(|m| dual[m] * ratio.job(m).need(level.z)).collect();
    let on_demand: Vec<f64> = (0..n).map(|m| dual[m] * ratio.demand[m]).collect();
    let (need_total, demand_total): (f64, f64) = (on_need.iter().sum(), on_demand.iter().sum());
    (0..n)
        .map(|m| {
            (on_need[m] > BINDING_SHARE * need_total || on_demand[m] > BINDING_SHARE * demand_total)
                && dual[m] * ratio.fastest(m) > super::BINDING_DUAL
        })
        .collect()
}

/// `excess(need)`: the largest `Σ_m f_m(p) − G·p` found on the price simplex for the fixed needs
/// `need` (see `prices::excess`) and the prices where; positive proves they cannot all be met.
pub(super) fn excess(
    throughput: &Matrix,
    scale_factor: &[u32],
    capacity: &[f64],
    need: &[f64],
    start: &[f64],
    enough: f64,
    backend: Backend,
) -> std::result::Result<(f64, Vec<f64>), SolveError> {
    let none = vec![0.0; need.len()];
    let ratio = Ratio::new(throughput, scale_factor, capacity, Some(need), &none);
    let jobs: Vec<u32> = (0..need.len()).filter(|&m| need[m] > 0.0).map(|m| m as u32).collect();
    prices::excess(&ratio, &jobs, capacity, start, enough, backend)
}

/// Errors that end a decomposition (the budget ran out) rather than send it to the plain LP.
pub(crate) fn fatal(error: SolveError) -> std::result::Result<String, ArbiterError> {
    match error {
        SolveError::TimeLimit => Err(ArbiterError::from(SolveError::TimeLimit)),
        other => Ok(format!("recovery LP: {other}")),
    }
}

/// Solves one level: `jobs` on `capacity`. At most `options.base` jobs: one LP over all of them.
/// Otherwise prices from a sample level, then rounds of classify, recover, certify.
fn solve_level(
    ratio: &Ratio,
    jobs: &[u32],
    capacity: &[f64],
    backend: Backend,
    options: &DecompositionOptions,
    top: bool,
    warm: Option<&[f64]>,
) -> Result<std::result::Result<Level, String>> {
    let num_types = capacity.len();
    // A whole instance of more than `TOP_BASE` jobs takes a sample's prices: with every job in
    // one LP it is slower (benches/README.md, small instances).
    let base = if top { options.base.min(TOP_BASE) } else { options.base };
    if jobs.len() <= base.max(1) {
        return Ok(match recovery::solve(ratio, jobs, capacity, &vec![(0.0, 0.0); num_types], 1.0, None, backend) {
            Ok(rec) => Ok(Level {
                z: rec.z,
                prices: rec.prices,
                fixed: Vec::new(),
                ambiguous: jobs.iter().copied().zip(rec.time).collect(),
                ambiguous_duals: rec.need_duals,
                certified: true,
                rounds: 1,
                lp_solves: 1,
                why_not: None,
                moved: prices::TRUST_RADIUS,
            }),
            Err(e) => Err(fatal(e)?),
        });
    }
    // First prices: a warm start's, at the ratio they clear; or a strided sample's, on the same
    // share of every type's GPUs.
    // The sample's prices are off by about as much as the sample's own level moved the prices it
    // started from (sampling error shrinks as the sample grows): the search starts within twice that.
    let (mut lp_solves, mut z, mut prices, radius) = match warm {
        Some(warm) => (0, prices::ratio_at(ratio, jobs, capacity, warm), warm.to_vec(), prices::TRUST_RADIUS),
        None => {
            let step = options.sample_ratio.max(2);
            let sample: Vec<u32> = jobs.iter().skip(step / 2).step_by(step).copied().collect();
            let share = sample.len() as f64 / jobs.len() as f64;
            let sample_capacity: Vec<f64> = capacity.iter().map(|g| g * share).collect();
            match solve_level(ratio, &sample, &sample_capacity, backend, options, false, None)? {
                Ok(level) => (level.lp_solves, level.z, level.prices, 2.0 * level.moved),
                Err(why) => return Ok(Err(why)),
            }
        }
    };
    z = z.min(ratio.ceiling);
    if ratio.base.is_some() {
        // With floors the optimum may be 0 (a level that only proves more jobs stuck).
        z = z.max(0.0);
    } else if z <= 0.0 {
        return Ok(Err("the first estimate of the optimum is 0".into()));
    }
    let start = prices.clone();
    // Prices 0 in the first recovery LP's starting basis, where the estimate found the GPUs with
    // room at z (with the classifying prices there, a 256-job LP took ten times as long).
    let mut unpriced = false;
    let no_prices = vec![0.0; num_types];
    match prices::refine(ratio, jobs, capacity, z, &prices, radius, backend) {
        Ok(estimate) => {
            z = estimate.z.min(ratio.ceiling);
            prices = estimate.prices;
            unpriced = estimate.unpriced;
            lp_solves += estimate.lp_solves;
        }
        Err(e) => {
            fatal(e)?;
        }
    }
    let rounds_allowed = if top { options.max_rounds } else { options.max_rounds.min(4) };
    let band = Band::first_width(jobs.len(), options.band);
    // Warm prices are near the optimum already: fewer jobs sit near a change of structure, and
    // the first recovery LP can start smaller (failures still join it).
    let band_options = match warm {
        Some(_) => DecompositionOptions { band: (band / 4).max(1), ..*options },
        None => DecompositionOptions { band, ..*options },
    };
    let mut band = Band::new(jobs.len(), &band_options);
    let mut scratch = Scratch::default();
    let mut structures: Vec<Option<Structure>> = vec![None; jobs.len()];
    let mut margins: Vec<(f64, u32)> = Vec::with_capacity(jobs.len());
    let mut last: Option<Level> = None;
    for round in 1..=rounds_allowed.max(1) {
        // Classify every job not yet ambiguous by its best response at the current prices, and
        // fold it into the capacity rows at the estimate z₀ = z (in the same pass: at 2^20 jobs a
        // second pass over them costs as much as the recovery LP).
        let z0 = z;
        let mut fixed_usage = vec![(0.0, 0.0); num_types];
        margins.clear();
        for (i, &m) in jobs.iter().enumerate() {
            if band.contains[i] {
                continue;
            }
            let job = ratio.job(m as usize);
            match best_response(job, &ratio.usable, &prices, z, &mut scratch) {
                Some((structure, margin)) => {
                    structures[i] = Some(structure);
                    margins.push((margin, i as u32));
                    fold(&mut fixed_usage, job, structure, z0, 1.0);
                }
                None => return Ok(Err(format!("job {m} can run on no type with GPUs"))),
            }
        }
        // The band: the jobs nearest a change of structure, taken back out of the fold.
        let joined = band.members.len();
        band.add_nearest(&mut margins);
        if band.outgrown() {
            let why = format!("the ambiguous set outgrew its bound ({} jobs)", options.max_ambiguous);
            return Ok(match last.filter(|_| !top) {
                Some(level) => Ok(level),
                None if !top => Ok(estimate(z, prices, lp_solves, why)),
                None => Err(why),
            });
        }
        for &i in &band.members[joined..] {
            if let Some(structure) = structures[i] {
                fold(&mut fixed_usage, ratio.job(jobs[i] as usize), structure, z0, -1.0);
            }
        }
        let members: Vec<u32> = band.members.iter().map(|&i| jobs[i]).collect();
        lp_solves += 1;
        let basis_prices = if std::mem::take(&mut unpriced) { &no_prices } else { &prices };
        let rec = match recovery::solve(ratio, &members, capacity, &fixed_usage, z0, Some(basis_prices), backend) {
            Ok(rec) => rec,
            Err(e) => {
                let why = fatal(e)?;
                if band.widen() {
                    // Too few ambiguous jobs to absorb the estimate's misfit (the fixed jobs alone
                    // overfill a type at every z): widen the band and try again.
                    continue;
                }
                return Ok(if top { Err(why) } else { Ok(estimate(z, prices, lp_solves, why)) });
            }
        };
        // A model written around an estimate far from its optimum is badly scaled (z = z₀ + s·ζ
        // with ζ in the hundreds of thousands): its solution can miss the needs by far more than
        // the solver's tolerance (seen: a job 0.3% short, and a level frozen 3e-3 low). Such a
        // round only moves the estimate; the next writes the model around it.
        if !rec.meets_needs(ratio, &members, NEED_TOLERANCE) {
            z = if ratio.base.is_some() { rec.z.max(0.0) } else { rec.z };
            prices = rec.prices;
            continue;
        }
        // The certificate: every fixed job's structure optimal at the recovered prices and z.
        let mut failures = Vec::new();
        for (i, &m) in jobs.iter().enumerate() {
            if band.contains[i] {
                continue;
            }
            let Some(structure) = structures[i] else { continue };
            if !ratio.job(m as usize).certified(structure, &ratio.usable, &rec.prices, rec.z) {
                failures.push(i);
            }
        }
        let failed = failures.len();
        if band.absorb(&failures) == Absorbed::Widened {
            // The recovered prices are distorted by a misfit the band could not absorb: keep
            // the estimate.
            continue;
        }
        z = rec.z;
        prices = rec.prices;
        let level = Level {
            z,
            prices: prices.clone(),
            fixed: Vec::new(),
            ambiguous: Vec::new(),
            ambiguous_duals: Vec::new(),
            certified: failed == 0,
            rounds: round,
            lp_solves,
            why_not: None,
            moved: prices::moved(&start, &prices),
        };
        if failed == 0 {
            let fixed = jobs
                .iter()
                .enumerate()
                .filter(|&(i, _)| !band.contains[i])
                .filter_map(|(i, &m)| structures[i].map(|s| (m, s)))
                .collect();
            let ambiguous = members.into_iter().zip(rec.time).collect();
            return Ok(Ok(Level { fixed, ambiguous, ambiguous_duals: rec.need_duals, ..level }));
        }
        if ratio.base.is_some() {
            // Past the optimum's 0 only while the structures are wrong: classify at 0 next.
            z = z.max(0.0);
        } else if z <= 0.0 {
            return Ok(Err("the recovered optimum is 0".into()));
        }
        last = Some(level);
    }
    let why = format!("no certificate after {} recovery LPs", rounds_allowed.max(1));
    Ok(match last {
        Some(level) if !top => Ok(level),
        _ => Err(why),
    })
}

/// Adds `sign` times a fixed job's use of each type at `z₀` (`Σ sf·α`, `Σ sf·x`) to `usage`.
fn fold(usage: &mut [(f64, f64)], job: JobView, structure: Structure, z0: f64, sign: f64) {
    for ((w, alpha), (_, x)) in
        job.slopes(structure).into_iter().zip(job.time_at(structure, z0)).take(structure.width())
    {
        usage[w].0 += sign * job.sf * alpha;
        usage[w].1 += sign * job.sf * x;
    }
}

/// A level that only carries prices forward (its certificate does not hold).
fn estimate(z: f64, prices: Vec<f64>, lp_solves: usize, why: String) -> Level {
    Level {
        z,
        prices,
        fixed: Vec::new(),
        ambiguous: Vec::new(),
        ambiguous_duals: Vec::new(),
        certified: false,
        rounds: 0,
        lp_solves,
        why_not: Some(why),
        moved: prices::TRUST_RADIUS,
    }
}

/// The per-job allocation of a certified level: fixed jobs from their structure at z, ambiguous
/// ones from the recovery LP, fitted to the capacity (`fit_capacity`), and whether the fixed jobs'
/// times stand as their structures give them (none cut to a unit or dropped below 0, nothing
/// scaled): then each fixed job meets its need exactly, up to round-off.
fn allocate(ratio: &Ratio, level: &Level, capacity: &[f64]) -> std::result::Result<(Matrix, bool), String> {
    let (rows, cols) = (ratio.throughput.rows(), ratio.throughput.cols());
    let mut x = Matrix::zeros(rows, cols);
    let mut used = vec![0.0; cols];
    let mut exact = true;
    for &(m, structure) in &level.fixed {
        let job = ratio.job(m as usize);
        for (w, t) in job.time_at(structure, level.z).into_iter().take(structure.width()) {
            exact &= (0.0..=1.0).contains(&t);
            if t > 0.0 {
                let t = t.min(1.0);
                x.set(m as usize, w, t);
                used[w] += job.sf * t;
            }
        }
    }
    place_ambiguous(&mut x, &level.ambiguous);
    for (m, _) in &level.ambiguous {
        let sf = ratio.scale_factor[*m as usize] as f64;
        x.row(*m as usize).iter().zip(&mut used).for_each(|(t, u)| *u += sf * t);
    }
    exact &= scale_to_capacity(&mut x, &used, capacity)?;
    Ok((x, exact))
}

/// Writes each ambiguous job's time from its recovery LP into `x`, scaled down where round-off
/// left it above one unit.
pub(crate) fn place_ambiguous(x: &mut Matrix, ambiguous: &[(u32, Vec<(usize, f64)>)]) {
    for (m, time) in ambiguous {
        let total: f64 = time.iter().map(|&(_, t)| t).sum();
        let shrink = if total > 1.0 { 1.0 / total } else { 1.0 };
        for &(w, t) in time {
            x.set(*m as usize, w, t * shrink);
        }
    }
}

/// Scales `x` down where round-off left a type over its capacity by at most a relative 1e-6
/// (far below the tolerances); a larger excess means a certificate was wrong, an error.
pub(crate) fn fit_capacity(x: &mut Matrix, scale_factor: &[u32], capacity: &[f64]) -> std::result::Result<(), String> {
    let mut used = vec![0.0; x.cols()];
    for (row, &sf) in x.row_iter().zip(scale_factor) {
        let sf = sf as f64;
        for (w, &t) in row.iter().enumerate() {
            used[w] += sf * t;
        }
    }
    scale_to_capacity(x, &used, capacity).map(|_| ())
}

/// `fit_capacity` given each type's use: whether `x` was left as it was.
fn scale_to_capacity(x: &mut Matrix, used: &[f64], capacity: &[f64]) -> std::result::Result<bool, String> {
    let mut factor: f64 = 1.0;
    for (&u, &g) in used.iter().zip(capacity) {
        if u > g {
            factor = factor.min(g / u);
        }
    }
    if factor < 1.0 - 1e-6 {
        return Err(format!("the recovered allocation is over capacity by a factor {}", 1.0 / factor));
    }
    if factor < 1.0 {
        for m in 0..x.rows() {
            x.row_mut(m).iter_mut().for_each(|t| *t *= factor);
        }
    }
    Ok(factor == 1.0)
}
