//! What a caller states to the engine: the instance (who runs where, how fast, on how many GPUs),
//! each job's need, the program (shared variables, objective, options) and its solution.

use super::class::ClassShape;
use crate::lp::Sense;
use crate::problem::Matrix;
use crate::space_sharing::Pair;

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

/// A job's required throughput: `base + Σ (var, coef)`. Every program here gives a job at most
/// one term, which is kept inline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Need {
    pub base: f64,
    pub terms: Terms,
}

/// A need's `(var, coef)` terms.
pub type Terms = smallvec::SmallVec<[(usize, f64); 1]>;

impl Need {
    pub(super) fn is_zero(&self) -> bool {
        self.base == 0.0 && self.terms.iter().all(|&(_, c)| c == 0.0)
    }
    pub(super) fn value(&self, vars: &[f64]) -> f64 {
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
    /// Keep the model for the next program with as many shared variables and the same sense, and
    /// re-solve it from its last basis there (only the needs, the variables' costs and bounds and
    /// the time values that changed are sent). Every job then sits in its class's rows, so the
    /// model's shape never changes (one with no need still gets no time from the split).
    pub keep_model: bool,
    /// Solve to a feasibility tolerance of 1e-9 instead of the solver's 1e-7: for programs whose
    /// optimum becomes the next one's floors (water-filling's levels, the tie-break).
    pub precise: bool,
    /// Split the class totals into a per-job allocation now. When false the split is deferred
    /// (`Solved::allocation` is 0 × 0): `Engine::last_allocation` does it for the last such
    /// program (water-filling splits once, after its last level).
    pub allocate: bool,
    /// The objective's value of a unit of job m's throughput, for objectives over the allocation
    /// itself (the tie-break's `Σ thr_m/thr_equal_m`): a unit of its time on type w is worth
    /// `T[m][w]·throughput_value[m]`. It must be the same for every job of a class (it is read
    /// from the class's first job). `None`: 0. With it, the class time the split leaves over is
    /// handed out too (`fill_class`).
    pub throughput_value: Option<Vec<f64>>,
    /// The kept model's last optimum stays feasible for this program (the needs are the last
    /// program's; only the objective and bounds that hold that optimum changed): re-solve from
    /// its basis by the primal simplex instead of from the slack basis, with the classes' orders
    /// by need found for it.
    pub from_last_optimum: bool,
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
            precise: false,
            allocate: true,
            throughput_value: None,
            from_last_optimum: false,
        }
    }

    /// What a kept model must match: the sense and the number of shared variables.
    pub(super) fn signature(&self) -> (Sense, usize) {
        (self.sense, self.cost.len())
    }

    /// The objective's value of a unit of the class's time on type `w`.
    pub(super) fn time_value(&self, shape: &ClassShape, w: usize) -> f64 {
        self.throughput_value.as_ref().map_or(0.0, |value| shape.row[w] * value[shape.jobs[0]])
    }

    /// The variables' values at which the needs are settled before the first solve, when every
    /// variable in a need is fixed, or is worth nothing and only raises needs as it grows (the
    /// tie-break's `z`, bounded below by the floors' level): an optimum then has it at its lower
    /// bound. Every class's top-k conditions at those needs are known up front
    /// (`Class::conditions`) and enter the model before it is solved.
    pub(super) fn settled_vars(&self) -> Option<Vec<f64>> {
        let (lower, upper) = (&self.lower, &self.upper);
        let settles = |v: usize, c: f64| {
            c == 0.0 || lower[v] == upper[v] || (c > 0.0 && self.cost[v] == 0.0 && lower[v].is_finite())
        };
        let settled = self.needs.iter().flat_map(|n| &n.terms).all(|&(v, c)| settles(v, c));
        settled.then(|| lower.iter().map(|&l| if l.is_finite() { l } else { 0.0 }).collect())
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

/// One water-filling level solved by the price decomposition (`Engine::raise_floors`).
#[derive(Debug, Clone)]
pub struct Raised {
    /// The largest common rise `c`: every job gets `floor_m + c·rate_m`. Negative when the floors
    /// cannot all be met (a probe past the reachable level).
    pub c: f64,
    /// An allocation that gives it (no pairs, no unconsolidated time: the decomposition
    /// formulates neither).
    pub allocation: Matrix,
    /// The jobs whose need row has a positive dual: they sit at their need in every optimum.
    pub binding: Vec<bool>,
    pub lp_solves: usize,
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
