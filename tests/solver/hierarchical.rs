//! `hierarchical`: water-filling whose job weights come from an entity tree, re-derived after every
//! freeze. Hand-derived instances (a FIFO entity handing its weight on, a three-level org → teams
//! → users tree), trivial nesting against the flat form, request validation, and properties on
//! random trees: feasibility, Pareto efficiency, and agreement job by job with a plain
//! water-filling written from the contract (`crate::common::plain::plain_water_filling`: per-job LPs,
//! one bottleneck LP per job), here with the entity tree's weights (`tree_weights`).
//!
//! On a single worker type `X_equal = 1`, so `thr_equal_m = T_m` and `nt_m = X_m` whatever the
//! job's throughput: the hand-checked instances use one type and give the jobs different
//! throughputs only so that the engine cannot lump them into one class.

use crate::common::levels::*;
use crate::common::plain::*;
use crate::common::random::*;
use crate::common::*;
use arbiter::{ErrorCode, Problem};
use proptest::prelude::*;
use serde_json::{json, Value};

/// Normalized throughputs recomputed from the allocation (the contract's definition).
fn nt_of(p: &Problem, x: &[Vec<f64>]) -> Vec<f64> {
    let eq = equal_share_throughput(p);
    throughputs(p, x).iter().zip(&eq).map(|(t, e)| t / e).collect()
}

// ---------------------------------------------------------------------------------------------
// Hand-derived instances.

/// Entity F (fifo, weight 2) has f1 (arrival 0) and f2 (arrival 1, listed first); entity B
/// (fairness, weight 2) has b1 and b2 (job weight 1 each); three GPUs of one type.
///
/// Iteration 0: F's whole weight goes to its earliest job f1; B's splits 1 + 1; f2 has weight 0.
/// Values x/w rise together: x_f1 = 2z, x_b1 = x_b2 = z. f1's row (x ≤ 1) stops it at z = 1/2
/// (the GPUs would allow 4z ≤ 3, z = 3/4): f1 = 1 is stuck and freezes at level 1/2; b1, b2 = 1/2.
/// Iteration 1: F hands its weight 2 to f2. x_f2 = 2c, x_b = 1/2 + c; f2's row allows c ≤ 1/2,
/// the GPUs 1 + 1 + 4c ≤ 3, c ≤ 1/4. So c = 1/4: f2 = 1/2 (level 1/4), b1 = b2 = 3/4 (level 3/4),
/// every GPU busy, all three stuck. Without the hand-off f2 would stay at 0 and B get 1 + 1.
#[test]
fn fifo_entity_hands_its_weight_to_the_next_job() {
    let request = fixture_json("hierarchical/fifo_hand_off.json");
    assert_by_hand(
        &request,
        &[("f1", 1.0, 0.5, 0), ("f2", 0.5, 0.25, 1), ("b1", 0.75, 0.75, 1), ("b2", 0.75, 0.75, 1)],
    );
}

/// One fifo entity, two GPUs, four jobs: e (arrival 0), two tied at arrival 1, l (arrival 2).
/// e takes a whole GPU (its row) at iteration 0; then the entity's weight goes to the first-listed
/// of the tied jobs, which takes the other GPU at iteration 1; the GPUs are then full, so the
/// second tied job and l each get their turn at a zero level, in that order. Listing the tied
/// jobs the other way round swaps who wins.
#[test]
fn fifo_order_follows_arrival_then_request_order() {
    for (first, second) in [("t1", "t2"), ("t2", "t1")] {
        let request = json!({
            "policy": "hierarchical",
            "cluster": {"worker_types": {"gpu": {"count": 2}}},
            "entities": {"only": {"weight": 1, "policy": "fifo"}},
            "jobs": [
                {"id": "l", "throughput": {"gpu": 1.0}, "entity": "only", "arrival": 2},
                {"id": first, "throughput": {"gpu": 2.0}, "entity": "only", "arrival": 1},
                {"id": second, "throughput": {"gpu": 3.0}, "entity": "only", "arrival": 1},
                {"id": "e", "throughput": {"gpu": 4.0}, "entity": "only", "arrival": 0}
            ]
        });
        assert_by_hand(
            &request,
            &[("e", 1.0, 1.0, 0), (first, 1.0, 1.0, 1), (second, 0.0, 0.0, 2), ("l", 0.0, 0.0, 3)],
        );
    }
}

/// A three-level tree on six GPUs of one type (`fixtures/hierarchical/three_level_tree.json`):
///
/// ```text
/// org (root, 2, fairness)                      solo (root, 1, fifo)
/// ├── team_a (1, fifo)                         └── s1
/// │   ├── user_a1 (1, fairness): a1x (arrival 0)
/// │   └── user_a2 (1, fairness): a2x (arrival 5)
/// └── team_b (3, fairness)
///     ├── user_b1 (1, fifo): b1x (arrival 2), b1y (arrival 3)
///     └── user_b2 (2, fairness): b2x (job weight 1), b2y (job weight 3)
/// ```
///
/// nt = x on one type, and a level z means x_m = floor_m + w_m·Δz.
/// - Iteration 0. Roots keep their weights: org 2, solo 1. org splits 2 as team_a 2·1/4 = 1/2,
///   team_b 2·3/4 = 3/2. team_a (fifo) gives its 1/2 to user_a1 (its earliest job, a1x, arrived
///   before a2x) → a1x 1/2. team_b splits 3/2 as user_b1 1/2, user_b2 1; user_b1 (fifo) → b1x 1/2;
///   user_b2 splits 1 as b2x 1/4, b2y 3/4. solo → s1 1. a2x and b1y have weight 0.
///   Rows x ≤ 1 allow z ≤ 1 (s1), 4/3 (b2y), 2 (a1x, b1x), 4 (b2x); the GPUs 3z ≤ 6. z = 1:
///   s1 = 1 freezes (level 1); a1x = b1x = 1/2, b2x = 1/4, b2y = 3/4; 3 GPUs in use.
/// - Iteration 1: the same weights (s1 was solo's only job). Rows: a1x, b1x c ≤ 1, b2x c ≤ 3,
///   b2y c ≤ 1/3; GPUs 3 + 2c ≤ 6. c = 1/3: b2y = 1 freezes (level 1/(3/4) = 4/3);
///   a1x = b1x = 2/3, b2x = 1/3; 11/3 GPUs in use.
/// - Iteration 2: user_b2's only live job b2x now gets all of its 1. Rows: a1x, b1x
///   (2/3 + c/2 ≤ 1) and b2x (1/3 + c ≤ 1) all allow c ≤ 2/3; GPUs 11/3 + 2c ≤ 6 allow 7/6.
///   c = 2/3: a1x = b1x = b2x = 1 freeze together (levels 2, 2, 1); 5 GPUs in use.
/// - Iteration 3: team_a (fifo) moves on to user_a2 → a2x 1/2; team_b still has b1y live, so org
///   still splits 1/2 : 3/2, and user_b1 (fifo) hands its 3/2 to b1y. GPUs 5 + 2c ≤ 6: c = 1/2,
///   a2x = 1/4, b1y = 3/4 (levels 1/2 each), every GPU busy, both stuck.
#[test]
fn three_level_tree_by_hand() {
    assert_allocation_by_hand(&fixture_json("hierarchical/three_level_tree.json"), &THREE_LEVEL_TREE_BY_HAND);
}

/// Per job: nt (= X), level, iteration, as derived above.
const THREE_LEVEL_TREE_BY_HAND: [ByHand; 7] = [
    ("s1", 1.0, 1.0, 0),
    ("b2y", 1.0, 4.0 / 3.0, 1),
    ("a1x", 1.0, 2.0, 2),
    ("b1x", 1.0, 2.0, 2),
    ("b2x", 1.0, 1.0, 2),
    ("a2x", 0.25, 0.5, 3),
    ("b1y", 0.75, 0.5, 3),
];

/// The same tree's freezes: a1x, b1x and b2x are all capped by their own time at iteration 2 and
/// freeze there, with the weights of that iteration (levels 2, 2, 1); four levels in all.
#[test]
fn three_level_tree_freezes_by_hand() {
    assert_freezes_by_hand(&fixture_json("hierarchical/three_level_tree.json"), &THREE_LEVEL_TREE_BY_HAND);
}

/// Seven GPUs of one type; e0 (fifo, weight 2) has j0, j1 (0.1/s), j2, j3 (scale factor 2) and j4
/// (scale factor 4); e1 (fairness, weight 5) has j5 and j6 (scale factor 4); all arrive at 0.
/// A level rises X_m by c·w_m/sf_m (nt = X on one type; sf·X GPUs in use).
/// - Iteration 0: j0 2 (e0's earliest), j5 and j6 5/2 each. X_j0 = 2c (row: c ≤ 1/2),
///   X_j5 = 5c/2 (row: c ≤ 2/5), X_j6 = 5c/8 (row: c ≤ 8/5); GPUs 2c + 5c/2 + 4·5c/8 = 7c ≤ 7.
///   c = 2/5: j5 = 1 freezes (level (1/(5/2))·1 = 2/5); j0 = 4/5, j6 = 1/4; 2.8 GPUs in use.
/// - Iteration 1: j6 alone in e1 gets 5. j0: 4/5 + 2c ≤ 1 (c ≤ 1/10); j6: 1/4 + 5c/4 ≤ 1
///   (c ≤ 3/5); GPUs 2.8 + 2c + 5c ≤ 7 (c ≤ 3/5). c = 1/10: j0 = 1 freezes (level 1/2); j6 = 3/8.
/// - Iteration 2: e0 hands its 2 to j1. j1: 2c ≤ 1; j6: 3/8 + 5c/4 ≤ 1; GPUs 3.5 + 7c ≤ 7 — all
///   three give c = 1/2: j1 = 1 (level 1/2) and j6 = 1 (level (4/5)·1 = 4/5) both freeze, every GPU
///   busy.
/// - Iteration 3: e0 hands its weight to j2, which cannot rise: it freezes at 0. j3 is e0's next
///   job; j4, still waiting behind it, cannot get any time with every job at its floor either,
///   so it never will (floors only rise) and freezes at 0 here too.
/// - Iteration 4: j3 cannot rise: it freezes at 0. Five levels in all.
const THREE_LIMITS_AT_ONCE_BY_HAND: [ByHand; 7] = [
    ("j0", 1.0, 0.5, 1),
    ("j1", 1.0, 0.5, 2),
    ("j2", 0.0, 0.0, 3),
    ("j3", 0.0, 0.0, 4),
    ("j4", 0.0, 0.0, 3),
    ("j5", 1.0, 0.4, 0),
    ("j6", 1.0, 0.8, 2),
];

#[test]
fn three_limits_at_once_by_hand() {
    assert_allocation_by_hand(&fixture_json("hierarchical/three_limits_at_once.json"), &THREE_LIMITS_AT_ONCE_BY_HAND);
}

/// The same instance's freezes: j6 is capped by its own time in iteration 2, with j1.
#[test]
fn three_limits_at_once_freeze_together() {
    assert_freezes_by_hand(&fixture_json("hierarchical/three_limits_at_once.json"), &THREE_LIMITS_AT_ONCE_BY_HAND);
}

/// Six GPUs of one type; e0 (fairness, 5) has j1 (job weight 5), j4 and j5 (scale factor 2, both
/// 0.1/s); e1 (fifo, 5) has j0, j2 (scale factor 2) and j3 (scale factor 4); all arrive at 0.
/// A level rises X_m by c·w_m/sf_m; sf·X GPUs are in use.
/// - Iteration 0: e0 splits 5 as j1 25/7, j4 5/7, j5 5/7; e1 gives j0 5. Rows: j0 c ≤ 1/5,
///   j1 c ≤ 7/25; GPUs (25 + 5 + 5)/7·c + 5c = 10c ≤ 6. c = 1/5: j0 = 1 freezes (level 1/5);
///   j1 = 5/7, j4 = 1/7, j5 = 1/14; 2 GPUs in use.
/// - Iteration 1: e1 hands its 5 to j2. Rows: j1 5/7 + 25c/7 ≤ 1 (c ≤ 2/25), j2 5c/2 ≤ 1;
///   GPUs 2 + 10c ≤ 6. c = 2/25: j1 = 1 freezes (level 7/25); j2 = j4 = 1/5, j5 = 1/10; 2.8 GPUs.
/// - Iteration 2: e0's 5 now splits 5/2 + 5/2 over j4 and j5. j2 and j4 rise by 5c/2 each
///   (rows: c ≤ 8/25), j5 by 5c/4 (row: c ≤ 18/25); GPUs 2.8 + 5c + 5c/2 + 5c/2 ≤ 6 (c ≤ 8/25).
///   c = 8/25: j2 = j4 = 1, j5 = 1/2, every GPU busy: all three freeze at level 2/5 — j5's is
///   (2/(5/2))·(1/2), with the weight 5/2 it rose with.
/// - Iteration 3: e1 hands its 5 to j3, which cannot rise: it freezes at 0. Four levels.
const SHARED_LEVEL_WEIGHTS_BY_HAND: [ByHand; 6] = [
    ("j0", 1.0, 0.2, 0),
    ("j1", 1.0, 0.28, 1),
    ("j2", 1.0, 0.4, 2),
    ("j3", 0.0, 0.0, 3),
    ("j4", 1.0, 0.4, 2),
    ("j5", 0.5, 0.4, 2),
];

#[test]
fn shared_level_weights_by_hand() {
    assert_allocation_by_hand(&fixture_json("hierarchical/shared_level_weights.json"), &SHARED_LEVEL_WEIGHTS_BY_HAND);
}

/// The same instance's freezes: j5 freezes in iteration 2 at level 2/5.
#[test]
fn shared_level_weights_freeze_by_hand() {
    assert_freezes_by_hand(&fixture_json("hierarchical/shared_level_weights.json"), &SHARED_LEVEL_WEIGHTS_BY_HAND);
}

/// Two fifo entities of weight 1 on one GPU: e1 has j0, j1, j2 and e0 has j3, j4 (j4 runs at 0.1/s,
/// the others at 1/s), all arriving at 0, so the order in `jobs` decides.
/// Iteration 0: e1 → j0, e0 → j3; x = z each, 2z ≤ 1: z = 1/2, the GPU is full, both stuck.
/// Iteration 1: e1 → j1, e0 → j4; nothing is left, c = 0, and both are stuck at 0: both freeze.
/// Iteration 2: e1 → j2 (e0 has no job left), stuck at 0. Three levels in all.
const STARVED_FIFO_JOBS_BY_HAND: [ByHand; 5] =
    [("j0", 0.5, 0.5, 0), ("j1", 0.0, 0.0, 1), ("j2", 0.0, 0.0, 2), ("j3", 0.5, 0.5, 0), ("j4", 0.0, 0.0, 1)];

#[test]
fn starved_fifo_jobs_by_hand() {
    assert_allocation_by_hand(&fixture_json("hierarchical/starved_fifo_jobs.json"), &STARVED_FIFO_JOBS_BY_HAND);
}

/// The same instance's freezes: j4 cannot rise at all in iteration 1, so it freezes there.
#[test]
fn starved_fifo_jobs_freeze_when_stuck() {
    assert_freezes_by_hand(&fixture_json("hierarchical/starved_fifo_jobs.json"), &STARVED_FIFO_JOBS_BY_HAND);
}

/// The tree's answer is about the tree, not the order of the request: reversing the jobs (all
/// arrivals are explicit and distinct within each fifo entity) changes nothing.
#[test]
fn three_level_tree_does_not_depend_on_job_order() {
    let request = fixture_json("hierarchical/three_level_tree.json");
    let mut reversed = request.clone();
    reversed["jobs"].as_array_mut().unwrap().reverse();
    let (p, r, _) = solve_value(&request);
    let (q, s, _) = solve_value(&reversed);
    let (a, b) = (reported(&p, &r), reported(&q, &s));
    for (m, job) in p.jobs.iter().enumerate() {
        let k = q.jobs.iter().position(|j| j.id == job.id).unwrap();
        assert_close(b.nt[k], a.nt[m], 1e-6, &job.id);
        assert_eq!(b.iteration[k], a.iteration[m], "{}", job.id);
    }
}

/// Why trivial nesting changes nothing: a parent P whose only child is entity C gives C all of
/// its weight W at every iteration — fairness gives W·w_C/w_C, fifo gives W to its earliest live
/// child, which can only be C — and C has a live job exactly when P does. So C hands exactly W
/// down, as it would as a root of weight W: every iteration sees the same job weights, hence the
/// same levels. C's own weight, and P's policy, are then irrelevant. Here: team T (fifo, weight 3)
/// and team U (fairness, weight 1) flat, against T wrapped in a fairness parent of weight 3
/// (T's weight 7) and U wrapped in a fifo chain three deep.
#[test]
fn trivial_nesting_equals_the_flat_form() {
    let jobs = json!([
        {"id": "t1", "throughput": {"v100": 3.0, "k80": 1.0}, "entity": "T", "arrival": 0},
        {"id": "t2", "throughput": {"v100": 2.0, "k80": 1.5}, "entity": "T", "arrival": 1},
        {"id": "u1", "throughput": {"v100": 4.0, "k80": 0.0}, "entity": "U", "weight": 5},
        {"id": "u2", "throughput": {"v100": 1.0, "k80": 1.0}, "entity": "U", "scale_factor": 2},
        {"id": "u3", "throughput": {"v100": 2.5, "k80": 0.5}, "entity": "U"}
    ]);
    let cluster = json!({"worker_types": {"v100": {"count": 2}, "k80": {"count": 3}}});
    let flat = json!({
        "policy": "hierarchical", "cluster": cluster, "jobs": jobs,
        "entities": {"T": {"weight": 3, "policy": "fifo"}, "U": {"weight": 1, "policy": "fairness"}}
    });
    let nested = json!({
        "policy": "hierarchical", "cluster": cluster, "jobs": jobs,
        "entities": {
            "P": {"weight": 3, "policy": "fairness"},
            "T": {"weight": 7, "policy": "fifo", "parent": "P"},
            "Q1": {"weight": 1, "policy": "fifo"},
            "Q2": {"weight": 4, "policy": "fifo", "parent": "Q1"},
            "Q3": {"weight": 9, "policy": "fifo", "parent": "Q2"},
            "U": {"weight": 2, "policy": "fairness", "parent": "Q3"}
        }
    });
    let (p, r, _) = solve_value(&flat);
    let (q, s, _) = solve_value(&nested);
    let (a, b) = (reported(&p, &r), reported(&q, &s));
    for m in 0..p.num_jobs() {
        assert_close(b.nt[m], a.nt[m], 1e-6, &format!("{}: nt", p.jobs[m].id));
        assert_close(b.level[m], a.level[m], 1e-6, &format!("{}: level", p.jobs[m].id));
    }
    // And the flat form itself agrees with the plain reference.
    let tree = Tree {
        entities: vec![
            EntityDef { weight: 3.0, fifo: true, parent: None },
            EntityDef { weight: 1.0, fifo: false, parent: None },
        ],
        job_entity: vec![0, 0, 1, 1, 1],
    };
    let want = plain_water_filling(&p, |frozen| tree_weights(&p, &tree, frozen));
    for m in 0..p.num_jobs() {
        assert_close(a.nt[m], want.nt[m], 1e-5, &format!("{}: nt vs reference", p.jobs[m].id));
    }
}

/// With every job alone in a root entity whose weight is the job's weight, hierarchical is
/// `max_min_fairness_water_filling`: each job's weight is its entity's at every iteration.
#[test]
fn singleton_entities_are_plain_water_filling() {
    let request = json!({
        "policy": "hierarchical",
        "cluster": {"worker_types": {"a": {"count": 3}, "b": {"count": 1}}},
        "entities": {"ea": {"weight": 3}, "eb": {"weight": 1, "policy": "fifo"}, "ec": {"weight": 1}},
        "jobs": [
            {"id": "a", "throughput": {"a": 1.0, "b": 4.0}, "entity": "ea", "weight": 3},
            {"id": "b", "throughput": {"a": 2.0, "b": 2.0}, "entity": "eb"},
            {"id": "c", "throughput": {"a": 0.5, "b": 0.0}, "entity": "ec"}
        ]
    });
    let mut flat = request.clone();
    flat["policy"] = json!("max_min_fairness_water_filling");
    let (p, r, _) = solve_value(&request);
    let (_, s, _) = solve_value(&flat);
    let (a, b) = (reported(&p, &r), reported(&p, &s));
    for m in 0..p.num_jobs() {
        assert_close(a.nt[m], b.nt[m], 1e-6, &p.jobs[m].id);
    }
}

// ---------------------------------------------------------------------------------------------
// Validation.

fn entity_request(entities: Value, jobs: Value) -> String {
    json!({
        "policy": "hierarchical",
        "cluster": {"worker_types": {"gpu": {"count": 2}}},
        "entities": entities,
        "jobs": jobs,
    })
    .to_string()
}

#[test]
fn unknown_entity_on_a_job_is_refused() {
    let text = entity_request(
        json!({"A": {"weight": 1}}),
        json!([
            {"id": "a", "throughput": {"gpu": 1.0}, "entity": "A"},
            {"id": "b", "throughput": {"gpu": 1.0}, "entity": "Nope"}
        ]),
    );
    assert_error(&solve_err(&text), ErrorCode::InvalidEntity, Some("jobs[1].entity"));
}

#[test]
fn nesting_cycles_are_refused() {
    let jobs = json!([{"id": "a", "throughput": {"gpu": 1.0}, "entity": "A"}]);
    let cycles = [
        json!({"A": {"parent": "A"}}),
        json!({"A": {"parent": "B"}, "B": {"parent": "A"}}),
        json!({"A": {"parent": "B"}, "B": {"parent": "C"}, "C": {"parent": "A"}}),
        // A hangs below a cycle it is not part of.
        json!({"A": {"parent": "B"}, "B": {"parent": "C"}, "C": {"parent": "B"}, "R": {}}),
    ];
    for entities in cycles {
        let err = solve_err(&entity_request(entities.clone(), jobs.clone()));
        assert_eq!(err.code, ErrorCode::InvalidEntity, "{entities}: {}", err.to_json());
        let field = err.field.clone().unwrap_or_default();
        assert!(field.starts_with("entities.") && field.ends_with(".parent"), "{entities}: field {field}");
    }
    // An unknown parent names the entity that has it.
    let err = solve_err(&entity_request(json!({"A": {"parent": "Ghost"}}), jobs));
    assert_error(&err, ErrorCode::InvalidEntity, Some("entities.A.parent"));
}

#[test]
fn unknown_intra_entity_policy_is_refused() {
    let text = entity_request(
        json!({"A": {"weight": 1, "policy": "fairness"}, "B": {"weight": 1, "policy": "lottery"}}),
        json!([
            {"id": "a", "throughput": {"gpu": 1.0}, "entity": "A"},
            {"id": "b", "throughput": {"gpu": 1.0}, "entity": "B"}
        ]),
    );
    assert_error(&solve_err(&text), ErrorCode::InvalidEntity, Some("entities.B.policy"));
}

#[test]
fn a_job_without_an_entity_is_refused() {
    let text = entity_request(
        json!({"A": {"weight": 1}}),
        json!([
            {"id": "a", "throughput": {"gpu": 1.0}, "entity": "A"},
            {"id": "b", "throughput": {"gpu": 1.0}}
        ]),
    );
    assert_error(&solve_err(&text), ErrorCode::MissingField, Some("jobs[1].entity"));
    // Without any `entities` at all, the first job is the one named.
    let text = json!({
        "policy": "hierarchical",
        "cluster": {"worker_types": {"gpu": {"count": 2}}},
        "jobs": [{"id": "a", "throughput": {"gpu": 1.0}}]
    })
    .to_string();
    assert_error(&solve_err(&text), ErrorCode::MissingField, Some("jobs[0].entity"));
}

#[test]
fn entity_weights_must_be_positive() {
    for weight in [json!(0), json!(-1)] {
        let text = entity_request(
            json!({"A": {"weight": weight}}),
            json!([{"id": "a", "throughput": {"gpu": 1.0}, "entity": "A"}]),
        );
        assert_error(&solve_err(&text), ErrorCode::InvalidNumber, Some("entities.A.weight"));
    }
}

// ---------------------------------------------------------------------------------------------
// The entity tree's weights, from the contract, for the plain reference.

/// The entity tree as the generator built it (independent of the crate's parsed form).
#[derive(Debug, Clone)]
struct EntityDef {
    weight: f64,
    fifo: bool,
    parent: Option<usize>,
}

#[derive(Debug, Clone)]
struct Tree {
    entities: Vec<EntityDef>,
    job_entity: Vec<usize>,
}

/// The contract's rule: a root keeps its weight; an entity hands its weight to its live children
/// (jobs not frozen; sub-entities with a job not frozen somewhere below), in proportion to their own
/// weights (`fairness`) or all of it to the child holding the earliest unfrozen job, by
/// (arrival, position in `jobs`) (`fifo`).
fn tree_weights(p: &Problem, tree: &Tree, frozen: &[bool]) -> Vec<f64> {
    let n = p.num_jobs();
    let below = |m: usize, e: usize| {
        let mut at = Some(tree.job_entity[m]);
        while let Some(a) = at {
            if a == e {
                return true;
            }
            at = tree.entities[a].parent;
        }
        false
    };
    let key = |m: usize| (p.jobs[m].arrival, m);
    // Earliest unfrozen job anywhere below entity e.
    let earliest =
        |e: usize| (0..n).filter(|&m| !frozen[m] && below(m, e)).min_by(|&a, &b| key(a).partial_cmp(&key(b)).unwrap());
    let mut weight = vec![0.0; n];
    // Entities in an order where parents come first (the generator only nests under earlier ones).
    let mut share = vec![0.0; tree.entities.len()];
    for (e, def) in tree.entities.iter().enumerate() {
        if def.parent.is_none() {
            share[e] = def.weight;
        }
        if earliest(e).is_none() {
            continue;
        }
        // (is a job, index, own weight, earliest job) of each live child.
        let mut live: Vec<(bool, usize, f64, usize)> = Vec::new();
        for m in (0..n).filter(|&m| tree.job_entity[m] == e && !frozen[m]) {
            live.push((true, m, p.jobs[m].weight, m));
        }
        for (c, child) in tree.entities.iter().enumerate().filter(|(_, c)| c.parent == Some(e)) {
            if let Some(first) = earliest(c) {
                live.push((false, c, child.weight, first));
            }
        }
        let total: f64 = live.iter().map(|l| l.2).sum();
        let first = live.iter().map(|l| l.3).min_by(|&a, &b| key(a).partial_cmp(&key(b)).unwrap()).unwrap();
        for &(is_job, i, own, earliest_job) in &live {
            let s = if def.fifo {
                if earliest_job == first {
                    share[e]
                } else {
                    0.0
                }
            } else {
                share[e] * own / total
            };
            if is_job {
                weight[i] = s;
            } else {
                share[i] = s;
            }
        }
    }
    weight
}

// ---------------------------------------------------------------------------------------------
// Random trees.

#[derive(Debug, Clone)]
struct Instance {
    counts: Vec<u32>,
    /// Per job: throughput row, scale factor, weight, entity, arrival.
    jobs: Vec<(Vec<f64>, u32, f64, usize, u32)>,
    /// Per entity: weight, fifo, parent (an earlier entity), whether to send `policy` explicitly.
    entities: Vec<(f64, bool, Option<usize>, bool)>,
    agnostic: bool,
}

fn instances(max_jobs: usize) -> impl Strategy<Value = Instance> {
    (1usize..=3, 1usize..=4, any::<bool>()).prop_flat_map(move |(types, k, agnostic)| {
        let entity = (
            prop::sample::select(vec![1.0, 2.0, 5.0]),
            any::<bool>(),
            prop_oneof![Just(None), (0..k).prop_map(Some)],
            any::<bool>(),
        );
        let job = (
            prop::collection::vec(prop_oneof![1 => Just(0.0), 3 => 0.1f64..50.0], types),
            prop::sample::select(vec![1u32, 2, 4]),
            prop::sample::select(vec![1.0, 5.0]),
            0..k,
            0u32..4,
        );
        (
            prop::collection::vec(1u32..=8, types),
            prop::collection::vec(job, 1..=max_jobs),
            prop::collection::vec(entity, k),
            Just(agnostic && types > 1),
        )
            .prop_map(|(counts, jobs, mut entities, agnostic)| {
                // Nest only under an earlier entity, so the tree has no cycle.
                for (e, ent) in entities.iter_mut().enumerate() {
                    ent.2 = ent.2.filter(|&p| p < e);
                }
                Instance { counts, jobs, entities, agnostic }
            })
    })
}

impl Instance {
    fn tree(&self) -> Tree {
        Tree {
            entities: self
                .entities
                .iter()
                .map(|&(weight, fifo, parent, _)| EntityDef { weight, fifo, parent })
                .collect(),
            job_entity: self.jobs.iter().map(|j| j.3).collect(),
        }
    }

    fn request(&self, policy: &str) -> Value {
        let types = by_type(self.counts.iter().map(|c| json!({"count": c})));
        let drawn: Vec<RandomJob> =
            self.jobs.iter().map(|(row, sf, weight, _, _)| (row.clone(), *sf, *weight)).collect();
        let mut jobs = random_job_values(&drawn, |m, row, sf| {
            fit_scale_factor(sf, &self.counts);
            ensure_runnable(row, m);
        });
        for (job, (_, _, _, entity, arrival)) in jobs.iter_mut().zip(&self.jobs) {
            job["entity"] = json!(format!("e{entity}"));
            job["arrival"] = json!(arrival);
        }
        let entities: serde_json::Map<String, Value> = self
            .entities
            .iter()
            .enumerate()
            .map(|(e, &(weight, fifo, parent, explicit))| {
                let mut spec = json!({"weight": weight});
                if fifo {
                    spec["policy"] = json!("fifo");
                } else if explicit {
                    spec["policy"] = json!("fairness");
                }
                if let Some(p) = parent {
                    spec["parent"] = json!(format!("e{p}"));
                }
                (format!("e{e}"), spec)
            })
            .collect();
        json!({
            "policy": policy,
            "heterogeneity_aware": !self.agnostic,
            "cluster": {"worker_types": types},
            "entities": entities,
            "jobs": jobs,
        })
    }
}

/// The instance with entity `e` wrapped in a new single-child parent that takes e's place (same
/// parent, e's weight) with a random policy; e gets an arbitrary weight.
fn wrapped(inst: &Instance, e: usize, fifo: bool, inner_weight: f64) -> (Instance, usize) {
    let mut out = inst.clone();
    let (weight, _, parent, _) = inst.entities[e];
    // The wrapper goes last; the generator's "parents come first" order is not needed by the crate,
    // and `tree_weights` is not used on the wrapped form.
    out.entities.push((weight, fifo, parent, true));
    let wrapper = out.entities.len() - 1;
    out.entities[e].0 = inner_weight;
    out.entities[e].2 = Some(wrapper);
    (out, wrapper)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// Feasible (checked on every response by `solve_value`), Pareto efficient, and every job's
    /// reported nt is the allocation's.
    #[test]
    fn hierarchical_is_feasible_and_pareto_efficient(inst in instances(30)) {
        let (p, r, x) = solve_value(&inst.request("hierarchical"));
        let got = reported(&p, &r);
        let nt = nt_of(&p, &x);
        for (reported, from_x) in got.nt.iter().zip(&nt) {
            prop_assert!(close(*reported, *from_x, 1e-6), "reported nt {} vs {} from the allocation", reported, from_x);
        }
        assert_pareto_efficient(&p, &x);
    }

    /// Every job's nt agrees with the plain reference.
    #[test]
    fn hierarchical_matches_plain_water_filling(inst in instances(10)) {
        let (p, r, _) = solve_value(&inst.request("hierarchical"));
        let got = reported(&p, &r);
        let tree = inst.tree();
        let want = plain_water_filling(&p, |frozen| tree_weights(&p, &tree, frozen));
        for m in 0..p.num_jobs() {
            prop_assert!(close(got.nt[m], want.nt[m], 1e-5),
                "job {}: nt {} but the reference gives {}\narbiter {:?}\nreference {:?}",
                p.jobs[m].id, got.nt[m], want.nt[m], got, want);
        }
    }

    /// Wrapping an entity in a single-child parent (any policy, any inner weight) changes no job.
    #[test]
    fn trivial_nesting_changes_nothing(
        inst in instances(12),
        pick in any::<prop::sample::Index>(),
        fifo in any::<bool>(),
        inner in prop::sample::select(vec![0.5, 1.0, 3.0]),
    ) {
        let e = pick.index(inst.entities.len());
        let (nested, _) = wrapped(&inst, e, fifo, inner);
        let (p, r, _) = solve_value(&inst.request("hierarchical"));
        let (q, s, _) = solve_value(&nested.request("hierarchical"));
        let (a, b) = (reported(&p, &r), reported(&q, &s));
        for m in 0..p.num_jobs() {
            let tol = 1e-6 * a.nt[m].abs().max(1e-3);
            prop_assert!((a.nt[m] - b.nt[m]).abs() <= tol, "job {}: flat {} nested {}", m, a.nt[m], b.nt[m]);
        }
    }

    /// One job per root entity, with the job's weight: the same as `max_min_fairness_water_filling`.
    #[test]
    fn singleton_roots_equal_water_filling(mut inst in instances(12)) {
        inst.entities = inst.jobs.iter().map(|j| (j.2, false, None, false)).collect();
        for (m, job) in inst.jobs.iter_mut().enumerate() {
            job.3 = m;
        }
        let (p, r, _) = solve_value(&inst.request("hierarchical"));
        let (_, s, _) = solve_value(&inst.request("max_min_fairness_water_filling"));
        let (a, b) = (reported(&p, &r), reported(&p, &s));
        for m in 0..p.num_jobs() {
            let tol = 1e-6 * a.nt[m].abs().max(1e-3);
            prop_assert!((a.nt[m] - b.nt[m]).abs() <= tol, "job {}: hierarchical {} water-filling {}", m, a.nt[m], b.nt[m]);
        }
    }
}

proptest! {
    // More cases: the bug it is ignored for shows in a few percent of random trees.
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every job freezes in the iteration where the reference finds it stuck, at the level the
    /// reference gives it (with that iteration's weight).
    #[test]
        fn hierarchical_freezes_like_plain_water_filling(inst in instances(10)) {
        let (p, r, _) = solve_value(&inst.request("hierarchical"));
        let got = reported(&p, &r);
        let tree = inst.tree();
        let want = plain_water_filling(&p, |frozen| tree_weights(&p, &tree, frozen));
        prop_assert_eq!(&got.iteration, &want.iteration, "freeze iterations\narbiter {:?}\nreference {:?}", got, want);
        for m in 0..p.num_jobs() {
            prop_assert!(close(got.level[m], want.level[m], 1e-5),
                "job {}: level {}, the reference gives {}\narbiter {:?}\nreference {:?}",
                p.jobs[m].id, got.level[m], want.level[m], got, want);
        }
    }
}

/// 487 distinct-row jobs in five entities, two of them `fifo`, on the plain engine: over many
/// levels the floors drifted above what any allocation meets (each level meets them to HiGHS'
/// tolerance), and a level's program came back infeasible. Found by random hierarchies; the
/// engine now lowers drifted floors by a millionth and solves the level again.
#[test]
fn fifo_entities_on_distinct_rows_survive_floor_drift() {
    let (p, r, x) = solve_value(&fixture_json("hierarchical/fifo_floor_drift.json"));
    assert_feasible(&p, &x);
    assert!(r.objective.is_some_and(|o| o > 0.0), "{:?}", r.objective);
}

/// 152 jobs, a `fifo` entity of weight 5 beside a `fairness` one of weight 1, on 105 + 20 GPUs
/// (a random hierarchy): the floors drifted out of reach as above, and the test of whether any
/// job waiting its `fifo` turn can start at all came back infeasible, so the request failed with
/// `solver_failed` under `method: auto` and `lp`. That test, and the bottleneck test, now lower
/// drifted floors as a level's program does. The levels agree with the plain reference to 1e-5
/// of the largest: jobs whose `fifo` turn comes when the GPUs are full get up to 2e-6 of their
/// equal share from the floors lowered by a millionth, where the reference gives them none.
#[test]
fn fifo_start_test_survives_floor_drift() {
    let request = fixture_json("hierarchical/fifo_start_test_after_drift.json");
    let (p, r, x) = solve_value(&request);
    assert_feasible(&p, &x);
    let names: Vec<&String> = request["entities"].as_object().unwrap().keys().collect();
    let tree = Tree {
        entities: names
            .iter()
            .map(|&name| EntityDef {
                weight: request["entities"][name]["weight"].as_f64().unwrap(),
                fifo: request["entities"][name]["policy"] == "fifo",
                parent: None,
            })
            .collect(),
        job_entity: request["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| names.iter().position(|&n| j["entity"] == n.as_str()).unwrap())
            .collect(),
    };
    let want = plain_water_filling(&p, |frozen| tree_weights(&p, &tree, frozen));
    let got = reported(&p, &r);
    let largest = want.nt.iter().cloned().fold(0.0, f64::max);
    for m in 0..p.num_jobs() {
        let off = (got.nt[m] - want.nt[m]).abs();
        assert!(off <= 1e-5 * largest, "{}: nt {} against the reference's {}", p.jobs[m].id, got.nt[m], want.nt[m]);
    }
}

/// A random tree where a `fifo` job froze at 0 in a level of height 0 (the single V100 full)
/// while two active jobs sat at 0 beside it, free to rise on the P100s next. The job waiting
/// behind it (j1, V100 only) freezes when its own turn comes, after those two rose (level 3), not
/// in the level of height 0: only then are the jobs frozen at 0 those waiting behind the full
/// GPUs. The reference applied the check in that level too and froze j1 at 1 (found under a fresh
/// seed); it now waits as the policy does.
#[test]
fn a_waiting_fifo_job_is_not_frozen_in_a_level_of_height_zero() {
    let inst = Instance {
        counts: vec![1, 4],
        jobs: vec![
            (vec![0.0, 0.0], 1, 1.0, 0, 1),
            (vec![0.1, 0.0], 1, 1.0, 0, 2),
            (vec![30.876379235371882, 0.0], 1, 1.0, 0, 0),
            (vec![0.0, 0.0], 1, 1.0, 0, 1),
            (vec![0.0, 0.1], 1, 1.0, 1, 1),
            (vec![0.1, 0.0], 1, 1.0, 1, 0),
        ],
        entities: vec![(1.0, true, None, false), (1.0, true, None, false), (1.0, false, None, false)],
        agnostic: false,
    };
    freezes_as_given_and_as_the_reference(&inst, &[1, 3, 0, 2, 2, 0], 1e-9);
}

/// `inst` under `hierarchical` freezes its jobs at `iterations`, as the plain reference does, at
/// the reference's levels within `tolerance`.
fn freezes_as_given_and_as_the_reference(inst: &Instance, iterations: &[usize], tolerance: f64) {
    let (p, r, _) = solve_value(&inst.request("hierarchical"));
    let got = reported(&p, &r);
    let tree = inst.tree();
    let want = plain_water_filling(&p, |frozen| tree_weights(&p, &tree, frozen));
    assert_eq!(got.iteration, iterations, "{got:?}");
    assert_eq!(want.iteration, got.iteration, "reference {want:?}");
    for m in 0..p.num_jobs() {
        assert!(close(got.level[m], want.level[m], tolerance), "job {m}: {got:?} against {want:?}");
    }
}

/// Four nested `fifo` entities on 8 + 2 GPUs (found under a fresh seed): when j3's turn came, the
/// GPUs were full and the LP gave it 3.6·10⁻¹² steps/s of round-off. That counted as a rise, so
/// its level of height 0 was a level of its own, and it froze one level late, with the two jobs
/// waiting behind it (the reference froze all three at level 2, and j4 at 3). A job still within
/// `START_TOLERANCE` of 0 has not risen.
#[test]
fn a_fifo_turn_taken_by_round_off_is_no_level_of_its_own() {
    let inst = Instance {
        counts: vec![8, 2],
        jobs: vec![
            (vec![23.3896593777245, 27.733202321139135], 4, 1.0, 1, 0),
            (vec![23.129192160253215, 33.64755921679942], 4, 5.0, 2, 1),
            (vec![13.961923090939244, 44.744154215423954], 2, 1.0, 1, 0),
            (vec![39.14456667542275, 0.0], 2, 5.0, 1, 0),
            (vec![10.987376393008697, 6.1099491587717125], 4, 1.0, 1, 0),
            (vec![0.49902826369323233, 44.315837938167796], 4, 1.0, 2, 0),
            (vec![42.20672711573706, 38.1529324554453], 2, 5.0, 3, 0),
            (vec![0.0, 32.699996337506754], 4, 1.0, 0, 3),
            (vec![0.0, 22.48819041515026], 4, 1.0, 3, 2),
            (vec![46.76489291702562, 16.044081143597655], 1, 5.0, 1, 3),
        ],
        entities: vec![
            (5.0, true, None, false),
            (5.0, true, Some(0), false),
            (1.0, true, None, false),
            (2.0, true, None, false),
        ],
        agnostic: false,
    };
    freezes_as_given_and_as_the_reference(&inst, &[0, 1, 1, 2, 3, 0, 1, 2, 2, 2], 1e-5);
}
