//! The reference matrix: reference jobs (rows) × what can be measured of a job (columns): its
//! steps/s alone on each worker type, and beside each reference job on each worker type. Built
//! from a measured-throughput table (Gavel's file format) for one scale factor.

use crate::workload::throughputs::ThroughputTable;

/// What one column measures.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Column {
    /// Steps/s alone on the worker type.
    Solo { worker_type: String },
    /// Steps/s while sharing the worker type with the reference job `partner`.
    Pair { worker_type: String, partner: String },
}

impl Column {
    pub fn worker_type(&self) -> &str {
        match self {
            Column::Solo { worker_type } | Column::Pair { worker_type, .. } => worker_type,
        }
    }
}

/// Reference jobs × columns; `None` where unmeasured, and also where the measurement is 0 (a job
/// that cannot run, or cannot share, there says nothing about its speed elsewhere).
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceMatrix {
    pub scale_factor: u32,
    pub jobs: Vec<String>,
    pub columns: Vec<Column>,
    pub values: Vec<Vec<Option<f64>>>,
}

impl ReferenceMatrix {
    /// The reference of `table`'s job types at `scale_factor` on `worker_types`, with a pair
    /// column per (worker type, reference job) when `with_pairs`.
    pub fn from_table(
        table: &ThroughputTable,
        worker_types: &[String],
        scale_factor: u32,
        with_pairs: bool,
    ) -> ReferenceMatrix {
        let jobs = table.job_types(scale_factor);
        let mut columns: Vec<Column> = worker_types.iter().map(|w| Column::Solo { worker_type: w.clone() }).collect();
        if with_pairs {
            for w in worker_types {
                columns.extend(jobs.iter().map(|p| Column::Pair { worker_type: w.clone(), partner: p.clone() }));
            }
        }
        let positive = |v: f64| (v > 0.0 && v.is_finite()).then_some(v);
        let values = jobs
            .iter()
            .map(|job| {
                columns
                    .iter()
                    .map(|column| match column {
                        Column::Solo { worker_type } => table.solo(worker_type, job, scale_factor).and_then(positive),
                        Column::Pair { worker_type, partner } => table
                            .colocated(worker_type, (job, scale_factor), (partner, scale_factor))
                            .and_then(|[mine, _]| positive(mine)),
                    })
                    .collect()
            })
            .collect();
        ReferenceMatrix { scale_factor, jobs, columns, values }
    }

    pub fn column_index(&self, column: &Column) -> Option<usize> {
        self.columns.iter().position(|c| c == column)
    }

    /// The reference without row `i` (for leave-one-job-out evaluation).
    pub fn without_job(&self, i: usize) -> ReferenceMatrix {
        let mut reduced = self.clone();
        reduced.jobs.remove(i);
        reduced.values.remove(i);
        reduced
    }
}
