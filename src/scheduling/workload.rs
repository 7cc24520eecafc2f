//! Bursts of arrivals on top of a generated trace, as Blox evaluates its admission control and its
//! synthesizer:
//! - [`add_bursts`] (§5.1): "an additional 16 jobs during one hour in each day";
//! - [`add_short_bursts`] (§5.2): "short bursty jobs at two times the load for two consecutive
//!   hours every four hours", with runtimes "chosen randomly between ten minutes and one hour".

use crate::error::Result;
use crate::workload::generator::{self, Arrivals, Durations, GeneratorOptions};
use crate::workload::throughputs::ThroughputTable;
use crate::workload::Trace;

const DAY: f64 = 86_400.0;
const HOUR: f64 = 3_600.0;
/// Blox §5.2: a burst starts every four hours and lasts two.
const SHORT_BURST_EVERY: f64 = 4.0 * HOUR;
const SHORT_BURST_LENGTH: f64 = 2.0 * HOUR;
/// Blox §5.2: the short jobs' runtimes.
const SHORT_JOB_SECONDS: (f64, f64) = (600.0, 3600.0);

/// `trace` with `per_burst` extra jobs arriving uniformly within the first hour of every day it
/// spans, drawn with Gavel's job mix (`options`, another seed per day); jobs sorted by arrival
/// (ties keep trace order), so job indices stay in arrival order.
pub fn add_bursts(
    mut trace: Trace,
    table: &ThroughputTable,
    options: &GeneratorOptions,
    per_burst: usize,
) -> Result<Trace> {
    let last = trace.jobs.iter().map(|j| j.arrival_seconds).fold(0.0, f64::max);
    let days = (last / DAY).floor() as u64 + 1;
    for day in 0..days {
        let burst = GeneratorOptions {
            num_jobs: per_burst,
            arrivals: Arrivals::Static,
            seed: options.seed ^ (0xb1a5_7000 + day),
            ..options.clone()
        };
        let mut rng = generator::Rng::new(burst.seed);
        for mut job in generator::generate(table, &burst)?.jobs {
            job.arrival_seconds = day as f64 * DAY + rng.uniform() * HOUR;
            trace.jobs.push(job);
        }
    }
    trace.jobs.sort_by(|a, b| a.arrival_seconds.total_cmp(&b.arrival_seconds));
    Ok(trace)
}

/// `trace` with Blox §5.2's bursts of short jobs: from hour 4 on, every four hours, two hours of
/// extra Poisson arrivals at twice `jobs_per_hour`, each job of Gavel's mix (`options`, another
/// seed per burst) with a runtime uniform in 10..60 minutes on the reference type; bursts start
/// while the trace's arrivals last. Jobs sorted by arrival as in [`add_bursts`].
pub fn add_short_bursts(
    mut trace: Trace,
    table: &ThroughputTable,
    options: &GeneratorOptions,
    jobs_per_hour: f64,
) -> Result<Trace> {
    let last = trace.jobs.iter().map(|j| j.arrival_seconds).fold(0.0, f64::max);
    let rate = 2.0 * jobs_per_hour;
    // Enough draws that a burst's Poisson stream outlasts its two hours but for a 1e-9 chance.
    let draws = (rate * SHORT_BURST_LENGTH / HOUR * 2.0 + 40.0).ceil() as usize;
    let mut start = SHORT_BURST_EVERY;
    let mut burst = 0u64;
    while start <= last {
        let stream = GeneratorOptions {
            num_jobs: draws,
            arrivals: Arrivals::Poisson { jobs_per_hour: rate },
            seed: options.seed ^ (0x5b0_1700 + burst),
            durations: Durations::Uniform { low: SHORT_JOB_SECONDS.0, high: SHORT_JOB_SECONDS.1 },
            ..options.clone()
        };
        let mut rng = generator::Rng::new(stream.seed);
        // The generator's first arrival is at 0; the burst's first is an exponential gap in.
        let offset = rng.exponential(rate / HOUR);
        for mut job in generator::generate(table, &stream)?.jobs {
            job.arrival_seconds += start + offset;
            if job.arrival_seconds < start + SHORT_BURST_LENGTH {
                trace.jobs.push(job);
            }
        }
        start += SHORT_BURST_EVERY;
        burst += 1;
    }
    trace.jobs.sort_by(|a, b| a.arrival_seconds.total_cmp(&b.arrival_seconds));
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two job types measured on the V100 and the K80, as in Gavel's throughput file.
    fn table() -> ThroughputTable {
        ThroughputTable::from_json_str(
            r#"{"v100": {"('A3C', 1)": {"null": 2.0}, "('LM (batch size 20)', 1)": {"null": 8.0}},
                "k80": {"('A3C', 1)": {"null": 1.0}, "('LM (batch size 20)', 1)": {"null": 2.0}}}"#,
        )
        .unwrap()
    }

    #[test]
    fn bursts_land_in_the_first_hour_of_each_day() {
        let table = table();
        let options = GeneratorOptions::continuous(100, 2.0, 3);
        let base = generator::generate(&table, &options).unwrap();
        let days = (base.jobs.iter().map(|j| j.arrival_seconds).fold(0.0, f64::max) / DAY).floor() as usize + 1;
        let bursty = add_bursts(base.clone(), &table, &options, 16).unwrap();
        assert_eq!(bursty.jobs.len(), 100 + 16 * days);
        assert!(bursty.jobs.windows(2).all(|w| w[0].arrival_seconds <= w[1].arrival_seconds));
        let extra = bursty.jobs.iter().filter(|j| !base.jobs.contains(j)).count();
        assert_eq!(extra, 16 * days);
        assert!(bursty.jobs.iter().filter(|j| !base.jobs.contains(j)).all(|j| j.arrival_seconds % DAY < HOUR));
    }

    #[test]
    fn short_bursts_come_every_four_hours_at_twice_the_load() {
        let table = table();
        let options = GeneratorOptions::continuous(2000, 8.0, 5);
        let base = generator::generate(&table, &options).unwrap();
        let bursty = add_short_bursts(base.clone(), &table, &options, 8.0).unwrap();
        assert!(bursty.jobs.windows(2).all(|w| w[0].arrival_seconds <= w[1].arrival_seconds));
        let extra: Vec<_> = bursty.jobs.iter().filter(|j| !base.jobs.contains(j)).collect();
        assert_eq!(extra.len(), bursty.jobs.len() - base.jobs.len());
        // Only in hours [4k, 4k + 2) for k >= 1, and never after the base trace's last arrival's burst.
        assert!(extra
            .iter()
            .all(|j| j.arrival_seconds >= SHORT_BURST_EVERY
                && j.arrival_seconds % SHORT_BURST_EVERY < SHORT_BURST_LENGTH));
        // Twice the load for two hours of every four: about 8 extra jobs per hour on average.
        let last = base.jobs.last().unwrap().arrival_seconds;
        let bursts = (last / SHORT_BURST_EVERY).floor();
        let per_burst = extra.len() as f64 / bursts;
        assert!((per_burst - 32.0).abs() < 3.0, "{per_burst} jobs per burst over {bursts} bursts");
        // Runtimes of 10 to 60 minutes on the V100, the reference type.
        for job in &extra {
            let seconds = job.total_steps / table.solo("v100", &job.job_type, job.scale_factor).unwrap();
            assert!((599.0..=3601.0).contains(&seconds), "{seconds}");
        }
    }
}
