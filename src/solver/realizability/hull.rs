//! Policies over the convex hull of round configurations: the same objective as the fractional
//! LP, with the capacity rows replaced by a convex combination of configurations, priced in by
//! column generation from the duals (`master`, `pricing`). The allocation it returns is
//! realizable by construction (its configurations and weights are its decomposition), and exact
//! when no configuration improves. See `formulations/realizability.md`.
//!
//! ```text
//! ratio:       maximize z            subject to z − Σ_c g_mc·λ_c ≤ 0   (π_m)   every job with demand
//!                                               Σ_c λ_c ≤ 1          (μ)
//! throughput:  maximize Σ_c v_c·λ_c  subject to Σ_c λ_c ≤ 1          (μ)
//! ```
//!
//! A job no round can run (its gang fits no type it runs on) has no row: it gets no time, and the
//! hull names it rather than hold `z` at 0. With `g_mc = T[m][w]/demand_m` when `c` runs job m on
//! type w alone, `T_k[m][w]/demand_m` when it runs m in colocated pair k on w (space sharing: both
//! jobs of the pair on the same GPUs), 0 when it does not run it; and `v_c = Σ value_m·thr_m` over
//! the jobs `c` runs. A configuration improves iff `Σ_{gang entries e∈c} (Σ_{m∈e} π_m·g_me + cost_e)
//! > μ`: the check's pricing, over gangs, with these values.

use super::master::{Limits, Master, Supply};
use super::pricing::Pricing;
use super::{Budget, Configuration, Gang, Skipped};
use crate::lp::{Backend, LinearProgram, Row, Sense};
use crate::problem::Matrix;
use crate::space_sharing::Pair;
use std::time::Instant;

/// What rounds can run: each job alone at `throughput[m][w]` as a gang of `scale_factors[m]`
/// GPUs, and each colocated pair of `pairs` at its throughputs, on `capacity[w]` whole GPUs of
/// each type.
#[derive(Debug, Clone, Copy)]
pub struct Runnable<'a> {
    pub throughput: &'a Matrix,
    pub scale_factors: &'a [u32],
    pub capacity: &'a [u32],
    /// Space sharing's kept pairs (none without it).
    pub pairs: &'a [Pair],
}

/// What the hull solve maximizes.
#[derive(Debug, Clone, Copy)]
pub enum Goal<'a> {
    /// `max z` with every job's throughput `Σ_w T[m][w]·x_mw ≥ z·demand_m` (jobs of demand 0 get
    /// no time): least attained service, makespan. With `secondary`, a second phase holds `z` at
    /// its optimum and maximizes `Σ_m secondary_m·thr_m` (the tie-break).
    Ratio { demand: &'a [f64], secondary: Option<&'a [f64]> },
    /// `max Σ_m value_m·thr_m` (maximum total throughput: every value 1).
    Throughput { value: &'a [f64] },
}

/// The hull's optimum (or the best found when a budget stopped it).
#[derive(Debug, Clone, PartialEq)]
pub struct Hull {
    /// `z` (ratio) or `Σ value_m·thr_m` (throughput).
    pub value: f64,
    /// An upper bound on the hull's optimum (`value` when certified).
    pub upper_bound: f64,
    /// `X[m][w] = Σ_c λ_c·[c runs m on w alone]`.
    pub allocation: Matrix,
    /// `Y[k][w] = Σ_c λ_c·[c runs pair k on w]`, one row per pair of `Runnable::pairs`.
    pub pair_time: Vec<Vec<f64>>,
    /// The configurations with positive weight and their weights: the allocation's decomposition
    /// (a configuration's pairs index `Runnable::pairs`).
    pub configurations: Vec<(f64, Configuration)>,
    /// Jobs the goal counts that no round can run (no type where their gang fits and they run):
    /// they get no time and are left out of the goal.
    pub unplaceable: Vec<usize>,
    /// Why the optimum is not certified, when it is not.
    pub stopped: Option<String>,
    /// Why the tie-break (a ratio goal's `secondary`) is not certified, when it ran and is not:
    /// the allocation keeps the optimal `z`, with its secondary value as far as the budget went.
    pub tie_break_stopped: Option<String>,
    pub lp_solves: usize,
}

/// Phase two holds `z ≥ z*·(1 − HOLD_TOL)`.
const HOLD_TOL: f64 = 1e-7;
/// Master solves the tie-break's column generation may add past the first phase's.
const TIE_BREAK_SOLVES: usize = 20;
/// Entries past which the tie-break runs no column generation (its master solves cost seconds).
const TIE_BREAK_ENTRIES: usize = 1024;

/// Where the column generation starts, and what it knows of the optimum.
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// Configurations to start from (decompositions of the fractional optimum; pairs index
    /// `Runnable::pairs`).
    pub seed: Vec<Configuration>,
    /// The size of the expected `z` (the fractional optimum), so the master's numbers stay near 1.
    pub scale: Option<f64>,
    /// An upper bound on the goal (the fractional optimum, whose polytope holds the hull):
    /// reaching it proves the optimum without pricing.
    pub bound: Option<f64>,
    /// An upper bound on the tie-break's `Σ secondary_m·thr_m` when `z` reaches `bound` (the
    /// fractional tie-break's optimum).
    pub secondary_bound: Option<f64>,
    /// A decomposition (weights and configurations) known to reach `bound`: the first phase is
    /// then proved without an LP.
    pub reaching: Option<Vec<(f64, Configuration)>>,
}

/// Solves `goal` over the round configurations of `runnable`, from `start`.
pub fn solve(
    runnable: Runnable,
    goal: Goal,
    start: &Start,
    budget: &Budget,
    backend: Backend,
) -> Result<Hull, Skipped> {
    let Runnable { throughput, scale_factors, capacity, pairs } = runnable;
    let (seed, scale) = (&start.seed, start.scale.unwrap_or(1.0));
    let (jobs, types) = (throughput.rows(), throughput.cols());
    let weight = |m: usize| match goal {
        Goal::Ratio { demand, .. } => demand[m],
        Goal::Throughput { value } => value[m],
    };
    // Jobs the goal counts.
    let counts = |m: usize| weight(m).is_finite() && weight(m) > 0.0;
    // The entries a configuration may run, `(gang, type)`: a job alone (gang m) or colocated pair
    // k (gang jobs + k) with a positive throughput, in a gang that fits, of jobs that count for
    // the goal. `rates[e]`: each of the entry's jobs and its throughput there.
    let mut gangs = Gang::singles(&scale_factors[..jobs.min(scale_factors.len())]);
    gangs.extend(pairs.iter().map(|p| Gang::pair(p.jobs.map(|m| m as u32), p.scale_factor)));
    let mut entries: Vec<(u32, u32)> = Vec::new();
    let mut rates: Vec<Vec<(usize, f64)>> = Vec::new();
    let too_many = || Skipped::TooLarge(format!("more than {} (job, worker type) entries", budget.max_entries));
    for (m, &sf) in scale_factors.iter().enumerate().take(jobs) {
        if !counts(m) {
            continue;
        }
        for (w, &gpus) in capacity.iter().enumerate().take(types) {
            let t = throughput.get(m, w);
            if t.is_finite() && t > 0.0 && sf <= gpus {
                entries.push((m as u32, w as u32));
                rates.push(vec![(m, t)]);
            }
        }
        if entries.len() > budget.max_entries {
            return Err(too_many());
        }
    }
    for (k, pair) in pairs.iter().enumerate() {
        let [a, b] = pair.jobs;
        if a >= jobs || b >= jobs || !counts(a) || !counts(b) {
            continue;
        }
        for w in pair.types().filter(|&w| w < types && pair.scale_factor <= capacity[w]) {
            let [ta, tb] = pair.throughput[w];
            if ta.is_finite() && tb.is_finite() && ta >= 0.0 && tb >= 0.0 {
                entries.push(((jobs + k) as u32, w as u32));
                rates.push(vec![(a, ta), (b, tb)]);
            }
        }
        if entries.len() > budget.max_entries {
            return Err(too_many());
        }
    }
    let scale = if scale.is_finite() && scale > 0.0 { scale } else { 1.0 };
    // Jobs some round can run: those with an entry.
    let mut placeable = vec![false; jobs];
    for &(m, _) in rates.iter().flatten() {
        placeable[m] = true;
    }
    // Per entry: `Σ_{m∈e} per_job[m]·thr_me`, its jobs' throughputs there valued per job.
    let valued =
        |per_job: &[f64]| -> Vec<f64> { rates.iter().map(|r| r.iter().map(|&(m, t)| per_job[m] * t).sum()).collect() };
    let mut lp = LinearProgram::new(Sense::Maximize);
    let mut norm = 1.0;
    let (supply, z) = match goal {
        Goal::Ratio { demand, .. } => {
            let z = lp.add_col(1.0, 0.0, f64::INFINITY);
            let mut row_of = vec![usize::MAX; jobs];
            // A job no round can run has no row: it would hold z at 0 (it is reported instead).
            for (m, row) in row_of.iter_mut().enumerate() {
                if placeable[m] {
                    *row = lp.add_row(Row::at_most(0.0, vec![(z, 1.0)]));
                }
            }
            if !placeable.contains(&true) {
                lp.col_upper[z] = 0.0;
            }
            let supply = Supply {
                terms: rates
                    .iter()
                    .map(|r| r.iter().map(|&(m, t)| (row_of[m], t / (demand[m] * scale))).collect())
                    .collect(),
                cost: vec![0.0; entries.len()],
            };
            (supply, Some(z))
        }
        Goal::Throughput { value } => {
            let cost = valued(value);
            let largest = cost.iter().copied().fold(0.0, f64::max);
            norm = if largest > 0.0 { largest } else { 1.0 };
            // No rows: an entry supplies nothing, its value is its cost.
            let supply =
                Supply { terms: vec![Vec::new(); entries.len()], cost: cost.iter().map(|c| c / norm).collect() };
            (supply, None)
        }
    };
    let convexity = lp.add_row(Row::at_most(1.0, Vec::new()));
    let pricing_work = super::pricing_work(&entries, capacity);
    if pricing_work > budget.max_pricing_work {
        return Err(Skipped::TooLarge(format!(
            "pricing past {} knapsack steps ({pricing_work})",
            budget.max_pricing_work
        )));
    }
    let requested: Vec<f64> = rates.iter().map(|r| r.iter().map(|&(m, t)| t / weight(m)).sum()).collect();
    let deadline = Instant::now() + std::time::Duration::from_secs_f64(budget.seconds.clamp(0.0, 1e6));
    let deadline = backend.deadline.map_or(deadline, |d| d.min(deadline));
    let mut pricing = Pricing::new(&entries, &gangs, capacity, &requested).with_milp(backend.until(deadline));
    if matches!(goal, Goal::Throughput { .. }) {
        pricing = pricing.seeking_the_best();
    }
    let limits = Limits {
        iterations: budget.iterations.max(1),
        work: budget.work,
        pricing_nodes: budget.pricing_nodes,
        deadline: Some(deadline),
    };
    let mut master = Master::new(backend.until(deadline).open(lp), supply, convexity);
    // The idle round: the master is never empty, and its first basis is feasible.
    master.add(Vec::new());
    // `(gang, type)` → its entry, if it has one.
    let mut entry_of = vec![usize::MAX; gangs.len() * types];
    for (e, &(g, w)) in entries.iter().enumerate() {
        entry_of[g as usize * types + w as usize] = e;
    }
    let entry = |g: usize, w: usize| -> Option<usize> {
        (g < gangs.len() && w < types).then(|| entry_of[g * types + w]).filter(|&e| e != usize::MAX)
    };
    // A configuration's entries: its jobs alone, then its pairs (gang jobs + k).
    let column_of = |c: &Configuration| -> Vec<usize> {
        let alone = c.runs.iter().filter_map(|&(m, w)| entry(m as usize, w as usize));
        alone.chain(c.pairs.iter().filter_map(|&(k, w)| entry(jobs + k as usize, w as usize))).collect()
    };
    // The seed's columns, added to the master once, before its first solve (a known decomposition
    // that reaches the bound may need none: past `TIE_BREAK_ENTRIES` no master is solved).
    let mut unseeded = true;
    let mut seed_master = |master: &mut Master| {
        if !std::mem::take(&mut unseeded) {
            return;
        }
        for configuration in seed {
            let column = column_of(configuration);
            if !column.is_empty() {
                master.add(column);
            }
        }
    };
    // The master's objective in the goal's units.
    let unit = match goal {
        Goal::Ratio { .. } => scale,
        Goal::Throughput { .. } => norm,
    };
    let mut lp_solves = 0;
    let known = start.bound.map(|b| b / unit);
    let as_columns = |configurations: &[(f64, Configuration)]| -> Vec<(Vec<usize>, f64)> {
        configurations.iter().map(|(w, c)| (column_of(c), *w)).collect()
    };
    // The master's optimum (in its units), its bound, why it stopped short, its decomposition.
    let (objective, bound, stopped, mut decomposition) = match (&start.reaching, known) {
        // A decomposition known to reach the bound: the optimum, with no LP.
        (Some(reaching), Some(known)) => (known, known, None, as_columns(reaching)),
        _ => {
            seed_master(&mut master);
            let (solution, bound, stopped) =
                master.generate(&pricing, &limits, known, &mut lp_solves).map_err(Skipped::Solver)?;
            (solution.objective, bound, stopped, master.decomposition(&solution))
        }
    };
    let (value, upper_bound) = (objective * unit, bound * unit);
    let mut tie_break_stopped = None;
    let reached = known.is_some_and(|b| bound == b);
    if let (Goal::Ratio { secondary: Some(secondary), .. }, Some(z), None) = (goal, z, &stopped) {
        // Phase two: z held at its optimum, the most secondary throughput (pricing unchanged: the
        // new objective is on the configurations' columns).
        let cost = valued(secondary);
        let norm = cost.iter().copied().fold(0.0, f64::max);
        // The configurations z chose, with their idle GPUs given to the jobs they leave out (most
        // secondary value per GPU first): each still a round, none costing z anything.
        let per_gpu: Vec<f64> =
            entries.iter().zip(&cost).map(|(&(g, _), c)| c / gangs[g as usize].gpus.max(1) as f64).collect();
        let filling = pricing.filling(&pricing.by_order(&per_gpu));
        let filled: Vec<(Vec<usize>, f64)> =
            decomposition.iter().map(|(column, w)| (filling.fill(column.clone()), *w)).collect();
        if entries.len() > TIE_BREAK_ENTRIES {
            // Past this size a master solve costs seconds: the filled configurations, as weighted.
            decomposition = filled;
            tie_break_stopped = Some(format!(
                "past {TIE_BREAK_ENTRIES} (job, worker type) entries the tie-break gives the optimum's \
                 configurations' idle GPUs to the jobs they leave out, without column generation"
            ));
        } else {
            // The optimum's configurations (they need not be columns yet: a known decomposition
            // reached it) and their filled forms.
            seed_master(&mut master);
            for column in decomposition.iter().chain(&filled).map(|(column, _)| column) {
                if !master.has(column) {
                    master.add(column.clone());
                }
            }
            let held = objective * (1.0 - HOLD_TOL);
            master.session.set_col_bounds(z, held.max(0.0), f64::INFINITY);
            master.session.set_costs(&[(z, 0.0)]);
            master.set_entry_costs(cost.iter().map(|c| if norm > 0.0 { c / norm } else { 0.0 }).collect());
            // A new objective: from the slack basis, which HiGHS re-solves far faster here than
            // from the last optimum's (1 s against 5.8 s at 2,048 jobs).
            master.session.forget_basis();
            // The tie-break's own column generation is held to a few more master solves.
            let limits = Limits { iterations: lp_solves + TIE_BREAK_SOLVES, ..limits };
            // Its fractional optimum bounds it only when z reached the fractional z.
            let known = start.secondary_bound.filter(|_| reached).map(|b| if norm > 0.0 { b / norm } else { b });
            let (second, _, why) =
                master.generate(&pricing, &limits, known, &mut lp_solves).map_err(Skipped::Solver)?;
            tie_break_stopped = why;
            decomposition = master.decomposition(&second);
        }
    }
    let weights: Vec<f64> = decomposition.iter().map(|d| d.1).collect();
    let total: f64 = weights.iter().sum();
    let shrink = if total > 1.0 { 1.0 / total } else { 1.0 };
    let mut allocation = Matrix::zeros(jobs, types);
    let mut pair_time = vec![vec![0.0; types]; pairs.len()];
    let mut configurations = Vec::new();
    for ((column, _), &weight) in decomposition.iter().zip(&weights) {
        if weight <= 0.0 || column.is_empty() {
            continue;
        }
        let weight = weight * shrink;
        let (mut runs, mut paired) = (Vec::new(), Vec::new());
        for &e in column {
            let (g, w) = (entries[e].0 as usize, entries[e].1 as usize);
            if g < jobs {
                allocation.set(g, w, (allocation.get(g, w) + weight).min(1.0));
                runs.push(entries[e]);
            } else {
                pair_time[g - jobs][w] = (pair_time[g - jobs][w] + weight).min(1.0);
                paired.push(((g - jobs) as u32, w as u32));
            }
        }
        configurations.push((weight, Configuration::with_pairs(runs, paired)));
    }
    let unplaceable = (0..jobs).filter(|&m| !placeable[m] && counts(m)).collect();
    Ok(Hull {
        value,
        upper_bound: upper_bound.max(value),
        allocation,
        pair_time,
        configurations,
        unplaceable,
        stopped,
        tie_break_stopped,
        lp_solves,
    })
}
