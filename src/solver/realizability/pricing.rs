//! Pricing for the column generation: given a value per (gang, worker type) entry (the master's
//! duals), the round configuration of greatest total value. A gang is a job alone or a colocated
//! pair (`Gang`). Per type it is a knapsack (scale factors into the type's GPUs), solved exactly
//! by dynamic programming over gangs grouped by scale factor; a job chosen twice (on two types, or
//! alone and in a pair) is resolved by a dynamic program over the GPUs used on every type when
//! that table is small and there are no pairs, else by branch and bound over the entries it may
//! keep, the per-type knapsacks being the bound.

use super::configuration::{one_round, Gang};

/// Values below this are taken as 0: a job with no value is never worth a GPU in pricing.
const VALUE_TOL: f64 = 1e-12;
/// Work of the dynamic program over every type's GPUs at most: `Π_w (GPUs_w + 1)` states times
/// the valued entries it runs over. Past it, branch and bound.
const TABLE_WORK: usize = 1 << 22;
/// The relative gap the pricing MILP is solved to.
const MILP_GAP: f64 = 1e-9;
/// The pricing MILP's cores: entries that may be in a configuration within these shares of the
/// gap between the GPU prices' bound and the best configuration known, tried in turn.
const CORE_SHARES: [f64; 3] = [0.002, 0.02, 0.2];
/// What one pricing MILP costs, in the master's simplex iterations (`master::Master::work`):
/// fitted to `max_min_fairness` checks with colocated pairs at 32 jobs, about 4 ms each.
const MILP_WORK: u64 = 500;
/// What one LP relaxation of the pricing MILP costs, in the same units.
const RELAXATION_WORK: u64 = 250;

/// Knapsack steps branch and bound may take at most (its node budget times a node's steps)
/// before a MILP solves the pricing instead, when one is at hand.
const MILP_FIRST_WORK: u64 = 50_000_000;

/// The configurations' search space: entries `(gang, type)`, the gangs, types' GPUs.
pub struct Pricing<'a> {
    entries: &'a [(u32, u32)],
    gangs: &'a [Gang],
    /// Jobs: one more than the largest job a gang runs.
    jobs: usize,
    /// Some gang is a colocated pair.
    paired: bool,
    capacity: &'a [u32],
    /// Per type: its entries whose gang fits the type at all.
    by_type: Vec<Vec<usize>>,
    /// Per entry: the time asked of it, to fill spare GPUs with the entries that need most.
    requested: &'a [f64],
    /// A MILP solver for what branch and bound leaves open (`with_milp`).
    milp: Option<crate::lp::Backend>,
    /// The last values the MILP's relaxation was solved for, its GPU prices and its rounding:
    /// a master whose entry values do not change between pricings (a sum of throughputs) solves
    /// it once.
    relaxed: std::cell::RefCell<Option<Relaxed>>,
    /// The work of its MILP and LP solves so far, in master simplex iterations (`MILP_WORK`,
    /// `RELAXATION_WORK` each): what pricing costs beyond its knapsacks.
    solve_work: std::cell::Cell<u64>,
    /// The last values the MILP proved a best configuration for, and that configuration: the
    /// pricing that follows a sum of throughputs' first (to prove no column improves) reads it.
    proved: std::cell::RefCell<Option<(Vec<f64>, Column)>>,
    /// Only the best configuration is worth finding (`seeking_the_best`).
    best_only: bool,
}

/// The configuration MILP's relaxation for some values: the values, the GPU prices, and the
/// entries it sets to 1.
#[derive(Debug, Clone)]
struct Relaxed {
    value: Vec<f64>,
    prices: Vec<f64>,
    rounded: Vec<usize>,
}

/// The best configuration found, as entry indices, and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub value: f64,
    pub entries: Vec<usize>,
}

/// A pricing answer: a column worth more than the threshold (if one was found) and an upper
/// bound on the value of every configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Priced {
    pub column: Option<Column>,
    pub bound: f64,
}

/// The Lagrangian bound `L` of the configuration problem of jobs alone at some GPU prices, and
/// per job its best and second best reduced value (0: idle) and its best entry (`usize::MAX`:
/// idle).
struct Lagrangian {
    bound: f64,
    best: Vec<(f64, f64, usize)>,
}

/// What Lagrangian fixing leaves of the pricing MILP.
enum Fixing {
    /// No configuration is worth more than the threshold; the bound proves it.
    NoneBetter(f64),
    /// The entries a configuration above the threshold may use, and which of them it must.
    Reduced { kept: Vec<usize>, forced: Vec<bool> },
}

/// What makes jobs alike in the pricing MILP: their GPUs, and the (type, value bits) of their
/// entries.
type JobShape = (u32, Vec<(u32, u64)>);

/// One type's best set: its value and entries.
struct Knapsack {
    value: f64,
    entries: Vec<usize>,
}

impl<'a> Pricing<'a> {
    pub fn new(entries: &'a [(u32, u32)], gangs: &'a [Gang], capacity: &'a [u32], requested: &'a [f64]) -> Pricing<'a> {
        let mut by_type = vec![Vec::new(); capacity.len()];
        for (e, &(g, w)) in entries.iter().enumerate() {
            if gangs[g as usize].gpus <= capacity[w as usize] {
                by_type[w as usize].push(e);
            }
        }
        let jobs = Gang::jobs_spanned(gangs);
        let paired = gangs.iter().any(Gang::is_pair);
        Pricing {
            entries,
            gangs,
            jobs,
            paired,
            capacity,
            by_type,
            requested,
            milp: None,
            relaxed: Default::default(),
            solve_work: Default::default(),
            proved: Default::default(),
            best_only: false,
        }
    }

    /// GPUs entry `e` takes on its type.
    fn gpus(&self, e: usize) -> u32 {
        self.gangs[self.entries[e].0 as usize].gpus
    }

    /// The jobs entry `e` runs.
    fn jobs_of(&self, e: usize) -> &[u32] {
        self.gangs[self.entries[e].0 as usize].jobs()
    }

    /// When branch and bound runs out of nodes, pricing solves the configuration problem as a
    /// MILP with `backend` instead (exact within the MILP's gap of 10⁻⁹), where the backend
    /// solves integer programs.
    pub fn with_milp(mut self, backend: crate::lp::Backend) -> Pricing<'a> {
        self.milp = Some(backend);
        self
    }

    /// Pricing for values that do not change from pricing to pricing (a sum of throughputs): a
    /// column that merely improves only adds a master round, so where a MILP can find the best
    /// configuration, the heuristic column of the knapsacks' fix-and-resolve is not looked for.
    pub fn seeking_the_best(mut self) -> Pricing<'a> {
        self.best_only = true;
        self
    }

    /// The work of the MILPs and LPs pricing has solved so far, in master simplex iterations.
    pub fn solve_work(&self) -> u64 {
        self.solve_work.get()
    }

    /// Counts one solve of `work` (`MILP_WORK` or `RELAXATION_WORK`).
    fn charge(&self, work: u64) {
        self.solve_work.set(self.solve_work.get() + work);
    }

    /// The configuration of greatest `Σ value[e]` if it is worth more than `threshold`, else
    /// `None` once no configuration is (exact), or once `node_budget` branch-and-bound nodes are
    /// spent (then `bound` is the largest bound of a subtree left open, above the threshold).
    pub fn price(&self, value: &[f64], threshold: f64, node_budget: usize) -> Priced {
        if let Some((_, best)) = self.proved.borrow().as_ref().filter(|(v, _)| v == value) {
            return Priced { bound: best.value, column: (best.value > threshold).then(|| best.clone()) };
        }
        let mut forbidden = vec![false; self.entries.len()];
        let root = self.relaxation(value, &forbidden);
        let bound = root.iter().map(|k| k.value).sum::<f64>();
        if bound <= threshold {
            return Priced { column: None, bound };
        }
        let mut conflicts = self.conflicts(value, &root);
        if conflicts.is_empty() {
            let column = self.complete(value, root.into_iter().flat_map(|k| k.entries).collect());
            return Priced { column: Some(column), bound };
        }
        // Fix and re-solve: a shared job keeps the type where it is worth most, the knapsacks run
        // again without its other entries, until no job is shared. Skipped when only the best
        // will do and a MILP can find it.
        let mut floor = threshold;
        if !(self.best_only && self.milp.is_some()) {
            let mut sets = root;
            while !conflicts.is_empty() {
                for (_, shared) in &conflicts {
                    let keep = shared.iter().copied().max_by(|&a, &b| value[a].total_cmp(&value[b]).then(b.cmp(&a)));
                    for &e in shared {
                        forbidden[e] |= Some(e) != keep;
                    }
                }
                sets = self.relaxation(value, &forbidden);
                conflicts = self.conflicts(value, &sets);
            }
            let fixed = self.complete(value, sets.into_iter().flat_map(|k| k.entries).collect());
            if fixed.value > threshold {
                return Priced { column: Some(fixed), bound };
            }
            floor = floor.max(fixed.value);
        }
        if let Some(best) = self.table(value) {
            let best = self.complete(value, best);
            let bound = best.value;
            return Priced { column: (bound > threshold).then_some(best), bound };
        }
        // Where branch and bound's nodes would cost more than a MILP, the MILP first.
        let node_work: u64 =
            self.by_type.iter().zip(self.capacity).map(|(es, &c)| es.len() as u64 * (c as u64 + 1)).sum();
        if node_work.saturating_mul(node_budget as u64) > MILP_FIRST_WORK {
            if let Some(priced) = self.by_milp(value, threshold) {
                return priced;
            }
        }
        let searched = self.branch_and_bound(value, floor, bound, node_budget);
        if searched.column.is_some() || searched.bound <= floor {
            return searched;
        }
        self.by_milp(value, threshold).unwrap_or(searched)
    }

    /// Pricing by the MILP (`best_by_milp`), when one is at hand and solves: optimal within the
    /// MILP's gap, which is taken as exact (as an LP's optimum is within its tolerances).
    fn by_milp(&self, value: &[f64], threshold: f64) -> Option<Priced> {
        self.best_by_milp(value, threshold, self.milp?)
    }

    /// The best configuration by a MILP: a binary `y_e` per valued entry that fits, each job at
    /// most once (alone or in a pair), each type's gangs within its GPUs. Without pairs, the
    /// MILP first shrinks (`fixing`): from the relaxation's GPU prices and a configuration known
    /// (the relaxation's whole entries, then a small MILP over the entries nearest its optimum),
    /// it keeps only the entries a better configuration may use. The best configuration when
    /// it is worth more than `threshold` (its value the bound), else none with a bound at most
    /// `threshold` (the best's value when the MILP ran over every entry); `None` when the backend
    /// solves no MILP or fails (or runs out of time).
    fn best_by_milp(&self, value: &[f64], threshold: f64, backend: crate::lp::Backend) -> Option<Priced> {
        let valued: Vec<usize> = self.by_type.iter().flatten().copied().filter(|&e| value[e] > VALUE_TOL).collect();
        // The best configuration, proved best: its value bounds every other.
        let best = |c: Column| {
            *self.proved.borrow_mut() = Some((value.to_vec(), c.clone()));
            Some(Priced { bound: c.value, column: (c.value > threshold).then_some(c) })
        };
        if valued.is_empty() {
            // Nothing is worth anything: the idle round is the best.
            return best(Column { value: 0.0, entries: Vec::new() });
        }
        if valued.iter().any(|&e| self.gangs[self.entries[e].0 as usize].is_pair()) {
            let chosen = self.milp_over(value, &valued, &vec![false; valued.len()], backend)?;
            return best(self.complete(value, chosen?));
        }
        // The best known above `threshold` is the best; none above it is proved by the fixing.
        let answer = |known: Option<Column>| match known {
            Some(c) if c.value > threshold => best(c),
            _ => Some(Priced { column: None, bound: threshold }),
        };
        let (prices, rounded) = self.relaxed_prices(value, &valued, backend)?;
        let lagrangian = self.lagrangian(value, &valued, &prices);
        let bound = lagrangian.bound;
        // The relaxation's whole entries, the GPUs its split jobs leave filled by value per GPU.
        let per_gpu: Vec<f64> = (0..value.len()).map(|e| value[e] / self.gpus(e).max(1) as f64).collect();
        let mut known = self
            .is_configuration(&rounded)
            .then(|| self.complete(value, self.fill_in(rounded, &self.by_order(&per_gpu))));
        let better = |known: &mut Option<Column>, chosen: Option<Vec<usize>>| {
            let Some(chosen) = chosen.filter(|c| self.is_configuration(c)) else { return };
            let found = self.complete(value, chosen);
            if known.as_ref().is_none_or(|k| found.value > k.value) {
                *known = Some(found);
            }
        };
        // Small MILPs over the entries nearest the prices' bound (within a share of the gap to
        // the best configuration known), growing until one finds a better configuration: often
        // the best, and a floor that leaves the exact MILP below small.
        let mut last_core: Option<Vec<usize>> = None;
        for share in CORE_SHARES {
            let floor = known.as_ref().map_or(threshold, |c| c.value.max(threshold));
            if bound - floor <= 1e-9 * bound.abs().max(1.0) {
                break;
            }
            let Fixing::Reduced { kept, forced } =
                self.fixing(value, &valued, &prices, &lagrangian, bound - share * (bound - floor))
            else {
                break;
            };
            if last_core.as_ref() == Some(&kept) {
                continue;
            }
            let before = known.as_ref().map(|c| c.value);
            if !kept.is_empty() {
                better(&mut known, self.milp_over(value, &kept, &forced, backend).flatten());
            }
            if known.as_ref().map(|c| c.value) != before {
                break;
            }
            last_core = Some(kept);
        }
        let floor = known.as_ref().map_or(threshold, |c| c.value.max(threshold));
        let (kept, forced) = match self.fixing(value, &valued, &prices, &lagrangian, floor) {
            Fixing::NoneBetter(bound) if known.as_ref().is_none_or(|c| c.value <= threshold) => {
                return Some(Priced { column: None, bound: bound.min(threshold) });
            }
            Fixing::NoneBetter(_) => return answer(known),
            Fixing::Reduced { kept, forced } => (kept, forced),
        };
        if !kept.is_empty() {
            // Infeasible: the entries every better configuration needs do not fit together.
            better(&mut known, self.milp_over(value, &kept, &forced, backend)?);
        }
        answer(known)
    }

    /// The configuration MILP over `valued` entries (`forced` ones fixed in, outside the MILP:
    /// their GPUs taken, their jobs' other entries left out): `Some(None)` when it is
    /// infeasible, `None` when it fails.
    fn milp_over(
        &self,
        value: &[f64],
        valued: &[usize],
        forced: &[bool],
        backend: crate::lp::Backend,
    ) -> Option<Option<Vec<usize>>> {
        let fixed: Vec<usize> = valued.iter().zip(forced).filter(|&(_, &f)| f).map(|(&e, _)| e).collect();
        let mut capacity: Vec<f64> = self.capacity.iter().map(|&c| c as f64).collect();
        let mut taken = std::collections::HashSet::new();
        for &e in &fixed {
            capacity[self.entries[e].1 as usize] -= self.gpus(e) as f64;
            for &m in self.jobs_of(e) {
                if !taken.insert(m) {
                    return Some(None);
                }
            }
        }
        if capacity.iter().any(|&c| c < 0.0) {
            return Some(None);
        }
        let free: Vec<usize> = valued
            .iter()
            .zip(forced)
            .filter(|&(&e, &f)| !f && self.jobs_of(e).iter().all(|m| !taken.contains(m)))
            .map(|(&e, _)| e)
            .collect();
        let mut chosen = fixed;
        // Few GPUs left around the fixed entries: the dynamic program is exact, and faster.
        let left: Vec<u32> = capacity.iter().map(|&c| c.round() as u32).collect();
        if let Some(best) = self.table_over(value, free.clone(), &left) {
            chosen.extend(best);
        } else if !self.paired && !free.is_empty() {
            chosen.extend(self.milp_of_alike_jobs(value, &free, &capacity, backend)?);
        } else if !free.is_empty() {
            let (lp, cols, _) = self.milp_model(value, &free, &capacity);
            let mut session = backend.open(lp);
            session.set_integer(&cols, MILP_GAP).ok()?;
            // The idle round (all zero) is a configuration: there is no first one to search for.
            session.skip_feasibility_search();
            self.charge(MILP_WORK);
            let solution = session.solve().ok()?;
            chosen.extend(free.iter().zip(&cols).filter(|&(_, &c)| solution.values[c] > 0.5).map(|(&e, _)| e));
        }
        // Rounded, and kept only if it is a configuration.
        chosen.sort_unstable();
        self.is_configuration(&chosen).then_some(Some(chosen))
    }

    /// The configuration MILP of jobs alone over `free` entries on `capacity` GPUs per type, with
    /// alike jobs (the same GPUs, and the same value on the same types) as one integer column per
    /// type counting how many of them run there: the same optimum as a binary per entry, without
    /// the binaries' symmetry (on repeated rows, hundreds of interchangeable jobs). The chosen
    /// entries, alike jobs taking the counts in turn; `None` when the MILP fails.
    fn milp_of_alike_jobs(
        &self,
        value: &[f64],
        free: &[usize],
        capacity: &[f64],
        backend: crate::lp::Backend,
    ) -> Option<Vec<usize>> {
        use crate::lp::{LinearProgram, Row, Sense};
        use std::collections::BTreeMap;
        if free.is_empty() {
            return Some(Vec::new());
        }
        // Each job's free entries, by type.
        let mut of_job: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for &e in free {
            of_job.entry(self.entries[e].0).or_default().push(e);
        }
        // Alike jobs: by GPUs and (type, value) of their entries, in job order.
        let mut alike: BTreeMap<JobShape, Vec<Vec<usize>>> = BTreeMap::new();
        for mut entries in of_job.into_values() {
            entries.sort_unstable_by_key(|&e| self.entries[e].1);
            let shape = entries.iter().map(|&e| (self.entries[e].1, value[e].to_bits())).collect();
            alike.entry((self.gpus(entries[0]), shape)).or_default().push(entries);
        }
        let mut lp = LinearProgram::new(Sense::Maximize);
        let mut of_type: Vec<Vec<(usize, f64)>> = vec![Vec::new(); capacity.len()];
        let mut counts: Vec<Vec<usize>> = Vec::with_capacity(alike.len());
        for ((gpus, shape), jobs) in &alike {
            let cols: Vec<usize> = shape
                .iter()
                .map(|&(w, bits)| {
                    let col = lp.add_col(f64::from_bits(bits), 0.0, jobs.len() as f64);
                    of_type[w as usize].push((col, *gpus as f64));
                    col
                })
                .collect();
            if cols.len() > 1 {
                lp.add_row(Row::at_most(jobs.len() as f64, cols.iter().map(|&c| (c, 1.0)).collect()));
            }
            counts.push(cols);
        }
        for (coefs, &c) in of_type.into_iter().zip(capacity) {
            if !coefs.is_empty() {
                lp.add_row(Row::at_most(c, coefs));
            }
        }
        let integer: Vec<usize> = counts.iter().flatten().copied().collect();
        let mut session = backend.open(lp);
        session.set_integer(&integer, MILP_GAP).ok()?;
        // The idle round (all zero) is a configuration: there is no first one to search for.
        session.skip_feasibility_search();
        self.charge(MILP_WORK);
        let solution = session.solve().ok()?;
        let mut chosen = Vec::new();
        for (jobs, cols) in alike.values().zip(&counts) {
            let mut next = jobs.iter();
            for (k, &col) in cols.iter().enumerate() {
                let running = solution.values[col].round().max(0.0) as usize;
                chosen.extend(next.by_ref().take(running).map(|entries| entries[k]));
            }
        }
        Some(chosen)
    }

    /// The configuration problem over `valued` entries on `capacity` GPUs per type, as an LP
    /// (integrality is the caller's): the model, each entry's column, and the first of the
    /// types' capacity rows.
    fn milp_model(
        &self,
        value: &[f64],
        valued: &[usize],
        capacity: &[f64],
    ) -> (crate::lp::LinearProgram, Vec<usize>, usize) {
        use crate::lp::{LinearProgram, Row, Sense};
        let mut lp = LinearProgram::new(Sense::Maximize);
        let cols: Vec<usize> = valued.iter().map(|&e| lp.add_col(value[e], 0.0, 1.0)).collect();
        let mut of_job: std::collections::BTreeMap<u32, Vec<(usize, f64)>> = Default::default();
        let mut of_type: Vec<Vec<(usize, f64)>> = vec![Vec::new(); capacity.len()];
        for (&e, &c) in valued.iter().zip(&cols) {
            for &m in self.jobs_of(e) {
                of_job.entry(m).or_default().push((c, 1.0));
            }
            of_type[self.entries[e].1 as usize].push((c, self.gpus(e) as f64));
        }
        for coefs in of_job.into_values().filter(|c| c.len() > 1) {
            lp.add_row(Row::at_most(1.0, coefs));
        }
        let first_type_row = lp.rows.len();
        for (coefs, &c) in of_type.into_iter().zip(capacity) {
            lp.add_row(Row::at_most(c, coefs));
        }
        (lp, cols, first_type_row)
    }

    /// GPU prices from the LP relaxation of the configuration MILP over `valued` (the absolute
    /// values of its capacity rows' duals) and the entries it sets to 1; reused while the values
    /// are the last ones solved for (a sum of throughputs keeps them from pricing to pricing).
    fn relaxed_prices(
        &self,
        value: &[f64],
        valued: &[usize],
        backend: crate::lp::Backend,
    ) -> Option<(Vec<f64>, Vec<usize>)> {
        if let Some(last) = self.relaxed.borrow().as_ref().filter(|r| r.value == value) {
            return Some((last.prices.clone(), last.rounded.clone()));
        }
        let capacity: Vec<f64> = self.capacity.iter().map(|&c| c as f64).collect();
        let (prices, rounded) = match self.decomposed_relaxation(value, valued, &capacity, backend) {
            Some(found) => found,
            None => {
                let (lp, cols, first_type_row) = self.milp_model(value, valued, &capacity);
                self.charge(RELAXATION_WORK);
                let relaxed = backend.solve(lp).ok()?;
                let prices: Vec<f64> = (0..self.capacity.len())
                    .map(|w| relaxed.row_duals.get(first_type_row + w).map_or(0.0, |y| y.abs()))
                    .collect();
                let rounded = valued
                    .iter()
                    .zip(&cols)
                    .filter(|&(_, &c)| relaxed.values[c] > 1.0 - 1e-9)
                    .map(|(&e, _)| e)
                    .collect();
                (prices, rounded)
            }
        };
        *self.relaxed.borrow_mut() =
            Some(Relaxed { value: value.to_vec(), prices: prices.clone(), rounded: rounded.clone() });
        Some((prices, rounded))
    }

    /// The relaxation of jobs alone by price decomposition (`max_weighted_throughput`: a job's
    /// "throughput" on a type is its entry's value, each worth 1, no floors), in time linear in
    /// the entries: its certified GPU prices and the entries it sets to 1. `None` when it does
    /// not certify an optimum (the caller solves the LP).
    fn decomposed_relaxation(
        &self,
        value: &[f64],
        valued: &[usize],
        capacity: &[f64],
        backend: crate::lp::Backend,
    ) -> Option<(Vec<f64>, Vec<usize>)> {
        use crate::solver::max_weighted_throughput as decomposition;
        let mut worth = crate::problem::Matrix::zeros(self.gangs.len(), capacity.len());
        for &e in valued {
            let (g, w) = self.entries[e];
            worth.set(g as usize, w as usize, value[e]);
        }
        let scale_factor: Vec<u32> = self.gangs.iter().map(|g| g.gpus).collect();
        let instance = decomposition::Instance {
            throughput: &worth,
            scale_factor: &scale_factor,
            value: &vec![1.0; self.gangs.len()],
            floor: &vec![0.0; self.gangs.len()],
            usable: capacity.iter().map(|&c| c > 0.0).collect(),
            charge: &vec![0.0; capacity.len()],
        };
        let options = crate::max_min_ratio::DecompositionOptions::default();
        let found = decomposition::solve(&instance, capacity, backend, &options, Default::default()).ok()?.ok()?;
        let whole = |e: usize| {
            let (g, w) = self.entries[e];
            found.allocation.get(g as usize, w as usize) > 1.0 - 1e-9
        };
        let rounded = valued.iter().copied().filter(|&e| whole(e)).collect();
        Some((found.prices, rounded))
    }

    /// The Lagrangian bound of jobs alone at GPU prices `prices`, with each job's best and
    /// second best reduced values.
    fn lagrangian(&self, value: &[f64], valued: &[usize], prices: &[f64]) -> Lagrangian {
        let mut best = vec![(0.0, 0.0, usize::MAX); self.jobs];
        for &e in valued {
            let r = self.reduced(value, prices, e);
            let slot = &mut best[self.jobs_of(e)[0] as usize];
            if r > slot.0 {
                *slot = (r, slot.0, e);
            } else if r > slot.1 {
                slot.1 = r;
            }
        }
        let bound = prices.iter().zip(self.capacity).map(|(p, &c)| p * c as f64).sum::<f64>()
            + best.iter().map(|b| b.0).sum::<f64>();
        Lagrangian { bound, best }
    }

    /// `value_e − λ_w·gpus_e`: entry e's value less its GPUs at the prices.
    fn reduced(&self, value: &[f64], prices: &[f64], e: usize) -> f64 {
        value[e] - prices[self.entries[e].1 as usize] * self.gpus(e) as f64
    }

    /// Lagrangian fixing for the MILP of jobs alone (no pairs): with GPU prices `λ_w ≥ 0` on the
    /// types' capacities, `L = Σ_w λ_w·C_w + Σ_m max(0, max_e r_e)`, `r_e = value_e − λ_w·gpus_e`
    /// over job m's entries, bounds every configuration (each job picks its best entry alone).
    /// Choosing entry e of job m costs at least `μ_m − r_e` of it, so e is left out when
    /// `L − (μ_m − r_e)` cannot exceed `threshold`; a job's best entry is fixed in when going
    /// without it (down to its second best, or idle) leaves no configuration above `threshold`.
    /// Valid for any prices; the LP relaxation's make it tight.
    fn fixing(
        &self,
        value: &[f64],
        valued: &[usize],
        prices: &[f64],
        lagrangian: &Lagrangian,
        threshold: f64,
    ) -> Fixing {
        let Lagrangian { bound, ref best } = *lagrangian;
        // Below what the tolerances can tell apart, nothing is fixed.
        let slack = 1e-9 * bound.abs().max(threshold.abs()).max(1.0);
        if bound < threshold - slack {
            return Fixing::NoneBetter(bound);
        }
        let (mut kept, mut forced) = (Vec::new(), Vec::new());
        for &e in valued {
            let (top, second, at) = best[self.jobs_of(e)[0] as usize];
            if bound - (top - self.reduced(value, prices, e)) < threshold - slack {
                continue;
            }
            kept.push(e);
            forced.push(at == e && bound - (top - second) < threshold - slack);
        }
        Fixing::Reduced { kept, forced }
    }

    /// Whether `chosen` entries are one round: each job at most once, each type within its GPUs.
    pub fn is_configuration(&self, chosen: &[usize]) -> bool {
        let runs = chosen.iter().map(|&e| (self.gangs[self.entries[e].0 as usize], self.entries[e].1));
        one_round(runs, self.jobs, self.capacity).is_ok()
    }

    /// The best configuration by a dynamic program over jobs whose state is the GPUs used on
    /// every type, exact; `None` when its table is past `TABLE_WORK`, or with pairs (a job's
    /// entries are then not one gang's).
    fn table(&self, value: &[f64]) -> Option<Vec<usize>> {
        let valued: Vec<usize> = self.by_type.iter().flatten().copied().filter(|&e| value[e] > VALUE_TOL).collect();
        self.table_over(value, valued, self.capacity)
    }

    /// The best set of `valued` entries (jobs alone) within `capacity` GPUs per type, each job at
    /// most once, by the dynamic program over the GPUs used on every type; `None` with pairs or
    /// when the table's work would pass `TABLE_WORK`.
    fn table_over(&self, value: &[f64], mut valued: Vec<usize>, capacity: &[u32]) -> Option<Vec<usize>> {
        if self.paired {
            return None;
        }
        let mut states = 1usize;
        let mut stride = Vec::with_capacity(capacity.len());
        for &c in capacity {
            stride.push(states);
            states = states.checked_mul(c as usize + 1)?;
        }
        // Per job (entries come job by job), its valued entries that fit.
        valued.sort_unstable();
        let jobs: Vec<&[usize]> = valued.chunk_by(|&a, &b| self.entries[a].0 == self.entries[b].0).collect();
        if states.checked_mul(valued.len().max(1))? > TABLE_WORK {
            return None;
        }
        // GPUs used on each type, per state.
        let used = |state: usize, w: usize| state / stride[w] % (capacity[w] as usize + 1);
        let mut best = vec![f64::NEG_INFINITY; states];
        best[0] = 0.0;
        // Per job and state: which of its entries (1-based) reached the state, 0 for none.
        let mut choice = vec![0u8; jobs.len() * states];
        for (j, job) in jobs.iter().enumerate() {
            let mut next = best.clone();
            for (state, &v) in best.iter().enumerate() {
                if v == f64::NEG_INFINITY {
                    continue;
                }
                for (k, &e) in job.iter().enumerate() {
                    let (w, sf) = (self.entries[e].1 as usize, self.gpus(e) as usize);
                    if used(state, w) + sf > capacity[w] as usize {
                        continue;
                    }
                    let to = state + sf * stride[w];
                    if v + value[e] > next[to] {
                        next[to] = v + value[e];
                        choice[j * states + to] = k as u8 + 1;
                    }
                }
            }
            best = next;
        }
        let (mut state, _) = best.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))?;
        let mut chosen = Vec::new();
        for (j, job) in jobs.iter().enumerate().rev() {
            let k = choice[j * states + state] as usize;
            if k > 0 {
                let e = job[k - 1];
                state -= self.gpus(e) as usize * stride[self.entries[e].1 as usize];
                chosen.push(e);
            }
        }
        Some(chosen)
    }

    /// Best-first branch and bound: a node forbids entries, its per-type knapsacks bound its
    /// subtree, and a job chosen on several types keeps one of them in each child.
    fn branch_and_bound(&self, value: &[f64], floor: f64, root_bound: f64, node_budget: usize) -> Priced {
        let mut open = std::collections::BinaryHeap::new();
        open.push(Node { bound: root_bound, forbidden: Vec::new() });
        let mut mask = vec![false; self.entries.len()];
        let mut nodes = 0;
        while let Some(node) = open.pop() {
            if node.bound <= floor {
                break;
            }
            if nodes >= node_budget {
                return Priced { column: None, bound: node.bound };
            }
            nodes += 1;
            for &e in &node.forbidden {
                mask[e] = true;
            }
            let sets = self.relaxation(value, &mask);
            for &e in &node.forbidden {
                mask[e] = false;
            }
            let node_value: f64 = sets.iter().map(|k| k.value).sum();
            if node_value <= floor {
                continue;
            }
            let conflicts = self.conflicts(value, &sets);
            let Some((_, shared)) = conflicts.first() else {
                let column = self.complete(value, sets.into_iter().flat_map(|k| k.entries).collect());
                return Priced { column: Some(column), bound: root_bound };
            };
            for &keep in shared {
                let mut forbidden = node.forbidden.clone();
                forbidden.extend(shared.iter().copied().filter(|&e| e != keep));
                open.push(Node { bound: node_value, forbidden });
            }
        }
        Priced { column: None, bound: floor }
    }

    /// Per type, the best set ignoring that a job runs on one type only (`forbidden` entries out).
    fn relaxation(&self, value: &[f64], forbidden: &[bool]) -> Vec<Knapsack> {
        (0..self.capacity.len())
            .map(|w| {
                let items: Vec<(u32, f64, usize)> = self.by_type[w]
                    .iter()
                    .filter(|&&e| value[e] > VALUE_TOL && !forbidden[e])
                    .map(|&e| (self.gpus(e), value[e], e))
                    .collect();
                knapsack(self.capacity[w], items)
            })
            .collect()
    }

    /// Jobs chosen more than once (on two types, or alone and in a pair), with the entries they
    /// were chosen by.
    fn conflicts(&self, value: &[f64], sets: &[Knapsack]) -> Vec<(u32, Vec<usize>)> {
        let mut chosen: Vec<(u32, usize)> = sets
            .iter()
            .flat_map(|k| k.entries.iter().flat_map(|&e| self.jobs_of(e).iter().map(move |&m| (m, e))))
            .collect();
        chosen.sort_unstable();
        let mut out: Vec<(u32, Vec<usize>)> = Vec::new();
        for group in chosen.chunk_by(|a, b| a.0 == b.0) {
            if group.len() > 1 {
                out.push((group[0].0, group.iter().map(|&(_, e)| e).collect()));
            }
        }
        // The most valuable conflict first: branching on it moves the bound most.
        let worth = |es: &Vec<usize>| es.iter().map(|&e| value[e]).sum::<f64>();
        out.sort_by(|a, b| worth(&b.1).total_cmp(&worth(&a.1)).then(a.0.cmp(&b.0)));
        out
    }

    /// A column made maximal: GPUs it leaves free go to jobs it does not run (with no value now,
    /// most time asked first), which costs nothing and supplies entries later iterations price.
    fn complete(&self, value: &[f64], chosen: Vec<usize>) -> Column {
        let chosen = self.fill_in(chosen, &self.by_order(self.requested));
        Column { value: chosen.iter().map(|&e| value[e]).sum(), entries: chosen }
    }

    /// Every entry, greatest `order` first (ties: lower entry): the order `fill_in` takes.
    pub fn by_order(&self, order: &[f64]) -> Vec<usize> {
        let mut sorted: Vec<usize> = (0..self.entries.len()).collect();
        sorted.sort_by(|&a, &b| order[b].total_cmp(&order[a]).then(a.cmp(&b)));
        sorted
    }

    /// [`fill_in`](Pricing::fill_in) for many configurations down one order (`sorted`).
    pub fn filling(&self, sorted: &[usize]) -> Filling<'a> {
        let types = self.capacity.len();
        // Per position, the fewest GPUs an entry from there on takes on each type.
        let mut fewest = vec![u32::MAX; (sorted.len() + 1) * types];
        for (i, &e) in sorted.iter().enumerate().rev() {
            let (here, next) = fewest.split_at_mut((i + 1) * types);
            here[i * types..].copy_from_slice(&next[..types]);
            let w = self.entries[e].1 as usize;
            here[i * types + w] = here[i * types + w].min(self.gpus(e));
        }
        let walk = sorted
            .iter()
            .map(|&e| {
                let jobs = self.jobs_of(e);
                Step {
                    entry: e,
                    worker_type: self.entries[e].1,
                    gpus: self.gpus(e),
                    jobs: [jobs[0], jobs.get(1).copied().unwrap_or(NO_JOB)],
                }
            })
            .collect();
        Filling { entries: self.entries, gangs: self.gangs, capacity: self.capacity, jobs: self.jobs, walk, fewest }
    }

    /// `chosen` with the GPUs it leaves free given to jobs it does not run, down `sorted` (every
    /// entry, in the order to try them); sorted.
    pub fn fill_in(&self, chosen: Vec<usize>, sorted: &[usize]) -> Vec<usize> {
        self.filling(sorted).fill(chosen)
    }
}

/// Configurations filled down one order of the entries (`Pricing::filling`): the walk down the
/// order stops where no entry left fits the GPUs still free.
pub struct Filling<'a> {
    entries: &'a [(u32, u32)],
    gangs: &'a [Gang],
    capacity: &'a [u32],
    jobs: usize,
    /// The entries in the order, with what the walk reads of each.
    walk: Vec<Step>,
    /// `fewest[i·types + w]`: the fewest GPUs an entry at position i or later takes on type w.
    fewest: Vec<u32>,
}

/// One entry of a `Filling`'s walk: its type, GPUs and jobs (`NO_JOB` second for a job alone).
struct Step {
    entry: usize,
    worker_type: u32,
    gpus: u32,
    jobs: [u32; 2],
}

/// The second job of a `Step` that runs one.
const NO_JOB: u32 = u32::MAX;

impl Filling<'_> {
    /// `chosen` with the GPUs it leaves free given to jobs it does not run, down the order (most
    /// valued first: the first entry that fits, of a job not running, is taken); sorted.
    pub fn fill(&self, mut chosen: Vec<usize>) -> Vec<usize> {
        let types = self.capacity.len();
        let given = chosen.len();
        let mut running = vec![false; self.jobs];
        let mut free: Vec<u32> = self.capacity.to_vec();
        for &e in &chosen {
            let gang = &self.gangs[self.entries[e].0 as usize];
            for &m in gang.jobs() {
                running[m as usize] = true;
            }
            let w = self.entries[e].1 as usize;
            free[w] = free[w].saturating_sub(gang.gpus);
        }
        let idle = |running: &[bool], m: u32| m == NO_JOB || !running[m as usize];
        for (i, step) in self.walk.iter().enumerate() {
            let w = step.worker_type as usize;
            if step.gpus <= free[w] && idle(&running, step.jobs[0]) && idle(&running, step.jobs[1]) {
                for m in step.jobs.into_iter().filter(|&m| m != NO_JOB) {
                    running[m as usize] = true;
                }
                free[w] -= step.gpus;
                chosen.push(step.entry);
            } else if step.gpus > free[w] {
                // Nothing from here on fits any type's free GPUs: the walk is over.
                let fewest = &self.fewest[i * types..(i + 1) * types];
                if free.iter().zip(fewest).all(|(&f, &least)| f < least) {
                    break;
                }
            }
        }
        // The given entries are in order when they come from a configuration: the new ones
        // sorted, then the two runs merged (a stable sort's linear merge of two runs).
        chosen[given..].sort_unstable();
        chosen.sort();
        chosen
    }
}

/// A subtree of the branch and bound: the entries it forbids, and its parent's bound.
struct Node {
    bound: f64,
    forbidden: Vec<usize>,
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        self.bound.total_cmp(&other.bound).is_eq()
    }
}
impl Eq for Node {}
impl PartialOrd for Node {
    fn partial_cmp(&self, other: &Node) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Node {
    fn cmp(&self, other: &Node) -> std::cmp::Ordering {
        self.bound.total_cmp(&other.bound)
    }
}

/// 0/1 knapsack of `(scale factor, value, entry)` items into `capacity` GPUs, exact. Items of one
/// scale factor are interchangeable but for their values, so the best `k` of them are the `k`
/// most valuable: a dynamic program over scale factors and GPUs used, choosing how many of each.
fn knapsack(capacity: u32, mut items: Vec<(u32, f64, usize)>) -> Knapsack {
    let total: u64 = items.iter().map(|i| i.0 as u64).sum();
    if total <= capacity as u64 {
        let value = items.iter().map(|i| i.1).sum();
        return Knapsack { value, entries: items.into_iter().map(|i| i.2).collect() };
    }
    items.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
    let cap = capacity as usize;
    let mut best = vec![0.0f64; cap + 1];
    let mut choices: Vec<Vec<u32>> = Vec::new();
    let groups: Vec<&[(u32, f64, usize)]> = items.chunk_by(|a, b| a.0 == b.0).collect();
    for group in &groups {
        let s = group[0].0 as usize;
        let mut prefix = Vec::with_capacity(group.len() + 1);
        prefix.push(0.0);
        for item in group.iter() {
            prefix.push(prefix.last().copied().unwrap_or(0.0) + item.1);
        }
        let mut next = best.clone();
        let mut choice = vec![0u32; cap + 1];
        for c in s..=cap {
            let most = group.len().min(c / s);
            for k in 1..=most {
                let v = best[c - k * s] + prefix[k];
                if v > next[c] {
                    next[c] = v;
                    choice[c] = k as u32;
                }
            }
        }
        best = next;
        choices.push(choice);
    }
    let mut entries = Vec::new();
    let mut c = cap;
    for (group, choice) in groups.iter().zip(&choices).rev() {
        let k = choice[c] as usize;
        entries.extend(group[..k].iter().map(|i| i.2));
        c -= k * group[0].0 as usize;
    }
    Knapsack { value: best[cap], entries }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded stream of pseudo-random numbers (a linear congruential generator).
    fn stream(mut seed: u64) -> impl FnMut() -> u32 {
        move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        }
    }

    /// Every subset, for small instances.
    fn brute(capacity: u32, items: &[(u32, f64, usize)]) -> f64 {
        let mut best: f64 = 0.0;
        for set in 0u32..(1 << items.len()) {
            let (mut used, mut value) = (0, 0.0);
            for (i, item) in items.iter().enumerate() {
                if set >> i & 1 == 1 {
                    used += item.0;
                    value += item.1;
                }
            }
            if used <= capacity {
                best = best.max(value);
            }
        }
        best
    }

    /// Every configuration (each entry in or out, each job at most once), for small instances.
    fn every_configuration(pricing: &Pricing, value: &[f64]) -> f64 {
        fn go(pricing: &Pricing, value: &[f64], e: usize, used: &mut Vec<u32>, taken: &mut Vec<bool>) -> f64 {
            if e == pricing.entries.len() {
                return 0.0;
            }
            let skip = go(pricing, value, e + 1, used, taken);
            let w = pricing.entries[e].1 as usize;
            let sf = pricing.gpus(e);
            if pricing.jobs_of(e).iter().any(|&m| taken[m as usize]) || used[w] + sf > pricing.capacity[w] {
                return skip;
            }
            for &m in pricing.jobs_of(e) {
                taken[m as usize] = true;
            }
            used[w] += sf;
            let with = value[e] + go(pricing, value, e + 1, used, taken);
            for &m in pricing.jobs_of(e) {
                taken[m as usize] = false;
            }
            used[w] -= sf;
            skip.max(with)
        }
        let mut used = vec![0; pricing.capacity.len()];
        let mut taken = vec![false; pricing.jobs];
        go(pricing, value, 0, &mut used, &mut taken)
    }

    /// A random instance of jobs alone: 1–3 types of 1–8 GPUs, 1 to `most_jobs` jobs of scale
    /// factor 1, 2 or 4, three quarters of the (job, type) entries, values from a few levels on
    /// even cases (ties common) and spread on odd ones.
    fn jobs_alone(next: &mut impl FnMut() -> u32, case: usize, most_jobs: usize) -> JobsAlone {
        let types = 1 + next() as usize % 3;
        let capacity: Vec<u32> = (0..types).map(|_| 1 + next() % 8).collect();
        let jobs = 1 + next() as usize % most_jobs;
        let scale_factors: Vec<u32> = (0..jobs).map(|_| [1, 1, 2, 4][next() as usize % 4]).collect();
        let entries: Vec<(u32, u32)> = (0..jobs as u32)
            .flat_map(|m| (0..types as u32).map(move |w| (m, w)))
            .filter(|_| !next().is_multiple_of(4))
            .collect();
        let value: Vec<f64> = entries
            .iter()
            .map(|_| {
                if case.is_multiple_of(2) {
                    [0.0, 0.5, 1.0][next() as usize % 3]
                } else {
                    (next() % 1000) as f64 / 997.0
                }
            })
            .collect();
        (capacity, scale_factors, entries, value)
    }

    /// `(capacity, scale factors, entries, values)` of a random instance.
    type JobsAlone = (Vec<u32>, Vec<u32>, Vec<(u32, u32)>, Vec<f64>);

    /// A configuration's value, checked to be one round.
    fn value_of(pricing: &Pricing, value: &[f64], chosen: &[usize]) -> f64 {
        let mut used = vec![0; pricing.capacity.len()];
        let mut jobs: Vec<u32> = chosen.iter().flat_map(|&e| pricing.jobs_of(e).to_vec()).collect();
        for &e in chosen {
            used[pricing.entries[e].1 as usize] += pricing.gpus(e);
        }
        jobs.sort_unstable();
        assert!(jobs.windows(2).all(|p| p[0] != p[1]), "a job twice: {chosen:?}");
        assert!(used.iter().zip(pricing.capacity).all(|(u, c)| u <= c), "over capacity: {chosen:?}");
        assert!(pricing.is_configuration(chosen));
        chosen.iter().map(|&e| value[e]).sum()
    }

    /// The table, branch and bound and `price` agree with every configuration, values drawn from
    /// a few levels so that ties (the master's degenerate duals) are common.
    #[test]
    fn table_and_branch_and_bound_match_every_configuration() {
        let mut next = stream(11);
        for case in 0..300 {
            let (capacity, scale_factors, entries, value) = jobs_alone(&mut next, case, 8);
            let requested = vec![0.5; entries.len()];
            let gangs = Gang::singles(&scale_factors);
            let pricing = Pricing::new(&entries, &gangs, &capacity, &requested);
            let best = every_configuration(&pricing, &value);
            let table = pricing.table(&value).expect("a small table");
            assert!((value_of(&pricing, &value, &table) - best).abs() < 1e-9, "table, case {case}");
            // Branch and bound finds a configuration above its floor, or proves there is none.
            let found = pricing.branch_and_bound(&value, best - 1e-6, f64::INFINITY, usize::MAX);
            let column = found.column.expect("a configuration above the floor");
            assert!(value_of(&pricing, &value, &column.entries) > best - 1e-6, "branch and bound, case {case}");
            let proved = pricing.branch_and_bound(&value, best + 1e-9, f64::INFINITY, usize::MAX);
            assert!(proved.column.is_none() && proved.bound <= best + 1e-9, "branch and bound, case {case}");
            let below = pricing.price(&value, best - 1e-6, 0);
            assert!(below.column.is_some_and(|c| value_of(&pricing, &value, &c.entries) > best - 1e-6), "case {case}");
            let at = pricing.price(&value, best + 1e-9, 0);
            assert!(at.column.is_none() && at.bound <= best + 1e-9, "case {case}: {at:?} vs {best}");
        }
    }

    /// With colocated pairs (a job alone and in pairs, on one or several types), branch and
    /// bound and `price` agree with every configuration; the table declines.
    #[test]
    fn pairs_are_priced_exactly() {
        let mut next = stream(23);
        let mut with_pairs = 0;
        for case in 0..300 {
            let types = 1 + next() as usize % 3;
            let capacity: Vec<u32> = (0..types).map(|_| 1 + next() % 6).collect();
            let jobs = 2 + next() as usize % 6;
            let scale_factors: Vec<u32> = (0..jobs).map(|_| [1, 1, 2][next() as usize % 3]).collect();
            let mut gangs = Gang::singles(&scale_factors);
            for a in 0..jobs as u32 {
                for b in a + 1..jobs as u32 {
                    if scale_factors[a as usize] == scale_factors[b as usize] && next().is_multiple_of(3) {
                        gangs.push(Gang::pair([a, b], scale_factors[a as usize]));
                    }
                }
            }
            with_pairs += usize::from(gangs.len() > jobs);
            let entries: Vec<(u32, u32)> = (0..gangs.len() as u32)
                .flat_map(|g| (0..types as u32).map(move |w| (g, w)))
                .filter(|_| !next().is_multiple_of(3))
                .collect();
            let value: Vec<f64> = entries.iter().map(|_| [0.0, 0.5, 1.0, 1.5][next() as usize % 4]).collect();
            let requested = vec![0.5; entries.len()];
            let pricing = Pricing::new(&entries, &gangs, &capacity, &requested);
            let best = every_configuration(&pricing, &value);
            if gangs.len() > jobs {
                assert!(pricing.table(&value).is_none());
            }
            let found = pricing.branch_and_bound(&value, best - 1e-6, f64::INFINITY, usize::MAX);
            let column = found.column.expect("a configuration above the floor");
            assert!(value_of(&pricing, &value, &column.entries) > best - 1e-6, "case {case}");
            let proved = pricing.branch_and_bound(&value, best + 1e-9, f64::INFINITY, usize::MAX);
            assert!(proved.column.is_none() && proved.bound <= best + 1e-9, "case {case}");
            let below = pricing.price(&value, best - 1e-6, usize::MAX);
            assert!(below.column.is_some_and(|c| value_of(&pricing, &value, &c.entries) > best - 1e-6), "case {case}");
            let at = pricing.price(&value, best + 1e-9, usize::MAX);
            assert!(at.column.is_none() && at.bound <= best + 1e-9, "case {case}: {at:?} vs {best}");
        }
        assert!(with_pairs > 200, "{with_pairs}");
    }

    /// The MILP with Lagrangian fixing and its cores (jobs alone) finds the best configuration
    /// above a threshold, or proves there is none with a bound at most the threshold, on every
    /// random instance: thresholds below the best, at it, and far below (where fixing keeps
    /// almost everything). Values from a few levels, so ties are common.
    #[test]
    fn the_milp_with_fixing_matches_every_configuration() {
        let backend = crate::lp::Backend::default();
        if !backend.solves_integer_programs() {
            return;
        }
        let mut next = stream(31);
        for case in 0..300 {
            let (capacity, scale_factors, entries, value) = jobs_alone(&mut next, case, 9);
            let requested = vec![0.5; entries.len()];
            let gangs = Gang::singles(&scale_factors);
            let pricing = Pricing::new(&entries, &gangs, &capacity, &requested);
            let best = every_configuration(&pricing, &value);
            for threshold in [best - 1e-6, best * 0.5 - 1e-6, best + 1e-9] {
                let Some(Priced { column, bound }) = pricing.best_by_milp(&value, threshold, backend) else {
                    panic!("case {case}: {entries:?} {value:?} {capacity:?} {scale_factors:?} {threshold}")
                };
                match column {
                    Some(chosen) => {
                        let got = value_of(&pricing, &value, &chosen.entries);
                        assert!(
                            (got - best).abs() < 1e-7 && (bound - got).abs() < 1e-9,
                            "case {case}: {got} vs {best}"
                        );
                    }
                    None => assert!(
                        best <= threshold + 1e-9 && bound <= threshold + 1e-9,
                        "case {case}: {best} > {threshold}"
                    ),
                }
            }
        }
    }

    /// Alike jobs (copies of one job's entries and values) as integer counts: the MILP's best
    /// is every configuration's best, and what it chooses is one round.
    #[test]
    fn the_milp_of_alike_jobs_matches_every_configuration() {
        let backend = crate::lp::Backend::default();
        if !backend.solves_integer_programs() {
            return;
        }
        let mut next = stream(43);
        let mut aggregated = 0;
        for case in 0..300 {
            let (capacity, base_factors, base_entries, base_value) = jobs_alone(&mut next, case, 4);
            // Each job repeated 1 to 3 times, entries and values alike.
            let (mut scale_factors, mut entries, mut value) = (Vec::new(), Vec::new(), Vec::new());
            for (m, &sf) in base_factors.iter().enumerate() {
                for _ in 0..1 + next() % 3 {
                    let job = scale_factors.len() as u32;
                    scale_factors.push(sf);
                    for (e, &(g, w)) in base_entries.iter().enumerate().filter(|(_, &(g, _))| g == m as u32) {
                        entries.push((job, w));
                        value.push(base_value[e]);
                        debug_assert_eq!(g, m as u32);
                    }
                }
            }
            aggregated += usize::from(scale_factors.len() > base_factors.len());
            let requested = vec![0.5; entries.len()];
            let gangs = Gang::singles(&scale_factors);
            let pricing = Pricing::new(&entries, &gangs, &capacity, &requested);
            let best = every_configuration(&pricing, &value);
            let valued: Vec<usize> =
                pricing.by_type.iter().flatten().copied().filter(|&e| value[e] > VALUE_TOL).collect();
            let gpus: Vec<f64> = capacity.iter().map(|&c| c as f64).collect();
            let mut chosen = pricing.milp_of_alike_jobs(&value, &valued, &gpus, backend).expect("solves");
            chosen.sort_unstable();
            let got = value_of(&pricing, &value, &chosen);
            assert!((got - best).abs() < 1e-7, "case {case}: {got} vs {best}");
        }
        assert!(aggregated > 200, "{aggregated}");
    }

    /// The fill by its definition: down the order, every entry of a job not yet running that
    /// fits its type's free GPUs is taken.
    fn naive_fill(pricing: &Pricing, mut chosen: Vec<usize>, sorted: &[usize]) -> Vec<usize> {
        let mut running = vec![false; pricing.jobs];
        let mut free: Vec<u32> = pricing.capacity.to_vec();
        for &e in &chosen {
            pricing.jobs_of(e).iter().for_each(|&m| running[m as usize] = true);
            free[pricing.entries[e].1 as usize] -= pricing.gpus(e);
        }
        for &e in sorted {
            let w = pricing.entries[e].1 as usize;
            if pricing.jobs_of(e).iter().all(|&m| !running[m as usize]) && pricing.gpus(e) <= free[w] {
                pricing.jobs_of(e).iter().for_each(|&m| running[m as usize] = true);
                free[w] -= pricing.gpus(e);
                chosen.push(e);
            }
        }
        chosen.sort_unstable();
        chosen
    }

    /// Filling many configurations down one order gives what the definition gives each, with
    /// colocated pairs among the gangs in half the cases.
    #[test]
    fn filling_matches_its_definition() {
        let mut next = stream(47);
        for case in 0..300 {
            let (capacity, scale_factors, mut entries, _) = jobs_alone(&mut next, case, 9);
            let mut gangs = Gang::singles(&scale_factors);
            if case % 2 == 1 {
                let jobs = scale_factors.len() as u32;
                for a in 0..jobs {
                    for b in a + 1..jobs {
                        if scale_factors[a as usize] == scale_factors[b as usize] && next().is_multiple_of(3) {
                            let g = gangs.len() as u32;
                            gangs.push(Gang::pair([a, b], scale_factors[a as usize]));
                            entries.extend((0..capacity.len() as u32).map(|w| (g, w)));
                        }
                    }
                }
            }
            let requested = vec![0.5; entries.len()];
            let pricing = Pricing::new(&entries, &gangs, &capacity, &requested);
            let random_order = |next: &mut dyn FnMut() -> u32| {
                let keys: Vec<f64> = entries.iter().map(|_| next() as f64).collect();
                pricing.by_order(&keys)
            };
            let filling = pricing.filling(&random_order(&mut next));
            let sorted = filling.walk.iter().map(|s| s.entry).collect::<Vec<_>>();
            for _ in 0..4 {
                // A configuration: part of a full one.
                let full = naive_fill(&pricing, Vec::new(), &random_order(&mut next));
                let part: Vec<usize> = full.into_iter().filter(|_| next().is_multiple_of(2)).collect();
                assert!(pricing.is_configuration(&part));
                assert_eq!(filling.fill(part.clone()), naive_fill(&pricing, part, &sorted), "case {case}");
            }
        }
    }

    #[test]
    fn knapsack_matches_every_subset() {
        let mut next = stream(7);
        for _ in 0..300 {
            let capacity = 1 + next() % 9;
            let n = 1 + next() as usize % 10;
            let items: Vec<(u32, f64, usize)> =
                (0..n).map(|i| ([1, 1, 2, 4, 3][next() as usize % 5], (next() % 1000) as f64 / 100.0, i)).collect();
            let k = knapsack(capacity, items.clone());
            let used: u32 = k.entries.iter().map(|&e| items[e].0).sum();
            let value: f64 = k.entries.iter().map(|&e| items[e].1).sum();
            assert!(used <= capacity);
            assert!((value - k.value).abs() < 1e-9);
            assert!((k.value - brute(capacity, &items)).abs() < 1e-9, "{capacity} {items:?}");
        }
    }
}
