//! Pieces of the random instances the property tests draw and turn into requests.

use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// `cases` per property, or `PROPTEST_CASES` when set (for a longer run by hand); no failures
/// persisted.
pub fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(cases);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Worker type names of random instances, in type order.
pub const TYPE_NAMES: [&str; 4] = ["v100", "p100", "k80", "t4"];

/// `{TYPE_NAMES[w]: value_w}` for the values in type order.
pub fn by_type(values: impl IntoIterator<Item = Value>) -> Map<String, Value> {
    values.into_iter().enumerate().map(|(w, v)| (TYPE_NAMES[w].to_string(), v)).collect()
}

/// The request of a random instance, from its worker types and jobs.
pub fn random_request(policy: &str, aware: bool, types: Map<String, Value>, jobs: Vec<Value>) -> Value {
    json!({
        "policy": policy,
        "heterogeneity_aware": aware,
        "cluster": {"worker_types": types},
        "jobs": jobs,
    })
}

/// Halves `sf` until it is no larger than the largest type (so the instance is valid whichever way
/// "above the cluster" is read).
pub fn fit_scale_factor(sf: &mut u32, counts: &[u32]) {
    let largest = *counts.iter().max().unwrap();
    while *sf > largest {
        *sf /= 2;
    }
}

/// Makes the job valid on its cluster: a scale factor that fits (`fit_scale_factor`), and a
/// positive throughput on a type with at least `sf` GPUs (`fallback` on the largest type when the
/// drawn row has none).
pub fn fix_job(row: &mut [f64], sf: &mut u32, counts: &[u32], fallback: f64) {
    fit_scale_factor(sf, counts);
    let fits = |w: usize| counts[w] >= *sf;
    if !(0..row.len()).any(|w| row[w] > 0.0 && fits(w)) {
        let w = (0..counts.len()).max_by_key(|&w| counts[w]).unwrap();
        row[w] = fallback;
    }
}

/// Gives job `m` a throughput of 1 on type `m mod types` when its drawn row is all zeros.
pub fn ensure_runnable(row: &mut [f64], m: usize) {
    if row.iter().all(|&t| t == 0.0) {
        let w = m % row.len();
        row[w] = 1.0;
    }
}

/// A job as drawn for the water-filling tests: throughput row, scale factor, weight.
pub type RandomJob = (Vec<f64>, u32, f64);

/// The jobs as request entries `j0, j1, …` (throughput row by type, scale factor, weight), each
/// made valid first by `fix(m, row, sf)`.
pub fn random_job_values(jobs: &[RandomJob], mut fix: impl FnMut(usize, &mut [f64], &mut u32)) -> Vec<Value> {
    jobs.iter()
        .enumerate()
        .map(|(m, (row, sf, weight))| {
            let (mut row, mut sf) = (row.clone(), *sf);
            fix(m, &mut row, &mut sf);
            let thr = by_type(row.iter().map(|t| json!(t)));
            json!({"id": format!("j{m}"), "throughput": thr, "scale_factor": sf, "weight": weight})
        })
        .collect()
}

/// 1–3 types of 1–8 GPUs, and 1 to `max_jobs` jobs with throughputs 0 (a quarter of the time) or in
/// `[0.1, max_throughput)`, scale factors 1, 2 or 4 and weights 1 or 5.
pub fn random_jobs(max_jobs: usize, max_throughput: f64) -> impl Strategy<Value = (Vec<u32>, Vec<RandomJob>)> {
    (1usize..=3).prop_flat_map(move |types| {
        (
            prop::collection::vec(1u32..=8, types),
            prop::collection::vec(
                (
                    prop::collection::vec(prop_oneof![1 => Just(0.0), 3 => 0.1f64..max_throughput], types),
                    prop::sample::select(vec![1u32, 2, 4]),
                    prop::sample::select(vec![1.0, 5.0]),
                ),
                1..=max_jobs,
            ),
        )
    })
}
