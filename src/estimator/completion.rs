//! Low-rank completion of a throughput matrix in log space: the reference matrix is completed
//! (`ln T ≈ μ_col + b_row + A·Vᵀ`, rank r), and a new job's partial row is fitted against the
//! reference's column factors by ridge least squares. Numbers only: no names, no I/O.

use nalgebra::{DMatrix, DVector};

/// Alternating least squares stops when the loss falls by less than this fraction.
const CONVERGED: f64 = 1e-12;
const MAX_ITERATIONS: usize = 2000;
/// Ridge on the factors while completing the reference: only enough to fix the scale between
/// row and column factors.
const RIDGE: f64 = 1e-10;

/// The completed reference: column means, the column factors `V` (d × r) that new rows are
/// fitted against, and the completed matrix.
#[derive(Debug, Clone)]
pub struct LowRankModel {
    pub column_mean: Vec<f64>,
    /// `V`: one row per column, `rank` factors each.
    pub column_factors: DMatrix<f64>,
    /// The completed reference in log space (observed entries as given).
    pub completed: DMatrix<f64>,
    pub rank: usize,
}

/// Completes `observed` (n × d, log values; `None` where unknown) at `rank`. Every column must
/// hold at least one observation (callers drop the others). A full matrix is decomposed once by
/// SVD (optimal); with gaps, alternating least squares on the observed entries, started from the
/// SVD of the mean-filled matrix, fits `μ_col + b_row + A·Vᵀ` (hard impute stalls on such gaps).
pub fn complete(observed: &[Vec<Option<f64>>], rank: usize) -> LowRankModel {
    let n = observed.len();
    let d = observed.first().map_or(0, Vec::len);
    let column_observed_mean: Vec<f64> = (0..d)
        .map(|j| {
            let (sum, count) = observed.iter().filter_map(|row| row[j]).fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
            if count == 0 {
                0.0
            } else {
                sum / count as f64
            }
        })
        .collect();
    let mut z = DMatrix::from_fn(n, d, |i, j| observed[i][j].unwrap_or(column_observed_mean[j]));
    let rank = rank.min(n.saturating_sub(1)).min(d.saturating_sub(1));
    let (mut mean, mut bias, _, factors) = decompose(&z, rank);
    let mut column_factors = factors;
    if observed.iter().flatten().any(Option::is_none) {
        // Row factors of the start: the SVD's U·Σ / Σ, i.e. least squares against V·Σ.
        let mut row_factors = DMatrix::zeros(n, rank);
        let mut previous = f64::INFINITY;
        for _ in 0..MAX_ITERATIONS {
            for i in 0..n {
                let known: Vec<(usize, f64)> =
                    (0..d).filter_map(|j| observed[i][j].map(|v| (j, v - mean[j]))).collect();
                let x = least_squares(&known, |j, k| column_factors[(j, k)], rank, RIDGE);
                bias[i] = x[0];
                for k in 0..rank {
                    row_factors[(i, k)] = x[k + 1];
                }
            }
            for j in 0..d {
                let known: Vec<(usize, f64)> =
                    (0..n).filter_map(|i| observed[i][j].map(|v| (i, v - bias[i]))).collect();
                let x = least_squares(&known, |i, k| row_factors[(i, k)], rank, RIDGE);
                mean[j] = x[0];
                for k in 0..rank {
                    column_factors[(j, k)] = x[k + 1];
                }
            }
            // Move the factors' constant parts into the offsets: they are the same model, and
            // left in the factors they form a flat valley alternating steps crawl along.
            for k in 0..rank {
                let c = column_factors.column(k).sum() / d as f64;
                let e = row_factors.column(k).sum() / n as f64;
                for j in 0..d {
                    column_factors[(j, k)] -= c;
                }
                for i in 0..n {
                    row_factors[(i, k)] -= e;
                }
                for i in 0..n {
                    bias[i] += c * row_factors[(i, k)];
                }
                for j in 0..d {
                    mean[j] += e * (column_factors[(j, k)] + c);
                }
                let shift = c * e;
                for b in bias.iter_mut() {
                    *b += shift;
                }
                for m in mean.iter_mut() {
                    *m -= shift;
                }
            }
            let model = |i: usize, j: usize| {
                mean[j] + bias[i] + (0..rank).map(|k| row_factors[(i, k)] * column_factors[(j, k)]).sum::<f64>()
            };
            let loss: f64 = (0..n)
                .flat_map(|i| (0..d).filter_map(move |j| observed[i][j].map(|v| (i, j, v))))
                .map(|(i, j, v)| (v - model(i, j)).powi(2))
                .sum();
            let done = (previous.is_finite() && previous - loss <= CONVERGED * previous) || loss < 1e-28;
            previous = loss;
            if done {
                break;
            }
        }
        for i in 0..n {
            for j in 0..d {
                if observed[i][j].is_none() {
                    z[(i, j)] = mean[j]
                        + bias[i]
                        + (0..rank).map(|k| row_factors[(i, k)] * column_factors[(j, k)]).sum::<f64>();
                }
            }
        }
    }
    LowRankModel { column_mean: mean, column_factors, completed: z, rank }
}

/// Least squares of `target ≈ x₀ + Σ_k factor(index, k)·x_{k+1}` over `(index, target)` pairs,
/// with ridge `ridge` (relative to the fit's scale) on `x₁..` only.
fn least_squares(
    known: &[(usize, f64)],
    factor: impl Fn(usize, usize) -> f64,
    rank: usize,
    ridge: f64,
) -> DVector<f64> {
    let p = rank + 1;
    let design = DMatrix::from_fn(known.len(), p, |row, k| if k == 0 { 1.0 } else { factor(known[row].0, k - 1) });
    let target = DVector::from_iterator(known.len(), known.iter().map(|&(_, v)| v));
    let mut normal = design.transpose() * &design;
    let scale = (normal.trace() / p as f64).max(1e-300);
    for k in 1..p {
        normal[(k, k)] += ridge * scale;
    }
    let rhs = design.transpose() * &target;
    normal
        .clone()
        .cholesky()
        .map(|c| c.solve(&rhs))
        .or_else(|| normal.pseudo_inverse(1e-12).ok().map(|inv| inv * &rhs))
        .unwrap_or_else(|| DVector::zeros(p))
}

/// Splits `z` into column means, row biases (of the column-centred matrix) and the best rank-r
/// approximation of what is left; returns that approximation and its column factors `V·Σ`.
fn decompose(z: &DMatrix<f64>, rank: usize) -> (Vec<f64>, Vec<f64>, DMatrix<f64>, DMatrix<f64>) {
    let (n, d) = z.shape();
    let mean: Vec<f64> = (0..d).map(|j| z.column(j).sum() / n as f64).collect();
    let bias: Vec<f64> = (0..n).map(|i| (0..d).map(|j| z[(i, j)] - mean[j]).sum::<f64>() / d as f64).collect();
    let residual = DMatrix::from_fn(n, d, |i, j| z[(i, j)] - mean[j] - bias[i]);
    if rank == 0 {
        return (mean, bias, DMatrix::zeros(n, d), DMatrix::zeros(d, 0));
    }
    let svd = residual.svd(true, true);
    let (u, v_t) = (svd.u.expect("requested"), svd.v_t.expect("requested"));
    // nalgebra does not promise an order of the singular values: take the largest explicitly.
    let mut order: Vec<usize> = (0..svd.singular_values.len()).collect();
    order.sort_by(|&a, &b| svd.singular_values[b].total_cmp(&svd.singular_values[a]));
    let top = &order[..rank.min(order.len())];
    let mut low_rank = DMatrix::zeros(n, d);
    let mut factors = DMatrix::zeros(d, rank);
    for (k, &s) in top.iter().enumerate() {
        let sigma = svd.singular_values[s];
        for j in 0..d {
            factors[(j, k)] = v_t[(s, j)] * sigma;
        }
        for i in 0..n {
            for j in 0..d {
                low_rank[(i, j)] += u[(i, s)] * sigma * v_t[(s, j)];
            }
        }
    }
    // `factors` holds V·Σ, so a row's coefficients are U's row: fits stay well scaled.
    (mean, bias, low_rank, factors)
}

/// A new row fitted to the model: `x̂_j = μ_j + b + V_j·a` for every column.
#[derive(Debug, Clone, PartialEq)]
pub struct RowFit {
    pub values: Vec<f64>,
    /// Root-mean-square log residual on the known columns (0 when they are fitted exactly).
    pub residual: f64,
}

/// Fits a row from `known` (column, log value) pairs with `rank` factors and ridge `regularization`
/// on the factor coefficients (never on the bias). Needs `known.len() ≥ rank + 1`.
pub fn fit_row(model: &LowRankModel, known: &[(usize, f64)], rank: usize, regularization: f64) -> RowFit {
    let rank = rank.min(model.column_factors.ncols());
    let centred: Vec<(usize, f64)> = known.iter().map(|&(j, x)| (j, x - model.column_mean[j])).collect();
    let coefficients = least_squares(&centred, |j, k| model.column_factors[(j, k)], rank, regularization);
    let value = |j: usize| {
        model.column_mean[j]
            + coefficients[0]
            + (0..rank).map(|k| model.column_factors[(j, k)] * coefficients[k + 1]).sum::<f64>()
    };
    let values: Vec<f64> = (0..model.column_mean.len()).map(value).collect();
    let residual = if known.is_empty() {
        0.0
    } else {
        (known.iter().map(|&(j, x)| (values[j] - x).powi(2)).sum::<f64>() / known.len() as f64).sqrt()
    };
    RowFit { values, residual }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank-2 log matrix with row and column offsets: exactly the model's shape.
    fn synthetic(n: usize, d: usize) -> Vec<Vec<f64>> {
        (0..n)
            .map(|i| {
                let (a, b, bias) = ((i as f64 * 0.37).sin(), (i as f64 * 0.91).cos(), 0.1 * i as f64);
                (0..d)
                    .map(|j| 1.0 + 0.2 * j as f64 + bias + a * (j as f64 * 0.5).cos() + b * (j as f64 * 0.3).sin())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_full_low_rank_reference_recovers_a_new_row_from_rank_plus_one_entries() {
        let all = synthetic(13, 9);
        let (reference, new) = all.split_at(12);
        let observed: Vec<Vec<Option<f64>>> = reference.iter().map(|r| r.iter().map(|&v| Some(v)).collect()).collect();
        let model = complete(&observed, 2);
        let known: Vec<(usize, f64)> = [0, 4, 7].iter().map(|&j| (j, new[0][j])).collect();
        let fit = fit_row(&model, &known, 2, 0.0);
        for (j, (&got, &want)) in fit.values.iter().zip(&new[0]).enumerate() {
            assert!((got - want).abs() < 1e-9, "column {j}: {got} vs {want}");
        }
        assert!(fit.residual < 1e-9);
    }

    #[test]
    fn completion_fills_missing_reference_entries_of_a_low_rank_matrix() {
        // Two factors of like strength: a weak second factor is what no completion can pin down
        // from few entries (with 7.5 : 1 singular values the fit settles on a rank-one solution).
        let all: Vec<Vec<f64>> = (0..20)
            .map(|i| {
                let (a, b) = ((i as f64 * 0.37).sin(), (i as f64 * 0.91 + 0.4).cos());
                (0..8)
                    .map(|j| {
                        1.0 + 0.2 * j as f64
                            + 0.1 * i as f64
                            + a * (j as f64 * 0.9).cos()
                            + b * (j as f64 * 0.7 + 0.3).sin()
                    })
                    .collect()
            })
            .collect();
        let observed: Vec<Vec<Option<f64>>> = all
            .iter()
            .enumerate()
            .map(|(i, r)| r.iter().enumerate().map(|(j, &v)| ((i * 7 + j * 3) % 11 != 0).then_some(v)).collect())
            .collect();
        let model = complete(&observed, 2);
        for (i, row) in all.iter().enumerate() {
            for (j, &truth) in row.iter().enumerate() {
                assert!(
                    (model.completed[(i, j)] - truth).abs() < 1e-6,
                    "({i}, {j}): {} vs {truth}",
                    model.completed[(i, j)]
                );
            }
        }
    }
}
