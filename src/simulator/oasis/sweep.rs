//! A grid of OASiS's study: schemes × numbers of jobs in the fixed horizon (the paper's scarcity
//! knob) × seeds, each on a workload drawn from `Settings::paper`, run in parallel (rayon),
//! summarized as CSV rows and plotted as total utility against the number of jobs. The
//! round-based grid is `simulator::sweep`.

use super::report::OasisReport;
use super::run::validate;
use super::scheme::Scheme;
use super::workload::{generate, Settings};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::simulator::plot::{self, Chart};
use crate::workload::MAX_GENERATED_JOBS;
use rayon::prelude::*;
use std::fmt::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Seconds each simulation's MILPs (Dorm's) may take in all, as in the study.
pub const SOLVE_SECONDS: f64 = 600.0;

/// The grid.
#[derive(Debug, Clone)]
pub struct OasisSweep {
    pub schemes: Vec<Scheme>,
    /// Jobs per workload, over the same 50 slots.
    pub jobs: Vec<usize>,
    pub seeds: Vec<u64>,
    pub backend: Backend,
}

/// One simulation of the grid.
#[derive(Debug, Clone)]
pub struct OasisPoint {
    pub scheme: String,
    pub jobs: usize,
    pub seed: u64,
    /// The run's report, or why it failed.
    pub outcome: std::result::Result<OasisReport, String>,
}

/// Runs every (scheme, jobs, seed) in parallel; `progress(done, total)` hears after each.
pub fn run(config: &OasisSweep, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Vec<OasisPoint>> {
    if config.schemes.is_empty() || config.jobs.is_empty() || config.seeds.is_empty() {
        return Err(ArbiterError::at(
            ErrorCode::MissingField,
            "sweep",
            "a sweep needs at least one scheme, one number of jobs and one seed",
        ));
    }
    if let Some(bad) = config.jobs.iter().find(|&&n| !(1..=MAX_GENERATED_JOBS).contains(&n)) {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "jobs",
            format!("a workload holds 1 to {MAX_GENERATED_JOBS} jobs, got {bad}"),
        ));
    }
    // Draw every workload once up front (each is small), so each point only runs.
    let mut workloads = Vec::new();
    for &n in &config.jobs {
        for &seed in &config.seeds {
            let (cluster, specs) = generate(&Settings::paper(n), seed);
            workloads.push(((n, seed), (validate(&cluster, &specs)?, cluster)));
        }
    }
    let grid: Vec<(&Scheme, usize, u64)> = config
        .schemes
        .iter()
        .flat_map(|s| config.jobs.iter().flat_map(move |&n| config.seeds.iter().map(move |&seed| (s, n, seed))))
        .collect();
    let total = grid.len();
    let done = AtomicUsize::new(0);
    Ok(grid
        .into_par_iter()
        .map(|(scheme, n, seed)| {
            let (jobs, cluster) = &workloads.iter().find(|(key, _)| *key == (n, seed)).expect("drawn above").1;
            let started = Instant::now();
            let outcome = scheme
                .run(cluster, jobs, config.backend.within(SOLVE_SECONDS), &mut |_| {})
                .map(|(run, prices)| OasisReport::new(run, jobs, prices, started.elapsed().as_secs_f64()))
                .map_err(|e| e.to_string());
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            OasisPoint { scheme: scheme.label(), jobs: n, seed, outcome }
        })
        .collect())
}

/// The CSV of a sweep: one row per simulation.
pub fn csv(points: &[OasisPoint]) -> String {
    let mut out = String::from(
        "scheme,jobs,seed,total_utility,admitted,finished,time_sensitive_finished,time_sensitive_lateness_slots,\
         time_critical_finished,time_critical_lateness_slots,competitive_ratio_bound,wall_seconds,error\n",
    );
    let optional = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.4}"));
    for p in points {
        let _ = write!(out, "{},{},{},", p.scheme, p.jobs, p.seed);
        match &p.outcome {
            Ok(r) => {
                let _ = writeln!(
                    out,
                    "{:.4},{},{},{},{},{},{},{},{:.3},",
                    r.total_utility,
                    r.admitted,
                    r.finished,
                    r.time_sensitive.finished,
                    optional(r.time_sensitive.mean_slots),
                    r.time_critical.finished,
                    optional(r.time_critical.mean_slots),
                    optional(r.competitive_ratio_bound),
                    r.wall_seconds,
                );
            }
            Err(e) => {
                let _ = writeln!(out, ",,,,,,,,,\"{}\"", e.replace('"', "'"));
            }
        }
    }
    out
}

/// Total utility (mean over seeds) against the number of jobs, one curve per scheme.
pub fn utility_vs_jobs(points: &[OasisPoint]) -> Chart {
    let series = plot::mean_curves(points.iter().filter_map(|p| {
        let report = p.outcome.as_ref().ok()?;
        Some((p.scheme.as_str(), p.jobs as f64, report.total_utility))
    }));
    Chart {
        title: "OASiS's study: total utility over 50 slots".into(),
        x_label: "jobs in the horizon".into(),
        y_label: "total utility (mean over seeds)".into(),
        series,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(scheme: &str, jobs: usize, seed: u64, utility: f64) -> OasisPoint {
        let run = super::super::run::RunOutcome::new(scheme, Vec::new());
        let mut report = OasisReport::new(run, &[], None, 0.0);
        report.total_utility = utility;
        OasisPoint { scheme: scheme.into(), jobs, seed, outcome: Ok(report) }
    }

    #[test]
    fn the_chart_averages_seeds_per_number_of_jobs() {
        let points = vec![
            point("drf", 50, 0, 10.0),
            point("drf", 25, 0, 4.0),
            point("drf", 50, 1, 20.0),
            point("rrh", 25, 0, 1.0),
        ];
        let chart = utility_vs_jobs(&points);
        assert_eq!(chart.series.len(), 2);
        assert_eq!(chart.series[0].points, vec![(25.0, 4.0), (50.0, 15.0)]);
        assert_eq!(chart.series[1].points, vec![(25.0, 1.0)]);
        let failed = OasisPoint { scheme: "dorm".into(), jobs: 25, seed: 0, outcome: Err("a \"b\"".into()) };
        let text = csv(&[points[0].clone(), failed]);
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), 3);
        let columns = rows[0].split(',').count();
        assert!(rows.iter().all(|r| r.split(',').count() == columns), "{text}");
        assert!(rows[2].ends_with("\"a 'b'\""));
    }
}
