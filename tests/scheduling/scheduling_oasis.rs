//! OASiS's invariants on random clusters and arrivals: whatever it admits fits every server in
//! every slot, and every admitted job trains all its epochs, with enough parameter servers and no
//! more than its chunks in workers, between its arrival and its completion slot.

use arbiter::scheduling::oasis::{ClusterSpec, Job, JobSpec, Oasis, PriceParameters, ResourceVector, Utility};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::cell::Cell;

fn server(gpus: bool) -> impl Strategy<Value = ResourceVector> {
    (1u32..=8, 4u32..=64, 8u32..=256, 1_000u32..=25_000)
        .prop_map(move |(g, c, m, b)| ResourceVector::new(if gpus { g } else { 0 }, c, m, b))
}

fn job(slots: usize) -> impl Strategy<Value = JobSpec> {
    (
        (0..slots, 1u32..=20, 1u32..=30, 5u32..=60, 0.05f64..1.0, 1.0f64..200.0),
        ((1u32..=4, 1u32..=8, 1u32..=32, 100u32..=2_000), (1u32..=8, 1u32..=32, 0u32..=3_000)),
        (0u8..3, 1.0f64..100.0, 0.0f64..5.0, 0.0f64..20.0),
    )
        .prop_map(
            |((arrival_slot, epochs, chunks, m, tau, e), ((g, c, mem, b), (pc, pm, extra)), (class, p, d, t))| {
                let utility = match class {
                    0 => Utility::Constant { value: p },
                    _ => Utility::Sigmoid { priority: p, decay: d, target: t },
                };
                JobSpec {
                    id: String::new(),
                    arrival_slot,
                    epochs,
                    chunks,
                    minibatches_per_chunk: m,
                    minibatch_seconds: tau,
                    gradient_mb: e,
                    worker: ResourceVector::new(g, c, mem, b),
                    parameter_server: ResourceVector::new(0, pc, pm, b + extra),
                    utility,
                }
            },
        )
}

fn instance() -> impl Strategy<Value = (ClusterSpec, Vec<JobSpec>, f64, f64)> {
    (2usize..=12, prop::collection::vec(server(true), 1..=4), prop::collection::vec(server(false), 1..=3))
        .prop_flat_map(|(slots, workers, ps)| {
            let cluster = ClusterSpec { slot_seconds: 3600.0, slots, worker_servers: workers, ps_servers: ps };
            (Just(cluster), prop::collection::vec(job(slots), 1..=25), 0.25f64..4.0, 0.25f64..4.0)
        })
}

/// Sums every admitted schedule per (slot, server) from the decisions alone and checks it
/// against the capacities; checks each admitted job's training, bandwidth and worker bounds.
fn check(cluster: &ClusterSpec, jobs: &[JobSpec], u: f64, l: f64) -> Result<usize, TestCaseError> {
    // Jobs whose chunk does not fit in a slot are refused at the edge; the rest are decided.
    let valid: Vec<Job> = jobs
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            Job::new(
                JobSpec { id: format!("j{i}"), ..s.clone() },
                cluster.slot_seconds,
                cluster.slots,
                &format!("jobs[{i}]"),
            )
            .ok()
        })
        .collect();
    if valid.is_empty() {
        return Ok(0);
    }
    let prices = PriceParameters::estimate(&valid, cluster).unwrap().scaled(u, l).unwrap();
    let mut oasis = Oasis::new(cluster.clone(), prices).unwrap();
    let (t, h, k) = (cluster.slots, cluster.worker_servers.len(), cluster.ps_servers.len());
    let mut on_workers = vec![[0u64; 4]; t * h];
    let mut on_ps = vec![[0u64; 4]; t * k];
    let mut admitted = 0;
    for job in &valid {
        let d = oasis.decide(job).unwrap();
        if !d.admitted {
            continue;
        }
        admitted += 1;
        prop_assert!(d.payoff > 0.0);
        let s = d.schedule.as_ref().unwrap();
        prop_assert!(s.completion_slot < t);
        let mut worker_slots = 0u64;
        for plan in &s.slots {
            prop_assert!(plan.slot >= job.spec.arrival_slot && plan.slot <= s.completion_slot);
            let (w, p) = (plan.worker_count(), plan.parameter_server_count());
            prop_assert!(w <= job.spec.chunks, "at most N workers");
            prop_assert!(
                p as u64 * job.spec.parameter_server.bandwidth_mbps as u64
                    >= w as u64 * job.spec.worker.bandwidth_mbps as u64
            );
            prop_assert!(p <= w, "no more parameter servers than workers");
            worker_slots += w as u64;
            for &(server, n) in &plan.workers {
                for (r, a) in job.spec.worker.amounts().iter().enumerate() {
                    on_workers[plan.slot * h + server][r] += *a as u64 * n as u64;
                }
            }
            for &(server, n) in &plan.parameter_servers {
                for (r, a) in job.spec.parameter_server.amounts().iter().enumerate() {
                    on_ps[plan.slot * k + server][r] += *a as u64 * n as u64;
                }
            }
        }
        let trained = worker_slots * job.chunks_per_worker_slot as u64;
        prop_assert!(
            trained >= job.spec.epochs as u64 * job.spec.chunks as u64,
            "{} trains {trained} chunk-epochs",
            job.spec.id
        );
    }
    for slot in 0..t {
        for (pool, used, servers) in
            [("worker", &on_workers, &cluster.worker_servers), ("ps", &on_ps, &cluster.ps_servers)]
        {
            for (s, cap) in servers.iter().enumerate() {
                let cap = cap.amounts();
                for r in 0..4 {
                    prop_assert!(
                        used[slot * servers.len() + s][r] <= cap[r] as u64,
                        "{pool} server {s} slot {slot} resource {r}"
                    );
                }
            }
        }
    }
    Ok(admitted)
}

#[test]
fn admitted_schedules_fit_every_server_and_finish_their_epochs() {
    let config = Config { cases: 300, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let (admitted, total) = (Cell::new(0), Cell::new(0));
    runner
        .run(&instance(), |(cluster, jobs, u, l)| {
            total.set(total.get() + jobs.len());
            admitted.set(admitted.get() + check(&cluster, &jobs, u, l)?);
            Ok(())
        })
        .unwrap();
    let (admitted, total) = (admitted.get(), total.get());
    // The property means something only if many jobs are admitted, and not all of them.
    assert!(admitted > total / 10 && admitted < total, "{admitted} of {total} admitted");
}

/// A workload whose jobs are not listed in arrival order is decided in arrival order: the same
/// decisions as the same jobs listed sorted, reported in the order given. Duplicate ids are refused.
#[test]
fn a_workload_is_decided_in_arrival_order_whatever_its_listing() {
    use arbiter::scheduling::oasis::LowestUtility;
    use arbiter::simulator::oasis::run;
    let fixture: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/oasis.json")).unwrap(),
    )
    .unwrap();
    let cluster: ClusterSpec = serde_json::from_value(fixture["cluster"].clone()).unwrap();
    let mut specs: Vec<JobSpec> = serde_json::from_value(fixture["jobs"].clone()).unwrap();
    specs[0].arrival_slot = 1; // A, listed first, arrives after B and C
    let decide = |specs: &[JobSpec]| {
        let jobs = run::validate(&cluster, specs).unwrap();
        let (outcome, _) = run::oasis(&cluster, &jobs, LowestUtility::AtShortest, 1.0, 1.0).unwrap();
        outcome.jobs.iter().map(|j| (j.id.clone(), j.admitted, j.completion_slot)).collect::<Vec<_>>()
    };
    let given = decide(&specs);
    assert_eq!(given.iter().map(|j| j.0.as_str()).collect::<Vec<_>>(), ["A", "B", "C"]);
    let mut sorted = specs.clone();
    sorted.sort_by_key(|s| s.arrival_slot);
    let mut by_arrival = decide(&sorted);
    by_arrival.sort();
    let mut given_sorted = given.clone();
    given_sorted.sort();
    assert_eq!(given_sorted, by_arrival);
    let mut twice = specs.clone();
    twice[1].id = "A".into();
    let e = run::validate(&cluster, &twice).unwrap_err();
    assert_eq!((e.code, e.field.as_deref()), (arbiter::ErrorCode::DuplicateJobId, Some("jobs[1].id")));
}
