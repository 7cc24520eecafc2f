//! The solver layer: one small LP model type and one narrow session interface over the backends.
//! Policies build a `LinearProgram`, open a `Session` on a `Backend`, and may add rows and re-solve
//! (the backend keeps its basis, so a re-solve is a hot start). Failures are errors, never fallbacks.

#[cfg(feature = "highs")]
mod highs;
#[cfg(feature = "microlp")]
mod microlp;

use std::fmt;
use std::time::{Duration, Instant};

#[cfg(not(any(feature = "highs", feature = "microlp")))]
compile_error!("enable at least one LP backend feature: `highs` (default) or `microlp`");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sense {
    Minimize,
    Maximize,
}

/// A constraint `lower ≤ Σ coef·x[col] ≤ upper` (use ±∞ for a one-sided row).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub lower: f64,
    pub upper: f64,
    pub coefs: Vec<(usize, f64)>,
}

impl Row {
    /// The row divided by its largest coefficient magnitude, and that divisor: backends treat
    /// tiny coefficients as zero, so rows are equilibrated before they are handed over.
    pub fn equilibrated(&self) -> (Row, f64) {
        let scale = self.coefs.iter().map(|&(_, v)| v.abs()).fold(0.0, f64::max);
        if scale == 0.0 || !scale.is_finite() {
            return (self.clone(), 1.0);
        }
        let coefs = self.coefs.iter().map(|&(c, v)| (c, v / scale)).collect();
        (Row { lower: self.lower / scale, upper: self.upper / scale, coefs }, scale)
    }

    pub fn at_most(upper: f64, coefs: Vec<(usize, f64)>) -> Row {
        Row { lower: f64::NEG_INFINITY, upper, coefs }
    }
    pub fn at_least(lower: f64, coefs: Vec<(usize, f64)>) -> Row {
        Row { lower, upper: f64::INFINITY, coefs }
    }
    pub fn equal(value: f64, coefs: Vec<(usize, f64)>) -> Row {
        Row { lower: value, upper: value, coefs }
    }
}

/// A linear program in column-bounds / row-bounds form.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearProgram {
    pub sense: Sense,
    pub cost: Vec<f64>,
    pub col_lower: Vec<f64>,
    pub col_upper: Vec<f64>,
    pub rows: Vec<Row>,
}

impl LinearProgram {
    pub fn new(sense: Sense) -> LinearProgram {
        LinearProgram { sense, cost: Vec::new(), col_lower: Vec::new(), col_upper: Vec::new(), rows: Vec::new() }
    }

    /// Adds a column with objective coefficient `cost` and bounds `[lower, upper]`; returns its index.
    pub fn add_col(&mut self, cost: f64, lower: f64, upper: f64) -> usize {
        self.cost.push(cost);
        self.col_lower.push(lower);
        self.col_upper.push(upper);
        self.cost.len() - 1
    }

    pub fn add_row(&mut self, row: Row) -> usize {
        self.rows.push(row);
        self.rows.len() - 1
    }

    pub fn num_cols(&self) -> usize {
        self.cost.len()
    }
}

/// Column values and objective of an optimal solution.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    pub values: Vec<f64>,
    pub objective: f64,
    /// The dual value of every row, when the backend reports them (empty otherwise). A row with
    /// a nonzero dual is binding: it is tight in every optimal solution.
    pub row_duals: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SolveError {
    Infeasible,
    Unbounded,
    /// The solve budget ran out.
    TimeLimit,
    /// The backend stopped without an optimal solution (time limit, numerical trouble, ...).
    Failed(String),
}

impl fmt::Display for SolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SolveError::Infeasible => f.write_str("the LP is infeasible"),
            SolveError::Unbounded => f.write_str("the LP is unbounded"),
            SolveError::TimeLimit => f.write_str("the solve budget ran out"),
            SolveError::Failed(why) => write!(f, "the LP solver failed: {why}"),
        }
    }
}

impl std::error::Error for SolveError {}

/// A column to add to a loaded model: its cost, bounds and `(row, coefficient)` entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Col {
    pub cost: f64,
    pub lower: f64,
    pub upper: f64,
    pub entries: Vec<(usize, f64)>,
}

/// Where a column or a row stands in a starting basis (`Session::start_from`): basic, or
/// nonbasic at its lower or upper bound (for a row, the bound of its activity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BasisStatus {
    Lower,
    Basic,
    Upper,
}

/// A model loaded into a backend, which can grow by rows and be re-solved from its last basis.
pub trait Session {
    fn add_rows(&mut self, rows: &[Row]);
    /// Adds a column with its cost, bounds and `(row, coefficient)` entries; returns its index.
    fn add_col(&mut self, cost: f64, lower: f64, upper: f64, entries: &[(usize, f64)]) -> usize;
    /// Adds columns `(cost, lower, upper, entries)` together; returns the first one's index (the
    /// others follow in order).
    fn add_cols(&mut self, cols: &[Col]) -> usize {
        let mut first = None;
        for col in cols {
            let index = self.add_col(col.cost, col.lower, col.upper, &col.entries);
            first.get_or_insert(index);
        }
        first.unwrap_or(0)
    }
    /// Replaces the coefficient of column `col` in row `row`.
    fn set_coef(&mut self, row: usize, col: usize, value: f64);
    /// Replaces the bounds of rows, `(row, lower, upper)` each, in one call (a backend may pay a
    /// fixed cost per call).
    fn set_row_bounds(&mut self, bounds: &[(usize, f64, f64)]);
    /// Replaces the bounds of column `col`.
    fn set_col_bounds(&mut self, col: usize, lower: f64, upper: f64);
    /// Replaces the objective coefficients of columns, `(col, cost)` each, in one call.
    fn set_costs(&mut self, costs: &[(usize, f64)]);
    /// Bounds the next solves to `seconds` of solver time.
    fn set_time_limit(&mut self, seconds: f64);
    fn solve(&mut self) -> Result<Solution, SolveError>;
    /// Primal and dual feasibility to `tolerance` (absolute, on the equilibrated rows) instead of
    /// the backend's default; a backend without the setting ignores it.
    fn set_feasibility_tolerance(&mut self, _tolerance: f64) {}
    /// A starting basis for the next solve, one status per column and per row, with as many
    /// basic as there are rows. A hint: a backend that takes none ignores it, and a singular basis
    /// is repaired by the backend, not refused.
    fn start_from(&mut self, _cols: &[BasisStatus], _rows: &[BasisStatus]) {}
    /// The next solve starts from the slack basis, as a new model's would, instead of the last
    /// optimum's (a hint, like `start_from`).
    fn forget_basis(&mut self) {}
    /// The next solves use the primal simplex (`true`) or the backend's default (`false`): from a
    /// basis that stays primal feasible when only the objective changed, the primal simplex goes
    /// on where the last optimum stopped. A hint, like `start_from`.
    fn prefer_primal(&mut self, _primal: bool) {}
    /// Makes columns `cols` integer (the model becomes a MILP, solved to `relative_gap`);
    /// backends without a MILP solver refuse.
    fn set_integer(&mut self, _cols: &[usize], _relative_gap: f64) -> Result<(), SolveError> {
        Err(SolveError::Failed("this LP backend solves no integer programs".into()))
    }
    /// A MILP whose feasible points are trivial (all zero is one): no search for a first one
    /// (HiGHS's feasibility jump, a third of a pricing MILP's time).
    fn skip_feasibility_search(&mut self) {}
    /// Simplex iterations the last solve took, when the backend counts them: its work, which
    /// unlike its time does not depend on the machine.
    fn simplex_iterations(&self) -> Option<u64> {
        None
    }
}

/// Which LP solver runs the models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    #[cfg(feature = "highs")]
    Highs,
    #[cfg(feature = "microlp")]
    Microlp,
}

/// The LP backend a solve uses, and the instant by which it must be done (if any). Every LP a
/// policy solves goes through it, so a budget set here bounds the whole policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backend {
    pub kind: BackendKind,
    pub deadline: Option<Instant>,
}

impl Default for Backend {
    /// HiGHS when the build has it. The library's own unit tests take the backend named by
    /// `ARBITER_TEST_LP_BACKEND` instead, so that one test build runs them on each backend
    /// (`scripts/test`).
    fn default() -> Backend {
        #[cfg(test)]
        if let Ok(name) = std::env::var("ARBITER_TEST_LP_BACKEND") {
            return Backend::from_name(&name)
                .unwrap_or_else(|| panic!("ARBITER_TEST_LP_BACKEND={name:?}: this build has no such LP backend"));
        }
        #[cfg(feature = "highs")]
        let kind = BackendKind::Highs;
        #[cfg(not(feature = "highs"))]
        let kind = BackendKind::Microlp;
        Backend { kind, deadline: None }
    }
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self.kind {
            #[cfg(feature = "highs")]
            BackendKind::Highs => "highs",
            #[cfg(feature = "microlp")]
            BackendKind::Microlp => "microlp",
        }
    }

    /// HiGHS, whatever the default is.
    #[cfg(feature = "highs")]
    pub fn highs() -> Backend {
        Backend { kind: BackendKind::Highs, deadline: None }
    }

    /// Whether `Session::set_integer` works on this backend (HiGHS's MILP solver).
    pub fn solves_integer_programs(self) -> bool {
        match self.kind {
            #[cfg(feature = "highs")]
            BackendKind::Highs => true,
            #[cfg(feature = "microlp")]
            BackendKind::Microlp => false,
        }
    }

    /// The backends this build has.
    pub fn available() -> Vec<Backend> {
        let kinds = [
            #[cfg(feature = "highs")]
            BackendKind::Highs,
            #[cfg(feature = "microlp")]
            BackendKind::Microlp,
        ];
        kinds.into_iter().map(|kind| Backend { kind, deadline: None }).collect()
    }

    pub fn from_name(name: &str) -> Option<Backend> {
        Backend::available().into_iter().find(|b| b.name() == name)
    }

    /// The same backend, bound to finish by `deadline` (the earlier one if it already has one).
    pub fn until(self, deadline: Instant) -> Backend {
        let deadline = Some(self.deadline.map_or(deadline, |d| d.min(deadline)));
        Backend { deadline, ..self }
    }

    /// The same backend, bound to finish within `seconds` from now.
    pub fn within(self, seconds: f64) -> Backend {
        // NaN is no budget at all, as 0 (`clamp` keeps NaN, which `Duration` refuses).
        let seconds = if seconds.is_nan() { 0.0 } else { seconds.clamp(0.0, 1e9) };
        match Instant::now().checked_add(Duration::from_secs_f64(seconds)) {
            Some(deadline) => self.until(deadline),
            None => self,
        }
    }

    /// Seconds left before the deadline (`None`: no deadline).
    pub fn remaining(self) -> Option<f64> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()).as_secs_f64())
    }

    /// Loads `lp` into a new session of this backend.
    pub fn open(self, lp: LinearProgram) -> Box<dyn Session> {
        let inner: Box<dyn Session> = match self.kind {
            #[cfg(feature = "highs")]
            BackendKind::Highs => Box::new(highs::HighsSession::new(lp)),
            #[cfg(feature = "microlp")]
            BackendKind::Microlp => Box::new(microlp::MicrolpSession::new(lp)),
        };
        match self.deadline {
            Some(deadline) => Box::new(Bounded { inner, deadline }),
            None => inner,
        }
    }

    /// Solves `lp` once.
    pub fn solve(self, lp: LinearProgram) -> Result<Solution, SolveError> {
        self.open(lp).solve()
    }

    /// Solves `lp` once from a starting basis `(columns, rows)` when given. The basis is only a
    /// start: where the solver reports no optimum from it (seen: an infeasibility claimed from a
    /// start on an ill-conditioned level), it solves the LP again from its own.
    pub fn solve_from(
        self,
        lp: LinearProgram,
        basis: Option<(Vec<BasisStatus>, Vec<BasisStatus>)>,
    ) -> Result<Solution, SolveError> {
        let Some((cols, rows)) = basis else { return self.solve(lp) };
        let mut session = self.open(lp.clone());
        session.start_from(&cols, &rows);
        session.solve().or_else(|_| self.solve(lp))
    }
}

/// A session that refuses to start a solve past its deadline and gives the solver only the time
/// that is left.
struct Bounded {
    inner: Box<dyn Session>,
    deadline: Instant,
}

impl Session for Bounded {
    fn add_rows(&mut self, rows: &[Row]) {
        self.inner.add_rows(rows)
    }
    fn add_col(&mut self, cost: f64, lower: f64, upper: f64, entries: &[(usize, f64)]) -> usize {
        self.inner.add_col(cost, lower, upper, entries)
    }
    fn add_cols(&mut self, cols: &[Col]) -> usize {
        self.inner.add_cols(cols)
    }
    fn set_coef(&mut self, row: usize, col: usize, value: f64) {
        self.inner.set_coef(row, col, value)
    }
    fn set_row_bounds(&mut self, bounds: &[(usize, f64, f64)]) {
        self.inner.set_row_bounds(bounds)
    }
    fn set_col_bounds(&mut self, col: usize, lower: f64, upper: f64) {
        self.inner.set_col_bounds(col, lower, upper)
    }
    fn set_costs(&mut self, costs: &[(usize, f64)]) {
        self.inner.set_costs(costs)
    }
    fn set_feasibility_tolerance(&mut self, tolerance: f64) {
        self.inner.set_feasibility_tolerance(tolerance)
    }
    fn start_from(&mut self, cols: &[BasisStatus], rows: &[BasisStatus]) {
        self.inner.start_from(cols, rows)
    }
    fn forget_basis(&mut self) {
        self.inner.forget_basis()
    }
    fn prefer_primal(&mut self, primal: bool) {
        self.inner.prefer_primal(primal)
    }
    fn set_time_limit(&mut self, seconds: f64) {
        self.inner.set_time_limit(seconds)
    }
    fn set_integer(&mut self, cols: &[usize], relative_gap: f64) -> Result<(), SolveError> {
        self.inner.set_integer(cols, relative_gap)
    }
    fn skip_feasibility_search(&mut self) {
        self.inner.skip_feasibility_search()
    }
    fn simplex_iterations(&self) -> Option<u64> {
        self.inner.simplex_iterations()
    }
    fn solve(&mut self) -> Result<Solution, SolveError> {
        let left = self.deadline.saturating_duration_since(Instant::now()).as_secs_f64();
        if left <= 0.0 {
            return Err(SolveError::TimeLimit);
        }
        self.inner.set_time_limit(left);
        self.inner.solve()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A session that records the settings it is given.
    #[derive(Default)]
    struct Recorder {
        calls: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    }

    impl Session for Recorder {
        fn add_rows(&mut self, _rows: &[Row]) {}
        fn add_col(&mut self, _cost: f64, _lower: f64, _upper: f64, _entries: &[(usize, f64)]) -> usize {
            0
        }
        fn set_coef(&mut self, _row: usize, _col: usize, _value: f64) {}
        fn set_row_bounds(&mut self, _bounds: &[(usize, f64, f64)]) {}
        fn set_col_bounds(&mut self, _col: usize, _lower: f64, _upper: f64) {}
        fn set_costs(&mut self, costs: &[(usize, f64)]) {
            self.calls.borrow_mut().push(format!("costs {costs:?}"));
        }
        fn set_time_limit(&mut self, _seconds: f64) {}
        fn solve(&mut self) -> Result<Solution, SolveError> {
            Err(SolveError::Failed("not a solver".into()))
        }
        fn set_feasibility_tolerance(&mut self, tolerance: f64) {
            self.calls.borrow_mut().push(format!("tolerance {tolerance}"));
        }
        fn start_from(&mut self, cols: &[BasisStatus], rows: &[BasisStatus]) {
            self.calls.borrow_mut().push(format!("basis {} {}", cols.len(), rows.len()));
        }
    }

    /// A session with a deadline passes every setting on: a tolerance or a starting basis lost
    /// there would change what a time-limited request solves.
    #[test]
    fn a_session_with_a_deadline_passes_its_settings_on() {
        let recorder = Recorder::default();
        let calls = recorder.calls.clone();
        let mut bounded = Bounded { inner: Box::new(recorder), deadline: Instant::now() + Duration::from_secs(60) };
        bounded.set_feasibility_tolerance(1e-9);
        bounded.start_from(&[BasisStatus::Basic], &[BasisStatus::Lower, BasisStatus::Upper]);
        bounded.set_costs(&[(3, 2.5)]);
        assert_eq!(*calls.borrow(), ["tolerance 0.000000001", "basis 1 2", "costs [(3, 2.5)]"]);
    }

    /// A budget of NaN seconds (a config value gone wrong) is no budget, not a panic; infinite
    /// and negative ones are bounded and spent.
    #[test]
    fn a_budget_of_nan_seconds_is_none() {
        let before = Instant::now();
        let deadline = |seconds: f64| Backend::default().within(seconds).deadline;
        assert!(deadline(f64::NAN).is_some_and(|d| d <= Instant::now() && d >= before));
        assert!(deadline(-1.0).is_some_and(|d| d <= Instant::now()));
        assert!(deadline(f64::INFINITY).is_some_and(|d| d > Instant::now() + Duration::from_secs(3600)));
    }

    /// The unit tests' backend is the one `ARBITER_TEST_LP_BACKEND` names (`scripts/test` runs
    /// them on each), so a pass meant for the pure-Rust backend cannot run on HiGHS unnoticed.
    #[test]
    fn the_tests_backend_is_the_one_named() {
        let expected =
            std::env::var("ARBITER_TEST_LP_BACKEND").unwrap_or_else(|_| Backend::available()[0].name().into());
        assert_eq!(Backend::default().name(), expected);
    }
}
