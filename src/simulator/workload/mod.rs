//! Workloads for the simulator: traces of arriving jobs and the throughput table they run at.
//!
//! - [`trace`]: Gavel's tab-separated trace format and our JSON trace, both read into a [`Trace`].
//! - [`throughputs`]: Gavel's measured-throughput file, read into a [`ThroughputTable`].
//! - [`generator`]: seeded continuous (Poisson) and static traces with Gavel's job mix.
//! - [`tenants`]: a seeded multi-tenant trace (skewed weights and demands, bursty arrivals, mostly
//!   short jobs), for long-term fairness.

pub mod generator;
pub mod tenants;
pub mod throughputs;
pub mod trace;

use serde::{Deserialize, Serialize};

/// Most jobs a generated workload holds (a round-based trace, a day's burst, a FitGpp or OASiS
/// workload): each is drawn and held in memory before any simulation runs.
pub const MAX_GENERATED_JOBS: usize = 1_000_000;

/// One job of a trace, as it arrives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceJob {
    /// The job type, Gavel's model name with its batch size: `"ResNet-50 (batch size 64)"`.
    pub job_type: String,
    /// Steps the job trains for.
    pub total_steps: f64,
    /// GPUs the job occupies while it runs.
    pub scale_factor: u32,
    /// Priority weight.
    pub weight: f64,
    /// Seconds after arrival by which the job should finish; `None`: no SLO.
    pub slo_seconds: Option<f64>,
    /// Arrival time in seconds from the start of the trace.
    pub arrival_seconds: f64,
    /// The tenant that submitted it (`Trace::tenants` gives its weight; absent there: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// The jobs of a trace, in arrival order (ties: order in the file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    pub jobs: Vec<TraceJob>,
    /// Tenant → weight (its quota is `M · W / Σ W` GPUs); tenants jobs name and this leaves out
    /// weigh 1.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tenants: std::collections::BTreeMap<String, f64>,
    /// Where a Gavel trace's jobs were read: job `i` on line `lines[i]` (from 1), which its
    /// refusals name (`trace.line[N]`). Empty for other traces, whose refusals name
    /// `trace.jobs[i]`.
    #[serde(skip)]
    pub lines: Vec<usize>,
}

/// Tenants with their weights, in name order, and each job's tenant among them.
pub type Tenancy = (Vec<(String, f64)>, Vec<usize>);

impl Trace {
    /// A trace of `jobs` with no tenants.
    pub fn new(jobs: Vec<TraceJob>) -> Trace {
        Trace { jobs, tenants: Default::default(), lines: Vec::new() }
    }

    /// Job `i`'s field in refusals: `trace.line[N]` for a job read from a Gavel trace's line N,
    /// else `trace.jobs[i]`.
    pub fn job_field(&self, i: usize) -> String {
        match self.lines.get(i) {
            Some(line) => format!("trace.line[{line}]"),
            None => format!("trace.jobs[{i}]"),
        }
    }

    /// The tenants with their weights, in name order, and each job's tenant among them; `None`
    /// when no job names a tenant and none is listed.
    pub fn tenancy(&self) -> Option<Tenancy> {
        let mut weights = self.tenants.clone();
        for job in &self.jobs {
            if let Some(t) = &job.tenant {
                weights.entry(t.clone()).or_insert(1.0);
            }
        }
        if weights.is_empty() {
            return None;
        }
        let tenants: Vec<(String, f64)> = weights.into_iter().collect();
        let of_job = self
            .jobs
            .iter()
            .map(|j| j.tenant.as_ref().map_or(0, |t| tenants.iter().position(|(n, _)| n == t).unwrap_or(0)))
            .collect();
        Some((tenants, of_job))
    }
}
