//! Property tests on random instances (1–40 jobs, 1–4 worker types, 1–16 GPUs per type, scale
//! factors 1/2/4/8, weights 1 or 5, throughputs in [0.1, 100] with some zeros, every job runnable):
//! every allocation is feasible and reports its own objective; the fairness policies are never
//! worse than the isolated allocation (the sharing incentive); and the crate's aggregated
//! formulations match plain per-job LPs built here with `arbiter::lp`. `PROPTEST_CASES=N` runs
//! every property N times instead of its modest default.

use crate::common::plain::*;
use crate::common::random::*;
use crate::common::*;
use arbiter::lp::{Backend, Row, Sense};
use arbiter::{ErrorCode, Problem, Response};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
struct Job {
    row: Vec<f64>,
    sf: u32,
    weight: f64,
    steps: f64,
    /// `time_elapsed` as a fraction of the job's steps (so it stays comparable with its run time).
    elapsed: f64,
    /// `isolated_time_elapsed` as a fraction of `time_elapsed`.
    iso_fraction: f64,
    arrival: f64,
}

#[derive(Debug, Clone)]
struct Instance {
    counts: Vec<u32>,
    costs: Vec<f64>,
    jobs: Vec<Job>,
}

/// A throughput entry: 0 (cannot run there) a quarter of the time, else in [0.1, 100].
fn entry() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(0.0), 3 => 0.1f64..100.0]
}

/// `time_elapsed / steps_remaining`: mostly small next to the job's run time, sometimes far larger.
fn elapsed_fraction() -> impl Strategy<Value = f64> {
    prop_oneof![3 => 0.0f64..0.05, 1 => 0.0f64..20.0]
}

type JobParts = (Vec<f64>, u32, f64, f64, f64, f64, f64, f64);

fn job_parts(types: usize) -> impl Strategy<Value = JobParts> {
    (
        prop::collection::vec(entry(), types),
        select(vec![1u32, 2, 4, 8]),
        select(vec![1.0, 5.0]),
        100.0f64..1e5,
        elapsed_fraction(),
        0.0f64..1.0,
        0.0f64..100.0,
        0.1f64..100.0,
    )
}

fn cluster(types: usize) -> impl Strategy<Value = (Vec<u32>, Vec<f64>)> {
    (prop::collection::vec(1u32..=16, types), prop::collection::vec(0.2f64..5.0, types))
}

/// Independent random jobs.
fn instance() -> impl Strategy<Value = Instance> {
    (1usize..=4).prop_flat_map(|types| (cluster(types), prop::collection::vec(job_parts(types), 1..=40))).prop_map(
        |((counts, costs), parts)| {
            let jobs = parts
                .into_iter()
                .map(|(mut row, mut sf, weight, steps, elapsed, iso, arrival, fb)| {
                    fix_job(&mut row, &mut sf, &counts, fb);
                    Job { row, sf, weight, steps, elapsed, iso_fraction: iso, arrival: arrival.floor() }
                })
                .collect();
            Instance { counts, costs, jobs }
        },
    )
}

/// Jobs drawn from 1–4 prototypes (throughput row and scale factor), each with its own weight
/// and steps: many jobs share a throughput row, which is what the aggregated engines exploit.
fn shared_rows_instance() -> impl Strategy<Value = Instance> {
    (1usize..=4)
        .prop_flat_map(|types| {
            (
                cluster(types),
                prop::collection::vec(
                    (prop::collection::vec(entry(), types), select(vec![1u32, 2, 4, 8]), 0.1f64..100.0),
                    1..=4,
                ),
                prop::collection::vec(
                    (0usize..4, select(vec![1.0, 5.0]), 100.0f64..1e5, elapsed_fraction(), 0.0f64..1.0),
                    1..=40,
                ),
            )
        })
        .prop_map(|((counts, costs), mut protos, picks)| {
            for (row, sf, fb) in &mut protos {
                fix_job(row, sf, &counts, *fb);
            }
            let jobs = picks
                .into_iter()
                .enumerate()
                .map(|(i, (k, weight, steps, elapsed, iso_fraction))| {
                    let (row, sf, _) = &protos[k % protos.len()];
                    Job {
                        row: row.clone(),
                        sf: *sf,
                        weight,
                        steps: steps.round(),
                        elapsed,
                        iso_fraction,
                        arrival: i as f64,
                    }
                })
                .collect();
            Instance { counts, costs, jobs }
        })
}

/// The request for `policy`; `elapsed` turns on the jobs' time_elapsed (FTF's bisection path).
fn request(inst: &Instance, policy: &str, aware: bool, elapsed: bool) -> Value {
    let types =
        by_type(inst.counts.iter().zip(&inst.costs).map(|(c, cost)| json!({"count": c, "cost_per_hour": cost})));
    let jobs: Vec<Value> = inst
        .jobs
        .iter()
        .enumerate()
        .map(|(m, j)| {
            let thr = by_type(j.row.iter().map(|t| json!(t)));
            let mut job = json!({
                "id": format!("job{m}"),
                "throughput": thr,
                "scale_factor": j.sf,
                "weight": j.weight,
                "steps_remaining": j.steps,
                "arrival": j.arrival,
            });
            if elapsed {
                let t = (j.elapsed * j.steps).round();
                job["time_elapsed"] = json!(t);
                job["isolated_time_elapsed"] = json!((t * j.iso_fraction).round());
            }
            job
        })
        .collect();
    random_request(policy, aware, types, jobs)
}

fn run(inst: &Instance, policy: &str, aware: bool, elapsed: bool) -> (Problem, Response, Vec<Vec<f64>>) {
    solve_value(&request(inst, policy, aware, elapsed))
}

/// FTF with elapsed time (the bisection path): the reported max ρ is its allocation's, no worse
/// than isolation, and optimal — at a ρ 1e-5 below it, a plain per-job LP cannot meet every
/// job's demand `r_m / (ρ·D_m − t_m)`.
fn check_ftf_optimal(inst: &Instance, aware: bool) -> Result<(), TestCaseError> {
    let (p, r, x) = run(inst, "finish_time_fairness", aware, true);
    let got = r.objective.unwrap();
    assert_close(got, max_rho(&p, &x), 1e-6, "max ρ vs its allocation");
    let isolated = max_rho(&p, &isolated_by_hand(&p));
    prop_assert!(got <= isolated * (1.0 + 1e-6), "max ρ {} > isolated {}", got, isolated);

    let below = got * (1.0 - 1e-5);
    let thr_iso = throughputs(&p, &isolated_by_hand(&p));
    let mut demand = Vec::new();
    for (m, j) in p.jobs.iter().enumerate() {
        let r = j.steps_remaining.unwrap();
        let d = j.isolated_time_elapsed + r / thr_iso[m];
        let slack = below * d - j.time_elapsed;
        if slack <= 0.0 {
            return Ok(()); // this job's elapsed time alone already exceeds `below`
        }
        demand.push(r / slack);
    }
    let z = plain_max_ratio(&p, &demand);
    prop_assert!(z < 1.0 - 1e-7, "ρ {} is beaten: z = {} at ρ {}", got, z, below);
    Ok(())
}

/// `X_equal` scaled by `min(1, Σ count / Σ sf)`, from the contract.
fn proportional_by_hand(p: &Problem) -> Vec<Vec<f64>> {
    let total: f64 = p.worker_types.iter().map(|w| w.count).sum();
    let occupied: f64 = p.jobs.iter().map(|j| j.scale_factor as f64).sum();
    let s = (total / occupied).min(1.0);
    let row: Vec<f64> = p.worker_types.iter().map(|w| w.count / total * s).collect();
    vec![row; p.num_jobs()]
}

fn assert_same_matrix(got: &[Vec<f64>], want: &[Vec<f64>], what: &str) {
    for (m, (g, w)) in got.iter().zip(want).enumerate() {
        for (t, (a, b)) in g.iter().zip(w).enumerate() {
            assert!((a - b).abs() <= 1e-12, "{what}: X[{m}][{t}] = {a}, want {b}");
        }
    }
}

/// The contract's objective of `policy`, recomputed here from the allocation.
fn objective_by_hand(policy: &str, p: &Problem, x: &[Vec<f64>]) -> Option<f64> {
    Some(match policy {
        "max_min_fairness" | "max_min_fairness_water_filling" => las_value(p, x),
        "finish_time_fairness" => max_rho(p, x),
        "min_makespan" => makespan(p, x),
        "max_sum_throughput" => throughputs(p, x).iter().sum(),
        "fifo" => fifo_value(p, x),
        "shortest_job_first" => {
            let thr = throughputs(p, x);
            (0..p.num_jobs()).map(|m| p.jobs[m].steps_remaining.unwrap() / thr[m]).fold(f64::INFINITY, f64::min)
        }
        "min_cost" => throughput_per_dollar(p, x),
        _ => return None,
    })
}

/// The policies that solve without entities or SLOs.
fn solving() -> Vec<&'static str> {
    policies_except(&["hierarchical", "min_cost_slo"])
}

proptest! {
    #![proptest_config(config(48))]

    /// Every policy: a feasible allocation (checked in `solve_value`) whose reported objective is
    /// the contract's objective of that allocation; isolated and proportional match their formulas.
    #[test]
    fn every_policy_is_feasible_and_reports_its_own_objective(
        inst in instance(),
        aware in any::<bool>(),
        elapsed in any::<bool>(),
    ) {
        for policy in solving() {
            let (p, r, x) = run(&inst, policy, aware, elapsed);
            match objective_by_hand(policy, &p, &x) {
                Some(want) => {
                    let got = r.objective.unwrap_or_else(|| panic!("{policy}: no objective"));
                    assert_close(got, want, 1e-6, policy);
                }
                None => prop_assert_eq!(r.objective, None),
            }
            match policy {
                "isolated" => assert_same_matrix(&x, &isolated_by_hand(&p), policy),
                "proportional" => assert_same_matrix(&x, &proportional_by_hand(&p), policy),
                _ => {}
            }
        }
    }

    /// LAS's sharing incentive: its objective is at least the isolated allocation's value of the
    /// same objective, and it is the value of the allocation it returns.
    #[test]
    fn las_is_at_least_as_fair_as_isolation(inst in instance(), aware in any::<bool>()) {
        let (p, r, x) = run(&inst, "max_min_fairness", aware, false);
        let isolated = matrix_rows(&p.isolated_allocation());
        assert_same_matrix(&isolated, &isolated_by_hand(&p), "Problem::isolated_allocation");
        let floor = las_value(&p, &isolated);
        let got = r.objective.unwrap();
        prop_assert!(got >= floor * (1.0 - 1e-6), "LAS {} < isolated {}", got, floor);
        assert_close(got, las_value(&p, &x), 1e-6, "LAS objective vs its allocation");
    }

    /// The makespan never exceeds the isolated allocation's makespan.
    #[test]
    fn makespan_is_no_worse_than_isolation(inst in instance(), aware in any::<bool>()) {
        let (p, r, x) = run(&inst, "min_makespan", aware, false);
        let isolated = makespan(&p, &matrix_rows(&p.isolated_allocation()));
        let got = r.objective.unwrap();
        prop_assert!(got <= isolated * (1.0 + 1e-6), "makespan {} > isolated {}", got, isolated);
        assert_close(got, makespan(&p, &x), 1e-6, "makespan vs its allocation");
    }

    /// With nothing elapsed the isolated allocation has ρ = 1 for every job, so FTF's max ρ ≤ 1.
    #[test]
    fn ftf_is_at_most_one_when_nothing_elapsed(inst in instance(), aware in any::<bool>()) {
        let (p, r, x) = run(&inst, "finish_time_fairness", aware, false);
        for rho in ftf_rhos(&p, &isolated_by_hand(&p)) {
            assert_close(rho, 1.0, 1e-9, "isolated ρ");
        }
        let got = r.objective.unwrap();
        prop_assert!(got <= 1.0 + 1e-6, "max ρ {}", got);
        assert_close(got, max_rho(&p, &x), 1e-6, "max ρ vs its allocation");
    }
}

proptest! {
    #![proptest_config(config(24))]

    /// FTF with elapsed time on independent random jobs (see `check_ftf_optimal`).
    #[test]
    fn ftf_with_elapsed_time_is_optimal(inst in instance(), aware in any::<bool>()) {
        check_ftf_optimal(&inst, aware)?;
    }

    /// min_cost: a ratio of sums is at most the best single (job, type) ratio T/(cost·sf), and that
    /// ratio is reached by the column alone, so the optimum is exactly the best column. Its
    /// throughput is the most a plain per-job LP gets with its ratio row `Σ (T − best·cost·sf)·X ≥ 0`.
    /// The row's `best` is lowered by 10⁻¹² (relative) so the best column meets it despite
    /// round-off. Lowered by 10⁻⁹, it let in 4.2·10⁻⁶ of the time of a column whose ratio is
    /// 2.4·10⁻⁴ below the best: 4.2·10⁻⁶ more throughput than the best ratio allows (the slack
    /// is multiplied by `best / (best − ratio)`).
    #[test]
    fn min_cost_reaches_the_best_column_ratio(inst in instance()) {
        let (p, r, x) = run(&inst, "min_cost", true, false);
        let cost = |m: usize, w: usize| p.worker_types[w].cost_per_hour.unwrap() * p.jobs[m].scale_factor as f64;
        let mut best: f64 = 0.0;
        for m in 0..p.num_jobs() {
            for w in 0..p.num_types() {
                best = best.max(p.measured.get(m, w) / cost(m, w));
            }
        }
        assert_close(r.objective.unwrap(), best, 1e-6, "throughput per dollar-hour");
        let (mut lp, cols) = plain_base_lp(&p, Sense::Maximize);
        let mut keep = Vec::new();
        for (m, row) in cols.consolidated.iter().enumerate() {
            for (w, c) in row.iter().enumerate() {
                if let Some(c) = *c {
                    lp.cost[c] = p.measured.get(m, w);
                    keep.push((c, p.measured.get(m, w) - best * (1.0 - 1e-12) * cost(m, w)));
                }
            }
        }
        lp.add_row(Row::at_least(0.0, keep));
        let most = Backend::default().solve(lp).expect("plain ratio-row LP solves").objective;
        let got: f64 = throughputs(&p, &x).iter().sum();
        assert_close(got, most, 1e-6, "throughput at the best ratio");
    }

    /// shortest_job_first: min_m r_m / thr_m is smallest when the job with the shortest best-case
    /// run gets its best throughput alone on the cluster (found here by a plain LP per job).
    #[test]
    fn sjf_reaches_the_shortest_best_case(inst in instance()) {
        let (p, r, _) = run(&inst, "shortest_job_first", true, false);
        let best = (0..p.num_jobs())
            .map(|m| {
                let alone = plain_max_linear(&p, |o, w| if o == m { p.measured.get(m, w) } else { 0.0 });
                p.jobs[m].steps_remaining.unwrap() / alone
            })
            .fold(f64::INFINITY, f64::min);
        assert_close(r.objective.unwrap(), best, 1e-6, "shortest duration");
    }

    /// min_cost_slo with SLOs every job can meet together (90% of its isolated throughput, which
    /// the isolated allocation gives all at once): accepted, every SLO met, and no more throughput
    /// per dollar than min_cost without SLOs. With one job's SLO beyond its best throughput alone:
    /// refused as infeasible, naming that job.
    #[test]
    fn min_cost_slo_meets_feasible_slos(inst in instance(), pick in prop::collection::vec(any::<bool>(), 40)) {
        let p0 = problem(&request(&inst, "min_cost", true, false).to_string());
        let mut req = request(&inst, "min_cost_slo", true, false);
        let thr_iso = throughputs(&p0, &isolated_by_hand(&p0));
        let mut any = false;
        for (m, job) in req["jobs"].as_array_mut().unwrap().iter_mut().enumerate() {
            if pick[m] || m == 0 {
                any = true;
                let steps = job["steps_remaining"].as_f64().unwrap();
                job["slo_seconds"] = json!(steps / (0.9 * thr_iso[m]));
            }
        }
        prop_assert!(any);
        let (p, r, x) = solve_value(&req);
        let thr = throughputs(&p, &x);
        for (m, j) in p.jobs.iter().enumerate() {
            if let Some(slo) = j.slo_seconds {
                let need = j.steps_remaining.unwrap() / slo;
                prop_assert!(thr[m] >= need * (1.0 - 1e-6), "{}: {} < {}", j.id, thr[m], need);
            }
        }
        let got = r.objective.unwrap();
        assert_close(got, throughput_per_dollar(&p, &x), 1e-6, "ratio vs its allocation");
        let (_, unconstrained, _) = run(&inst, "min_cost", true, false);
        prop_assert!(got <= unconstrained.objective.unwrap() * (1.0 + 1e-6));

        // Job 0 now needs 10% more than it can make alone on the whole cluster.
        let alone = plain_max_linear(&p, |o, w| if o == 0 { p.measured.get(0, w) } else { 0.0 });
        let steps = req["jobs"][0]["steps_remaining"].as_f64().unwrap();
        req["jobs"][0]["slo_seconds"] = json!(steps / (1.1 * alone));
        let err = solve_err(&req.to_string());
        prop_assert_eq!(err.code, ErrorCode::Infeasible);
        prop_assert!(err.jobs.contains(&"job0".to_string()), "{}", err.to_json());
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// The exact aggregated LAS engine (classes of identical jobs, lazy top-k cuts, constructive
    /// split) has the optimum of the plain per-job LP:
    /// max z s.t. Σ_w T X ≥ z·w·thr_equal/sf, Σ_w X ≤ 1, Σ_m sf X ≤ count.
    #[test]
    fn las_engine_matches_the_plain_lp(inst in shared_rows_instance(), aware in any::<bool>()) {
        let (p, r, x) = run(&inst, "max_min_fairness", aware, false);
        let eq = equal_share_throughput(&p);
        let demand: Vec<f64> = p.jobs.iter().enumerate()
            .map(|(m, j)| j.weight * eq[m] / j.scale_factor as f64)
            .collect();
        let plain = plain_max_ratio(&p, &demand);
        assert_close(r.objective.unwrap(), plain, 1e-6, "LAS vs plain LP");
        // The split of each class among its jobs really delivers z to every job.
        assert_close(las_value(&p, &x), plain, 1e-6, "LAS allocation vs plain LP");
    }

    /// FTF with elapsed time where many jobs share a throughput row but not their demands.
    #[test]
    fn ftf_engine_is_optimal_on_shared_rows(inst in shared_rows_instance(), aware in any::<bool>()) {
        check_ftf_optimal(&inst, aware)?;
    }

    /// The same for min_makespan (demand β = steps_remaining): 1/makespan is the plain LP's z.
    #[test]
    fn makespan_engine_matches_the_plain_lp(inst in shared_rows_instance(), aware in any::<bool>()) {
        let (p, r, x) = run(&inst, "min_makespan", aware, false);
        let demand: Vec<f64> = p.jobs.iter().map(|j| j.steps_remaining.unwrap()).collect();
        let plain = 1.0 / plain_max_ratio(&p, &demand);
        assert_close(r.objective.unwrap(), plain, 1e-6, "makespan vs plain LP");
        assert_close(makespan(&p, &x), plain, 1e-6, "makespan allocation vs plain LP");
    }

    /// max_sum_throughput groups identical jobs into one column; fifo does not. Both must reach
    /// the plain per-job LP's optimum of their linear objective.
    #[test]
    fn linear_policies_match_the_plain_lp(inst in shared_rows_instance(), aware in any::<bool>()) {
        let (p, r, _) = run(&inst, "max_sum_throughput", aware, false);
        let plain = plain_max_linear(&p, |m, w| policy_throughput(&p, m, w));
        assert_close(r.objective.unwrap(), plain, 1e-6, "max_sum_throughput vs plain LP");

        let (p, r, _) = run(&inst, "fifo", aware, false);
        let k = fifo_priorities(&p);
        let plain = plain_max_linear(&p, |m, w| k[m] * policy_throughput(&p, m, w));
        assert_close(r.objective.unwrap(), plain, 1e-6, "fifo vs plain LP");
    }
}

/// Types with idle GPUs, and jobs with time left that could run there (`T > 0`, scale factor
/// within the type): each such (job, type) is a Pareto improvement the allocation leaves out.
fn idle_capacity_a_job_could_use(p: &Problem, x: &[Vec<f64>]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for (w, wt) in p.worker_types.iter().enumerate() {
        let used: f64 = p.jobs.iter().enumerate().map(|(m, j)| j.scale_factor as f64 * x[m][w]).sum();
        if wt.count - used <= 1e-6 {
            continue;
        }
        for (m, j) in p.jobs.iter().enumerate() {
            let time_left = 1.0 - x[m].iter().sum::<f64>();
            if time_left > 1e-6 && p.throughput.get(m, w) > 0.0 && j.scale_factor as f64 <= wt.count {
                found.push((m, w));
            }
        }
    }
    found
}

proptest! {
    #![proptest_config(config(32))]

    /// No GPU left idle that a job could use: with the default tie-break, the bottleneck policies
    /// keep the bare LP's objective and leave no (job, type) Pareto improvement; so do the policies
    /// whose objective values every job's throughput, and water-filling.
    #[test]
    fn no_gpu_left_idle_that_a_job_could_use(inst in instance(), aware in any::<bool>(), elapsed in any::<bool>()) {
        let policies = [
            "max_min_fairness", "min_makespan", "finish_time_fairness", "shortest_job_first",
            "max_sum_throughput", "fifo", "max_min_fairness_water_filling",
        ];
        for policy in policies {
            let mut req = request(&inst, policy, aware, elapsed);
            let (p, r, x) = solve_value(&req);
            let idle = idle_capacity_a_job_could_use(&p, &x);
            prop_assert!(idle.is_empty(), "{}: (job, type) with idle GPUs and time left: {:?}", policy, idle);
            req["tie_break"] = json!("none");
            let (_, bare, _) = solve_value(&req);
            if let (Some(a), Some(b)) = (r.objective, bare.objective) {
                assert_close(a, b, 1e-6, policy);
            }
            let applied = serde_json::to_value(r.stats.tie_break).unwrap();
            let expected = if arbiter::solver::tie_break::applies(p.policy) { "throughput" } else { "none" };
            prop_assert_eq!(applied, json!(expected), "{}", policy);
        }
    }
}
