//! Plain per-job LPs built with `arbiter::lp` straight from the contract (one column per job and
//! usable type, no grouping), to check the crate's aggregated formulations against: the base
//! constraints, max-ratio and linear objectives, a job's best throughput with the others held,
//! Pareto efficiency, and water-filling done level by level.

use super::levels::Filled;
use super::{equal_share_throughput, policy_throughput, throughputs};
use arbiter::lp::{Backend, LinearProgram, Row, Sense};
use arbiter::problem::Matrix;
use arbiter::Problem;

/// The columns of a `plain_base_lp`: `consolidated[m][w]` for `X[m][w]`, and `spread[m][w]` for
/// `U[m][w]` where the request gives multi-GPU jobs `unconsolidated_throughput` (`T^u`, the
/// policy's, read once).
pub struct Columns {
    pub consolidated: Vec<Vec<Option<usize>>>,
    pub spread: Vec<Vec<Option<usize>>>,
    spread_throughput: Option<Matrix>,
}

/// A plain per-job LP over `X[m][w]` with the base constraints (one column per job and usable
/// type, no grouping), for cross-checks; with placement sensitivity, also over `U[m][w]` with the
/// consolidated slots (`formulations/placement_sensitivity.md`).
pub fn plain_base_lp(p: &Problem, sense: Sense) -> (LinearProgram, Columns) {
    let mut lp = LinearProgram::new(sense);
    let usable = |w: usize, t: f64| t > 0.0 && p.worker_types[w].count > 0.0;
    let consolidated: Vec<Vec<Option<usize>>> = (0..p.num_jobs())
        .map(|m| {
            (0..p.num_types())
                .map(|w| usable(w, policy_throughput(p, m, w)).then(|| lp.add_col(0.0, 0.0, 1.0)))
                .collect()
        })
        .collect();
    let spread_thr = p.unconsolidated_throughput();
    let spread: Vec<Vec<Option<usize>>> = (0..p.num_jobs())
        .map(|m| {
            (0..p.num_types())
                .map(|w| {
                    let t = spread_thr.as_ref().filter(|_| p.jobs[m].scale_factor > 1).map_or(0.0, |t| t.get(m, w));
                    usable(w, t).then(|| lp.add_col(0.0, 0.0, 1.0))
                })
                .collect()
        })
        .collect();
    let of_job = |m: usize| consolidated[m].iter().chain(&spread[m]).flatten().map(|&c| (c, 1.0)).collect::<Vec<_>>();
    for m in 0..p.num_jobs() {
        lp.add_row(Row::at_most(1.0, of_job(m)));
    }
    for (w, wt) in p.worker_types.iter().enumerate() {
        let sf = |m: usize| p.jobs[m].scale_factor as f64;
        let coefs: Vec<(usize, f64)> = (0..p.num_jobs())
            .flat_map(|m| [consolidated[m][w], spread[m][w]].into_iter().flatten().map(move |c| (c, sf(m))))
            .collect();
        lp.add_row(Row::at_most(wt.count, coefs));
    }
    for (w, slots) in p.consolidated_slots().iter().enumerate() {
        for &(s, gpus) in slots {
            let coefs: Vec<(usize, f64)> = (0..p.num_jobs())
                .filter(|&m| p.jobs[m].scale_factor == s)
                .filter_map(|m| consolidated[m][w].map(|c| (c, s as f64)))
                .collect();
            lp.add_row(Row::at_most(gpus, coefs));
        }
    }
    (lp, Columns { consolidated, spread, spread_throughput: spread_thr })
}

/// `(column, throughput)` of job m's throughput in a `plain_base_lp`: `T[m][w]` on its
/// consolidated columns, `T^u[m][w]` on its spread ones.
pub fn thr_coefs(p: &Problem, cols: &Columns, m: usize) -> Vec<(usize, f64)> {
    let consolidated =
        cols.consolidated[m].iter().enumerate().filter_map(|(w, c)| c.map(|c| (c, policy_throughput(p, m, w))));
    let spread = cols.spread[m]
        .iter()
        .enumerate()
        .filter_map(|(w, c)| c.map(|c| (c, cols.spread_throughput.as_ref().expect("spread columns").get(m, w))));
    consolidated.chain(spread).collect()
}

/// `max z s.t. Σ_w T[m][w] X[m][w] ≥ z·demand_m` on the base constraints, one row per job.
/// Demands are normalized to at most 1 for the solve and the scale undone on `z`.
pub fn plain_max_ratio(p: &Problem, demand: &[f64]) -> f64 {
    let scale = demand.iter().cloned().fold(0.0, f64::max);
    assert!(scale > 0.0);
    let (mut lp, cols) = plain_base_lp(p, Sense::Maximize);
    let z = lp.add_col(1.0, 0.0, f64::INFINITY);
    for (m, &d) in demand.iter().enumerate() {
        if d <= 0.0 {
            continue;
        }
        let mut coefs = thr_coefs(p, &cols, m);
        coefs.push((z, -d / scale));
        lp.add_row(Row::at_least(0.0, coefs));
    }
    let solution = Backend::default().solve(lp).expect("plain ratio LP solves");
    solution.values[z] / scale
}

/// `max Σ_m Σ_w coef[m][w]·X[m][w]` on the base constraints.
pub fn plain_max_linear(p: &Problem, coef: impl Fn(usize, usize) -> f64) -> f64 {
    let (mut lp, cols) = plain_base_lp(p, Sense::Maximize);
    for (m, row) in cols.consolidated.iter().enumerate() {
        for (w, c) in row.iter().enumerate() {
            if let Some(c) = c {
                lp.cost[*c] = coef(m, w);
            }
        }
    }
    Backend::default().solve(lp).expect("plain linear LP solves").objective
}

/// A job is stuck when its best throughput, with every other job at its floor, beats that floor by
/// at most `STUCK` of it plus `NOISE` of a unit of time on its fastest type (LP round-off).
pub const STUCK: f64 = 1e-7;
pub const NOISE: f64 = 1e-8;

/// Job m's best throughput on one unit of time, `max_w T[m][w]` with the policy's matrix.
pub fn fastest(p: &Problem, m: usize) -> f64 {
    (0..p.num_types()).map(|w| policy_throughput(p, m, w)).fold(0.0, f64::max)
}

/// `max thr_m` s.t. `thr_k ≥ floor_k` for every other job k, on the base constraints.
pub fn max_throughput(p: &Problem, floor: &[f64], m: usize) -> f64 {
    try_max_throughput(p, floor, m).expect("bottleneck LP solves")
}

/// `max_throughput`, or `None` when the floors cannot all be met.
pub fn try_max_throughput(p: &Problem, floor: &[f64], m: usize) -> Option<f64> {
    let (mut lp, cols) = plain_base_lp(p, Sense::Maximize);
    for (c, t) in thr_coefs(p, &cols, m) {
        lp.cost[c] = t;
    }
    for (k, &f) in floor.iter().enumerate() {
        if k != m && f > 0.0 {
            lp.add_row(Row::at_least(f, thr_coefs(p, &cols, k)));
        }
    }
    Backend::default().solve(lp).ok().map(|s| s.objective)
}

/// Water-filling with per-job LPs, from the contract. Each level: `max c` s.t.
/// `thr_m ≥ floor_m + c·w_m·thr_equal_m/sf_m` for the active jobs (unfrozen, weight > 0) and
/// `thr_m ≥ floor_m` for the rest; then every active job whose best throughput with every other
/// job at its floor does not beat its own floor is stuck, and freezes at `(sf/w)·nt` with this
/// level's weight. `weights_of(frozen)` gives each level's weights: the jobs' own weights for
/// `max_min_fairness_water_filling`, the entity tree's for `hierarchical`.
pub fn plain_water_filling(p: &Problem, weights_of: impl Fn(&[bool]) -> Vec<f64>) -> Filled {
    let n = p.num_jobs();
    let eq = equal_share_throughput(p);
    let sf: Vec<f64> = p.jobs.iter().map(|j| j.scale_factor as f64).collect();
    let mut floor = vec![0.0; n];
    let mut frozen = vec![false; n];
    let mut out = Filled { nt: vec![0.0; n], level: vec![f64::NAN; n], iteration: vec![usize::MAX; n] };
    let mut iteration = 0;
    while frozen.contains(&false) {
        let w = weights_of(&frozen);
        let active: Vec<bool> = (0..n).map(|m| !frozen[m] && w[m] > 0.0).collect();
        assert!(active.contains(&true), "unfrozen jobs but none with weight: {w:?}");
        let rate: Vec<f64> = (0..n).map(|m| if active[m] { w[m] * eq[m] / sf[m] } else { 0.0 }).collect();
        let scale = rate.iter().cloned().fold(0.0, f64::max);
        let (mut lp, cols) = plain_base_lp(p, Sense::Maximize);
        let c = lp.add_col(1.0, 0.0, f64::INFINITY);
        for m in 0..n {
            let mut coefs = thr_coefs(p, &cols, m);
            if active[m] {
                coefs.push((c, -rate[m] / scale));
            }
            // The floors as they are: the last level's solution meets them (to solver tolerance).
            lp.add_row(Row::at_least(floor[m], coefs));
        }
        let solution = Backend::default().solve(lp).expect("level LP solves");
        let step = solution.values[c].max(0.0) / scale;
        for m in (0..n).filter(|&m| active[m]) {
            floor[m] += step * rate[m];
        }
        // How far each active job can rise, in units of what counts as round-off.
        let rise: Vec<f64> = (0..n)
            .map(|m| {
                if !active[m] {
                    return f64::INFINITY;
                }
                (max_throughput(p, &floor, m) - floor[m]) / (STUCK * floor[m] + NOISE * fastest(p, m))
            })
            .collect();
        // At the optimal level some active job is stuck; should round-off hide it, the least able
        // to rise is the one.
        let least = rise.iter().cloned().fold(f64::INFINITY, f64::min);
        for m in (0..n).filter(|&m| active[m] && (rise[m] <= 1.0 || rise[m] == least)) {
            frozen[m] = true;
            out.level[m] = sf[m] / w[m] * floor[m] / eq[m];
            out.iteration[m] = iteration;
        }
        // A job that froze at 0 had its turn and got nothing. The jobs still waiting theirs
        // (weight 0) freeze at 0 in this level too when none can get anything with every job at
        // its floor: floors only rise, so none ever would. As the policy does, only once no
        // active job of this level is left at 0 unfrozen (a level of height 0 held by a stuck
        // job leaves the others at 0; their turn to rise comes first).
        let at_zero = |m: usize| floor[m] <= NOISE * fastest(p, m);
        let starved = (0..n).any(|m| out.iteration[m] == iteration && at_zero(m))
            && !(0..n).any(|m| active[m] && !frozen[m] && at_zero(m));
        if starved {
            let next = weights_of(&frozen);
            let waiting: Vec<usize> = (0..n).filter(|&m| !frozen[m] && next[m] == 0.0 && at_zero(m)).collect();
            if !waiting.is_empty() && waiting.iter().all(|&m| max_throughput(p, &floor, m) <= NOISE * fastest(p, m)) {
                for m in waiting {
                    frozen[m] = true;
                    out.level[m] = 0.0;
                    out.iteration[m] = iteration;
                }
            }
        }
        iteration += 1;
    }
    out.nt = (0..n).map(|m| floor[m] / eq[m]).collect();
    out
}

/// Pareto efficiency: no job's throughput can rise while every other job keeps its own. The others
/// are held at exactly their throughputs; should the allocation be feasible only to solver
/// tolerance, so that the LP is refused, they keep (1 − ε) of them, ε = 1e-9 and then 1e-7. A rise
/// below `NOISE` of a unit of time on the job's fastest type counts as round-off.
pub fn assert_pareto_efficient(p: &Problem, x: &[Vec<f64>]) {
    let thr = throughputs(p, x);
    for m in 0..p.num_jobs() {
        let (eps, best) = [0.0, 1e-9, 1e-7]
            .into_iter()
            .find_map(|eps| {
                let kept: Vec<f64> = thr.iter().map(|t| t * (1.0 - eps)).collect();
                try_max_throughput(p, &kept, m).map(|best| (eps, best))
            })
            .expect("some slack makes the Pareto LP feasible");
        assert!(
            best <= thr[m] * (1.0 + 1e-5) + NOISE * fastest(p, m),
            "job {} could get {best} > its {} with every other job kept (to within {eps})",
            p.jobs[m].id,
            thr[m]
        );
    }
}
