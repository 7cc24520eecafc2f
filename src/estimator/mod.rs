//! Gavel's throughput estimator (§3.3): a new job's throughputs on the worker types and beside the
//! reference jobs, estimated from the few entries measured so far by low-rank matrix completion
//! against a reference matrix, with the nearest reference job as its fingerprint and an expected
//! error per estimate. No policy, no wire format: `api` renders it, `evaluation` measures it.
//! See `formulations/throughput_estimator.md`.

pub mod api;
pub mod cli;
mod completion;
pub mod evaluation;
pub mod fill;
pub mod reference;

pub use reference::{Column, ReferenceMatrix};

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::workload::throughputs::ThroughputTable;
use completion::{complete, fit_row, LowRankModel};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The largest rank the reference is completed at; an automatic rank never exceeds it.
pub const MAX_RANK: usize = 3;
/// Ridge weight on a new row's factor coefficients, relative to the fit's scale.
pub const DEFAULT_REGULARIZATION: f64 = 0.05;

/// A scale factor written as a number (`2`, `2.0`) as the GPUs it is, if it is a whole number
/// of at least 1 that fits a `u32`.
pub fn whole_scale_factor(s: f64) -> Option<u32> {
    (s >= 1.0 && s.fract() == 0.0 && s <= f64::from(u32::MAX)).then_some(s as u32)
}

/// How a partial row is completed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EstimateOptions {
    /// Factors fitted to the new row; `None`: as many as the measurements allow, up to `MAX_RANK`.
    pub rank: Option<usize>,
    pub regularization: f64,
}

impl Default for EstimateOptions {
    fn default() -> Self {
        EstimateOptions { rank: None, regularization: DEFAULT_REGULARIZATION }
    }
}

/// One completed row: a value for every column of the reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Steps/s per column: measured where given, estimated elsewhere (`None`: the reference has
    /// no measurement at all in that column, so nothing can be said).
    pub values: Vec<Option<f64>>,
    pub estimated: Vec<bool>,
    /// Per column, the relative error the same estimate made on the reference jobs when each was
    /// held out with the same columns measured (`exp(RMS log error) − 1`); 0 where measured.
    pub expected_relative_error: Vec<f64>,
    /// The reference job nearest to the completed row, and how far (`exp(RMS log distance) − 1`).
    pub fingerprint: String,
    pub fingerprint_distance: f64,
    pub rank: usize,
}

/// A reference matrix, completed once, ready to complete new rows.
#[derive(Debug)]
pub struct Estimator {
    reference: ReferenceMatrix,
    /// Columns with at least one positive reference measurement (the others cannot be estimated).
    usable: Vec<usize>,
    model: LowRankModel,
    /// The model of the reference without each job, for expected errors; built on first use.
    folds: OnceLock<Vec<LowRankModel>>,
}

fn log_matrix(reference: &ReferenceMatrix, usable: &[usize]) -> Vec<Vec<Option<f64>>> {
    reference.values.iter().map(|row| usable.iter().map(|&j| row[j].map(f64::ln)).collect()).collect()
}

impl Estimator {
    /// Completes `reference`; it needs at least two reference jobs with a positive measurement.
    pub fn new(reference: ReferenceMatrix) -> Result<Estimator> {
        let usable: Vec<usize> =
            (0..reference.columns.len()).filter(|&j| reference.values.iter().any(|r| r[j].is_some())).collect();
        let measured_jobs = reference.values.iter().filter(|r| r.iter().any(Option::is_some)).count();
        if measured_jobs < 2 || usable.is_empty() {
            return Err(ArbiterError::at(
                ErrorCode::TooFewMeasurements,
                "reference",
                format!(
                    "the reference matrix needs at least two jobs with a positive throughput; it has {measured_jobs} (scale factor {})",
                    reference.scale_factor
                ),
            ));
        }
        let model = complete(&log_matrix(&reference, &usable), MAX_RANK);
        Ok(Estimator { reference, usable, model, folds: OnceLock::new() })
    }

    pub fn reference(&self) -> &ReferenceMatrix {
        &self.reference
    }

    fn folds(&self) -> &[LowRankModel] {
        self.folds.get_or_init(|| {
            (0..self.reference.jobs.len())
                .into_par_iter()
                .map(|i| complete(&log_matrix(&self.reference.without_job(i), &self.usable), MAX_RANK))
                .collect()
        })
    }

    /// Completes a row from `measured` (reference column index, steps/s). A measured 0 stays 0
    /// (the job cannot run there), makes the job's unmeasured pair columns on that worker type 0
    /// (it cannot share what it cannot run on) and informs nothing else; NaN, negative or infinite values and
    /// unknown columns are refused; so is a rank the positive measurements cannot determine.
    pub fn estimate(&self, measured: &[(usize, f64)], options: EstimateOptions) -> Result<Estimate> {
        let d = self.reference.columns.len();
        let mut given: Vec<Option<f64>> = vec![None; d];
        for &(j, value) in measured {
            if j >= d {
                return Err(ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "measured",
                    format!("column {j} is not in the reference"),
                ));
            }
            if let Some(why) = crate::problem::refusal(value, 0.0, "a measured throughput") {
                return Err(ArbiterError::at(ErrorCode::InvalidNumber, "measured", why));
            }
            given[j] = Some(value);
        }
        let known = self.known_log(&given);
        let rank = self.rank_for(known.len(), options.rank)?;
        let fit = fit_row(&self.model, &known, rank, options.regularization);
        let errors = self.expected_errors(&known, rank, options.regularization);
        let mut values = vec![None; d];
        let mut estimated = vec![false; d];
        let mut expected_relative_error = vec![0.0; d];
        for (u, &j) in self.usable.iter().enumerate() {
            values[j] = Some(fit.values[u].exp());
            estimated[j] = true;
            expected_relative_error[j] = errors[u];
        }
        for (j, g) in given.iter().enumerate() {
            if let Some(v) = *g {
                values[j] = Some(v);
                estimated[j] = false;
                expected_relative_error[j] = 0.0;
            }
        }
        // A job that cannot run on a worker type cannot share it either: its unmeasured pair
        // columns there are 0, with no error to expect of them.
        for (j, column) in self.reference.columns.iter().enumerate() {
            if let Column::Pair { worker_type, .. } = column {
                if given[j].is_none() && self.cannot_run_on(&given, worker_type) {
                    values[j] = Some(0.0);
                    estimated[j] = true;
                    expected_relative_error[j] = f64::NAN;
                }
            }
        }
        let (nearest, distance) = self.nearest_reference(&fit.values);
        Ok(Estimate {
            values,
            estimated,
            expected_relative_error,
            fingerprint: self.reference.jobs[nearest].clone(),
            fingerprint_distance: distance.exp() - 1.0,
            rank,
        })
    }

    /// Whether `given` measures the job at 0 alone on `worker_type`.
    fn cannot_run_on(&self, given: &[Option<f64>], worker_type: &str) -> bool {
        let solo = Column::Solo { worker_type: worker_type.to_string() };
        self.reference.column_index(&solo).is_some_and(|j| given[j] == Some(0.0))
    }

    /// The positive measurements as (usable column position, log value).
    fn known_log(&self, given: &[Option<f64>]) -> Vec<(usize, f64)> {
        self.usable
            .iter()
            .enumerate()
            .filter_map(|(u, &j)| given[j].filter(|&v| v > 0.0).map(|v| (u, v.ln())))
            .collect()
    }

    /// Refuses a requested rank above what the reference's factors support.
    pub fn check_rank(&self, requested: Option<usize>) -> Result<()> {
        match requested {
            Some(r) if r > self.model.rank => Err(ArbiterError::at(
                ErrorCode::TooFewMeasurements,
                "rank",
                format!("rank {r} is above what the reference supports ({})", self.model.rank),
            )),
            _ => Ok(()),
        }
    }

    fn rank_for(&self, known: usize, requested: Option<usize>) -> Result<usize> {
        if known == 0 {
            return Err(ArbiterError::at(
                ErrorCode::TooFewMeasurements,
                "measured",
                "at least one positive measured throughput is needed to estimate the others",
            ));
        }
        self.check_rank(requested)?;
        match requested {
            Some(r) if known < r + 1 => Err(ArbiterError::at(
                ErrorCode::TooFewMeasurements,
                "rank",
                format!(
                    "rank {r} needs at least {} positive measurements (a bias and {r} factors); {known} given",
                    r + 1
                ),
            )),
            Some(r) => Ok(r),
            None => Ok((known - 1).min(self.model.rank)),
        }
    }

    /// Per usable column, `exp(RMS log error) − 1` of the same fit on each reference job held
    /// out with the same columns known (jobs missing any known column, or the column, skipped).
    fn expected_errors(&self, known: &[(usize, f64)], rank: usize, regularization: f64) -> Vec<f64> {
        let log = log_matrix(&self.reference, &self.usable);
        let columns = self.usable.len();
        let mut sum = vec![0.0; columns];
        let mut count = vec![0usize; columns];
        for (i, fold) in self.folds().iter().enumerate() {
            let held: Option<Vec<(usize, f64)>> = known.iter().map(|&(u, _)| log[i][u].map(|v| (u, v))).collect();
            let Some(held) = held else { continue };
            let fit = fit_row(fold, &held, rank.min(fold.rank), regularization);
            for u in 0..columns {
                if let Some(truth) = log[i][u] {
                    sum[u] += (fit.values[u] - truth).powi(2);
                    count[u] += 1;
                }
            }
        }
        (0..columns)
            .map(|u| if count[u] == 0 { f64::NAN } else { (sum[u] / count[u] as f64).sqrt().exp() - 1.0 })
            .collect()
    }

    fn nearest_reference(&self, row: &[f64]) -> (usize, f64) {
        let completed = &self.model.completed;
        (0..completed.nrows())
            .map(|i| {
                let d = (0..row.len()).map(|u| (completed[(i, u)] - row[u]).powi(2)).sum::<f64>() / row.len() as f64;
                (i, d.sqrt())
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, f64::INFINITY))
    }
}

/// One estimator per scale factor over a measured-throughput table, each built when first asked.
pub struct ByScaleFactor<'a> {
    table: &'a ThroughputTable,
    worker_types: Vec<String>,
    with_pairs: bool,
    built: HashMap<u32, Estimator>,
}

impl<'a> ByScaleFactor<'a> {
    pub fn new(table: &'a ThroughputTable, worker_types: Vec<String>, with_pairs: bool) -> Self {
        ByScaleFactor { table, worker_types, with_pairs, built: HashMap::new() }
    }

    /// The estimator of jobs on `scale_factor` GPUs; errors name `field`.
    pub fn get(&mut self, scale_factor: u32, field: &str) -> Result<&Estimator> {
        use std::collections::hash_map::Entry;
        match self.built.entry(scale_factor) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => {
                let reference =
                    ReferenceMatrix::from_table(self.table, &self.worker_types, scale_factor, self.with_pairs);
                let estimator =
                    Estimator::new(reference).map_err(|err| ArbiterError { field: Some(field.to_string()), ..err })?;
                Ok(e.insert(estimator))
            }
        }
    }
}
