//! The `arbiter simulate` command: flags, reading the inputs, the progress bar, and writing the
//! JSON report and plot. The command line (`src/cli.rs`) only dispatches here.

use super::config::{parse_cluster, SimulationConfig};
use super::plot;
use super::progress::ProgressBar;
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::policies::PolicyKind;
use crate::solver::realizable::Realizable;
use crate::solver::tie_break::TieBreak;
use crate::workload::throughputs::ThroughputTable;
use crate::workload::trace;
use crate::workload::MAX_GENERATED_JOBS;
use std::path::{Path, PathBuf};

/// Flags of `arbiter simulate`.
#[derive(Debug, Clone, clap::Args)]
pub struct SimulateArgs {
    /// The trace: Gavel's tab-separated format, or our JSON (`{"jobs": [...]}`); or an OASiS
    /// workload (`{"cluster": ..., "jobs": [...]}`, docs/oasis.md), run in slots under
    /// `--admission oasis` or `--scheduling fifo|drf|rrh|dorm`; or a FitGpp workload (`{"nodes":
    /// ..., "jobs": [...]}`, docs/fitgpp.md), run on its nodes under `--preemption`. `-`:
    /// standard input.
    #[arg(long, value_name = "FILE|-")]
    pub trace: PathBuf,
    /// Gavel's throughput file (`simulation_throughputs.json` or `physical_cluster_throughputs.json`);
    /// required for a round-based trace. `-`: standard input (when the trace is not).
    #[arg(long, value_name = "FILE|-")]
    pub throughputs: Option<PathBuf>,
    /// GPUs per worker type, e.g. `v100=8,p100=16,k80=24`; required for a round-based trace.
    #[arg(long)]
    pub cluster: Option<String>,
    /// GPUs per server, for every worker type.
    #[arg(long, default_value_t = 4)]
    pub gpus_per_server: u32,
    /// Dollars per GPU-hour of every worker type, e.g. `v100=2.48,p100=1.46,k80=0.45` (the policies
    /// `min_cost` and `min_cost_slo`, and the report's `cost_dollars`).
    #[arg(long)]
    pub prices: Option<String>,
    /// Policy, any of the contract's names: the scheduling stage of Gavel's composition.
    #[arg(long)]
    pub policy: Option<String>,
    /// Admission stage: `accept_all` (default) or `accept_x=X` (FIFO within X × the GPUs); on an
    /// OASiS workload, `oasis[:lowest=shortest|horizon][:u=F][:l=F]` (priced online admission).
    #[arg(long)]
    pub admission: Option<String>,
    /// Scheduling stage: a list policy (`fifo`, `fifo_priority`, `las`, `tiresias[=GPU_SECONDS[/...]]`,
    /// `srtf`, `optimus`, `themis`, `ltgf`, `ltgf_quota`) or an LP policy (as `--policy`); on an
    /// OASiS workload, a baseline of OASiS's study: `fifo`, `drf`, `rrh` or `dorm` (`fifo` and
    /// `rrh` with `:workers=N` per job).
    #[arg(long)]
    pub scheduling: Option<String>,
    /// Placement stage: `consolidated` (default), `first_free`, `random[=SEED]`, `profile_guided`,
    /// `skew[=THRESHOLD]`, `bandwidth`.
    #[arg(long)]
    pub placement: Option<String>,
    /// Preemption stage: `lease[=RESTART_SECONDS]` (default), `lease_term[=SECONDS]` (leases of a
    /// fixed term, 900 s by default) or `none` (run to completion); on a FitGpp workload,
    /// `fitgpp[:lambda=F][:p=N|inf][:fallback]` (default), `lrtp[:p=N|inf]`, `rand[:p=N|inf]` or
    /// `none` (FIFO).
    #[arg(long)]
    pub preemption: Option<String>,
    /// Seconds a suspended job loses when it resumes (a cold start), charged under any preemption
    /// stage of a list-policy composition (not with `lease=RESTART_SECONDS`).
    #[arg(long, default_value_t = 0.0)]
    pub restart_seconds: f64,
    /// Let the synthesizer switch among Blox's nine compositions (FIFO, SRTF, LAS × accept_all,
    /// accept_x=1.2, accept_x=1.5), options `every=N,horizon=N,metric=jct|responsiveness|both`
    /// (empty: every 12 rounds, 24-round horizon, JCT); it starts from `--scheduling` or FIFO.
    #[arg(long, value_name = "OPTIONS", num_args = 0..=1, default_missing_value = "")]
    pub synthesizer: Option<String>,
    /// `false`: the policy sees every throughput as 1.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub heterogeneity_aware: bool,
    /// Jobs of equal scale factor may share GPUs at the table's colocated throughputs.
    #[arg(long)]
    pub space_sharing: bool,
    /// Length of a round, in seconds.
    #[arg(long, default_value_t = 360.0)]
    pub round_seconds: f64,
    /// Measure jobs FIRST..LAST of the trace (0-based, LAST excluded); the run ends when they finish.
    #[arg(long, value_name = "FIRST:LAST")]
    pub window: Option<String>,
    /// Grant every job exactly its allocation each round (no placement).
    #[arg(long, conflicts_with = "configurations")]
    pub ideal: bool,
    /// Solve the policy over round configurations (`max_min_fairness`, `min_makespan`,
    /// `max_sum_throughput`): allocations whole-GPU rounds can deliver. On by default, except
    /// with `--space-sharing` (its pairs make each solve hundreds of times slower; `--realizable`
    /// applies it there too); `--realizable false` keeps Gavel's fractional allocations, as its
    /// paper's numbers need.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub realizable: Option<bool>,
    /// What follows a bottleneck policy's optimum, as a request's `tie_break`: `throughput` (no
    /// GPU left idle that a job could use), `water_filling` (max_min_fairness) or `none` (the bare
    /// LP's vertex). Default: `none` with `--realizable false` (Gavel's allocations), `throughput`
    /// otherwise.
    #[arg(long, value_name = "NAME")]
    pub tie_break: Option<String>,
    /// Rounds run the configurations of the allocation's decomposition instead of choosing jobs
    /// by priority.
    #[arg(long)]
    pub configurations: bool,
    /// Recompute the allocation at most this often, in seconds (0: on every arrival and completion).
    #[arg(long, default_value_t = 0.0)]
    pub min_solve_seconds: f64,
    /// Give GPUs the allocation leaves idle to jobs ahead of their allocation.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub work_conserving: bool,
    /// Recorded in the report (the simulation itself is deterministic: ties break by job order).
    /// An OASiS workload's schemes draw nothing at random: it is refused there.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The policy sees throughputs estimated from K measured worker types per job (the
    /// throughput estimator against the table without the job's own type); jobs still progress at
    /// their true throughputs, and measured progress refines the estimates.
    #[arg(long, value_name = "K")]
    pub profiled_types: Option<usize>,
    /// Where to write the JSON report (`-`: standard output).
    #[arg(long, value_name = "FILE|-")]
    pub output: String,
    /// Also write the JCT CDF as an SVG (on an OASiS workload: the CDFs of completion minus
    /// target; on a FitGpp workload: the TE and BE slowdown CDFs).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Indent the JSON for people.
    #[arg(long)]
    pub pretty: bool,
    /// LP backend: `highs` (default) or `microlp` when built with that feature.
    #[arg(long, default_value_t = Backend::default().name().to_string())]
    pub backend: String,
}

/// `--window 4000:5000` → `(4000, 5000)`.
pub fn parse_window(text: &str) -> Result<(usize, usize)> {
    let bad = || {
        ArbiterError::at(
            ErrorCode::MalformedRequest,
            "window",
            format!("--window must be FIRST:LAST (job indices), got {text:?}"),
        )
    };
    let (a, b) = text.split_once(':').ok_or_else(bad)?;
    Ok((a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?))
}

pub fn backend_named(name: &str) -> Result<Backend> {
    Backend::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Backend::available().iter().map(|b| b.name()).collect();
        ArbiterError::new(
            ErrorCode::Unsupported,
            format!("unknown backend {name:?}; this build has: {}", known.join(", ")),
        )
    })
}

/// `--tie-break`: a request's `tie_break` name, or the default for the `--realizable` given
/// (`SimulationConfig::default_tie_break`).
fn tie_break(name: Option<&str>, realizable: Option<bool>) -> Result<TieBreak> {
    match name {
        None => Ok(SimulationConfig::default_tie_break(Realizable::from_flag(realizable, Realizable::UnlessPaired))),
        Some(name) => TieBreak::named(name),
    }
}

/// Writes text to a file, or to standard output for `-`.
pub fn write_output(target: &str, text: &str) -> Result<()> {
    if target == "-" {
        use std::io::Write;
        let _ = writeln!(std::io::stdout().lock(), "{text}");
        return Ok(());
    }
    write_file(Path::new(target), &format!("{text}\n"))
}

/// Refuses, before any run, an output path whose directory does not exist, that is a directory,
/// or that another of the command's destinations names too (one file would overwrite the
/// other): the run would otherwise end in an error after all its work (a plot's, after the
/// report was written), or lose one of its outputs. `-` (standard output) is passed over; see
/// [`refuse_standard_output`].
pub fn check_destinations(destinations: &[(&str, Option<&Path>)]) -> Result<()> {
    let mut named: Vec<(&str, PathBuf)> = Vec::new();
    for &(field, path) in destinations {
        let Some(path) = path.filter(|p| p.as_os_str() != "-") else { continue };
        let directory = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !directory.is_dir() {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                field,
                format!("cannot write {}: the directory {} does not exist", path.display(), directory.display()),
            ));
        }
        if path.is_dir() {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                field,
                format!("cannot write {}: it is a directory; name a file in it", path.display()),
            ));
        }
        // `r.json` and `./r.json` are one file.
        let file = match path.file_name() {
            Some(name) => directory.canonicalize().unwrap_or_else(|_| directory.to_path_buf()).join(name),
            None => path.to_path_buf(),
        };
        if let Some((other, _)) = named.iter().find(|(_, f)| *f == file) {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                field,
                format!(
                    "--{} and --{} both name {}: one would overwrite the other",
                    other.replace('_', "-"),
                    field.replace('_', "-"),
                    path.display()
                ),
            ));
        }
        named.push((field, file));
    }
    Ok(())
}

/// Refuses `-` for a flag that writes an SVG file (or, as a prefix, several): standard output is
/// the report's (or the CSV's), and `-` would otherwise be taken as a file name (or its prefix).
pub fn refuse_standard_output(plots: &[(&str, Option<&Path>)]) -> Result<()> {
    match plots.iter().find(|(_, path)| path.is_some_and(|p| p.as_os_str() == "-")) {
        Some((field, _)) => Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            *field,
            format!("--{} writes SVG, which cannot go to standard output (-)", field.replace('_', "-")),
        )),
        None => Ok(()),
    }
}

/// After a sweep has written its rows: the runs that failed said so in the `error` column; if
/// every run failed, the sweep fails with the first reason, and if some did, stderr says how many.
pub fn failures<'a>(errors: impl Iterator<Item = Option<&'a String>>) -> Result<()> {
    let (mut total, mut failed, mut first) = (0usize, 0usize, None);
    for e in errors {
        total += 1;
        if let Some(e) = e {
            failed += 1;
            first.get_or_insert(e);
        }
    }
    match first {
        Some(why) if failed == total => Err(ArbiterError::new(
            ErrorCode::MalformedRequest,
            format!("every run of the sweep failed ({failed}); the first: {why}"),
        )),
        Some(why) => {
            eprintln!("{failed} of {total} runs failed (the error column says why); the first: {why}");
            Ok(())
        }
        None => Ok(()),
    }
}

pub fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text)
        .map_err(|e| ArbiterError::new(ErrorCode::MalformedRequest, format!("cannot write {}: {e}", path.display())))
}

/// A flag a round-based run cannot do without.
fn required<'a, T: ?Sized>(value: Option<&'a T>, flag: &str) -> Result<&'a T> {
    value.ok_or_else(|| {
        ArbiterError::at(ErrorCode::MissingField, flag, format!("--{flag} is required for a round-based trace"))
    })
}

/// The first of `flags` that was given, refused as `malformed_request`: `why` says what kind of
/// run ignores it.
pub fn refuse_given(flags: &[(&str, bool)], why: &str) -> Result<()> {
    match flags.iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            *flag,
            format!("--{} is for round-based traces; {why}", flag.replace('_', "-")),
        )),
        None => Ok(()),
    }
}

/// `simulate`'s flags that only rounds on GPU types use, and whether each was given.
pub fn round_only_flags(args: &SimulateArgs) -> Vec<(&'static str, bool)> {
    vec![
        ("throughputs", args.throughputs.is_some()),
        ("cluster", args.cluster.is_some()),
        ("gpus_per_server", args.gpus_per_server != 4),
        ("prices", args.prices.is_some()),
        ("policy", args.policy.is_some()),
        ("placement", args.placement.is_some()),
        ("restart_seconds", args.restart_seconds != 0.0),
        ("synthesizer", args.synthesizer.is_some()),
        ("heterogeneity_aware", !args.heterogeneity_aware),
        ("space_sharing", args.space_sharing),
        ("round_seconds", args.round_seconds != 360.0),
        ("ideal", args.ideal),
        ("realizable", args.realizable.is_some()),
        ("tie_break", args.tie_break.is_some()),
        ("configurations", args.configurations),
        ("min_solve_seconds", args.min_solve_seconds != 0.0),
        ("work_conserving", !args.work_conserving),
        ("profiled_types", args.profiled_types.is_some()),
    ]
}

/// `sweep`'s flags that only generated round-based traces use, and whether each was given.
pub fn round_only_sweep_flags(args: &SweepArgs) -> Vec<(&'static str, bool)> {
    vec![
        ("throughputs", args.throughputs.is_some()),
        ("gpus_per_server", args.gpus_per_server != 4),
        ("burst_jobs", args.burst_jobs != 0),
        ("short_bursts", args.short_bursts),
        ("window", args.window.is_some()),
        ("tenants", args.tenants.is_some()),
        ("static", args.static_trace),
        ("multi_gpu", args.multi_gpu),
        ("multi_priority", args.multi_priority),
        ("round_seconds", args.round_seconds != 360.0),
        ("ideal", args.ideal),
        ("realizable", args.realizable.is_some()),
        ("tie_break", args.tie_break.is_some()),
        ("restart_seconds", args.restart_seconds != 0.0),
        ("cdf_plot", args.cdf_plot.is_some()),
        ("cdf_load", args.cdf_load.is_some()),
        ("fairness_plots", args.fairness_plots.is_some()),
    ]
}

/// Refuses the flags that shape an LP policy's allocation or Gavel's rounds (or what throughputs
/// the policy sees) when a list policy schedules: they would change nothing, yet the report
/// would carry them as if they had.
fn refuse_allocation_flags(args: &SimulateArgs) -> Result<()> {
    let given = [
        ("realizable", args.realizable.is_some()),
        ("tie_break", args.tie_break.is_some()),
        ("configurations", args.configurations),
        ("min_solve_seconds", args.min_solve_seconds != 0.0),
        ("work_conserving", !args.work_conserving),
        ("profiled_types", args.profiled_types.is_some()),
    ];
    match given.iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(ArbiterError::at(
            ErrorCode::Unsupported,
            *flag,
            format!(
                "--{} shapes an LP policy's allocation and Gavel's rounds; a list policy (--scheduling) \
                 orders and places whole jobs itself",
                flag.replace('_', "-")
            ),
        )),
        None => Ok(()),
    }
}

/// Which model a trace is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceKind {
    /// Jobs on GPU types in rounds: Gavel's tab-separated format or `{"jobs": [...]}`.
    Rounds,
    /// An OASiS workload: a JSON object with a `cluster` of worker and parameter-server servers.
    Oasis,
    /// A FitGpp workload: a JSON object with `nodes` of cores, memory and GPUs.
    FitGpp,
}

impl TraceKind {
    /// From the trace's top-level keys (one parse; Gavel's text format is not JSON), after any
    /// byte-order mark.
    pub fn of(text: &str) -> TraceKind {
        #[derive(serde::Deserialize)]
        struct Probe {
            cluster: Option<serde::de::IgnoredAny>,
            nodes: Option<serde::de::IgnoredAny>,
        }
        let text = crate::contract::json::without_bom(text);
        if !text.trim_start().starts_with('{') {
            return TraceKind::Rounds;
        }
        match serde_json::from_str::<Probe>(text) {
            Ok(Probe { cluster: Some(_), .. }) => TraceKind::Oasis,
            Ok(Probe { nodes: Some(_), .. }) => TraceKind::FitGpp,
            _ => TraceKind::Rounds,
        }
    }
}

/// Whether an input flag names standard input.
fn is_standard_input(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Refuses two of a command's inputs naming standard input (`--trace -` with `--throughputs -`):
/// it can be read once. The refusal names the second.
pub fn refuse_two_standard_inputs(inputs: &[(&str, Option<&Path>)]) -> Result<()> {
    let mut reading = inputs.iter().filter(|(_, path)| path.is_some_and(is_standard_input)).map(|(field, _)| *field);
    match (reading.next(), reading.next()) {
        (Some(first), Some(second)) => Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            second,
            format!(
                "--{} and --{} both name standard input (-): it can be read once; name a file for one of them",
                first.replace('_', "-"),
                second.replace('_', "-")
            ),
        )),
        _ => Ok(()),
    }
}

/// The throughput file `--{field}` names, or standard input for `-`; a refusal names `field`
/// (with the key path inside the file, as `reference_throughputs.v100.A`).
pub fn read_throughputs(path: &Path, field: &str) -> Result<ThroughputTable> {
    let table = if is_standard_input(path) {
        ThroughputTable::from_json_str(&read_standard_input(field, "the throughput file")?)
    } else {
        ThroughputTable::from_path(path)
    };
    table.map_err(|e| e.field_renamed("throughputs", field))
}

/// The text of standard input, for the input flag `field` given `-`.
fn read_standard_input(field: &str, what: &str) -> Result<String> {
    std::io::read_to_string(std::io::stdin()).map_err(|e| {
        ArbiterError::at(ErrorCode::MalformedRequest, field, format!("cannot read {what} from standard input: {e}"))
    })
}

/// Runs `arbiter simulate`: OASiS's slots when the trace is an OASiS workload, else rounds.
pub fn run_simulate(args: &SimulateArgs) -> Result<()> {
    refuse_standard_output(&[("plot", args.plot.as_deref())])?;
    check_destinations(&[("output", Some(Path::new(&args.output))), ("plot", args.plot.as_deref())])?;
    refuse_two_standard_inputs(&[("trace", Some(args.trace.as_path())), ("throughputs", args.throughputs.as_deref())])?;
    let text = if is_standard_input(&args.trace) {
        read_standard_input("trace", "the trace")?
    } else {
        trace::read_text(&args.trace)?
    };
    match TraceKind::of(&text) {
        TraceKind::Oasis => return super::oasis::commands::simulate(args, &text),
        TraceKind::FitGpp => return super::fitgpp::commands::simulate(args, &text),
        TraceKind::Rounds => {}
    }
    super::oasis::commands::refuse_for_rounds(args.admission.as_deref(), args.scheduling.as_deref())?;
    super::fitgpp::commands::refuse_for_rounds(args.preemption.as_deref())?;
    if let Some(p) = &args.policy {
        PolicyKind::named(p)?;
    }
    let synthesizer = args
        .synthesizer
        .as_deref()
        .map(|o| crate::scheduling::synthesizer::Synthesizer::parse(o.split(',')))
        .transpose()?;
    let composition = match &synthesizer {
        Some(s) if args.policy.is_none() && args.scheduling.is_none() => s.candidates[0].clone(),
        _ => crate::scheduling::Composition::from_flags(
            args.policy.as_deref(),
            args.admission.as_deref(),
            args.scheduling.as_deref(),
            args.placement.as_deref(),
            args.preemption.as_deref(),
        )?,
    };
    if synthesizer.is_some() && composition.is_gavel() {
        return Err(ArbiterError::at(
            ErrorCode::Unsupported,
            "synthesizer",
            "the synthesizer switches among list-policy compositions; it cannot start from an LP policy",
        ));
    }
    if !composition.is_gavel() {
        refuse_allocation_flags(args)?;
    }
    let policy = match composition.scheduling {
        crate::scheduling::SchedulingSpec::Allocation(p) => p,
        crate::scheduling::SchedulingSpec::List { .. } => PolicyKind::MaxMinFairness,
    };
    let backend = backend_named(&args.backend)?;
    let cluster =
        parse_cluster(required(args.cluster.as_deref(), "cluster")?, args.gpus_per_server, args.prices.as_deref())?;
    let table = read_throughputs(required(args.throughputs.as_deref(), "throughputs")?, "throughputs")?;
    let trace = trace::parse(&text, &table)?;
    let config = SimulationConfig {
        heterogeneity_aware: args.heterogeneity_aware,
        space_sharing: args.space_sharing,
        round_seconds: args.round_seconds,
        ideal: args.ideal,
        realizable: Realizable::from_flag(args.realizable, Realizable::UnlessPaired),
        tie_break: tie_break(args.tie_break.as_deref(), args.realizable)?,
        configurations: args.configurations,
        window: args.window.as_deref().map(parse_window).transpose()?,
        min_solve_interval: args.min_solve_seconds,
        work_conserving: args.work_conserving,
        seed: args.seed,
        backend,
        profiled_types: args.profiled_types,
        restart_seconds: args.restart_seconds,
        ..SimulationConfig::new(cluster, policy)
    };
    let mut bar = ProgressBar::new(format!("simulate {}", composition.name()));
    let result = if composition.is_gavel() {
        super::simulate(&trace, &table, &config, &mut |p| bar.update(p))
    } else {
        crate::scheduling::simulation::run_with(&trace, &table, &config, &composition, synthesizer.as_ref(), &mut |p| {
            bar.update(p)
        })
    };
    bar.finish();
    let report = result?;
    write_report(args, &report, || {
        let label = format!("{}{}", report.policy, if args.heterogeneity_aware { "" } else { " (agnostic)" });
        plot::cdf_chart(format!("JCT CDF, {} jobs", report.jobs_measured), vec![plot::jct_cdf(label, &report)])
    })
}

/// Writes a run's report as JSON to `--output` (indented with `--pretty`) and, with `--plot`,
/// the chart `chart` draws.
pub fn write_report<T: serde::Serialize>(
    args: &SimulateArgs,
    report: &T,
    chart: impl FnOnce() -> plot::Chart,
) -> Result<()> {
    let json = if args.pretty { serde_json::to_string_pretty(report) } else { serde_json::to_string(report) };
    write_output(&args.output, &json.expect("a report always serializes"))?;
    match &args.plot {
        Some(path) => write_file(path, &chart().to_svg()),
        None => Ok(()),
    }
}

/// Flags of `arbiter sweep`.
#[derive(Debug, Clone, clap::Args)]
pub struct SweepArgs {
    /// Gavel's throughput file; generated jobs draw their types from it (required unless the
    /// sweep is OASiS's). `-`: standard input.
    #[arg(long, value_name = "FILE|-")]
    pub throughputs: Option<PathBuf>,
    /// GPUs per worker type, e.g. `v100=36,p100=36,k80=36` (required unless the sweep is OASiS's);
    /// for FitGpp's, nodes as `NODESxCORES,MEMORY_GB,GPUS` (default `84x32,256,8`).
    #[arg(long)]
    pub cluster: Option<String>,
    /// GPUs per server, for every worker type.
    #[arg(long, default_value_t = 4)]
    pub gpus_per_server: u32,
    /// Comma-separated `POLICY[:agnostic][:space_sharing]`, e.g.
    /// `max_min_fairness:agnostic,max_min_fairness,max_min_fairness:space_sharing`; or a list
    /// policy with stages, `las:admission=accept_x=1.2:placement=consolidated:preemption=lease`.
    /// Naming `oasis[:lowest=L][:u=F][:l=F]`, `drf`, `rrh[:workers=N]` or `dorm` makes it OASiS's
    /// study: those and `fifo[:workers=N]` on workloads of `--jobs` jobs over 50 one-hour slots
    /// (docs/oasis.md).
    /// Naming `fitgpp[:lambda=F][:p=N|inf]`, `lrtp` or `rand` makes it FitGpp's experiment: those
    /// and `none` (FIFO) at the `--loads` FIFO holds (default 2) on `--cluster` nodes
    /// (docs/fitgpp.md).
    #[arg(long)]
    pub policies: String,
    /// Comma-separated input loads in jobs per hour (Poisson arrivals; default 1); for FitGpp's
    /// experiment, the cluster loads FIFO holds (default 2).
    #[arg(long)]
    pub loads: Option<String>,
    /// Comma-separated seeds: one generated trace per (load, seed).
    #[arg(long, default_value = "0")]
    pub seeds: String,
    /// Jobs per generated trace (default 1,000); for OASiS's study, a comma-separated list of
    /// workload sizes (default `25,50,100,200`); for FitGpp's experiment, jobs per workload
    /// (default 5,000). At most 1,000,000 per trace or workload.
    #[arg(long)]
    pub jobs: Option<String>,
    /// Adds this many jobs in the first hour of every day of each trace (a burst of arrivals).
    #[arg(long, default_value_t = 0)]
    pub burst_jobs: usize,
    /// Adds Blox's bursts of short jobs: from hour 4, every four hours, two hours of extra arrivals
    /// at twice the load, each running 10 to 60 minutes.
    #[arg(long)]
    pub short_bursts: bool,
    /// Measure jobs FIRST..LAST of each trace (0-based, LAST excluded).
    #[arg(long, value_name = "FIRST:LAST")]
    pub window: Option<String>,
    /// Generate multi-tenant traces of N tenants (skewed weights and demands, bursty arrivals,
    /// mostly short jobs: `workload::tenants`) instead of Gavel's job mix; reports gain Astraea's
    /// sharing-loss share and tenant unfairness ratio. At most 1,000 tenants.
    #[arg(long, value_name = "N")]
    pub tenants: Option<usize>,
    /// Every job at t = 0 (a static trace; loads are ignored).
    #[arg(long = "static")]
    pub static_trace: bool,
    /// Scale factors 1/2/4/8 with probabilities 70/10/15/5%.
    #[arg(long)]
    pub multi_gpu: bool,
    /// 20% of jobs get priority weight 5.
    #[arg(long)]
    pub multi_priority: bool,
    /// Length of a round, in seconds.
    #[arg(long, default_value_t = 360.0)]
    pub round_seconds: f64,
    /// Grant every job exactly its allocation each round (no placement).
    #[arg(long)]
    pub ideal: bool,
    /// Solve the LP policies over round configurations, as `simulate --realizable`: on by
    /// default except with space sharing; `--realizable false` keeps Gavel's fractional
    /// allocations.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub realizable: Option<bool>,
    /// What follows a bottleneck policy's optimum, as a request's `tie_break`: `throughput` (no
    /// GPU left idle that a job could use), `water_filling` (max_min_fairness) or `none` (the bare
    /// LP's vertex). Default: `none` with `--realizable false` (Gavel's allocations), `throughput`
    /// otherwise.
    #[arg(long, value_name = "NAME")]
    pub tie_break: Option<String>,
    /// Seconds a suspended job loses when it resumes (a cold start), for the list-policy
    /// compositions (Astraea's lease overhead; `restart_overhead_share` in the CSV).
    #[arg(long, default_value_t = 0.0)]
    pub restart_seconds: f64,
    /// Simulations run at once (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// The CSV, one row per simulation (`-`: standard output).
    #[arg(long, value_name = "FILE|-")]
    pub output: String,
    /// Average JCT against input load, as SVG (OASiS's study: total utility against jobs;
    /// FitGpp's: p95 slowdowns against load).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// JCT CDF per policy at `--cdf-load`, as SVG.
    #[arg(long, value_name = "FILE")]
    pub cdf_plot: Option<PathBuf>,
    /// The load of the CDF plot (default: the middle of `--loads`).
    #[arg(long)]
    pub cdf_load: Option<f64>,
    /// With `--tenants`: write PREFIX-tenants.svg (the worst-off tenant's cumulative ρ over time)
    /// and PREFIX-jobs.svg (the CDF of job ρ), at `--cdf-load`.
    #[arg(long, value_name = "PREFIX")]
    pub fairness_plots: Option<String>,
    /// LP backend: `highs` (default) or `microlp` when built with that feature.
    #[arg(long, default_value_t = Backend::default().name().to_string())]
    pub backend: String,
}

pub fn number_list<T: std::str::FromStr + PartialEq>(text: &str, field: &str) -> Result<Vec<T>> {
    let mut numbers: Vec<T> = Vec::new();
    for s in text.split(',') {
        let x: T = s.trim().parse().map_err(|_| {
            ArbiterError::at(
                ErrorCode::MalformedRequest,
                field,
                format!("--{field} must be comma-separated numbers, got {s:?}"),
            )
        })?;
        // Twice the same number would run every simulation of it twice, as two rows.
        if numbers.contains(&x) {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                field,
                format!("--{field} names {} twice", s.trim()),
            ));
        }
        numbers.push(x);
    }
    Ok(numbers)
}

/// Most threads a sweep starts (each holds a simulation's state; 10,000 took 2 GB for one run).
const MAX_THREADS: usize = 1024;
/// Highest load a generated trace takes, in jobs per hour.
const MAX_LOAD: f64 = 1e6;

/// Runs a sweep's (or `arbiter fitgpp`'s) simulations on `threads` threads (default: one per
/// core, at most [`MAX_THREADS`]), with a count of those done on standard error when it is a
/// terminal.
pub fn in_parallel<T: Send>(
    threads: Option<usize>,
    run: impl FnOnce(&(dyn Fn(usize, usize) + Sync)) -> Result<T> + Send,
) -> Result<T> {
    if let Some(t) = threads.filter(|&t| t > MAX_THREADS) {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "threads",
            format!("--threads is at most {MAX_THREADS}, got {t}; each thread runs one simulation at a time"),
        ));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(|e| ArbiterError::new(ErrorCode::Unsupported, format!("cannot start {threads:?} threads: {e}")))?;
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let report = |done: usize, total: usize| {
        if terminal {
            eprint!("\rsweep: {done}/{total} simulations ");
        }
    };
    let result = pool.install(|| run(&report));
    if terminal {
        eprintln!();
    }
    result
}

/// Runs `arbiter sweep`.
pub fn run_sweep(args: &SweepArgs) -> Result<()> {
    use super::sweep::{self, SweepConfig, Variant};
    refuse_standard_output(&[
        ("plot", args.plot.as_deref()),
        ("cdf_plot", args.cdf_plot.as_deref()),
        ("fairness_plots", args.fairness_plots.as_deref().map(Path::new)),
    ])?;
    let fairness = args.fairness_plots.as_deref().map(fairness_plots);
    let mut destinations = vec![
        ("output", Some(Path::new(&args.output))),
        ("plot", args.plot.as_deref()),
        ("cdf_plot", args.cdf_plot.as_deref()),
    ];
    destinations.extend(fairness.iter().flatten().map(|p| ("fairness_plots", Some(p.as_path()))));
    check_destinations(&destinations)?;
    if super::oasis::commands::is_oasis_sweep(&args.policies) {
        return super::oasis::commands::sweep(args);
    }
    if super::fitgpp::commands::is_fitgpp_sweep(&args.policies) {
        return super::fitgpp::commands::sweep(args);
    }
    let variants = args.policies.split(',').map(Variant::parse).collect::<Result<Vec<_>>>()?;
    if let Some((i, v)) = variants.iter().enumerate().find(|(i, v)| variants[..*i].iter().any(|u| u.label == v.label)) {
        return Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            "policies",
            format!("--policies names {} twice (entry {i}): each would run and print the same rows", v.label),
        ));
    }
    let loads: Vec<f64> =
        if args.static_trace { vec![0.0] } else { number_list(args.loads.as_deref().unwrap_or("1"), "loads")? };
    let num_jobs: usize = match args.jobs.as_deref() {
        None => 1000,
        Some(text) => text.trim().parse().map_err(|_| {
            ArbiterError::at(
                ErrorCode::MalformedRequest,
                "jobs",
                format!("--jobs is one number of jobs per generated trace, got {text:?}"),
            )
        })?,
    };
    let cluster_text = required(args.cluster.as_deref(), "cluster")?;
    let positive = |l: &&f64| l.is_finite() && **l > 0.0 && **l <= MAX_LOAD;
    if let Some(bad) = loads.iter().find(|l| !args.static_trace && !positive(l)) {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "loads",
            format!("a load must be > 0 and at most {MAX_LOAD:e} jobs/hour, got {}", crate::problem::shown(*bad)),
        ));
    }
    for (field, count, least) in [("jobs", num_jobs, 1), ("burst_jobs", args.burst_jobs, 0)] {
        if !(least..=MAX_GENERATED_JOBS).contains(&count) {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                field,
                format!("--{} must be {least} to {MAX_GENERATED_JOBS} jobs, got {count}", field.replace('_', "-")),
            ));
        }
    }
    if args.static_trace && args.cdf_load.is_some() {
        return Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            "cdf_load",
            "--cdf-load picks the load of the CDF plots, and a --static sweep has none: every job arrives at time 0",
        ));
    }
    if args.fairness_plots.is_some() && args.tenants.is_none() {
        return Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            "fairness_plots",
            "--fairness-plots draws the tenants' fairness and needs --tenants: without tenants its plots are empty",
        ));
    }
    if let Some(load) = args.cdf_load.filter(|l| !loads.contains(l)) {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "cdf_load",
            format!("--cdf-load {load} is not one of --loads ({})", args.loads.as_deref().unwrap_or("1")),
        ));
    }
    let config = SweepConfig {
        cluster: parse_cluster(cluster_text, args.gpus_per_server, None)?,
        variants,
        loads: loads.clone(),
        seeds: number_list(&args.seeds, "seeds")?,
        num_jobs,
        burst_jobs: args.burst_jobs,
        short_bursts: args.short_bursts,
        window: args.window.as_deref().map(parse_window).transpose()?,
        static_trace: args.static_trace,
        tenants: args.tenants,
        multi_gpu: args.multi_gpu,
        multi_priority: args.multi_priority,
        round_seconds: args.round_seconds,
        ideal: args.ideal,
        realizable: Realizable::from_flag(args.realizable, Realizable::UnlessPaired),
        tie_break: tie_break(args.tie_break.as_deref(), args.realizable)?,
        restart_seconds: args.restart_seconds,
        backend: backend_named(&args.backend)?,
    };
    let table = read_throughputs(required(args.throughputs.as_deref(), "throughputs")?, "throughputs")?;
    let points = in_parallel(args.threads, |report| sweep::run(&config, &table, report))?;
    write_output(&args.output, sweep::csv(&points).trim_end())?;
    failures(points.iter().map(|p| p.outcome.as_ref().err()))?;
    let title = format!("{num_jobs} jobs per trace on {cluster_text}");
    if let Some(path) = &args.plot {
        write_file(path, &sweep::jct_vs_load(&points, &title).to_svg())?;
    }
    if let Some(path) = &args.cdf_plot {
        let load = args.cdf_load.unwrap_or(loads[loads.len() / 2]);
        write_file(path, &sweep::cdf_at_load(&points, load).to_svg())?;
    }
    if let Some([tenants_path, jobs_path]) = &fairness {
        let load = args.cdf_load.unwrap_or(loads[loads.len() / 2]);
        let (tenants, jobs) = sweep::fairness_at_load(&points, load);
        write_file(tenants_path, &tenants.to_svg())?;
        write_file(jobs_path, &jobs.to_svg())?;
    }
    Ok(())
}

/// `--fairness-plots PREFIX`'s files: PREFIX-tenants.svg and PREFIX-jobs.svg.
fn fairness_plots(prefix: &str) -> [PathBuf; 2] {
    ["tenants", "jobs"].map(|kind| PathBuf::from(format!("{prefix}-{kind}.svg")))
}
