//! The `arbiter` command line: `solve` answers one request of the contract, `demo` shows an
//! allocation of the embedded demo cluster as a table, `rounds` runs the round-based mechanism,
//! `serve` runs the HTTP service, `token` manages its bearer tokens and `openapi` prints its
//! document. `src/main.rs` sets the allocator and calls [`main`]; everything else lives here, so
//! the library's own build checks the command line under every feature set.

use crate::lp::Backend;
use crate::{ArbiterError, ErrorCode, PolicyKind, Problem};
use clap::{Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "arbiter",
    version,
    about = "Heterogeneity-aware allocation of a shared GPU cluster among training jobs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Solve one allocation request (the JSON of the contract) and print the response JSON.
    ///
    /// Bad input exits with status 2 and prints the contract's error object on stderr.
    Solve {
        #[command(flatten)]
        input: RequestFile,
        /// Indent the response for people.
        #[arg(long)]
        pretty: bool,
        /// LP backend: `highs` (default) or `microlp` when built with that feature.
        #[arg(long, default_value_t = Backend::default().name().to_string())]
        backend: String,
        /// The reference matrix of a request with `estimate_missing: true` (Gavel's throughput file
        /// format), or `-` for standard input (when the request is not); refused for other requests.
        #[arg(long, value_name = "FILE|-")]
        reference_throughputs: Option<std::path::PathBuf>,
        /// How the exact engine solves the max-min ratio: `auto`, `lp` or `decomposition`
        /// (overrides the request's `method`).
        #[arg(long)]
        method: Option<String>,
    },
    /// Solve the embedded demo cluster and jobs, and print the allocation as a table.
    Demo {
        /// Policy to run, any of the contract's names.
        #[arg(long, default_value = "max_min_fairness")]
        policy: String,
        /// Print the response JSON instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Run the round-based mechanism on a fixed request and print every round's placements and
    /// each job's allocation against the fraction of rounds it received, as JSON.
    ///
    /// The request is read and validated like `solve`'s and its policy solved once; servers hold
    /// `gpus_per_server` GPUs of their type. Bad input exits with status 2 and the error on stderr.
    #[command(allow_negative_numbers = true)]
    Rounds(RoundsArgs),
    /// Serve the HTTP allocation service: `POST /v1/allocations`, durable sessions under the
    /// round-based mechanism, `/healthz`, `/metrics`, `/openapi.json`.
    ///
    /// Every flag has an environment fallback (shown as [env: ...]). Starts with a demo session
    /// (`demo`) and prints the URLs to try; SIGTERM or Ctrl-C lets in-flight requests finish.
    #[command(allow_negative_numbers = true)]
    Serve(crate::service::Config),
    /// Manage the bearer tokens of `arbiter serve --tokens FILE`: create (the token is printed
    /// once; the file keeps its SHA-256 digest), list, revoke, and tenants' quota overrides.
    ///
    /// The file is written atomically with mode 0600; a running server re-reads it within about
    /// a second. Failures exit with status 2 and the contract's error object on stderr.
    #[command(subcommand)]
    Token(crate::service::auth::cli::TokenCommand),
    /// Replay a trace through a policy and the round-based mechanism on a virtual clock, and write
    /// per-job completion times and aggregates as JSON (and a JCT CDF with `--plot`).
    ///
    /// Bad input exits with status 2 and prints the contract's error object on stderr.
    #[command(allow_negative_numbers = true)]
    Simulate(crate::simulator::cli::SimulateArgs),
    /// Simulate a grid of policies × input loads × seeds on generated traces, in parallel, and
    /// write one CSV row per simulation (and plots of average JCT against load and JCT CDFs).
    #[command(allow_negative_numbers = true)]
    Sweep(crate::simulator::cli::SweepArgs),
    /// The FitGpp experiment: synthetic trial-and-error (TE) and best-effort (BE) jobs on nodes of
    /// CPU cores, memory and GPUs, under FitGpp's selective preemption and the baselines (LRTP,
    /// RAND, non-preemptive FIFO), over λ, P, TE shares and seeds; one CSV row per simulation.
    ///
    /// Its own command, not `simulate --preemption`: that one replays Gavel traces on GPU-type
    /// clusters in rounds, where `--preemption none` already means run-to-completion.
    #[command(allow_negative_numbers = true)]
    Fitgpp(crate::simulator::fitgpp::cli::FitGppArgs),
    /// OASiS's online admission on a JSON workload (a cluster of worker and parameter-server
    /// servers over slots, jobs of epochs and chunks with utilities): each job's decision with the
    /// payoff, utility and priced cost that made it, and the schedule of each admitted job.
    #[command(allow_negative_numbers = true)]
    Oasis(crate::simulator::oasis::cli::OasisArgs),
    /// Estimate a job's throughputs on the types (and beside the reference jobs) it was not
    /// measured on, by matrix completion against a reference file; or, with --evaluate, measure
    /// how good those estimates are on the reference itself.
    #[command(allow_negative_numbers = true)]
    Estimate(crate::estimator::cli::EstimateArgs),
    /// Kueue admission-check controller: Workloads whose ClusterQueue requires an AdmissionCheck
    /// of controller `arbiter.dev/admission` become session jobs; every round, the jobs placed get
    /// `Ready` with their worker type's node selector, the others `Retry` until the next round.
    ///
    /// Talks to `arbiter serve` (--arbiter) and to the Kubernetes API (in-cluster, or
    /// --api-server); docs/integration.md. API errors are logged and retried at the next tick.
    #[command(allow_negative_numbers = true)]
    #[cfg(feature = "kubernetes")]
    Kueue(crate::kubernetes::cli::KueueArgs),
    /// Turn Nodes and Pods into session events: a node labelled `arbiter.dev/worker-type` and
    /// `arbiter.dev/server` that is not Ready (or cordoned) has its GPUs reported failed, and
    /// returned when Ready; pods labelled `arbiter.dev/job` add their job, and remove it once done.
    /// Bound pods are reported to the scheduler extender, the pods a round evicts are evicted,
    /// bindings of gone pods forgotten; with --run-rounds it also runs the session's rounds.
    ///
    /// API errors are logged and retried at the next tick; docs/integration.md.
    #[command(allow_negative_numbers = true)]
    #[cfg(feature = "kubernetes")]
    K8sSync(crate::kubernetes::cli::SyncArgs),
    /// Print the service's OpenAPI 3.1 document (the one `GET /openapi.json` serves).
    Openapi {
        /// Write it to this file instead of standard output (the checked-in copy is
        /// `openapi/openapi.json`).
        #[arg(long, short, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
}

/// The request file, or `-` for standard input: `--input FILE` or the file alone.
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
struct RequestFile {
    /// The request file, or `-` for standard input.
    #[arg(long, short, value_name = "FILE|-")]
    input: Option<String>,
    /// The same, without `--input`.
    #[arg(value_name = "FILE|-")]
    file: Option<String>,
}

impl RequestFile {
    fn path(&self) -> &str {
        self.input.as_deref().or(self.file.as_deref()).unwrap_or("-")
    }
}

#[derive(clap::Args)]
struct RoundsArgs {
    #[command(flatten)]
    input: RequestFile,
    /// Rounds to run (at least 1).
    #[arg(long)]
    rounds: u32,
    /// Length of a round, in seconds.
    #[arg(long, default_value_t = 360.0)]
    round_seconds: f64,
    /// Grant every job exactly its allocation each round, with no placement (for comparison).
    #[arg(long, conflicts_with = "configurations")]
    ideal: bool,
    /// Run the round configurations of the allocation's decomposition (the realizability check's)
    /// by deficit rounding, instead of choosing jobs by priority: every job then receives what
    /// rounds can deliver of its allocation.
    #[arg(long)]
    configurations: bool,
    /// Solve the policy over round configurations (as the request's `realizable: true`), so the
    /// allocation is one whole-GPU rounds can deliver.
    #[arg(long)]
    realizable: bool,
    /// Give GPUs the allocation leaves unused to jobs ahead of their allocation. With
    /// --configurations, in the rounds that choose jobs by priority while no decomposition is
    /// certified (space sharing, past the check's budget).
    #[arg(long)]
    work_conserving: bool,
    /// Indent the JSON for people.
    #[arg(long)]
    pretty: bool,
    /// LP backend: `highs` (default) or `microlp` when built with that feature.
    #[arg(long, default_value_t = Backend::default().name().to_string())]
    backend: String,
}

fn fail(error: &ArbiterError) -> ExitCode {
    eprintln!("{}", error.to_json());
    ExitCode::from(2)
}

/// Says on standard error which fields of the request the contract does not know, and so were
/// ignored (`Response::ignored_fields`).
fn warn_ignored(ignored: &[String]) {
    for field in ignored {
        eprintln!("warning: {field} is not a field of the contract; it was ignored");
    }
}

fn backend_named(name: &str) -> Result<Backend, ArbiterError> {
    Backend::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Backend::available().iter().map(|b| b.name()).collect();
        ArbiterError::new(
            ErrorCode::Unsupported,
            format!("unknown backend {name:?}; this build has: {}", known.join(", ")),
        )
    })
}

fn run_solve(
    input: &str,
    pretty: bool,
    backend: &str,
    reference: Option<&std::path::Path>,
    method: Option<String>,
) -> ExitCode {
    use crate::simulator::cli::{read_throughputs, refuse_two_standard_inputs};
    let response = backend_named(backend).and_then(|backend| {
        refuse_two_standard_inputs(&[
            ("input", Some(std::path::Path::new(input))),
            ("reference_throughputs", reference),
        ])?;
        let (mut request, ignored) = crate::Request::from_json_noting(&crate::contract::json::read_input(input)?)?;
        warn_ignored(&ignored);
        if reference.is_some() && request.estimate_missing != Some(true) {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "reference_throughputs",
                "--reference-throughputs is the reference matrix of estimate_missing; it takes effect only with \
                 `estimate_missing: true` in the request, which this one does not set",
            ));
        }
        let reference = reference.map(|path| read_throughputs(path, "reference_throughputs")).transpose()?;
        if method.is_some() {
            request.method = method;
        }
        let mut response = crate::solve_request(request, reference.as_ref(), backend)?;
        response.ignored_fields = ignored;
        Ok(response)
    });
    match response {
        Ok(response) => emit_json(&response, pretty),
        Err(e) => fail(&e),
    }
}

/// Writes `value` as one line of JSON to stdout as it serializes, with no copy of the whole text
/// in memory; a closed pipe is the reader's choice, not a failure.
fn emit_json(value: &impl serde::Serialize, pretty: bool) -> ExitCode {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let written =
        if pretty { serde_json::to_writer_pretty(&mut out, value) } else { serde_json::to_writer(&mut out, value) };
    let _ = written.map_err(std::io::Error::from).and_then(|()| writeln!(out)).and_then(|()| out.flush());
    ExitCode::SUCCESS
}

/// Prints one line of output; a closed pipe (`| head`) is the reader's choice, not a failure.
fn emit(text: &str) -> ExitCode {
    let _ = writeln!(std::io::stdout().lock(), "{text}");
    ExitCode::SUCCESS
}

fn run_demo(policy: &str, json: bool) -> ExitCode {
    if let Err(e) = PolicyKind::named(policy) {
        return fail(&e);
    }
    let result = Problem::from_request(&crate::demo::request(policy))
        .and_then(|problem| crate::solve(&problem, Backend::default()).map(|r| (problem, r)));
    match result {
        Ok((_, response)) if json => {
            emit(&serde_json::to_string_pretty(&response).expect("a response always serializes"))
        }
        Ok((problem, response)) => {
            let _ = write!(std::io::stdout().lock(), "{}", crate::demo::table(&problem, &response));
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

/// The text of a file, or of standard input for `-`.
fn run_rounds(args: RoundsArgs) -> ExitCode {
    use crate::mechanism::{self, Config, Mode};
    let report = backend_named(&args.backend).and_then(|backend| {
        if args.ideal && args.work_conserving {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "work_conserving",
                "--work-conserving gives idle GPUs to jobs chosen by priority; --ideal rounds grant every job \
                 exactly its allocation, so it would be ignored",
            ));
        }
        let config = Config {
            round_seconds: args.round_seconds,
            mode: match (args.ideal, args.configurations) {
                (true, _) => Mode::Ideal,
                (_, true) => Mode::Configurations,
                _ => Mode::Rounds,
            },
            work_conserving: args.work_conserving,
            backend,
            ..Config::default()
        };
        config.validate()?;
        let text = crate::contract::json::read_input(args.input.path())?;
        let (request, ignored) = crate::Request::from_json_noting(&text)?;
        warn_ignored(&ignored);
        let mut problem = Problem::from_request(&request)?;
        if args.realizable {
            problem.realizable = crate::solver::realizable::Realizable::On;
        }
        mechanism::report::run(&problem, args.rounds, config)
    });
    let report = match report {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let out = if args.pretty { serde_json::to_string_pretty(&report) } else { serde_json::to_string(&report) };
    emit(&out.expect("a report always serializes"))
}

fn run_serve(config: crate::service::Config) -> ExitCode {
    match crate::service::run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("arbiter serve: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_token(command: &crate::service::auth::cli::TokenCommand) -> ExitCode {
    match crate::service::auth::cli::run(command) {
        Ok(text) => {
            let _ = write!(std::io::stdout().lock(), "{text}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

/// The document on standard output, or in `--output`'s file (`-` is refused: it would be a file
/// of that name, and standard output is the default).
fn run_openapi(output: Option<std::path::PathBuf>) -> ExitCode {
    let text = crate::service::openapi::json();
    let refused = |message: String| fail(&ArbiterError::at(ErrorCode::MalformedRequest, "output", message));
    match output {
        None => {
            let _ = write!(std::io::stdout().lock(), "{text}");
            ExitCode::SUCCESS
        }
        Some(path) if path.as_os_str() == "-" => {
            refused("--output names a file; without it the document goes to standard output".into())
        }
        Some(path) => match std::fs::write(&path, text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => refused(format!("cannot write {}: {e}", path.display())),
        },
    }
}

/// A controller's exit: its `--once` report on stdout, or its error on stderr with status 1.
#[cfg(feature = "kubernetes")]
fn run_controller(name: &str, result: Result<String, String>) -> ExitCode {
    match result {
        Ok(text) if text.is_empty() => ExitCode::SUCCESS,
        Ok(text) => emit(&text),
        Err(e) => {
            eprintln!("arbiter {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One-shot commands give up transparent huge pages. mimalloc asks for them (`MADV_HUGEPAGE`), and
/// where the kernel compacts memory to grant them (defrag `madvise`, its usual setting) a process
/// that touches its memory once can stall on it: right after another large process, a first
/// `arbiter solve` of LAS on 16,384 jobs has taken 0.10–0.18 s where it takes 0.05 s, and of
/// `finish_time_fairness` 0.23 s where it takes 0.15–0.17 s; without them the first run is
/// within 0.01 s of the best (benches/README.md). The service, the simulators and the controllers live long, reuse
/// their memory, and keep them.
fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE only sets a flag of this process; it reads no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// A command line clap cannot parse, as the contract's error object (help and version print as
/// usual): the message is clap's, the field the argument it names.
fn refuse_arguments(error: clap::Error) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        // `arbiter` alone: the help, as a mistake.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = error.print();
            return ExitCode::from(2);
        }
        // `arbiter help --help`: clap's `help` takes only command names, and `--help` asks for
        // the help of `arbiter` itself.
        ErrorKind::InvalidSubcommand if matches!(error.get(ContextKind::InvalidSubcommand), Some(ContextValue::String(arg)) if arg == "--help" || arg == "-h") =>
        {
            use clap::CommandFactory;
            let _ = Cli::command().print_long_help();
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let code = match error.kind() {
        ErrorKind::MissingRequiredArgument | ErrorKind::MissingSubcommand => ErrorCode::MissingField,
        _ => ErrorCode::MalformedRequest,
    };
    let message = error.render().to_string();
    let message = message.trim().trim_start_matches("error: ").to_string();
    // `--round-seconds <ROUND_SECONDS>` → `round_seconds`.
    let field = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => Some(arg.clone()),
        Some(ContextValue::Strings(args)) => args.first().cloned(),
        _ => None,
    }
    // Only a flag names a field: an unexpected value (a second file) does not.
    .and_then(|arg| {
        let flag = arg.trim_start_matches('<');
        let name = flag.trim_start_matches('-').split([' ', '=', '|', '>']).next().unwrap_or_default();
        flag.starts_with("--").then(|| name.replace('-', "_"))
    });
    let error = match field.filter(|f| !f.is_empty()) {
        Some(field) => ArbiterError::at(code, field, message),
        None => ArbiterError::new(code, message),
    };
    fail(&error)
}

/// Parses the command line and runs its command; the process's exit status.
pub fn main() -> ExitCode {
    let command = match Cli::try_parse() {
        Ok(cli) => cli.command,
        Err(error) => return refuse_arguments(error),
    };
    if matches!(command, Command::Solve { .. } | Command::Demo { .. } | Command::Rounds(_) | Command::Estimate(_)) {
        without_huge_pages();
    }
    match command {
        Command::Solve { input, pretty, backend, reference_throughputs, method } => {
            run_solve(input.path(), pretty, &backend, reference_throughputs.as_deref(), method)
        }
        Command::Demo { policy, json } => run_demo(&policy, json),
        Command::Rounds(args) => run_rounds(args),
        Command::Serve(config) => run_serve(config),
        Command::Token(command) => run_token(&command),
        Command::Openapi { output } => run_openapi(output),
        Command::Simulate(args) => {
            crate::simulator::cli::run_simulate(&args).map_or_else(|e| fail(&e), |()| ExitCode::SUCCESS)
        }
        Command::Sweep(args) => {
            crate::simulator::cli::run_sweep(&args).map_or_else(|e| fail(&e), |()| ExitCode::SUCCESS)
        }
        Command::Fitgpp(args) => {
            crate::simulator::fitgpp::cli::run(&args).map_or_else(|e| fail(&e), |()| ExitCode::SUCCESS)
        }
        Command::Estimate(args) => crate::estimator::cli::run(&args).map_or_else(|e| fail(&e), |text| emit(&text)),
        #[cfg(feature = "kubernetes")]
        Command::Kueue(args) => run_controller("kueue", crate::kubernetes::cli::run_kueue(&args)),
        #[cfg(feature = "kubernetes")]
        Command::K8sSync(args) => run_controller("k8s-sync", crate::kubernetes::cli::run_sync(&args)),
        Command::Oasis(args) => crate::simulator::oasis::cli::run(&args).map_or_else(|e| fail(&e), |text| emit(&text)),
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// clap's own checks of the definition (every `conflicts_with` names an argument, no two
    /// arguments share a flag, ...), which it otherwise runs only when a command line is parsed.
    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
