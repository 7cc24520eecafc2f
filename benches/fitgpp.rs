//! Wall time of one FitGpp preemption decision (`scheduling::fitgpp::score::choose` through
//! `FitGpp::choose`: the normalizers over every running BE job, the candidate filter, the smallest
//! score) with 5,000 running BE jobs on 1,000 nodes of (32 cores, 256 GB, 8 GPUs); goal < 1 ms.
//!
//! Every node runs 5 BE jobs (1–3 GPUs, 1–6 cores, 8–48 GB each) and has at most 3 GPUs free, so
//! a TE job of (8 cores, 64 GB, 4 GPUs) fits no node's free resources, and the jobs of 2–3 GPUs
//! on nodes with a free GPU or two are its candidates. Timed in the same run: LRTP's decision
//! (sort by remaining time, preempt until a node fits) and the floor of any decision that reads
//! every job once (summing the 5,000 jobs' sizes).
//!
//! `cargo bench --bench fitgpp` (`scripts/bench-fitgpp` pins it to one core). Without `--bench`
//! (as `cargo test --benches` runs it) it times 3 decisions on 100 nodes.

use arbiter::scheduling::fitgpp::score::{self, RunningBe};
use arbiter::scheduling::fitgpp::{FitGpp, Lrtp, Node, Preemptor, Resources};
use arbiter::workload::generator::Rng;
use std::time::{Duration, Instant};

const GOAL: Duration = Duration::from_millis(1);
const NODE: Resources = Resources::new(32, 256, 8);
const TE: Resources = Resources::new(8, 64, 4);

fn state(nodes: usize, seed: u64) -> (Vec<Node>, Vec<RunningBe>) {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(nodes);
    let mut running = Vec::with_capacity(nodes * 5);
    for n in 0..nodes {
        let mut node = Node::new(NODE);
        let mut demands: Vec<Resources> = (0..5)
            .map(|_| Resources::new(1 + rng.below(6) as u32, 8 + rng.below(41) as u32, 1 + rng.below(3) as u32))
            .collect();
        // At most 8 GPUs in all; 5 jobs of 1+ GPUs leave at most 3 free.
        while demands.iter().map(|d| d.gpus).sum::<u32>() > NODE.gpus {
            let k = demands.iter().position(|d| d.gpus > 1).expect("some job has 2+ GPUs");
            demands[k].gpus -= 1;
        }
        for d in demands {
            assert!(node.commit(&d));
            running.push(RunningBe {
                job: running.len(),
                node: n,
                demand: d,
                grace_period_seconds: 600.0 * rng.uniform(),
                preemptions: u32::from(rng.uniform() < 0.1),
                remaining_seconds: 36_000.0 * rng.uniform(),
            });
        }
        out.push(node);
    }
    (out, running)
}

/// Median wall time of `runs` calls of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (nodes, runs) = if full { (1000, 201) } else { (100, 3) };
    let (nodes, running) = state(nodes, 7);
    assert!(nodes.iter().all(|n| !TE.fits_in(&n.free())), "the TE job must not fit anywhere as it is");
    let candidates = running.iter().filter(|j| score::is_candidate(j, &TE, &nodes, 1)).count();
    let mut fitgpp = FitGpp { lambda: 1.0, max_preemptions: 1, random_fallback: None };
    let mut lrtp = Lrtp { max_preemptions: 1 };
    let choice = fitgpp.choose(&TE, &running, &nodes);
    assert!(choice.is_some(), "some job is a candidate");
    let t_fitgpp = median(runs, || {
        std::hint::black_box(fitgpp.choose(std::hint::black_box(&TE), &running, &nodes));
    });
    let t_lrtp = median(runs, || {
        std::hint::black_box(lrtp.choose(std::hint::black_box(&TE), &running, &nodes));
    });
    let t_floor = median(runs, || {
        let s: f64 = running.iter().map(|j| score::size(j, &nodes)).sum();
        std::hint::black_box(s);
    });
    let lrtp_victims = lrtp.choose(&TE, &running, &nodes).map_or(0, |p| p.victims.len());
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{} running BE jobs on {} nodes, TE job {TE}, {candidates} candidates; median of {runs} decisions\n",
        running.len(),
        nodes.len()
    );
    println!("| decision | time (µs) | × floor | goal < {} ms |", GOAL.as_millis());
    println!("|---|---:|---:|---|");
    let verdict = if t_fitgpp < GOAL { "met" } else { "missed" };
    let ratio = |d: Duration| d.as_secs_f64() / t_floor.as_secs_f64().max(1e-12);
    println!("| fitgpp (1 victim) | {:.1} | {:.1} | {verdict} |", us(t_fitgpp), ratio(t_fitgpp));
    println!("| lrtp ({lrtp_victims} victims) | {:.1} | {:.1} | |", us(t_lrtp), ratio(t_lrtp));
    println!("| floor: every job's size summed | {:.1} | 1.0 | |", us(t_floor));
    println!("\nfitgpp / lrtp: {:.2}", t_fitgpp.as_secs_f64() / t_lrtp.as_secs_f64().max(1e-12));
}
