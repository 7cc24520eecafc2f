//! The paper's synthetic experiment as a grid: policies (with λ and P) × FIFO loads × TE shares ×
//! grace-period scales × seeds on one cluster of identical nodes. Each (load, TE share, seed) is
//! one workload, its arrival rate set so FIFO holds the load, its grace periods scaled by each
//! factor; every variant runs on each, in parallel. Rows for a CSV, and charts of the slowdown
//! percentiles against λ, P, the TE share, the grace-period scale (the paper's Figs. 4–7) or the
//! load.

use super::calibrate::rate_for_fifo_load;
use super::metrics::{summarize, Summary};
use super::run;
use super::workload::{at_rate, generate, Arrival, Distributions};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::problem::in_range;
use crate::scheduling::fitgpp::input::MAX_NODES;
use crate::scheduling::fitgpp::job::MAX_SECONDS;
use crate::scheduling::fitgpp::{preemption, JobKind, Resources, DEFAULT_MAX_PREEMPTIONS};
use crate::simulator::plot::{Chart, Series};
use crate::workload::MAX_GENERATED_JOBS;
use rayon::prelude::*;
use std::fmt::Write;

/// One policy setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// `fitgpp`, `lrtp`, `rand` or `none`.
    pub policy: String,
    pub lambda: f64,
    pub max_preemptions: u32,
    /// FitGpp preempts random BE jobs when no single one is a candidate.
    pub random_fallback: bool,
}

impl Variant {
    /// The label of a variant in tables and plots: `fitgpp(λ=1,P=1)`, `lrtp(P=1)`, `none`.
    pub fn label(&self) -> String {
        let p = |p: u32| if p == u32::MAX { "inf".to_string() } else { p.to_string() };
        match self.policy.as_str() {
            "fitgpp" => format!(
                "fitgpp(λ={},P={}{})",
                self.lambda,
                p(self.max_preemptions),
                if self.random_fallback { ",fallback" } else { "" }
            ),
            "none" => "none".into(),
            other => format!("{other}(P={})", p(self.max_preemptions)),
        }
    }

    /// `fitgpp[:lambda=F][:p=N|inf][:fallback]`, `lrtp[:p=N|inf]`, `rand[:p=N|inf]` or `none`
    /// (defaults λ = 1, P = 1); errors name `field`.
    pub fn parse(text: &str, field: &str) -> Result<Variant> {
        let mut parts = text.trim().split(':').map(str::trim);
        let policy = parts.next().unwrap_or_default().to_string();
        let mut v = Variant { policy, lambda: 1.0, max_preemptions: DEFAULT_MAX_PREEMPTIONS, random_fallback: false };
        let bad = |what: String| ArbiterError::at(ErrorCode::MalformedRequest, field, what);
        for option in parts {
            match (v.policy.as_str(), option.split_once('=')) {
                ("fitgpp", Some(("lambda", x))) => {
                    v.lambda = x
                        .parse()
                        .ok()
                        .filter(|l: &f64| l.is_finite() && *l >= 0.0)
                        .ok_or_else(|| bad(format!("{text:?}: lambda must be a finite number ≥ 0, got {x:?}")))?
                }
                ("fitgpp" | "lrtp" | "rand", Some(("p", x))) => {
                    v.max_preemptions = if x == "inf" {
                        u32::MAX
                    } else {
                        x.parse().map_err(|_| bad(format!("{text:?}: p must be a whole number or inf, got {x:?}")))?
                    }
                }
                ("fitgpp", None) if option == "fallback" => v.random_fallback = true,
                _ => {
                    return Err(bad(format!(
                        "{text:?}: unknown option {option:?}; fitgpp takes lambda=F, p=N|inf and fallback, \
                         lrtp and rand take p=N|inf, none takes none"
                    )))
                }
            }
        }
        if v.policy != "fitgpp" {
            v.lambda = 0.0;
        }
        if v.policy == "none" {
            v.max_preemptions = 0;
        }
        preemption::named(&v.policy, v.lambda, v.max_preemptions, v.random_fallback, 0)
            .map_err(|e| ArbiterError { field: Some(field.into()), ..e })?;
        Ok(v)
    }

    /// The policy itself, its random choices seeded by `seed`.
    pub fn preemptor(&self, seed: u64) -> Result<Box<dyn preemption::Preemptor>> {
        preemption::named(&self.policy, self.lambda, self.max_preemptions, self.random_fallback, seed)
    }

    /// Whether its runs depend on the seed of its random choices.
    pub fn is_random(&self) -> bool {
        self.policy == "rand" || self.random_fallback
    }
}

/// What the grid runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentConfig {
    pub nodes: usize,
    pub node: Resources,
    pub jobs: usize,
    /// The cluster loads FIFO should hold, one set of workloads each.
    pub loads: Vec<f64>,
    pub distributions: Distributions,
    pub te_shares: Vec<f64>,
    /// Factors on every job's grace period: the distribution's mean, sd and bounds scaled alike
    /// (the paper's Fig. 7: 1, 2, 4, 8).
    pub grace_scales: Vec<f64>,
    pub seeds: Vec<u64>,
    pub variants: Vec<Variant>,
    /// Runs of `rand` (and of FitGpp's random fallback) per workload, each with its own random
    /// choices (the paper averages four).
    pub random_runs: u32,
}

impl ExperimentConfig {
    /// The paper's setting: 84 nodes × (32 cores, 256 GB, 8 GPUs), 30% TE, load 2.0, eight
    /// workloads, P = 1; FitGpp (λ = 1), LRTP, RAND and FIFO.
    pub fn paper(jobs: usize) -> ExperimentConfig {
        let v = |policy: &str| Variant {
            policy: policy.into(),
            lambda: 1.0,
            max_preemptions: DEFAULT_MAX_PREEMPTIONS,
            random_fallback: false,
        };
        ExperimentConfig {
            nodes: 84,
            node: Resources::new(32, 256, 8),
            jobs,
            loads: vec![2.0],
            distributions: super::workload::DEFAULT_DISTRIBUTIONS,
            te_shares: vec![0.3],
            grace_scales: vec![1.0],
            seeds: (0..8).collect(),
            variants: vec![v("fitgpp"), v("lrtp"), v("rand"), v("none")],
            random_runs: 1,
        }
    }

    /// Jobs `jobs/10 .. jobs − jobs/10` are measured (the first tenth fills the cluster, the last
    /// drains it).
    pub fn window(&self) -> (usize, usize) {
        (self.jobs / 10, self.jobs - self.jobs / 10)
    }
}

/// Warnings for the loads FIFO did not reach within 5% at any arrival rate (too few jobs, or a
/// cluster too large for them): the rows' `fifo_load` says what it reached.
pub fn missed_loads(rows: &[Row]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| (r.fifo_load / r.load - 1.0).abs() > 0.05) {
        let line = format!(
            "load {}: FIFO reaches {:.3} on seed {}'s workload at the closest rate (too few jobs for this cluster?); \
             its rows' fifo_load says so",
            r.load, r.fifo_load, r.seed
        );
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// One simulation's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub variant: Variant,
    /// The load FIFO was to hold.
    pub load: f64,
    pub te_share: f64,
    /// The factor on the workload's grace periods.
    pub grace_scale: f64,
    pub seed: u64,
    /// Which run of a randomized policy (0 for the others).
    pub run: u32,
    pub arrivals_per_hour: f64,
    /// FIFO's load over the measured arrivals at that rate.
    pub fifo_load: f64,
    pub summary: Summary,
}

/// One calibrated workload of the grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibrated {
    pub load: f64,
    pub te_share: f64,
    pub grace_scale: f64,
    pub seed: u64,
    /// Arrivals at the rate found.
    pub arrivals: Vec<Arrival>,
    /// Arrivals per second.
    pub rate: f64,
    /// FIFO's load over the measured arrivals at that rate.
    pub fifo_load: f64,
}

/// The grid's workloads, in (load, TE share, seed, grace scale) order, each at the rate at which
/// FIFO holds its load (FIFO preempts nothing, so the grace periods do not change it).
pub fn workloads(config: &ExperimentConfig) -> Result<Vec<Calibrated>> {
    if !(1..=MAX_NODES).contains(&config.nodes) {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "nodes",
            format!("the experiment runs on 1 to {MAX_NODES} nodes, got {}", config.nodes),
        ));
    }
    if !(20..=MAX_GENERATED_JOBS).contains(&config.jobs) {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "jobs",
            format!("the experiment needs 20 to {MAX_GENERATED_JOBS} jobs per workload, got {}", config.jobs),
        ));
    }
    let capacities = vec![config.node; config.nodes];
    let window = config.window();
    let grid: Vec<(f64, f64, u64)> = config
        .loads
        .iter()
        .flat_map(|&l| config.te_shares.iter().flat_map(move |&s| config.seeds.iter().map(move |&seed| (l, s, seed))))
        .collect();
    // Scaled grace periods stay within what a job may give (`JobSpec::validate`), or every run
    // would be refused naming a job's grace period after the calibration.
    let (low, high) = (config.distributions.grace_period_seconds.low, config.distributions.grace_period_seconds.high);
    let scales =
        |g: f64| g == 0.0 || (g > 0.0 && in_range(g) && g * high <= MAX_SECONDS && (low == 0.0 || in_range(g * low)));
    if let Some(&bad) = config.grace_scales.iter().find(|g| !scales(**g)) {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "grace_scale",
            format!(
                "a grace-period scale must be 0, or > 0 and keep the grace periods ({low} to {high} s) between \
                 1e-100 and 1e9 s, got {}",
                crate::problem::shown(bad)
            ),
        ));
    }
    let calibrated = grid
        .par_iter()
        .map(|&(load, te_share, seed)| {
            let unit = generate(&config.distributions, config.jobs, te_share, seed)?;
            let (rate, fifo_load) = rate_for_fifo_load(&unit, &capacities, load, window)?;
            Ok((load, te_share, seed, at_rate(&unit, rate), rate, fifo_load))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(calibrated
        .into_iter()
        .flat_map(|(load, te_share, seed, arrivals, rate, fifo_load)| {
            config.grace_scales.iter().map(move |&grace_scale| Calibrated {
                load,
                te_share,
                grace_scale,
                seed,
                arrivals: with_grace_scaled(&arrivals, grace_scale),
                rate,
                fifo_load,
            })
        })
        .collect())
}

/// The same jobs with every grace period times `scale` (a truncated normal scaled in mean, sd and
/// bounds is the scaled draw).
fn with_grace_scaled(arrivals: &[Arrival], scale: f64) -> Vec<Arrival> {
    arrivals
        .iter()
        .map(|a| {
            let mut a = a.clone();
            a.spec.grace_period_seconds *= scale;
            a
        })
        .collect()
}

/// Runs the grid; rows in (load, TE share, seed, grace scale, variant) order.
pub fn run(config: &ExperimentConfig) -> Result<Vec<Row>> {
    run_reporting(config, &|_, _| {})
}

/// `run`, telling `report` (simulations done, total) as each simulation ends.
pub fn run_reporting(config: &ExperimentConfig, report: &(dyn Fn(usize, usize) + Sync)) -> Result<Vec<Row>> {
    for v in &config.variants {
        v.preemptor(0)?;
    }
    let calibrated = workloads(config)?;
    let capacities = vec![config.node; config.nodes];
    let window = config.window();
    let cases: Vec<(usize, &Variant, u32)> = (0..calibrated.len())
        .flat_map(|w| {
            config.variants.iter().flat_map(move |v| {
                (0..if v.is_random() { config.random_runs.max(1) } else { 1 }).map(move |run| (w, v, run))
            })
        })
        .collect();
    let done = std::sync::atomic::AtomicUsize::new(0);
    cases
        .par_iter()
        .map(|&(w, v, run)| {
            let c = &calibrated[w];
            let rng_seed = c.seed.wrapping_add(u64::from(run).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let jobs = run::run(&c.arrivals, &capacities, v.preemptor(rng_seed)?)?;
            let measured: Vec<_> = jobs[window.0..window.1].iter().collect();
            report(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1, cases.len());
            Ok(Row {
                variant: v.clone(),
                load: c.load,
                te_share: c.te_share,
                grace_scale: c.grace_scale,
                seed: c.seed,
                run,
                arrivals_per_hour: c.rate * 3600.0,
                fifo_load: c.fifo_load,
                summary: summarize(&measured),
            })
        })
        .collect()
}

/// One CSV row per simulation.
pub fn csv(rows: &[Row]) -> String {
    let mut o = String::from(
        "variant,policy,lambda,max_preemptions,load,te_share,grace_scale,seed,run,arrivals_per_hour,fifo_load,jobs_measured,\
         te_p50,te_p95,te_p99,be_p50,be_p95,be_p99,preempted_share,preempted_once,preempted_twice,\
         preempted_3plus,preemptions,te_made_room,te_declined,interval_p50_s,interval_p75_s,interval_p95_s,interval_p99_s\n",
    );
    for r in rows {
        let s = &r.summary;
        let i = &s.restart_interval_seconds;
        let p =
            if r.variant.max_preemptions == u32::MAX { "inf".into() } else { r.variant.max_preemptions.to_string() };
        let _ = writeln!(
            o,
            "\"{}\",{},{},{},{},{},{},{},{},{:.4},{:.4},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.6},{:.6},{:.6},{:.6},{},{:.6},{:.6},{:.1},{:.1},{:.1},{:.1}",
            r.variant.label(),
            r.variant.policy,
            r.variant.lambda,
            p,
            r.load,
            r.te_share,
            r.grace_scale,
            r.seed,
            r.run,
            r.arrivals_per_hour,
            r.fifo_load,
            s.jobs_measured,
            s.te.p50,
            s.te.p95,
            s.te.p99,
            s.be.p50,
            s.be.p95,
            s.be.p99,
            s.preempted_share,
            s.preempted_times_share[0],
            s.preempted_times_share[1],
            s.preempted_times_share[2],
            s.preemptions,
            s.te_made_room_share,
            s.te_declined_share,
            i.p50,
            i.p75,
            i.p95,
            i.p99,
        );
    }
    o
}

/// The x axis of a sensitivity chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    Lambda,
    MaxPreemptions,
    TeShare,
    Load,
    GraceScale,
}

impl Axis {
    pub fn named(name: &str) -> Result<Axis> {
        match name {
            "lambda" => Ok(Axis::Lambda),
            "max_preemptions" => Ok(Axis::MaxPreemptions),
            "te_share" => Ok(Axis::TeShare),
            "load" => Ok(Axis::Load),
            "grace_scale" => Ok(Axis::GraceScale),
            other => Err(ArbiterError::at(
                ErrorCode::Unsupported,
                "plot_x",
                format!("unknown axis {other:?}; expected lambda, max_preemptions, te_share, load or grace_scale"),
            )),
        }
    }

    fn of(self, r: &Row) -> f64 {
        match self {
            Axis::Lambda => r.variant.lambda,
            Axis::MaxPreemptions => r.variant.max_preemptions as f64,
            Axis::TeShare => r.te_share,
            Axis::Load => r.load,
            Axis::GraceScale => r.grace_scale,
        }
    }

    /// A row's series label without the value on this axis.
    fn series(self, r: &Row) -> String {
        let v = &r.variant;
        match (self, v.policy.as_str()) {
            (Axis::Lambda, "fitgpp") => format!("fitgpp P={}", v.max_preemptions),
            (Axis::MaxPreemptions, "fitgpp") => format!("fitgpp λ={}", v.lambda),
            (Axis::MaxPreemptions, p) => p.to_string(),
            _ => v.label(),
        }
    }
}

/// Slowdown percentiles of `kind`'s jobs (means over seeds) against `axis`: p50/p95/p99 per
/// setting, only p95 against the TE share (the paper's Fig. 6) or the load, p95 and p99 against
/// the grace-period scale (Fig. 7). P = ∞ is left out.
pub fn chart(rows: &[Row], axis: Axis, kind: JobKind, title: &str) -> Chart {
    let percentiles: &[&str] = match axis {
        Axis::TeShare | Axis::Load => &["p95"],
        Axis::GraceScale => &["p95", "p99"],
        _ => &["p50", "p95", "p99"],
    };
    let mut labels: Vec<String> = Vec::new();
    for r in rows {
        let l = axis.series(r);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let mut series = Vec::new();
    for label in &labels {
        {
            for &q in percentiles {
                let mut xs: Vec<f64> = Vec::new();
                let mut points = Vec::new();
                let of = |r: &Row| {
                    let s = if kind == JobKind::Te { &r.summary.te } else { &r.summary.be };
                    match q {
                        "p50" => s.p50,
                        "p95" => s.p95,
                        _ => s.p99,
                    }
                };
                let group: Vec<&Row> =
                    rows.iter().filter(|r| &axis.series(r) == label && r.variant.max_preemptions != u32::MAX).collect();
                for r in &group {
                    let x = axis.of(r);
                    if !xs.contains(&x) {
                        xs.push(x);
                    }
                }
                xs.sort_by(f64::total_cmp);
                for x in xs {
                    let at: Vec<f64> = group.iter().filter(|r| axis.of(r) == x).map(|r| of(r)).collect();
                    points.push((x, at.iter().sum::<f64>() / at.len() as f64));
                }
                series.push(Series { label: format!("{label} {q}"), points });
            }
        }
    }
    let x_label = match axis {
        Axis::Lambda => "λ (weight of the grace period)",
        Axis::MaxPreemptions => "P (preemptions per BE job at most)",
        Axis::TeShare => "share of TE jobs",
        Axis::Load => "cluster load under FIFO",
        Axis::GraceScale => "grace periods, × the default distribution",
    };
    let y_label = format!("{} slowdown (mean over workloads)", kind.name().to_uppercase());
    Chart { title: title.into(), x_label: x_label.into(), y_label, series }
}

/// Means over seeds (and runs) per (variant, load, TE share), as a markdown table; `workloads` counts
/// the seeds.
pub fn table(rows: &[Row]) -> String {
    let mut keys: Vec<(String, f64, f64, f64)> = Vec::new();
    for r in rows {
        let k = (r.variant.label(), r.load, r.te_share, r.grace_scale);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut o = String::from(
        "| policy | TE share | GP scale | workloads | FIFO load | TE p50 | TE p95 | TE p99 | BE p50 | BE p95 | BE p99 | preempted jobs | TE jobs made room for / declined | restart interval p50 / p95 (min) |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (label, load, share, grace) in keys {
        let g: Vec<&Row> = rows
            .iter()
            .filter(|r| r.variant.label() == label && r.load == load && r.te_share == share && r.grace_scale == grace)
            .collect();
        let mean = |f: &dyn Fn(&Row) -> f64| {
            let v: Vec<f64> = g.iter().map(|r| f(r)).filter(|x| x.is_finite()).collect();
            if v.is_empty() {
                f64::NAN
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        let _ = writeln!(
            o,
            "| {label} | {share} | {grace} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}% | {:.1}% / {:.1}% | {:.1} / {:.1} |",
            g.iter().map(|r| r.seed).collect::<std::collections::BTreeSet<_>>().len(),
            mean(&|r| r.fifo_load),
            mean(&|r| r.summary.te.p50),
            mean(&|r| r.summary.te.p95),
            mean(&|r| r.summary.te.p99),
            mean(&|r| r.summary.be.p50),
            mean(&|r| r.summary.be.p95),
            mean(&|r| r.summary.be.p99),
            100.0 * mean(&|r| r.summary.preempted_share),
            100.0 * mean(&|r| r.summary.te_made_room_share),
            100.0 * mean(&|r| r.summary.te_declined_share),
            mean(&|r| r.summary.restart_interval_seconds.p50) / 60.0,
            mean(&|r| r.summary.restart_interval_seconds.p95) / 60.0,
        );
    }
    o
}
