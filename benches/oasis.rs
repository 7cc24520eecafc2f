//! Wall time of one OASiS admission decision (`Oasis::evaluate`: per slot, every server's price
//! and the greedy placement of workers and parameter servers; the DP over slots for every
//! completion slot; the schedule read back) with 100 slots, 200 servers (150 for workers, 50 for
//! parameter servers, EC2-like as in `simulator::oasis::workload`) and 1,000 admitted jobs
//! holding resources across the horizon; goal < 50 ms. Jobs train 10–40 epochs here (the study's
//! 20–100 would not leave room for 1,000 admitted jobs on 200 servers).
//!
//! The 1,000 jobs are decided one by one from a seeded workload (prices estimated from it) until
//! 1,000 are admitted; the decision timed is that of the next jobs, moved to arrive in slot 0
//! (so it spans all 100 slots), each evaluated against the loaded cluster (the median over them
//! and repeated runs).
//!
//! `cargo bench --bench oasis`. Without `--bench` (as `cargo test --benches` runs it) it loads
//! 50 jobs on 20 slots and times 3 decisions.

use arbiter::scheduling::oasis::{Oasis, PriceParameters};
use arbiter::simulator::oasis::run::validate;
use arbiter::simulator::oasis::workload::{generate, Settings};
use std::time::{Duration, Instant};

const GOAL: Duration = Duration::from_millis(50);

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (slots, running, probes, runs) = if full { (100, 1000, 20, 11) } else { (20, 50, 3, 1) };
    let settings = Settings {
        slots,
        worker_servers: 150,
        ps_servers: 50,
        arrival_fraction: 0.9,
        epochs: (10, 40),
        ..Settings::paper(running * 8)
    };
    let (cluster, specs) = generate(&settings, 11);
    let jobs = validate(&cluster, &specs).expect("the generator makes valid jobs");
    let prices = PriceParameters::estimate(&jobs, &cluster).expect("prices");
    let mut oasis = Oasis::new(cluster, prices).expect("cluster");
    let mut admitted = 0;
    let mut next = 0;
    while admitted < running && next < jobs.len() {
        admitted += usize::from(oasis.decide(&jobs[next]).expect("decision").admitted);
        next += 1;
    }
    assert_eq!(admitted, running, "the workload must admit {running} jobs ({next} decided)");
    let gpus_used: u64 = (0..slots)
        .flat_map(|t| (0..oasis.worker_pool().servers()).map(move |h| (t, h)))
        .map(|(t, h)| oasis.worker_pool().used(t, h)[0] as u64)
        .sum();
    let gpus: u64 = oasis.worker_pool().capacity.iter().map(|c| c[0] as u64).sum::<u64>() * slots as u64;
    // Probes arrive in slot 0, so each decision spans all the slots.
    let probe: Vec<_> = jobs[next..]
        .iter()
        .take(probes)
        .map(|j| {
            let mut spec = j.spec.clone();
            spec.arrival_slot = 0;
            oasis.job(spec, "probe").expect("valid")
        })
        .collect();
    let mut times = Vec::new();
    let mut admits = 0;
    for job in &probe {
        for _ in 0..runs {
            let t = Instant::now();
            let d = std::hint::black_box(oasis.evaluate(std::hint::black_box(job)));
            times.push(t.elapsed());
            admits += usize::from(d.admitted);
        }
    }
    times.sort();
    let median = times[times.len() / 2];
    let worst = *times.last().expect("timed");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{slots} slots, {} worker servers + {} PS servers, {admitted} admitted jobs ({next} decided), GPU-slots in use {:.0}%",
        oasis.worker_pool().servers(),
        oasis.ps_pool().servers(),
        100.0 * gpus_used as f64 / gpus as f64
    );
    println!("{} decisions ({} jobs × {runs}), {} would be admitted\n", times.len(), probe.len(), admits / runs);
    println!("| decision | median (ms) | max (ms) | goal < {} ms |", GOAL.as_millis());
    println!("|---|---:|---:|---|");
    let verdict = if median < GOAL { "met" } else { "missed" };
    println!("| oasis evaluate | {:.2} | {:.2} | {verdict} |", ms(median), ms(worst));
}
