//! The `arbiter estimate` command: complete partial throughput rows against a reference file, or
//! measure the estimator on that reference (leave-one-job-out). The command line (`src/cli.rs`)
//! only dispatches here.

use super::api::{self, EstimateRequest};
use super::evaluation::{Accuracy, Method};
use super::{Estimator, ReferenceMatrix, DEFAULT_REGULARIZATION};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::simulator::cli::{read_throughputs, refuse_two_standard_inputs};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Flags of `arbiter estimate`.
#[derive(Debug, Clone, clap::Args)]
pub struct EstimateArgs {
    /// The reference: a measured-throughput file in Gavel's format (e.g.
    /// `../shared/data/gavel/simulation_throughputs.json`), or `-` for standard input (when the
    /// request is not). A request may post its own instead.
    #[arg(long, value_name = "FILE|-")]
    pub reference_throughputs: Option<PathBuf>,
    /// A request (`{"jobs": [{"id", "throughput": {...}, "colocated": {...}}]}`), or `-` for
    /// standard input; its completed rows are printed as JSON.
    #[arg(long, short, value_name = "FILE|-", conflicts_with = "evaluate")]
    pub input: Option<String>,
    /// The same, without `--input`.
    #[arg(value_name = "FILE|-", conflicts_with_all = ["evaluate", "input"])]
    pub file: Option<String>,
    /// Instead: hold out each reference job in turn, hide all but k of its worker types (and
    /// with or without a few pair entries), and print the estimator's error beside two trivial
    /// estimates (the nearest job on the measured entries, the column mean).
    #[arg(long)]
    pub evaluate: bool,
    /// With --evaluate: the scale factor whose reference jobs are evaluated (default 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub scale_factor: Option<u32>,
    /// With --evaluate: worker types, comma-separated (default: the file's, without `*_unconsolidated`).
    #[arg(long, value_delimiter = ',')]
    pub worker_types: Option<Vec<String>>,
    /// With --evaluate: factors per row (default: as many as the measurements allow, up to 3).
    #[arg(long)]
    pub rank: Option<usize>,
    /// With --evaluate: ridge weight on the factors (default 0.05).
    #[arg(long, allow_negative_numbers = true)]
    pub regularization: Option<f64>,
    /// Print JSON (the table's rows with --evaluate).
    #[arg(long)]
    pub json: bool,
}

/// Runs the command and returns what it prints.
pub fn run(args: &EstimateArgs) -> Result<String> {
    let input = args.input.as_deref().or(args.file.as_deref());
    refuse_two_standard_inputs(&[
        ("input", input.map(Path::new)),
        ("reference_throughputs", args.reference_throughputs.as_deref()),
    ])?;
    let table = args
        .reference_throughputs
        .as_deref()
        .map(|path| read_throughputs(path, "reference_throughputs"))
        .transpose()?;
    if args.evaluate {
        let table = table.ok_or_else(|| {
            ArbiterError::at(
                ErrorCode::MissingField,
                "reference_throughputs",
                "--evaluate needs --reference-throughputs FILE",
            )
        })?;
        let options = api::checked_options(args.rank, args.regularization.unwrap_or(DEFAULT_REGULARIZATION))?;
        let types = api::worker_types(&table, args.worker_types.as_deref())?;
        let scale_factor = args.scale_factor.unwrap_or(1);
        let estimator = Estimator::new(ReferenceMatrix::from_table(&table, &types, scale_factor, true))?;
        estimator.check_rank(options.rank)?;
        let rows = estimator.evaluate(options);
        return Ok(if args.json {
            serde_json::to_string_pretty(&rows).expect("rows serialize")
        } else {
            render_table(&rows, estimator.reference().jobs.len(), &types)
        });
    }
    // A request carries its own options; the flags of --evaluate would be ignored here.
    let evaluation_flags = [
        ("rank", args.rank.is_some()),
        ("regularization", args.regularization.is_some()),
        ("scale_factor", args.scale_factor.is_some()),
        ("worker_types", args.worker_types.is_some()),
    ];
    if let Some((flag, _)) = evaluation_flags.iter().find(|(_, given)| *given) {
        return Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            *flag,
            format!(
                "--{} applies to --evaluate; a request to complete sets its options in its JSON",
                flag.replace('_', "-")
            ),
        ));
    }
    let input = input.ok_or_else(|| {
        ArbiterError::at(ErrorCode::MissingField, "input", "give --input FILE|- (partial rows) or --evaluate")
    })?;
    let text = crate::contract::json::read_input(input)?;
    let request: EstimateRequest = crate::contract::json::read(&text).map_err(|e| e.into_error(""))?;
    let response = api::estimate(&request, table.as_ref())?;
    Ok(serde_json::to_string_pretty(&response).expect("a response serializes"))
}

fn render_table(rows: &[Accuracy], jobs: usize, types: &[String]) -> String {
    let percent = |v: f64| if v.is_nan() { "—".to_string() } else { format!("{:.1}%", 100.0 * v) };
    let mut out = String::new();
    let _ = writeln!(out, "leave-one-job-out over {jobs} reference jobs on {}", types.join(", "));
    let _ = writeln!(out, "| types measured | pairs measured | method | solo median | solo p90 | pair median | pair p90 | type order kept |");
    let _ = writeln!(out, "|---:|---|---|---:|---:|---:|---:|---:|");
    for r in rows {
        let method = match r.method {
            Method::Estimator => "estimator",
            Method::NearestJob => "nearest job",
            Method::ColumnMean => "column mean",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.known_types,
            if r.pairs_known { super::evaluation::PAIRS_PER_TYPE.to_string() + " per type" } else { "none".into() },
            method,
            percent(r.solo_median),
            percent(r.solo_p90),
            percent(r.pair_median),
            percent(r.pair_p90),
            percent(r.order_kept)
        );
    }
    out
}
