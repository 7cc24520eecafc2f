//! Property tests on random sessions under random events: every round keeps the mechanism's
//! invariants (see `crate::mechanism_support::check_round`): no GPU holds two jobs, a job gets exactly its
//! scale factor of one type or nothing and runs at most once, no type is over capacity, failed
//! GPUs are never used, a job staying on its type keeps its GPUs, fresh jobs are consolidated.

use crate::mechanism_support::*;
use arbiter::mechanism::{Config, GpuId, ServerId, Session, Worker};
use arbiter::problem::Matrix;
use arbiter::PolicyKind;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Event {
    Round,
    Add {
        scale_factor: u32,
        throughput: Vec<f64>,
    },
    Remove(usize),
    FailGpu(usize),
    FailServer(usize),
    ReturnGpu(usize),
    ReturnServer(usize),
    Progress {
        job: usize,
        worker_type: usize,
        throughput: f64,
    },
    /// Any allocation with rows summing to at most 1, capacity or not.
    SetAllocation(Vec<f64>),
}

const POLICIES: [PolicyKind; 5] = [
    PolicyKind::MaxMinFairness,
    PolicyKind::MaxSumThroughput,
    PolicyKind::MinMakespan,
    PolicyKind::Isolated,
    PolicyKind::Proportional,
];

fn scale_factor() -> impl Strategy<Value = u32> {
    prop::sample::select(vec![1u32, 1, 1, 2, 3, 4, 8])
}

fn throughput_row(types: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(prop_oneof![Just(0.0), 0.1f64..10.0], types)
}

fn event(types: usize) -> impl Strategy<Value = Event> {
    prop_oneof![
        6 => Just(Event::Round),
        1 => (scale_factor(), throughput_row(types))
            .prop_map(|(scale_factor, throughput)| Event::Add { scale_factor, throughput }),
        1 => any::<usize>().prop_map(Event::Remove),
        1 => any::<usize>().prop_map(Event::FailGpu),
        1 => any::<usize>().prop_map(Event::FailServer),
        1 => any::<usize>().prop_map(Event::ReturnGpu),
        1 => any::<usize>().prop_map(Event::ReturnServer),
        1 => (any::<usize>(), 0..types, 0.0f64..10.0).prop_map(|(job, worker_type, throughput)| {
            Event::Progress { job, worker_type, throughput }
        }),
        1 => prop::collection::vec(0.0f64..1.0, 64).prop_map(Event::SetAllocation),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    types: Vec<(u32, u32)>,
    policy: PolicyKind,
    work_conserving: bool,
    min_solve_rounds: u32,
    jobs: Vec<(u32, Vec<f64>)>,
    events: Vec<Event>,
}

fn case() -> impl Strategy<Value = Case> {
    prop::collection::vec((0u32..=12, 1u32..=6), 1..=3).prop_flat_map(|types| {
        let n = types.len();
        (
            Just(types),
            prop::sample::select(POLICIES.to_vec()),
            any::<bool>(),
            0u32..3,
            prop::collection::vec((scale_factor(), throughput_row(n)), 0..16),
            prop::collection::vec(event(n), 1..40),
        )
            .prop_map(|(types, policy, work_conserving, min_solve_rounds, jobs, events)| Case {
                types,
                policy,
                work_conserving,
                min_solve_rounds,
                jobs,
                events,
            })
    })
}

fn allocation(session: &Session, values: &[f64]) -> Matrix {
    let (n, t) = (session.num_jobs(), session.cluster().num_types());
    let mut x = Matrix::zeros(n, t);
    for m in 0..n {
        let row: Vec<f64> = (0..t).map(|w| values[(m * t + w) % values.len()]).collect();
        let sum: f64 = row.iter().sum::<f64>().max(1.0);
        for (w, v) in row.into_iter().enumerate() {
            x.set(m, w, v / sum);
        }
    }
    x
}

fn nth_job(session: &Session, k: usize) -> Option<String> {
    let n = session.num_jobs();
    (n > 0).then(|| session.job_ids().nth(k % n).unwrap().to_string())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_round_of_a_random_session_keeps_the_invariants(case in case()) {
        let types = case
            .types
            .iter()
            .enumerate()
            .map(|(w, &(count, per_server))| worker_type(&format!("t{w}"), count, per_server))
            .collect();
        let config = Config {
            work_conserving: case.work_conserving,
            min_solve_interval: case.min_solve_rounds as f64 * 360.0,
            ..Config::default()
        };
        let mut session = Session::new(case.policy, true, types, config).unwrap();
        let mut next_id = 0;
        let mut add = |session: &mut Session, sf: u32, throughput: &[f64]| {
            // Jobs that can run nowhere are refused; that is part of what is tested.
            let _ = session.add_job(job(&format!("j{next_id}"), sf), throughput);
            next_id += 1;
        };
        for (sf, throughput) in &case.jobs {
            add(&mut session, *sf, throughput);
        }
        let (gpus, servers) = (session.cluster().num_gpus(), session.cluster().num_servers());
        for event in &case.events {
            match event {
                Event::Round => {
                    round(&mut session);
                }
                Event::Add { scale_factor, throughput } => add(&mut session, *scale_factor, throughput),
                Event::Remove(k) => {
                    if let Some(id) = nth_job(&session, *k) {
                        session.remove_job(&id).unwrap();
                    }
                }
                Event::FailGpu(g) | Event::ReturnGpu(g) if gpus > 0 => {
                    let healthy = matches!(event, Event::ReturnGpu(_));
                    session.set_health(Worker::Gpu(GpuId((g % gpus) as u32)), healthy).unwrap();
                }
                Event::FailServer(s) | Event::ReturnServer(s) if servers > 0 => {
                    let healthy = matches!(event, Event::ReturnServer(_));
                    let worker = Worker::Server(ServerId((s % servers) as u32));
                    session.set_health(worker, healthy).unwrap();
                }
                Event::Progress { job, worker_type, throughput } => {
                    if let Some(id) = nth_job(&session, *job) {
                        session.report_progress(&id, *worker_type, 100.0, *throughput).unwrap();
                    }
                }
                Event::SetAllocation(values) => {
                    let x = allocation(&session, values);
                    session.set_allocation(&x).unwrap();
                }
                _ => {}
            }
        }
        // And a few rounds at the end, whatever the events left.
        for _ in 0..3 {
            round(&mut session);
        }
    }
}
