//! Helpers shared by the integration tests: fixture loading, the feasibility check every returned
//! allocation goes through, objectives recomputed from an allocation straight from the contract's
//! definitions (never through the crate's own helpers), the policy names; plain per-job LPs built
//! with `arbiter::lp` to check the crate's aggregated formulations against (`plain`), what a
//! water-filling response reports (`levels`), and pieces of random instances (`random`).
#![allow(dead_code)]

pub mod levels;
pub mod plain;
pub mod process;
pub mod random;

use arbiter::lp::Backend;
use arbiter::{ArbiterError, ErrorCode, Problem, Response};
use serde_json::Value;

/// Slack allowed on the feasibility constraints.
pub const FEAS_TOL: f64 = 1e-6;

/// Every policy of the contract, by name.
pub const POLICIES: [&str; 12] = [
    "max_min_fairness",
    "max_min_fairness_water_filling",
    "hierarchical",
    "finish_time_fairness",
    "min_makespan",
    "max_sum_throughput",
    "fifo",
    "shortest_job_first",
    "min_cost",
    "min_cost_slo",
    "isolated",
    "proportional",
];

/// `POLICIES` but those in `skip`, in the same order.
pub fn policies_except(skip: &[&str]) -> Vec<&'static str> {
    POLICIES.into_iter().filter(|p| !skip.contains(p)).collect()
}

pub fn fixture_path(name: &str) -> String {
    format!("{}/fixtures/{}", env!("CARGO_MANIFEST_DIR"), name)
}

pub fn fixture_text(name: &str) -> String {
    let path = fixture_path(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

pub fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&fixture_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Parses and validates `text`, panicking with the error if it is refused.
pub fn problem(text: &str) -> Problem {
    Problem::from_json(text).unwrap_or_else(|e| panic!("request refused: {}", e.to_json()))
}

/// Solves `text` with the default backend; panics with the error object if it is refused.
/// Every response that comes back is checked feasible and self-consistent before it is returned.
pub fn solve_ok(text: &str) -> (Problem, Response, Vec<Vec<f64>>) {
    let p = problem(text);
    let r = arbiter::solve_json(text, Backend::default()).unwrap_or_else(|e| panic!("solve failed: {}", e.to_json()));
    let x = checked_allocation(&p, &r);
    (p, r, x)
}

pub fn solve_value(request: &Value) -> (Problem, Response, Vec<Vec<f64>>) {
    solve_ok(&request.to_string())
}

/// The error `text` is refused with (panics if it is accepted).
pub fn solve_err(text: &str) -> ArbiterError {
    match arbiter::solve_json(text, Backend::default()) {
        Ok(r) => panic!("expected a refusal, got a response: {}", serde_json::to_string(&r).unwrap()),
        Err(e) => e,
    }
}

/// Asserts the refusal's code and field path.
pub fn assert_error(err: &ArbiterError, code: ErrorCode, field: Option<&str>) {
    assert_eq!(err.code, code, "wrong code in {}", err.to_json());
    assert_eq!(err.field.as_deref(), field, "wrong field in {}", err.to_json());
    assert!(!err.message.is_empty(), "empty message in {}", err.to_json());
}

/// The response's allocation as a dense matrix in the problem's job and type order, after checking
/// that it names exactly the request's jobs and types, is feasible with its colocated pairs, and
/// that the reported effective throughputs are `Σ_w measured[m][w]·X[m][w]` plus each pair's
/// `Σ_w T_k[m][w]·Y[k][w]`.
pub fn checked_allocation(p: &Problem, r: &Response) -> Vec<Vec<f64>> {
    assert_eq!(r.policy, p.policy.name());
    assert_eq!(r.allocation.len(), p.num_jobs(), "one allocation row per job");
    let (pair_busy, pair_used, pair_thr) = colocated_use(p, r);
    let mut x = Vec::with_capacity(p.num_jobs());
    for (m, job) in p.jobs.iter().enumerate() {
        let row = r.allocation.get(&job.id).unwrap_or_else(|| panic!("job {} missing from the allocation", job.id));
        assert_eq!(row.len(), p.num_types(), "job {}: one entry per type", job.id);
        let dense: Vec<f64> = p
            .worker_types
            .iter()
            .map(|w| *row.get(&w.name).unwrap_or_else(|| panic!("job {}: type {} missing", job.id, w.name)))
            .collect();
        let measured: f64 = (0..p.num_types()).map(|w| p.measured.get(m, w) * dense[w]).sum::<f64>() + pair_thr[m];
        let reported = r.effective_throughput[&job.id];
        assert!(
            (reported - measured).abs() <= 1e-9 * measured.abs().max(1.0),
            "job {}: effective throughput {reported} but Σ T·X + Σ T_k·Y = {measured}",
            job.id
        );
        x.push(dense);
    }
    assert_feasible_with(p, &x, &pair_busy, &pair_used);
    x
}

/// What the response's colocated pairs and unconsolidated time use and give: per job the time and the steps/s (measured),
/// per type the GPUs. Every pair must be one the request offered, with space sharing on.
pub fn colocated_use(p: &Problem, r: &Response) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut busy, mut used, mut thr) = (vec![0.0; p.num_jobs()], vec![0.0; p.num_types()], vec![0.0; p.num_jobs()]);
    // Placement sensitivity: unconsolidated time is the job's time on sf GPUs at T^u.
    for (id, row) in &r.unconsolidated_allocation {
        let tu = p.unconsolidated.as_ref().expect("unconsolidated time only with unconsolidated throughputs");
        let m = p.jobs.iter().position(|j| &j.id == id).unwrap_or_else(|| panic!("unknown job {id}"));
        for (name, &u) in row {
            let w = p.worker_types.iter().position(|t| &t.name == name).expect("a known type");
            assert!(u.is_finite() && u >= 0.0, "job {id}: U = {u}");
            busy[m] += u;
            used[w] += p.jobs[m].scale_factor as f64 * u;
            thr[m] += tu.get(m, w) * u;
        }
    }
    if r.colocated_allocation.is_empty() {
        return (busy, used, thr);
    }
    // Gandiva pairs jobs by its own rule, whatever space_sharing says (formulations/gandiva.md).
    assert!(
        p.space_sharing || p.policy == arbiter::PolicyKind::Gandiva,
        "a colocated allocation without space sharing"
    );
    let index = |id: &str| p.jobs.iter().position(|j| j.id == id).unwrap_or_else(|| panic!("unknown job {id}"));
    for pair in &r.colocated_allocation {
        let jobs = [index(&pair.jobs[0]), index(&pair.jobs[1])];
        let colocation = p
            .colocations
            .iter()
            .find(|c| c.jobs == jobs)
            .unwrap_or_else(|| panic!("pair {:?} was not offered", pair.jobs));
        for (name, &y) in &pair.allocation {
            let w = p.worker_types.iter().position(|t| &t.name == name).expect("a known type");
            assert!(y.is_finite() && y >= 0.0, "pair {:?}: Y = {y}", pair.jobs);
            for (i, &m) in jobs.iter().enumerate() {
                busy[m] += y;
                thr[m] += colocation.throughput[w][i] * y;
            }
            used[w] += p.jobs[jobs[0]].scale_factor as f64 * y;
        }
    }
    (busy, used, thr)
}

/// `X ≥ 0`, every row sums to at most 1, and `Σ_m sf_m X[m][w] ≤ count_w` (all within 1e-6).
pub fn assert_feasible(p: &Problem, x: &[Vec<f64>]) {
    assert_feasible_with(p, x, &vec![0.0; p.num_jobs()], &vec![0.0; p.num_types()]);
}

/// `assert_feasible` with each job's time in pairs and each type's GPUs used by pairs added.
pub fn assert_feasible_with(p: &Problem, x: &[Vec<f64>], pair_busy: &[f64], pair_used: &[f64]) {
    assert_eq!(x.len(), p.num_jobs());
    for (m, row) in x.iter().enumerate() {
        assert_eq!(row.len(), p.num_types());
        for (w, &v) in row.iter().enumerate() {
            assert!(v.is_finite() && v >= 0.0, "X[{m}][{w}] = {v} is not a finite non-negative number");
        }
        let busy: f64 = row.iter().sum::<f64>() + pair_busy[m];
        assert!(busy <= 1.0 + FEAS_TOL, "job {m} busy {busy} > 1");
    }
    for (w, wt) in p.worker_types.iter().enumerate() {
        let used: f64 =
            x.iter().zip(&p.jobs).map(|(row, j)| j.scale_factor as f64 * row[w]).sum::<f64>() + pair_used[w];
        assert!(used <= wt.count + FEAS_TOL, "type {} uses {used} GPUs of {}", wt.name, wt.count);
    }
}

/// The matrix the policy optimizes over, from the contract: measured, or all ones when agnostic.
pub fn policy_throughput(p: &Problem, m: usize, w: usize) -> f64 {
    if p.heterogeneity_aware {
        p.measured.get(m, w)
    } else {
        1.0
    }
}

/// `thr_m = Σ_w T[m][w] X[m][w]` with the policy's matrix.
pub fn throughputs(p: &Problem, x: &[Vec<f64>]) -> Vec<f64> {
    (0..p.num_jobs()).map(|m| (0..p.num_types()).map(|w| policy_throughput(p, m, w) * x[m][w]).sum()).collect()
}

/// `thr_equal_m = Σ_w T[m][w] · count_w / Σ count`.
pub fn equal_share_throughput(p: &Problem) -> Vec<f64> {
    let total: f64 = p.worker_types.iter().map(|w| w.count).sum();
    (0..p.num_jobs())
        .map(|m| p.worker_types.iter().enumerate().map(|(w, wt)| policy_throughput(p, m, w) * wt.count / total).sum())
        .collect()
}

pub fn matrix_rows(m: &arbiter::problem::Matrix) -> Vec<Vec<f64>> {
    (0..m.rows()).map(|r| m.row(r).to_vec()).collect()
}

/// `X_isolated` from the contract's formula, computed here (not by the crate).
pub fn isolated_by_hand(p: &Problem) -> Vec<Vec<f64>> {
    let n = p.num_jobs() as f64;
    p.jobs
        .iter()
        .map(|j| {
            let row: Vec<f64> = p.worker_types.iter().map(|w| w.count / n / j.scale_factor as f64).collect();
            let s: f64 = row.iter().sum();
            row.iter().map(|v| if s > 1.0 { v / s } else { *v }).collect()
        })
        .collect()
}

/// `(sf_m / w_m) · thr_m / thr_equal_m` of every job, with the job's own weight.
pub fn weighted_levels(p: &Problem, x: &[Vec<f64>]) -> Vec<f64> {
    let thr = throughputs(p, x);
    let eq = equal_share_throughput(p);
    p.jobs.iter().enumerate().map(|(m, j)| j.scale_factor as f64 / j.weight * thr[m] / eq[m]).collect()
}

/// LAS's objective `min_m (sf_m / weight_m) · thr_m / thr_equal_m` of an allocation.
pub fn las_value(p: &Problem, x: &[Vec<f64>]) -> f64 {
    weighted_levels(p, x).into_iter().fold(f64::INFINITY, f64::min)
}

/// `max_m r_m / thr_m` over jobs with steps left.
pub fn makespan(p: &Problem, x: &[Vec<f64>]) -> f64 {
    let thr = throughputs(p, x);
    p.jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| j.steps_remaining.unwrap() > 0.0)
        .map(|(m, j)| j.steps_remaining.unwrap() / thr[m])
        .fold(0.0, f64::max)
}

/// `ρ_m = (t_m + r_m/thr_m) / (t_iso_m + r_m/thr_iso_m)` for every job.
pub fn ftf_rhos(p: &Problem, x: &[Vec<f64>]) -> Vec<f64> {
    let thr = throughputs(p, x);
    let thr_iso = throughputs(p, &isolated_by_hand(p));
    p.jobs
        .iter()
        .enumerate()
        .map(|(m, j)| {
            let r = j.steps_remaining.unwrap();
            (j.time_elapsed + r / thr[m]) / (j.isolated_time_elapsed + r / thr_iso[m])
        })
        .collect()
}

pub fn max_rho(p: &Problem, x: &[Vec<f64>]) -> f64 {
    ftf_rhos(p, x).into_iter().fold(0.0, f64::max)
}

/// `Σ_m thr_m / Σ_m Σ_w cost_w · sf_m · X[m][w]`.
pub fn throughput_per_dollar(p: &Problem, x: &[Vec<f64>]) -> f64 {
    let thr: f64 = throughputs(p, x).iter().sum();
    let cost: f64 = p
        .jobs
        .iter()
        .enumerate()
        .map(|(m, j)| {
            p.worker_types
                .iter()
                .enumerate()
                .map(|(w, wt)| wt.cost_per_hour.unwrap() * j.scale_factor as f64 * x[m][w])
                .sum::<f64>()
        })
        .sum();
    thr / cost
}

/// FIFO's per-job objective coefficient `(M − rank_m) / max_w T[m][w]`, rank by arrival with
/// ties in request order.
pub fn fifo_priorities(p: &Problem) -> Vec<f64> {
    let n = p.num_jobs();
    (0..n)
        .map(|m| {
            let rank = (0..n)
                .filter(|&o| {
                    let (a, b) = (p.jobs[o].arrival, p.jobs[m].arrival);
                    a < b || (a == b && o < m)
                })
                .count();
            let best = (0..p.num_types()).map(|w| policy_throughput(p, m, w)).fold(0.0, f64::max);
            (n - rank) as f64 / best
        })
        .collect()
}

pub fn fifo_value(p: &Problem, x: &[Vec<f64>]) -> f64 {
    throughputs(p, x).iter().zip(fifo_priorities(p)).map(|(t, k)| t * k).sum()
}

pub fn assert_close(got: f64, want: f64, rel: f64, what: &str) {
    assert!(
        (got - want).abs() <= rel * want.abs().max(1e-12),
        "{what}: got {got}, want {want} (relative tolerance {rel})"
    );
}
