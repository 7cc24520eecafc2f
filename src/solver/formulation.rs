//! The constraints every allocation LP shares (Gavel's "base constraints"): `X ≥ 0`, each job's
//! time fractions sum to at most 1, each type's GPUs are not oversubscribed. Policies add only
//! their own objective and rows. Identical jobs may be grouped: a group's column is the sum of
//! its members' `X`, which by symmetry loses nothing for objectives that are sums over jobs.

use crate::lp::{LinearProgram, Row, Sense, Solution};
use crate::problem::{Matrix, Problem};
use crate::space_sharing::Pair;
use std::collections::HashMap;

/// Jobs that share a column: each group's members are interchangeable for the policy at hand.
pub struct Groups {
    pub members: Vec<Vec<usize>>,
}

impl Groups {
    /// Every job alone.
    pub fn singletons(num_jobs: usize) -> Groups {
        Groups { members: (0..num_jobs).map(|m| vec![m]).collect() }
    }

    /// Jobs with the same throughput row and scale factor together; a job in one of `pairs` is
    /// set apart by them and stays alone.
    pub fn identical_jobs(problem: &Problem, pairs: &[Pair]) -> Groups {
        let mut apart = vec![false; problem.num_jobs()];
        pairs.iter().flat_map(|p| p.jobs).for_each(|m| apart[m] = true);
        let scale_factors: Vec<u32> = problem.jobs.iter().map(|j| j.scale_factor).collect();
        Groups { members: group_identical(&problem.throughput, &scale_factors, &apart) }
    }
}

/// Jobs (rows of `throughput`) with the same row and scale factor, in order of first appearance;
/// a job with `apart[m]` is a group of its own.
pub fn group_identical(throughput: &Matrix, scale_factor: &[u32], apart: &[bool]) -> Vec<Vec<usize>> {
    let mut index: HashMap<RowKey, usize> = HashMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (m, &alone) in apart.iter().enumerate() {
        let key = RowKey { row: throughput.row(m), scale_factor: scale_factor[m], alone: alone.then_some(m) };
        let g = *index.entry(key).or_insert_with(|| {
            members.push(Vec::new());
            members.len() - 1
        });
        members[g].push(m);
    }
    members
}

/// What makes two jobs one group: a row equal bit for bit, the scale factor, and not set apart
/// (a job set apart is its own key). Borrows the row: grouping allocates nothing per job.
struct RowKey<'a> {
    row: &'a [f64],
    scale_factor: u32,
    alone: Option<usize>,
}

impl PartialEq for RowKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.scale_factor == other.scale_factor
            && self.alone == other.alone
            && self.row.len() == other.row.len()
            && self.row.iter().zip(other.row).all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl Eq for RowKey<'_> {}

impl std::hash::Hash for RowKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.row.iter().for_each(|v| state.write_u64(v.to_bits()));
        self.scale_factor.hash(state);
        self.alone.hash(state);
    }
}

/// An LP over group columns `X[g][w]` with the base constraints in place.
pub struct BaseLp {
    pub lp: LinearProgram,
    /// `cols[g][w]`: the column of group g on type w, if the group can run there.
    pub cols: Vec<Vec<Option<usize>>>,
    pub groups: Groups,
    /// `pair_cols[i][w]`: the column of pair i on type w (`Y[i][w]`), if it may run there.
    pub pair_cols: Vec<Vec<Option<usize>>>,
}

impl BaseLp {
    /// Base constraints: each group's time and each type's GPUs.
    pub fn new(problem: &Problem, groups: Groups, sense: Sense) -> BaseLp {
        Self::with_pairs(problem, groups, &[], LinearProgram::new(sense))
    }

    /// Base constraints over only the columns `X[g][w]` for which `keep(m, w)` holds (m the
    /// group's first job), those another formulation's optimum may use at all.
    pub fn on_columns(problem: &Problem, groups: Groups, sense: Sense, keep: impl Fn(usize, usize) -> bool) -> BaseLp {
        Self::build(problem, groups, &[], LinearProgram::new(sense), keep)
    }

    /// Base constraints with pair columns `Y[i][w]` too: a pair uses `sf` GPUs of `w` and the
    /// time of both its jobs (each of which must be a group of its own).
    pub fn with_pairs(problem: &Problem, groups: Groups, pairs: &[Pair], lp: LinearProgram) -> BaseLp {
        Self::build(problem, groups, pairs, lp, |_, _| true)
    }

    fn build(
        problem: &Problem,
        groups: Groups,
        pairs: &[Pair],
        mut lp: LinearProgram,
        keep: impl Fn(usize, usize) -> bool,
    ) -> BaseLp {
        let num_types = problem.num_types();
        let mut cols = Vec::with_capacity(groups.members.len());
        for members in &groups.members {
            let rep = members[0];
            let n = members.len() as f64;
            let row: Vec<Option<usize>> = (0..num_types)
                .map(|w| {
                    let usable = problem.throughput.get(rep, w) > 0.0 && problem.worker_types[w].count > 0.0;
                    (usable && keep(rep, w)).then(|| lp.add_col(0.0, 0.0, n))
                })
                .collect();
            cols.push(row);
        }
        let pair_cols: Vec<Vec<Option<usize>>> = pairs
            .iter()
            .map(|pair| {
                let mut row = vec![None; num_types];
                pair.types().for_each(|w| row[w] = Some(lp.add_col(0.0, 0.0, 1.0)));
                row
            })
            .collect();
        let mut group_of = vec![0; problem.num_jobs()];
        for (g, members) in groups.members.iter().enumerate() {
            members.iter().for_each(|&m| group_of[m] = g);
        }
        let mut pair_time: Vec<Vec<(usize, f64)>> = vec![Vec::new(); groups.members.len()];
        for (pair, cols) in pairs.iter().zip(&pair_cols) {
            for &m in &pair.jobs {
                debug_assert_eq!(groups.members[group_of[m]].len(), 1, "a paired job is a group of its own");
                pair_time[group_of[m]].extend(cols.iter().flatten().map(|&c| (c, 1.0)));
            }
        }
        let bound = |lp: &mut LinearProgram, coefs: Vec<(usize, f64)>, rhs: f64| {
            lp.add_row(Row::at_most(rhs, coefs));
        };
        for (g, members) in groups.members.iter().enumerate() {
            let mut coefs: Vec<(usize, f64)> = cols[g].iter().flatten().map(|&c| (c, 1.0)).collect();
            coefs.extend(pair_time[g].iter().copied());
            bound(&mut lp, coefs, members.len() as f64);
        }
        for (w, worker_type) in problem.worker_types.iter().enumerate() {
            let coefs: Vec<(usize, f64)> = groups
                .members
                .iter()
                .enumerate()
                .filter_map(|(g, members)| cols[g][w].map(|c| (c, problem.jobs[members[0]].scale_factor as f64)))
                .chain(pairs.iter().zip(&pair_cols).filter_map(|(p, cols)| cols[w].map(|c| (c, p.scale_factor as f64))))
                .collect();
            if !coefs.is_empty() {
                bound(&mut lp, coefs, worker_type.count);
            }
        }
        BaseLp { lp, cols, groups, pair_cols }
    }

    /// Sets the objective coefficient of every column `X[g][w]` to `coef(m, w)`, m being the
    /// group's first job (all members are interchangeable).
    pub fn set_objective(&mut self, coef: impl Fn(usize, usize) -> f64) {
        for (g, row) in self.cols.iter().enumerate() {
            let m = self.groups.members[g][0];
            for (w, col) in row.iter().enumerate() {
                if let Some(c) = col {
                    self.lp.cost[*c] = coef(m, w);
                }
            }
        }
    }

    /// Each pair's time per type in `solution` (`pair_time[i][w]`).
    pub fn pair_time(&self, solution: &Solution) -> Vec<Vec<f64>> {
        self.pair_cols
            .iter()
            .map(|cols| cols.iter().map(|c| c.map_or(0.0, |c| solution.values[c].max(0.0))).collect())
            .collect()
    }

    /// `Σ_w coef(g, w)·X[g][w]` as row coefficients, over the columns that exist.
    pub fn terms(&self, g: usize, coef: impl Fn(usize) -> f64) -> Vec<(usize, f64)> {
        self.cols[g].iter().enumerate().filter_map(|(w, c)| c.map(|c| (c, coef(w)))).collect()
    }

    /// The per-job allocation: each group's column split evenly among its members.
    pub fn allocation(&self, solution: &Solution, num_jobs: usize, num_types: usize) -> Matrix {
        let mut x = Matrix::zeros(num_jobs, num_types);
        for (g, members) in self.groups.members.iter().enumerate() {
            let n = members.len() as f64;
            for (w, col) in self.cols[g].iter().enumerate() {
                if let Some(c) = col {
                    let value = (solution.values[*c] / n).max(0.0);
                    for &m in members {
                        x.set(m, w, value);
                    }
                }
            }
        }
        x
    }
}
