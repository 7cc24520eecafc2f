//! How good the estimator is on a reference: leave-one-job-out. Each reference job in turn is
//! removed, its row hidden but for k worker types (every choice of k) and optionally a few pair
//! entries, and completed by the estimator, by the nearest remaining job on the measured entries,
//! and by the column mean. Errors are relative, per hidden entry.

use super::completion::fit_row;
use super::{Column, EstimateOptions, Estimator};
use serde::Serialize;

/// Pair entries measured per known worker type when pairs are part of the profile.
pub const PAIRS_PER_TYPE: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Estimator,
    NearestJob,
    ColumnMean,
}

/// One line of the accuracy table.
#[derive(Debug, Clone, Serialize)]
pub struct Accuracy {
    /// Worker types measured alone.
    pub known_types: usize,
    /// Whether `PAIRS_PER_TYPE` pair entries per known type were measured too.
    pub pairs_known: bool,
    pub method: Method,
    /// Relative errors on the hidden solo entries: median, 90th percentile, count.
    pub solo_median: f64,
    pub solo_p90: f64,
    pub solo_entries: usize,
    /// The same on hidden pair entries (NaN without pair columns).
    pub pair_median: f64,
    pub pair_p90: f64,
    pub pair_entries: usize,
    /// Share of held-out rows whose completed solo row orders the worker types as the truth does.
    pub order_kept: f64,
}

fn quantile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = q * (values.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    values[lo] + (values[hi] - values[lo]) * (rank - lo as f64)
}

fn subsets(n: usize, k: usize) -> Vec<Vec<usize>> {
    (0u32..1 << n)
        .filter(|m| m.count_ones() as usize == k)
        .map(|m| (0..n).filter(|&i| m >> i & 1 == 1).collect())
        .collect()
}

fn order(values: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    idx
}

impl Estimator {
    /// The leave-one-job-out table for `known_types` = 1..=solo columns, with and without pairs.
    pub fn evaluate(&self, options: EstimateOptions) -> Vec<Accuracy> {
        let reference = &self.reference;
        let solo: Vec<usize> =
            (0..reference.columns.len()).filter(|&j| matches!(reference.columns[j], Column::Solo { .. })).collect();
        let has_pairs = reference.columns.iter().any(|c| matches!(c, Column::Pair { .. }));
        let mut table = Vec::new();
        for k in 1..=solo.len() {
            for pairs_known in [false, true] {
                if pairs_known && !has_pairs {
                    continue;
                }
                for method in [Method::Estimator, Method::NearestJob, Method::ColumnMean] {
                    table.push(self.accuracy(&solo, k, pairs_known, method, options));
                }
            }
        }
        table
    }

    fn accuracy(
        &self,
        solo: &[usize],
        k: usize,
        pairs_known: bool,
        method: Method,
        options: EstimateOptions,
    ) -> Accuracy {
        let reference = &self.reference;
        let (mut solo_errors, mut pair_errors) = (Vec::new(), Vec::new());
        let (mut rows, mut kept) = (0usize, 0usize);
        let position = |j: usize| self.usable.iter().position(|&u| u == j);
        for i in 0..reference.jobs.len() {
            let truth = &reference.values[i];
            for subset in subsets(solo.len(), k) {
                let mut measured: Vec<usize> =
                    subset.iter().map(|&s| solo[s]).filter(|&j| truth[j].is_some()).collect();
                if measured.len() < k {
                    continue;
                }
                if pairs_known {
                    for &s in &subset {
                        let w = reference.columns[solo[s]].worker_type().to_string();
                        // Partners taken in a fixed spread over the reference, skipping the job itself.
                        let candidates: Vec<usize> = (0..reference.columns.len())
                            .filter(|&j| {
                                matches!(&reference.columns[j], Column::Pair { worker_type, partner }
                                    if *worker_type == w && *partner != reference.jobs[i])
                                    && truth[j].is_some()
                            })
                            .collect();
                        let step = (candidates.len() / PAIRS_PER_TYPE).max(1);
                        measured.extend(candidates.iter().step_by(step).take(PAIRS_PER_TYPE));
                    }
                }
                let Some(completed) = self.complete_held_out(i, &measured, method, options) else { continue };
                for j in 0..reference.columns.len() {
                    let (Some(t), Some(e)) = (truth[j], completed[j]) else { continue };
                    if measured.contains(&j) || position(j).is_none() {
                        continue;
                    }
                    let error = (e - t).abs() / t;
                    match reference.columns[j] {
                        Column::Solo { .. } => solo_errors.push(error),
                        Column::Pair { .. } => pair_errors.push(error),
                    }
                }
                let true_solo: Option<Vec<f64>> = solo.iter().map(|&j| truth[j]).collect();
                let est_solo: Option<Vec<f64>> = solo.iter().map(|&j| completed[j]).collect();
                if let (Some(t), Some(e)) = (true_solo, est_solo) {
                    rows += 1;
                    kept += usize::from(order(&t) == order(&e));
                }
            }
        }
        let (solo_entries, pair_entries) = (solo_errors.len(), pair_errors.len());
        Accuracy {
            known_types: k,
            pairs_known,
            method,
            solo_median: quantile(&mut solo_errors, 0.5),
            solo_p90: quantile(&mut solo_errors, 0.9),
            solo_entries,
            pair_median: quantile(&mut pair_errors, 0.5),
            pair_p90: quantile(&mut pair_errors, 0.9),
            pair_entries,
            order_kept: if rows == 0 { f64::NAN } else { kept as f64 / rows as f64 },
        }
    }

    /// Job `i`'s row completed from its `measured` columns without using its own row anywhere.
    fn complete_held_out(
        &self,
        i: usize,
        measured: &[usize],
        method: Method,
        options: EstimateOptions,
    ) -> Option<Vec<Option<f64>>> {
        let reference = &self.reference;
        let truth = &reference.values[i];
        let d = reference.columns.len();
        let others = (0..reference.jobs.len()).filter(|&r| r != i);
        let mut completed: Vec<Option<f64>> = match method {
            Method::Estimator => {
                let fold = &self.folds()[i];
                let known: Vec<(usize, f64)> = measured
                    .iter()
                    .filter_map(|&j| Some((self.usable.iter().position(|&u| u == j)?, truth[j]?.ln())))
                    .collect();
                let rank = self.rank_for(known.len(), options.rank).ok()?.min(fold.rank);
                let fit = fit_row(fold, &known, rank, options.regularization);
                let mut row = vec![None; d];
                for (u, &j) in self.usable.iter().enumerate() {
                    row[j] = Some(fit.values[u].exp());
                }
                row
            }
            Method::NearestJob => {
                let distance = |r: usize| {
                    let terms: Vec<f64> = measured
                        .iter()
                        .filter_map(|&j| Some((reference.values[r][j]?.ln() - truth[j]?.ln()).powi(2)))
                        .collect();
                    if terms.is_empty() {
                        f64::INFINITY
                    } else {
                        terms.iter().sum::<f64>() / terms.len() as f64
                    }
                };
                let nearest = others.min_by(|&a, &b| distance(a).total_cmp(&distance(b)))?;
                reference.values[nearest].clone()
            }
            Method::ColumnMean => (0..d)
                .map(|j| {
                    let seen: Vec<f64> =
                        (0..reference.jobs.len()).filter(|&r| r != i).filter_map(|r| reference.values[r][j]).collect();
                    (!seen.is_empty()).then(|| seen.iter().sum::<f64>() / seen.len() as f64)
                })
                .collect(),
        };
        for &j in measured {
            completed[j] = truth[j];
        }
        Some(completed)
    }
}
