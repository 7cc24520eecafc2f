//! What a simulation reports: every job's arrival, start, finish and JCT, and the aggregates over
//! the measured jobs (average and p50/p95/p99 JCT, makespan, utilization, finish-time fairness ρ,
//! cost, SLO violations, preemptions and lease renewals, responsiveness), as JSON; and the
//! assembly of a report from a run's outcome, shared by Gavel's mechanism and the pipeline.

use super::config::SimulationConfig;
use super::fairness;
use crate::solver::realizable::Realizable;
use crate::workload::Trace;
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
    /// Times the job was suspended while unfinished (pipeline compositions; `None` under Gavel's
    /// mechanism, which counts preemptions for the whole run only).
    pub preemptions: Option<u32>,
    /// Seconds it spent restarting after suspensions (pipeline compositions run with a restart
    /// overhead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Astraea's `ρ_job = ∫ Alloc / ∫ min(Demand, FairShare)` over its life (pipeline compositions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ltgf_rho: Option<f64>,
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
    /// The stages that ran: `admission+scheduling+placement+preemption`
    /// (`accept_all+max_min_fairness+consolidated+lease` is Gavel's mechanism).
    pub composition: String,
    /// The policy was solved over round configurations (`--realizable`; by default for the
    /// policies the realizable solve covers, unless space sharing is on).
    #[serde(default)]
    pub realizable: bool,
    /// What followed each optimum of a bottleneck policy (`--tie-break`): `throughput`,
    /// `water_filling`, or `none` (also for the policies no tie-break applies to).
    #[serde(default)]
    pub tie_break: String,
    pub heterogeneity_aware: bool,
    pub space_sharing: bool,
    /// `rounds`, `ideal` or `configurations`.
    pub mode: String,
    pub round_seconds: f64,
    pub seed: u64,
    /// Worker type → GPUs.
    pub cluster: indexmap::IndexMap<String, f64>,
    pub jobs_total: usize,
    /// Trace jobs that arrived before the run ended. A run ends when its measured jobs finish, so
    /// below `jobs_total` arrivals were still coming (Blox's steady state); equal, they may have
    /// run out before the measured jobs finished.
    pub jobs_arrived: usize,
    pub jobs_measured: usize,
    pub jobs_finished: usize,
    /// Average JCT of the measured jobs.
    pub average_jct_seconds: f64,
    pub jct_percentiles_seconds: Percentiles,
    /// Responsiveness: first run − arrival, averaged over the measured jobs that ran.
    pub average_responsiveness_seconds: f64,
    pub responsiveness_percentiles_seconds: Percentiles,
    /// Preemptions over jobs that arrived.
    pub preemptions_per_job: f64,
    /// Seconds a suspended job loses when it resumes (`--restart-seconds`, or `lease=SECONDS`).
    pub restart_seconds: f64,
    /// Restart overhead as a share of JCT: the finished measured jobs' seconds spent restarting
    /// over the sum of their JCTs (Astraea's lease overhead). `None`: no overhead was simulated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_overhead_share: Option<f64>,
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
    /// The synthesizer's choices, when one ran (`scheduling::synthesizer`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub synthesis: Vec<crate::scheduling::synthesizer::Choice>,
    /// Long-term GPU-time fairness by job and tenant (pipeline compositions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ltgf: Option<super::long_term_fairness::LtgfSummary>,
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

/// One trace job's fate in a run.
pub struct JobOutcome<'a> {
    /// Steps/s alone on each worker type, in the cluster's order.
    pub throughput: &'a [f64],
    pub remaining: f64,
    pub start: Option<f64>,
    pub finish: Option<f64>,
    pub preemptions: Option<u32>,
    /// Seconds spent restarting (`None`: no restart overhead was simulated).
    pub restart_seconds: Option<f64>,
    pub ltgf_rho: Option<f64>,
}

/// A run's totals.
pub struct Totals {
    pub composition: String,
    /// The first arrival, and the virtual time the run ended.
    pub start_time: f64,
    pub end: f64,
    /// Busy GPU-seconds per worker type.
    pub busy: Vec<f64>,
    pub preemptions: u64,
    pub lease_renewals: u64,
    pub rounds: u64,
    pub allocation_solves: u64,
    pub wall_seconds: f64,
    /// Seconds a suspended job loses when it resumes.
    pub restart_seconds: f64,
}

/// The report of a run of `trace` (one outcome per trace job).
pub fn assemble(trace: &Trace, config: &SimulationConfig, outcomes: &[JobOutcome], totals: Totals) -> SimulationReport {
    let now = totals.end;
    let intervals: Vec<(f64, f64)> =
        trace.jobs.iter().zip(outcomes).map(|(t, p)| (t.arrival_seconds, p.finish.unwrap_or(now))).collect();
    let crowd = fairness::Crowding::new(&intervals);
    let total_gpus: f64 = config.cluster.iter().map(|w| w.count).sum();
    let jobs: Vec<JobRecord> = trace
        .jobs
        .iter()
        .zip(outcomes)
        .enumerate()
        .map(|(i, (t, p))| {
            let jct = p.finish.map(|f| f - t.arrival_seconds);
            let ftf_rho = jct.and_then(|jct| {
                let n = crowd.average(t.arrival_seconds, p.finish.unwrap_or(now));
                let isolated =
                    fairness::isolated_seconds(p.throughput, &config.cluster, t.scale_factor, n, t.total_steps)?;
                Some(jct / isolated)
            });
            JobRecord {
                id: i.to_string(),
                job_type: t.job_type.clone(),
                scale_factor: t.scale_factor,
                weight: t.weight,
                total_steps: t.total_steps,
                steps_done: t.total_steps - p.remaining,
                arrival_seconds: t.arrival_seconds,
                start_seconds: p.start,
                finish_seconds: p.finish,
                jct_seconds: jct,
                ftf_rho,
                slo_seconds: t.slo_seconds,
                measured: config.measures(i),
                preemptions: p.preemptions,
                restart_seconds: p.restart_seconds,
                tenant: t.tenant.clone(),
                ltgf_rho: p.ltgf_rho,
            }
        })
        .collect();
    let measured: Vec<&JobRecord> = jobs.iter().filter(|j| j.measured).collect();
    let jcts: Vec<f64> = measured.iter().filter_map(|j| j.jct_seconds).collect();
    let first_arrival = measured.iter().map(|j| j.arrival_seconds).fold(f64::INFINITY, f64::min);
    let last_finish = measured.iter().filter_map(|j| j.finish_seconds).fold(f64::NEG_INFINITY, f64::max);
    let span = now - totals.start_time;
    let busy: f64 = totals.busy.iter().sum();
    let cost_dollars = config
        .cluster
        .iter()
        .zip(&totals.busy)
        .map(|(w, b)| w.cost_per_hour.map(|price| price * b / 3600.0))
        .sum::<Option<f64>>();
    let waits = sorted(measured.iter().filter_map(|j| Some(j.start_seconds? - j.arrival_seconds)).collect());
    let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
    let arrived = jobs.iter().filter(|j| j.arrival_seconds <= now).count();
    SimulationReport {
        policy: config.policy.name().to_string(),
        composition: totals.composition,
        heterogeneity_aware: config.heterogeneity_aware,
        realizable: crate::solver::realizable::covers(config.policy)
            && match config.realizable {
                Realizable::Off => false,
                Realizable::UnlessPaired => !config.space_sharing,
                Realizable::On => true,
            },
        tie_break: if crate::solver::tie_break::applies(config.policy) && !config.space_sharing {
            config.tie_break.name()
        } else {
            "none"
        }
        .to_string(),
        space_sharing: config.space_sharing,
        mode: config.mode().name().to_string(),
        round_seconds: config.round_seconds,
        seed: config.seed,
        cluster: config.cluster.iter().map(|w| (w.name.clone(), w.count)).collect(),
        jobs_total: jobs.len(),
        jobs_arrived: arrived,
        jobs_measured: measured.len(),
        jobs_finished: jobs.iter().filter(|j| j.finish_seconds.is_some()).count(),
        average_jct_seconds: mean(&jcts),
        jct_percentiles_seconds: jct_percentiles(&jobs),
        average_responsiveness_seconds: mean(&waits),
        responsiveness_percentiles_seconds: Percentiles {
            p50: percentile(&waits, 50.0),
            p95: percentile(&waits, 95.0),
            p99: percentile(&waits, 99.0),
        },
        preemptions_per_job: if arrived == 0 { 0.0 } else { totals.preemptions as f64 / arrived as f64 },
        restart_seconds: totals.restart_seconds,
        restart_overhead_share: restart_overhead_share(&measured),
        makespan_seconds: if last_finish.is_finite() { last_finish - first_arrival } else { 0.0 },
        utilization: if span > 0.0 && total_gpus > 0.0 { busy / (span * total_gpus) } else { 0.0 },
        ftf_rho: rho_summary(&jobs),
        cost_dollars,
        slo_violations: measured
            .iter()
            .filter(|j| matches!((j.jct_seconds, j.slo_seconds), (Some(jct), Some(slo)) if jct > slo))
            .count(),
        preemptions: totals.preemptions,
        lease_renewals: totals.lease_renewals,
        rounds: totals.rounds,
        allocation_solves: totals.allocation_solves,
        simulated_seconds: span,
        wall_seconds: totals.wall_seconds,
        synthesis: Vec::new(),
        ltgf: None,
        jobs,
    }
}

/// Seconds the finished measured jobs spent restarting over the sum of their JCTs, when the run
/// simulated restarts (`None` otherwise, or when none finished).
fn restart_overhead_share(measured: &[&JobRecord]) -> Option<f64> {
    let finished = measured.iter().filter_map(|j| Some((j.restart_seconds?, j.jct_seconds?)));
    let (restarting, jct) = finished.fold((0.0, 0.0), |(r, t), (jr, jt)| (r + jr, t + jt));
    (jct > 0.0).then(|| restarting / jct)
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
