//! The sign convention of `Solution::row_duals`, which column pricing relies on: a column's
//! reduced cost is `c_j − Σ_i a_ij·y_i`, zero for a basic column, and a column left out of a
//! maximization improves it exactly when its reduced cost is positive.

use arbiter::lp::{Backend, LinearProgram, Row, Sense};

#[test]
fn reduced_costs_from_row_duals() {
    // max 3x + 2y s.t. x + y ≤ 4, x + 3y ≤ 6, x ≤ 3: optimum x = 3, y = 1, both basic.
    let mut lp = LinearProgram::new(Sense::Maximize);
    let x = lp.add_col(3.0, 0.0, f64::INFINITY);
    let y = lp.add_col(2.0, 0.0, f64::INFINITY);
    lp.add_row(Row::at_most(4.0, vec![(x, 1.0), (y, 1.0)]));
    lp.add_row(Row::at_most(6.0, vec![(x, 1.0), (y, 3.0)]));
    lp.add_row(Row::at_most(3.0, vec![(x, 1.0)]));
    let s = Backend::default().solve(lp).unwrap();
    assert!((s.values[x] - 3.0).abs() < 1e-9 && (s.values[y] - 1.0).abs() < 1e-9, "{:?}", s.values);
    let d = |cost: f64, coefs: &[(usize, f64)]| cost - coefs.iter().map(|&(r, a)| a * s.row_duals[r]).sum::<f64>();
    assert!(d(3.0, &[(0, 1.0), (1, 1.0), (2, 1.0)]).abs() < 1e-9, "duals {:?}", s.row_duals);
    assert!(d(2.0, &[(0, 1.0), (1, 3.0)]).abs() < 1e-9, "duals {:?}", s.row_duals);
    // A column worth 5 per unit of the first row improves the optimum; one worth 1 does not.
    assert!(d(5.0, &[(0, 1.0)]) > 0.0);
    assert!(d(1.0, &[(0, 1.0)]) < 0.0);
}
