//! One workload through a FitGpp cluster (`scheduling::fitgpp::Cluster`): arrivals and the
//! cluster's own events in time order until every job has finished. Not for the metrics
//! (`metrics.rs`) or for choosing the arrival rate (`calibrate.rs`).

use super::workload::Arrival;
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::scheduling::fitgpp::{Cluster, Job, Preemptor, Resources};

/// `arrivals` (in time order) on nodes of `capacities` under `preemptor`; `observe` sees the
/// cluster after every step (arrivals at one instant, or one instant's events). The finished jobs.
pub fn run_observed(
    arrivals: &[Arrival],
    capacities: &[Resources],
    preemptor: Box<dyn Preemptor>,
    observe: &mut dyn FnMut(&Cluster),
) -> Result<Vec<Job>> {
    if let Some(w) = arrivals.windows(2).find(|w| w[0].time.partial_cmp(&w[1].time).is_none_or(|o| o.is_gt())) {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "arrivals",
            format!("arrivals must be in time order, got {} after {}", w[1].time, w[0].time),
        ));
    }
    if let Some(a) = arrivals.iter().find(|a| !(a.time.is_finite() && a.time >= 0.0)) {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "arrivals",
            format!("job {:?}: an arrival time must be finite and ≥ 0, got {}", a.spec.id, a.time),
        ));
    }
    let mut cluster = Cluster::new(capacities, preemptor)?;
    let mut next = 0;
    loop {
        let arrival = arrivals.get(next).map(|a| a.time);
        let event = cluster.next_event();
        match (arrival, event) {
            (None, None) => break,
            // An instant's completions and grace ends come before its arrivals.
            (Some(a), _) if event.is_none_or(|e| a < e) => {
                cluster.advance_to(a)?;
                while next < arrivals.len() && arrivals[next].time == a {
                    cluster.submit(arrivals[next].spec.clone())?;
                    next += 1;
                }
                cluster.schedule();
            }
            (_, Some(e)) | (Some(e), None) => {
                cluster.advance_to(e)?;
            }
        }
        observe(&cluster);
    }
    let jobs = cluster.jobs().to_vec();
    if let Some(stuck) = jobs.iter().find(|j| j.finish.is_none()) {
        return Err(ArbiterError::new(
            ErrorCode::Infeasible,
            format!("job {:?} never finished: nothing left to run and it does not fit", stuck.spec.id),
        ));
    }
    Ok(jobs)
}

/// `run_observed` without an observer.
pub fn run(arrivals: &[Arrival], capacities: &[Resources], preemptor: Box<dyn Preemptor>) -> Result<Vec<Job>> {
    run_observed(arrivals, capacities, preemptor, &mut |_| {})
}

/// The cluster load between `from` and `to`: the demand of the jobs present (arrived, not
/// finished), as a share of the cluster's capacity averaged over the three resources, averaged
/// over time.
pub fn load(jobs: &[Job], capacities: &[Resources], from: f64, to: f64) -> f64 {
    let total = capacities.iter().fold(Resources::default(), |a, c| a.plus(c));
    if to <= from {
        return 0.0;
    }
    let weighted: f64 = jobs
        .iter()
        .map(|j| {
            let end = j.finish.unwrap_or(f64::INFINITY);
            let overlap = (end.min(to) - j.arrival.max(from)).max(0.0);
            j.spec.demand.share_of(&total) * overlap
        })
        .sum();
    weighted / (to - from)
}
