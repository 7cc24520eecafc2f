//! One scheme over one workload: the jobs validated, decided in arrival order, and what each
//! admitted job was worth when it completed. OASiS here; the baselines in `baselines.rs`.

use crate::error::Result;
use crate::scheduling::oasis::{ClusterSpec, Job, JobSpec, LowestUtility, Oasis, PriceParameters, Utility};
use serde::Serialize;

/// One job's fate under one scheme.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobOutcome {
    pub id: String,
    pub admitted: bool,
    /// The slot its last chunk is trained in (admitted and finished within the horizon).
    pub completion_slot: Option<usize>,
    /// Its utility then; 0 if it was not admitted or did not finish.
    pub utility: f64,
}

/// A scheme's run over a workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutcome {
    pub scheme: String,
    pub total_utility: f64,
    pub admitted: usize,
    pub finished: usize,
    pub jobs: Vec<JobOutcome>,
}

impl RunOutcome {
    pub fn new(scheme: &str, jobs: Vec<JobOutcome>) -> RunOutcome {
        RunOutcome {
            scheme: scheme.into(),
            total_utility: jobs.iter().map(|j| j.utility).sum(),
            admitted: jobs.iter().filter(|j| j.admitted).count(),
            finished: jobs.iter().filter(|j| j.completion_slot.is_some()).count(),
            jobs,
        }
    }
}

/// Validates every job (an error names the first bad one).
pub fn validate(cluster: &ClusterSpec, specs: &[JobSpec]) -> Result<Vec<Job>> {
    cluster.validate()?;
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| Job::new(s.clone(), cluster.slot_seconds, cluster.slots, &format!("jobs[{i}]")))
        .collect()
}

/// `(completion − arrival + 1) − γ3` for a finished job with a sigmoid utility and `γ2 > 0`:
/// how late it was against its target, in slots.
pub fn lateness(job: &Job, outcome: &JobOutcome) -> Option<f64> {
    match (job.spec.utility, outcome.completion_slot) {
        (Utility::Sigmoid { decay, target, .. }, Some(done)) if decay > 0.0 => {
            Some((done + 1 - job.spec.arrival_slot) as f64 - target)
        }
        _ => None,
    }
}

/// OASiS with prices estimated from the workload (`lowest` sets `L`), `U` and `L` then scaled
/// by `u`, `l`.
pub fn oasis(
    cluster: &ClusterSpec,
    jobs: &[Job],
    lowest: LowestUtility,
    u: f64,
    l: f64,
) -> Result<(RunOutcome, PriceParameters)> {
    let prices = PriceParameters::estimate_with(jobs, cluster, lowest)?.scaled(u, l)?;
    let mut scheduler = Oasis::new(cluster.clone(), prices)?;
    let mut outcomes = Vec::with_capacity(jobs.len());
    for job in jobs {
        let d = scheduler.decide(job)?;
        let completion_slot = d.schedule.as_ref().filter(|_| d.admitted).map(|s| s.completion_slot);
        outcomes.push(JobOutcome {
            id: job.spec.id.clone(),
            admitted: d.admitted,
            completion_slot,
            utility: if d.admitted { d.utility } else { 0.0 },
        });
    }
    Ok((RunOutcome::new("oasis", outcomes), prices))
}
