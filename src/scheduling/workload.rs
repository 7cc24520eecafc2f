//! Bursts of arrivals on top of a generated trace (Blox §5.1: "an additional 16 jobs during one
//! hour in each day"), for the admission experiments.

use crate::error::Result;
use crate::workload::generator::{self, Arrivals, GeneratorOptions};
use crate::workload::throughputs::ThroughputTable;
use crate::workload::Trace;

const DAY: f64 = 86_400.0;
const HOUR: f64 = 3_600.0;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_land_in_the_first_hour_of_each_day() {
        let table =
            ThroughputTable::from_path(std::path::Path::new("../shared/data/gavel/simulation_throughputs.json"))
                .unwrap();
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
}
