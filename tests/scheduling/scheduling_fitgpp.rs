//! FitGpp by hand (`formulations/fitgpp.md`): the score, the candidate filter, the cap P, grace
//! periods (the TE job starts when the victim's ends, the victim returns to the head of the
//! queue), LRTP preempting across nodes; and a property over random node/job mixes and every
//! policy: nothing over capacity, no BE job preempted more than P times, no TE job left waiting
//! while a feasible preemption exists.

use arbiter::scheduling::fitgpp::preemption::{self, FitGpp, Lrtp, Preemptor, Rand};
use arbiter::scheduling::fitgpp::score::{self, Normalizers, RunningBe};
use arbiter::scheduling::fitgpp::{Cluster, JobKind, JobSpec, Node, Phase, Resources};
use arbiter::simulator::fitgpp::run::run_observed;
use arbiter::simulator::fitgpp::workload::Arrival;
use arbiter::workload::generator::Rng;
use arbiter::ErrorCode;
use proptest::prelude::*;

const NODE: Resources = Resources::new(32, 256, 8);

fn running(job: usize, node: usize, d: (u32, u32, u32), gp: f64, preemptions: u32, remaining: f64) -> RunningBe {
    RunningBe {
        job,
        node,
        demand: Resources::new(d.0, d.1, d.2),
        grace_period_seconds: gp,
        preemptions,
        remaining_seconds: remaining,
    }
}

/// Nodes of `capacity` with `used` committed on each.
fn nodes(capacity: Resources, used: &[(u32, u32, u32)]) -> Vec<Node> {
    used.iter()
        .map(|&(c, m, g)| {
            let mut n = Node::new(capacity);
            assert!(n.commit(&Resources::new(c, m, g)));
            n
        })
        .collect()
}

fn spec(id: &str, kind: JobKind, d: (u32, u32, u32), duration: f64, gp: f64) -> JobSpec {
    JobSpec {
        id: id.into(),
        kind,
        demand: Resources::new(d.0, d.1, d.2),
        duration_seconds: duration,
        grace_period_seconds: gp,
    }
}

fn fitgpp(lambda: f64, p: u32) -> FitGpp {
    FitGpp { lambda, max_preemptions: p, random_fallback: None }
}

#[test]
fn the_score_weighs_size_against_the_grace_period() {
    // One full node: a (8,64,2) size 0.75, b (16,128,4) 1.5, c (4,32,1) 0.375 (+ 4 cores free).
    let n = nodes(NODE, &[(28, 224, 7)]);
    let jobs = [
        running(0, 0, (8, 64, 2), 60.0, 0, 1.0),
        running(1, 0, (16, 128, 4), 120.0, 0, 1.0),
        running(2, 0, (4, 32, 1), 240.0, 0, 1.0),
    ];
    assert_eq!(score::size(&jobs[0], &n), 0.75);
    let norm = Normalizers::over(&jobs, &n);
    assert_eq!((norm.max_size, norm.max_grace_period), (1.5, 240.0));
    // S = s/1.5 + λ·GP/240: λ = 1 gives 0.75, 1.5, 1.25; λ = 0 gives 0.5, 1, 0.25.
    let s: Vec<f64> = jobs.iter().map(|j| norm.score(j, &n, 1.0)).collect();
    assert_eq!(s, [0.75, 1.5, 1.25]);
    let te = Resources::new(4, 32, 1); // every job is a candidate
    assert_eq!(score::choose(&te, &jobs, &n, 1.0, 1), Some(0));
    assert_eq!(score::choose(&te, &jobs, &n, 0.0, 1), Some(2));
    // λ = 4: 0.5 + 1 = 1.5, 1 + 2 = 3, 0.25 + 4: a still; λ = 0.1: 0.525, 1.05, 0.35: c.
    assert_eq!(score::choose(&te, &jobs, &n, 4.0, 1), Some(0));
    assert_eq!(score::choose(&te, &jobs, &n, 0.1, 1), Some(2));
    // No grace periods at all: the GP term is 0, not NaN.
    let zero: Vec<RunningBe> = jobs.iter().map(|j| RunningBe { grace_period_seconds: 0.0, ..*j }).collect();
    assert_eq!(Normalizers::over(&zero, &n).score(&zero[1], &n, 1.0), 1.0);
}

#[test]
fn a_candidate_frees_enough_with_its_nodes_free_resources() {
    // Node 0: 2 cores and 2 GPUs free beside a (8,64,2); node 1: nothing free beside b and c.
    let n = nodes(NODE, &[(30, 64, 6), (32, 256, 8)]);
    let a = running(0, 0, (8, 64, 2), 10.0, 0, 1.0);
    let b = running(1, 1, (30, 250, 6), 10.0, 0, 1.0);
    let c = running(2, 1, (2, 6, 2), 10.0, 0, 1.0);
    let te = Resources::new(16, 100, 4);
    // a frees 2 GPUs, plus 2 free = 4, but only 8 + 2 = 10 cores: not enough.
    assert!(!score::is_candidate(&a, &te, &n, 1));
    assert!(score::is_candidate(&b, &te, &n, 1));
    assert!(!score::is_candidate(&c, &te, &n, 1));
    // 4 GPUs and 8 cores: a frees them with its node's 2 free GPUs (it alone has only 2); a is
    // smaller than b (0.75 against 2.66), with the same grace period.
    let small = Resources::new(8, 64, 4);
    assert!(score::is_candidate(&a, &small, &n, 1));
    assert_eq!(score::choose(&small, &[a, b, c], &n, 1.0, 1), Some(0));
    // No candidate, no preemption: FitGpp without its fallback declines.
    let huge = Resources::new(32, 256, 8);
    assert_eq!(fitgpp(1.0, 1).choose(&huge, &[a, c], &n), None);
}

#[test]
fn the_cap_p_excludes_jobs_preempted_p_times() {
    let n = nodes(NODE, &[(32, 256, 8)]);
    let once = running(0, 0, (16, 128, 4), 10.0, 1, 1.0);
    let never = running(1, 0, (16, 128, 4), 500.0, 0, 1.0);
    let te = Resources::new(8, 8, 2);
    // P = 1: `once` is out though its grace period is shorter.
    assert_eq!(fitgpp(1.0, 1).choose(&te, &[once, never], &n).map(|p| p.victims), Some(vec![1]));
    assert_eq!(fitgpp(1.0, 2).choose(&te, &[once, never], &n).map(|p| p.victims), Some(vec![0]));
    assert_eq!(fitgpp(1.0, 1).choose(&te, &[once], &n), None);
    assert_eq!(Lrtp { max_preemptions: 1 }.choose(&te, &[once], &n), None);
}

#[test]
fn lrtp_and_rand_preempt_until_one_node_fits() {
    // Node 0: a (2,8,1) with 2,000 s left, c (2,8,0) with 100 s; node 1: b (4,16,1) with 1,000 s.
    let cap = Resources::new(4, 16, 1);
    let n = nodes(cap, &[(4, 16, 1), (4, 16, 1)]);
    let jobs = [
        running(0, 0, (2, 8, 1), 5.0, 0, 2000.0),
        running(1, 1, (4, 16, 1), 5.0, 0, 1000.0),
        running(2, 0, (2, 8, 0), 5.0, 0, 100.0),
    ];
    let te = Resources::new(4, 16, 1);
    // LRTP takes a (longest), which is not enough on node 0, then b, which is on node 1.
    let p = Lrtp { max_preemptions: 1 }.choose(&te, &jobs, &n).unwrap();
    assert_eq!((p.victims, p.node), (vec![0, 1], 1));
    // FitGpp: only b frees enough by itself.
    let p = fitgpp(1.0, 1).choose(&te, &jobs, &n).unwrap();
    assert_eq!((p.victims, p.node), (vec![1], 1));
    // RAND: whatever the order, the victims on its node free enough.
    for seed in 0..20 {
        let p = Rand { max_preemptions: 1, rng: Rng::new(seed) }.choose(&te, &jobs, &n).unwrap();
        let freed = jobs
            .iter()
            .filter(|j| p.victims.contains(&j.job) && j.node == p.node)
            .fold(n[p.node].free(), |a, j| a.plus(&j.demand));
        assert!(te.fits_in(&freed), "seed {seed}: {p:?}");
    }
}

#[test]
fn the_te_job_starts_when_the_grace_period_ends_and_the_victim_returns_to_the_head() {
    let cap = Resources::new(8, 64, 2);
    let mut c = Cluster::new(&[cap], preemption::named("fitgpp", 1.0, 1, false, 0).unwrap()).unwrap();
    let be1 = c.submit(spec("be1", JobKind::Be, (8, 64, 2), 1000.0, 30.0)).unwrap();
    c.schedule();
    c.advance_to(5.0).unwrap();
    let be2 = c.submit(spec("be2", JobKind::Be, (1, 1, 1), 50.0, 0.0)).unwrap();
    c.schedule();
    c.advance_to(10.0).unwrap();
    let te = c.submit(spec("te", JobKind::Te, (2, 8, 1), 100.0, 0.0)).unwrap();
    let pass = c.schedule();
    assert_eq!(pass.preemptions.len(), 1);
    let record = pass.preemptions[0];
    assert_eq!((record.victim, record.at, record.grace_deadline, record.for_job), (be1, 10.0, 40.0, te));
    assert_eq!(pass.reserved, vec![(te, 0, 40.0)]);
    // During the grace period be1 still holds the whole node; it stopped progressing at 10 s.
    assert!(matches!(c.jobs()[be1].phase, Phase::Grace { until: 40.0, .. }));
    assert_eq!(c.jobs()[be1].executed_seconds, 10.0);
    assert_eq!(c.nodes()[0].free(), Resources::default());
    let pass = c.advance_to(39.0).unwrap();
    assert!(pass.started.is_empty());
    let pass = c.advance_to(40.0).unwrap();
    assert_eq!(pass.started, vec![(te, 0)]);
    assert_eq!(c.jobs()[te].first_start, Some(40.0));
    // be1 is at the head, ahead of be2 which arrived earlier and still waits.
    assert_eq!(c.queue().collect::<Vec<_>>(), vec![be1, be2]);
    // te finishes at 140; be1 resumes there (990 s left), be2 after it (the head blocks).
    c.advance_to(2000.0).unwrap();
    assert_eq!(c.jobs()[te].finish, Some(140.0));
    assert_eq!(c.jobs()[be1].interruptions, vec![(10.0, Some(140.0))]);
    assert_eq!(c.jobs()[be1].finish, Some(1130.0));
    assert_eq!(c.jobs()[be2].first_start, Some(1130.0));
    assert_eq!(c.jobs()[te].slowdown(), Some(1.3));
    assert_eq!(c.jobs()[be1].preemptions, 1);
    assert!(c.jobs()[te].made_room && c.jobs()[te].declined == 0);
}

#[test]
fn a_second_te_job_cannot_preempt_a_job_at_its_cap() {
    let cap = Resources::new(8, 64, 2);
    let mut c = Cluster::new(&[cap], preemption::named("fitgpp", 1.0, 1, false, 0).unwrap()).unwrap();
    let be = c.submit(spec("be", JobKind::Be, (8, 64, 2), 1000.0, 0.0)).unwrap();
    c.schedule();
    let te1 = c.submit(spec("te1", JobKind::Te, (8, 64, 2), 100.0, 0.0)).unwrap();
    c.schedule();
    c.advance_to(0.0).unwrap(); // a grace period of 0: te1 starts at once
    assert_eq!(c.jobs()[te1].first_start, Some(0.0));
    c.advance_to(100.0).unwrap(); // te1 done, be back
    assert!(matches!(c.jobs()[be].phase, Phase::Running { .. }));
    c.advance_to(150.0).unwrap();
    let te2 = c.submit(spec("te2", JobKind::Te, (1, 1, 1), 10.0, 0.0)).unwrap();
    let pass = c.schedule();
    assert!(pass.preemptions.is_empty());
    assert_eq!(c.te_waiting(), [te2]);
    assert_eq!((c.jobs()[te2].declined, c.jobs()[te2].made_room), (1, false));
    // It starts when be finishes (1,000 s of work from 0 to 1,100 with 100 s lost to te1).
    c.advance_to(5000.0).unwrap();
    assert_eq!(c.jobs()[be].finish, Some(1100.0));
    assert_eq!(c.jobs()[te2].first_start, Some(1100.0));
}

#[test]
fn fifo_makes_te_jobs_wait_in_line() {
    let cap = Resources::new(8, 64, 2);
    let mut c = Cluster::new(&[cap], preemption::named("none", 1.0, 1, false, 0).unwrap()).unwrap();
    c.submit(spec("be", JobKind::Be, (8, 64, 2), 1000.0, 0.0)).unwrap();
    c.submit(spec("be2", JobKind::Be, (8, 64, 2), 1000.0, 0.0)).unwrap();
    let te = c.submit(spec("te", JobKind::Te, (1, 1, 1), 10.0, 0.0)).unwrap();
    c.schedule();
    c.advance_to(10_000.0).unwrap();
    assert_eq!(c.jobs()[te].first_start, Some(2000.0));
    assert!(c.jobs().iter().all(|j| j.preemptions == 0));
}

#[test]
fn bad_input_is_refused_with_the_field() {
    let named = |p: &str, l: f64| preemption::named(p, l, 1, false, 0);
    assert_eq!(named("sjf", 1.0).unwrap_err().code, ErrorCode::UnknownPolicy);
    assert_eq!(named("fitgpp", f64::NAN).unwrap_err().code, ErrorCode::InvalidNumber);
    assert!(Cluster::new(&[], named("none", 1.0).unwrap()).is_err());
    let mut c = Cluster::new(&[Resources::new(4, 16, 1)], named("fitgpp", 1.0).unwrap()).unwrap();
    let e = c.submit(spec("big", JobKind::Be, (4, 16, 2), 10.0, 0.0)).unwrap_err();
    assert_eq!((e.code, e.field.as_deref()), (ErrorCode::JobCannotRun, Some("job.gpus")));
    // Each resource fits some node, not all of them one: the demand is named.
    let mut two =
        Cluster::new(&[Resources::new(4, 16, 1), Resources::new(8, 8, 1)], named("fitgpp", 1.0).unwrap()).unwrap();
    let e = two.submit(spec("odd", JobKind::Be, (8, 16, 1), 10.0, 0.0)).unwrap_err();
    assert_eq!((e.code, e.field.as_deref()), (ErrorCode::JobCannotRun, Some("job.demand")));
    let e = c.submit(spec("neg", JobKind::Te, (1, 1, 1), -1.0, 0.0)).unwrap_err();
    assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidNumber, Some("job.duration_seconds")));
    let e = c.submit(spec("gp", JobKind::Te, (1, 1, 1), 1.0, f64::INFINITY)).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("job.grace_period_seconds"));
    c.submit(spec("once", JobKind::Te, (1, 1, 1), 1.0, 0.0)).unwrap();
    let e = c.submit(spec("once", JobKind::Be, (1, 1, 1), 1.0, 0.0)).unwrap_err();
    assert_eq!((e.code, e.field.as_deref()), (ErrorCode::DuplicateJobId, Some("job.id")));
    c.advance_to(5.0).unwrap();
    assert_eq!(c.advance_to(4.0).unwrap_err().code, ErrorCode::InvalidNumber);
}

/// What each node holds, summed from the jobs' phases (not from the nodes' own counters).
fn held_per_node(c: &Cluster) -> Vec<Resources> {
    let mut held = vec![Resources::default(); c.nodes().len()];
    for j in c.jobs() {
        match j.phase {
            Phase::Running { node, .. } | Phase::Grace { node, .. } => held[node] = held[node].plus(&j.spec.demand),
            Phase::Reserved { node, held: h, .. } => held[node] = held[node].plus(&h),
            Phase::Queued | Phase::Finished => {}
        }
    }
    held
}

fn check(c: &Cluster, policy: &str, cap: u32) -> Result<(), TestCaseError> {
    for (n, (held, node)) in held_per_node(c).iter().zip(c.nodes()).enumerate() {
        prop_assert!(held.fits_in(&node.capacity), "node {n} holds {held} of {}", node.capacity);
        prop_assert_eq!(*held, node.committed());
    }
    for j in c.jobs() {
        prop_assert!(j.preemptions <= cap, "{} preempted {} times, P = {cap}", j.spec.id, j.preemptions);
        prop_assert!(j.kind() == JobKind::Be || j.preemptions == 0);
    }
    let running = c.running_be();
    for &te in c.te_waiting() {
        let d = c.jobs()[te].spec.demand;
        prop_assert!(c.nodes().iter().all(|n| !d.fits_in(&n.free())), "TE job {te} fits and waits");
        match policy {
            "fitgpp" => {
                // Eq. 2 and the cap, restated here rather than read from `score`.
                let feasible = running
                    .iter()
                    .find(|j| j.preemptions < cap && d.fits_in(&j.demand.plus(&c.nodes()[j.node].free())));
                prop_assert!(feasible.is_none(), "TE job {te} waits though {feasible:?} could make room");
            }
            _ => {
                for (n, node) in c.nodes().iter().enumerate() {
                    let all = running
                        .iter()
                        .filter(|j| j.node == n && j.preemptions < cap)
                        .fold(node.free(), |a, j| a.plus(&j.demand));
                    prop_assert!(!d.fits_in(&all), "TE job {te} waits though node {n} could make room");
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn no_node_overflows_no_job_exceeds_p_and_no_te_job_waits_for_nothing(
        nodes in prop::collection::vec((1u32..=16, 1u32..=64, 0u32..=4), 1..=4),
        jobs in prop::collection::vec(
            (any::<bool>(), 0.0f64..0.7, 0.0f64..0.7, 0.0f64..0.7, 1u32..=500, 0u32..=60, 0u32..=200),
            1..=40,
        ),
        cap in 1u32..=3,
        lambda in 0.0f64..4.0,
        seed in any::<u64>(),
    ) {
        let capacities: Vec<Resources> = nodes.iter().map(|&(c, m, g)| Resources::new(c, m, g)).collect();
        let biggest = capacities[0];
        let mut time = 0.0;
        let arrivals: Vec<Arrival> = jobs
            .iter()
            .enumerate()
            .map(|(i, &(te, c, m, g, duration, gp, gap))| {
                time += gap as f64;
                // A share of node 0, so every job fits some node.
                let part = |share: f64, of: u32| ((share * of as f64) as u32).min(of);
                let demand = Resources::new(part(c, biggest.cpus), part(m, biggest.memory_gb), part(g, biggest.gpus));
                // A job asks for something: a core when its shares round to nothing.
                let demand = if demand == Resources::default() { Resources::new(1, 0, 0) } else { demand };
                Arrival {
                    time,
                    spec: JobSpec {
                        id: format!("j{i}"),
                        kind: if te { JobKind::Te } else { JobKind::Be },
                        demand,
                        duration_seconds: duration as f64,
                        grace_period_seconds: gp as f64,
                    },
                }
            })
            .collect();
        for policy in ["fitgpp", "lrtp", "rand", "none"] {
            let preemptor = preemption::named(policy, lambda, cap, false, seed).unwrap();
            let mut failure = None;
            let done = run_observed(&arrivals, &capacities, preemptor, &mut |c| {
                if failure.is_none() {
                    failure = check(c, policy, cap).err();
                }
            });
            if let Some(f) = failure {
                return Err(TestCaseError::fail(format!("{policy}: {f}")));
            }
            let done = done.unwrap();
            prop_assert!(done.iter().all(|j| j.finish.is_some()));
            for j in &done {
                // Every job did all its work: finish ≥ arrival + duration.
                prop_assert!(j.finish.unwrap() + 1e-6 >= j.arrival + j.spec.duration_seconds, "{policy}: {:?}", j);
            }
        }
    }
}

#[test]
fn the_pipeline_points_fitgpp_to_its_own_model() {
    use arbiter::scheduling::Composition;
    for name in ["fitgpp", "lrtp", "rand"] {
        let e = Composition::from_flags(None, None, Some("fifo"), None, Some(name)).unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::Unsupported, Some("preemption")));
        assert!(e.message.contains("FitGpp workload") && e.message.contains("/v1/fitgpp/sessions"), "{}", e.message);
    }
}
