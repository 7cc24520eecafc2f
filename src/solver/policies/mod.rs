//! The policies of the contract, one file each behind the `Policy` trait. A policy reads the
//! validated `Problem` and returns an `Outcome` (allocation, objective, solver work); it does no
//! parsing and no rendering. Each one reads like its page in `formulations/`.

mod allox;
mod fifo;
mod finish_time_fairness;
mod gandiva;
mod hierarchical;
mod isolated;
pub mod max_min_fairness;
mod max_min_fairness_water_filling;
mod max_sum_throughput;
mod min_cost;
mod min_cost_slo;
pub mod min_makespan;
mod proportional;
mod shortest_job_first;
mod trajectory;
mod water_filling;

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::max_min_ratio::{Engine, Instance, RatioSolution};
use crate::problem::{Matrix, Problem};
use crate::space_sharing::{kept_pairs, Pair};

/// Every policy name of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    MaxMinFairness,
    MaxMinFairnessWaterFilling,
    Hierarchical,
    FinishTimeFairness,
    MinMakespan,
    MaxSumThroughput,
    Fifo,
    ShortestJobFirst,
    MinCost,
    MinCostSlo,
    Isolated,
    Proportional,
    Gandiva,
    Allox,
}

impl PolicyKind {
    pub const ALL: [PolicyKind; 14] = [
        PolicyKind::MaxMinFairness,
        PolicyKind::MaxMinFairnessWaterFilling,
        PolicyKind::Hierarchical,
        PolicyKind::FinishTimeFairness,
        PolicyKind::MinMakespan,
        PolicyKind::MaxSumThroughput,
        PolicyKind::Fifo,
        PolicyKind::ShortestJobFirst,
        PolicyKind::MinCost,
        PolicyKind::MinCostSlo,
        PolicyKind::Isolated,
        PolicyKind::Proportional,
        PolicyKind::Gandiva,
        PolicyKind::Allox,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::MaxMinFairness => "max_min_fairness",
            PolicyKind::MaxMinFairnessWaterFilling => "max_min_fairness_water_filling",
            PolicyKind::Hierarchical => "hierarchical",
            PolicyKind::FinishTimeFairness => "finish_time_fairness",
            PolicyKind::MinMakespan => "min_makespan",
            PolicyKind::MaxSumThroughput => "max_sum_throughput",
            PolicyKind::Fifo => "fifo",
            PolicyKind::ShortestJobFirst => "shortest_job_first",
            PolicyKind::MinCost => "min_cost",
            PolicyKind::MinCostSlo => "min_cost_slo",
            PolicyKind::Isolated => "isolated",
            PolicyKind::Proportional => "proportional",
            PolicyKind::Gandiva => "gandiva",
            PolicyKind::Allox => "allox",
        }
    }

    /// A policy by name, or `unknown_policy` (field `policy`) listing every name.
    pub fn named(name: &str) -> Result<PolicyKind> {
        PolicyKind::from_name(name).ok_or_else(|| PolicyKind::unknown(name))
    }

    /// The refusal of a `policy` no LP policy has; a list policy's name is pointed to the
    /// scheduling stage that takes it.
    pub fn unknown(name: &str) -> ArbiterError {
        let names: Vec<&str> = PolicyKind::ALL.iter().map(|p| p.name()).collect();
        let list = crate::scheduling::composition::LIST_POLICIES.contains(&name.split('=').next().unwrap_or(name));
        let hint = if list {
            format!(
                " ({name} is a list policy of the scheduling pipeline: a session takes it as \
                 \"composition\": {{\"scheduling\": \"{name}\"}}, simulate and sweep as --scheduling {name})"
            )
        } else {
            String::new()
        };
        ArbiterError::at(
            ErrorCode::UnknownPolicy,
            "policy",
            format!("unknown policy {}{hint}; expected one of: {}", crate::error::quoted(name), names.join(", ")),
        )
    }

    pub fn from_name(name: &str) -> Option<PolicyKind> {
        PolicyKind::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Policies solved by the exact max-min engine (`max_min_ratio`).
    fn on_exact_engine(self) -> bool {
        matches!(
            self,
            PolicyKind::MaxMinFairness
                | PolicyKind::MaxMinFairnessWaterFilling
                | PolicyKind::Hierarchical
                | PolicyKind::FinishTimeFairness
                | PolicyKind::MinMakespan
        )
    }

    /// Policies that can give time to colocated pairs (`space_sharing: true`).
    pub fn supports_space_sharing(self) -> bool {
        self.on_exact_engine() || matches!(self, PolicyKind::MaxSumThroughput | PolicyKind::Gandiva)
    }

    /// Policies that formulate consolidated and unconsolidated placements
    /// (`unconsolidated_throughput`): those on the exact engine.
    pub fn supports_placement_sensitivity(self) -> bool {
        self.on_exact_engine()
    }

    /// Policies whose objective is defined by the jobs' remaining steps.
    pub fn needs_steps_remaining(self) -> bool {
        matches!(
            self,
            PolicyKind::FinishTimeFairness | PolicyKind::MinMakespan | PolicyKind::ShortestJobFirst | PolicyKind::Allox
        )
    }

    /// The implementation, or `None` for a contract policy this version does not provide yet.
    pub fn policy(self) -> Option<&'static dyn Policy> {
        Some(match self {
            PolicyKind::MaxMinFairness => &max_min_fairness::MaxMinFairness,
            PolicyKind::FinishTimeFairness => &finish_time_fairness::FinishTimeFairness,
            PolicyKind::MinMakespan => &min_makespan::MinMakespan,
            PolicyKind::MaxSumThroughput => &max_sum_throughput::MaxSumThroughput,
            PolicyKind::Fifo => &fifo::Fifo,
            PolicyKind::ShortestJobFirst => &shortest_job_first::ShortestJobFirst,
            PolicyKind::MinCost => &min_cost::MinCost,
            PolicyKind::MinCostSlo => &min_cost_slo::MinCostSlo,
            PolicyKind::Isolated => &isolated::Isolated,
            PolicyKind::Proportional => &proportional::Proportional,
            PolicyKind::MaxMinFairnessWaterFilling => &max_min_fairness_water_filling::MaxMinFairnessWaterFilling,
            PolicyKind::Hierarchical => &hierarchical::Hierarchical,
            PolicyKind::Gandiva => &gandiva::Gandiva,
            PolicyKind::Allox => &allox::Allox,
        })
    }
}

/// What a policy computes: the allocation `X`, its objective as the contract reports it, and
/// how much solver work it took.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub allocation: Matrix,
    pub objective: Option<f64>,
    pub lp_solves: usize,
    /// What water-filling policies add: per-job levels and when each job froze.
    pub water_filling: Option<WaterFillingReport>,
    /// Policies on the exact engine: which method solved their `max_ratio` (the last one).
    pub method: Option<crate::max_min_ratio::MethodReport>,
    /// Space sharing: `colocated.row(k)[w]` is the fraction of time pair `k` of
    /// `Problem::colocations` runs together on type `w` (`Y[k][w]`). No rows without sharing.
    pub colocated: Matrix,
    /// Placement sensitivity: `U[m][w]`, the time job m runs on `w` with its GPUs spread over
    /// servers, at its unconsolidated throughput. No rows without placement sensitivity.
    pub unconsolidated: Matrix,
}

/// The most time [`Outcome::top_up`] gives a job: what a solver's tolerance hides, never a real
/// shortfall.
const SLIVER: f64 = 1e-6;

impl Outcome {
    /// An allocation with nothing beside it: no water-filling levels, no method report, no
    /// colocations, no unconsolidated time.
    pub fn of(allocation: Matrix, objective: Option<f64>, lp_solves: usize) -> Outcome {
        Outcome {
            allocation,
            objective,
            lp_solves,
            water_filling: None,
            method: None,
            colocated: Matrix::zeros(0, 0),
            unconsolidated: Matrix::zeros(0, 0),
        }
    }

    /// Whether some colocated pair has time (`Y > 0` anywhere).
    pub fn colocates(&self) -> bool {
        (0..self.colocated.rows()).any(|k| self.colocated.row(k).iter().any(|&y| y > 0.0))
    }

    /// Each type's GPUs in use: `Σ_m sf_m·(X[m][w] + U[m][w])` and `Σ_k sf_k·Y[k][w]`.
    pub fn gpus_used(&self, problem: &Problem) -> Vec<f64> {
        let mut used = vec![0.0; problem.num_types()];
        for (m, job) in problem.jobs.iter().enumerate() {
            let sf = job.scale_factor as f64;
            for (w, &x) in self.allocation.row(m).iter().enumerate() {
                used[w] += sf * x;
            }
            if m < self.unconsolidated.rows() {
                for (w, &u) in self.unconsolidated.row(m).iter().enumerate() {
                    used[w] += sf * u;
                }
            }
        }
        for k in 0..self.colocated.rows() {
            let sf = problem.jobs[problem.colocations[k].jobs[0]].scale_factor as f64;
            for (w, &y) in self.colocated.row(k).iter().enumerate() {
                used[w] += sf * y;
            }
        }
        used
    }

    /// With placement sensitivity, the GPUs that consolidated jobs of each size use per type:
    /// `Σ_{m: sf_m = s} s·X[m][w]`, entry for entry beside `Problem::consolidated_slots` (whose
    /// GPUs bound it; empty without placement sensitivity).
    pub fn consolidated_gpus_used(&self, problem: &Problem) -> Vec<Vec<(u32, f64)>> {
        let mut slots = problem.consolidated_slots();
        for (w, per_size) in slots.iter_mut().enumerate() {
            for (s, used) in per_size.iter_mut() {
                *used = problem
                    .jobs
                    .iter()
                    .enumerate()
                    .filter(|(m, job)| job.scale_factor == *s && *m < self.allocation.rows())
                    .map(|(m, _)| *s as f64 * self.allocation.get(m, w))
                    .sum();
            }
        }
        slots
    }

    /// Gives every job under `(1 − under)` of its `floors[m]` by at most `SLIVER` of its time
    /// what it lacks, on the type that `preference(m, w)` ranks highest among those where the
    /// sliver fits in that bound, in its time and in the type's idle GPUs (if none has them, among
    /// the others): floors the LP's tolerance let slip (a
    /// job needing less of a GPU than the tolerance can come back with no time, its floor row read
    /// as met at 0). A type that is full gives the sliver up from the others there (`make_room`):
    /// from what they run above their own floors where that is enough, else pro rata.
    /// Whether any job was topped up.
    pub fn top_up(
        &mut self,
        problem: &Problem,
        floors: &[f64],
        under: f64,
        preference: impl Fn(usize, usize) -> f64,
    ) -> bool {
        let mut topped = false;
        let mut thr = self.throughputs_under(problem, &problem.throughput);
        let mut time = self.time_used(problem);
        let mut used = self.gpus_used(problem);
        for (m, &floor) in floors.iter().enumerate() {
            if !(floor.is_finite() && floor > 0.0) || thr[m] >= floor * (1.0 - under) {
                continue;
            }
            let sliver = |w: usize| (floor - thr[m]) / problem.throughput.get(m, w);
            let fits: Vec<usize> = (0..problem.num_types())
                .filter(|&w| problem.throughput.get(m, w) > 0.0 && problem.worker_types[w].count > 0.0)
                .filter(|&w| sliver(w) <= SLIVER && time[m] + sliver(w) <= 1.0)
                .collect();
            // On each type that fits, the GPUs the other jobs run above their floors.
            let spares: Vec<Vec<(usize, f64)>> =
                fits.iter().map(|&w| self.spares(problem, m, w, floors, &thr)).collect();
            let room = |i: usize| {
                let (w, spare) = (fits[i], spares[i].iter().map(|&(_, g)| g).sum::<f64>());
                problem.worker_types[w].count - used[w] + spare >= problem.jobs[m].scale_factor as f64 * sliver(w)
            };
            let by_preference = |&a: &usize, &b: &usize| preference(m, fits[a]).total_cmp(&preference(m, fits[b]));
            // A type with room for the sliver first (idle, or run above other floors); else the
            // others' time there shrinks pro rata.
            let best = (0..fits.len()).filter(|&i| room(i)).max_by(by_preference);
            let Some(i) = best.or_else(|| (0..fits.len()).max_by(by_preference)) else { continue };
            let w = fits[i];
            self.allocation.set(m, w, self.allocation.get(m, w) + sliver(w));
            self.make_room(problem, m, w, &spares[i]);
            // The room made moved the others on `w`: read everyone again.
            thr = self.throughputs_under(problem, &problem.throughput);
            time = self.time_used(problem);
            used = self.gpus_used(problem);
            topped = true;
        }
        topped
    }

    /// Brings type `w` back within its GPUs after job `m` was given more of it. The other jobs
    /// there give up the GPUs in proportion to what they run above their floors (`spares`, from
    /// [`Outcome::spares`]), so that no floor a top-up met slips again when the next one makes its
    /// room (thousands of slivers on the one cheapest GPU took 0.14% of a floor that way); where
    /// that is not enough, every other job's and pair's time there shrinks by the same factor.
    fn make_room(&mut self, problem: &Problem, m: usize, w: usize, spares: &[(usize, f64)]) {
        let count = problem.worker_types[w].count;
        let used = self.gpus_used(problem)[w];
        if used <= count {
            return;
        }
        let excess = used - count;
        let total: f64 = spares.iter().map(|&(_, g)| g).sum();
        if total >= excess {
            for &(j, g) in spares {
                let give = g * excess / total / problem.jobs[j].scale_factor as f64;
                self.allocation.set(j, w, (self.allocation.get(j, w) - give).max(0.0));
            }
            return;
        }
        let ours = problem.jobs[m].scale_factor as f64 * self.allocation.get(m, w);
        let others = used - ours;
        if others <= 0.0 {
            return;
        }
        let keep = ((count - ours) / others).clamp(0.0, 1.0);
        for j in (0..problem.num_jobs()).filter(|&j| j != m) {
            self.allocation.set(j, w, self.allocation.get(j, w) * keep);
        }
        for j in 0..self.unconsolidated.rows() {
            self.unconsolidated.set(j, w, self.unconsolidated.get(j, w) * keep);
        }
        for k in 0..self.colocated.rows() {
            self.colocated.set(k, w, self.colocated.get(k, w) * keep);
        }
    }

    /// Every job but `m` that runs GPUs of `w` above its floor (all it runs there without one,
    /// `thr`: the jobs' throughputs), and how many: what it can give up for `m`'s top-up without
    /// going under.
    fn spares(&self, problem: &Problem, m: usize, w: usize, floors: &[f64], thr: &[f64]) -> Vec<(usize, f64)> {
        (0..problem.num_jobs())
            .filter(|&j| j != m && self.allocation.get(j, w) > 0.0)
            .map(|j| {
                let above = (thr[j] - floors[j]).max(0.0) / problem.throughput.get(j, w);
                (j, problem.jobs[j].scale_factor as f64 * self.allocation.get(j, w).min(above))
            })
            .filter(|&(_, g)| g > 0.0)
            .collect()
    }

    /// Each job's share of the time running: its `X`, its `U` and its pairs' `Y`.
    pub fn time_used(&self, problem: &Problem) -> Vec<f64> {
        let mut time: Vec<f64> = self.allocation.row_iter().map(|x| x.iter().sum()).collect();
        for (m, u) in self.unconsolidated.row_iter().enumerate() {
            time[m] += u.iter().sum::<f64>();
        }
        for (k, colocation) in problem.colocations.iter().enumerate().take(self.colocated.rows()) {
            let y: f64 = self.colocated.row(k).iter().sum();
            time[colocation.jobs[0]] += y;
            time[colocation.jobs[1]] += y;
        }
        time
    }

    /// Each job's throughput: `Σ_w t[m][w]·X[m][w]` (`t` the measured or the policy's matrix),
    /// plus its unconsolidated time at the measured unconsolidated throughputs and its pairs' time
    /// at their colocated throughputs.
    pub fn throughputs_under(&self, problem: &Problem, t: &Matrix) -> Vec<f64> {
        let mut thr: Vec<f64> =
            (0..problem.num_jobs()).map(|m| crate::problem::dot(t.row(m), self.allocation.row(m))).collect();
        // Only rows with time add (as a response reports them).
        let has_time = |row: &[f64]| row.iter().any(|&v| v > 0.0);
        if let Some(tu) = &problem.unconsolidated {
            for (m, thr_m) in thr.iter_mut().enumerate().take(self.unconsolidated.rows()) {
                if has_time(self.unconsolidated.row(m)) {
                    *thr_m += crate::problem::dot(tu.row(m), self.unconsolidated.row(m));
                }
            }
        }
        for (k, colocation) in problem.colocations.iter().enumerate().take(self.colocated.rows()) {
            if !has_time(self.colocated.row(k)) {
                continue;
            }
            for (w, &y) in self.colocated.row(k).iter().enumerate() {
                thr[colocation.jobs[0]] += colocation.throughput[w][0] * y;
                thr[colocation.jobs[1]] += colocation.throughput[w][1] * y;
            }
        }
        thr
    }

    /// The outcome of a policy solved by one `max_ratio` on `engine`, with its `objective`.
    pub(crate) fn of_ratio(problem: &Problem, engine: &Engine, solution: RatioSolution, objective: f64) -> Outcome {
        Outcome {
            colocated: colocated(problem, engine.pairs(), &solution.pair_time),
            unconsolidated: solution.unconsolidated,
            allocation: solution.allocation,
            objective: Some(objective),
            lp_solves: solution.lp_solves,
            water_filling: None,
            method: engine.method_report(),
        }
    }
}

/// Per job (by index): the normalized throughput `nt_m = thr_m / thr_equal_m` of the final
/// allocation, the weighted level `(sf_m/w_m)·nt_m` it froze at (with the weight of that
/// iteration), and the iteration (from 0) at which it froze.
#[derive(Debug, Clone, PartialEq)]
pub struct WaterFillingReport {
    pub normalized_throughput: Vec<f64>,
    pub level: Vec<f64>,
    pub frozen_at: Vec<usize>,
    pub iterations: usize,
}

/// One allocation policy.
pub trait Policy: Sync {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome>;
}

/// Runs the problem's policy.
pub fn solve(problem: &Problem, backend: Backend) -> Result<Outcome> {
    if problem.num_jobs() == 0 {
        return Ok(Outcome::of(Matrix::zeros(0, problem.num_types()), None, 0));
    }
    let policy = problem.policy.policy().ok_or_else(|| {
        ArbiterError::at(
            ErrorCode::Unsupported,
            "policy",
            format!("policy {} is part of the contract but not available in this version", problem.policy.name()),
        )
    })?;
    let mut outcome = policy.solve(problem, backend)?;
    spread_if_type_blind(problem, &mut outcome);
    drop_time_where_it_cannot_run(problem, &mut outcome);
    Ok(outcome)
}

/// Runs the problem's policy; a policy on the exact engine (LAS, makespan, finish-time fairness)
/// also returns its engine, the model of its last plain-LP solve kept on repeated rows
/// (`Engine::keeping_models`), so that the tie-break's second solve starts from its classes, cuts
/// and model instead of building its own.
pub fn solve_keeping_engine(problem: &Problem, backend: Backend) -> Result<(Outcome, Option<Engine<'_>>)> {
    let on_engine: fn(&Problem, &mut Engine) -> Result<Outcome> = match problem.policy {
        _ if problem.num_jobs() == 0 => return Ok((solve(problem, backend)?, None)),
        PolicyKind::MaxMinFairness => max_min_fairness::on_engine,
        PolicyKind::MinMakespan => min_makespan::on_engine,
        PolicyKind::FinishTimeFairness => finish_time_fairness::on_engine,
        _ => return Ok((solve(problem, backend)?, None)),
    };
    let mut engine = engine(problem, backend).keeping_models();
    let mut outcome = on_engine(problem, &mut engine)?;
    spread_if_type_blind(problem, &mut outcome);
    drop_time_where_it_cannot_run(problem, &mut outcome);
    Ok((outcome, Some(engine)))
}

/// Takes away a job's time on types where it cannot run (its throughput there 0, or absent): it
/// adds nothing to any objective, and a degenerate vertex (`tie_break: "none"`, or an allocation
/// built from the equal share) can leave it there, holding GPUs another job could use. Type-blind
/// policies take every throughput as 1 (the contract), and `isolated` and `proportional` are
/// defined by the equal share itself: theirs is kept.
pub(crate) fn drop_time_where_it_cannot_run(problem: &Problem, outcome: &mut Outcome) {
    if !problem.heterogeneity_aware || matches!(problem.policy, PolicyKind::Isolated | PolicyKind::Proportional) {
        return;
    }
    let rows = outcome.allocation.rows().min(problem.num_jobs());
    for m in 0..rows {
        for w in 0..outcome.allocation.cols() {
            if outcome.allocation.get(m, w) != 0.0 && problem.throughput.get(m, w) <= 0.0 {
                outcome.allocation.set(m, w, 0.0);
            }
        }
    }
}

/// Spreads a type-blind allocation over the types when its objective allows (see below).
pub(crate) fn spread_if_type_blind(problem: &Problem, outcome: &mut Outcome) {
    if spreads_type_blind(problem, outcome) {
        spread_over_types(problem, &mut outcome.allocation);
    }
}

/// Type-blind (`heterogeneity_aware: false`) policies whose objective reads only each job's total
/// time have many optimal allocations; a simplex vertex pins a job to one type, which the round
/// mechanism then honours for the job's whole life. Gavel's solver returns the evenly spread one.
fn spreads_type_blind(problem: &Problem, outcome: &Outcome) -> bool {
    let time_only = problem.policy.on_exact_engine()
        || matches!(problem.policy, PolicyKind::MaxSumThroughput | PolicyKind::Fifo | PolicyKind::ShortestJobFirst);
    let extra_columns = outcome.colocates() || outcome.unconsolidated.rows() > 0;
    !problem.heterogeneity_aware && time_only && !extra_columns
}

/// Keeps each job's total time `t_m = Σ_w X[m][w]` and spreads it over the types in proportion to
/// their GPUs: `X[m][w] = t_m·count_w / Σ_v count_v`. With every throughput 1 the objective is
/// unchanged, and it stays feasible: type w then holds `(count_w / C)·Σ_m sf_m t_m ≤ count_w`,
/// because the capacity rows of any feasible allocation sum to `Σ_m sf_m t_m ≤ C`.
fn spread_over_types(problem: &Problem, allocation: &mut Matrix) {
    let total: f64 = problem.worker_types.iter().map(|w| w.count).sum();
    if total <= 0.0 {
        return;
    }
    for m in 0..allocation.rows() {
        let time: f64 = allocation.row(m).iter().sum();
        for (w, worker_type) in problem.worker_types.iter().enumerate() {
            allocation.set(m, w, time * worker_type.count / total);
        }
    }
}

/// The shared shape every policy's capacity constraints use.
pub(crate) fn scale_factors(problem: &Problem) -> Vec<u32> {
    problem.jobs.iter().map(|j| j.scale_factor).collect()
}

pub(crate) fn capacities(problem: &Problem) -> Vec<f64> {
    problem.worker_types.iter().map(|w| w.count).collect()
}

/// The exact max-min engine on the problem's throughput matrix and cluster; one per request, so
/// its cuts carry over from one program to the next.
pub(crate) fn engine(problem: &Problem, backend: Backend) -> Engine<'_> {
    let instance = Instance {
        throughput: &problem.throughput,
        scale_factor: scale_factors(problem),
        capacity: capacities(problem),
        pairs: kept_pairs(problem),
        unconsolidated: problem.unconsolidated_throughput(),
        consolidated_slots: problem.consolidated_slots(),
    };
    Engine::new(instance, backend)
        .with_method(problem.method, problem.decomposition)
        .with_warm_prices(problem.warm_prices.clone())
}

/// `Outcome::colocated` from pair time aligned with `pairs`: one row per offered colocation.
pub(crate) fn colocated(problem: &Problem, pairs: &[Pair], pair_time: &[Vec<f64>]) -> Matrix {
    if !problem.space_sharing {
        return Matrix::zeros(0, 0);
    }
    let mut y = Matrix::zeros(problem.colocations.len(), problem.num_types());
    for (pair, time) in pairs.iter().zip(pair_time) {
        for (w, &t) in time.iter().enumerate() {
            y.set(pair.colocation, w, t);
        }
    }
    y
}

/// `thr_m = Σ_w T[m][w] X[m][w]` over the policy's throughput matrix.
pub(crate) fn throughputs(problem: &Problem, allocation: &Matrix) -> Vec<f64> {
    (0..problem.num_jobs()).map(|m| crate::problem::dot(problem.throughput.row(m), allocation.row(m))).collect()
}
