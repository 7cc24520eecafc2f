//! The Gavel paper's worked examples: §4.1, T = [[4,1],[3,1],[2,1]] on one V100 and one K80,
//! weights 1, max-min fairness: objective 8/11, X ≈ [[0.45,0],[0.45,0.09],[0.09,0.91]]; and
//! §4.3, water-filling four identical jobs with weights 3, 1, 1, 1 on four GPUs.

use crate::common::*;
use serde_json::Value;

const REQUEST: &str = "paper_worked_example.json";
const EXPECTED: &str = "paper_worked_example.expected.json";

/// Why X itself (not just the objective) can be compared here.
///
/// X_equal = [1/2, 1/2], so thr_equal = [2.5, 2, 1.5] and LAS is `max z` s.t. thr_m ≥ z·thr_equal_m.
/// At X* = [[5/11, 0], [5/11, 1/11], [1/11, 10/11]] every job gets exactly z = 8/11 of its demand
/// (20/11, 16/11, 12/11), both GPUs are fully used and job 2's row sums to 1.
/// Dual: multipliers u_m on the throughput rows, p_w on the capacities, r_m on the job rows; the
/// positive X entries give p_v100 = 4u0 = 3u1 = 2u2 − r2 and p_k80 = u1 = u2 − r2, so u2 = 2u1,
/// r2 = u1, u0 = 3u1/4, and Σ u_m·thr_equal_m = 1 gives u1 = 8/55 > 0. Every multiplier is
/// strictly positive and the one zero entry (job 0 on the K80) has reduced cost u1 − u0 > 0, so every
/// optimal X keeps all these rows tight and that entry at 0: 4d00 = 0, 3d10 + d11 = 0,
/// 2d20 + d21 = 0, d00 + d10 + d20 = 0, d11 + d21 = 0, d20 + d21 = 0 force d = 0. X* is unique.
#[test]
fn las_worked_example_matches_the_paper() {
    let (p, r, x) = solve_ok(&fixture_text(REQUEST));
    let expected = fixture_json(EXPECTED);

    let objective = r.objective.expect("LAS reports an objective");
    assert_close(objective, 8.0 / 11.0, 1e-6, "objective");
    assert_close(objective, expected["objective"].as_f64().unwrap(), 1e-6, "objective vs fixture");
    assert_close(las_value(&p, &x), 8.0 / 11.0, 1e-6, "objective recomputed from X");

    for (m, job) in p.jobs.iter().enumerate() {
        for (w, wt) in p.worker_types.iter().enumerate() {
            let want = expected["allocation"][&job.id][&wt.name].as_f64().unwrap();
            assert!((x[m][w] - want).abs() < 1e-6, "X[{}][{}] = {}, paper says {want}", job.id, wt.name, x[m][w]);
        }
        let want = expected["effective_throughput"][&job.id].as_f64().unwrap();
        assert_close(r.effective_throughput[&job.id], want, 1e-6, "effective throughput");
    }
    // The paper's rounded figures, as printed.
    let rounded = [[0.45, 0.0], [0.45, 0.09], [0.09, 0.91]];
    for (m, paper_row) in rounded.iter().enumerate() {
        for (name, want) in ["v100", "k80"].iter().zip(paper_row) {
            let w = p.worker_types.iter().position(|t| t.name == *name).unwrap();
            assert!((x[m][w] - want).abs() < 0.01, "X[{m}][{name}] = {}", x[m][w]);
        }
    }
    assert!(r.stats.lp_solves >= 1);
}

/// The answer is about the jobs, not where they sit in the request: reversing the job order and
/// listing the worker types the other way round must give every job the same allocation.
#[test]
fn las_worked_example_does_not_depend_on_order() {
    let mut request = fixture_json(REQUEST);
    request["jobs"].as_array_mut().unwrap().reverse();
    let types = request["cluster"]["worker_types"].clone();
    let mut reordered = serde_json::Map::new();
    for name in ["k80", "v100"] {
        reordered.insert(name.to_string(), types[name].clone());
    }
    request["cluster"]["worker_types"] = Value::Object(reordered);

    let (_, r, _) = solve_value(&request);
    let ids: Vec<&String> = r.allocation.keys().collect();
    assert_eq!(ids, ["j2", "j1", "j0"], "response keeps the request's job order");
    let expected = fixture_json(EXPECTED);
    assert_close(r.objective.unwrap(), 8.0 / 11.0, 1e-6, "objective");
    for (id, row) in &r.allocation {
        for (w, v) in row {
            let want = expected["allocation"][id][w].as_f64().unwrap();
            assert!((v - want).abs() < 1e-6, "X[{id}][{w}] = {v}, want {want}");
        }
    }
}

/// The same jobs under the classic type-blind policy: every T is 1, thr_equal = 1, so each job's
/// value is its total time share; three jobs on two GPUs get 2/3 of the time each, and their
/// measured throughputs follow from wherever that time lands. The aware policy's 8/11 of the
/// equal share is what heterogeneity awareness buys.
#[test]
fn las_worked_example_heterogeneity_agnostic() {
    let mut request = fixture_json(REQUEST);
    request["heterogeneity_aware"] = Value::Bool(false);
    let (p, r, x) = solve_value(&request);
    assert!(!p.heterogeneity_aware);
    assert_close(r.objective.unwrap(), 2.0 / 3.0, 1e-6, "objective");
    for (m, row) in x.iter().enumerate() {
        let time: f64 = row.iter().sum();
        assert!((time - 2.0 / 3.0).abs() < 1e-6, "job {m} time share {time}");
    }
}

/// Paper §4.3: four identical jobs on four identical GPUs, weights 3, 1, 1, 1. thr_equal = 1, so a
/// job's value is x/w. First level: x1 = 3z and x2..4 = z with 6z ≤ 4 GPUs, but x1 ≤ 1 caps it:
/// z = 1/3, job 1 gets throughput 1.0 and the others 1/3; job 1 is bottlenecked. Second level:
/// the 3 GPUs left give jobs 2–4 a full GPU each. Every job ends with X = 1; the minimum
/// (sf/w)·nt is job 1's 1/3.
#[test]
fn water_filling_example_two_levels() {
    let (p, r, x) = solve_ok(&fixture_text("paper_water_filling.json"));
    for (m, row) in x.iter().enumerate() {
        assert!((row[0] - 1.0).abs() < 1e-6, "job {} gets {}", m + 1, row[0]);
    }
    assert_close(r.objective.unwrap(), 1.0 / 3.0, 1e-6, "objective");
    let thr = throughputs(&p, &x);
    assert_close(thr[0], 1.0, 1e-6, "job 1's throughput");
    // LAS is the first level alone: z = 1/3 needs job 1's whole time; the others need only 1/3
    // and may get anything up to 1 (GPUs are left over), so only z and job 1 are pinned.
    let mut las = fixture_json("paper_water_filling.json");
    las["policy"] = Value::from("max_min_fairness");
    let (p, r, x) = solve_value(&las);
    assert_close(r.objective.unwrap(), 1.0 / 3.0, 1e-6, "LAS objective");
    assert_close(las_value(&p, &x), 1.0 / 3.0, 1e-6, "LAS recomputed");
    assert!((x[0][0] - 1.0).abs() < 1e-6, "LAS gives job 1 {}", x[0][0]);
}
