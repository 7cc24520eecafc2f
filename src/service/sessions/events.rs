//! The events that change a session, as they are stored, and the one `apply` that both the live
//! requests and the replay after a restart go through: replaying a session's events in order on
//! its fresh session rebuilds it exactly (same jobs, received times, allocation, leases).
//!
//! Bodies are kept as the text the client sent, so replay parses the same bytes to the same
//! numbers; solved allocations are kept bit for bit, so replay never solves.

use super::spec::{relative_to_job, Spec};
use crate::error::{ArbiterError, ErrorCode};
use crate::mechanism::{Round, Session};
use crate::problem::Matrix;
use crate::request::JobSpec;
use crate::service::error::{ApiError, ApiResult};
use crate::service::extract::parse_stored;
use crate::service::k8s::bindings::PodBinding;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// One accepted change to a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// `body`: a job of the contract (`JobSpec`).
    AddJob {
        body: String,
    },
    RemoveJob {
        job: String,
    },
    /// `body`: a `Progress`.
    Progress {
        job: String,
        body: String,
    },
    /// `body`: a `Throughputs`.
    Throughputs {
        body: String,
    },
    WorkerFailed {
        worker: String,
    },
    WorkerReturned {
        worker: String,
    },
    /// The allocation was recomputed (and received time reset) to this.
    Allocation {
        allocation: Stored,
    },
    /// One round ran, after installing `allocation` if the old one was stale.
    Round {
        allocation: Option<Stored>,
    },
    /// The Kubernetes extender bound a pod of a job to a node (`k8s::bindings`).
    PodBound {
        binding: PodBinding,
    },
    /// A bound pod is gone (evicted or deleted).
    PodForgotten {
        namespace: String,
        name: String,
    },
}

impl Event {
    pub fn kind(&self) -> &'static str {
        match self {
            Event::AddJob { .. } => "add_job",
            Event::RemoveJob { .. } => "remove_job",
            Event::Progress { .. } => "progress",
            Event::Throughputs { .. } => "throughputs",
            Event::WorkerFailed { .. } => "worker_failed",
            Event::WorkerReturned { .. } => "worker_returned",
            Event::Allocation { .. } => "allocation",
            Event::Round { .. } => "round",
            Event::PodBound { .. } => "pod_bound",
            Event::PodForgotten { .. } => "pod_forgotten",
        }
    }
}

/// An allocation matrix stored exactly: its shape and its nonzero entries `(row, column, bits)`,
/// and what a realizable solve made of it (so a replay follows the same decomposition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    pub rows: usize,
    pub cols: usize,
    pub entries: Vec<(u32, u32, u64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realized: Option<StoredRealized>,
    /// The solve's GPU prices and its tie-break's, where a price decomposition found them: the
    /// session's next solve starts from them (`Problem::warm_prices`), after a restart too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie_break_prices: Option<Vec<f64>>,
    /// The tie-break that followed the solve's optimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie_break: Option<crate::solver::tie_break::TieBreak>,
}

/// A realizable solve's report and its decomposition: configurations of `(job row, type)` runs
/// with their weights' bits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRealized {
    pub report: crate::solver::realizable::RealizableReport,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configurations: Option<Vec<StoredRuns>>,
}

/// A configuration's weight (its bits) and its `(job row, type)` runs.
pub type StoredRuns = (u64, Vec<(u32, u32)>);

impl Stored {
    /// A solved allocation `X` with what its realizable solve made of it, if one ran.
    pub fn of(allocation: &crate::mechanism::Allocation) -> Stored {
        let realized = allocation.realized.as_ref().map(|r| StoredRealized {
            report: r.report.clone(),
            configurations: r.configurations.as_ref().map(|cs| {
                cs.iter()
                    .map(|(weight, runs)| (weight.to_bits(), runs.iter().map(|&(m, w)| (m as u32, w as u32)).collect()))
                    .collect()
            }),
        });
        Stored {
            realized,
            prices: allocation.prices.clone(),
            tie_break_prices: allocation.tie_break_prices.clone(),
            tie_break: allocation.tie_break,
            ..Stored::new(&allocation.allocation)
        }
    }

    /// What the realizable solve made of the allocation, as the session installs it.
    pub fn realized(&self) -> Option<crate::mechanism::Realized> {
        self.realized.as_ref().map(|r| crate::mechanism::Realized {
            report: r.report.clone(),
            configurations: r.configurations.as_ref().map(|cs| {
                cs.iter()
                    .map(|(bits, runs)| {
                        (f64::from_bits(*bits), runs.iter().map(|&(m, w)| (m as usize, w as usize)).collect())
                    })
                    .collect()
            }),
        })
    }

    pub fn new(x: &Matrix) -> Stored {
        let mut entries = Vec::new();
        for r in 0..x.rows() {
            for (c, &v) in x.row(r).iter().enumerate() {
                if v != 0.0 {
                    entries.push((r as u32, c as u32, v.to_bits()));
                }
            }
        }
        Stored {
            rows: x.rows(),
            cols: x.cols(),
            entries,
            realized: None,
            prices: None,
            tie_break_prices: None,
            tie_break: None,
        }
    }

    pub fn matrix(&self) -> ApiResult<Matrix> {
        let mut x = Matrix::zeros(self.rows, self.cols);
        for &(r, c, bits) in &self.entries {
            if r as usize >= self.rows || c as usize >= self.cols {
                return Err(ApiError::Internal("a stored allocation entry is out of its shape".into()));
            }
            x.set(r as usize, c as usize, f64::from_bits(bits));
        }
        Ok(x)
    }
}

/// `POST /v1/sessions/{id}/jobs/{job}/progress`: the job ran `steps` steps on `worker_type`, at
/// a measured `throughput` steps/s.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Progress {
    pub worker_type: String,
    /// Steps done since the last report (≥ 0): subtracted from `steps_remaining`.
    pub steps: f64,
    /// Measured steps/s on `worker_type` (≥ 0), folded into the job's throughput as a moving average.
    pub throughput: f64,
    /// Metrics the job reports (`loss`, `iteration_seconds`, ...), finite numbers; the latest
    /// value of each is kept, and a composition's stages read them (Optimus its loss curve).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::contract::unique_keys::optional"
    )]
    pub metrics: Option<BTreeMap<String, f64>>,
    /// The report's number among the job's reports, increasing (a whole number ≥ 0). A report
    /// whose number is not above every number the job's reports carried before is a retry of one
    /// already counted: it is answered as the job stands and changes nothing. Send a job's
    /// reports one at a time and repeat the number when retrying; without it, every report counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
}

/// `PUT /v1/sessions/{id}/throughputs`: new throughput rows (steps/s per worker type; a type
/// left out: cannot run there) for some jobs, all applied or none.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Throughputs {
    #[schema(example = json!({"resnet50": {"v100": 10.5, "p100": 6.1, "k80": 1.0}}))]
    #[serde(deserialize_with = "crate::contract::unique_keys::nested")]
    pub throughputs: IndexMap<String, BTreeMap<String, Option<f64>>>,
}

/// What applying an event did, for the response.
#[derive(Debug)]
pub enum Applied {
    Changed,
    Round(Round),
    /// A progress report already counted (`Progress::sequence`): nothing changed.
    Repeated,
}

/// Applies `event` to `session`. Live requests build the event (solving first, when a
/// recomputation is due) and apply it to a copy of the session; replay applies the stored one.
pub fn apply(spec: &Spec, session: &mut Session, event: &Event) -> ApiResult<Applied> {
    match event {
        // A live body was read by `parse_object` before its event was built; a stored one reads
        // as it was taken.
        Event::AddJob { body } => {
            let job: JobSpec = parse_stored(body)?;
            let (job, throughput, spread) = spec.job(&job, session.time())?;
            session.add_job_spread(job, &throughput, spread.as_deref()).map_err(relative_to_job)?;
            super::estimates::mark(session, body)?;
        }
        Event::RemoveJob { job } => {
            session.remove_job(job)?;
        }
        Event::Progress { job, body } => {
            let progress: Progress = parse_stored(body)?;
            let w = session.cluster().type_index(&progress.worker_type).ok_or_else(|| {
                ArbiterError::at(
                    ErrorCode::UnknownWorkerType,
                    "worker_type",
                    format!("worker type {:?} is not in the session's cluster", progress.worker_type),
                )
            })?;
            if let Some(sequence) = progress.sequence {
                if !session.new_report(job, sequence)? {
                    return Ok(Applied::Repeated);
                }
            }
            session.report_progress(job, w, progress.steps, progress.throughput)?;
            if let Some(metrics) = &progress.metrics {
                session.report_metrics(job, metrics)?;
            }
        }
        Event::Throughputs { body } => {
            let update: Throughputs = parse_stored(body)?;
            for (job, row) in &update.throughputs {
                session.job(job).map_err(|e| at_job(e, job))?; // an unknown job before its row
                let row = throughput_row(session, job, row)?;
                session.update_throughput(job, &row).map_err(|e| at_job(e, job))?;
            }
        }
        Event::WorkerFailed { worker } => session.worker_failed(worker)?,
        Event::WorkerReturned { worker } => session.worker_returned(worker)?,
        Event::Allocation { allocation } => install(session, allocation)?,
        Event::Round { allocation } => {
            if let Some(allocation) = allocation {
                install(session, allocation)?;
            }
            if session.is_stale() {
                // Never reached through the service: it installs a fresh allocation first.
                return Err(ApiError::Internal("a round on a stale allocation without a solved one".into()));
            }
            return Ok(Applied::Round(session.next_round()?));
        }
        // Kubernetes bookkeeping: the mechanism's session does not change (`k8s::bindings`).
        Event::PodBound { .. } | Event::PodForgotten { .. } => {}
    }
    Ok(Applied::Changed)
}

/// A job's row in the session's type order from `{type: steps/s}`; absent or null: 0.
fn throughput_row(session: &Session, job: &str, row: &BTreeMap<String, Option<f64>>) -> ApiResult<Vec<f64>> {
    let cluster = session.cluster();
    let mut out = vec![0.0; cluster.num_types()];
    for (name, value) in row {
        let field = format!("throughputs.{job}.{name}");
        let w = cluster.type_index(name).ok_or_else(|| {
            ArbiterError::at(
                ErrorCode::UnknownWorkerType,
                &field,
                format!("worker type {name:?} is not in the cluster"),
            )
        })?;
        let v = value.unwrap_or(0.0);
        if let Some(why) = crate::problem::refusal(v, 0.0, "a throughput") {
            return Err(ArbiterError::at(ErrorCode::InvalidNumber, field, why).into());
        }
        out[w] = v;
    }
    Ok(out)
}

/// A session error about one job of a bulk update (an unknown one too), with its field under
/// `throughputs.<job>`: the key of the body that it is about.
fn at_job(mut e: ArbiterError, job: &str) -> ArbiterError {
    e.field = Some(format!("throughputs.{job}"));
    e
}

/// Installs a solved allocation, and its prices as the next solve's start.
fn install(session: &mut Session, allocation: &Stored) -> ApiResult<()> {
    session.set_solved_allocation(&allocation.matrix()?, allocation.realized(), allocation.tie_break)?;
    session.set_warm_prices(allocation.prices.clone(), allocation.tie_break_prices.clone());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_allocation_keeps_its_prices_and_events_from_before_them_still_read() {
        let x = Matrix::from_rows(&[vec![0.5, 0.25]]);
        let allocation = crate::mechanism::Allocation {
            allocation: x.clone(),
            colocated: Matrix::zeros(0, 2),
            prices: Some(vec![0.125, 0.0]),
            tie_break_prices: Some(vec![1.5, 0.75]),
            tie_break: Some(crate::solver::tie_break::TieBreak::Throughput),
            realized: None,
        };
        let stored = Stored::of(&allocation);
        let read: Stored = serde_json::from_str(&serde_json::to_string(&stored).unwrap()).unwrap();
        assert_eq!(read, stored);
        assert_eq!(read.tie_break_prices, Some(vec![1.5, 0.75]));
        // An event stored before prices were: no warm start, the same matrix.
        let old: Stored = serde_json::from_str(r#"{"rows": 1, "cols": 2, "entries": []}"#).unwrap();
        assert_eq!((old.prices, old.tie_break_prices, old.tie_break), (None, None, None));
    }
}
