//! The slot simulator the baselines run in: jobs arrive at their slots and are admitted or not
//! by the scheme; each slot the scheme places workers on fresh pools (capacities enforced by
//! `Pool::commit`), every placed worker trains one worker-slot, and a job completes in the slot
//! its `K_i`-th worker-slot is trained. OASiS's schedules are fixed at admission, so its runs are
//! `run::oasis`; the outcome types are shared.

use super::run::{JobOutcome, RunOutcome};
use crate::error::Result;
use crate::scheduling::oasis::baselines::{Placer, Progress, SlotScheme};
use crate::scheduling::oasis::{ClusterSpec, Job};
use crate::simulator::Progress as Report;

/// Runs `scheme` over the horizon.
pub fn simulate(cluster: &ClusterSpec, jobs: &[Job], scheme: &mut dyn SlotScheme) -> Result<RunOutcome> {
    simulate_reporting(cluster, jobs, scheme, &mut |_| {})
}

/// The same; `report` hears after every slot (`measured_finished`: the jobs finished,
/// `active_jobs`: those that ran in the slot).
pub fn simulate_reporting(
    cluster: &ClusterSpec,
    jobs: &[Job],
    scheme: &mut dyn SlotScheme,
    report: &mut dyn FnMut(Report),
) -> Result<RunOutcome> {
    cluster.validate()?;
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| (jobs[i].spec.arrival_slot, i));
    let mut progress = vec![Progress::default(); jobs.len()];
    let mut next = 0;
    for slot in 0..cluster.slots {
        while next < order.len() && jobs[order[next]].spec.arrival_slot == slot {
            let i = order[next];
            progress[i].admitted = scheme.admit(i, slot, jobs, &progress);
            next += 1;
        }
        let mut placer = Placer::new(cluster, jobs.len());
        scheme.allocate(slot, jobs, &progress, &mut placer)?;
        for (i, &w) in placer.given.iter().enumerate() {
            if w == 0 {
                continue;
            }
            let p = &mut progress[i];
            debug_assert!(p.admitted && p.completion_slot.is_none() && w <= jobs[i].spec.chunks);
            p.started = true;
            p.done += w as u64;
            if p.done >= jobs[i].worker_slots {
                p.completion_slot = Some(slot);
            }
        }
        report(Report {
            now_seconds: (slot + 1) as f64 * cluster.slot_seconds,
            rounds: slot as u64 + 1,
            measured_finished: progress.iter().filter(|p| p.completion_slot.is_some()).count(),
            measured_total: jobs.len(),
            active_jobs: placer.given.iter().filter(|&&w| w > 0).count(),
        });
    }
    let outcomes = jobs
        .iter()
        .zip(&progress)
        .map(|(job, p)| JobOutcome {
            id: job.spec.id.clone(),
            admitted: p.admitted,
            completion_slot: p.completion_slot,
            utility: p.completion_slot.map_or(0.0, |t| job.utility_ending_at(t)),
        })
        .collect();
    Ok(RunOutcome::new(scheme.name(), outcomes))
}
