//! A seeded multi-tenant trace for long-term fairness (Astraea's setting; its Venus and Philly
//! traces are not available): tenants with skewed weights and skewed demands, bursty arrivals,
//! most jobs short, a few very long.
//!
//! - Tenant `t` of `T` weighs 8, 4, 2 or 1 by quarter (`t < T/4`: 8, …): quotas skewed like
//!   the demands below, as virtual clusters sized to their tenants' usage.
//! - Arrivals come in bursts: bursts form a Poisson process at `jobs_per_hour / 4` per hour; a
//!   burst is `1 + Geometric` jobs (mean 4) of one tenant, spread uniformly over 5 minutes. The
//!   tenant of a burst is drawn with probability `∝ 1/(t+1)` (Zipf): tenant 0 submits most.
//! - Durations alone on the reference type: with p = 0.70 `10^U(0,1)` minutes (1–10 min), with
//!   p = 0.25 `10^U(1,2.5)` (10 min–5.3 h), else `10^U(2.5,3.5)` (5.3 h–2.2 days): mean about
//!   87 minutes, most jobs within one 15-minute lease, as in Astraea's traces.
//! - Scale factors 1/2/4/8 with p = 0.55/0.15/0.15/0.15; the model uniformly among the table's
//!   job types at that scale factor.
//!
//! A job averages about 3.8 GPU-hours, so 800 GPUs are fully offered at about 210 jobs/hour.
//! A trace has at most [`MAX_TENANTS`] tenants.

use super::generator::Rng;
use super::throughputs::ThroughputTable;
use super::{Trace, TraceJob};
use crate::error::{ArbiterError, ErrorCode, Result};

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantOptions {
    pub tenants: usize,
    pub num_jobs: usize,
    pub jobs_per_hour: f64,
    pub seed: u64,
    /// The worker type whose throughput turns a duration into steps.
    pub reference_worker_type: String,
}

/// Most tenants a trace is generated for: every job is looked up among the tenants, and
/// Astraea's clusters have tens of them.
pub const MAX_TENANTS: usize = 1000;

const MEAN_BURST: f64 = 4.0;
const BURST_SPREAD_SECONDS: f64 = 300.0;
const DURATIONS: [(f64, f64, f64); 3] = [(0.70, 0.0, 1.0), (0.95, 1.0, 2.5), (1.0, 2.5, 3.5)];
const SCALE_FACTORS: [(u32, f64); 4] = [(1, 0.55), (2, 0.70), (4, 0.85), (8, 1.0)];

/// Tenant `t`'s weight of `tenants`: 8, 4, 2 or 1 by quarter, so quotas follow the Zipf demand
/// (a tenant's virtual cluster sized to its usage, as in Astraea's Venus clusters), still skewed.
pub fn weight(t: usize, tenants: usize) -> f64 {
    let quarter = (4 * t / tenants.max(1)).min(3);
    (8 >> quarter) as f64
}

/// Generates the trace; the same table and options always give the same trace.
pub fn generate(table: &ThroughputTable, options: &TenantOptions) -> Result<Trace> {
    if options.tenants > MAX_TENANTS {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "tenants",
            format!("a multi-tenant trace has at most {MAX_TENANTS} tenants, got {}", options.tenants),
        ));
    }
    if options.tenants == 0 || !(options.jobs_per_hour.is_finite() && options.jobs_per_hour > 0.0) {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "tenants",
            format!(
                "a multi-tenant trace needs at least one tenant and a load > 0 jobs/hour, got {} and {}",
                options.tenants, options.jobs_per_hour
            ),
        ));
    }
    let names: Vec<String> = (0..options.tenants).map(|t| format!("tenant{t:02}")).collect();
    let zipf: Vec<f64> = (0..options.tenants).map(|t| 1.0 / (t + 1) as f64).collect();
    let zipf_total: f64 = zipf.iter().sum();
    let mut rng = Rng::new(options.seed ^ 0x7e4a_4e75);
    let mut jobs = Vec::with_capacity(options.num_jobs);
    let mut burst_start = 0.0;
    while jobs.len() < options.num_jobs {
        burst_start += rng.exponential(options.jobs_per_hour / MEAN_BURST / 3600.0);
        let mut u = rng.uniform() * zipf_total;
        let tenant = zipf.iter().position(|&z| {
            u -= z;
            u < 0.0
        });
        let tenant = tenant.unwrap_or(options.tenants - 1);
        // 1 + Geometric(p = 1/MEAN_BURST) jobs.
        let mut size = 1;
        while rng.uniform() >= 1.0 / MEAN_BURST {
            size += 1;
        }
        for _ in 0..size.min(options.num_jobs - jobs.len()) {
            let u = rng.uniform();
            let &(_, low, high) = DURATIONS.iter().find(|d| u < d.0).unwrap_or(&DURATIONS[2]);
            let minutes = 10f64.powf(low + (high - low) * rng.uniform());
            let u = rng.uniform();
            let scale_factor = SCALE_FACTORS.iter().find(|s| u < s.1).map_or(1, |s| s.0);
            let types = table.job_types(scale_factor);
            if types.is_empty() {
                return Err(ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "throughputs",
                    format!("the throughput table has no job type at scale factor {scale_factor}"),
                ));
            }
            let job_type = types[rng.below(types.len())].clone();
            let rate = table.solo(&options.reference_worker_type, &job_type, scale_factor).unwrap_or(0.0);
            if rate <= 0.0 {
                return Err(ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "throughputs",
                    format!(
                        "{job_type} has no throughput on {} at scale factor {scale_factor}",
                        options.reference_worker_type
                    ),
                ));
            }
            jobs.push(TraceJob {
                total_steps: (minutes * 60.0 * rate).round().max(1.0),
                job_type,
                scale_factor,
                weight: 1.0,
                slo_seconds: None,
                arrival_seconds: burst_start + rng.uniform() * BURST_SPREAD_SECONDS,
                tenant: Some(names[tenant].clone()),
            });
        }
    }
    jobs.sort_by(|a, b| a.arrival_seconds.total_cmp(&b.arrival_seconds));
    let tenants = names.iter().enumerate().map(|(t, n)| (n.clone(), weight(t, options.tenants))).collect();
    Ok(Trace { jobs, tenants, lines: Vec::new() })
}
