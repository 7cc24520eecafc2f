//! `arbiter simulate` and `arbiter sweep` on FitGpp's nodes of cores, memory and GPUs: a trace
//! that is a FitGpp workload (`{"nodes", "jobs"}`) runs under `--preemption fitgpp|lrtp|rand|none`;
//! a sweep whose policies name `fitgpp`, `lrtp` or `rand` is the paper's experiment over loads and
//! seeds. Refuses the flags that only mean something in rounds. `simulator::cli` dispatches here;
//! the runs are `run`'s and `experiment`'s, the output `report`'s.

use super::experiment::{self, Axis, ExperimentConfig, Variant};
use super::report::FitGppReport;
use super::{run, trace};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::scheduling::fitgpp::input::MAX_NODES;
use crate::scheduling::fitgpp::{JobKind, Resources};
use crate::simulator::cli::{
    in_parallel, number_list, parse_window, refuse_given, round_only_flags, round_only_sweep_flags, write_file,
    write_output, write_report, SimulateArgs, SweepArgs,
};
use crate::simulator::plot::Chart;
use std::time::Instant;

/// Preemption policies only FitGpp's model has (`none` is the pipeline's too).
const OWN_NAMES: [&str; 3] = ["fitgpp", "lrtp", "rand"];

/// What a FitGpp run is instead of rounds, for refusing round-only flags.
const NOT_ROUNDS: &str = "a FitGpp workload runs on its own nodes of cores, memory and GPUs, event by event";

fn names_own_policy(text: &str) -> bool {
    OWN_NAMES.contains(&text.split(':').next().unwrap_or_default().trim())
}

/// A round-based trace given a preemption only FitGpp's nodes have.
pub fn refuse_for_rounds(preemption: Option<&str>) -> Result<()> {
    match preemption {
        Some(p) if names_own_policy(p) => Err(ArbiterError::at(
            ErrorCode::Unsupported,
            "preemption",
            format!(
                "--preemption {p} preempts on nodes of cores, memory and GPUs with grace periods: it runs on a \
                 FitGpp workload (a JSON {{\"nodes\", \"jobs\"}}, docs/fitgpp.md; `arbiter fitgpp \
                 --write-workloads DIR` makes some); this trace's preemption stages are lease, lease_term, none"
            ),
        )),
        _ => Ok(()),
    }
}

/// `arbiter simulate` on a FitGpp workload (`text`, the trace file's).
pub fn simulate(args: &SimulateArgs, text: &str) -> Result<()> {
    let mut flags = round_only_flags(args);
    flags.extend([("admission", args.admission.is_some()), ("scheduling", args.scheduling.is_some())]);
    refuse_given(&flags, NOT_ROUNDS)?;
    let variant = Variant::parse(args.preemption.as_deref().unwrap_or("fitgpp"), "preemption")?;
    let (capacities, arrivals) = trace::read(text)?;
    let window = match args.window.as_deref() {
        None => (0, arrivals.len()),
        Some(w) => match parse_window(w)? {
            (first, last) if first < last && last <= arrivals.len() => (first, last),
            (first, last) => {
                return Err(ArbiterError::at(
                    ErrorCode::InvalidNumber,
                    "window",
                    format!("--window {first}:{last} must be FIRST < LAST ≤ {} jobs", arrivals.len()),
                ))
            }
        },
    };
    let started = Instant::now();
    let jobs = run::run(&arrivals, &capacities, variant.preemptor(args.seed)?)?;
    let report = FitGppReport::new(variant.label(), &jobs, &capacities, window, started.elapsed().as_secs_f64());
    write_report(args, &report, || report.slowdown_chart())
}

/// Whether a sweep's policies name one of FitGpp's preemption policies (then every one must be
/// FitGpp's, `none` meaning FIFO).
pub fn is_fitgpp_sweep(policies: &str) -> bool {
    policies.split(',').any(names_own_policy)
}

/// `--cluster 84x32,256,8` → 84 nodes of 32 cores, 256 GB and 8 GPUs.
fn parse_nodes(text: &str) -> Result<(usize, Resources)> {
    let bad = || {
        ArbiterError::at(
            ErrorCode::MalformedRequest,
            "cluster",
            format!("a FitGpp sweep's --cluster is NODESxCORES,MEMORY_GB,GPUS (e.g. 84x32,256,8), got {text:?}"),
        )
    };
    let (count, node) = text.split_once('x').ok_or_else(bad)?;
    let count: usize = count.trim().parse().map_err(|_| bad())?;
    let node = super::cli::parse_node(node).map_err(|_| bad())?;
    if count == 0 {
        return Err(bad());
    }
    if count > MAX_NODES {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "cluster",
            format!("a FitGpp sweep's --cluster has at most {MAX_NODES} nodes, got {count}"),
        ));
    }
    Ok((count, node))
}

/// `arbiter sweep` over FitGpp's experiment: `--policies` are preemption policies, `--loads` the
/// loads FIFO holds (default 2), `--jobs` jobs per workload (default 5,000), on `--cluster` nodes
/// (default the paper's 84 × (32 cores, 256 GB, 8 GPUs)), 30% TE jobs.
pub fn sweep(args: &SweepArgs) -> Result<()> {
    refuse_given(&round_only_sweep_flags(args), NOT_ROUNDS)?;
    let mut config = ExperimentConfig::paper(5000);
    config.variants = args.policies.split(',').map(|p| Variant::parse(p, "policies")).collect::<Result<_>>()?;
    config.seeds = number_list(&args.seeds, "seeds")?;
    if let Some(loads) = &args.loads {
        config.loads = number_list(loads, "loads")?;
        super::cli::check_loads(&config.loads, "loads")?;
    }
    if let Some(jobs) = &args.jobs {
        config.jobs = jobs.trim().parse().map_err(|_| {
            ArbiterError::at(
                ErrorCode::MalformedRequest,
                "jobs",
                format!("--jobs is one number of jobs per FitGpp workload, got {jobs:?}"),
            )
        })?;
    }
    if let Some(cluster) = &args.cluster {
        (config.nodes, config.node) = parse_nodes(cluster)?;
    }
    let rows = in_parallel(args.threads, |report| experiment::run_reporting(&config, report))?;
    write_output(&args.output, experiment::csv(&rows).trim_end())?;
    for warning in experiment::missed_loads(&rows) {
        eprintln!("{warning}");
    }
    if let Some(path) = &args.plot {
        write_file(path, &p95_against_load(&rows, &config).to_svg())?;
    }
    Ok(())
}

/// Every policy's TE and BE p95 slowdowns (means over seeds) against the load.
fn p95_against_load(rows: &[experiment::Row], config: &ExperimentConfig) -> Chart {
    let title = format!("{} nodes × ({}), {} workloads per load", config.nodes, config.node, config.seeds.len());
    let mut chart = experiment::chart(rows, Axis::Load, JobKind::Te, &title);
    let be = experiment::chart(rows, Axis::Load, JobKind::Be, &title);
    for s in &mut chart.series {
        s.label = format!("TE {}", s.label);
    }
    chart.series.extend(be.series.into_iter().map(|mut s| {
        s.label = format!("BE {}", s.label);
        s
    }));
    chart.y_label = "p95 slowdown (mean over workloads)".into();
    chart
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_sweeps_and_refuses_its_policies_in_rounds() {
        assert!(is_fitgpp_sweep("fitgpp:lambda=2,none") && is_fitgpp_sweep("lrtp") && !is_fitgpp_sweep("las,fifo"));
        assert!(!is_fitgpp_sweep("las:preemption=none"));
        assert_eq!(refuse_for_rounds(Some("rand:p=2")).unwrap_err().code, ErrorCode::Unsupported);
        assert!(refuse_for_rounds(Some("lease_term=900")).is_ok() && refuse_for_rounds(None).is_ok());
        assert_eq!(parse_nodes("16x32,256,8").unwrap(), (16, Resources::new(32, 256, 8)));
        for bad in ["16", "0x32,256,8", "ax32,256,8", "16x32,256"] {
            assert_eq!(parse_nodes(bad).unwrap_err().field.as_deref(), Some("cluster"), "{bad}");
        }
    }
}
