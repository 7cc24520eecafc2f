//! The solver layer: one small LP model type and one narrow session interface over the backends.
//! Policies build a `LinearProgram`, open a `Session` on a `Backend`, and may add rows and re-solve
//! (the backend keeps its basis, so a re-solve is a hot start). Failures are errors, never fallbacks.

#[cfg(feature = "highs")]
mod highs;
#[cfg(feature = "microlp")]
mod microlp;

use std::fmt;

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
    /// The backend stopped without an optimal solution (time limit, numerical trouble, ...).
    Failed(String),
}

impl fmt::Display for SolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SolveError::Infeasible => f.write_str("the LP is infeasible"),
            SolveError::Unbounded => f.write_str("the LP is unbounded"),
            SolveError::Failed(why) => write!(f, "the LP solver failed: {why}"),
        }
    }
}

impl std::error::Error for SolveError {}

/// A model loaded into a backend, which can grow by rows and be re-solved from its last basis.
pub trait Session {
    fn add_rows(&mut self, rows: &[Row]);
    /// Replaces the coefficient of column `col` in row `row`.
    fn set_coef(&mut self, row: usize, col: usize, value: f64);
    /// Replaces the bounds of row `row`.
    fn set_row_bounds(&mut self, row: usize, lower: f64, upper: f64);
    fn solve(&mut self) -> Result<Solution, SolveError>;
}

/// Which LP backend solves the models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    #[cfg(feature = "highs")]
    Highs,
    #[cfg(feature = "microlp")]
    Microlp,
}

impl Default for Backend {
    fn default() -> Backend {
        #[cfg(feature = "highs")]
        return Backend::Highs;
        #[cfg(not(feature = "highs"))]
        return Backend::Microlp;
    }
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "highs")]
            Backend::Highs => "highs",
            #[cfg(feature = "microlp")]
            Backend::Microlp => "microlp",
        }
    }

    /// The backends this build has, by name.
    pub fn available() -> Vec<Backend> {
        vec![
            #[cfg(feature = "highs")]
            Backend::Highs,
            #[cfg(feature = "microlp")]
            Backend::Microlp,
        ]
    }

    pub fn from_name(name: &str) -> Option<Backend> {
        Backend::available().into_iter().find(|b| b.name() == name)
    }

    /// Loads `lp` into a new session of this backend.
    pub fn open(self, lp: LinearProgram) -> Box<dyn Session> {
        match self {
            #[cfg(feature = "highs")]
            Backend::Highs => Box::new(highs::HighsSession::new(lp)),
            #[cfg(feature = "microlp")]
            Backend::Microlp => Box::new(microlp::MicrolpSession::new(lp)),
        }
    }

    /// Solves `lp` once.
    pub fn solve(self, lp: LinearProgram) -> Result<Solution, SolveError> {
        self.open(lp).solve()
    }
}
