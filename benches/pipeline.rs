//! Wall time of one round of the scheduling pipeline (`arbiter::scheduling::Pipeline::next_round`:
//! admission → list policy → placement → preemption) for 10,000 jobs on 10,000 V100 GPUs (4 per
//! server), under every list policy with consolidated placement and under LAS with every
//! placement; goal < 10 ms a round.
//!
//! The state is a steady one: jobs with Gavel's multi-GPU mix (scale factors 1/2/4/8 at
//! 70/10/15/5%, about 19,000 GPUs demanded), every round charged 5 minutes of service, and 1% of
//! the jobs replaced by new arrivals between rounds (outside the timing), so every round
//! preempts and places. The baseline, timed in the same run, is sorting the 10,000 jobs' keys
//! alone: the floor of any list policy's round.
//!
//! Then the synthesizer's check (`scheduling::synthesizer`): Blox's nine compositions forked from
//! a 1,000-job state on 128 GPUs and played 24 rounds each, in parallel on every core (goal < 2 s
//! on 2 cores), against the same nine played one after another on one thread in the same run.
//!
//! Then one LTGF scheduling interval (Astraea's two phases) with 10,000 pending jobs of 100 tenants
//! on 800 GPUs (goal < 20 ms).
//!
//! `cargo bench --bench pipeline`. Without `--bench` (as `cargo test --benches` runs it) each case
//! runs 3 rounds on 1,000 jobs and GPUs, and the synthesizer's check on 100 jobs.

use arbiter::problem::WorkerType;
use arbiter::scheduling::simulation::play_round;
use arbiter::scheduling::state::P3_8XLARGE_BANDWIDTH;
use arbiter::scheduling::synthesizer::{blox_candidates, Metric, Synthesizer};
use arbiter::scheduling::{ClusterState, Composition, JobState, Pipeline};
use arbiter::workload::generator::Rng;
use std::time::{Duration, Instant};

const GOAL: Duration = Duration::from_millis(10);
const ROUND_SECONDS: f64 = 300.0;

fn job(rng: &mut Rng, id: usize, now: f64) -> JobState {
    let u = rng.uniform();
    let sf = if u < 0.7 {
        1
    } else if u < 0.8 {
        2
    } else if u < 0.95 {
        4
    } else {
        8
    };
    let steps = 10f64.powf(3.0 + 3.0 * rng.uniform());
    JobState::new(id.to_string(), now, sf, vec![1.0 + rng.uniform()], steps)
}

/// Median seconds of `rounds` rounds under `composition` on `n` jobs and `n` GPUs.
fn time(composition: &Composition, n: usize, rounds: usize) -> Duration {
    let gpus = WorkerType { name: "v100".into(), count: n as f64, gpus_per_server: 4, cost_per_hour: None };
    // Every server a p3.8xlarge, so bandwidth-aware placement has its table.
    let cluster = ClusterState::new(&[gpus]).with_bandwidth(4, &P3_8XLARGE_BANDWIDTH);
    let mut p = Pipeline::new(composition, cluster, 0).expect("a valid composition");
    let mut rng = Rng::new(42);
    for i in 0..n {
        p.submit(job(&mut rng, i, 0.0)).expect("fits");
    }
    let mut times = Vec::new();
    for r in 0..rounds + 2 {
        let t = Instant::now();
        let d = p.next_round();
        let elapsed = t.elapsed();
        if r >= 2 {
            times.push(elapsed); // the first two rounds fill an empty cluster
        }
        let ran: Vec<(usize, f64)> = d.running().map(|j| (j, ROUND_SECONDS)).collect();
        p.account(&d, &ran, ROUND_SECONDS);
        let now = p.now() + ROUND_SECONDS;
        p.advance_to(now);
        for _ in 0..n / 100 {
            let active = p.active();
            let j = active[rng.below(active.len())];
            p.complete(j, now);
            let id = p.jobs.len();
            p.submit(job(&mut rng, id, now)).expect("fits");
        }
    }
    times.sort();
    times[times.len() / 2]
}

fn sort_baseline(n: usize, rounds: usize) -> Duration {
    let mut rng = Rng::new(7);
    let keys: Vec<(f64, f64, usize)> = (0..n).map(|i| (rng.uniform(), rng.uniform(), i)).collect();
    let mut times = Vec::new();
    for _ in 0..rounds {
        let mut k = keys.clone();
        let t = Instant::now();
        k.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
        times.push(t.elapsed());
        std::hint::black_box(&k);
    }
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (n, rounds) = if full { (10_000, 21) } else { (1_000, 3) };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let baseline = sort_baseline(n, rounds);
    println!(
        "{n} jobs on {n} GPUs (4 per server), median of {rounds} rounds; baseline: sorting {n} keys, {:.3} ms\n",
        ms(baseline)
    );
    println!("| composition | round (ms) | × sort | goal < {} ms |", GOAL.as_millis());
    println!("|---|---:|---:|---|");
    let mut cases: Vec<(&str, &str, &str)> = ["fifo", "fifo_priority", "las", "tiresias", "srtf", "optimus", "themis"]
        .iter()
        .map(|s| ("accept_all", *s, "consolidated"))
        .collect();
    for placement in ["first_free", "random=1", "profile_guided", "skew", "bandwidth"] {
        cases.push(("accept_all", "las", placement));
    }
    cases.push(("accept_x=1.2", "las", "consolidated"));
    let mut worst = Duration::ZERO;
    for (admission, scheduling, placement) in cases {
        let c = Composition::from_flags(None, Some(admission), Some(scheduling), Some(placement), Some("lease"))
            .expect("a valid composition");
        let t = time(&c, n, rounds);
        worst = worst.max(t);
        let verdict = if t < GOAL { "met" } else { "missed" };
        println!("| {} | {:.2} | {:.1} | {} |", c.name(), ms(t), t.as_secs_f64() / baseline.as_secs_f64(), verdict);
    }
    println!("\nslowest round: {:.2} ms", ms(worst));
    ltgf_interval(if full { (10_000, 100, 800) } else { (1_000, 10, 80) }, rounds);
    synthesizer_check(if full { 1000 } else { 100 });
}

/// One LTGF scheduling interval (Astraea): `jobs` pending over `tenants` tenants of weights
/// 1/2/4/8 on `gpus` GPUs (8 per server), 900 s lease terms, 10 s intervals, 1% of the jobs
/// replaced between intervals; goal < 20 ms at 10,000 jobs, 100 tenants, 800 GPUs.
fn ltgf_interval((jobs, tenants, gpus): (usize, usize, usize), rounds: usize) {
    const INTERVAL: f64 = 10.0;
    let c = Composition::from_flags(None, None, Some("ltgf"), None, Some("lease_term=900")).expect("valid");
    let cluster =
        ClusterState::new(&[WorkerType { name: "v100".into(), count: gpus as f64, gpus_per_server: 8, cost_per_hour: None }]);
    let mut p = Pipeline::new(&c, cluster, 0).expect("a valid composition");
    let names: Vec<(String, f64)> = (0..tenants).map(|t| (format!("t{t}"), (1u32 << (t % 4)) as f64)).collect();
    p.set_tenants(&names).expect("valid tenants");
    let mut rng = Rng::new(11);
    let submit = |p: &mut Pipeline, rng: &mut Rng, now: f64| {
        let mut j = job(rng, p.jobs.len(), now);
        j.tenant = rng.below(tenants);
        p.submit(j).expect("fits");
    };
    for _ in 0..jobs {
        submit(&mut p, &mut rng, 0.0);
    }
    let mut times = Vec::new();
    for r in 0..rounds + 2 {
        // The interval's decision and the update of every job's and tenant's integrals.
        let t = Instant::now();
        let d = p.next_round();
        let ran: Vec<(usize, f64)> = d.running().map(|j| (j, INTERVAL)).collect();
        p.account(&d, &ran, INTERVAL);
        if r >= 2 {
            times.push(t.elapsed());
        }
        let now = p.now() + INTERVAL;
        p.advance_to(now);
        for _ in 0..jobs / 100 {
            let active = p.active();
            let j = active[rng.below(active.len())];
            p.complete(j, now);
            submit(&mut p, &mut rng, now);
        }
    }
    times.sort();
    let t = times[times.len() / 2];
    println!(
        "\nLTGF interval, {jobs} jobs of {tenants} tenants on {gpus} GPUs, median of {rounds}: {:.2} ms; goal < 20 ms: {}",
        t.as_secs_f64() * 1e3,
        if t < Duration::from_millis(20) { "met" } else { "missed" }
    );
}

/// Times one synthesizer check on `n` jobs (128 GPUs, 12 rounds played first).
fn synthesizer_check(n: usize) {
    let gpus = WorkerType { name: "v100".into(), count: 128.0, gpus_per_server: 4, cost_per_hour: None };
    let candidates = blox_candidates();
    let mut p = Pipeline::new(&candidates[0], ClusterState::new(&[gpus]), 0).expect("a valid composition");
    let mut rng = Rng::new(9);
    for i in 0..n {
        p.submit(job(&mut rng, i, 0.0)).expect("fits");
    }
    for _ in 0..12 {
        play_round(&mut p, ROUND_SECONDS);
    }
    let parallel = Synthesizer::new(candidates.clone(), 12, 24, Metric::Jct).expect("valid");
    let time = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
        let mut times = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let forecasts = pool.install(|| parallel.forecast(&p, ROUND_SECONDS)).expect("forecasts");
            times.push(t.elapsed());
            std::hint::black_box(forecasts);
        }
        times.sort();
        times[1]
    };
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let (one, all) = (time(1), time(cores));
    println!(
        "\nsynthesizer check, 9 compositions × 24 rounds from {} jobs on 128 GPUs: {:.1} ms on {cores} threads, \
         {:.1} ms on 1 thread ({:.2}×); goal < 2 s: {}",
        p.active().len() + p.waiting().len(),
        all.as_secs_f64() * 1e3,
        one.as_secs_f64() * 1e3,
        one.as_secs_f64() / all.as_secs_f64(),
        if all < Duration::from_secs(2) { "met" } else { "missed" }
    );
}
