//! OASiS's simulated workloads (the paper's §V-A, with the ranges its text lost chosen and
//! written down here and in `docs/oasis.md`): EC2-like servers in two pools, jobs of the three
//! utility classes arriving over the horizon. Seeded: one seed, one workload, on any platform.

use crate::scheduling::oasis::{ClusterSpec, JobSpec, ResourceVector, Utility};
use crate::workload::generator::Rng;
use serde::Serialize;

/// What a workload is drawn from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    pub slots: usize,
    pub slot_seconds: f64,
    pub worker_servers: usize,
    pub ps_servers: usize,
    pub jobs: usize,
    /// Jobs arrive uniformly over the first `arrival_fraction` of the horizon.
    pub arrival_fraction: f64,
    /// Shares of time-insensitive, time-sensitive and time-critical jobs.
    pub classes: [f64; 3],
    /// Priority `γ1` is drawn uniformly from this range.
    pub priority: (f64, f64),
    /// Epochs `E` are drawn uniformly from this range (smaller for instances the MILP solves).
    pub epochs: (u32, u32),
    /// Chunks `N`.
    pub chunks: (u32, u32),
}

impl Settings {
    /// The simulation study's defaults (`docs/oasis.md`): 50 one-hour slots, 20 worker servers
    /// (p2.8xlarge or g3.16xlarge), 10 parameter-server servers (c4.8xlarge or c5n.9xlarge),
    /// 10% / 55% / 35% insensitive / sensitive / critical jobs.
    pub fn paper(jobs: usize) -> Settings {
        Settings {
            slots: 50,
            slot_seconds: 3600.0,
            worker_servers: 20,
            ps_servers: 10,
            jobs,
            arrival_fraction: 0.8,
            classes: [0.1, 0.55, 0.35],
            priority: (1.0, 100.0),
            epochs: (20, 100),
            chunks: (5, 50),
        }
    }

    /// An instance small enough for the offline MILP: 8 slots, 2 + 1 servers, short jobs.
    pub fn small(jobs: usize) -> Settings {
        Settings {
            slots: 8,
            worker_servers: 2,
            ps_servers: 1,
            epochs: (2, 10),
            chunks: (2, 12),
            ..Settings::paper(jobs)
        }
    }
}

fn between(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.uniform()
}

fn whole(rng: &mut Rng, lo: u32, hi: u32) -> u32 {
    lo + rng.below((hi - lo + 1) as usize) as u32
}

/// Worker servers: p2.8xlarge (8 GPUs, 32 vCPUs, 488 GB, 10 Gbit/s) or g3.16xlarge (4 GPUs,
/// 64 vCPUs, 488 GB, 25 Gbit/s); PS servers: c4.8xlarge (36 vCPUs, 60 GB, 10 Gbit/s) or
/// c5n.9xlarge (36 vCPUs, 96 GB, 50 Gbit/s). Half each, at random.
pub fn cluster(settings: &Settings, rng: &mut Rng) -> ClusterSpec {
    let pick = |rng: &mut Rng, a: ResourceVector, b: ResourceVector| if rng.below(2) == 0 { a } else { b };
    ClusterSpec {
        slot_seconds: settings.slot_seconds,
        slots: settings.slots,
        worker_servers: (0..settings.worker_servers)
            .map(|_| pick(rng, ResourceVector::new(8, 32, 488, 10_000), ResourceVector::new(4, 64, 488, 25_000)))
            .collect(),
        ps_servers: (0..settings.ps_servers)
            .map(|_| pick(rng, ResourceVector::new(0, 36, 60, 10_000), ResourceVector::new(0, 36, 96, 50_000)))
            .collect(),
    }
}

/// The three utility classes (the paper's sigmoid with `γ2 = 0`, `γ2 ∈ [0.01, 1]`,
/// `γ2 ∈ [4, 6]`); the target `γ3` is the job's shortest duration plus 0 to 5 slots.
pub fn utility(settings: &Settings, class: usize, shortest: usize, rng: &mut Rng) -> Utility {
    let priority = between(rng, settings.priority.0, settings.priority.1);
    let target = shortest as f64 + whole(rng, 0, 5) as f64;
    match class {
        0 => Utility::Constant { value: priority },
        1 => Utility::Sigmoid { priority, decay: between(rng, 0.01, 1.0), target },
        _ => Utility::Sigmoid { priority, decay: between(rng, 4.0, 6.0), target },
    }
}

/// Which class each job is in, by `settings.classes`.
pub fn class_of(settings: &Settings, rng: &mut Rng) -> usize {
    let u = rng.uniform() * settings.classes.iter().sum::<f64>();
    if u < settings.classes[0] {
        0
    } else if u < settings.classes[0] + settings.classes[1] {
        1
    } else {
        2
    }
}

/// One job (its utility still to be set from its shortest duration): 1–4 GPUs, 1–10 vCPUs,
/// 2–32 GB and 1–2 Gbit/s per worker; 1–10 vCPUs, 2–32 GB and 2–10 Gbit/s per parameter server;
/// 10–50 mini-batches per chunk of 0.1–1 s; gradients of 30–575 MB (the sizes of [6]).
fn job(settings: &Settings, index: usize, rng: &mut Rng) -> JobSpec {
    let arrival_span = ((settings.slots as f64 * settings.arrival_fraction).ceil() as usize).clamp(1, settings.slots);
    let worker_bw = whole(rng, 1_000, 2_000);
    JobSpec {
        id: format!("job{index}"),
        arrival_slot: rng.below(arrival_span),
        epochs: whole(rng, settings.epochs.0, settings.epochs.1),
        chunks: whole(rng, settings.chunks.0, settings.chunks.1),
        minibatches_per_chunk: whole(rng, 10, 50),
        minibatch_seconds: between(rng, 0.1, 1.0),
        gradient_mb: between(rng, 30.0, 575.0),
        worker: ResourceVector::new(whole(rng, 1, 4), whole(rng, 1, 10), whole(rng, 2, 32), worker_bw),
        parameter_server: ResourceVector::new(
            0,
            whole(rng, 1, 10),
            whole(rng, 2, 32),
            whole(rng, 2_000, 10_000).max(worker_bw),
        ),
        utility: Utility::Constant { value: 0.0 },
    }
}

/// A cluster and `settings.jobs` jobs in arrival order (ties by index).
pub fn generate(settings: &Settings, seed: u64) -> (ClusterSpec, Vec<JobSpec>) {
    let mut rng = Rng::new(seed);
    let cluster = cluster(settings, &mut rng);
    let mut jobs: Vec<JobSpec> = (0..settings.jobs)
        .map(|i| {
            let mut spec = job(settings, i, &mut rng);
            let class = class_of(settings, &mut rng);
            // The shortest duration needs the validated job; one that cannot run gets a target of 1.
            let shortest =
                crate::scheduling::oasis::Job::new(spec.clone(), settings.slot_seconds, settings.slots, "job")
                    .map_or(1, |j| j.shortest_duration());
            spec.utility = utility(settings, class, shortest, &mut rng);
            spec
        })
        .collect();
    jobs.sort_by_key(|j| j.arrival_slot);
    (cluster, jobs)
}
