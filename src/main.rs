//! The `arbiter` command line: `solve` answers one request of the contract, `demo` shows an
//! allocation of the embedded demo cluster as a table.

use arbiter::lp::Backend;
use arbiter::{ArbiterError, ErrorCode, PolicyKind, Problem};
use clap::{Parser, Subcommand};
use std::io::Read;
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
        /// The request file, or `-` for standard input.
        #[arg(long, short, value_name = "FILE|-")]
        input: String,
        /// Indent the response for people.
        #[arg(long)]
        pretty: bool,
        /// LP backend: `highs` (default) or `microlp` when built with that feature.
        #[arg(long, default_value_t = Backend::default().name().to_string())]
        backend: String,
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
}

fn fail(error: &ArbiterError) -> ExitCode {
    eprintln!("{}", error.to_json());
    ExitCode::from(2)
}

fn backend_named(name: &str) -> Result<Backend, ArbiterError> {
    Backend::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Backend::available().iter().map(|b| b.name()).collect();
        ArbiterError::new(
            ErrorCode::Unsupported,
            format!(
                "unknown backend {name:?}; this build has: {}",
                known.join(", ")
            ),
        )
    })
}

fn run_solve(input: &str, pretty: bool, backend: &str) -> ExitCode {
    let backend = match backend_named(backend) {
        Ok(b) => b,
        Err(e) => return fail(&e),
    };
    let mut text = String::new();
    let read = if input == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(input).map(|t| text = t)
    };
    if let Err(e) = read {
        return fail(&ArbiterError::new(
            ErrorCode::MalformedRequest,
            format!("cannot read {input}: {e}"),
        ));
    }
    match arbiter::solve_json(&text, backend) {
        Ok(response) => {
            let out = if pretty {
                serde_json::to_string_pretty(&response)
            } else {
                serde_json::to_string(&response)
            };
            println!("{}", out.expect("a response always serializes"));
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

fn run_demo(policy: &str, json: bool) -> ExitCode {
    if PolicyKind::from_name(policy).is_none() {
        return fail(&ArbiterError::at(
            ErrorCode::UnknownPolicy,
            "policy",
            format!("unknown policy {policy:?}"),
        ));
    }
    let result = Problem::from_request(&arbiter::demo::request(policy))
        .and_then(|problem| arbiter::solve(&problem, Backend::default()).map(|r| (problem, r)));
    match result {
        Ok((_, response)) if json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&response).expect("a response always serializes")
            );
            ExitCode::SUCCESS
        }
        Ok((problem, response)) => {
            print!("{}", arbiter::demo::table(&problem, &response));
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Solve {
            input,
            pretty,
            backend,
        } => run_solve(&input, pretty, &backend),
        Command::Demo { policy, json } => run_demo(&policy, json),
    }
}
