//! The tie-break's second solve by price decomposition against the same solve on the plain
//! engine, on random instances of every bottleneck policy: mostly distinct rows with ties and
//! zeros, scale factors above 1, types with no GPUs, far more jobs than GPUs. Small decomposition
//! options (a base of a few jobs, a band of one) send every instance through samples, rounds and
//! certificates. The decomposition's value `Σ thr_m/thr_equal_m` must equal the engine's within
//! 1e-7 relative, its allocation must be feasible and keep the policy's objective, and it must
//! certify (not fall back on) most instances. Also: the default path on distinct rows, on the wire.

use crate::common::*;
use arbiter::lp::Backend;
use arbiter::max_min_ratio::{DecompositionOptions, Method};
use arbiter::solver::tie_break::throughput_with;
use arbiter::Problem;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

const TYPES: [&str; 4] = ["v100", "p100", "k80", "t4"];
/// Relative agreement of the two values, and of the policy's objective with the optimum's.
const VALUE: f64 = 1e-7;
const OBJECTIVE: f64 = 1e-6;

#[derive(Debug, Clone)]
struct Case {
    policy: &'static str,
    rows: Vec<Vec<f64>>,
    sf: Vec<u32>,
    steps: Vec<f64>,
    counts: Vec<u32>,
}

/// A throughput: 0 a sixth of the time, one of a few values (ties) sometimes, else any.
fn entry() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(0.0), 1 => select(vec![1.0, 2.0, 4.0]), 4 => 0.1f64..100.0]
}

fn case(
    types: usize,
    jobs: std::ops::RangeInclusive<usize>,
    gpus: std::ops::RangeInclusive<u32>,
) -> impl Strategy<Value = Case> {
    let policy = select(vec!["max_min_fairness", "min_makespan", "finish_time_fairness", "shortest_job_first"]);
    let job = (prop::collection::vec(entry(), types), select(vec![1u32, 1, 1, 2, 4]), 100.0f64..1e5);
    (policy, prop::collection::vec(gpus, types), prop::collection::vec(job, jobs)).prop_map(
        move |(policy, mut counts, jobs)| {
            counts[0] = counts[0].max(1); // a cluster has GPUs
            let mut case = Case { policy, rows: Vec::new(), sf: Vec::new(), steps: Vec::new(), counts };
            for (mut row, sf, steps) in jobs {
                // The contract refuses a job that can run nowhere.
                if (0..types).all(|w| row[w] == 0.0 || case.counts[w] == 0) {
                    row[0] = 1.0;
                }
                case.rows.push(row);
                case.sf.push(sf);
                case.steps.push(steps.round());
            }
            case
        },
    )
}

fn request(case: &Case) -> Value {
    let types = case.counts.len();
    let worker_types: serde_json::Map<String, Value> =
        (0..types).map(|w| (TYPES[w].to_string(), json!({"count": case.counts[w]}))).collect();
    let jobs: Vec<Value> = (0..case.rows.len())
        .map(|m| {
            let thr: serde_json::Map<String, Value> = (0..types).map(|w| (TYPES[w].to_string(), json!(case.rows[m][w]))).collect();
            json!({"id": format!("j{m}"), "throughput": thr, "scale_factor": case.sf[m], "steps_remaining": case.steps[m]})
        })
        .collect();
    json!({"policy": case.policy, "cluster": {"worker_types": worker_types}, "jobs": jobs})
}

fn small_options(base: usize) -> DecompositionOptions {
    DecompositionOptions { base, sample_ratio: 2, band: 1, max_ambiguous: 10_000, max_rounds: 40 }
}

/// `Σ_m thr_m / thr_equal_m`: what the second solve maximizes.
fn value(p: &Problem, x: &[Vec<f64>]) -> f64 {
    let equal = equal_share_throughput(p);
    throughputs(p, x).iter().zip(&equal).filter(|&(_, &e)| e > 0.0).map(|(t, e)| t / e).sum()
}

/// The policy's objective at `x` (contract definitions).
fn objective(p: &Problem, x: &[Vec<f64>]) -> f64 {
    match p.policy.name() {
        "max_min_fairness" => las_value(p, x),
        "min_makespan" => makespan(p, x),
        "finish_time_fairness" => max_rho(p, x),
        _ => throughputs(p, x)
            .iter()
            .enumerate()
            .filter(|&(m, &t)| t > 0.0 && p.steps_remaining(m) > 0.0)
            .map(|(m, &t)| p.steps_remaining(m) / t)
            .fold(f64::INFINITY, f64::min),
    }
}

/// Solves the case's second LP both ways, after the optimum solved by `first`; checks the
/// decomposition's answer; says whether it certified (`None`: the tie-break does not apply).
fn check(case: &Case, options: DecompositionOptions, first: Method) -> Result<Option<bool>, TestCaseError> {
    let problem = Problem::from_request(&serde_json::from_value(request(case)).unwrap())
        .map_err(|e| TestCaseError::fail(e.to_json().to_string()))?;
    let backend = Backend::default();
    let optimum = arbiter::policies::solve(&Problem { method: first, ..problem.clone() }, backend)
        .map_err(|e| TestCaseError::fail(e.to_json().to_string()))?;
    let Some(z) = optimum.objective else { return Ok(None) };
    let with = |method| Problem { method, ..problem.clone() };
    let solve = |p: &Problem| {
        throughput_with(p, &optimum, backend, &options).map_err(|e| TestCaseError::fail(e.to_json().to_string()))
    };
    let Some((want, _)) = solve(&with(Method::Lp))? else { return Ok(None) };
    let (got, report) = solve(&with(Method::Decomposition))?.expect("applies when the engine's does");
    agrees(&problem, &got.allocation, &want.allocation, z)
        .map_err(|e| TestCaseError::fail(format!("{e} ({report:?})")))?;
    Ok(Some(report.method == "decomposition"))
}

/// `got` is feasible, worth what `want` is (`VALUE`), and keeps the policy's optimum `z`
/// (`OBJECTIVE`).
fn agrees(
    problem: &Problem,
    got: &arbiter::problem::Matrix,
    want: &arbiter::problem::Matrix,
    z: f64,
) -> Result<(), TestCaseError> {
    let (got, want) = (matrix_rows(got), matrix_rows(want));
    assert_feasible(problem, &got);
    let (a, b) = (value(problem, &got), value(problem, &want));
    prop_assert!((a - b).abs() <= VALUE * b.abs().max(1.0), "value {a} vs {b}");
    let reached = objective(problem, &got);
    let worse = match problem.policy.name() {
        "max_min_fairness" => z - reached,
        _ => reached - z,
    };
    prop_assert!(worse <= OBJECTIVE * z.abs().max(1e-12), "objective {reached} vs the optimum's {z}");
    Ok(())
}

/// Runs `cases` random instances; of those the tie-break applies to, at least `min_certified`
/// must certify.
fn run(cases: u32, strategy: impl Strategy<Value = Case>, options: DecompositionOptions, min_certified: f64) {
    run_after(cases, strategy, options, min_certified, Method::Auto)
}

/// [`run`], with the optimum solved by `first`.
fn run_after(
    cases: u32,
    strategy: impl Strategy<Value = Case>,
    options: DecompositionOptions,
    min_certified: f64,
    first: Method,
) {
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let (certified, eligible) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    runner
        .run(&strategy, |case| {
            if let Some(ok) = check(&case, options, first)? {
                certified.set(certified.get() + u32::from(ok));
                eligible.set(eligible.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    let share = certified.get() as f64 / eligible.get().max(1) as f64;
    assert!(share >= min_certified, "only {} of {} instances certified", certified.get(), eligible.get());
}

#[test]
fn agrees_with_the_engine_on_few_types() {
    run(200, case(3, 10..=60, 1..=12), small_options(4), 0.95);
}

#[test]
fn agrees_with_the_engine_when_some_types_have_no_gpus() {
    run(100, case(4, 10..=40, 0..=6), small_options(4), 0.95);
}

#[test]
fn agrees_with_the_engine_with_far_more_jobs_than_gpus() {
    run(60, case(2, 100..=200, 1..=4), small_options(8), 0.95);
}

#[test]
fn agrees_with_the_engine_with_default_options() {
    run(8, case(3, 600..=900, 40..=200), DecompositionOptions::default(), 0.75);
}

/// The optimum by decomposition carries its GPU prices, and the second solve starts from the foot
/// of its Lagrangian bound on the ray through them (`prices_from_hint`) instead of a sample's
/// estimate: the same answers, on instances small and large.
#[test]
fn agrees_with_the_engine_when_started_from_the_optimums_prices() {
    run_after(200, case(3, 10..=60, 1..=12), small_options(4), 0.95, Method::Decomposition);
    run_after(60, case(2, 100..=200, 1..=4), small_options(8), 0.95, Method::Decomposition);
    run_after(8, case(3, 600..=900, 40..=200), DecompositionOptions::default(), 0.75, Method::Decomposition);
}

/// The default request on distinct rows: the tie-break's second LP is decomposed, the response
/// says so, and the answer is the plain engine's.
#[test]
fn the_default_tie_break_on_distinct_rows_is_decomposed_and_reported() {
    let jobs: Vec<_> = (0..2500)
        .map(|m| {
            let f = 1.0 + (m as f64 * 0.37).sin() * 0.3;
            json!({"id": format!("j{m}"), "throughput": {"v100": 10.0 * f, "k80": 3.0 / f + (m as f64 * 1e-4)}, "scale_factor": 1 + m % 2, "steps_remaining": 1000 + 10 * m})
        })
        .collect();
    for policy in ["max_min_fairness", "min_makespan"] {
        let request = |method: &str| json!({"policy": policy, "method": method, "cluster": {"worker_types": {"v100": {"count": 300}, "k80": {"count": 900}}}, "jobs": jobs});
        let (p, fast, x) = solve_value(&request("auto"));
        let (_, plain, y) = solve_value(&request("lp"));
        assert_feasible(&p, &x);
        let report = fast.stats.tie_break_method.as_ref().expect("a tie-break method report");
        assert_eq!(report.method, "decomposition", "{policy}: {report:?}");
        assert_eq!(plain.stats.tie_break_method.as_ref().map(|r| r.method.as_str()), Some("lp"), "{policy}");
        assert_close(value(&p, &x), value(&p, &y), VALUE, policy);
        assert_close(fast.objective.unwrap(), plain.objective.unwrap(), OBJECTIVE, policy);
    }
}

/// `max_sum_throughput` is the same LP with every `a_m = 1` and no floors: by decomposition
/// (`method: decomposition`) against the plain LP, on random instances large enough to go
/// through a sample, a band and a certificate.
#[test]
fn max_sum_throughput_by_decomposition_agrees_with_the_lp() {
    let mut runner = TestRunner::new(Config { cases: 16, failure_persistence: None, ..Config::default() });
    let (certified, total) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    runner
        .run(&case(3, 300..=1500, 10..=200), |mut case| {
            case.policy = "max_sum_throughput";
            let solve = |method: &str| {
                let mut request = request(&case);
                request["method"] = json!(method);
                solve_value(&request)
            };
            let (p, fast, x) = solve("decomposition");
            let (_, plain, _) = solve("lp");
            assert_feasible(&p, &x);
            let (a, b) = (fast.objective.unwrap(), plain.objective.unwrap());
            prop_assert!(
                (a - b).abs() <= VALUE * b.abs().max(1.0),
                "objective {a} vs the LP's {b} ({:?})",
                fast.stats.method
            );
            total.set(total.get() + 1);
            certified.set(
                certified.get() + u32::from(fast.stats.method.as_ref().is_some_and(|m| m.method == "decomposition")),
            );
            Ok(())
        })
        .unwrap();
    assert!(certified.get() * 20 >= total.get() * 19, "only {} of {} certified", certified.get(), total.get());
}

/// Jobs drawn from a few rows (classes of identical jobs), with unequal weights and elapsed time,
/// so classes need their top-k cuts and finish-time fairness bisects.
fn repeated_request() -> impl Strategy<Value = Value> {
    let policy = select(vec!["max_min_fairness", "min_makespan", "finish_time_fairness"]);
    let palette = prop::collection::vec((prop::collection::vec(entry(), 3), select(vec![1u32, 1, 2, 4])), 2..=5);
    let job = (0usize..5, select(vec![1.0, 1.0, 2.0, 5.0]), 100.0f64..1e5, prop_oneof![Just(0.0), 0.0f64..5e3]);
    (policy, palette, prop::collection::vec(1u32..=12, 3), prop::collection::vec(job, 10..=80)).prop_map(
        |(policy, palette, mut counts, jobs)| {
            counts[0] = counts[0].max(1);
            let jobs: Vec<Value> = jobs
                .iter()
                .enumerate()
                .map(|(m, &(row, weight, steps, elapsed))| {
                    let (mut thr, sf) = palette[row % palette.len()].clone();
                    if thr.iter().all(|&t| t == 0.0) {
                        thr[0] = 1.0;
                    }
                    let thr: serde_json::Map<String, Value> = (0..3).map(|w| (TYPES[w].to_string(), json!(thr[w]))).collect();
                    json!({"id": format!("j{m}"), "throughput": thr, "scale_factor": sf, "weight": weight,
                           "steps_remaining": steps.round(), "time_elapsed": elapsed, "isolated_time_elapsed": elapsed / 2.0})
                })
                .collect();
            let worker_types: serde_json::Map<String, Value> =
                (0..3).map(|w| (TYPES[w].to_string(), json!({"count": counts[w]}))).collect();
            json!({"policy": policy, "method": "lp", "cluster": {"worker_types": worker_types}, "jobs": jobs})
        },
    )
}

/// The default path keeps the optimum's engine and re-solves its model for the second LP (new
/// objective, the floors in place of `z`): the same value as a second solve on a fresh engine,
/// feasible, and the policy's objective kept.
#[test]
fn the_second_solve_on_the_optimums_model_agrees_with_a_fresh_one() {
    let mut runner = TestRunner::new(Config { cases: 150, failure_persistence: None, ..Config::default() });
    runner
        .run(&repeated_request(), |request| {
            let fail = |e: arbiter::ArbiterError| TestCaseError::fail(e.to_json().to_string());
            let problem = Problem::from_request(&serde_json::from_value(request).unwrap()).map_err(fail)?;
            let backend = Backend::default();
            let (optimum, mut engine) = arbiter::policies::solve_keeping_engine(&problem, backend).map_err(fail)?;
            prop_assert!(engine.is_some(), "the engine policies keep their engine");
            let kept = arbiter::solver::tie_break::apply_on(&problem, optimum.clone(), engine.as_mut(), backend)
                .map_err(fail)?;
            let Some(z) = optimum.objective else { return Ok(()) };
            let fresh = arbiter::policies::solve(&problem, backend).map_err(fail)?;
            let (fresh, _) = throughput_with(&problem, &fresh, backend, &DecompositionOptions::default())
                .map_err(fail)?
                .expect("applies");
            agrees(&problem, &kept.outcome.allocation, &fresh.allocation, z)
        })
        .unwrap();
}

/// On rows that repeat, LAS, makespan and finish-time fairness leave their optimum's split among
/// the jobs to the second solve, which replaces it. Where no second solve follows (space sharing,
/// here with nothing to pair), the optimum is split after all: the same allocation and objective
/// as the bare LP's, every job with time.
#[test]
fn an_optimum_left_unsplit_is_split_when_no_second_solve_follows() {
    for policy in ["max_min_fairness", "min_makespan", "finish_time_fairness"] {
        let jobs: Vec<Value> = (0..8)
            .map(|m| {
                let thr = if m % 2 == 0 { json!({"v100": 4.0, "k80": 1.0}) } else { json!({"v100": 2.0, "k80": 1.5}) };
                json!({"id": format!("j{m}"), "throughput": thr, "steps_remaining": 1000 * (m + 1)})
            })
            .collect();
        let request = json!({"policy": policy, "space_sharing": true, "jobs": jobs,
            "cluster": {"worker_types": {"v100": {"count": 2}, "k80": {"count": 3}}}});
        let (_, shared, x) = solve_value(&request);
        assert_eq!(serde_json::to_value(shared.stats.tie_break).unwrap(), json!("none"), "{policy}");
        for (m, row) in x.iter().enumerate() {
            assert!(row.iter().sum::<f64>() > 0.01, "{policy}: job {m} got no time: {x:?}");
        }
        let mut bare = request.clone();
        bare["tie_break"] = json!("none");
        let (_, bare, y) = solve_value(&bare);
        let (a, b) = (shared.objective.unwrap(), bare.objective.unwrap());
        assert!((a - b).abs() <= 1e-9 * b.abs(), "{policy}: objective {a} against {b}");
        for (xr, yr) in x.iter().zip(&y) {
            assert!(xr.iter().zip(yr).all(|(p, q)| (p - q).abs() < 1e-9), "{policy}: {x:?} against {y:?}");
        }
    }
}
