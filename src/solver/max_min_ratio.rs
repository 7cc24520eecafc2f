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

use crate::error::Result;
use crate::formulation::group_identical;
use crate::lp::{Backend, LinearProgram, Row, Sense, Session};
use crate::problem::Matrix;
use crate::space_sharing::Pair;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// Relative tolerance under which a top-k condition counts as met.
const CUT_TOLERANCE: f64 = 1e-9;
/// A dual above this marks a binding row (duals here are O(1/jobs); round-off stays far below).
const BINDING_DUAL: f64 = 1e-9;
/// A group whose best relative raise is at most this is a bottleneck (LP round-off stays below).
const RAISE_TOLERANCE: f64 = 1e-6;

/// The shape of one instance: who can run where, at what speed, on how many GPUs.
#[derive(Clone)]
pub struct Instance<'a> {
    pub throughput: &'a Matrix,
    pub scale_factor: Vec<u32>,
    pub capacity: Vec<f64>,
    /// Colocated pairs that may share GPUs (empty without space sharing).
    pub pairs: Vec<Pair>,
    /// Placement sensitivity: `T^u[m][w]`, job m's throughput on `w` when its GPUs span servers
    /// (0: no such column). `None` when no job is placement-sensitive.
    pub unconsolidated: Option<Matrix>,
    /// Per type, `(scale factor s, GPUs)`: at most that many GPUs of the type can hold jobs of
    /// size s consolidated (whole jobs inside servers). Empty without placement sensitivity.
    pub consolidated_slots: Vec<Vec<(u32, f64)>>,
}

/// A job's required throughput: `base + Σ (var, coef)`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Need {
    pub base: f64,
    pub terms: Vec<(usize, f64)>,
}

impl Need {
    fn is_zero(&self) -> bool {
        self.base == 0.0 && self.terms.iter().all(|&(_, c)| c == 0.0)
    }
    fn value(&self, vars: &[f64]) -> f64 {
        self.base + self.terms.iter().map(|&(v, c)| c * vars[v]).sum::<f64>()
    }
}

/// A program for the engine: shared variables (objective coefficient and bounds) and one need
/// per job. Jobs whose need is identically zero get no time.
#[derive(Debug, Clone)]
pub struct Program {
    pub sense: Sense,
    pub cost: Vec<f64>,
    pub lower: Vec<f64>,
    pub upper: Vec<f64>,
    pub needs: Vec<Need>,
    /// Keep the model for the next program with the same variables and re-solve it from its last
    /// basis there. Every job then sits in its class's rows, so the model's shape never changes
    /// (one with no need still gets no time from the split).
    pub keep_model: bool,
    /// Split the class totals into a per-job allocation now. When false the split is deferred:
    /// `Engine::last_allocation` does it for the last such program (water-filling splits once,
    /// after its last level).
    pub allocate: bool,
    /// The objective's value of a unit of job m's time on type w (`time_value.get(m, w)`), for
    /// objectives over the allocation itself (the tie-break's `Σ thr_m/thr_equal_m`). It must be
    /// the same for every job of a class (it is read from the class's first job). `None`: 0.
    /// With it, the class time the split leaves over is handed out too (`fill_class`).
    pub time_value: Option<Matrix>,
}

impl Program {
    pub fn new(sense: Sense, needs: Vec<Need>) -> Program {
        Program {
            sense,
            cost: Vec::new(),
            lower: Vec::new(),
            upper: Vec::new(),
            needs,
            keep_model: false,
            allocate: true,
            time_value: None,
        }
    }

    /// What a kept model must match: the sense and the shared variables.
    fn signature(&self) -> Vec<u64> {
        let sense = match self.sense {
            Sense::Maximize => 1,
            Sense::Minimize => 0,
        };
        std::iter::once(sense)
            .chain(self.cost.iter().chain(&self.lower).chain(&self.upper).map(|v| v.to_bits()))
            .collect()
    }

    /// Adds a shared variable; returns its index for `Need::terms`.
    pub fn add_var(&mut self, cost: f64, lower: f64, upper: f64) -> usize {
        self.cost.push(cost);
        self.lower.push(lower);
        self.upper.push(upper);
        self.cost.len() - 1
    }
}

/// The optimum of a `Program`: its variables and an allocation meeting every need.
#[derive(Debug, Clone)]
pub struct Solved {
    pub vars: Vec<f64>,
    pub allocation: Matrix,
    /// `pair_time[i][w]`: time of `Instance::pairs[i]` on type `w`.
    pub pair_time: Vec<Vec<f64>>,
    /// `U[m][w]`: time of job m on `w` unconsolidated (0 × 0 without placement sensitivity).
    pub unconsolidated: Matrix,
    pub lp_solves: usize,
    pub classes: usize,
    /// Jobs that provably cannot exceed their need in any optimal solution: the members of a
    /// class-total or cut row with a nonzero dual (that row is tight in every optimum, and its
    /// members then all sit at their need). `None` when the backend reports no duals.
    pub binding: Option<Vec<bool>>,
}

/// The optimum of `max z s.t. thr_m ≥ z·demand_m`.
#[derive(Debug, Clone)]
pub struct RatioSolution {
    /// `None` when no job has a positive demand (z is unbounded; nothing is allocated).
    pub z: Option<f64>,
    pub allocation: Matrix,
    /// `pair_time[i][w]`: time of `Instance::pairs[i]` on type `w`.
    pub pair_time: Vec<Vec<f64>>,
    /// `U[m][w]`: time of job m on `w` unconsolidated (0 × 0 without placement sensitivity).
    pub unconsolidated: Matrix,
    pub lp_solves: usize,
    pub classes: usize,
}

/// Jobs with the same throughput row and scale factor, grouped once per instance.
struct ClassShape {
    jobs: Vec<usize>,
    row: Vec<f64>,
    scale_factor: u32,
    /// The types the class can use, fastest first.
    types: Vec<usize>,
}

/// A class as it enters one program: its members with a nonzero need and its LP columns.
struct Class<'s> {
    shape: &'s ClassShape,
    jobs: Cow<'s, [usize]>,
    /// `(type, column)`, fastest first.
    cols: Vec<(usize, usize)>,
    /// A paired job's class: `(column, its throughput there)` of every pair column it is in.
    pair_terms: Vec<(usize, f64)>,
}

/// A cut the engine found, kept to seed later programs (re-derived with their needs).
#[derive(Clone)]
struct PoolCut {
    class: usize,
    members: Vec<usize>,
    lambda: usize,
    /// Whether the cut was tight at the end of the last program that had it; only those seed
    /// the next program (a stale one comes back when it is violated again).
    tight: bool,
}

impl Class<'_> {
    fn row(&self, w: usize) -> f64 {
        self.shape.row[w]
    }

    /// The class-total row (k = n, λ = 0) with the pair terms of a paired job: the row that
    /// carries the class's needs in every program.
    fn total(&self, needs: &[Need]) -> Row {
        let mut row = self.cut(&self.jobs, self.cols.len(), needs);
        row.coefs.extend(self.pair_terms.iter().copied());
        row
    }

    /// The row carrying `members`' needs at `λ = lambda(li)`: the class total or a cut.
    fn need_row(&self, members: &[usize], li: usize, needs: &[Need]) -> Row {
        if li == self.cols.len() && members.len() == self.jobs.len() {
            self.total(needs)
        } else {
            self.cut(members, li, needs)
        }
    }

    /// The cut for the set `members` at dual point `λ = lambda(li)`; members with no need in this
    /// program count for nothing (the cut for the rest is then tighter and still valid).
    fn cut(&self, members: &[usize], li: usize, needs: &[Need]) -> Row {
        let lambda = self.lambda(li);
        let mut coefs: Vec<(usize, f64)> = self
            .cols
            .iter()
            .filter(|&&(w, _)| self.row(w) > lambda)
            .map(|&(w, col)| (col, self.row(w) - lambda))
            .collect();
        let mut var_coefs: Vec<(usize, f64)> = Vec::new();
        let (mut base, mut k) = (0.0, 0usize);
        for &m in members {
            if needs[m].is_zero() {
                continue;
            }
            k += 1;
            base += needs[m].base;
            for &(v, c) in &needs[m].terms {
                match var_coefs.iter_mut().find(|(u, _)| *u == v) {
                    Some(entry) => entry.1 -= c,
                    None => var_coefs.push((v, -c)),
                }
            }
        }
        var_coefs.retain(|&(_, c)| c != 0.0);
        var_coefs.sort_by_key(|&(v, _)| v);
        coefs.extend(var_coefs);
        Row::at_least(base - lambda * k as f64, coefs)
    }

    /// Members sorted by current need, largest first, with those needs.
    fn sorted(&self, needs: &[Need], vars: &[f64]) -> Vec<(usize, f64)> {
        let mut d: Vec<(usize, f64)> = self.jobs.iter().map(|&m| (m, needs[m].value(vars).max(0.0))).collect();
        d.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        d
    }

    /// The most violated top-k condition at `(y, vars)`: `(k, λ index)`, k < n.
    fn most_violated(&self, y: &[f64], sorted: &[(usize, f64)]) -> Option<(usize, usize)> {
        let mut worst: Option<(usize, usize, f64)> = None;
        let (mut seg, mut used_in_seg, mut f, mut want) = (0, 0.0, 0.0, 0.0);
        for (k, &(_, d)) in sorted.iter().enumerate().take(sorted.len().saturating_sub(1)) {
            let k = k + 1;
            want += d;
            let mut need = 1.0;
            while need > 0.0 && seg < self.cols.len() {
                let take = (y[seg] - used_in_seg).min(need).max(0.0);
                f += take * self.row(self.cols[seg].0);
                need -= take;
                used_in_seg += take;
                if used_in_seg >= y[seg] {
                    seg += 1;
                    used_in_seg = 0.0;
                }
            }
            let violation = (want - f) / want.max(f64::MIN_POSITIVE);
            if violation > CUT_TOLERANCE && worst.is_none_or(|(_, _, v)| violation > v) {
                worst = Some((k, self.tight_lambda(y, k), violation));
            }
        }
        worst.map(|(k, l, _)| (k, l))
    }

    /// Index into `cols` (or `cols.len()` for λ = 0) of the λ attaining `F_Y(k)`: the speed of the
    /// type where the k-th unit of time ends, or 0 when the class has less than k units in all.
    fn tight_lambda(&self, y: &[f64], k: usize) -> usize {
        let mut acc = 0.0;
        for (i, &amount) in y.iter().enumerate() {
            acc += amount;
            if acc >= k as f64 {
                return i;
            }
        }
        self.cols.len()
    }

    fn lambda(&self, index: usize) -> f64 {
        self.cols.get(index).map_or(0.0, |&(w, _)| self.row(w))
    }
}

/// The engine for one instance: jobs grouped into classes once, and every cut found so far kept
/// to seed the next program, so a sequence of programs (water-filling's levels and bottleneck
/// tests, a bisection's probes) does not rediscover them.
pub struct Engine<'a> {
    instance: Instance<'a>,
    backend: Backend,
    shapes: Vec<ClassShape>,
    pool: Vec<PoolCut>,
    /// Pool index of each cut, by (class, λ index, sorted members).
    pooled: HashMap<(usize, usize, Vec<usize>), usize>,
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
}

/// A class's total time per type in a solution, and its jobs' needs there, largest first.
struct ClassTotal {
    class: usize,
    y: Vec<f64>,
    sorted: Vec<(usize, f64)>,
}

/// A row of the LP that carries needs: a class total (`pool: None`) or a cut from the pool.
struct NeedRow {
    row: usize,
    class: usize,
    members: Vec<usize>,
    lambda: usize,
    pool: Option<usize>,
    /// The lower bound and shared-variable coefficients the backend has now, so a kept model is
    /// sent only what changed.
    sent: (f64, Vec<f64>),
}

/// The lower bound and the coefficient of each of the `num_vars` shared variables in `row`.
fn need_part(row: &Row, num_vars: usize) -> (f64, Vec<f64>) {
    let mut vars = vec![0.0; num_vars];
    for &(c, v) in &row.coefs {
        if c < num_vars {
            vars[c] = v;
        }
    }
    (row.lower, vars)
}

/// A solved model kept for the next program with the same shared variables.
struct Kept {
    signature: Vec<u64>,
    session: Box<dyn Session>,
    need_rows: Vec<NeedRow>,
    num_rows: usize,
    /// The pair columns in the model (per pair, `(type, column)`), and the rows pricing reads
    /// duals from.
    pair_cols: Vec<Vec<(usize, usize)>>,
    /// The unconsolidated columns in the model, `(job, type, column)`.
    extra_cols: Vec<(usize, usize, usize)>,
    rows_of: RowIndex,
}

/// Where a fresh model put the rows a pair column enters: each type's capacity row, and each
/// class's time row and class-total (need) row.
#[derive(Clone, Default)]
struct RowIndex {
    capacity: Vec<Option<usize>>,
    time: Vec<Option<usize>>,
    total: Vec<Option<usize>>,
}

/// Pair columns priced in per round at most (the best by reduced cost, at most
/// `PRICED_PER_JOB` per job); the loop goes on until none improves, so these bound only the size
/// of each step. Spreading a round's columns over the jobs keeps each re-solve short: with
/// Gavel's throughputs at 1,024 jobs, 2 per job solves in a fifth of the time of the best 8,192.
const PRICED_PER_ROUND: usize = 8192;
const PRICED_PER_JOB: usize = 2;
/// A pair column improves the program when its reduced cost exceeds this.
const REDUCED_COST_TOLERANCE: f64 = 1e-9;

/// Column generation over the pair columns not yet in the model: with the row duals `y`, the
/// reduced cost of `Y[k][w]` is `0 − (sf·y_cap(w) + y_time(a) + y_time(b) + T_k[a][w]·y_need(a) +
/// T_k[b][w]·y_need(b))`; the most improving ones are added. Returns how many were added. When
/// none improves, the model's optimum is optimal over every pair column: that is the exactness
/// argument, and it needs no column to be present up front.
#[allow(clippy::too_many_arguments)]
fn price_pairs(
    pairs: &[Pair],
    owners: &[[usize; 2]],
    present: &[bool],
    rows_of: &RowIndex,
    duals: &[f64],
    sense: Sense,
    pair_cols: &mut [Vec<(usize, usize)>],
    classes: &mut [Class],
    session: &mut dyn Session,
) -> usize {
    // (gain, pair, type, the column's row entries)
    type Candidate = (f64, usize, usize, [(usize, f64); 5]);
    let mut candidates: Vec<Candidate> = Vec::new();
    for (i, pair) in pairs.iter().enumerate().filter(|&(i, _)| present[i]) {
        let [ca, cb] = owners[i];
        let (Some(ta), Some(tb), Some(na), Some(nb)) =
            (rows_of.time[ca], rows_of.time[cb], rows_of.total[ca], rows_of.total[cb])
        else {
            continue;
        };
        for w in pair.types() {
            if pair_cols[i].iter().any(|&(v, _)| v == w) {
                continue;
            }
            let Some(cap) = rows_of.capacity[w] else { continue };
            let [pa, pb] = pair.throughput[w];
            let entries = [(cap, pair.scale_factor as f64), (ta, 1.0), (tb, 1.0), (na, pa), (nb, pb)];
            let d = -entries.iter().map(|&(r, a)| a * duals[r]).sum::<f64>();
            let gain = match sense {
                Sense::Maximize => d,
                Sense::Minimize => -d,
            };
            if gain > REDUCED_COST_TOLERANCE {
                candidates.push((gain, i, w, entries));
            }
        }
    }
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0));
    // At most a few new columns per job and round, so one round's columns spread over the jobs.
    let mut taken: HashMap<usize, usize> = HashMap::new();
    candidates.retain(|&(_, i, _, _)| {
        let jobs = pairs[i].jobs;
        let ok = jobs.iter().all(|m| taken.get(m).copied().unwrap_or(0) < PRICED_PER_JOB);
        if ok {
            jobs.iter().for_each(|&m| *taken.entry(m).or_default() += 1);
        }
        ok
    });
    candidates.truncate(PRICED_PER_ROUND);
    for (_, i, w, entries) in &candidates {
        let col = session.add_col(0.0, 0.0, 1.0, entries.as_slice());
        pair_cols[*i].push((*w, col));
        let [ca, cb] = owners[*i];
        classes[ca].pair_terms.push((col, pairs[*i].throughput[*w][0]));
        classes[cb].pair_terms.push((col, pairs[*i].throughput[*w][1]));
    }
    candidates.len()
}

impl<'a> Engine<'a> {
    pub fn new(instance: Instance<'a>, backend: Backend) -> Engine<'a> {
        let num_types = instance.throughput.cols();
        let mut paired = vec![false; instance.throughput.rows()];
        for pair in &instance.pairs {
            pair.jobs.iter().for_each(|&m| paired[m] = true);
        }
        // A placement-sensitive job is set apart by its unconsolidated columns.
        if let Some(tu) = &instance.unconsolidated {
            (0..tu.rows()).filter(|&m| tu.row(m).iter().any(|&v| v > 0.0)).for_each(|m| paired[m] = true);
        }
        let shapes: Vec<ClassShape> = group_identical(instance.throughput, &instance.scale_factor, &paired)
            .into_iter()
            .map(|jobs| {
                let row = instance.throughput.row(jobs[0]);
                let mut types: Vec<usize> =
                    (0..num_types).filter(|&w| row[w] > 0.0 && instance.capacity[w] > 0.0).collect();
                types.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
                ClassShape { row: row.to_vec(), scale_factor: instance.scale_factor[jobs[0]], types, jobs }
            })
            .collect();
        Engine {
            instance,
            backend,
            shapes,
            pool: Vec::new(),
            pooled: HashMap::new(),
            kept: None,
            last_totals: None,
            last_pair_time: Vec::new(),
            last_unconsolidated: Matrix::zeros(0, 0),
            pair_pool: HashSet::new(),
        }
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
        let mut thr: Vec<f64> = (0..t.rows()).map(|m| crate::problem::dot(t.row(m), allocation.row(m))).collect();
        if let Some(tu) = &self.instance.unconsolidated {
            for (m, thr_m) in thr.iter_mut().enumerate().take(unconsolidated.rows()) {
                *thr_m += crate::problem::dot(tu.row(m), unconsolidated.row(m));
            }
        }
        for (pair, time) in self.instance.pairs.iter().zip(pair_time) {
            for (w, &y) in time.iter().enumerate() {
                thr[pair.jobs[0]] += pair.throughput[w][0] * y;
                thr[pair.jobs[1]] += pair.throughput[w][1] * y;
            }
        }
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
        let shapes = std::mem::take(&mut self.shapes);
        let result = self.solve_with(&shapes, program);
        self.shapes = shapes;
        result
    }

    fn solve_with(&mut self, shapes: &[ClassShape], program: &Program) -> Result<Solved> {
        let (num_jobs, num_types) = (self.instance.throughput.rows(), self.instance.throughput.cols());
        let needs = &program.needs;
        let num_vars = program.cost.len();
        // Classes in this program (index = shape index). A kept model has every job in its class,
        // so its shape never changes; otherwise only the jobs with a need take part. Columns are
        // numbered in a fixed order: the shared variables, then each class's types.
        let mut next_col = num_vars;
        let classes: Vec<Class> = shapes
            .iter()
            .map(|shape| {
                let jobs: Cow<[usize]> = if program.keep_model {
                    Cow::Borrowed(shape.jobs.as_slice())
                } else {
                    Cow::Owned(shape.jobs.iter().copied().filter(|&m| !needs[m].is_zero()).collect())
                };
                let cols = if jobs.is_empty() {
                    Vec::new()
                } else {
                    shape
                        .types
                        .iter()
                        .map(|&w| {
                            next_col += 1;
                            (w, next_col - 1)
                        })
                        .collect()
                };
                Class { shape, jobs, cols, pair_terms: Vec::new() }
            })
            .collect();
        let signature = program.signature();
        let kept = self.kept.take().filter(|k| program.keep_model && k.signature == signature);
        // Pair columns after the classes', for pairs whose jobs both take part: those of the kept
        // model, or, in a fresh one, those that had time last time; pricing adds the rest.
        let mut classes = classes;
        let mut class_of_job = vec![0; num_jobs];
        for (c, shape) in shapes.iter().enumerate() {
            shape.jobs.iter().for_each(|&m| class_of_job[m] = c);
        }
        // Unconsolidated columns `U[m][w]` right after the classes': fixed, every present job's.
        let extra_cols: Vec<(usize, usize, usize)> = match &kept {
            Some(kept) => kept.extra_cols.clone(),
            None => match &self.instance.unconsolidated {
                None => Vec::new(),
                Some(tu) => {
                    let mut cols = Vec::new();
                    for m in (0..num_jobs).filter(|&m| !classes[class_of_job[m]].jobs.is_empty()) {
                        for w in (0..num_types).filter(|&w| tu.get(m, w) > 0.0 && self.instance.capacity[w] > 0.0) {
                            cols.push((m, w, next_col));
                            next_col += 1;
                        }
                    }
                    cols
                }
            },
        };
        if let Some(tu) = &self.instance.unconsolidated {
            for &(m, w, col) in &extra_cols {
                classes[class_of_job[m]].pair_terms.push((col, tu.get(m, w)));
            }
        }
        let owners: Vec<[usize; 2]> = self.instance.pairs.iter().map(|p| p.jobs.map(|m| class_of_job[m])).collect();
        let present: Vec<bool> = owners.iter().map(|o| o.iter().all(|&c| !classes[c].jobs.is_empty())).collect();
        let mut pair_cols: Vec<Vec<(usize, usize)>> = match &kept {
            Some(kept) => kept.pair_cols.clone(),
            None => (0..self.instance.pairs.len())
                .map(|i| {
                    if !present[i] {
                        return Vec::new();
                    }
                    let seeded = self.instance.pairs[i].types().filter(|&w| self.pair_pool.contains(&(i, w)));
                    seeded
                        .map(|w| {
                            next_col += 1;
                            (w, next_col - 1)
                        })
                        .collect()
                })
                .collect(),
        };
        for (i, cols) in pair_cols.iter().enumerate() {
            for (side, &c) in owners[i].iter().enumerate() {
                let terms = cols.iter().map(|&(w, col)| (col, self.instance.pairs[i].throughput[w][side]));
                classes[c].pair_terms.extend(terms);
            }
        }
        // The rows that carry needs in this program, aligned with `need_rows`.
        let mut rows: Vec<Row> = Vec::new();
        let (mut session, mut need_rows, mut num_rows, rows_of) = match kept {
            Some(mut kept) => {
                let mut session = kept.session;
                // Same rows, new needs: only the right-hand sides and the shared variables'
                // coefficients move, and only those that did are sent.
                for need in &mut kept.need_rows {
                    let row = classes[need.class].need_row(&need.members, need.lambda, needs);
                    let (lower, vars) = need_part(&row, num_vars);
                    if lower != need.sent.0 {
                        session.set_row_bounds(need.row, row.lower, row.upper);
                    }
                    for (v, &coef) in vars.iter().enumerate() {
                        if coef != need.sent.1[v] {
                            session.set_coef(need.row, v, coef);
                        }
                    }
                    need.sent = (lower, vars);
                    rows.push(row);
                }
                (session, kept.need_rows, kept.num_rows, kept.rows_of)
            }
            None => {
                let (lp, need_rows, rows_of) = self.build(&classes, &extra_cols, &pair_cols, program, next_col);
                rows.extend(need_rows.iter().map(|n| lp.rows[n.row].clone()));
                let num_rows = lp.rows.len();
                (self.backend.open(lp), need_rows, num_rows, rows_of)
            }
        };

        let mut lp_solves = 0;
        let solution = loop {
            let solution = session.solve()?;
            lp_solves += 1;
            let vars = &solution.values[..num_vars];
            let mut cuts = Vec::new();
            for (c, class) in classes.iter().enumerate().filter(|(_, c)| !c.jobs.is_empty()) {
                let y: Vec<f64> = class.cols.iter().map(|&(_, col)| solution.values[col].max(0.0)).collect();
                let sorted = class.sorted(needs, vars);
                let Some((k, li)) = class.most_violated(&y, &sorted) else { continue };
                let members: Vec<usize> = sorted[..k].iter().map(|&(m, _)| m).collect();
                let row = class.cut(&members, li, needs);
                let i = self.pooled_index(c, members, li);
                // A cut already in the LP can look violated only within solver tolerance.
                if !need_rows.iter().any(|n| n.pool == Some(i)) {
                    let members = self.pool[i].members.clone();
                    let sent = need_part(&row, num_vars);
                    need_rows.push(NeedRow { row: num_rows, class: c, members, lambda: li, pool: Some(i), sent });
                    num_rows += 1;
                    cuts.push(row.clone());
                    rows.push(row);
                }
            }
            if !cuts.is_empty() {
                session.add_rows(&cuts);
                continue;
            }
            if self.instance.pairs.is_empty() || solution.row_duals.is_empty() {
                break solution;
            }
            let added = price_pairs(
                &self.instance.pairs,
                &owners,
                &present,
                &rows_of,
                &solution.row_duals,
                program.sense,
                &mut pair_cols,
                &mut classes,
                session.as_mut(),
            );
            if added == 0 {
                break solution;
            }
        };
        if !self.instance.pairs.is_empty() {
            self.pair_pool = pair_cols
                .iter()
                .enumerate()
                .flat_map(|(i, cols)| cols.iter().map(move |&(w, col)| (i, w, col)))
                .filter(|&(_, _, col)| solution.values[col] > 0.0)
                .map(|(i, w, _)| (i, w))
                .collect();
        }
        // One pass over the rows that carry needs: which pooled cuts were tight (they seed later
        // programs), and which rows have a nonzero dual (their members cannot rise).
        let mut binding = (!solution.row_duals.is_empty()).then(|| vec![false; num_jobs]);
        for (need, row) in need_rows.iter().zip(&rows) {
            if let Some(i) = need.pool {
                let activity: f64 = row.coefs.iter().map(|&(c, v)| v * solution.values[c]).sum();
                self.pool[i].tight = activity - row.lower <= 1e-7 * (1.0 + row.lower.abs());
            }
            if let Some(binding) = binding.as_mut() {
                // Judge the dual of the equilibrated row, whose size does not depend on units.
                let (_, scale) = row.equilibrated();
                if (solution.row_duals[need.row] * scale).abs() > BINDING_DUAL {
                    for &m in need.members.iter().filter(|&&m| !needs[m].is_zero()) {
                        binding[m] = true;
                    }
                }
            }
        }

        let vars = solution.values[..num_vars].to_vec();
        // Each class's total and its jobs' needs, largest first: what the split works from.
        let totals: Vec<ClassTotal> = classes
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.jobs.is_empty())
            .map(|(c, class)| ClassTotal {
                class: c,
                y: class.cols.iter().map(|&(_, col)| solution.values[col].max(0.0)).collect(),
                sorted: class.sorted(needs, &vars),
            })
            .collect();
        let pair_time: Vec<Vec<f64>> = pair_cols
            .iter()
            .map(|cols| {
                let mut time = vec![0.0; num_types];
                cols.iter().for_each(|&(w, col)| time[w] = solution.values[col].max(0.0));
                time
            })
            .collect();
        let unconsolidated = if self.instance.unconsolidated.is_some() {
            let mut u = Matrix::zeros(num_jobs, num_types);
            extra_cols.iter().for_each(|&(m, w, col)| u.set(m, w, solution.values[col].max(0.0)));
            u
        } else {
            Matrix::zeros(0, 0)
        };
        let mut allocation = Matrix::zeros(num_jobs, num_types);
        if program.allocate {
            for total in &totals {
                let left = split_class(&shapes[total.class], &total.y, &total.sorted, &mut allocation);
                if program.time_value.is_some() {
                    fill_class(&shapes[total.class], left, &total.sorted, &mut allocation);
                }
            }
        } else {
            self.last_totals = Some(totals);
            self.last_pair_time = pair_time.clone();
            self.last_unconsolidated = unconsolidated.clone();
        }
        let used = classes.iter().filter(|c| !c.jobs.is_empty()).count();
        if program.keep_model {
            self.kept = Some(Kept { signature, session, need_rows, num_rows, pair_cols, extra_cols, rows_of });
        }
        Ok(Solved { vars, allocation, pair_time, unconsolidated, lp_solves, classes: used, binding })
    }

    /// A fresh LP for `classes`: capacities, class time and class totals, and the pooled cuts
    /// that were tight when last used. Returns it with its need-carrying rows.
    fn build(
        &self,
        classes: &[Class],
        extra_cols: &[(usize, usize, usize)],
        pair_cols: &[Vec<(usize, usize)>],
        program: &Program,
        num_cols: usize,
    ) -> (LinearProgram, Vec<NeedRow>, RowIndex) {
        let needs = &program.needs;
        let mut rows_of = RowIndex {
            capacity: vec![None; self.instance.throughput.cols()],
            time: vec![None; classes.len()],
            total: vec![None; classes.len()],
        };
        let mut lp = LinearProgram::new(program.sense);
        for v in 0..program.cost.len() {
            lp.add_col(program.cost[v], program.lower[v], program.upper[v]);
        }
        for class in classes {
            let rep = class.shape.jobs[0];
            for &(w, _) in &class.cols {
                let value = program.time_value.as_ref().map_or(0.0, |v| v.get(rep, w));
                lp.add_col(value, 0.0, class.jobs.len() as f64);
            }
        }
        for _ in extra_cols {
            lp.add_col(0.0, 0.0, 1.0);
        }
        for _ in pair_cols.iter().flatten() {
            lp.add_col(0.0, 0.0, 1.0);
        }
        debug_assert_eq!(lp.num_cols(), num_cols);
        for w in 0..self.instance.throughput.cols() {
            let pairs = self.instance.pairs.iter().zip(pair_cols).flat_map(|(pair, cols)| {
                cols.iter().filter(move |&&(v, _)| v == w).map(move |&(_, col)| (col, pair.scale_factor as f64))
            });
            let coefs: Vec<(usize, f64)> = classes
                .iter()
                .flat_map(|c| {
                    c.cols.iter().filter(|&&(v, _)| v == w).map(move |&(_, col)| (col, c.shape.scale_factor as f64))
                })
                .chain(pairs)
                .chain(
                    extra_cols
                        .iter()
                        .filter(|e| e.1 == w)
                        .map(|&(m, _, col)| (col, self.instance.scale_factor[m] as f64)),
                )
                .collect();
            if !coefs.is_empty() {
                rows_of.capacity[w] = Some(lp.add_row(Row::at_most(self.instance.capacity[w], coefs)));
            }
            // Consolidated placements of each size fit in the servers' whole-job slots.
            for &(size, gpus) in self.instance.consolidated_slots.get(w).into_iter().flatten() {
                let coefs: Vec<(usize, f64)> = classes
                    .iter()
                    .filter(|c| c.shape.scale_factor == size && !c.jobs.is_empty())
                    .flat_map(|c| c.cols.iter().filter(|&&(v, _)| v == w).map(|&(_, col)| (col, size as f64)))
                    .collect();
                if !coefs.is_empty() {
                    lp.add_row(Row::at_most(gpus, coefs));
                }
            }
        }
        let mut need_rows = Vec::new();
        for (c, class) in classes.iter().enumerate().filter(|(_, c)| !c.jobs.is_empty()) {
            // A paired or placement-sensitive job's time row holds its pair and unconsolidated
            // columns too: the ones its need row carries.
            let time: Vec<(usize, f64)> = class
                .cols
                .iter()
                .map(|&(_, col)| col)
                .chain(class.pair_terms.iter().map(|&(col, _)| col))
                .map(|col| (col, 1.0))
                .collect();
            rows_of.time[c] = Some(lp.add_row(Row::at_most(class.jobs.len() as f64, time)));
            // The class total (k = n), at λ = 0.
            let lambda = class.cols.len();
            let cut = class.total(needs);
            let sent = need_part(&cut, program.cost.len());
            let row = lp.add_row(cut);
            rows_of.total[c] = Some(row);
            need_rows.push(NeedRow { row, class: c, members: class.jobs.to_vec(), lambda, pool: None, sent });
        }
        for (i, cut) in self.pool.iter().enumerate().filter(|(_, c)| c.tight) {
            let class = &classes[cut.class];
            if !class.jobs.is_empty() && cut.lambda <= class.cols.len() {
                let row_cut = class.cut(&cut.members, cut.lambda, needs);
                let sent = need_part(&row_cut, program.cost.len());
                let row = lp.add_row(row_cut);
                need_rows.push(NeedRow {
                    sent,
                    row,
                    class: cut.class,
                    members: cut.members.clone(),
                    lambda: cut.lambda,
                    pool: Some(i),
                });
            }
        }
        (lp, need_rows, rows_of)
    }

    /// A unit for a variable that multiplies `rate[m]` in job m's need: the largest value it can
    /// take before some job with a rate needs more than its best type alone gives
    /// (`min_m T_max,m / rate_m`). Measured in it the variable is at most 1, whatever the units
    /// of throughputs and demands. `None` when no job has a rate; 0 when one of them can run nowhere.
    pub fn natural_unit(&self, rate: &[f64]) -> Option<f64> {
        let t = self.instance.throughput;
        (0..t.rows())
            .filter(|&m| rate[m] > 0.0)
            .map(|m| {
                let best =
                    (0..t.cols()).filter(|&w| self.instance.capacity[w] > 0.0).map(|w| t.get(m, w)).fold(0.0, f64::max);
                best / rate[m]
            })
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
        let Some(unit) = self.natural_unit(demand) else {
            return Ok(self.nothing_allocated(None));
        };
        if unit == 0.0 {
            // Some job with a demand can run nowhere: no z > 0 is feasible.
            return Ok(self.nothing_allocated(Some(0.0)));
        }
        // z measured in its natural unit, so the LP is well scaled whatever the demands' units.
        let needs = demand.iter().map(|d| Need { base: 0.0, terms: vec![(0, d * unit)] }).collect();
        let mut program = Program::new(Sense::Maximize, needs);
        program.add_var(1.0, 0.0, f64::INFINITY);
        let solved = self.solve_program(&program)?;
        Ok(RatioSolution {
            z: Some(solved.vars[0] * unit),
            allocation: solved.allocation,
            pair_time: solved.pair_time,
            unconsolidated: solved.unconsolidated,
            lp_solves: solved.lp_solves,
            classes: solved.classes,
        })
    }

    /// Which of the `candidates` are bottlenecked: no allocation gives them more than `floor`
    /// while every job keeps `thr_m ≥ floor[m]`. Exact: jobs of one class with equal floors are
    /// symmetric and share one raise variable `ε_g` (the average of their individual raises
    /// raises them all); `max Σ ε_g` finds at least one raisable group while any exists, and a
    /// zero optimum proves the rest are bottlenecks. Returns the flags and the LP solves.
    pub fn bottlenecks(&mut self, floor: &[f64], candidates: &[bool]) -> Result<(Vec<bool>, usize)> {
        let mut open: Vec<usize> = (0..floor.len()).filter(|&m| candidates[m] && floor[m] > 0.0).collect();
        let mut lp_solves = 0;
        while !open.is_empty() {
            let mut needs: Vec<Need> = floor.iter().map(|&f| Need { base: f, terms: Vec::new() }).collect();
            let mut program = Program::new(Sense::Maximize, Vec::new());
            let mut group_of: HashMap<(usize, u64), usize> = HashMap::new();
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

    /// `class_of[m]`: the class of job m (jobs in one class share row and scale factor).
    pub fn class_of(&self) -> Vec<usize> {
        let mut class_of = vec![0; self.instance.throughput.rows()];
        for (c, shape) in self.shapes.iter().enumerate() {
            for &m in &shape.jobs {
                class_of[m] = c;
            }
        }
        class_of
    }
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

/// Splits a class total `y` (per type of `shape.types`, fastest first) among its jobs, given their
/// needs largest first: each takes the latest unit window of the remaining time whose throughput
/// still covers its need.
fn split_class(shape: &ClassShape, y: &[f64], sorted: &[(usize, f64)], allocation: &mut Matrix) -> Vec<f64> {
    let speeds: Vec<f64> = shape.types.iter().map(|&w| shape.row[w]).collect();
    let mut left = y.to_vec();
    for &(m, need) in sorted {
        let a = latest_window(&speeds, &left, need);
        // Remove [a, a+1] from the remaining time line and hand it to job m.
        let mut start = 0.0;
        for (s, amount) in left.iter_mut().enumerate() {
            let end = start + *amount;
            let overlap = (end.min(a + 1.0) - start.max(a)).max(0.0);
            if overlap > 0.0 {
                *amount -= overlap;
                let w = shape.types[s];
                allocation.set(m, w, allocation.get(m, w) + overlap);
            }
            start = end;
        }
    }
    left
}

/// Hands the class time `left` over after the split to the members with time to spare, fastest
/// time first, so that no time the LP gave the class goes unused (the class-time row keeps the
/// total within the members' time).
fn fill_class(shape: &ClassShape, mut left: Vec<f64>, sorted: &[(usize, f64)], allocation: &mut Matrix) {
    for &(m, _) in sorted {
        let mut spare = 1.0 - allocation.row(m).iter().sum::<f64>();
        for (s, amount) in left.iter_mut().enumerate() {
            if spare <= 0.0 {
                break;
            }
            let give = amount.min(spare);
            if give > 0.0 {
                let w = shape.types[s];
                allocation.set(m, w, allocation.get(m, w) + give);
                *amount -= give;
                spare -= give;
            }
        }
    }
}

/// The largest `a ≥ 0` with `∫_a^{a+1} speed ≥ need` on the time line made of `amount[s]` units
/// at `speed[s]` (speeds decreasing); 0 if even the first window falls short.
fn latest_window(speed: &[f64], amount: &[f64], need: f64) -> f64 {
    let total: f64 = amount.iter().sum();
    // G(x) = ∫_0^x speed, piecewise linear.
    let g = |x: f64| {
        let (mut acc, mut start) = (0.0, 0.0);
        for (s, &len) in amount.iter().enumerate() {
            if x <= start {
                break;
            }
            acc += speed[s] * (x.min(start + len) - start);
            start += len;
        }
        acc
    };
    let window = |a: f64| g((a + 1.0).min(total)) - g(a);
    // The window's value is linear between these points: segment ends, and segment ends minus 1.
    let mut points = vec![0.0, total];
    let mut start = 0.0;
    for &len in amount {
        start += len;
        points.push(start);
        points.push(start - 1.0);
    }
    let mut points: Vec<f64> = points.into_iter().filter(|p| (0.0..=total).contains(p)).collect();
    points.sort_by(f64::total_cmp);
    points.dedup();
    let mut best = 0.0;
    for pair in points.windows(2) {
        let (a0, a1) = (pair[0], pair[1]);
        let (h0, h1) = (window(a0), window(a1));
        if h0 < need {
            break;
        }
        if h1 >= need {
            best = a1;
            continue;
        }
        // Linear between a0 and a1: solve h(a) = need.
        best = a0 + (a1 - a0) * (h0 - need) / (h0 - h1);
        break;
    }
    best
}

#[cfg(test)]
mod tests {
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
