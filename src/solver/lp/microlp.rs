//! The pure-Rust backend (microlp), for builds without a C++ toolchain. It keeps the model and
//! solves it from scratch on every `solve`: correct, slower than HiGHS on large models.

use super::{LinearProgram, Row, Sense, Session, Solution, SolveError};
use microlp::{ComparisonOp, OptimizationDirection, Problem};

pub struct MicrolpSession {
    lp: LinearProgram,
    time_limit: Option<f64>,
}

impl MicrolpSession {
    pub fn new(lp: LinearProgram) -> MicrolpSession {
        MicrolpSession { lp, time_limit: None }
    }
}

impl Session for MicrolpSession {
    fn add_rows(&mut self, rows: &[Row]) {
        self.lp.rows.extend_from_slice(rows);
    }

    fn add_col(&mut self, cost: f64, lower: f64, upper: f64, entries: &[(usize, f64)]) -> usize {
        let col = self.lp.add_col(cost, lower, upper);
        for &(r, v) in entries {
            self.lp.rows[r].coefs.push((col, v));
        }
        col
    }

    fn set_coef(&mut self, row: usize, col: usize, value: f64) {
        let coefs = &mut self.lp.rows[row].coefs;
        match coefs.iter_mut().find(|(c, _)| *c == col) {
            Some(entry) => entry.1 = value,
            None => coefs.push((col, value)),
        }
    }

    fn set_time_limit(&mut self, seconds: f64) {
        self.time_limit = Some(seconds);
    }

    fn set_row_bounds(&mut self, bounds: &[(usize, f64, f64)]) {
        for &(row, lower, upper) in bounds {
            self.lp.rows[row].lower = lower;
            self.lp.rows[row].upper = upper;
        }
    }

    fn set_col_bounds(&mut self, col: usize, lower: f64, upper: f64) {
        self.lp.col_lower[col] = lower;
        self.lp.col_upper[col] = upper;
    }

    fn set_costs(&mut self, costs: &[(usize, f64)]) {
        for &(col, cost) in costs {
            self.lp.cost[col] = cost;
        }
    }

    fn solve(&mut self) -> Result<Solution, SolveError> {
        let lp = &self.lp;
        let direction = match lp.sense {
            Sense::Minimize => OptimizationDirection::Minimize,
            Sense::Maximize => OptimizationDirection::Maximize,
        };
        let mut problem = Problem::new(direction);
        if let Some(seconds) = self.time_limit {
            problem.set_time_limit(std::time::Duration::from_secs_f64(seconds.max(1e-3)));
        }
        let vars: Vec<_> =
            (0..lp.num_cols()).map(|c| problem.add_var(lp.cost[c], (lp.col_lower[c], lp.col_upper[c]))).collect();
        for row in &lp.rows {
            let expr: Vec<_> = row.coefs.iter().map(|&(c, v)| (vars[c], v)).collect();
            if row.lower == row.upper {
                problem.add_constraint(expr.as_slice(), ComparisonOp::Eq, row.lower);
                continue;
            }
            if row.lower.is_finite() {
                problem.add_constraint(expr.as_slice(), ComparisonOp::Ge, row.lower);
            }
            if row.upper.is_finite() {
                problem.add_constraint(expr.as_slice(), ComparisonOp::Le, row.upper);
            }
        }
        let outcome = problem.solve().map_err(|e| match e {
            microlp::Error::Infeasible => SolveError::Infeasible,
            microlp::Error::Unbounded => SolveError::Unbounded,
            other => SolveError::Failed(format!("microlp: {other:?}")),
        })?;
        let solution = outcome.into_solution().map_err(|_| SolveError::TimeLimit)?;
        let values = vars.iter().map(|&v| solution.var_value(v)).collect();
        // microlp does not report duals.
        Ok(Solution { values, objective: solution.objective(), row_duals: Vec::new() })
    }
}
