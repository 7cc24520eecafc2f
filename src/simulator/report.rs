//! What a simulation reports: every job's arrival, start, finish and JCT, and the aggregates over
//! the measured jobs (average and p50/p95/p99 JCT, makespan, utilization, finish-time fairness ρ,
//! cost, SLO violations, preemptions and lease renewals), as JSON.

use serde::Serialize;

/// One job of the trace as it ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobRecord {
    /// The job's position in the trace, as a string (Gavel's job id).
    pub id: String,
    pub job_type: String,
    pub scale_factor: u32,
    pub weight: f64,
    pub total_steps: f64,
    /// Steps the job ran (equals `total_steps` once finished).
    pub steps_done: f64,
    pub arrival_seconds: f64,
    /// When it first ran; `None`: never.
    pub start_seconds: Option<f64>,
    /// When its last step ran; `None`: unfinished when the simulation ended.
    pub finish_seconds: Option<f64>,
    /// `finish − arrival`.
    pub jct_seconds: Option<f64>,
    /// Finish-time fairness: JCT over the time the job would take on an equal `1/n̄` share of the
    /// cluster, `n̄` the average number of jobs present while it was (≤ 1: it did no worse).
    pub ftf_rho: Option<f64>,
    pub slo_seconds: Option<f64>,
    /// Inside the measurement window.
    pub measured: bool,
}

/// Percentiles of a distribution (linear interpolation between order statistics).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
}

/// Finish-time fairness over the measured jobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RhoSummary {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
    /// Share of jobs with ρ > 1 (worse off than on their own share).
    pub fraction_above_1: f64,
}

/// A simulation's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimulationReport {
    pub policy: String,
    pub heterogeneity_aware: bool,
    pub space_sharing: bool,
    /// `rounds` or `ideal`.
    pub mode: String,
    pub round_seconds: f64,
    pub seed: u64,
    /// Worker type → GPUs.
    pub cluster: indexmap::IndexMap<String, f64>,
    pub jobs_total: usize,
    pub jobs_measured: usize,
    pub jobs_finished: usize,
    /// Average JCT of the measured jobs.
    pub average_jct_seconds: f64,
    pub jct_percentiles_seconds: Percentiles,
    /// First arrival to last finish of the measured jobs.
    pub makespan_seconds: f64,
    /// Busy GPU-seconds over GPU-seconds of the whole simulation.
    pub utilization: f64,
    pub ftf_rho: Option<RhoSummary>,
    /// Dollars for the GPU time every job used, when every worker type has a price.
    pub cost_dollars: Option<f64>,
    /// Measured jobs with an SLO that finished after it.
    pub slo_violations: usize,
    /// A job that ran in a round and not in the next, while still active.
    pub preemptions: u64,
    /// A job that kept exactly its GPUs from one round to the next.
    pub lease_renewals: u64,
    pub rounds: u64,
    /// Times the policy's allocation was recomputed.
    pub allocation_solves: u64,
    /// Virtual time at which the simulation ended.
    pub simulated_seconds: f64,
    /// Wall-clock time the simulation took.
    pub wall_seconds: f64,
    pub jobs: Vec<JobRecord>,
}

/// Linear-interpolated percentile `q` in [0, 100] of sorted values (NaN when empty).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let rank = q / 100.0 * (n - 1) as f64;
            let lo = rank.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
        }
    }
}

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

/// Percentiles of the measured jobs' JCTs.
pub fn jct_percentiles(jobs: &[JobRecord]) -> Percentiles {
    let jcts = sorted(jobs.iter().filter(|j| j.measured).filter_map(|j| j.jct_seconds).collect());
    Percentiles { p50: percentile(&jcts, 50.0), p95: percentile(&jcts, 95.0), p99: percentile(&jcts, 99.0) }
}

/// The ρ distribution of the measured jobs, if any finished.
pub fn rho_summary(jobs: &[JobRecord]) -> Option<RhoSummary> {
    let rho = sorted(jobs.iter().filter(|j| j.measured).filter_map(|j| j.ftf_rho).collect());
    if rho.is_empty() {
        return None;
    }
    Some(RhoSummary {
        mean: rho.iter().sum::<f64>() / rho.len() as f64,
        p50: percentile(&rho, 50.0),
        p95: percentile(&rho, 95.0),
        max: rho[rho.len() - 1],
        fraction_above_1: rho.iter().filter(|&&r| r > 1.0).count() as f64 / rho.len() as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&v, 50.0), 3.0);
        assert_eq!(percentile(&v, 95.0), 4.8);
        assert_eq!(percentile(&v, 100.0), 5.0);
        assert!(percentile(&[], 50.0).is_nan());
    }
}
