//! Seeded synthetic traces with Gavel's job mix: continuous (Poisson arrivals at a given rate) or
//! static (every job at t = 0). Reads job types and their throughputs from a [`ThroughputTable`];
//! it does not simulate anything.
//!
//! The mix follows Gavel's `generate_job`: a job's duration on the reference worker type is
//! `10^U(1.5, 3)` minutes with probability 0.8, else `10^U(3, 4)` minutes; its total steps are that
//! duration times its throughput alone on the reference type at its scale factor; its job type is
//! drawn uniformly from the table's job types measured there at that scale factor. Scale factors
//! 1/2/4/8 come with probabilities 0.70/0.10/0.15/0.05 when multi-GPU jobs are on; 20% of jobs get
//! priority weight 5 when multi-priority is on; the SLO is 1.2×, 2× or 10× the duration (each about
//! a third of jobs) when SLOs are on.
//!
//! Every attribute is drawn from its own stream of the seed, so two traces with the same seed
//! differ only where their options do: a different arrival rate moves the arrivals and keeps the
//! jobs, and turning SLOs on adds SLOs to the same jobs.

use super::throughputs::ThroughputTable;
use super::{Trace, TraceJob};
use crate::error::{ArbiterError, ErrorCode, Result};

/// When jobs arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrivals {
    /// All jobs at t = 0 (a static trace, as for makespan experiments).
    Static,
    /// A Poisson process: the first job at t = 0, then exponential inter-arrival times of mean
    /// `3600 / jobs_per_hour` seconds.
    Poisson { jobs_per_hour: f64 },
}

/// What to generate. `Default`: 100 static single-GPU jobs, weight 1, no SLOs, seed 0, steps
/// measured on `v100`.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratorOptions {
    pub num_jobs: usize,
    pub arrivals: Arrivals,
    pub seed: u64,
    /// Scale factors 1/2/4/8 with probabilities 0.70/0.10/0.15/0.05; otherwise every job has 1.
    pub multi_gpu: bool,
    /// 20% of jobs get priority weight 5; otherwise every weight is 1.
    pub multi_priority: bool,
    /// SLOs of 1.2×, 2× or 10× the job's duration; otherwise none.
    pub slos: bool,
    /// The worker type whose throughput turns a duration into steps (Gavel: `v100`).
    pub reference_worker_type: String,
    /// How long a job runs on the reference type.
    pub durations: Durations,
}

/// How a job's duration on the reference type is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Durations {
    /// Gavel's mix: `10^U(1.5, 3)` minutes with probability 0.8, else `10^U(3, 4)` minutes.
    Gavel,
    /// Every job runs this many seconds.
    Fixed(f64),
    /// Uniform between the two ends, in seconds (Blox §5.2's short jobs: 600..3600).
    Uniform { low: f64, high: f64 },
}

impl Default for GeneratorOptions {
    fn default() -> Self {
        GeneratorOptions {
            num_jobs: 100,
            arrivals: Arrivals::Static,
            seed: 0,
            multi_gpu: false,
            multi_priority: false,
            slos: false,
            reference_worker_type: "v100".to_string(),
            durations: Durations::Gavel,
        }
    }
}

impl GeneratorOptions {
    /// `num_jobs` jobs arriving as a Poisson process at `jobs_per_hour`.
    pub fn continuous(num_jobs: usize, jobs_per_hour: f64, seed: u64) -> Self {
        GeneratorOptions { num_jobs, arrivals: Arrivals::Poisson { jobs_per_hour }, seed, ..Default::default() }
    }

    /// `num_jobs` jobs, all at t = 0.
    pub fn static_trace(num_jobs: usize, seed: u64) -> Self {
        GeneratorOptions { num_jobs, arrivals: Arrivals::Static, seed, ..Default::default() }
    }
}

/// Probability that a job is short (`10^U(1.5, 3)` minutes) rather than long (`10^U(3, 4)`).
const SHORT_JOB_PROBABILITY: f64 = 0.8;
/// Scale factors and the upper ends of their cumulative probabilities (Gavel's Philly-derived mix).
const SCALE_FACTORS: [(u32, f64); 4] = [(1, 0.70), (2, 0.80), (4, 0.95), (8, 1.0)];
const HIGH_PRIORITY_PROBABILITY: f64 = 0.2;
const HIGH_PRIORITY_WEIGHT: f64 = 5.0;
/// SLO multipliers and the upper ends of their cumulative probabilities.
const SLO_MULTIPLIERS: [(f64, f64); 3] = [(1.2, 0.33), (2.0, 0.67), (10.0, 1.0)];

/// One independent random stream per job attribute.
struct Streams {
    arrival: Rng,
    duration: Rng,
    scale_factor: Rng,
    job_type: Rng,
    priority: Rng,
    slo: Rng,
}

impl Streams {
    fn new(seed: u64) -> Streams {
        let stream = |i: u64| Rng::new(seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        Streams {
            arrival: stream(1),
            duration: stream(2),
            scale_factor: stream(3),
            job_type: stream(4),
            priority: stream(5),
            slo: stream(6),
        }
    }
}

/// The job types drawable at each scale factor: measured with a positive throughput alone on the
/// reference type.
struct Catalog<'a> {
    table: &'a ThroughputTable,
    reference: &'a str,
    by_scale_factor: Vec<(u32, Vec<String>)>,
}

impl<'a> Catalog<'a> {
    fn new(table: &'a ThroughputTable, options: &'a GeneratorOptions) -> Result<Catalog<'a>> {
        let reference = options.reference_worker_type.as_str();
        if !table.worker_types().iter().any(|w| w == reference) {
            return Err(ArbiterError::at(
                ErrorCode::UnknownWorkerType,
                "reference_worker_type",
                format!(
                    "reference worker type {reference:?} is not in the throughput table (it has: {})",
                    table.worker_types().join(", ")
                ),
            ));
        }
        let scale_factors: Vec<u32> =
            if options.multi_gpu { SCALE_FACTORS.iter().map(|&(sf, _)| sf).collect() } else { vec![1] };
        let mut by_scale_factor = Vec::new();
        for sf in scale_factors {
            let types: Vec<String> = table
                .job_types(sf)
                .into_iter()
                .filter(|t| table.solo(reference, t, sf).is_some_and(|v| v > 0.0))
                .collect();
            if types.is_empty() && options.num_jobs > 0 {
                return Err(ArbiterError::at(
                    ErrorCode::MissingField,
                    "throughputs",
                    format!("the throughput table has no job type at scale factor {sf} that runs on {reference:?}"),
                ));
            }
            by_scale_factor.push((sf, types));
        }
        Ok(Catalog { table, reference, by_scale_factor })
    }

    fn job_types(&self, scale_factor: u32) -> &[String] {
        self.by_scale_factor.iter().find(|(sf, _)| *sf == scale_factor).map(|(_, t)| t.as_slice()).unwrap_or(&[])
    }

    /// Steps/s of the job type alone on the reference type (positive by construction).
    fn reference_throughput(&self, job_type: &str, scale_factor: u32) -> f64 {
        self.table.solo(self.reference, job_type, scale_factor).unwrap_or(0.0)
    }
}

/// Generates a trace; the same table and options always give the same trace.
pub fn generate(table: &ThroughputTable, options: &GeneratorOptions) -> Result<Trace> {
    validate(options)?;
    let catalog = Catalog::new(table, options)?;
    let mut streams = Streams::new(options.seed);
    let mut jobs = Vec::with_capacity(options.num_jobs);
    let mut arrival_seconds = 0.0;
    for i in 0..options.num_jobs {
        if let (Arrivals::Poisson { jobs_per_hour }, true) = (options.arrivals, i > 0) {
            arrival_seconds += streams.arrival.exponential(jobs_per_hour / 3600.0);
        }
        let duration_seconds = match options.durations {
            Durations::Gavel => duration_minutes(&mut streams.duration) * 60.0,
            Durations::Fixed(seconds) => seconds,
            Durations::Uniform { low, high } => low + (high - low) * streams.duration.uniform(),
        };
        let scale_factor = if options.multi_gpu { pick(&SCALE_FACTORS, streams.scale_factor.uniform()) } else { 1 };
        let types = catalog.job_types(scale_factor);
        let job_type = types[streams.job_type.below(types.len())].clone();
        let total_steps = (duration_seconds * catalog.reference_throughput(&job_type, scale_factor)).round().max(1.0);
        let weight = if options.multi_priority && streams.priority.uniform() < HIGH_PRIORITY_PROBABILITY {
            HIGH_PRIORITY_WEIGHT
        } else {
            1.0
        };
        let slo_seconds = options.slos.then(|| pick(&SLO_MULTIPLIERS, streams.slo.uniform()) * duration_seconds);
        jobs.push(TraceJob { job_type, total_steps, scale_factor, weight, slo_seconds, arrival_seconds, tenant: None });
    }
    Ok(Trace::new(jobs))
}

fn validate(options: &GeneratorOptions) -> Result<()> {
    if let Arrivals::Poisson { jobs_per_hour } = options.arrivals {
        if !(jobs_per_hour.is_finite() && jobs_per_hour > 0.0) {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                "jobs_per_hour",
                format!("an arrival rate must be a finite number of jobs per hour > 0, got {jobs_per_hour}"),
            ));
        }
    }
    let ends = match options.durations {
        Durations::Gavel => vec![],
        Durations::Fixed(seconds) => vec![seconds],
        Durations::Uniform { low, high } => vec![low, high],
    };
    let invalid = |message: String| Err(ArbiterError::at(ErrorCode::InvalidNumber, "durations", message));
    if let Some(bad) = ends.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        return invalid(format!("a job duration must be a finite number of seconds > 0, got {bad}"));
    }
    if let Durations::Uniform { low, high } = options.durations {
        if high < low {
            return invalid(format!("a duration range must not end ({high} s) before it starts ({low} s)"));
        }
    }
    Ok(())
}

/// `10^U(1.5, 3)` minutes with probability 0.8, else `10^U(3, 4)` minutes.
fn duration_minutes(rng: &mut Rng) -> f64 {
    let (low, high) = if rng.uniform() < SHORT_JOB_PROBABILITY { (1.5, 3.0) } else { (3.0, 4.0) };
    10f64.powf(low + (high - low) * rng.uniform())
}

/// The value whose cumulative-probability bracket holds `u ∈ [0, 1)`.
fn pick<T: Copy>(table: &[(T, f64)], u: f64) -> T {
    table.iter().find(|&&(_, upper)| u < upper).unwrap_or(&table[table.len() - 1]).0
}

/// xoshiro256** seeded through SplitMix64: small, fast, and the same on every platform.
#[derive(Debug, Clone)]
pub struct Rng {
    state: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut split_mix = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng { state: [split_mix(), split_mix(), split_mix(), split_mix()] }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` (`n ≥ 1`), by rejection so every value is equally likely.
    pub fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let v = self.next_u64();
            if v < zone {
                return (v % n) as usize;
            }
        }
    }

    /// Exponential with the given rate (mean `1/rate`).
    pub fn exponential(&mut self, rate: f64) -> f64 {
        -(1.0 - self.uniform()).ln() / rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_by_cumulative_bracket() {
        assert_eq!(pick(&SCALE_FACTORS, 0.0), 1);
        assert_eq!(pick(&SCALE_FACTORS, 0.6999), 1);
        assert_eq!(pick(&SCALE_FACTORS, 0.7), 2);
        assert_eq!(pick(&SCALE_FACTORS, 0.8), 4);
        assert_eq!(pick(&SCALE_FACTORS, 0.95), 8);
        assert_eq!(pick(&SLO_MULTIPLIERS, 0.5), 2.0);
    }

    #[test]
    fn rng_is_seeded_and_in_range() {
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..8).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(42), draw(42));
        assert_ne!(draw(42), draw(43));
        let mut a = Rng::new(42);
        for _ in 0..10_000 {
            let u = a.uniform();
            assert!((0.0..1.0).contains(&u));
            assert!(a.below(7) < 7);
        }
    }
}
