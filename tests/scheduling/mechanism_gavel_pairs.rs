//! Space sharing end to end on Gavel's measured throughputs: sessions whose jobs are Gavel's job
//! types, colocated at the table's paired throughputs, solved by a real policy, run for many
//! rounds. Needs Gavel's data (`ARBITER_GAVEL_DATA`, default `../shared/data/gavel`); skipped
//! with a note when it is absent.

use crate::mechanism_support::*;
use arbiter::mechanism::{Config, Session, Tenants};
use arbiter::workload::throughputs::ThroughputTable;
use arbiter::PolicyKind;
use std::path::PathBuf;

fn gavel_table() -> Option<ThroughputTable> {
    let dir = std::env::var("ARBITER_GAVEL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/gavel"));
    let path = dir.join("simulation_throughputs.json");
    if !path.is_file() {
        eprintln!("note: Gavel's data not found at {} (set ARBITER_GAVEL_DATA); skipping", dir.display());
        return None;
    }
    Some(ThroughputTable::from_path(&path).expect("Gavel's throughput file reads"))
}

const TYPES: [&str; 3] = ["v100", "p100", "k80"];

/// `jobs` single-GPU jobs cycling through Gavel's job types on 2 GPUs of each type, every pair
/// colocated at the table's paired throughputs. Returns the session and each job's type.
fn session(table: &ThroughputTable, policy: PolicyKind, jobs: usize) -> (Session, Vec<String>) {
    let types = TYPES.iter().map(|name| worker_type(name, 2, 2)).collect();
    let mut s = Session::new(policy, true, types, Config::default()).expect("a valid cluster");
    let names: Vec<String> = TYPES.iter().map(|t| t.to_string()).collect();
    let job_types = table.job_types(1);
    let mut kinds = Vec::with_capacity(jobs);
    for m in 0..jobs {
        let kind = job_types[(m * 7) % job_types.len()].clone();
        let row = table.row(&names, &kind, 1).expect("the table's types");
        s.add_job(job(&format!("j{m}"), 1), &row).expect("a valid job");
        kinds.push(kind);
    }
    for a in 0..jobs {
        for b in a + 1..jobs {
            let paired: Vec<[f64; 2]> = TYPES
                .iter()
                .map(|w| table.colocated(w, (&kinds[a], 1), (&kinds[b], 1)).unwrap_or([0.0, 0.0]))
                .collect();
            if paired.iter().any(|t| t[0] > 0.0 && t[1] > 0.0) {
                s.add_colocation(&format!("j{a}"), &format!("j{b}"), &paired).expect("a valid colocation");
            }
        }
    }
    (s, kinds)
}

/// Max |Y − received| over every pair and type the pair can be placed on.
fn pair_gap(s: &Session) -> f64 {
    let pairs: Vec<[String; 2]> = s.colocations().map(|[a, b]| [a.to_string(), b.to_string()]).collect();
    let mut worst: f64 = 0.0;
    for [a, b] in &pairs {
        let y = s.colocated_allocation(a, b).unwrap();
        let got = s.colocated_received_fraction(a, b).unwrap();
        let stuck = s.colocated_unplaceable_types(a, b).unwrap();
        for w in (0..y.len()).filter(|w| !stuck.contains(w)) {
            worst = worst.max((y[w] - got[w]).abs());
        }
    }
    worst
}

fn run_and_check(s: &mut Session, kinds: &[String], table: &ThroughputTable, rounds: usize) -> usize {
    let mut paired_placements = 0;
    for _ in 0..rounds {
        let r = round(s);
        for p in &r.placements {
            if let Tenants::Pair([a, b]) = &p.jobs {
                paired_placements += 1;
                let kind = |id: &str| &kinds[id[1..].parse::<usize>().unwrap()];
                let want = table.colocated(TYPES[p.worker_type], (kind(a), 1), (kind(b), 1)).unwrap();
                let got: Vec<f64> = s.placement_throughput(p).into_iter().map(|(_, t)| t).collect();
                assert_eq!(got, want.to_vec(), "{a}+{b} run at the table's paired throughputs");
            }
        }
    }
    paired_placements
}

/// Gandiva packs an oversubscribed cluster (12 jobs on 6 GPUs) into random pairs and splits time
/// equally over the combinations; the rounds run those pairs and meet `Y` and `X`.
#[test]
fn gandiva_pairs_on_gavel_throughputs_are_run_as_allocated() {
    let Some(table) = gavel_table() else { return };
    let (mut s, kinds) = session(&table, PolicyKind::Gandiva, 12);
    let paired = run_and_check(&mut s, &kinds, &table, 300);
    assert!(paired > 0, "an oversubscribed cluster runs pairs");
    let (pairs, alone) = (pair_gap(&s), max_gap(&s));
    eprintln!("gandiva, 12 jobs on 6 GPUs, 300 rounds: max |Y − received| {pairs:.4}, max |X − received| {alone:.4}");
    assert!(pairs <= 0.05, "pairs: {pairs}");
    assert!(alone <= 0.05, "jobs alone: {alone}");
    for id in s.job_ids() {
        let t = s.effective_throughput(id).unwrap();
        assert!(t > 0.0, "{id} makes progress: {t}");
    }
}

/// Max-min fairness with space sharing on the same jobs: every job's effective throughput is at
/// least what it gets without colocations (sharing only adds options), and the rounds meet `Y`.
#[test]
fn max_min_fairness_with_gavel_pairs_helps_the_worst_job_and_is_run_as_allocated() {
    let Some(table) = gavel_table() else { return };
    let (mut shared, kinds) = session(&table, PolicyKind::MaxMinFairness, 12);
    shared.recompute_allocation().unwrap();
    let any_pair =
        shared.colocations().any(|[a, b]| shared.colocated_allocation(a, b).unwrap().iter().any(|&y| y > 0.0));
    assert!(any_pair, "max-min fairness pairs some of these jobs");
    let (mut alone, _) = session(&table, PolicyKind::MaxMinFairness, 12);
    let ids: Vec<String> = alone.job_ids().map(|j| j.to_string()).collect();
    for (a, b) in alone.colocations().map(|[a, b]| (a.to_string(), b.to_string())).collect::<Vec<_>>() {
        alone.remove_colocation(&a, &b).unwrap();
    }
    alone.recompute_allocation().unwrap();
    // Normalized by the job's equal-share throughput, as max-min fairness levels them.
    let level = |s: &Session| {
        ids.iter()
            .map(|id| s.effective_throughput(id).unwrap() / s.throughput(id).unwrap().iter().sum::<f64>())
            .fold(f64::INFINITY, f64::min)
    };
    assert!(level(&shared) >= level(&alone) * (1.0 - 1e-6), "{} < {}", level(&shared), level(&alone));
    run_and_check(&mut shared, &kinds, &table, 300);
    let (pairs, jobs) = (pair_gap(&shared), max_gap(&shared));
    eprintln!(
        "max_min_fairness, 12 jobs on 6 GPUs, 300 rounds: max |Y − received| {pairs:.4}, max |X − received| {jobs:.4}"
    );
    assert!(pairs <= 0.05 && jobs <= 0.05, "pairs {pairs}, jobs alone {jobs}");
}
