//! What the FitGpp paper reports of a run: slowdown (JCT over the time the job runs alone)
//! percentiles per kind, the share of jobs preempted (and preempted 1, 2, 3+ times), and the
//! interval between a preemption and the job's restart.

use crate::scheduling::fitgpp::{Job, JobKind};
use crate::simulator::report::percentile;
use serde::Serialize;

/// The 50th, 95th and 99th percentiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Slowdowns {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
}

/// Percentiles of the preemption-to-restart interval, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Intervals {
    pub count: usize,
    pub p50: f64,
    pub p75: f64,
    pub p95: f64,
    pub p99: f64,
}

/// One run's metrics over its measured jobs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub jobs_measured: usize,
    pub te: Slowdowns,
    pub be: Slowdowns,
    /// Measured jobs preempted at least once, as a share of the measured jobs.
    pub preempted_share: f64,
    /// Measured jobs preempted exactly once, twice, three times or more, as shares of them.
    pub preempted_times_share: [f64; 3],
    pub preemptions: u64,
    /// Measured TE jobs for which BE jobs were preempted, as a share of the measured TE jobs.
    pub te_made_room_share: f64,
    /// Measured TE jobs that waited at some point with no room and no preemption possible (none
    /// of FitGpp's candidates, or not enough even preempting every eligible BE job), as a share of
    /// the measured TE jobs.
    pub te_declined_share: f64,
    pub restart_interval_seconds: Intervals,
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

fn slowdowns(jobs: &[&Job], kind: JobKind) -> Slowdowns {
    let s = sorted(jobs.iter().filter(|j| j.kind() == kind).filter_map(|j| j.slowdown()).collect());
    Slowdowns { p50: percentile(&s, 50.0), p95: percentile(&s, 95.0), p99: percentile(&s, 99.0) }
}

/// The metrics of `measured` (finished jobs).
pub fn summarize(measured: &[&Job]) -> Summary {
    let n = measured.len().max(1) as f64;
    let te: Vec<&&Job> = measured.iter().filter(|j| j.kind() == JobKind::Te).collect();
    let times =
        |k: u32| measured.iter().filter(|j| if k < 3 { j.preemptions == k } else { j.preemptions >= 3 }).count();
    let intervals = sorted(
        measured.iter().flat_map(|j| j.interruptions.iter().filter_map(|&(at, back)| back.map(|b| b - at))).collect(),
    );
    Summary {
        jobs_measured: measured.len(),
        te: slowdowns(measured, JobKind::Te),
        be: slowdowns(measured, JobKind::Be),
        preempted_share: measured.iter().filter(|j| j.preemptions > 0).count() as f64 / n,
        preempted_times_share: [times(1) as f64 / n, times(2) as f64 / n, times(3) as f64 / n],
        preemptions: measured.iter().map(|j| j.preemptions as u64).sum(),
        te_made_room_share: te.iter().filter(|j| j.made_room).count() as f64 / te.len().max(1) as f64,
        te_declined_share: te.iter().filter(|j| j.declined > 0).count() as f64 / te.len().max(1) as f64,
        restart_interval_seconds: Intervals {
            count: intervals.len(),
            p50: percentile(&intervals, 50.0),
            p75: percentile(&intervals, 75.0),
            p95: percentile(&intervals, 95.0),
            p99: percentile(&intervals, 99.0),
        },
    }
}
