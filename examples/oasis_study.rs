//! OASiS's studies (docs/oasis.md): `ratio` (offline MILP / OASiS on small instances), and the
//! simulation study's tables. Prints markdown tables; `scripts/oasis-study` runs them all.
//!
//! ```sh
//! cargo run --release --example oasis_study -- ratio --jobs 12 --seeds 0-9 [--u 1 --l 1] [--lowest horizon|shortest]
//! cargo run --release --example oasis_study -- utility --jobs 25,50,100,200,400 --seeds 0-4
//! cargo run --release --example oasis_study -- lateness --jobs 200 --seeds 0-4
//! cargo run --release --example oasis_study -- sensitivity --jobs 200 --factors 0.25,0.5,1,2,4 --seeds 0-4
//! ```

use arbiter::lp::Backend;
use arbiter::scheduling::oasis::LowestUtility;
use arbiter::simulator::oasis::ratio::ratio;
use arbiter::simulator::oasis::run::{oasis, validate, UtilityClass};
use arbiter::simulator::oasis::study::{lateness_of, run_all, SCHEMES};
use arbiter::simulator::oasis::workload::{generate, Settings};
use std::process::ExitCode;

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args.get(i + 1).and_then(|v| v.parse().ok()).ok_or_else(|| format!("{name} needs a value")),
    }
}

fn lowest(args: &[String]) -> Result<LowestUtility, String> {
    match arg(args, "--lowest", "shortest".to_string())?.as_str() {
        "horizon" => Ok(LowestUtility::AtHorizon),
        "shortest" => Ok(LowestUtility::AtShortest),
        other => Err(format!("--lowest is horizon or shortest, not {other}")),
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
        let row =
            ratio(&settings, seed, lowest(args)?, u, l, Backend::default().within(limit)).map_err(|e| e.to_string())?;
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

fn list<T: std::str::FromStr>(args: &[String], name: &str, default: &str) -> Result<Vec<T>, String> {
    let spec: String = arg(args, name, default.to_string())?;
    spec.split(',').map(|v| v.trim().parse().map_err(|_| format!("bad {name}: {v}"))).collect()
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

fn std_dev(xs: &[f64]) -> f64 {
    let m = mean(xs);
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len().max(1) as f64).sqrt()
}

/// Total utility per scheme against the number of jobs (the mean over seeds).
fn run_utility(args: &[String]) -> Result<(), String> {
    let sizes: Vec<usize> = list(args, "--jobs", "25,50,100,200,400")?;
    let seeds = seeds(args)?;
    println!("| jobs | {} | OASiS / best other | admitted (OASiS) |", SCHEMES.join(" | "));
    println!("|---:|{}---:|---:|", "---:|".repeat(SCHEMES.len()));
    for n in sizes {
        let mut totals = vec![Vec::new(); SCHEMES.len()];
        let mut admitted = Vec::new();
        for &seed in &seeds {
            let study = run_all(&Settings::paper(n), seed, lowest(args)?, Backend::default().within(600.0))
                .map_err(|e| e.to_string())?;
            for (k, run) in study.runs.iter().enumerate() {
                totals[k].push(run.total_utility);
            }
            admitted.push(study.runs[0].admitted as f64);
        }
        let means: Vec<f64> = totals.iter().map(|t| mean(t)).collect();
        let best_other = means[1..].iter().copied().fold(0.0, f64::max);
        let cells: Vec<String> = means.iter().map(|m| format!("{m:.0}")).collect();
        println!("| {n} | {} | {:.2} | {:.0} |", cells.join(" | "), means[0] / best_other.max(1e-12), mean(&admitted));
    }
    Ok(())
}

/// Completion minus target for time-sensitive and time-critical jobs, per scheme.
fn run_lateness(args: &[String]) -> Result<(), String> {
    let n: usize = arg(args, "--jobs", 200)?;
    let seeds = seeds(args)?;
    let mut by = vec![[Vec::new(), Vec::new()]; SCHEMES.len()];
    for &seed in &seeds {
        let study = run_all(&Settings::paper(n), seed, lowest(args)?, Backend::default().within(600.0))
            .map_err(|e| e.to_string())?;
        for (k, run) in study.runs.iter().enumerate() {
            by[k][0].extend(lateness_of(run, &study.jobs, UtilityClass::TimeSensitive));
            by[k][1].extend(lateness_of(run, &study.jobs, UtilityClass::TimeCritical));
        }
    }
    println!("| scheme | sensitive: mean | sd | finished | critical: mean | sd | finished |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (k, name) in SCHEMES.iter().enumerate() {
        let [s, c] = &by[k];
        println!(
            "| {name} | {:.2} | {:.2} | {} | {:.2} | {:.2} | {} |",
            mean(s),
            std_dev(s),
            s.len(),
            mean(c),
            std_dev(c),
            c.len()
        );
    }
    Ok(())
}

/// OASiS's total utility with U, L or both (`--scale u|l|both`) estimated at factors of their
/// values.
fn run_sensitivity(args: &[String]) -> Result<(), String> {
    let n: usize = arg(args, "--jobs", 200)?;
    let factors: Vec<f64> = list(args, "--factors", "0.25,0.5,1,2,4")?;
    let scale: String = arg(args, "--scale", "both".to_string())?;
    let seeds = seeds(args)?;
    let label = match scale.as_str() {
        "u" => "U",
        "l" => "L",
        "both" => "U and L",
        other => return Err(format!("--scale is u, l or both, not {other}")),
    };
    println!("| {label} estimated at | total utility | admitted |");
    println!("|---:|---:|---:|");
    for f in factors {
        let (fu, fl) = match scale.as_str() {
            "u" => (f, 1.0),
            "l" => (1.0, f),
            _ => (f, f),
        };
        let (mut total, mut admitted) = (Vec::new(), Vec::new());
        for &seed in &seeds {
            let (cluster, specs) = generate(&Settings::paper(n), seed);
            let jobs = validate(&cluster, &specs).map_err(|e| e.to_string())?;
            let (run, _) = oasis(&cluster, &jobs, lowest(args)?, fu, fl).map_err(|e| e.to_string())?;
            total.push(run.total_utility);
            admitted.push(run.admitted as f64);
        }
        println!("| {:.0}% | {:.0} | {:.0} |", f * 100.0, mean(&total), mean(&admitted));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ratio") => run_ratio(&args),
        Some("utility") => run_utility(&args),
        Some("lateness") => run_lateness(&args),
        Some("sensitivity") => run_sensitivity(&args),
        _ => Err("usage: oasis_study ratio|utility|lateness|sensitivity [--jobs N[,N...]] [--seeds A-B] [--lowest horizon|shortest] [--u F] [--l F] [--factors F,...] [--scale u|l|both] [--time-limit S]".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}
