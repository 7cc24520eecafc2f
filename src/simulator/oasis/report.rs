//! What `arbiter simulate` writes for a scheme's run over an OASiS workload: the total utility,
//! admissions and completions, how late each class of job finished against its target, and
//! every job's fate. Built from a `RunOutcome`; knows nothing of how the run was made.

use super::run::{lateness, RunOutcome, UtilityClass};
use crate::scheduling::oasis::{Job, PriceParameters};
use crate::simulator::plot::{self, Chart, Series};
use serde::Serialize;

/// Completion minus target (`(completion − arrival + 1) − γ3`, in slots) over the finished jobs
/// of one class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lateness {
    pub finished: usize,
    /// `None` when none finished.
    pub mean_slots: Option<f64>,
    pub sd_slots: Option<f64>,
}

impl Lateness {
    pub fn of(values: &[f64]) -> Lateness {
        let n = values.len() as f64;
        let mean = (!values.is_empty()).then(|| values.iter().sum::<f64>() / n);
        let sd = mean.map(|m| (values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt());
        Lateness { finished: values.len(), mean_slots: mean, sd_slots: sd }
    }
}

/// One job's fate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobReport {
    pub id: String,
    pub class: UtilityClass,
    pub arrival_slot: usize,
    pub admitted: bool,
    /// The slot its last chunk is trained in; `None` if not admitted or not finished in the horizon.
    pub completion_slot: Option<usize>,
    /// Its utility then (0 if it did not finish).
    pub utility: f64,
    /// Completion minus target, for a finished job whose utility decays.
    pub lateness_slots: Option<f64>,
}

/// A scheme's run over one workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OasisReport {
    /// `oasis`: the workload's kind (a round-based run's report has none).
    pub workload: &'static str,
    pub scheme: String,
    pub jobs_total: usize,
    pub admitted: usize,
    pub finished: usize,
    /// The utility of the jobs that finished within the horizon.
    pub total_utility: f64,
    pub time_sensitive: Lateness,
    pub time_critical: Lateness,
    /// OASiS's prices (`None` for a baseline), and the competitive ratio they give.
    pub prices: Option<PriceParameters>,
    pub competitive_ratio_bound: Option<f64>,
    pub wall_seconds: f64,
    pub jobs: Vec<JobReport>,
}

impl OasisReport {
    pub fn new(run: RunOutcome, jobs: &[Job], prices: Option<PriceParameters>, wall_seconds: f64) -> OasisReport {
        let reports: Vec<JobReport> = jobs
            .iter()
            .zip(&run.jobs)
            .map(|(job, outcome)| JobReport {
                id: outcome.id.clone(),
                class: UtilityClass::of(&job.spec.utility),
                arrival_slot: job.spec.arrival_slot,
                admitted: outcome.admitted,
                completion_slot: outcome.completion_slot,
                utility: outcome.utility,
                lateness_slots: lateness(job, outcome),
            })
            .collect();
        let late = |class: UtilityClass| -> Vec<f64> {
            reports.iter().filter(|j| j.class == class).filter_map(|j| j.lateness_slots).collect()
        };
        OasisReport {
            workload: "oasis",
            scheme: run.scheme,
            jobs_total: jobs.len(),
            admitted: run.admitted,
            finished: run.finished,
            total_utility: run.total_utility,
            time_sensitive: Lateness::of(&late(UtilityClass::TimeSensitive)),
            time_critical: Lateness::of(&late(UtilityClass::TimeCritical)),
            prices,
            competitive_ratio_bound: prices.map(|p| p.competitive_ratio_bound()),
            wall_seconds,
            jobs: reports,
        }
    }

    /// The CDFs of completion minus target of the time-sensitive and time-critical jobs that
    /// finished.
    pub fn lateness_chart(&self) -> Chart {
        let series = [(UtilityClass::TimeSensitive, "time-sensitive"), (UtilityClass::TimeCritical, "time-critical")]
            .into_iter()
            .map(|(class, label)| {
                let mut late: Vec<f64> =
                    self.jobs.iter().filter(|j| j.class == class).filter_map(|j| j.lateness_slots).collect();
                late.sort_by(f64::total_cmp);
                let n = late.len() as f64;
                Series {
                    label: format!("{label} ({} finished)", late.len()),
                    points: late.iter().enumerate().map(|(k, &x)| (x, (k + 1) as f64 / n)).collect(),
                }
            })
            .collect();
        let mut chart = plot::cdf_chart(format!("{}: completion minus target", self.scheme), series);
        chart.x_label = "completion − target (slots)".into();
        chart
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_of_none_and_of_some() {
        assert_eq!(Lateness::of(&[]), Lateness { finished: 0, mean_slots: None, sd_slots: None });
        let l = Lateness::of(&[-1.0, 3.0]);
        assert_eq!((l.finished, l.mean_slots, l.sd_slots), (2, Some(1.0), Some(2.0)));
    }
}
