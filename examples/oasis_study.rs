//! OASiS's studies (docs/oasis.md): `ratio` (offline MILP / OASiS on small instances), and the
//! simulation study's tables. Prints markdown tables; `scripts/oasis-study` runs them all.
//!
//! ```sh
//! cargo run --release --example oasis_study -- ratio --jobs 12 --seeds 0-9 [--u 1 --l 1]
//! ```

use arbiter::lp::Backend;
use arbiter::simulator::oasis::ratio::ratio;
use arbiter::simulator::oasis::workload::Settings;
use std::process::ExitCode;

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args.get(i + 1).and_then(|v| v.parse().ok()).ok_or_else(|| format!("{name} needs a value")),
    }
}

fn seeds(args: &[String]) -> Result<Vec<u64>, String> {
    let spec: String = arg(args, "--seeds", "0-9".to_string())?;
    let (a, b) = spec.split_once('-').unwrap_or((&spec, &spec));
    let (a, b): (u64, u64) = (a.parse().map_err(|_| "bad --seeds")?, b.parse().map_err(|_| "bad --seeds")?);
    Ok((a..=b).collect())
}

fn run_ratio(args: &[String]) -> Result<(), String> {
    let jobs: usize = arg(args, "--jobs", 12)?;
    let (u, l): (f64, f64) = (arg(args, "--u", 1.0)?, arg(args, "--l", 1.0)?);
    let limit: f64 = arg(args, "--time-limit", 300.0)?;
    let settings = Settings::small(jobs);
    println!("| seed | jobs | offline (MILP) | OASiS | ratio | bound 2α | admitted offline / OASiS | MILP s |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut ratios = Vec::new();
    for seed in seeds(args)? {
        let row = ratio(&settings, seed, u, l, Backend::default().within(limit)).map_err(|e| e.to_string())?;
        println!(
            "| {} | {} | {:.2} | {:.2} | {:.3} | {:.1} | {} / {} | {:.2} |",
            row.seed,
            row.jobs,
            row.offline,
            row.oasis,
            row.ratio,
            row.bound,
            row.offline_admitted,
            row.oasis_admitted,
            row.milp_seconds
        );
        ratios.push(row.ratio);
    }
    let finite: Vec<f64> = ratios.iter().copied().filter(|r| r.is_finite()).collect();
    let mean = finite.iter().sum::<f64>() / finite.len().max(1) as f64;
    let max = finite.iter().copied().fold(0.0, f64::max);
    println!(
        "\nmean ratio {mean:.3}, max {max:.3} over {} instances ({} infinite)",
        ratios.len(),
        ratios.len() - finite.len()
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ratio") => run_ratio(&args),
        _ => Err("usage: oasis_study ratio [--jobs N] [--seeds A-B] [--u F] [--l F] [--time-limit S]".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}
