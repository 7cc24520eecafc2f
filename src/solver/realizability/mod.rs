//! The realizability check: how much of an allocation rounds on whole GPUs can deliver. Gavel's
//! LPs give a job of scale factor `s` time as `s` fractional GPUs; a round runs whole gangs, one
//! job per GPU, a job on one type. The allocation is decomposed into a convex combination of round
//! configurations by column generation (`master`, priced by `pricing`, seeded by `initial`),
//! maximizing the time delivered. Not the mechanism itself: which configuration runs when is the
//! round mechanism's. See `formulations/realizability.md`.

pub mod configuration;
pub mod hull;
mod initial;
mod master;
mod pricing;

pub use configuration::{Configuration, Gang, Infeasible};

use crate::lp::{Backend, SolveError};
use crate::policies::Outcome;
use crate::problem::{Matrix, Problem};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Time asked below this is no time: entries of the allocation at most this are left out.
const MIN_TIME: f64 = 1e-9;
/// An entry delivering less than asked by more than this is reported as losing time.
const SHORTFALL_TOL: f64 = 1e-6;

/// What is checked: the GPUs of each type, the jobs' scale factors, `X[m][w]` and the colocated
/// pairs' `Y[k][w]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// Whole GPUs of each type (the mechanism's capacity).
    pub capacity: Vec<u32>,
    pub scale_factors: Vec<u32>,
    /// `X[m][w]`: jobs × types, time fractions.
    pub requested: Matrix,
    /// Space sharing: pairs of jobs of one scale factor that share the same GPUs, and the time
    /// each runs together on each type. Empty without space sharing.
    pub pairs: Vec<PairTime>,
}

/// A colocated pair's time (`Y[k][w]`): both jobs on the same GPUs of type `w`.
#[derive(Debug, Clone, PartialEq)]
pub struct PairTime {
    pub jobs: [u32; 2],
    /// Per worker type, the time fraction.
    pub requested: Vec<f64>,
}

/// Limits that keep the check cheap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Allocation entries (jobs × types with time) above which the check is skipped.
    pub max_entries: usize,
    /// Entries above which the column generation is not run: an allocation the greedy
    /// decomposition does not deliver whole then gets its fraction as a lower bound.
    pub max_master_entries: usize,
    /// `Σ_w entries_w × GPUs_w` (the knapsacks' work per pricing) above which the column
    /// generation is not run either.
    pub max_pricing_work: u64,
    /// Greedy configurations at most, as a multiple of the entries.
    pub greedy_steps_per_entry: usize,
    /// Greedy configurations times jobs at most (each configuration orders every job).
    pub greedy_work: usize,
    /// Master solves at most.
    pub iterations: usize,
    /// The column generation's work at most (`master::Master::work`: simplex iterations of its
    /// master LP, and a fixed charge per master solve and per pricing MILP, times its entries;
    /// about 0.1 s on the benchmark's machine). Unlike `seconds`, which only backs it up, the
    /// same answer on every machine.
    pub work: u64,
    /// Branch-and-bound nodes per pricing.
    pub pricing_nodes: usize,
    /// Seconds the column generation may take.
    pub seconds: f64,
    /// When not everything can be delivered, spread the shortfall over the entries (a second
    /// column generation at the same total) rather than take the first decomposition that
    /// delivers the most: what rounds that follow the decomposition need.
    pub spread_shortfall: bool,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            max_entries: 8_192,
            max_master_entries: 128,
            max_pricing_work: 2_000_000,
            greedy_steps_per_entry: 2,
            greedy_work: 4_000_000,
            iterations: 300,
            work: 600_000,
            pricing_nodes: 500,
            seconds: 1.0,
            spread_shortfall: false,
        }
    }
}

/// The check's answer for an instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Realizability {
    /// `Σ X` over all entries.
    pub requested: f64,
    /// `Σ deliverable`: what the decomposition delivers.
    pub deliverable: f64,
    /// The most any schedule can deliver (`deliverable` when certified).
    pub upper_bound: f64,
    /// `(job, type, asked, deliverable)` for every entry, in job then type order.
    pub entries: Vec<(usize, usize, f64, f64)>,
    /// `(pair's jobs, type, asked, deliverable)` for every colocated pair's entry, in pair then
    /// type order.
    pub pair_entries: Vec<([usize; 2], usize, f64, f64)>,
    /// The configurations with positive weight, and their weights (summing to at most 1).
    pub configurations: Vec<(f64, Configuration)>,
    /// Why the optimum is not certified, when it is not.
    pub stopped: Option<String>,
    pub lp_solves: usize,
}

impl Realizability {
    /// `deliverable / requested`, 1 when nothing is asked.
    pub fn fraction(&self) -> f64 {
        if self.requested > 0.0 {
            (self.deliverable / self.requested).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    /// `upper_bound / requested`, 1 when nothing is asked.
    pub fn fraction_upper_bound(&self) -> f64 {
        if self.requested > 0.0 {
            (self.upper_bound / self.requested).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    /// Whether the check proved every asked second deliverable.
    pub fn delivers_all(&self) -> bool {
        self.stopped.is_none() && self.deliverable >= self.requested - 1e-9
    }

    /// The decomposition of an allocation made of `configurations` (weights and rounds that
    /// reproduce it, as the hull solve returns them): everything asked is delivered.
    pub fn of_configurations(
        allocation: &Matrix,
        pair_jobs: &[[usize; 2]],
        pair_time: &[Vec<f64>],
        configurations: Vec<(f64, Configuration)>,
        lp_solves: usize,
    ) -> Realizability {
        let mut entries = Vec::new();
        for m in 0..allocation.rows() {
            for (w, &x) in allocation.row(m).iter().enumerate() {
                if x > MIN_TIME {
                    entries.push((m, w, x, x));
                }
            }
        }
        let mut pair_entries = Vec::new();
        for (&jobs, time) in pair_jobs.iter().zip(pair_time) {
            for (w, &y) in time.iter().enumerate() {
                if y > MIN_TIME {
                    pair_entries.push((jobs, w, y, y));
                }
            }
        }
        let requested = entries.iter().map(|e| e.2).chain(pair_entries.iter().map(|e| e.2)).sum();
        Realizability {
            requested,
            deliverable: requested,
            upper_bound: requested,
            entries,
            pair_entries,
            configurations,
            stopped: None,
            lp_solves,
        }
    }
}

/// Why an instance was not checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Skipped {
    /// Past the size budget.
    TooLarge(String),
    /// The LP failed or its time ran out.
    Solver(SolveError),
}

/// Steps of one pricing's knapsacks over `entries` `(job, type)`: per type, its entries times its
/// GPUs plus one.
fn pricing_work(entries: &[(u32, u32)], capacity: &[u32]) -> u64 {
    let mut per_type = vec![0u64; capacity.len()];
    for &(_, w) in entries {
        per_type[w as usize] += 1;
    }
    per_type.iter().zip(capacity).map(|(&n, &c)| n * (c as u64 + 1)).sum()
}

/// Decomposes `instance` into round configurations delivering as much of its time as any
/// schedule can (certified unless `stopped` says a budget ran out).
pub fn check(instance: &Instance, budget: &Budget, backend: Backend) -> Result<Realizability, Skipped> {
    let types = instance.capacity.len();
    let sf = &instance.scale_factors;
    if instance.requested.cols() != types || instance.requested.rows() != sf.len() {
        return Err(Skipped::TooLarge("the allocation's shape does not match the jobs and types".into()));
    }
    // Gangs: job m alone is gang m; colocated pair k is gang jobs + k.
    let mut gangs = Gang::singles(sf);
    for (k, pair) in instance.pairs.iter().enumerate() {
        let [a, b] = pair.jobs;
        let known = (a as usize) < sf.len() && (b as usize) < sf.len();
        if !known || a == b || sf[a as usize] != sf[b as usize] || pair.requested.len() != types {
            return Err(Skipped::TooLarge(format!(
                "colocated pair {k} must name two jobs of one scale factor, with a time per worker type"
            )));
        }
        gangs.push(Gang::pair(pair.jobs, sf[a as usize]));
    }
    let rows = (0..instance.requested.rows()).map(|m| instance.requested.row(m));
    let times = rows.chain(instance.pairs.iter().map(|p| p.requested.as_slice()));
    let mut entries: Vec<(u32, u32)> = Vec::new();
    let mut asked: Vec<f64> = Vec::new();
    let mut requested = 0.0;
    for (g, row) in times.enumerate() {
        for (w, &x) in row.iter().enumerate() {
            let x = if x.is_finite() { x.clamp(0.0, 1.0) } else { 0.0 };
            if x > MIN_TIME {
                entries.push((g as u32, w as u32));
                asked.push(x);
                requested += x;
            }
        }
        if entries.len() > budget.max_entries {
            return Err(Skipped::TooLarge(format!(
                "more than {} (job, worker type) entries with time",
                budget.max_entries
            )));
        }
    }
    let cap = &instance.capacity;
    let jobs = gangs.len().max(1);
    let steps = budget.greedy_steps_per_entry.saturating_mul(entries.len()).min(budget.greedy_work / jobs).max(16);
    let first = initial::greedy(&entries, &asked, &gangs, cap, steps);
    let greedy_delivers =
        |first: &initial::Greedy| -> Vec<f64> { first.supplied.iter().zip(&asked).map(|(&s, &x)| s.min(x)).collect() };
    let work = pricing_work(&entries, cap);
    // Per entry: its gang fits its type; the time asked of those is the most any schedule delivers.
    let placeable: Vec<bool> = entries.iter().map(|&(g, w)| gangs[g as usize].gpus <= cap[w as usize]).collect();
    let fits: f64 = placeable.iter().zip(&asked).filter(|&(&p, _)| p).map(|(_, &x)| x).sum();
    let (columns, weights, deliverable, upper_bound, stopped, lp_solves) =
        if first.supplied.iter().zip(&asked).all(|(&s, &x)| s >= x - MIN_TIME) {
            let deliverable = greedy_delivers(&first);
            (first.columns, first.weights, deliverable, requested, None, 0)
        } else if entries.len() > budget.max_master_entries || work > budget.max_pricing_work {
            // No LP: the greedy decomposition is a lower bound; no gang on a type it does not fit
            // in is the bound above.
            let deliverable = greedy_delivers(&first);
            let why = format!(
                "not certified: the greedy decomposition does not deliver everything, and column generation \
                 is skipped past {} entries or {} knapsack steps per pricing ({} entries, {work} steps); \
                 `fraction` is the greedy decomposition's, a lower bound",
                budget.max_master_entries,
                budget.max_pricing_work,
                entries.len()
            );
            (first.columns, first.weights, deliverable, fits, Some(why), 0)
        } else {
            let deadline = Instant::now() + std::time::Duration::from_secs_f64(budget.seconds.clamp(0.0, 1e6));
            let mut pricing = pricing::Pricing::new(&entries, &gangs, cap, &asked);
            if !instance.pairs.is_empty() {
                // Pairs couple jobs within a type, where branch and bound's knapsack bounds are
                // loose: the MILP takes what its nodes leave open.
                pricing = pricing.with_milp(backend.until(deadline));
            }
            let limits = master::Limits {
                iterations: budget.iterations.max(1),
                work: budget.work,
                pricing_nodes: budget.pricing_nodes,
                deadline: Some(backend.deadline.map_or(deadline, |d| d.min(deadline))),
            };
            let seed = (first.columns.clone(), first.weights.clone());
            let spread = budget.spread_shortfall.then_some(placeable.as_slice());
            match master::decompose(&pricing, &asked, spread, seed, backend.until(deadline), limits) {
                Ok(d) => (d.columns, d.weights, d.deliverable, d.upper_bound, d.stopped, d.lp_solves),
                // The first master solve outran the budget: the greedy decomposition stands.
                Err(SolveError::TimeLimit) => {
                    let deliverable = greedy_delivers(&first);
                    let why = "not certified: the column generation's first LP outran its time budget; `fraction` is \
                           the greedy decomposition's, a lower bound"
                        .to_string();
                    (first.columns, first.weights, deliverable, fits, Some(why), 0)
                }
                Err(error) => return Err(Skipped::Solver(error)),
            }
        };
    // Weights summing past 1 by round-off are scaled back, and what they deliver with them.
    let total_weight: f64 = weights.iter().sum();
    let shrink = if total_weight > 1.0 { 1.0 / total_weight } else { 1.0 };
    let single = sf.len() as u32;
    let configurations: Vec<(f64, Configuration)> = columns
        .iter()
        .zip(&weights)
        .filter(|&(_, &l)| l > 0.0)
        .map(|(column, &l)| {
            let runs = column.iter().map(|&e| entries[e]).filter(|&(g, _)| g < single).collect();
            let pairs = column.iter().map(|&e| entries[e]).filter(|&(g, _)| g >= single).map(|(g, w)| (g - single, w));
            let pairs = pairs.collect();
            (l * shrink, Configuration::with_pairs(runs, pairs))
        })
        .collect();
    let deliverable: Vec<f64> = deliverable.iter().map(|&v| v * shrink).collect();
    let delivered: f64 = deliverable.iter().sum();
    let rows = entries.iter().zip(&asked).zip(&deliverable).map(|((&(g, w), &x), &d)| (g, w as usize, x, d));
    let (singles, paired): (Vec<_>, Vec<_>) = rows.partition(|&(g, ..)| g < single);
    Ok(Realizability {
        requested,
        deliverable: delivered,
        upper_bound: upper_bound.max(delivered).min(requested),
        entries: singles.into_iter().map(|(m, w, x, d)| (m as usize, w, x, d)).collect(),
        pair_entries: paired
            .into_iter()
            .map(|(g, w, x, d)| (instance.pairs[(g - single) as usize].jobs.map(|m| m as usize), w, x, d))
            .collect(),
        configurations,
        stopped,
        lp_solves,
    })
}

/// The check as a response reports it (`stats.realizable`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RealizabilityReport {
    /// Whether the check ran; when not, `reason` says why.
    pub checked: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Time rounds on whole GPUs can deliver over the time the allocation asks (Σ over jobs and
    /// types), in [0, 1]; 1 means realizable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
    /// The most any schedule can deliver, as a fraction: equal to `fraction` when `certified`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction_upper_bound: Option<f64>,
    /// Whether no schedule delivers more (column generation ended with no improving
    /// configuration); false when a budget stopped it.
    pub certified: bool,
    /// Round configurations in the decomposition.
    pub configurations: usize,
    /// Master LP solves (0 when the greedy decomposition delivered everything).
    pub lp_solves: usize,
    pub seconds: f64,
    /// The (job, worker type) entries the decomposition cannot deliver in full.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shortfall: Vec<Shortfall>,
}

/// A job that loses time on a worker type (or a colocated pair, its time together).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Shortfall {
    pub job: String,
    /// Set when the entry is a colocated pair's time together: the job sharing the GPUs with
    /// `job`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colocated_with: Option<String>,
    pub worker_type: String,
    /// `X[m][w]`, the time the allocation asks.
    pub requested: f64,
    /// The time the decomposition delivers.
    pub deliverable: f64,
}

impl RealizabilityReport {
    pub fn skipped(reason: String) -> RealizabilityReport {
        RealizabilityReport {
            checked: false,
            reason: Some(reason),
            fraction: None,
            fraction_upper_bound: None,
            certified: false,
            configurations: 0,
            lp_solves: 0,
            seconds: 0.0,
            shortfall: Vec::new(),
        }
    }
}

/// The instance of an outcome: the problem's whole GPUs per type, its jobs' scale factors, the
/// time each job runs alone on each type, consolidated or not (rounds tell them apart only by
/// placement), and each colocated pair's time together. `Err` with the reason when the outcome
/// has what the check does not cover.
pub fn instance(problem: &Problem, outcome: &Outcome) -> Result<Instance, String> {
    let mut pairs = Vec::new();
    for (k, colocation) in problem.colocations.iter().enumerate().take(outcome.colocated.rows()) {
        let time = outcome.colocated.row(k);
        if time.iter().any(|&y| y > 0.0) {
            pairs.push(PairTime { jobs: colocation.jobs.map(|m| m as u32), requested: time.to_vec() });
        }
    }
    let mut requested = outcome.allocation.clone();
    if outcome.unconsolidated.rows() == requested.rows() && outcome.unconsolidated.cols() == requested.cols() {
        for m in 0..requested.rows() {
            for w in 0..requested.cols() {
                let u = outcome.unconsolidated.get(m, w);
                if u > 0.0 {
                    requested.set(m, w, requested.get(m, w) + u);
                }
            }
        }
    }
    Ok(Instance {
        capacity: problem.worker_types.iter().map(|t| t.count.floor().clamp(0.0, u32::MAX as f64) as u32).collect(),
        scale_factors: problem.jobs.iter().map(|j| j.scale_factor).collect(),
        requested,
        pairs,
    })
}

/// A problem's job ids and worker type names, as reports name entries.
pub fn names(problem: &Problem) -> (Vec<&str>, Vec<&str>) {
    let jobs = problem.jobs.iter().map(|j| j.id.as_str()).collect();
    let types = problem.worker_types.iter().map(|t| t.name.as_str()).collect();
    (jobs, types)
}

/// The check on a solved problem, as the response reports it.
pub fn report(problem: &Problem, outcome: &Outcome, budget: &Budget, backend: Backend) -> RealizabilityReport {
    match instance(problem, outcome) {
        Ok(instance) => {
            let (jobs, types) = names(problem);
            report_instance(&instance, &jobs, &types, budget, backend)
        }
        Err(reason) => RealizabilityReport::skipped(reason),
    }
}

/// The check on an instance, with its jobs' and types' names, as responses report it.
pub fn report_instance(
    instance: &Instance,
    jobs: &[&str],
    types: &[&str],
    budget: &Budget,
    backend: Backend,
) -> RealizabilityReport {
    check_reported(instance, jobs, types, budget, backend).1
}

/// The check on an instance, or why it was skipped, and its report with the jobs' and types'
/// names (for a caller that also uses the decomposition).
pub fn check_reported(
    instance: &Instance,
    jobs: &[&str],
    types: &[&str],
    budget: &Budget,
    backend: Backend,
) -> (Result<Realizability, String>, RealizabilityReport) {
    let start = Instant::now();
    match check(instance, budget, backend) {
        Ok(result) => {
            let report = report_of(&result, jobs, types, start.elapsed().as_secs_f64());
            (Ok(result), report)
        }
        Err(skipped) => {
            let reason = match skipped {
                Skipped::TooLarge(reason) => reason,
                Skipped::Solver(error) => format!("the check's LP failed: {error}"),
            };
            (Err(reason.clone()), RealizabilityReport::skipped(reason))
        }
    }
}

/// A check's answer (or a decomposition the realizable solve made) as responses report it, with
/// its jobs' and types' names and the seconds it took.
pub fn report_of(result: &Realizability, jobs: &[&str], types: &[&str], seconds: f64) -> RealizabilityReport {
    let name = |names: &[&str], i: usize| names.get(i).map_or_else(|| i.to_string(), |n| n.to_string());
    let singles = result.entries.iter().map(|&(m, w, x, d)| ([m, m], false, w, x, d));
    let pairs = result.pair_entries.iter().map(|&(jobs, w, x, d)| (jobs, true, w, x, d));
    let shortfall = singles
        .chain(pairs)
        .filter(|&(_, _, _, x, d)| x - d > SHORTFALL_TOL)
        .map(|([a, b], paired, w, x, d)| Shortfall {
            job: name(jobs, a),
            colocated_with: paired.then(|| name(jobs, b)),
            worker_type: name(types, w),
            requested: x,
            deliverable: d,
        })
        .collect();
    RealizabilityReport {
        checked: true,
        reason: result.stopped.clone(),
        fraction: Some(result.fraction()),
        fraction_upper_bound: Some(result.fraction_upper_bound()),
        certified: result.stopped.is_none(),
        configurations: result.configurations.len(),
        lp_solves: result.lp_solves,
        seconds,
        shortfall,
    }
}
