//! Time of one `next_round()` of the mechanism: 10,000 jobs on 10,000 GPUs (three worker types,
//! servers of 4, Gavel's scale factors), the allocation given rather than solved. `steady` is a
//! session warmed up for a few rounds (leases to renew, deficits spread out); `after_reset` is the
//! first round after an allocation is installed (nothing received yet, nothing to renew).
//!
//! `cargo bench --bench round`; the goal is under 10 ms per round.

use arbiter::mechanism::{Config, Session};
use arbiter::problem::{Job, Matrix, WorkerType};
use arbiter::PolicyKind;
use criterion::{black_box, BatchSize, Criterion};
use std::time::Duration;

const JOBS: usize = 10_000;
const GPUS: [u32; 3] = [3334, 3333, 3333];
const WARM_UP_ROUNDS: usize = 5;

/// SplitMix64: tiny, seedable, identical on every platform.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A session of `JOBS` jobs with an allocation that fills every type: random rows summing to 1,
/// each type's column scaled so the GPUs it asks for match the type's count; then `warm_up` rounds.
fn session(warm_up: usize) -> Session {
    let mut rng = Rng(7);
    let types: Vec<WorkerType> = ["v100", "p100", "k80"]
        .iter()
        .zip(GPUS)
        .map(|(name, count)| WorkerType {
            name: name.to_string(),
            count: count as f64,
            gpus_per_server: 4,
            cost_per_hour: None,
        })
        .collect();
    let mut session =
        Session::new(PolicyKind::MaxMinFairness, true, types, Config::default()).expect("a valid cluster");
    let mut x = Matrix::zeros(JOBS, GPUS.len());
    let mut scale_factors = Vec::with_capacity(JOBS);
    for m in 0..JOBS {
        let u = rng.unit();
        let sf = if u < 0.7 {
            1
        } else if u < 0.8 {
            2
        } else if u < 0.95 {
            4
        } else {
            8
        };
        scale_factors.push(sf);
        let throughput: Vec<f64> = (0..GPUS.len()).map(|w| 1.0 + (2 - w) as f64).collect();
        let job = Job {
            id: format!("j{m}"),
            scale_factor: sf,
            weight: 1.0,
            steps_remaining: Some(1e6),
            time_elapsed: 0.0,
            isolated_time_elapsed: 0.0,
            slo_seconds: None,
            entity: None,
            arrival: m as f64,
        };
        session.add_job(job, &throughput).expect("a valid job");
        let row: Vec<f64> = (0..GPUS.len()).map(|_| rng.unit()).collect();
        let sum: f64 = row.iter().sum();
        for (w, v) in row.into_iter().enumerate() {
            x.set(m, w, v / sum);
        }
    }
    for (w, &count) in GPUS.iter().enumerate() {
        let asked: f64 = (0..JOBS).map(|m| scale_factors[m] as f64 * x.get(m, w)).sum();
        for m in 0..JOBS {
            x.set(m, w, x.get(m, w) * count as f64 / asked);
        }
    }
    session.set_allocation(&x).expect("a valid allocation");
    for _ in 0..warm_up {
        session.next_round().expect("a round");
    }
    session
}

fn main() {
    let mut c = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(5)).configure_from_args();
    for (name, warm_up) in [("steady", WARM_UP_ROUNDS), ("after_reset", 0)] {
        let base = session(warm_up);
        c.bench_function(&format!("next_round/10000_jobs_10000_gpus/{name}"), |b| {
            b.iter_batched(|| base.clone(), |mut s| black_box(s.next_round().expect("a round")), BatchSize::LargeInput)
        });
    }
    c.final_summary();
}
