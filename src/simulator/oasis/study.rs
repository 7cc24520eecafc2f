//! The paper's simulation study on one workload: OASiS and the four baselines over the same
//! jobs and cluster, their total utility, and how late the time-sensitive and time-critical
//! jobs finish against their targets.

use super::run::{lateness, oasis, validate, RunOutcome, UtilityClass};
use super::slots::simulate;
use super::workload::{generate, Settings};
use crate::error::Result;
use crate::lp::Backend;
use crate::scheduling::oasis::baselines::{Dorm, Drf, Fifo, Rrh, SlotScheme};
use crate::scheduling::oasis::{ClusterSpec, Job, LowestUtility};
use serde::Serialize;

/// The schemes, in the order the tables list them.
pub const SCHEMES: [&str; 5] = ["oasis", "fifo", "drf", "rrh", "dorm"];

/// FIFO's and RRH's fixed workers per job; Dorm's fairness slack θ.
pub const FIXED_WORKERS: u32 = 8;
pub const DORM_THETA: f64 = 0.5;

/// Every scheme's run over one seeded workload.
#[derive(Debug, Clone, Serialize)]
pub struct StudyRun {
    pub seed: u64,
    pub runs: Vec<RunOutcome>,
    #[serde(skip)]
    pub jobs: Vec<Job>,
}

/// The baseline named `name` (`fifo`, `drf`, `rrh`, `dorm`) with the study's settings on
/// `cluster`, FIFO and RRH with `workers` per job if given (else [`FIXED_WORKERS`]); `None` for
/// another name.
pub fn baseline(
    name: &str,
    cluster: &ClusterSpec,
    backend: Backend,
    workers: Option<u32>,
) -> Option<Box<dyn SlotScheme>> {
    let gpus: f64 = cluster.worker_servers.iter().map(|s| s.gpus as f64).sum();
    let fixed_workers = workers.unwrap_or(FIXED_WORKERS);
    Some(match name {
        "fifo" => Box::new(Fifo { fixed_workers }),
        "drf" => Box::new(Drf),
        "rrh" => Box::new(Rrh { fixed_workers, threshold: 0.0, gpus }),
        "dorm" => Box::new(Dorm::new(DORM_THETA, backend)),
        _ => return None,
    })
}

/// Runs every scheme on the workload `settings` and `seed` draw.
pub fn run_all(settings: &Settings, seed: u64, lowest: LowestUtility, backend: Backend) -> Result<StudyRun> {
    let (cluster, specs) = generate(settings, seed);
    let jobs = validate(&cluster, &specs)?;
    let mut runs = vec![oasis(&cluster, &jobs, lowest, 1.0, 1.0)?.0];
    for name in &SCHEMES[1..] {
        let mut scheme = baseline(name, &cluster, backend, None).expect("the study's schemes have baselines");
        runs.push(simulate(&cluster, &jobs, scheme.as_mut())?);
    }
    Ok(StudyRun { seed, runs, jobs })
}

/// `(completion − arrival + 1) − γ3` of every finished job of `class` under one run.
pub fn lateness_of(run: &RunOutcome, jobs: &[Job], class: UtilityClass) -> Vec<f64> {
    jobs.iter()
        .zip(&run.jobs)
        .filter(|(job, _)| UtilityClass::of(&job.spec.utility) == class)
        .filter_map(|(job, outcome)| lateness(job, outcome))
        .collect()
}
