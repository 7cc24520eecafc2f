//! Packed LAS (max-min fairness with space sharing) on Gavel's measured throughputs: every job
//! drawn from its 26 single-GPU models (weight 1: with some jobs at weight 5 the objective is
//! capped by those jobs' best type alone, whatever the partitioning), n/4 GPUs of each of v100, p100
//! and k80 (as Gavel's own benchmark draws instances), and pairs of jobs offered with Gavel's
//! measured colocated throughputs. Prints, per size, the exact solve and POP partitions at
//! k = 2, 4, 8, 16 side by side: runtime, and quality = partitioned objective / exact objective.
//!
//! `cargo bench --bench packed [-- SIZES]` (default `256,512,1024`); sizes above
//! `ARBITER_ALL_PAIRS_UP_TO` (default 1024) offer each job pairs with `ARBITER_PARTNERS` (default 64) random partners instead
//! of all n−1, and skip the exact solve above `ARBITER_EXACT_UP_TO` (default 4096). Needs Gavel's data
//! (`ARBITER_GAVEL_DATA`, default `../shared/data/gavel`); skips when it is absent.

use arbiter::lp::Backend;
use arbiter::request::{ClusterSpec, ColocationSpec, JobSpec, Request, WorkerTypeSpec};
use arbiter::workload::generator::Rng;
use arbiter::workload::throughputs::ThroughputTable;
use arbiter::Problem;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

const TYPES: [&str; 3] = ["v100", "p100", "k80"];

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A packed LAS request with `n` jobs; all pairs offered when `all_pairs`, else `partners` each.
fn request(table: &ThroughputTable, n: usize, all_pairs: bool, partners: usize, seed: u64) -> Request {
    let mut rng = Rng::new(seed);
    let models = table.job_types(1);
    let count = (n / 4).max(1) as f64;
    let worker_types: BTreeMap<String, WorkerTypeSpec> = TYPES
        .iter()
        .map(|t| (t.to_string(), WorkerTypeSpec { count, gpus_per_server: Some(4.0), cost_per_hour: None }))
        .collect();
    let drawn: Vec<usize> = (0..n).map(|_| rng.below(models.len())).collect();
    let jobs: Vec<JobSpec> = drawn
        .iter()
        .enumerate()
        .map(|(m, &k)| JobSpec {
            id: format!("j{m}"),
            throughput: TYPES.iter().map(|t| (t.to_string(), table.solo(t, &models[k], 1))).collect(),
            ..JobSpec::default()
        })
        .collect();
    let pair = |a: usize, b: usize| ColocationSpec {
        jobs: [format!("j{a}"), format!("j{b}")],
        throughput: TYPES
            .iter()
            .map(|t| {
                (t.to_string(), table.colocated(t, (&models[drawn[a]], 1), (&models[drawn[b]], 1)).unwrap_or([0.0; 2]))
            })
            .collect(),
    };
    let mut colocations = Vec::new();
    if all_pairs {
        for a in 0..n {
            for b in a + 1..n {
                colocations.push(pair(a, b));
            }
        }
    } else {
        let mut seen = std::collections::HashSet::new();
        for a in 0..n {
            for _ in 0..partners / 2 {
                let b = rng.below(n);
                let key = (a.min(b), a.max(b));
                if a != b && seen.insert(key) {
                    colocations.push(pair(key.0, key.1));
                }
            }
        }
    }
    Request {
        policy: "max_min_fairness".into(),
        space_sharing: Some(true),
        cluster: ClusterSpec { worker_types },
        jobs,
        colocations: Some(colocations),
        ..Request::default()
    }
}

fn solve(problem: &Problem) -> (f64, f64) {
    let start = Instant::now();
    let response = arbiter::solve(problem, Backend::default()).expect("packed LAS solves");
    (start.elapsed().as_secs_f64(), response.objective.unwrap_or(f64::NAN))
}

fn main() {
    let dir = std::env::var("ARBITER_GAVEL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/gavel"));
    let path = dir.join("simulation_throughputs.json");
    let Ok(table) = ThroughputTable::from_path(&path) else {
        println!("skipped: Gavel's throughputs are not at {} (set ARBITER_GAVEL_DATA)", path.display());
        return;
    };
    // `cargo test` runs this once without `--bench`: one small size, to show it works.
    let test_mode = !std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(|a| a.split(',').filter_map(|s| s.parse().ok()).collect())
        .unwrap_or_else(|| if test_mode { vec![64] } else { vec![256, 512, 1024] });
    let all_pairs_up_to = env_usize("ARBITER_ALL_PAIRS_UP_TO", 1024);
    let exact_up_to = env_usize("ARBITER_EXACT_UP_TO", 4096);
    println!(
        "{:>6} {:>9} {:>6} {:>5} {:>10} {:>10} {:>8}",
        "jobs", "pairs", "kept", "k", "seconds", "objective", "quality"
    );
    for n in sizes {
        let all = n <= all_pairs_up_to;
        let partners = env_usize("ARBITER_PARTNERS", 64);
        let mut req = request(&table, n, all, partners, 0x5eed ^ n as u64);
        let offered = req.colocations.as_ref().map_or(0, |c| c.len());
        let mut exact = None;
        for k in [1usize, 2, 4, 8, 16] {
            if k == 1 && n > exact_up_to {
                continue;
            }
            req.partitions = Some(k as f64);
            let problem = Problem::from_request(&req).expect("a valid request");
            let kept = arbiter::space_sharing::count_kept(&problem);
            let (seconds, objective) = solve(&problem);
            if k == 1 {
                exact = Some(objective);
            }
            let quality = exact.map_or("-".to_string(), |e| format!("{:.4}", objective / e));
            println!("{n:>6} {offered:>9} {kept:>6} {k:>5} {seconds:>10.3} {objective:>10.5} {quality:>8}");
        }
    }
}
