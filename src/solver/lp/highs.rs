//! HiGHS through its C API: the model is passed once, later rows are added in place, and each
//! `solve` re-runs from the current basis (dual simplex hot start after added rows).

use super::{BasisStatus, Col, LinearProgram, Row, Sense, Session, Solution, SolveError};
use highs_sys::*;
use std::ffi::{c_void, CString};

pub struct HighsSession {
    ptr: *mut c_void,
    num_cols: usize,
    num_rows: usize,
    /// What each row was divided by (see `Row::equilibrated`); duals and later edits use it.
    row_scale: Vec<f64>,
    /// Each column's cost, unscaled.
    costs: Vec<f64>,
    /// What HiGHS's costs are multiplied by (`objective_scale`); objective and duals are divided
    /// by it.
    cost_factor: f64,
}

// The HiGHS instance is owned by this session alone and never shared between threads at once.
unsafe impl Send for HighsSession {}

/// Rows or columns packed for HiGHS: where each one's entries start, their indices and values.
#[derive(Default)]
struct Packed {
    starts: Vec<HighsInt>,
    index: Vec<HighsInt>,
    value: Vec<f64>,
}

impl Packed {
    fn push(&mut self, entries: impl Iterator<Item = (usize, f64)>) {
        self.starts.push(self.index.len() as HighsInt);
        for (i, v) in entries {
            self.index.push(i as HighsInt);
            self.value.push(v);
        }
    }
}

/// What to multiply the costs by: 1, or the power of two that brings the largest to at most 2^20.
/// HiGHS's dual simplex fails on "excessively large" costs (as a job measured at 10⁹ steps/s
/// beside jobs at 1 step/s makes them) and takes costs from 10²⁰ for infinite; a power of two
/// scales them exactly.
fn objective_scale(costs: &[f64]) -> f64 {
    let largest = costs.iter().map(|c| c.abs()).filter(|c| c.is_finite()).fold(0.0, f64::max);
    if largest > (1u64 << 20) as f64 {
        2f64.powi(20 - largest.log2().ceil() as i32)
    } else {
        1.0
    }
}

fn clamp_inf(v: f64) -> f64 {
    // HiGHS treats any |v| ≥ 1e20 as infinite.
    v.clamp(-1e30, 1e30)
}

impl HighsSession {
    pub fn new(lp: LinearProgram) -> HighsSession {
        // SAFETY: Highs_create returns a fresh instance that this session owns until Drop.
        let ptr = unsafe { Highs_create() };
        let mut session = HighsSession {
            ptr,
            num_cols: lp.num_cols(),
            num_rows: lp.rows.len(),
            row_scale: Vec::new(),
            costs: lp.cost.clone(),
            cost_factor: objective_scale(&lp.cost),
        };
        session.set_bool("output_flag", false);
        session.set_int("threads", 1);
        // The models here are small and already tight; presolve costs more than it saves.
        session.set_string("presolve", "off");
        let col_lower: Vec<f64> = lp.col_lower.iter().map(|&v| clamp_inf(v)).collect();
        let col_upper: Vec<f64> = lp.col_upper.iter().map(|&v| clamp_inf(v)).collect();
        let (Packed { starts, index, value }, row_lower, row_upper) = session.pack_rows(&lp.rows);
        let cost: Vec<f64> = lp.cost.iter().map(|&c| c * session.cost_factor).collect();
        let sense = match lp.sense {
            Sense::Minimize => OBJECTIVE_SENSE_MINIMIZE,
            Sense::Maximize => OBJECTIVE_SENSE_MAXIMIZE,
        };
        // SAFETY: every array has the length HiGHS is told (num_col, num_row or num_nz).
        unsafe {
            Highs_passLp(
                ptr,
                lp.num_cols() as HighsInt,
                lp.rows.len() as HighsInt,
                index.len() as HighsInt,
                MATRIX_FORMAT_ROW_WISE,
                sense,
                0.0,
                cost.as_ptr(),
                col_lower.as_ptr(),
                col_upper.as_ptr(),
                row_lower.as_ptr(),
                row_upper.as_ptr(),
                starts.as_ptr(),
                index.as_ptr(),
                value.as_ptr(),
            );
        }
        session
    }

    /// Equilibrates `rows` (keeping each one's scale), packs them, and returns their bounds.
    fn pack_rows(&mut self, rows: &[Row]) -> (Packed, Vec<f64>, Vec<f64>) {
        let mut packed = Packed::default();
        let (mut lower, mut upper) = (Vec::with_capacity(rows.len()), Vec::with_capacity(rows.len()));
        for row in rows {
            let (row, scale) = row.equilibrated();
            self.row_scale.push(scale);
            packed.push(row.coefs.iter().copied());
            lower.push(clamp_inf(row.lower));
            upper.push(clamp_inf(row.upper));
        }
        (packed, lower, upper)
    }

    fn set_bool(&self, name: &str, value: bool) {
        let name = CString::new(name).expect("option names have no NUL");
        // SAFETY: ptr is a live instance; name is a valid C string for the call.
        unsafe { Highs_setBoolOptionValue(self.ptr, name.as_ptr(), value as HighsInt) };
    }

    fn set_string(&self, name: &str, value: &str) {
        let name = CString::new(name).expect("option names have no NUL");
        let value = CString::new(value).expect("option values have no NUL");
        // SAFETY: as above.
        unsafe { Highs_setStringOptionValue(self.ptr, name.as_ptr(), value.as_ptr()) };
    }

    fn set_double(&self, name: &str, value: f64) {
        let name = CString::new(name).expect("option names have no NUL");
        // SAFETY: as above.
        unsafe { Highs_setDoubleOptionValue(self.ptr, name.as_ptr(), value) };
    }

    fn set_int(&self, name: &str, value: i32) {
        let name = CString::new(name).expect("option names have no NUL");
        // SAFETY: as above.
        unsafe { Highs_setIntOptionValue(self.ptr, name.as_ptr(), value as HighsInt) };
    }
}

impl Session for HighsSession {
    fn add_rows(&mut self, rows: &[Row]) {
        if rows.is_empty() {
            return;
        }
        // One call for all of them: each call rebuilds part of HiGHS's matrix.
        self.num_rows += rows.len();
        let (Packed { starts, index, value }, lower, upper) = self.pack_rows(rows);
        // SAFETY: lower, upper and starts hold num_new_row entries; index and value num_new_nz.
        unsafe {
            Highs_addRows(
                self.ptr,
                rows.len() as HighsInt,
                lower.as_ptr(),
                upper.as_ptr(),
                index.len() as HighsInt,
                starts.as_ptr(),
                index.as_ptr(),
                value.as_ptr(),
            );
        }
    }

    fn add_col(&mut self, cost: f64, lower: f64, upper: f64, entries: &[(usize, f64)]) -> usize {
        self.add_cols(&[Col { cost, lower, upper, entries: entries.to_vec() }])
    }

    fn add_cols(&mut self, cols: &[Col]) -> usize {
        let first = self.num_cols;
        if cols.is_empty() {
            return first;
        }
        // One call for all of them, as for rows.
        let mut packed = Packed::default();
        let (mut cost, mut lower, mut upper) = (Vec::new(), Vec::new(), Vec::new());
        for col in cols {
            packed.push(col.entries.iter().map(|&(r, v)| (r, v / self.row_scale[r])));
            cost.push(col.cost * self.cost_factor);
            self.costs.push(col.cost);
            lower.push(clamp_inf(col.lower));
            upper.push(clamp_inf(col.upper));
        }
        let Packed { starts, index, value } = packed;
        // SAFETY: cost, lower, upper and starts hold num_new_col entries; index and value num_new_nz.
        unsafe {
            Highs_addCols(
                self.ptr,
                cols.len() as HighsInt,
                cost.as_ptr(),
                lower.as_ptr(),
                upper.as_ptr(),
                index.len() as HighsInt,
                starts.as_ptr(),
                index.as_ptr(),
                value.as_ptr(),
            );
        }
        self.num_cols += cols.len();
        first
    }

    fn set_coef(&mut self, row: usize, col: usize, value: f64) {
        // SAFETY: ptr is live; HiGHS checks the indices and returns an error status if out of range.
        unsafe { Highs_changeCoeff(self.ptr, row as HighsInt, col as HighsInt, value / self.row_scale[row]) };
    }

    fn set_time_limit(&mut self, seconds: f64) {
        // HiGHS reads its time limit against a run clock that adds up every run of the instance,
        // so `seconds` from now is the time run so far plus `seconds`.
        // SAFETY: ptr is live.
        let run_so_far = unsafe { Highs_getRunTime(self.ptr) };
        self.set_double("time_limit", run_so_far.max(0.0) + seconds.max(1e-3));
    }

    fn set_row_bounds(&mut self, bounds: &[(usize, f64, f64)]) {
        if bounds.is_empty() {
            return;
        }
        let set: Vec<HighsInt> = bounds.iter().map(|&(row, _, _)| row as HighsInt).collect();
        let scaled = |bound: fn(&(usize, f64, f64)) -> f64| -> Vec<f64> {
            bounds.iter().map(|b| clamp_inf(bound(b) / self.row_scale[b.0])).collect()
        };
        let (lower, upper) = (scaled(|b| b.1), scaled(|b| b.2));
        // SAFETY: ptr is live; set, lower and upper hold bounds.len() entries; HiGHS checks the
        // indices.
        unsafe {
            Highs_changeRowsBoundsBySet(self.ptr, set.len() as HighsInt, set.as_ptr(), lower.as_ptr(), upper.as_ptr())
        };
    }

    fn set_col_bounds(&mut self, col: usize, lower: f64, upper: f64) {
        // SAFETY: ptr is live; HiGHS checks the index.
        unsafe { Highs_changeColBounds(self.ptr, col as HighsInt, clamp_inf(lower), clamp_inf(upper)) };
    }

    fn set_costs(&mut self, costs: &[(usize, f64)]) {
        if costs.is_empty() {
            return;
        }
        let set: Vec<HighsInt> = costs.iter().map(|&(col, _)| col as HighsInt).collect();
        let cost: Vec<f64> = costs.iter().map(|&(_, c)| c * self.cost_factor).collect();
        for &(col, c) in costs {
            if let Some(kept) = self.costs.get_mut(col) {
                *kept = c;
            }
        }
        // SAFETY: ptr is live; set and cost hold costs.len() entries; HiGHS checks the indices.
        unsafe { Highs_changeColsCostBySet(self.ptr, set.len() as HighsInt, set.as_ptr(), cost.as_ptr()) };
    }

    fn set_feasibility_tolerance(&mut self, tolerance: f64) {
        self.set_double("primal_feasibility_tolerance", tolerance);
        self.set_double("dual_feasibility_tolerance", tolerance);
    }

    fn forget_basis(&mut self) {
        // SAFETY: ptr is live. The model stays; the basis, factorization and solution go.
        unsafe { Highs_clearSolver(self.ptr) };
    }

    fn prefer_primal(&mut self, primal: bool) {
        // HiGHS's simplex strategies: 1 the dual (its default), 4 the primal.
        self.set_int("simplex_strategy", if primal { 4 } else { 1 });
    }

    fn start_from(&mut self, cols: &[BasisStatus], rows: &[BasisStatus]) {
        if cols.len() != self.num_cols || rows.len() != self.num_rows {
            return;
        }
        let status = |s: &BasisStatus| match s {
            BasisStatus::Lower => kHighsBasisStatusLower,
            BasisStatus::Basic => kHighsBasisStatusBasic,
            BasisStatus::Upper => kHighsBasisStatusUpper,
        };
        let cols: Vec<HighsInt> = cols.iter().map(status).collect();
        let rows: Vec<HighsInt> = rows.iter().map(status).collect();
        // SAFETY: ptr is live; cols and rows hold num_col and num_row statuses. HiGHS checks the
        // basis (and keeps its own start when it refuses it).
        unsafe { Highs_setBasis(self.ptr, cols.as_ptr(), rows.as_ptr()) };
    }

    fn set_integer(&mut self, cols: &[usize], relative_gap: f64) -> Result<(), SolveError> {
        if cols.iter().any(|&c| c >= self.num_cols) {
            return Err(SolveError::Failed("an integer column is not in the model".into()));
        }
        let set: Vec<HighsInt> = cols.iter().map(|&c| c as HighsInt).collect();
        let integrality = vec![kHighsVarTypeInteger; set.len()];
        // Branch and bound gains from presolve, unlike the small LPs above.
        self.set_string("presolve", "on");
        self.set_double("mip_rel_gap", relative_gap.clamp(0.0, 1.0));
        // SAFETY: ptr is live; set and integrality hold num_set_entries entries.
        let status = unsafe {
            Highs_changeColsIntegralityBySet(self.ptr, set.len() as HighsInt, set.as_ptr(), integrality.as_ptr())
        };
        if status == kHighsStatusError {
            return Err(SolveError::Failed("HiGHS refused the integrality of the columns".into()));
        }
        Ok(())
    }

    fn skip_feasibility_search(&mut self) {
        self.set_bool("mip_heuristic_run_feasibility_jump", false);
    }

    fn simplex_iterations(&self) -> Option<u64> {
        let name = CString::new("simplex_iteration_count").expect("no NUL in the name");
        let mut count: HighsInt = 0;
        // SAFETY: ptr is live and count is a valid out-parameter of HiGHS's integer type.
        let status = unsafe { Highs_getIntInfoValue(self.ptr, name.as_ptr(), &mut count) };
        (status == STATUS_OK).then_some(count.max(0) as u64)
    }

    fn solve(&mut self) -> Result<Solution, SolveError> {
        let factor = objective_scale(&self.costs);
        if factor != self.cost_factor {
            self.cost_factor = factor;
            let scaled: Vec<f64> = self.costs.iter().map(|&c| c * factor).collect();
            // SAFETY: ptr is live; scaled holds one cost per column, 0..num_cols.
            unsafe { Highs_changeColsCostByRange(self.ptr, 0, scaled.len() as HighsInt - 1, scaled.as_ptr()) };
        }
        // SAFETY: ptr is live for the whole call.
        let run = unsafe { Highs_run(self.ptr) };
        let status = unsafe { Highs_getModelStatus(self.ptr) };
        match status {
            MODEL_STATUS_OPTIMAL => {}
            MODEL_STATUS_INFEASIBLE => return Err(SolveError::Infeasible),
            MODEL_STATUS_UNBOUNDED | MODEL_STATUS_UNBOUNDED_OR_INFEASIBLE => return Err(SolveError::Unbounded),
            MODEL_STATUS_REACHED_TIME_LIMIT => return Err(SolveError::TimeLimit),
            other => return Err(SolveError::Failed(not_optimal(other, run))),
        }
        let mut values = vec![0.0; self.num_cols];
        let mut row_duals = vec![0.0; self.num_rows];
        // SAFETY: col_value has num_col entries and row_dual num_row; HiGHS skips the null outputs.
        unsafe {
            Highs_getSolution(
                self.ptr,
                values.as_mut_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                row_duals.as_mut_ptr(),
            );
        }
        let objective = unsafe { Highs_getObjectiveValue(self.ptr) } / self.cost_factor;
        // The dual of a row divided by s is s times the original row's; costs multiplied by f
        // make every dual f times the original's.
        for (dual, scale) in row_duals.iter_mut().zip(&self.row_scale) {
            *dual /= scale * self.cost_factor;
        }
        Ok(Solution { values, objective, row_duals })
    }
}

impl Drop for HighsSession {
    fn drop(&mut self) {
        // SAFETY: ptr came from Highs_create and is destroyed exactly once.
        unsafe { Highs_destroy(self.ptr) };
    }
}

/// Why HiGHS stopped without an optimum, in words, with its codes for a bug report.
fn not_optimal(model: HighsInt, run: HighsInt) -> String {
    let what = match model {
        MODEL_STATUS_NOTSET if run == STATUS_ERROR => "HiGHS refused the model (a coefficient or bound past its range)",
        MODEL_STATUS_LOAD_ERROR | MODEL_STATUS_MODEL_ERROR => "HiGHS refused the model",
        MODEL_STATUS_PRESOLVE_ERROR | MODEL_STATUS_SOLVE_ERROR | MODEL_STATUS_POSTSOLVE_ERROR => {
            "HiGHS hit an error while solving"
        }
        MODEL_STATUS_REACHED_ITERATION_LIMIT => "HiGHS reached its iteration limit",
        MODEL_STATUS_UNKNOWN => "HiGHS stopped on numerical trouble without proving an optimum",
        MODEL_STATUS_REACHED_MEMORY_LIMIT => "HiGHS ran out of memory",
        _ => "HiGHS stopped without an optimum",
    };
    format!("{what} (model status {model}, run status {run})")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dense LP with a few hundred simplex iterations: max Σ x subject to n rows of mixed
    /// coefficients, 0 ≤ x ≤ 1.
    fn busy_lp(n: usize) -> LinearProgram {
        let mut lp = LinearProgram::new(Sense::Maximize);
        for _ in 0..n {
            lp.add_col(1.0, 0.0, 1.0);
        }
        for i in 0..n {
            let coefs = (0..n).map(|j| (j, 1.0 + ((i * 7 + j * 13) % 17) as f64)).collect();
            lp.add_row(Row::at_most(n as f64, coefs));
        }
        lp
    }

    /// A time limit counts from when it is set: a session that has already run longer than the
    /// limit still gets the whole limit for its next solve (HiGHS's own clock adds up runs).
    #[test]
    fn a_time_limit_counts_from_when_it_is_set() {
        let mut session = HighsSession::new(busy_lp(120));
        // SAFETY: the session's instance is live.
        while unsafe { Highs_getRunTime(session.ptr) } < 0.05 {
            session.forget_basis();
            session.solve().expect("the LP solves without a limit");
        }
        session.set_time_limit(0.04);
        session.forget_basis();
        assert!(session.solve().is_ok(), "a limit set now, longer than the solve, cut it short");
        assert!(session.simplex_iterations().is_some_and(|n| n > 0));
    }

    /// Costs far apart solve, with the objective and duals in the model's own units: max
    /// 10⁹·x + y with x + y ≤ 1 and x ≤ 1/2, as a job measured 10⁹ times faster than another
    /// makes it (HiGHS's dual simplex failed on such costs before they were scaled), and again
    /// after the costs change in place and past HiGHS's infinity.
    #[test]
    fn costs_far_apart_solve_in_the_models_units() {
        let mut lp = LinearProgram::new(Sense::Maximize);
        let x = lp.add_col(1e9, 0.0, 1.0);
        let y = lp.add_col(1.0, 0.0, 1.0);
        lp.add_row(Row::at_most(1.0, vec![(x, 1.0), (y, 1.0)]));
        lp.add_row(Row::at_most(0.5, vec![(x, 1.0)]));
        let mut session = HighsSession::new(lp);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        for big in [1e9, 1e25, 1e300] {
            session.set_costs(&[(x, big)]);
            let solution = session.solve().expect("solves");
            assert!(close(solution.values[x], 0.5) && close(solution.values[y], 0.5), "{:?}", solution.values);
            assert!(close(solution.objective, 0.5 * big + 0.5), "{} at {big}", solution.objective);
            // x + y ≤ 1 is worth y's cost; x ≤ 1/2 the rest of x's (within the scaled tolerance:
            // beside 10²⁵, y's cost of 1 is below it).
            assert!((solution.row_duals[0] - 1.0).abs() <= 1e-12 * big, "{:?} at {big}", solution.row_duals);
            assert!(close(solution.row_duals[1], big - 1.0), "{:?} at {big}", solution.row_duals);
        }
        session.set_costs(&[(x, 2.0)]);
        let solution = session.solve().expect("solves");
        assert!(close(solution.objective, 1.5) && close(solution.row_duals[1], 1.0), "{solution:?}");
    }
}
