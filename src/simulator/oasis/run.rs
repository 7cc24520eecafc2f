//! One scheme over one workload: the jobs validated, decided in arrival order, and what each
//! admitted job was worth when it completed. OASiS here; the baselines in `baselines.rs`.

use crate::error::Result;
use crate::scheduling::oasis::{ClusterSpec, Job, JobSpec, LowestUtility, Oasis, PriceParameters, Utility};
use crate::simulator::Progress;
use serde::Serialize;

/// The paper's three kinds of job, by how their utility falls with completion time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UtilityClass {
    /// A constant utility, or a sigmoid that does not decay.
    TimeInsensitive,
    /// A sigmoid of decay `γ2 < 4` (the study draws 0.01–1).
    TimeSensitive,
    /// A sigmoid of decay `γ2 ≥ 4` (the study draws 4–6).
    TimeCritical,
}

impl UtilityClass {
    pub fn of(utility: &Utility) -> UtilityClass {
        match *utility {
            Utility::Sigmoid { decay, .. } if decay >= 4.0 => UtilityClass::TimeCritical,
            Utility::Sigmoid { decay, .. } if decay > 0.0 => UtilityClass::TimeSensitive,
            _ => UtilityClass::TimeInsensitive,
        }
    }
}

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
    let mut ids = std::collections::HashSet::new();
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let job = Job::new(s.clone(), cluster.slot_seconds, cluster.slots, &format!("jobs[{i}]"))?;
            if !ids.insert(s.id.as_str()) {
                return Err(crate::error::ArbiterError::at(
                    crate::error::ErrorCode::DuplicateJobId,
                    format!("jobs[{i}].id"),
                    format!("job id {:?} appears twice", s.id),
                ));
            }
            Ok(job)
        })
        .collect()
}

/// Refuses, before any decision, a job whose best schedule OASiS would not compute
/// (`Oasis::check_size`), naming it `jobs[i]` as [`validate`] names the others: found only when
/// its turn came, it failed a run after the jobs before it (and any baselines) had run.
pub fn check_sizes(oasis: &Oasis, jobs: &[Job]) -> Result<()> {
    jobs.iter().enumerate().try_for_each(|(i, job)| oasis.check_size(job, &format!("jobs[{i}]")))
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
    oasis_reporting(cluster, jobs, lowest, u, l, &mut |_| {})
}

/// The same; `progress` hears after every decision (`measured_finished`: the jobs decided,
/// `active_jobs`: those admitted).
pub fn oasis_reporting(
    cluster: &ClusterSpec,
    jobs: &[Job],
    lowest: LowestUtility,
    u: f64,
    l: f64,
    progress: &mut dyn FnMut(Progress),
) -> Result<(RunOutcome, PriceParameters)> {
    let prices = PriceParameters::estimate_with(jobs, cluster, lowest)?.scaled(u, l)?;
    let mut scheduler = Oasis::new(cluster.clone(), prices)?;
    check_sizes(&scheduler, jobs)?;
    // Decided in arrival order (ties: the order given); reported in the order given.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| jobs[i].spec.arrival_slot);
    let mut outcomes: Vec<Option<JobOutcome>> = vec![None; jobs.len()];
    let mut admitted = 0;
    for (decided, &i) in order.iter().enumerate() {
        let job = &jobs[i];
        let d = scheduler.decide(job)?;
        admitted += usize::from(d.admitted);
        let completion_slot = d.schedule.as_ref().filter(|_| d.admitted).map(|s| s.completion_slot);
        outcomes[i] = Some(JobOutcome {
            id: job.spec.id.clone(),
            admitted: d.admitted,
            completion_slot,
            utility: if d.admitted { d.utility } else { 0.0 },
        });
        progress(Progress {
            now_seconds: job.spec.arrival_slot as f64 * cluster.slot_seconds,
            rounds: job.spec.arrival_slot as u64,
            measured_finished: decided + 1,
            measured_total: jobs.len(),
            active_jobs: admitted,
        });
    }
    Ok((RunOutcome::new("oasis", outcomes.into_iter().flatten().collect()), prices))
}
