//! The recovery LP: full columns for the ambiguous jobs only, every fixed job folded into the
//! capacity rows as its usage (a constant: the tie-break has no ratio to move). Its size depends
//! on the ambiguous set, not on the number of jobs.

use super::best_response::JobView;
use super::Instance;
use crate::lp::{Backend, BasisStatus, LinearProgram, Row, Sense, SolveError};
use crate::solver::ties::Tie;

/// The optimum of one recovery LP and its capacity duals.
pub(super) struct Recovery {
    /// `p_w ≥ 0`: the capacity rows' duals (0 for a type no row constrains).
    pub(super) prices: Vec<f64>,
    /// Per ambiguous job (in the order given), its time on each type it may use.
    pub(super) time: Vec<Vec<(usize, f64)>>,
    /// Whether it took GPUs past a type's capacity (only with `overflow`): then it is no
    /// allocation, only prices that say which types the fixed jobs overfill.
    pub(super) overflowed: bool,
}

/// A row the ambiguous jobs must keep besides their own and the GPUs': `Σ_m Σ_w (a_m·T_mw −
/// sf_m·charge_w)·x_mw ≥ at_least` (`min_cost`'s ratio row, the fixed jobs' part moved to the right).
pub(super) struct Keep<'a> {
    pub(super) charge: &'a [f64],
    pub(super) at_least: f64,
}

/// Solves `max Σ_{m ∈ ambiguous} (a_m·thr_m − charged)` over the ambiguous jobs' floors and time
/// rows and the GPUs the fixed jobs leave (`capacity − fixed_usage`), and `keep` if given.
/// `overflow`: each type may overflow at this price per GPU: a sample's GPUs may not hold all of
/// its floors (its prices are all a sample is for), and at the top level it is the second try of
/// a recovery LP that was infeasible, whose prices then say which types the fixed jobs overfill.
/// `estimate`: prices near the optimum's, whose best responses give the simplex its start
/// (`structure_basis`).
#[allow(clippy::too_many_arguments)]
pub(super) fn solve(
    instance: &Instance,
    ambiguous: &[u32],
    capacity: &[f64],
    fixed_usage: &[f64],
    overflow: Option<f64>,
    estimate: Option<&[f64]>,
    backend: Backend,
    keep: Option<Keep>,
) -> Result<Recovery, SolveError> {
    let num_types = capacity.len();
    let mut lp = LinearProgram::new(Sense::Maximize);
    let mut cols: Vec<Vec<(usize, usize)>> = Vec::with_capacity(ambiguous.len());
    let mut capacity_coefs: Vec<Vec<(usize, f64)>> = vec![Vec::new(); num_types];
    for &m in ambiguous {
        let job = instance.job(m as usize);
        let mine: Vec<(usize, usize)> = (0..num_types)
            .filter(|&w| instance.usable[w] && job.row[w] > 0.0)
            .map(|w| (w, lp.add_col(job.gain(w), 0.0, 1.0)))
            .collect();
        for &(w, col) in &mine {
            capacity_coefs[w].push((col, job.sf));
        }
        cols.push(mine);
    }
    let mut capacity_row = vec![None; num_types];
    let mut overflow_cols = Vec::new();
    for (w, mut coefs) in capacity_coefs.into_iter().enumerate() {
        if !instance.usable[w] {
            continue;
        }
        let room = capacity[w] - fixed_usage[w];
        if let Some(price) = overflow {
            let col = lp.add_col(-price, 0.0, f64::INFINITY);
            overflow_cols.push((col, capacity[w]));
            coefs.push((col, -1.0));
        }
        if coefs.is_empty() {
            // The fixed jobs alone overfill the type: their vertices cannot all hold.
            if room < -1e-9 * capacity[w].max(1.0) {
                return Err(SolveError::Infeasible);
            }
            continue;
        }
        capacity_row[w] = Some(lp.add_row(Row::at_most(room, coefs)));
    }
    let mut job_rows = Vec::with_capacity(ambiguous.len());
    for (&m, mine) in ambiguous.iter().zip(&cols) {
        let job = instance.job(m as usize);
        let floor = (job.floor > 0.0)
            .then(|| lp.add_row(Row::at_least(job.floor, mine.iter().map(|&(w, col)| (col, job.row[w])).collect())));
        let time = lp.add_row(Row::at_most(1.0, mine.iter().map(|&(_, col)| (col, 1.0)).collect()));
        job_rows.push(JobRows { cols: mine, floor, time });
    }
    if let Some(keep) = keep {
        let coefs = ambiguous.iter().zip(&cols).flat_map(|(&m, mine)| {
            let job = instance.job(m as usize);
            let kept = JobView { charge: keep.charge, ..job };
            mine.iter().map(move |&(w, col)| (col, kept.gain(w)))
        });
        lp.add_row(Row::at_least(keep.at_least, coefs.collect()));
    }
    let basis = estimate.map(|prices| structure_basis(instance, ambiguous, &job_rows, &capacity_row, &lp, prices));
    let solution = backend.solve_from(lp, basis)?;
    if solution.row_duals.is_empty() {
        return Err(SolveError::Failed("the backend reports no duals".into()));
    }
    let prices = capacity_row.iter().map(|r| r.map_or(0.0, |r| solution.row_duals[r].max(0.0))).collect();
    let time =
        cols.iter().map(|mine| mine.iter().map(|&(w, col)| (w, solution.values[col].max(0.0))).collect()).collect();
    let overflowed = overflow_cols.iter().any(|&(col, g)| solution.values[col] > 1e-9 * g.max(1.0));
    Ok(Recovery { prices, time, overflowed })
}

/// One ambiguous job's place in the recovery LP: its `(type, column)`s, its floor row (none
/// without a floor) and its time row.
struct JobRows<'a> {
    cols: &'a [(usize, usize)],
    floor: Option<usize>,
    time: usize,
}

/// A starting basis from the ambiguous jobs' best responses at `prices` (the estimate, or the
/// last recovery LP's). Each job's vertex gives its local basis: the types it uses basic, and
/// its floor and time rows nonbasic where the vertex makes them tight. A priced type's capacity
/// row is nonbasic, which takes one more basic per priced type. Those come from the jobs nearest
/// a tie: between two priced types (one more column basic: the job could split between them),
/// or between more and less time on one priced type (a row slack basic: the job is the margin
/// that sets the type's price). The cheapest ties are taken as a spanning forest over the priced
/// types and a root standing for the price level (Kruskal), one tie per job; a priced type no
/// tie reaches keeps its slack basic. Near the optimum only the jobs the estimate got wrong are
/// left for the simplex to move.
fn structure_basis(
    instance: &Instance,
    ambiguous: &[u32],
    job_rows: &[JobRows],
    capacity_row: &[Option<usize>],
    lp: &LinearProgram,
    prices: &[f64],
) -> (Vec<BasisStatus>, Vec<BasisStatus>) {
    let k = prices.len();
    let mut cols = vec![BasisStatus::Lower; lp.num_cols()];
    let mut rows = vec![BasisStatus::Basic; lp.rows.len()];
    let priced = |w: usize| prices[w] > 0.0 && capacity_row[w].is_some();
    // Candidate ties: (closeness, job, what turns basic, the two nodes; node k is the root).
    let mut ties: Vec<Tie<Turn>> = Vec::new();
    for (i, (&m, rows_of)) in ambiguous.iter().zip(job_rows).enumerate() {
        let job = instance.job(m as usize);
        let Some((vertex, _, _)) = job.best_response(&instance.usable, prices) else { continue };
        let col_of = |w: usize| rows_of.cols.iter().find(|&&(t, _)| t == w).map(|&(_, c)| c);
        let used: Vec<(usize, f64)> = vertex.used().collect();
        let net = |w: usize| job.net(w, prices);
        let size = |w: usize| job.size(w, prices);
        match used.as_slice() {
            [] => {
                // Idle: the time row's slack stays basic. A tie with all of its time on a priced type.
                for &(c, col) in rows_of.cols.iter().filter(|&&(c, _)| priced(c)) {
                    ties.push((net(c).abs() / size(c), i, Turn::Col(col), c, k));
                }
            }
            &[(a, x)] => {
                let Some(col_a) = col_of(a) else { continue };
                cols[col_a] = BasisStatus::Basic;
                let full = x >= 1.0;
                // The vertex's tight row: the time row with all of its time, else the floor row.
                let tight = if full { Some(rows_of.time) } else { rows_of.floor };
                if let Some(r) = tight {
                    rows[r] = if full { BasisStatus::Upper } else { BasisStatus::Lower };
                }
                if !priced(a) {
                    continue;
                }
                // More or less time on `a` than the vertex gives: the tight row turns basic.
                if let Some(r) = tight {
                    ties.push((net(a).abs() / size(a), i, Turn::Row(r), a, k));
                }
                // A split with another priced type, along the tight row: per unit of time (all
                // of it) or per unit of floor (just the floor).
                for &(c, col) in rows_of.cols.iter().filter(|&&(c, _)| c != a && priced(c)) {
                    let (u, v) = if full { (net(a), net(c)) } else { (net(a) / job.row[a], net(c) / job.row[c]) };
                    let (su, sv) = if full { (size(a), size(c)) } else { (size(a) / job.row[a], size(c) / job.row[c]) };
                    ties.push(((u - v).abs() / (su + sv), i, Turn::Col(col), a, c));
                }
            }
            &[(a, _), (b, _)] => {
                let (Some(col_a), Some(col_b)) = (col_of(a), col_of(b)) else { continue };
                cols[col_a] = BasisStatus::Basic;
                cols[col_b] = BasisStatus::Basic;
                if let Some(r) = rows_of.floor {
                    rows[r] = BasisStatus::Lower;
                }
                rows[rows_of.time] = BasisStatus::Upper;
            }
            _ => {}
        }
    }
    // The cheapest ties joining priced types to the root, one per job.
    let (mut forest, taken) = crate::solver::ties::spanning(k + 1, ambiguous.len(), ties);
    // The priced types joined to the root: their capacity rows nonbasic, their ties basic.
    let grounded = forest.find(k);
    for (w, row) in capacity_row.iter().enumerate() {
        if let (true, Some(r)) = (priced(w), row) {
            if forest.find(w) == grounded {
                rows[*r] = BasisStatus::Upper;
            }
        }
    }
    for (turn, a) in taken {
        if forest.find(a) == grounded {
            match turn {
                Turn::Col(col) => cols[col] = BasisStatus::Basic,
                Turn::Row(r) => rows[r] = BasisStatus::Basic,
            }
        }
    }
    (cols, rows)
}

/// What a tie turns basic: a job's column on a second type, or one of its rows' slack.
#[derive(Clone, Copy)]
enum Turn {
    Col(usize),
    Row(usize),
}

/// The start needs the capacity rows' duals and a basis, which only HiGHS takes.
#[cfg(all(test, feature = "highs"))]
mod tests {
    use super::*;
    use crate::problem::Matrix;

    #[test]
    fn a_start_from_any_estimate_finds_the_same_optimum() {
        // Six jobs on three types, three with floors; job 5 fixed outside, its usage in the rows.
        let t = Matrix::from_rows(&[
            [1.0, 3.0, 5.0],
            [2.0, 2.5, 4.0],
            [1.5, 0.0, 6.0],
            [1.0, 2.0, 2.5],
            [3.0, 3.5, 3.0],
            [0.5, 1.0, 4.5],
        ]);
        let sf = [1, 2, 1, 1, 4, 1];
        let value = [1.0, 0.5, 0.25, 1.0, 2.0, 1.0];
        let floor = [2.0, 0.0, 3.0, 1.5, 0.0, 0.0];
        let instance = Instance {
            throughput: &t,
            scale_factor: &sf,
            value: &value,
            floor: &floor,
            usable: vec![true; 3],
            charge: &[0.0; 3],
        };
        let capacity = [3.0, 2.0, 4.0];
        let fixed_usage = [1.0, 0.0, 0.0];
        let ambiguous: [u32; 5] = [0, 1, 2, 3, 4];
        let backend = Backend::highs();
        let worth = |time: &[Vec<(usize, f64)>]| -> f64 {
            let mut sum = 0.0;
            for (&m, x) in ambiguous.iter().zip(time) {
                sum += x.iter().map(|&(w, x)| value[m as usize] * t.get(m as usize, w) * x).sum::<f64>();
            }
            sum
        };
        let cold = solve(&instance, &ambiguous, &capacity, &fixed_usage, None, None, backend, None).expect("solves");
        // The GPUs bind: a start has priced types to tie.
        assert!(cold.prices.iter().filter(|&&p| p > 0.0).count() >= 2, "{:?}", cold.prices);
        for estimate in
            [cold.prices.clone(), vec![1.0, 0.0, 0.0], vec![0.2, 0.3, 0.5], vec![0.0; 3], vec![0.0, 5.0, 1e-3]]
        {
            let warm = solve(&instance, &ambiguous, &capacity, &fixed_usage, None, Some(&estimate), backend, None)
                .expect("solves");
            assert!((worth(&warm.time) - worth(&cold.time)).abs() < 1e-9, "{estimate:?}");
            // Every job keeps its floor within its time, and the GPUs hold.
            let mut used = fixed_usage;
            for (&m, time) in ambiguous.iter().zip(&warm.time) {
                let m = m as usize;
                let thr: f64 = time.iter().map(|&(w, x)| t.get(m, w) * x).sum();
                assert!(thr >= floor[m] - 1e-7, "{estimate:?}: job {m} {thr}");
                assert!(time.iter().map(|&(_, x)| x).sum::<f64>() <= 1.0 + 1e-9);
                for &(w, x) in time {
                    used[w] += sf[m] as f64 * x;
                }
            }
            assert!(used.iter().zip(&capacity).all(|(u, g)| *u <= g + 1e-7), "{estimate:?}: {used:?}");
        }
    }

    #[test]
    fn a_start_has_one_basic_per_row_whatever_the_estimate() {
        let t = Matrix::from_rows(&[[1.0, 3.0], [2.0, 2.5], [4.0, 1.0], [1.0, 1.0]]);
        let (sf, value, floor) = ([1, 1, 2, 1], [1.0; 4], [1.0, 0.0, 2.0, 1.0]);
        let instance = Instance {
            throughput: &t,
            scale_factor: &sf,
            value: &value,
            floor: &floor,
            usable: vec![true; 2],
            charge: &[0.0; 2],
        };
        let ambiguous: [u32; 4] = [0, 1, 2, 3];
        // The LP as `solve` lays it out: each job's columns, the capacity rows, then each job's
        // floor row (with a floor) and time row.
        let mut lp = LinearProgram::new(Sense::Maximize);
        let cols: Vec<Vec<(usize, usize)>> =
            ambiguous.iter().map(|_| (0..2).map(|w| (w, lp.add_col(1.0, 0.0, 1.0))).collect()).collect();
        let capacity_row: Vec<Option<usize>> =
            (0..2).map(|_| Some(lp.add_row(Row::at_most(1.0, Vec::new())))).collect();
        let mut job_rows = Vec::new();
        for (&m, mine) in ambiguous.iter().zip(&cols) {
            let f = floor[m as usize];
            let floor_row = (f > 0.0).then(|| lp.add_row(Row::at_least(f, Vec::new())));
            job_rows.push(JobRows { cols: mine, floor: floor_row, time: lp.add_row(Row::at_most(1.0, Vec::new())) });
        }
        for prices in [[0.0, 0.0], [1.0, 0.0], [2.0, 2.5], [0.5, 3.0], [3.0, 0.9], [10.0, 10.0]] {
            let (c, r) = structure_basis(&instance, &ambiguous, &job_rows, &capacity_row, &lp, &prices);
            let basic = c.iter().chain(&r).filter(|&&s| s == BasisStatus::Basic).count();
            assert_eq!((basic, c.len(), r.len()), (lp.rows.len(), lp.num_cols(), lp.rows.len()), "{prices:?}");
        }
    }
}
