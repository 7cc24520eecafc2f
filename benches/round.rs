//! Time of one `next_round()` of the mechanism: 10,000 jobs on 10,000 GPUs (three worker types,
//! servers of 4, Gavel's scale factors), the allocation given rather than solved. `steady` is a
//! session warmed up for a few rounds (leases to renew, deficits spread out); `after_reset` is the
//! first round after an allocation is installed (nothing received yet, nothing to renew). The
//! `pairs` cases add space sharing: about half the jobs are colocated in pairs of equal scale
//! factor (2,483 pairs of 4,966 jobs), each paired job giving half its time to its pair, so rounds
//! choose among 12,483 job combinations and place pairs.
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
/// With `pairs`, about half the jobs are paired with the previous such job of their scale factor;
/// a pair gets `Y = (x_a + x_b) / 4` and each tenant keeps half of its row alone, so each job's time
/// still sums to 1 before the columns are scaled.
fn session(warm_up: usize, pairs: bool) -> Session {
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
        let throughput = throughput_of(m);
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
    let mut colocated: Vec<(usize, usize)> = Vec::new();
    if pairs {
        let mut waiting: [Option<usize>; 9] = [None; 9];
        for (m, &sf) in scale_factors.iter().enumerate() {
            if rng.unit() < 0.5 {
                continue;
            }
            match waiting[sf as usize].take() {
                Some(a) => colocated.push((a, m)),
                None => waiting[sf as usize] = Some(m),
            }
        }
    }
    let mut y = Matrix::zeros(colocated.len(), GPUS.len());
    for (k, &(a, b)) in colocated.iter().enumerate() {
        let (ta, tb) = (throughput_of(a), throughput_of(b));
        let paired: Vec<[f64; 2]> = ta.iter().zip(&tb).map(|(&p, &q)| [0.7 * p, 0.6 * q]).collect();
        session.add_colocation(&format!("j{a}"), &format!("j{b}"), &paired).expect("a valid colocation");
        for w in 0..GPUS.len() {
            y.set(k, w, (x.get(a, w) + x.get(b, w)) / 4.0);
        }
        for m in [a, b] {
            x.row_mut(m).iter_mut().for_each(|v| *v /= 2.0);
        }
    }
    for (w, &count) in GPUS.iter().enumerate() {
        let alone: f64 = (0..JOBS).map(|m| scale_factors[m] as f64 * x.get(m, w)).sum();
        let paired: f64 = colocated.iter().enumerate().map(|(k, &(a, _))| scale_factors[a] as f64 * y.get(k, w)).sum();
        let scale = count as f64 / (alone + paired);
        for m in 0..JOBS {
            x.set(m, w, x.get(m, w) * scale);
        }
        for k in 0..colocated.len() {
            y.set(k, w, y.get(k, w) * scale);
        }
    }
    session.set_colocated_allocation(&x, &y).expect("a valid allocation");
    for _ in 0..warm_up {
        session.next_round().expect("a round");
    }
    session
}

/// Steps/s of job `m` alone on each type.
fn throughput_of(_m: usize) -> Vec<f64> {
    (0..GPUS.len()).map(|w| 1.0 + (2 - w) as f64).collect()
}

fn main() {
    let mut c = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(5)).configure_from_args();
    let cases = [
        ("10000_jobs_10000_gpus/steady", WARM_UP_ROUNDS, false),
        ("10000_jobs_10000_gpus/after_reset", 0, false),
        ("10000_jobs_10000_gpus_pairs/steady", WARM_UP_ROUNDS, true),
        ("10000_jobs_10000_gpus_pairs/after_reset", 0, true),
    ];
    for (name, warm_up, pairs) in cases {
        let base = session(warm_up, pairs);
        c.bench_function(&format!("next_round/{name}"), |b| {
            b.iter_batched(|| base.clone(), |mut s| black_box(s.next_round().expect("a round")), BatchSize::LargeInput)
        });
    }
    c.final_summary();
}
