//! Astraea's long-term GPU-time fairness over a pipeline run, as the paper reports it: each job's
//! `ρ_job` over its life (sharing-loss jobs have `ρ < 0.95`), each tenant's `ρ_tenant` over the
//! run and over every period (the unfairness ratio is the share of (tenant, period) pairs with a
//! fair share and `ρ < 1`), and each tenant's cumulative `ρ` over time for plots.

use super::report::{percentile, Percentiles};
use crate::scheduling::Tenant;
use serde::Serialize;

/// Periods over which tenants' fairness is judged.
pub const PERIOD_SECONDS: f64 = 3600.0;
/// A job with `ρ_job` below this lost from sharing the cluster (Astraea's threshold).
pub const SHARING_LOSS: f64 = 0.95;

/// One tenant's fairness over a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantRecord {
    pub name: String,
    pub weight: f64,
    /// `∫ Alloc / ∫ min(Demand, Quota)` over the run (Eq. 12 with Eq. 8).
    pub rho: f64,
    /// `∫ Alloc / ∫ Quota` (Eq. 16: counts what it lent).
    pub rho_quota: f64,
    /// Periods with a fair share, and those with `ρ < 1` over the period.
    pub periods: usize,
    pub periods_below_1: usize,
    /// `[seconds since the first arrival, cumulative ρ]` at the end of every period.
    pub rho_over_time: Vec<[f64; 2]>,
}

/// The run's long-term fairness.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LtgfSummary {
    /// Measured finished jobs with `ρ_job < 0.95`, as a share of them.
    pub sharing_loss_share: f64,
    pub job_rho_percentiles: Percentiles,
    /// (tenant, period) pairs with `ρ_tenant < 1` over the period, as a share of those with a fair share.
    pub tenant_unfairness_ratio: f64,
    pub period_seconds: f64,
    pub tenants: Vec<TenantRecord>,
}

/// Snapshots of every tenant's integrals at the end of each period.
#[derive(Debug, Clone, Default)]
pub struct Periods {
    /// Per period: its end (seconds since the start) and `(allocated, fair_share)` per tenant.
    snapshots: Vec<(f64, Vec<(f64, f64)>)>,
}

impl Periods {
    /// Records the tenants at `elapsed` seconds when a period boundary has passed since the last.
    pub fn observe(&mut self, elapsed: f64, tenants: &[Tenant]) {
        let boundary = (self.snapshots.len() + 1) as f64 * PERIOD_SECONDS;
        if elapsed >= boundary {
            self.snapshots.push((elapsed, tenants.iter().map(|t| (t.allocated, t.fair_share)).collect()));
        }
    }

    /// The summary, from the finished run's tenants and the measured finished jobs' `ρ`.
    pub fn summarize(&self, tenants: &[Tenant], job_rho: &[f64]) -> LtgfSummary {
        let mut sorted = job_rho.to_vec();
        sorted.sort_by(f64::total_cmp);
        let loss = sorted.iter().filter(|&&r| r < SHARING_LOSS).count();
        let (mut judged, mut below) = (0, 0);
        let records: Vec<TenantRecord> = tenants
            .iter()
            .enumerate()
            .map(|(t, tenant)| {
                let (mut previous, mut periods, mut periods_below_1) = ((0.0, 0.0), 0, 0);
                let mut rho_over_time = Vec::with_capacity(self.snapshots.len());
                for (end, values) in &self.snapshots {
                    let (allocated, fair) = values[t];
                    if fair - previous.1 > 0.0 {
                        periods += 1;
                        if (allocated - previous.0) / (fair - previous.1) < 1.0 - 1e-9 {
                            periods_below_1 += 1;
                        }
                    }
                    if fair > 0.0 {
                        rho_over_time.push([*end, allocated / fair]);
                    }
                    previous = (allocated, fair);
                }
                judged += periods;
                below += periods_below_1;
                TenantRecord {
                    name: tenant.name.clone(),
                    weight: tenant.weight,
                    rho: tenant.ltgf(false),
                    rho_quota: tenant.ltgf(true),
                    periods,
                    periods_below_1,
                    rho_over_time,
                }
            })
            .collect();
        let share = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        LtgfSummary {
            sharing_loss_share: share(loss, sorted.len()),
            job_rho_percentiles: Percentiles {
                p50: percentile(&sorted, 50.0),
                p95: percentile(&sorted, 95.0),
                p99: percentile(&sorted, 99.0),
            },
            tenant_unfairness_ratio: share(below, judged),
            period_seconds: PERIOD_SECONDS,
            tenants: records,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_judge_each_tenant_over_each_hour() {
        let mut tenant = Tenant::new("a", 1.0);
        let mut periods = Periods::default();
        // Hour 1: 80 of a fair 100 (below); hour 2: 150 of 100 (above): cumulative 230/200.
        tenant.allocated = 80.0;
        tenant.fair_share = 100.0;
        periods.observe(3600.0, std::slice::from_ref(&tenant));
        tenant.allocated = 230.0;
        tenant.fair_share = 200.0;
        periods.observe(3610.0, std::slice::from_ref(&tenant)); // not a new period yet
        periods.observe(7200.0, std::slice::from_ref(&tenant));
        let s = periods.summarize(&[tenant], &[0.5, 1.0, 2.0, 0.94]);
        assert_eq!((s.tenants[0].periods, s.tenants[0].periods_below_1), (2, 1));
        assert_eq!(s.tenant_unfairness_ratio, 0.5);
        assert_eq!(s.tenants[0].rho_over_time, [[3600.0, 0.8], [7200.0, 1.15]]);
        assert_eq!(s.sharing_loss_share, 0.5);
        assert_eq!(s.tenants[0].rho, 1.15);
    }
}
