//! Astraea's two-phase scheduler over long-term GPU-time fairness (LTGF): each interval every job
//! is pending and every GPU free, except running jobs whose lease term has not ended (they keep
//! their GPUs, and their lease counts for their tenant). Phase 1 picks the tenant with the
//! smallest `ρ_tenant`, projected to the end of the lease about to be granted, that still has a
//! pending job; phase 2 its job with the smallest `ρ_job`
//! (a job that never ran has `ρ = 0`; among those, the newest first). If the job fits (a worker
//! type it runs on has `scale_factor` GPUs left), it gets a lease, counted in its tenant's `ρ` as
//! if it ran for the whole term; otherwise its tenant is skipped for the rest of the interval
//! (unless no healthy type could hold the job at all: then only the job is passed over).
//! Jobs not picked do not run. See `formulations/ltgf.md`.

use super::policies::{Context, Scheduling};
use super::state::{JobIndex, JobState};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// LTGF's two phases; `quota`: tenants' `ρ` against their quota (Astraea's adjusted Eq. 16, which
/// counts GPUs a tenant lent while idle) instead of `min(Demand, Quota)` (Eq. 8).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Ltgf {
    pub quota: bool,
}

/// A tenant in phase 1's heap: smallest `ρ` first, ties by index.
#[derive(Debug, PartialEq)]
struct Candidate {
    rho: f64,
    tenant: usize,
}

impl Eq for Candidate {}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        other.rho.total_cmp(&self.rho).then(other.tenant.cmp(&self.tenant))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Phase 2's order within a tenant: smallest `ρ_job`; ties (above all the jobs that never ran, all
/// at `ρ = 0`) newest first, as Astraea's implementation prioritizes the newly submitted job so
/// that short jobs finish promptly (§6.1.1); then by submission.
fn by_job_fairness(jobs: &[JobState], list: &mut [JobIndex]) {
    list.sort_unstable_by(|&a, &b| {
        let (x, y) = (&jobs[a], &jobs[b]);
        x.ltgf().total_cmp(&y.ltgf()).then(y.arrival.total_cmp(&x.arrival)).then(a.cmp(&b))
    });
}

impl Scheduling for Ltgf {
    fn name(&self) -> String {
        if self.quota {
            "ltgf_quota".into()
        } else {
            "ltgf".into()
        }
    }

    /// Without the round's context: every job by `ρ_job`.
    fn order(&mut self, active: &[JobIndex], jobs: &[JobState], _: f64) -> Vec<JobIndex> {
        let mut list = active.to_vec();
        by_job_fairness(jobs, &mut list);
        list
    }

    fn order_in(&mut self, active: &[JobIndex], jobs: &[JobState], now: f64, context: &Context) -> Vec<JobIndex> {
        let healthy = context.cluster.healthy_per_type();
        let mut capacity = healthy.clone();
        let tenants = context.tenants.len();
        let term = context.lease_seconds;
        // Phase 1 ranks tenants by their ρ at the end of the lease about to be granted: what they
        // were allocated plus the leases held or granted, against what they were owed plus their
        // fair share over the term (`formulations/ltgf.md`, "The projection").
        let mut allocated: Vec<f64> = context.tenants.iter().map(|t| t.allocated).collect();
        let fair: Vec<f64> = (context.tenants.iter().zip(context.shares))
            .map(|(t, share)| match self.quota {
                true => t.quota_share + share.quota * term,
                false => t.fair_share + share.fair * term,
            })
            .collect();
        let rho = |t: usize, allocated: &[f64]| super::state::fairness_ratio(allocated[t], fair[t]);

        // Running jobs within their term keep their GPUs and count as leased.
        let mut order = Vec::with_capacity(active.len());
        let mut pending: Vec<Vec<JobIndex>> = vec![Vec::new(); tenants];
        for &j in active {
            let job = &jobs[j];
            if context.pinned[j] {
                if let Some(&g) = job.gpus.first() {
                    let w = context.cluster.gpus[g as usize].worker_type as usize;
                    capacity[w] = capacity[w].saturating_sub(job.scale_factor);
                }
                let held = (job.lease_start + term - now).clamp(0.0, term);
                allocated[job.tenant] += job.scale_factor as f64 * held;
                order.push(j);
            } else {
                pending[job.tenant].push(j);
            }
        }
        for list in &mut pending {
            by_job_fairness(jobs, list);
            list.reverse(); // pop() takes the smallest ρ_job
        }

        let mut heap: BinaryHeap<Candidate> = (0..tenants)
            .filter(|&t| !pending[t].is_empty())
            .map(|t| Candidate { rho: rho(t, &allocated), tenant: t })
            .collect();
        while let Some(Candidate { tenant, .. }) = heap.pop() {
            if capacity.iter().all(|&c| c == 0) {
                break;
            }
            let Some(j) = pending[tenant].pop() else { continue };
            let job = &jobs[j];
            // A running job renews on its own type or not at all (the pipeline's rule).
            let running_on = job.gpus.first().map(|&g| context.cluster.gpus[g as usize].worker_type as usize);
            let fits = match running_on {
                Some(w) => (capacity[w] >= job.scale_factor).then_some(w),
                None => job.type_to_start(&capacity),
            };
            let Some(w) = fits else {
                // A job that no healthy type could hold even with every GPU free is passed over;
                // one that does not fit now makes its tenant wait for the next interval.
                let never = match running_on {
                    Some(w) => healthy[w] < job.scale_factor,
                    None => job.type_to_start(&healthy).is_none(),
                };
                if never && !pending[tenant].is_empty() {
                    heap.push(Candidate { rho: rho(tenant, &allocated), tenant });
                }
                continue;
            };
            capacity[w] -= job.scale_factor;
            allocated[tenant] += job.scale_factor as f64 * term;
            order.push(j);
            if !pending[tenant].is_empty() {
                heap.push(Candidate { rho: rho(tenant, &allocated), tenant });
            }
        }
        order
    }
}
