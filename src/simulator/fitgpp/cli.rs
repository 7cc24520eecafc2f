//! The `arbiter fitgpp` command: flags into an `ExperimentConfig`, the CSV, the summary table and
//! a sensitivity chart. The command line (`src/cli.rs`) only dispatches here.

use super::experiment::{self, Axis, ExperimentConfig, Variant};
use super::trace;
use super::workload::{Distributions, DEFAULT_DISTRIBUTIONS};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::scheduling::fitgpp::{JobKind, Resources};
use crate::simulator::cli::{check_destinations, in_parallel, refuse_standard_output, write_file, write_output};
use std::path::{Path, PathBuf};

/// Flags of `arbiter fitgpp`.
#[derive(Debug, Clone, clap::Args)]
pub struct FitGppArgs {
    /// Comma-separated preemption policies: `fitgpp`, `lrtp`, `rand`, `none` (non-preemptive FIFO).
    #[arg(long, default_value = "fitgpp,lrtp,rand,none")]
    pub preemption: String,
    /// Comma-separated λ values for `fitgpp` (weight of the grace period in the score).
    #[arg(long, default_value = "1")]
    pub lambda: String,
    /// Comma-separated caps P on preemptions per BE job (`inf`: no cap), for every preemptive policy.
    #[arg(long, default_value = "1")]
    pub max_preemptions: String,
    /// FitGpp preempts random BE jobs when no single one frees enough (the paper's fallback).
    #[arg(long)]
    pub random_fallback: bool,
    /// Runs of `rand` (and of FitGpp's random fallback) per workload, each with its own random
    /// choices; tables and plots average them (four, as the paper runs RAND).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub random_runs: u32,
    /// Comma-separated shares of TE jobs.
    #[arg(long, default_value = "0.3")]
    pub te_share: String,
    /// Comma-separated factors on every job's grace period (the distribution's mean, sd and bounds
    /// scaled alike; the paper's Fig. 7 uses 1, 2, 4, 8).
    #[arg(long, default_value = "1")]
    pub grace_scale: String,
    /// Comma-separated seeds: one workload per (TE share, seed).
    #[arg(long, default_value = "0,1,2,3,4,5,6,7")]
    pub seeds: String,
    /// Jobs per workload, 20 to 1,000,000 (the middle 80% are measured).
    #[arg(long, default_value_t = 5000)]
    pub jobs: usize,
    /// Nodes in the cluster (at most 100,000).
    #[arg(long, default_value_t = 84)]
    pub nodes: usize,
    /// Each node's CPU cores, memory (GB) and GPUs.
    #[arg(long, default_value = "32,256,8")]
    pub node: String,
    /// The job distributions as JSON (default: `docs/fitgpp.md`'s choice; `--print-distributions`
    /// shows its shape).
    #[arg(long, value_name = "FILE")]
    pub distributions: Option<PathBuf>,
    /// Print the distributions in use as JSON and exit.
    #[arg(long)]
    pub print_distributions: bool,
    /// Write each (load, TE share, grace scale, seed) workload, at the rate at which FIFO holds its
    /// load, as a FitGpp workload file `DIR/fitgpp-load{L}-te{S}[-grace{G}]-seed{N}.json` (for
    /// `arbiter simulate --trace`), and exit.
    #[arg(long, value_name = "DIR")]
    pub write_workloads: Option<PathBuf>,
    /// Comma-separated cluster loads FIFO holds (arrival rates are set to reach each).
    #[arg(long, default_value = "2")]
    pub load: String,
    /// Simulations run at once (default: one per core; at most 1,024, as for `sweep`).
    #[arg(long)]
    pub threads: Option<usize>,
    /// The CSV, one row per simulation (`-`: standard output).
    #[arg(long, value_name = "FILE|-", required_unless_present_any = ["print_distributions", "write_workloads"])]
    pub output: Option<String>,
    /// Also write the table of means over seeds (markdown) here (`-`: standard output).
    #[arg(long, value_name = "FILE|-")]
    pub table: Option<String>,
    /// Slowdown percentiles against `--plot-x`, as SVG: PREFIX-te.svg and PREFIX-be.svg.
    #[arg(long, value_name = "PREFIX")]
    pub plot: Option<String>,
    /// The plot's x axis: `lambda`, `max_preemptions`, `te_share`, `load` or `grace_scale`.
    #[arg(long, default_value = "lambda")]
    pub plot_x: String,
}

/// A comma-separated list, each item `what` (the message says so when one is not); `flag` is
/// named as `--flag` in the message and as the field with `_` for `-`, as other refusals of the
/// command line name flags.
fn list<T>(text: &str, flag: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>> {
    text.split(',')
        .map(|s| {
            parse(s.trim()).ok_or_else(|| {
                ArbiterError::at(
                    ErrorCode::InvalidNumber,
                    flag.replace('-', "_"),
                    format!("--{flag}: {s:?} is not {what}"),
                )
            })
        })
        .collect()
}

/// `list` for an axis of the grid: no value twice (as `sweep`'s lists), since each would run
/// and print the same rows.
fn grid_list<T: PartialEq>(text: &str, flag: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>> {
    let items = list(text, flag, what, parse)?;
    match (1..items.len()).find(|&i| items[..i].contains(&items[i])) {
        Some(i) => Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            flag.replace('-', "_"),
            format!("--{flag} names {} twice", text.split(',').nth(i).unwrap_or_default().trim()),
        )),
        None => Ok(items),
    }
}

/// `32,256,8` → 32 cores, 256 GB, 8 GPUs.
pub fn parse_node(text: &str) -> Result<Resources> {
    let v = list(text, "node", "a whole number", |s| s.parse::<u32>().ok())?;
    match v[..] {
        // Not `c + m + g > 0`: the sum of three u32 overflows.
        [c, m, g] if c > 0 || m > 0 || g > 0 => Ok(Resources::new(c, m, g)),
        _ => Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            "node",
            format!("--node must be CORES,MEMORY_GB,GPUS (whole numbers, not all 0), got {text:?}"),
        )),
    }
}

/// Refuses a load FIFO cannot be calibrated to: at most 0, or of a magnitude outside the
/// contract's (`problem::in_range`); `field` is the flag (`load`, or a sweep's `loads`).
pub fn check_loads(loads: &[f64], field: &str) -> Result<()> {
    match loads.iter().find_map(|&l| crate::problem::positive_refusal(l, &format!("--{field}"))) {
        Some(why) => Err(ArbiterError::at(ErrorCode::InvalidNumber, field, why)),
        None => Ok(()),
    }
}

/// The grid the flags describe.
pub fn config(args: &FitGppArgs) -> Result<ExperimentConfig> {
    let policies = grid_list(&args.preemption, "preemption", "a policy name", |s| Some(s.to_string()))?;
    let lambdas = grid_list(&args.lambda, "lambda", "a finite number ≥ 0", |s| {
        s.parse::<f64>().ok().filter(|l| l.is_finite() && *l >= 0.0)
    })?;
    let caps = grid_list(&args.max_preemptions, "max-preemptions", "a whole number or inf", |s| {
        if s == "inf" {
            Some(u32::MAX)
        } else {
            s.parse::<u32>().ok()
        }
    })?;
    let te_shares = grid_list(&args.te_share, "te-share", "a share from 0 to 1", |s| {
        s.parse::<f64>().ok().filter(|x| (0.0..=1.0).contains(x))
    })?;
    let seeds = grid_list(&args.seeds, "seeds", "a whole number ≥ 0", |s| s.parse::<u64>().ok())?;
    let grace_scales = grid_list(&args.grace_scale, "grace-scale", "a finite number ≥ 0", |s| {
        s.parse::<f64>().ok().filter(|g| g.is_finite() && *g >= 0.0)
    })?;
    let mut variants = Vec::new();
    for p in &policies {
        let at = |lambda: f64, max_preemptions: u32| Variant {
            policy: p.clone(),
            lambda,
            max_preemptions,
            random_fallback: args.random_fallback && p == "fitgpp",
        };
        match p.as_str() {
            "fitgpp" => {
                variants.extend(lambdas.iter().flat_map(|&l| caps.iter().map(move |&c| (l, c))).map(|(l, c)| at(l, c)))
            }
            "lrtp" | "rand" => variants.extend(caps.iter().map(|&c| at(0.0, c))),
            "none" => variants.push(at(0.0, 0)),
            other => {
                return Err(ArbiterError::at(
                    ErrorCode::UnknownPolicy,
                    "preemption",
                    format!("unknown preemption policy {other:?}; expected fitgpp, lrtp, rand or none"),
                ))
            }
        }
    }
    let loads = grid_list(&args.load, "load", "a number", |s| s.parse::<f64>().ok())?;
    check_loads(&loads, "load")?;
    let distributions = match &args.distributions {
        Some(path) => Distributions::from_json(&std::fs::read_to_string(path).map_err(|e| {
            ArbiterError::at(
                ErrorCode::MalformedRequest,
                "distributions",
                format!("cannot read {}: {e}", path.display()),
            )
        })?)?,
        None => DEFAULT_DISTRIBUTIONS,
    };
    Ok(ExperimentConfig {
        nodes: args.nodes,
        distributions,
        node: parse_node(&args.node)?,
        jobs: args.jobs,
        loads,
        te_shares,
        grace_scales,
        seeds,
        variants,
        random_runs: args.random_runs,
    })
}

/// Writes the grid's calibrated workloads under `dir` (created if missing, before they are drawn
/// and calibrated), one file each.
fn write_workloads(config: &ExperimentConfig, dir: &std::path::Path) -> Result<()> {
    if dir.as_os_str() == "-" {
        return Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            "write_workloads",
            "--write-workloads names a directory for one workload file each; they cannot go to standard output (-)",
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        ArbiterError::at(
            ErrorCode::MalformedRequest,
            "write_workloads",
            format!("cannot create {}: {e}", dir.display()),
        )
    })?;
    let workloads = experiment::workloads(config)?;
    let capacities = vec![config.node; config.nodes];
    for w in workloads {
        let grace = if w.grace_scale == 1.0 { String::new() } else { format!("-grace{}", w.grace_scale) };
        let path = dir.join(format!("fitgpp-load{}-te{}{grace}-seed{}.json", w.load, w.te_share, w.seed));
        write_file(&path, &trace::write(&capacities, &w.arrivals))?;
        eprintln!(
            "{}: {} jobs, {:.2} per hour, FIFO load {:.3}",
            path.display(),
            w.arrivals.len(),
            w.rate * 3600.0,
            w.fifo_load
        );
    }
    Ok(())
}

/// Runs `arbiter fitgpp`.
pub fn run(args: &FitGppArgs) -> Result<()> {
    refuse_ignored(args)?;
    let config = config(args)?;
    if args.print_distributions {
        let text = serde_json::to_string_pretty(&config.distributions).expect("distributions always serialize");
        return write_output("-", &text);
    }
    if let Some(dir) = &args.write_workloads {
        return write_workloads(&config, dir);
    }
    refuse_standard_output(&[("plot", args.plot.as_deref().map(Path::new))])?;
    let plots = args.plot.as_deref().map(plot_files);
    let mut destinations: Vec<(&str, Option<&Path>)> =
        vec![("output", args.output.as_deref().map(Path::new)), ("table", args.table.as_deref().map(Path::new))];
    destinations.extend(plots.iter().flatten().map(|(_, p)| ("plot", Some(p.as_path()))));
    check_destinations(&destinations)?;
    let axis = Axis::named(&args.plot_x)?;
    let rows = in_parallel(args.threads, |report| experiment::run_reporting(&config, report))?;
    write_output(args.output.as_deref().unwrap_or("-"), experiment::csv(&rows).trim_end())?;
    for warning in experiment::missed_loads(&rows) {
        eprintln!("{warning}");
    }
    if let Some(target) = &args.table {
        write_output(target, experiment::table(&rows).trim_end())?;
    }
    for &(kind, ref path) in plots.iter().flatten() {
        let title = format!(
            "{} jobs, {} nodes × ({}), FIFO load {}, {} workloads",
            kind.name().to_uppercase(),
            config.nodes,
            config.node,
            args.load,
            config.seeds.len()
        );
        write_file(path, &experiment::chart(&rows, axis, kind, &title).to_svg())?;
    }
    Ok(())
}

/// `--print-distributions` and `--write-workloads` exit before any simulation: the flags only the
/// simulations use (and `--write-workloads` beside `--print-distributions`) would be ignored, so
/// they are refused naming the flag.
fn refuse_ignored(args: &FitGppArgs) -> Result<()> {
    let exits =
        [("print-distributions", args.print_distributions), ("write-workloads", args.write_workloads.is_some())];
    let Some((mode, _)) = exits.iter().find(|(_, given)| *given) else {
        return Ok(());
    };
    let ignored = [
        ("write-workloads", *mode == "print-distributions" && args.write_workloads.is_some()),
        ("output", args.output.is_some()),
        ("table", args.table.is_some()),
        ("plot", args.plot.is_some()),
        ("plot-x", args.plot_x != "lambda"),
    ];
    match ignored.iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            flag.replace('-', "_"),
            format!("--{flag} would be ignored: --{mode} writes its files and exits before any simulation"),
        )),
        None => Ok(()),
    }
}

/// `--plot PREFIX`'s files: PREFIX-te.svg and PREFIX-be.svg.
fn plot_files(prefix: &str) -> [(JobKind, PathBuf); 2] {
    [JobKind::Te, JobKind::Be].map(|kind| (kind, PathBuf::from(format!("{prefix}-{}.svg", kind.name()))))
}
