//! A grid of simulations: policy variants × input loads (jobs per hour) × seeds, each on its own
//! generated trace, run in parallel (rayon), summarized as CSV rows and plotted as average JCT
//! against load and as JCT CDFs per variant.

use super::config::SimulationConfig;
use super::plot::{self, Chart, Series};
use super::report::SimulationReport;
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::policies::PolicyKind;
use crate::problem::WorkerType;
use crate::scheduling::synthesizer::Synthesizer;
use crate::scheduling::Composition;
use crate::workload::generator::{self, Arrivals, GeneratorOptions};
use crate::workload::throughputs::ThroughputTable;
use crate::workload::{trace, Trace};
use rayon::prelude::*;
use std::fmt::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One policy as a sweep runs it: `max_min_fairness`, `max_min_fairness:agnostic`,
/// `max_min_fairness:space_sharing`.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub label: String,
    pub policy: PolicyKind,
    /// A list policy's composition (`las:admission=accept_x=1.2`); `None`: Gavel's, with `policy`.
    pub composition: Option<Composition>,
    /// `synthesizer[:every=N][:horizon=N][:metric=jct|responsiveness|both]`: Blox's nine
    /// candidates, starting from the first.
    pub synthesizer: Option<Synthesizer>,
    pub heterogeneity_aware: bool,
    pub space_sharing: bool,
}

impl Variant {
    /// Parses `POLICY[:agnostic][:space_sharing]`.
    pub fn parse(spec: &str) -> Result<Variant> {
        let mut parts = spec.split(':');
        let name = parts.next().unwrap_or_default().trim();
        if name == "synthesizer" {
            return Variant::parse_synthesizer(spec, parts);
        }
        if crate::scheduling::composition::LIST_POLICIES.contains(&name.split('=').next().unwrap_or_default()) {
            return Variant::parse_composition(spec, name, parts);
        }
        let policy = PolicyKind::from_name(name).ok_or_else(|| {
            ArbiterError::at(
                ErrorCode::UnknownPolicy,
                "policies",
                format!(
                    "unknown policy {name:?}; expected one of: {}",
                    PolicyKind::ALL.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
                ),
            )
        })?;
        let mut variant = Variant {
            label: spec.trim().to_string(),
            policy,
            composition: None,
            synthesizer: None,
            heterogeneity_aware: true,
            space_sharing: false,
        };
        let mut given: Vec<&str> = Vec::new();
        for modifier in parts {
            if given.contains(&modifier.trim()) {
                return Err(ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "policies",
                    format!("--policies names the modifier {} twice in {spec:?}", modifier.trim()),
                ));
            }
            given.push(modifier.trim());
            match modifier.trim() {
                "agnostic" => variant.heterogeneity_aware = false,
                "space_sharing" => variant.space_sharing = true,
                other => {
                    return Err(ArbiterError::at(
                        ErrorCode::MalformedRequest,
                        "policies",
                        format!("unknown modifier {other:?} in {spec:?}; expected agnostic or space_sharing"),
                    ))
                }
            }
        }
        Ok(variant)
    }
}

impl Variant {
    /// `synthesizer[:every=N][:horizon=N][:metric=M]`, starting from the first of Blox's nine.
    fn parse_synthesizer<'a>(spec: &str, parts: impl Iterator<Item = &'a str>) -> Result<Variant> {
        let synthesizer = Synthesizer::parse(parts).map_err(|e| e.field_renamed("synthesizer", "policies"))?;
        Ok(Variant {
            label: spec.trim().to_string(),
            policy: PolicyKind::MaxMinFairness,
            composition: Some(synthesizer.candidates[0].clone()),
            synthesizer: Some(synthesizer),
            heterogeneity_aware: true,
            space_sharing: false,
        })
    }

    /// `SCHEDULING[:admission=A][:placement=P][:preemption=Q]` with a list policy.
    fn parse_composition<'a>(spec: &str, scheduling: &str, parts: impl Iterator<Item = &'a str>) -> Result<Variant> {
        let (mut admission, mut placement, mut preemption) = (None, None, None);
        for part in parts {
            let (slot, value) = part.trim().split_once('=').ok_or_else(|| {
                ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "policies",
                    format!("stages are SLOT=NAME (admission, placement, preemption) in {spec:?}, got {part:?}"),
                )
            })?;
            let stage = match slot {
                "admission" => &mut admission,
                "placement" => &mut placement,
                "preemption" => &mut preemption,
                other => {
                    return Err(ArbiterError::at(
                        ErrorCode::MalformedRequest,
                        "policies",
                        format!(
                            "unknown stage slot {other:?} in {spec:?}; expected admission, placement or preemption"
                        ),
                    ))
                }
            };
            if stage.replace(value).is_some() {
                return Err(ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "policies",
                    format!("--policies names the stage slot {slot} twice in {spec:?}"),
                ));
            }
        }
        let composition = Composition::from_flags(None, admission, Some(scheduling), placement, preemption)?;
        Ok(Variant {
            label: spec.trim().to_string(),
            policy: PolicyKind::MaxMinFairness,
            composition: Some(composition),
            synthesizer: None,
            heterogeneity_aware: true,
            space_sharing: false,
        })
    }
}

/// The grid and what every simulation of it shares.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    pub cluster: Vec<WorkerType>,
    pub variants: Vec<Variant>,
    /// Input loads in jobs per hour (Poisson arrivals); ignored for static traces.
    pub loads: Vec<f64>,
    pub seeds: Vec<u64>,
    /// Jobs per generated trace.
    pub num_jobs: usize,
    /// Extra jobs in the first hour of every day (`scheduling::workload::add_bursts`).
    pub burst_jobs: usize,
    /// Blox §5.2's bursts of short jobs (`scheduling::workload::add_short_bursts`).
    pub short_bursts: bool,
    /// Measured jobs (trace positions `first..last`); `None`: all.
    pub window: Option<(usize, usize)>,
    /// Every job at t = 0 instead of Poisson arrivals.
    pub static_trace: bool,
    /// With `Some(T)`, the traces are multi-tenant (`workload::tenants`: T tenants, bursty
    /// arrivals at the load, mostly short jobs) instead of Gavel's job mix.
    pub tenants: Option<usize>,
    pub multi_gpu: bool,
    pub multi_priority: bool,
    pub round_seconds: f64,
    pub ideal: bool,
    /// Whether the LP policies solve over round configurations (`SimulationConfig::realizable`).
    pub realizable: crate::solver::realizable::Realizable,
    /// What follows a bottleneck policy's optimum (`SimulationConfig::tie_break`).
    pub tie_break: crate::solver::tie_break::TieBreak,
    /// Seconds a suspended job loses when it resumes (list compositions only).
    pub restart_seconds: f64,
    pub backend: Backend,
}

/// One simulation of the grid.
#[derive(Debug, Clone)]
pub struct SweepPoint {
    pub variant: Variant,
    pub jobs_per_hour: f64,
    pub seed: u64,
    /// The simulation's report, or why it failed.
    pub outcome: std::result::Result<SimulationReport, String>,
}

/// Runs every (variant, load, seed) in parallel; `progress(done, total)` hears after each.
pub fn run(
    config: &SweepConfig,
    table: &ThroughputTable,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<SweepPoint>> {
    if config.variants.is_empty() || config.seeds.is_empty() || (!config.static_trace && config.loads.is_empty()) {
        return Err(ArbiterError::at(
            ErrorCode::MissingField,
            "sweep",
            "a sweep needs at least one policy, one seed and (for continuous traces) one load",
        ));
    }
    let loads = if config.static_trace { vec![0.0] } else { config.loads.clone() };
    let mut grid = Vec::new();
    for variant in &config.variants {
        for &load in &loads {
            for &seed in &config.seeds {
                grid.push((variant.clone(), load, seed));
            }
        }
    }
    // Generate every trace once up front, so a bad option fails before any simulation runs.
    // What every run would refuse is refused once, before any trace is generated.
    for variant in &config.variants {
        simulation_config(config, variant, 0).validate(usize::MAX)?;
    }
    let mut traces = Vec::new();
    for &load in &loads {
        for &seed in &config.seeds {
            let options = GeneratorOptions {
                num_jobs: config.num_jobs,
                arrivals: if config.static_trace {
                    Arrivals::Static
                } else {
                    Arrivals::Poisson { jobs_per_hour: load }
                },
                seed,
                multi_gpu: config.multi_gpu,
                multi_priority: config.multi_priority,
                ..GeneratorOptions::default()
            };
            let mut trace = match config.tenants {
                Some(tenants) => crate::workload::tenants::generate(
                    table,
                    &crate::workload::tenants::TenantOptions {
                        tenants,
                        num_jobs: config.num_jobs,
                        jobs_per_hour: load,
                        seed,
                        reference_worker_type: options.reference_worker_type.clone(),
                    },
                )?,
                None => generator::generate(table, &options)?,
            };
            if config.burst_jobs > 0 && !config.static_trace {
                trace = crate::scheduling::workload::add_bursts(trace, table, &options, config.burst_jobs)?;
            }
            if config.short_bursts && !config.static_trace {
                trace = crate::scheduling::workload::add_short_bursts(trace, table, &options, load)?;
            }
            check_generated(&trace, load, seed)?;
            traces.push(((load.to_bits(), seed), trace));
        }
    }
    let total = grid.len();
    let done = AtomicUsize::new(0);
    let points = grid
        .into_par_iter()
        .map(|(variant, load, seed)| {
            let trace = &traces.iter().find(|(key, _)| *key == (load.to_bits(), seed)).expect("generated above").1;
            let sim = simulation_config(config, &variant, seed);
            let outcome = match &variant.composition {
                Some(c) => crate::scheduling::simulation::run_with(
                    trace,
                    table,
                    &sim,
                    c,
                    variant.synthesizer.as_ref(),
                    &mut |_| {},
                ),
                None => super::simulate(trace, table, &sim, &mut |_| {}),
            }
            .map_err(|e| e.to_string());
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            SweepPoint { variant, jobs_per_hour: load, seed, outcome }
        })
        .collect();
    Ok(points)
}

/// A generated trace through the checks of a trace read from a file (`trace::validate`): at a
/// load low enough, its arrivals pass `trace::MAX_ARRIVAL_SECONDS`, refused naming `--loads`;
/// any other refusal says which generated trace it is about.
fn check_generated(generated: &Trace, load: f64, seed: u64) -> Result<()> {
    for (i, job) in generated.jobs.iter().enumerate() {
        let Err(e) = trace::validate(i, job) else { continue };
        if e.field.as_deref().is_some_and(|f| f.ends_with(".arrival_seconds")) {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                "loads",
                format!(
                    "at --loads {load} the generated trace of seed {seed} has job {i} arrive at {} s, past the \
                     {:e} s a trace's arrivals stay within; a higher load arrives sooner",
                    crate::problem::shown(job.arrival_seconds),
                    trace::MAX_ARRIVAL_SECONDS
                ),
            ));
        }
        return Err(ArbiterError {
            message: format!("the trace generated at load {load}, seed {seed}: {}", e.message),
            ..e
        });
    }
    Ok(())
}

/// One run's configuration: the sweep's, for `variant` on the trace of `seed`.
fn simulation_config(config: &SweepConfig, variant: &Variant, seed: u64) -> SimulationConfig {
    SimulationConfig {
        heterogeneity_aware: variant.heterogeneity_aware,
        space_sharing: variant.space_sharing,
        round_seconds: config.round_seconds,
        ideal: config.ideal,
        realizable: config.realizable,
        tie_break: config.tie_break,
        restart_seconds: config.restart_seconds,
        window: config.window,
        seed,
        backend: config.backend,
        ..SimulationConfig::new(config.cluster.clone(), variant.policy)
    }
}

/// The CSV of a sweep: one row per simulation.
pub fn csv(points: &[SweepPoint]) -> String {
    let mut out = String::from(
        "variant,policy,heterogeneity_aware,space_sharing,jobs_per_hour,seed,jobs_total,jobs_arrived,jobs_measured,jobs_finished,\
         average_jct_hours,p50_jct_hours,p95_jct_hours,p99_jct_hours,makespan_hours,utilization,\
         preemptions,rounds,wall_seconds,average_responsiveness_hours,preemptions_per_job,\
         sharing_loss_share,tenant_unfairness_ratio,restart_overhead_share,realizable,error\n",
    );
    for p in points {
        let v = &p.variant;
        let _ = write!(
            out,
            "{},{},{},{},{},{},",
            v.label,
            match (&v.synthesizer, &v.composition) {
                (Some(_), _) => "synthesizer".to_string(),
                (None, Some(c)) => c.name(),
                (None, None) => v.policy.name().to_string(),
            },
            v.heterogeneity_aware,
            v.space_sharing,
            p.jobs_per_hour,
            p.seed
        );
        match &p.outcome {
            Ok(r) => {
                // Hours to 4 places; empty where there is no value (no job measured), as the
                // report's null.
                let h = |s: f64| if s.is_finite() { format!("{:.4}", s / 3600.0) } else { String::new() };
                let q = r.jct_percentiles_seconds;
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},{},{},{},{},{:.4},{},{},{:.3},{},{:.4},{},{},{},{},",
                    r.jobs_total,
                    r.jobs_arrived,
                    r.jobs_measured,
                    r.jobs_finished,
                    h(r.average_jct_seconds),
                    h(q.p50),
                    h(q.p95),
                    h(q.p99),
                    h(r.makespan_seconds),
                    r.utilization,
                    r.preemptions,
                    r.rounds,
                    r.wall_seconds,
                    h(r.average_responsiveness_seconds),
                    r.preemptions_per_job,
                    r.ltgf.as_ref().map_or(String::new(), |f| format!("{:.4}", f.sharing_loss_share)),
                    r.ltgf.as_ref().map_or(String::new(), |f| format!("{:.4}", f.tenant_unfairness_ratio)),
                    r.restart_overhead_share.map_or(String::new(), |s| format!("{s:.5}")),
                    r.realizable,
                );
            }
            Err(e) => {
                let _ = writeln!(out, ",,,,,,,,,,,,,,,,,,,\"{}\"", e.replace('"', "'"));
            }
        }
    }
    out
}

/// Average JCT (mean over seeds) against input load, one curve per variant.
pub fn jct_vs_load(points: &[SweepPoint], title: &str) -> Chart {
    let series = plot::mean_curves(points.iter().filter_map(|p| {
        let report = p.outcome.as_ref().ok()?;
        Some((p.variant.label.as_str(), p.jobs_per_hour, report.average_jct_seconds / 3600.0))
    }));
    Chart {
        title: title.into(),
        x_label: "input load (jobs/hour)".into(),
        y_label: "average JCT (hours)".into(),
        series,
    }
}

/// JCT CDFs per variant at one load (every seed's measured jobs pooled).
pub fn cdf_at_load(points: &[SweepPoint], jobs_per_hour: f64) -> Chart {
    let mut series: Vec<Series> = Vec::new();
    let mut labels: Vec<&str> = Vec::new();
    for p in points.iter().filter(|p| p.jobs_per_hour == jobs_per_hour) {
        if !labels.contains(&p.variant.label.as_str()) {
            labels.push(&p.variant.label);
        }
    }
    for label in labels {
        let mut pooled: Vec<f64> = Vec::new();
        for p in points.iter().filter(|p| p.jobs_per_hour == jobs_per_hour && p.variant.label == label) {
            if let Ok(r) = &p.outcome {
                pooled.extend(r.jobs.iter().filter(|j| j.measured).filter_map(|j| j.jct_seconds));
            }
        }
        pooled.sort_by(f64::total_cmp);
        let n = pooled.len() as f64;
        let mut curve = vec![(0.0, 0.0)];
        curve.extend(pooled.iter().enumerate().map(|(k, &s)| (s / 3600.0, (k + 1) as f64 / n)));
        series.push(Series { label: label.to_string(), points: curve });
    }
    plot::cdf_chart(format!("JCT CDF at {jobs_per_hour} jobs/hour"), series)
}

/// Long-term fairness at one load (multi-tenant sweeps): the worst-off tenant's cumulative `ρ`
/// hour by hour (first seed), and the CDF of job `ρ` (every seed's measured jobs pooled), one
/// curve per variant. Variants without LTGF figures are left out.
pub fn fairness_at_load(points: &[SweepPoint], jobs_per_hour: f64) -> (Chart, Chart) {
    let (mut tenants, mut jobs): (Vec<Series>, Vec<Series>) = (Vec::new(), Vec::new());
    let mut labels: Vec<&str> = Vec::new();
    for p in points.iter().filter(|p| p.jobs_per_hour == jobs_per_hour) {
        if !labels.contains(&p.variant.label.as_str()) {
            labels.push(&p.variant.label);
        }
    }
    for label in labels {
        let runs: Vec<&SimulationReport> = points
            .iter()
            .filter(|p| p.jobs_per_hour == jobs_per_hour && p.variant.label == label)
            .filter_map(|p| p.outcome.as_ref().ok())
            .collect();
        let Some(first) = runs.first().and_then(|r| r.ltgf.as_ref()) else { continue };
        let mut worst: Vec<(f64, f64)> = Vec::new();
        for t in &first.tenants {
            for &[at, rho] in &t.rho_over_time {
                match worst.iter_mut().find(|p| p.0 == at / 3600.0) {
                    Some(p) => p.1 = p.1.min(rho),
                    None => worst.push((at / 3600.0, rho)),
                }
            }
        }
        worst.sort_by(|a, b| a.0.total_cmp(&b.0));
        tenants.push(Series { label: label.to_string(), points: worst });
        let mut pooled: Vec<f64> = runs
            .iter()
            .flat_map(|r| r.jobs.iter().filter(|j| j.measured && j.finish_seconds.is_some()).filter_map(|j| j.ltgf_rho))
            .map(|r| r.min(3.0))
            .collect();
        pooled.sort_by(f64::total_cmp);
        // 200 quantiles draw the CDF as well as every job would.
        let n = pooled.len();
        let mut curve = vec![(0.0, 0.0)];
        if n > 0 {
            curve.extend((1..=200).map(|q| {
                let k = (q * n).div_ceil(200).clamp(1, n);
                (pooled[k - 1], k as f64 / n as f64)
            }));
        }
        jobs.push(Series { label: label.to_string(), points: curve });
    }
    (
        Chart {
            title: format!("worst-off tenant's cumulative ρ at {jobs_per_hour} jobs/hour"),
            x_label: "hours since the first arrival".into(),
            y_label: "min over tenants of ρ_tenant".into(),
            series: tenants,
        },
        Chart {
            title: format!("job ρ (capped at 3) at {jobs_per_hour} jobs/hour"),
            x_label: "ρ_job = GPU time / fair GPU time".into(),
            y_label: "fraction of jobs".into(),
            series: jobs,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_variants() {
        let v = Variant::parse("max_min_fairness:agnostic").unwrap();
        assert_eq!((v.policy, v.heterogeneity_aware, v.space_sharing), (PolicyKind::MaxMinFairness, false, false));
        let v = Variant::parse("max_min_fairness:space_sharing").unwrap();
        assert!(v.heterogeneity_aware && v.space_sharing);
        assert_eq!(Variant::parse("lass").unwrap_err().code, ErrorCode::UnknownPolicy);
        assert_eq!(Variant::parse("fifo:fast").unwrap_err().code, ErrorCode::MalformedRequest);
        // A list policy is a pipeline composition; an LP policy stays Gavel's.
        let v = Variant::parse("las:admission=accept_x=1.2:preemption=lease=30").unwrap();
        assert_eq!(v.composition.unwrap().name(), "accept_x=1.2+las+consolidated+lease=30");
        assert!(Variant::parse("fifo").unwrap().composition.is_some());
        assert!(Variant::parse("max_min_fairness").unwrap().composition.is_none());
        assert_eq!(Variant::parse("las:speed=2").unwrap_err().code, ErrorCode::MalformedRequest);
        assert_eq!(Variant::parse("las:placement=spread").unwrap_err().code, ErrorCode::UnknownPolicy);
        let v = Variant::parse("synthesizer:every=6:metric=responsiveness").unwrap();
        assert_eq!(v.synthesizer.unwrap().every_rounds, 6);
        assert_eq!(Variant::parse("synthesizer:metric=speed").unwrap_err().code, ErrorCode::MalformedRequest);
    }
}
