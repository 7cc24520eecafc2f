//! What `arbiter simulate` writes for one FitGpp workload under one preemption policy: the
//! paper's metrics over the measured jobs (slowdown percentiles per kind, preempted share, restart
//! intervals), the load the run held, and every job's history. Built from the finished jobs; knows
//! nothing of how the run was made.

use super::metrics::{summarize, Summary};
use super::run::load;
use crate::scheduling::fitgpp::{Job, JobKind, Resources};
use crate::simulator::plot::{Chart, Series};
use serde::Serialize;

/// A preemption: when the job was told to stop, and when it started again.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interruption {
    pub preempted_at: f64,
    pub restarted_at: Option<f64>,
}

/// One job's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobReport {
    pub id: String,
    pub kind: &'static str,
    /// Whether it is in the measured window.
    pub measured: bool,
    pub arrival: f64,
    pub first_start: Option<f64>,
    pub finish: Option<f64>,
    pub duration_seconds: f64,
    /// JCT over its duration.
    pub slowdown: Option<f64>,
    pub preemptions: u32,
    pub interruptions: Vec<Interruption>,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitGppReport {
    /// `fitgpp`: the workload's kind (a round-based run's report has none).
    pub workload: &'static str,
    /// The policy with its parameters, e.g. `fitgpp(λ=1,P=1)`.
    pub preemption: String,
    pub nodes: usize,
    pub jobs_total: usize,
    /// Jobs `window[0]..window[1]` (in arrival order) are measured.
    pub window: [usize; 2],
    /// The demand of the jobs present over the capacity, averaged over the three resources and
    /// over the time from the first to the last measured arrival.
    pub load: f64,
    /// When the last job finished.
    pub makespan_seconds: f64,
    #[serde(flatten)]
    pub summary: Summary,
    pub wall_seconds: f64,
    pub jobs: Vec<JobReport>,
}

impl FitGppReport {
    /// The report of `jobs` (finished, in arrival order) on `capacities`, measuring `window`.
    pub fn new(
        preemption: String,
        jobs: &[Job],
        capacities: &[Resources],
        window: (usize, usize),
        wall_seconds: f64,
    ) -> FitGppReport {
        let measured: Vec<&Job> = jobs[window.0..window.1].iter().collect();
        let (from, to) = (jobs[window.0].arrival, jobs[window.1 - 1].arrival);
        FitGppReport {
            workload: "fitgpp",
            preemption,
            nodes: capacities.len(),
            jobs_total: jobs.len(),
            window: [window.0, window.1],
            load: load(jobs, capacities, from, to),
            makespan_seconds: jobs.iter().filter_map(|j| j.finish).fold(0.0, f64::max),
            summary: summarize(&measured),
            wall_seconds,
            jobs: jobs
                .iter()
                .enumerate()
                .map(|(k, j)| JobReport {
                    id: j.spec.id.clone(),
                    kind: j.kind().name(),
                    measured: (window.0..window.1).contains(&k),
                    arrival: j.arrival,
                    first_start: j.first_start,
                    finish: j.finish,
                    duration_seconds: j.spec.duration_seconds,
                    slowdown: j.slowdown(),
                    preemptions: j.preemptions,
                    interruptions: j
                        .interruptions
                        .iter()
                        .map(|&(at, back)| Interruption { preempted_at: at, restarted_at: back })
                        .collect(),
                })
                .collect(),
        }
    }

    /// The CDFs of the measured TE and BE jobs' slowdowns.
    pub fn slowdown_chart(&self) -> Chart {
        let series = [JobKind::Te, JobKind::Be]
            .into_iter()
            .filter_map(|kind| {
                let mut s: Vec<f64> = self
                    .jobs
                    .iter()
                    .filter(|j| j.measured && j.kind == kind.name())
                    .filter_map(|j| j.slowdown)
                    .collect();
                s.sort_by(f64::total_cmp);
                let n = s.len() as f64;
                (!s.is_empty()).then(|| Series {
                    label: format!("{} ({} jobs)", kind.name().to_uppercase(), s.len()),
                    points: std::iter::once((1.0, 0.0))
                        .chain(s.iter().enumerate().map(|(k, &x)| (x, (k + 1) as f64 / n)))
                        .collect(),
                })
            })
            .collect();
        Chart {
            title: format!("Slowdown under {} on {} nodes", self.preemption, self.nodes),
            x_label: "slowdown (JCT / time alone)".into(),
            y_label: "fraction of jobs".into(),
            series,
        }
    }
}
