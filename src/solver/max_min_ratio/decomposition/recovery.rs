//! The recovery LP: the ratio `z`, full columns for the ambiguous jobs only, and every fixed job
//! folded into the capacity rows as its usage, affine in z (k coefficients of z, k constants).
//! Its size depends on the ambiguous set, not on the number of jobs. z is written as
//! `z₀ + s·ζ` around the estimate z₀ (the step `s` is z₀, or 1 when z₀ is about 0) and the fixed usage
//! as its value at z₀ plus `α_w·s·ζ`: each job's usage at z₀ is at most its scale factor, so the
//! constants carry no cancellation. Each solve loads the LP afresh around the current estimate and
//! starts the simplex from the basis the ambiguous jobs' best responses at that estimate describe
//! (`structure_basis`).

use super::best_response::{best_structure, JobView, Scratch, Structure};
use super::Ratio;
use crate::lp::{Backend, BasisStatus, LinearProgram, Row, Sense, SolveError};

/// The optimum of one recovery LP and its duals.
pub(super) struct Recovery {
    pub(super) z: f64,
    /// `p_w ≥ 0`: the capacity rows' duals (0 for a type no row constrains).
    pub(super) prices: Vec<f64>,
    /// Per ambiguous job (in the order given), its time on each type it may use.
    pub(super) time: Vec<Vec<(usize, f64)>>,
    /// Per ambiguous job, its need row's dual `u_m ≥ 0` (positive: the job sits at its need in
    /// every optimum).
    pub(super) need_duals: Vec<f64>,
}

impl Recovery {
    /// Whether every ambiguous job (`ambiguous`, in the order solved) gets its need at the
    /// recovered z to within `tolerance` of it (and a billionth of its fastest throughput, for a
    /// need near 0).
    pub(super) fn meets_needs(&self, ratio: &Ratio, ambiguous: &[u32], tolerance: f64) -> bool {
        ambiguous.iter().zip(&self.time).all(|(&m, time)| {
            let job = ratio.job(m as usize);
            let thr: f64 = time.iter().map(|&(w, x)| job.row[w] * x).sum();
            let need = job.need(self.z);
            thr >= need - tolerance * need.abs() - 1e-9 * ratio.fastest(m as usize)
        })
    }
}

/// Below this an estimate z₀ is no step for ζ (1 is): a z₀ of round-off size (2.2e-15 seen, a
/// level whose only rising job starts from 0) put ζ's coefficients below the solver's smallest
/// matrix value (1e-9), which drops them, so z could not move and the level was read as 0.
const SMALLEST_STEP: f64 = 1e-6;

/// Solves the recovery LP for `ambiguous`, with the fixed jobs' usage `fixed_usage[w] = (α_w, U_w)`
/// (`U_w + α_w·(z − z₀)`), from the basis of the best responses at `(z₀, estimate)` when given.
/// With no fixed jobs z₀ may be anything positive (1 will do).
pub(super) fn solve(
    ratio: &Ratio,
    ambiguous: &[u32],
    capacity: &[f64],
    fixed_usage: &[(f64, f64)],
    z0: f64,
    estimate: Option<&[f64]>,
    backend: Backend,
) -> Result<Recovery, SolveError> {
    let num_types = capacity.len();
    let step = if z0 > SMALLEST_STEP { z0 } else { 1.0 };
    let mut lp = LinearProgram::new(Sense::Maximize);
    // z ≥ 0, unless jobs have floors: then z is free, so that no bound absorbs its reduced cost
    // when the optimum is 0 (the certificate covers the z column only).
    let lowest = if ratio.base.is_some() { f64::NEG_INFINITY } else { -z0 / step };
    lp.add_col(step, lowest, f64::INFINITY);
    // The fixed usage is in the capacity rows from the start, so that their scaling sees z's
    // coefficients.
    for (&(alpha, fixed), &g) in fixed_usage.iter().zip(capacity) {
        let coefs = if alpha != 0.0 { vec![(ZETA, alpha * step)] } else { Vec::new() };
        lp.add_row(Row::at_most(g - fixed, coefs));
    }
    let (members, units): (Vec<Vec<(usize, usize)>>, Vec<f64>) =
        ambiguous.iter().map(|&m| add_member(&mut lp, ratio, m, z0, step)).unzip();
    // Types some ambiguous job may use.
    let mut used = vec![false; num_types];
    for &(w, _) in members.iter().flatten() {
        used[w] = true;
    }
    for (w, &(alpha, fixed)) in fixed_usage.iter().enumerate() {
        if !used[w] && alpha == 0.0 && capacity[w] - fixed < -1e-9 * capacity[w].max(1.0) {
            // Fixed jobs alone already over the capacity at any z: this structure cannot hold.
            return Err(SolveError::Infeasible);
        }
    }
    let basis = estimate.and_then(|prices| structure_basis(ratio, ambiguous, &members, z0, prices));
    let solution = backend.solve_from(lp, basis)?;
    let zeta = solution.values[ZETA];
    if ratio.base.is_none()
        && zeta <= -z0 / step + 1e-9
        && fixed_usage.iter().any(|&(alpha, used)| alpha != 0.0 || used != 0.0)
    {
        // z stopped at its bound 0, whose dual no certificate covers. Every job with a demand
        // has a type it can use (or the caller stopped earlier), so the full LP's optimum is
        // positive: the fixed structures are what leave no room, as when they overfill a type.
        return Err(SolveError::Infeasible);
    }
    if solution.row_duals.len() < num_types + 2 * members.len() {
        return Err(SolveError::Failed("the backend reports no duals".into()));
    }
    // A type whose row has no coefficient constrains nothing: its price is 0.
    let prices = (0..num_types)
        .map(|w| {
            let constrains = used[w] || fixed_usage[w].0 != 0.0;
            if constrains {
                solution.row_duals[w].max(0.0)
            } else {
                0.0
            }
        })
        .collect();
    let time = members
        .iter()
        .zip(&units)
        .map(|(mine, unit)| mine.iter().map(|&(w, col)| (w, unit * solution.values[col].max(0.0))).collect())
        .collect();
    let need_duals = (0..members.len()).map(|i| solution.row_duals[num_types + 2 * i].abs()).collect();
    let z = z0 + step * zeta;
    Ok(Recovery { z: if ratio.base.is_some() { z } else { z.max(0.0) }, prices, time, need_duals })
}

/// ζ's column: z = z₀ + step·ζ. Columns: ζ, then each ambiguous job's; rows: type w's capacity
/// row is row w, then each job's need and time rows.
const ZETA: usize = 0;

/// A job that needs less than this share of its time (on its fastest type) has its columns in
/// units of that share.
const SMALL_SHARE: f64 = 1e-3;

/// The unit of job m's time columns: 1, or the share of its time its need at `z₀ + step` (the
/// scale of the row as z moves) takes on its fastest type when that is below [`SMALL_SHARE`].
/// In units of time, such a need row reads `Σ_w T_w·x_w − d·s·ζ ≥ need` with the need and ζ's
/// coefficient far below the throughputs: equilibrated, they fall under the solver's tolerances,
/// which then meets the row with no time at all (makespan with steps left 10¹⁰ apart: six jobs
/// left at 0 and a makespan reported as infinite, or 83% of their need and one 20% above the
/// optimum). In units of that share, every coefficient of the row is about 1; only its capacity
/// coefficients become negligible, as the GPUs it uses are.
fn time_unit(ratio: &Ratio, m: u32, z0: f64, step: f64) -> f64 {
    let share = ratio.job(m as usize).need(z0 + step) / ratio.fastest(m as usize);
    if share.is_normal() && share > 0.0 && share < SMALL_SHARE {
        share
    } else {
        1.0
    }
}

/// Adds job `m`'s columns (one per type it can use, in [`time_unit`]s) and its two rows (need at
/// z₀, and time) to `lp`; returns its `(type, column)`s and the unit of their time.
fn add_member(lp: &mut LinearProgram, ratio: &Ratio, m: u32, z0: f64, step: f64) -> (Vec<(usize, usize)>, f64) {
    let job: JobView = ratio.job(m as usize);
    let unit = time_unit(ratio, m, z0, step);
    let mine: Vec<(usize, usize)> = (0..ratio.usable.len())
        .filter(|&w| ratio.usable[w] && job.row[w] > 0.0)
        .map(|w| {
            let col = lp.add_col(0.0, 0.0, 1.0 / unit);
            lp.rows[w].coefs.push((col, job.sf * unit));
            (w, col)
        })
        .collect();
    let mut need: Vec<(usize, f64)> = mine.iter().map(|&(w, col)| (col, job.row[w] * unit)).collect();
    if job.demand != 0.0 {
        need.push((ZETA, -job.demand * step));
    }
    let time = mine.iter().map(|&(_, col)| (col, unit)).collect();
    lp.add_row(Row::at_least(job.need(z0), need));
    lp.add_row(Row::at_most(1.0, time));
    (mine, unit)
}

/// A starting basis from the ambiguous jobs' best responses at the estimate `(z, prices)`:
/// each job's structure as its local basis (one type and its time row's slack, or two types),
/// z basic, the capacity rows of the priced types nonbasic and the others' slacks basic. The
/// priced types' prices are then tied to one another by jobs that sit nearest a tie between
/// two of them (one more basic column each, the cheapest ties forming a spanning tree), so that
/// the basis prices the GPUs as the estimate does. Near the optimum, only the jobs whose
/// structure the estimate got wrong are left for the simplex to move.
fn structure_basis(
    ratio: &Ratio,
    ambiguous: &[u32],
    members: &[Vec<(usize, usize)>],
    z: f64,
    prices: &[f64],
) -> Option<(Vec<BasisStatus>, Vec<BasisStatus>)> {
    let k = prices.len();
    let mut cols = vec![BasisStatus::Lower; 1 + members.iter().map(Vec::len).sum::<usize>()];
    let mut rows = vec![BasisStatus::Basic; k + 2 * members.len()];
    cols[ZETA] = BasisStatus::Basic;
    let mut scratch = Scratch::default();
    // Candidate ties: (relative reduced cost, member, column made basic, the two types).
    let mut ties: Vec<crate::solver::ties::Tie<usize>> = Vec::new();
    // Single-type jobs: (how far the need is from all of the job's time, member).
    let mut singles: Vec<(f64, usize)> = Vec::new();
    for (i, (&m, mine)) in ambiguous.iter().zip(members).enumerate() {
        let job = ratio.job(m as usize);
        let (need, time) = (k + 2 * i, k + 2 * i + 1);
        let col_of = |w: usize| mine.iter().find(|&&(t, _)| t == w).map(|&(_, c)| c);
        let Some(structure) = best_structure(job, &ratio.usable, prices, z, &mut scratch) else {
            // No structure: the slacks stay basic.
            continue;
        };
        match structure {
            Structure::Single { a } => {
                let (a, Some(col)) = (a as usize, col_of(a as usize)) else { continue };
                cols[col] = BasisStatus::Basic;
                rows[need] = BasisStatus::Lower;
                singles.push((job.z_margin(structure, z), i));
                if prices[a] <= 0.0 {
                    continue;
                }
                let (u, _) = job.duals(structure, prices);
                for &(c, col) in mine.iter().filter(|&&(c, _)| c != a && prices[c] > 0.0) {
                    let (cost, value) = (job.sf * prices[c], job.row[c] * u);
                    ties.push(((cost - value).abs() / (cost + value), i, col, a, c));
                }
            }
            Structure::Pair { a, b } => {
                let (Some(col_a), Some(col_b)) = (col_of(a as usize), col_of(b as usize)) else { continue };
                cols[col_a] = BasisStatus::Basic;
                cols[col_b] = BasisStatus::Basic;
                rows[need] = BasisStatus::Lower;
                rows[time] = BasisStatus::Upper;
            }
        }
    }
    // The cheapest ties that join the priced types into one tree (Kruskal), one per member.
    let (mut forest, edges) = crate::solver::ties::spanning(k, members.len(), ties);
    // The tree holding the highest-priced type: its capacity rows nonbasic, its ties basic.
    let Some(top) = (0..k).filter(|&w| prices[w] > 0.0).max_by(|&a, &b| prices[a].total_cmp(&prices[b])) else {
        // No type is priced: z is bounded by a job's own time. The single-type job nearest
        // its ceiling spends all of it (its time row nonbasic), which fixes z.
        let nearest = singles.iter().min_by(|x, y| x.0.total_cmp(&y.0))?;
        rows[k + 2 * nearest.1 + 1] = BasisStatus::Upper;
        return Some((cols, rows));
    };
    let top = forest.find(top);
    for w in 0..k {
        if prices[w] > 0.0 && forest.find(w) == top {
            rows[w] = BasisStatus::Upper;
        }
    }
    for (col, a) in edges {
        if forest.find(a) == top {
            cols[col] = BasisStatus::Basic;
        }
    }
    Some((cols, rows))
}

/// The recovery LP needs the capacity rows' duals, which only HiGHS reports.
#[cfg(all(test, feature = "highs"))]
mod tests {
    use super::*;
    use crate::problem::Matrix;

    /// Six jobs on three types, of which `fixed` enter the capacity rows only through their usage
    /// (each on type 0 with time `z·d/T[m][0]`, so `α = sf·d/T`, `U = α·z₀`).
    fn instance() -> (Matrix, Vec<u32>, Vec<f64>) {
        let rows =
            [[1.0, 3.0, 5.0], [2.0, 2.5, 4.0], [1.5, 0.0, 6.0], [1.0, 2.0, 2.5], [3.0, 3.5, 3.0], [0.5, 1.0, 4.5]];
        (Matrix::from_rows(&rows), vec![1, 2, 1, 1, 4, 1], vec![1.0, 0.5, 2.0, 1.0, 0.25, 1.5])
    }

    #[test]
    fn a_start_from_any_estimate_finds_the_same_optimum() {
        let (t, sf, demand) = instance();
        let ratio = Ratio {
            throughput: &t,
            scale_factor: &sf,
            base: None,
            demand: &demand,
            usable: vec![true; 3],
            ceiling: f64::INFINITY,
        };
        let capacity = [3.0, 2.0, 4.0];
        let z0 = 0.8;
        // Job 5 fixed on type 0: usage sf·d/T·z = 3·z.
        let alpha = 1.0 * demand[5] / t.get(5, 0);
        let fixed = [(alpha, alpha * z0), (0.0, 0.0), (0.0, 0.0)];
        let ambiguous = [0, 1, 2, 3, 4];
        let backend = Backend::highs();
        let cold = solve(&ratio, &ambiguous, &capacity, &fixed, z0, None, backend).expect("solves");
        let members: Vec<Vec<(usize, usize)>> = {
            let mut lp = LinearProgram::new(Sense::Maximize);
            lp.add_col(1.0, 0.0, f64::INFINITY);
            for _ in 0..3 {
                lp.add_row(Row::at_most(1.0, Vec::new()));
            }
            ambiguous.iter().map(|&m| add_member(&mut lp, &ratio, m, z0, z0).0).collect()
        };
        let rows = 3 + 2 * ambiguous.len();
        for estimate in
            [cold.prices.clone(), vec![1.0, 0.0, 0.0], vec![0.2, 0.3, 0.5], vec![0.0; 3], vec![0.0, 5.0, 1e-3]]
        {
            // The basis has one basic column or row per row, whatever the estimate.
            if let Some((cols, row_status)) = structure_basis(&ratio, &ambiguous, &members, z0, &estimate) {
                let basic = cols.iter().chain(&row_status).filter(|&&s| s == BasisStatus::Basic).count();
                assert_eq!((basic, row_status.len()), (rows, rows), "estimate {estimate:?}");
            }
            let warm = solve(&ratio, &ambiguous, &capacity, &fixed, z0, Some(&estimate), backend).expect("solves");
            assert!((warm.z - cold.z).abs() < 1e-9 * cold.z.max(1.0), "{estimate:?}: {} vs {}", warm.z, cold.z);
            for (a, b) in warm.prices.iter().zip(&cold.prices) {
                assert!((a - b).abs() < 1e-7, "{estimate:?}: {:?} vs {:?}", warm.prices, cold.prices);
            }
        }
        // Every ambiguous job reaches z·d within the time it has, and the capacities hold.
        let mut used = [alpha * cold.z, 0.0, 0.0];
        for (&m, time) in ambiguous.iter().zip(&cold.time) {
            let thr: f64 = time.iter().map(|&(w, x)| t.get(m as usize, w) * x).sum();
            assert!(thr >= cold.z * demand[m as usize] - 1e-7, "job {m}: {thr}");
            assert!(time.iter().map(|&(_, x)| x).sum::<f64>() <= 1.0 + 1e-9);
            for &(w, x) in time {
                used[w] += sf[m as usize] as f64 * x;
            }
        }
        for w in 0..3 {
            assert!(used[w] <= capacity[w] + 1e-7, "type {w}: {used:?}");
        }
    }

    /// With floors the estimate may be round-off above 0 (a level whose only rising job starts
    /// from 0): such a z₀ finds the optimum as a z₀ of 0 does. As the step it dropped ζ's
    /// coefficients below the solver's smallest matrix value, and z stayed at z₀.
    #[test]
    fn an_estimate_of_round_off_size_finds_the_optimum() {
        let (t, sf, demand) = instance();
        let base = vec![0.5, 0.0, 1.0, 0.5, 0.0, 0.0];
        let ratio = Ratio {
            throughput: &t,
            scale_factor: &sf,
            base: Some(&base),
            demand: &demand,
            usable: vec![true; 3],
            ceiling: f64::INFINITY,
        };
        let capacity = [3.0, 2.0, 4.0];
        let fixed = [(0.0, 0.0); 3];
        let ambiguous = [0, 1, 2, 3, 4, 5];
        let backend = Backend::highs();
        let at = |z0: f64| solve(&ratio, &ambiguous, &capacity, &fixed, z0, None, backend).expect("solves").z;
        let want = at(0.0);
        assert!(want > 0.1, "{want}");
        for z0 in [2.2e-15, 1e-12, 1e-9, 1e-7] {
            assert!((at(z0) - want).abs() < 1e-9 * want, "z0 {z0}: {} against {want}", at(z0));
        }
    }
}
