//! The Gavel-like workload the benchmarks and the load test share: 26 synthetic model types with
//! seeded throughputs on three worker types, and the small seedable generator that draws them.

use arbiter::request::{ClusterSpec, JobSpec, WorkerTypeSpec};
use std::collections::BTreeMap;

/// Worker types, fastest first, as in Gavel's simulated cluster.
pub const TYPES: [&str; 3] = ["v100", "p100", "k80"];
pub const SCALE_FACTORS: [u32; 4] = [1, 2, 4, 8];
pub const MODEL_TYPES: usize = 26;

/// SplitMix64: tiny, seedable, identical on every platform.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    /// Log-uniform in [lo, hi].
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        self.uniform(lo.ln(), hi.ln()).exp()
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize
    }
}

/// Throughputs of one synthetic model type: `[scale factor index][type]`, steps/s (0: cannot run).
pub type ModelThroughput = [[f64; 3]; 4];

/// 26 model types, drawn once from a fixed seed: the same table at every size, as Gavel's
/// measured throughputs are. V100 is 1.2x to 10x faster than K80 depending on the model, P100 in
/// between; scaling out is sub-linear and noisy (so a model's rows at different scale factors are
/// not multiples of each other); some models do not fit K80s at 4+ GPUs.
pub fn model_types() -> Vec<ModelThroughput> {
    let mut rng = Rng(0x6761_7665_6c00_0001);
    (0..MODEL_TYPES)
        .map(|_| {
            let v100 = rng.log_uniform(2.0, 200.0);
            let k80_slowdown = rng.log_uniform(1.2, 10.0);
            let p100_slowdown = k80_slowdown.powf(rng.uniform(0.3, 0.6));
            let efficiency = rng.uniform(0.7, 0.98);
            let k80_small_only = rng.unit() < 0.3;
            let mut thr = [[0.0; 3]; 4];
            for (i, &sf) in SCALE_FACTORS.iter().enumerate() {
                let gain = sf as f64 * efficiency.powf((sf as f64).log2());
                let mut jitter = || rng.uniform(-0.15, 0.15).exp();
                thr[i][0] = v100 * gain * jitter();
                thr[i][1] = v100 / p100_slowdown * gain * jitter();
                thr[i][2] = if k80_small_only && sf >= 4 { 0.0 } else { v100 / k80_slowdown * gain * jitter() };
            }
            thr
        })
        .collect()
}

/// One job's draw: a model uniformly, a scale factor 1/2/4/8 with probability 70/10/15/5%, and
/// weight 5 for one job in five (three draws from `rng`, in that order).
pub struct DrawnJob {
    /// Steps/s on each of `TYPES` at the drawn scale factor (0: cannot run there).
    pub row: [f64; 3],
    pub scale_factor: u32,
    pub weight: f64,
}

pub fn draw_job(rng: &mut Rng, models: &[ModelThroughput]) -> DrawnJob {
    let model = &models[rng.below(MODEL_TYPES)];
    let u = rng.unit();
    let sfi = match u {
        u if u < 0.70 => 0,
        u if u < 0.80 => 1,
        u if u < 0.95 => 2,
        _ => 3,
    };
    let weight = if rng.unit() < 0.2 { 5.0 } else { 1.0 };
    DrawnJob { row: model[sfi], scale_factor: SCALE_FACTORS[sfi], weight }
}

/// The request's `throughput` map of a drawn row: the types it can run on, each value passed
/// through `adjust` (in type order).
pub fn throughput_map(row: [f64; 3], mut adjust: impl FnMut(f64) -> f64) -> BTreeMap<String, Option<f64>> {
    TYPES.iter().zip(row).filter(|&(_, t)| t > 0.0).map(|(name, t)| (name.to_string(), Some(adjust(t)))).collect()
}

/// `n/4` GPUs of each type, four per server, as in Gavel's own benchmark.
pub fn cluster(n: usize) -> ClusterSpec {
    let worker_types = TYPES
        .iter()
        .map(|name| {
            let spec = WorkerTypeSpec { count: (n / 4) as f64, gpus_per_server: Some(4.0), cost_per_hour: None };
            (name.to_string(), spec)
        })
        .collect();
    ClusterSpec { worker_types }
}

/// The benchmarks' `n` jobs (seeded by `n`): model uniform, scale factor 1/2/4/8 with probability
/// 70/10/15/5%, weight 5 for one job in five, `steps_remaining = 10^U(3,6)`, just arrived. With
/// `distinct`, every throughput is multiplied by its own factor in [0.95, 1.05] (as if each job's
/// throughputs were measured separately), drawn from a separate stream so both draw the same jobs.
#[allow(dead_code)]
pub fn gavel_jobs(n: usize, distinct: bool) -> Vec<JobSpec> {
    let models = model_types();
    let mut rng = Rng(0xA11_0CA7E ^ (n as u64).wrapping_mul(0x9E37_79B9));
    let mut noise = Rng(0x0D15_71C7 ^ n as u64);
    (0..n)
        .map(|m| {
            let job = draw_job(&mut rng, &models);
            let steps = 10f64.powf(rng.uniform(3.0, 6.0)).round();
            JobSpec {
                id: format!("j{m}"),
                throughput: throughput_map(job.row, |t| if distinct { t * noise.uniform(0.95, 1.05) } else { t }),
                scale_factor: Some(job.scale_factor as f64),
                weight: Some(job.weight),
                steps_remaining: Some(steps),
                time_elapsed: Some(0.0),
                isolated_time_elapsed: Some(0.0),
                ..JobSpec::default()
            }
        })
        .collect()
}

/// A standard normal draw (Box–Muller, two uniforms from `rng`).
pub fn normal(rng: &mut Rng) -> f64 {
    let u = rng.unit().max(f64::MIN_POSITIVE);
    let v = rng.unit();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// `n` jobs drawn as in `gavel_jobs`, every throughput times its own lognormal factor
/// `exp(σ·N(0,1))`: each job's row is its own, as when every job's throughputs are measured.
#[allow(dead_code)]
pub fn distinct_jobs(n: usize, sigma: f64) -> Vec<JobSpec> {
    let models = model_types();
    let mut rng = Rng(0xD157_1AC7 ^ (n as u64).wrapping_mul(0x9E37_79B9));
    let mut noise = Rng(0x5EE_D0FA_015E ^ n as u64);
    (0..n)
        .map(|m| {
            let job = draw_job(&mut rng, &models);
            let steps = 10f64.powf(rng.uniform(3.0, 6.0)).round();
            JobSpec {
                id: format!("j{m}"),
                throughput: throughput_map(job.row, |t| t * (sigma * normal(&mut noise)).exp()),
                scale_factor: Some(job.scale_factor as f64),
                weight: Some(job.weight),
                steps_remaining: Some(steps),
                time_elapsed: Some(0.0),
                isolated_time_elapsed: Some(0.0),
                ..JobSpec::default()
            }
        })
        .collect()
}
