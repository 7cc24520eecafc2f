//! Wall time of whole simulations, parsing excluded (the trace and throughput table are read once):
//!
//! - the paper's Table 3 traces on 8 V100 / 16 P100 / 24 K80 GPUs (4 per server, 6-minute rounds):
//!   `max_min_fairness.trace` (96 jobs) under heterogeneity-aware and type-blind LAS, and
//!   `minimize_makespan.trace` (100 jobs) under `min_makespan` and `gandiva`; goal < 50 ms for the
//!   96-job trace;
//! - a 5,000-job continuous multi-GPU trace (Gavel's job mix, seed 0, 3 jobs/hour: the top of the
//!   paper's Figure 9 range) on 36 GPUs of each type under aware LAS; goal < 60 s on one core.
//!
//! Every case runs Gavel's mechanism with its fractional allocations (`SimulationConfig::gavel`),
//! as Gavel's simulator does; realizable allocations (the default) cost more: `docs/simulator.md`.
//! Gavel's own simulator is not run here: its times are the ones quoted in the issue (2.1–2.5 s
//! for the 96-job trace, 10 s with `gandiva`, hours for a 5,000-job trace), and the ratios below
//! are against those quotes. The data comes from `ARBITER_GAVEL_DATA` (default
//! `../shared/data/gavel`); without it the bench prints a note and does nothing.
//!
//! `cargo bench --bench simulator` (or `scripts/bench-simulator`, pinned to one core). Without
//! `--bench` (as `cargo test --benches` runs it) every case runs once, the 5,000-job trace cut to 500.

use arbiter::simulator::{parse_cluster, simulate, SimulationConfig, SimulationReport};
use arbiter::workload::generator::{self, GeneratorOptions};
use arbiter::workload::throughputs::ThroughputTable;
use arbiter::workload::{trace, Trace};
use arbiter::PolicyKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Repetitions of a small case stop after this much time (at least 3 runs).
const BUDGET: Duration = Duration::from_secs(3);

struct Case {
    name: &'static str,
    trace: Trace,
    config: SimulationConfig,
    /// Gavel's simulator on the same trace, as quoted in the issue: (text, fewest seconds, most
    /// seconds; `None`: open-ended).
    gavel: Option<(&'static str, f64, Option<f64>)>,
    goal_seconds: Option<f64>,
}

fn data_dir() -> PathBuf {
    std::env::var_os("ARBITER_GAVEL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/gavel"))
}

fn config(cluster: &str, policy: PolicyKind, aware: bool) -> SimulationConfig {
    let cluster = parse_cluster(cluster, 4, None).expect("a valid cluster");
    SimulationConfig { heterogeneity_aware: aware, ..SimulationConfig::gavel(cluster, policy) }
}

/// Runs a case `runs` times (or until the budget is spent); returns the median time and the
/// last report.
fn time(case: &Case, table: &ThroughputTable, full: bool) -> (Duration, usize, SimulationReport) {
    let mut times = Vec::new();
    let started = Instant::now();
    loop {
        let t = Instant::now();
        let report = simulate(&case.trace, table, &case.config, &mut |_| {}).expect("the simulation runs");
        times.push(t.elapsed());
        let enough = !full || case.trace.jobs.len() > 1000 || (times.len() >= 3 && started.elapsed() > BUDGET);
        if enough || times.len() >= 200 {
            times.sort();
            return (times[times.len() / 2], times.len(), report);
        }
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let dir = data_dir();
    let read = |name: &str| {
        let table_path = dir.join("simulation_throughputs.json");
        let table = ThroughputTable::from_path(&table_path).ok()?;
        let trace = trace::read_path(&dir.join("traces").join(name), &table).ok()?;
        Some((table, trace))
    };
    let (Some((table, las)), Some((_, makespan))) = (read("max_min_fairness.trace"), read("minimize_makespan.trace"))
    else {
        eprintln!("note: Gavel's data is not at {} (set ARBITER_GAVEL_DATA); nothing to time", dir.display());
        return;
    };
    let paper = "v100=8,p100=16,k80=24";
    let big_jobs = if full { 5000 } else { 500 };
    let options =
        GeneratorOptions { multi_gpu: true, multi_priority: true, ..GeneratorOptions::continuous(big_jobs, 3.0, 0) };
    let big = generator::generate(&table, &options).expect("Gavel's table generates");
    let cases = [
        Case {
            name: "max_min_fairness.trace, LAS (aware)",
            trace: las.clone(),
            config: config(paper, PolicyKind::MaxMinFairness, true),
            gavel: Some(("2.1–2.5 s", 2.1, Some(2.5))),
            goal_seconds: Some(0.05),
        },
        Case {
            name: "max_min_fairness.trace, LAS (type-blind)",
            trace: las,
            config: config(paper, PolicyKind::MaxMinFairness, false),
            gavel: Some(("2.1–2.5 s", 2.1, Some(2.5))),
            goal_seconds: Some(0.05),
        },
        Case {
            name: "minimize_makespan.trace, min_makespan",
            trace: makespan.clone(),
            config: config(paper, PolicyKind::MinMakespan, true),
            gavel: None,
            goal_seconds: None,
        },
        Case {
            name: "minimize_makespan.trace, gandiva",
            trace: makespan,
            config: config(paper, PolicyKind::Gandiva, true),
            gavel: Some(("10 s", 10.0, Some(10.0))),
            goal_seconds: None,
        },
        Case {
            name: if full {
                "5,000 jobs, continuous multi-GPU, 3 jobs/h, 36/36/36, LAS"
            } else {
                "500 jobs (test mode), continuous multi-GPU, 3 jobs/h, 36/36/36, LAS"
            },
            trace: big,
            config: config("v100=36,p100=36,k80=36", PolicyKind::MaxMinFairness, true),
            gavel: full.then_some(("hours", 3600.0, None)),
            goal_seconds: full.then_some(60.0),
        },
    ];
    println!("| case | jobs | rounds | average JCT | makespan | time (median) | runs | goal | Gavel's simulator (quoted, not measured here) | ratio to the quote |");
    println!("|---|---:|---:|---:|---:|---:|---:|---|---|---:|");
    for case in &cases {
        let (median, runs, report) = time(case, &table, full);
        let seconds = median.as_secs_f64();
        let goal = match case.goal_seconds {
            Some(g) if seconds < g => format!("< {g} s: met"),
            Some(g) => format!("< {g} s: missed"),
            None => String::new(),
        };
        let (quote, ratio) = match case.gavel {
            Some((text, low, Some(high))) if high > low => {
                (text.to_string(), format!("{:.0}–{:.0}×", low / seconds, high / seconds))
            }
            Some((text, low, Some(_))) => (text.to_string(), format!("{:.0}×", low / seconds)),
            Some((text, low, None)) => (text.to_string(), format!("≥ {:.0}×", low / seconds)),
            None => (String::new(), String::new()),
        };
        println!(
            "| {} | {} | {} | {:.2} h | {:.2} h | {} | {} | {} | {} | {} |",
            case.name,
            case.trace.jobs.len(),
            report.rounds,
            report.average_jct_seconds / 3600.0,
            report.makespan_seconds / 3600.0,
            if seconds < 1.0 { format!("{:.1} ms", seconds * 1e3) } else { format!("{seconds:.2} s") },
            runs,
            goal,
            quote,
            ratio
        );
    }
}
