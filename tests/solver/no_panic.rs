//! "Nothing panics, whatever the input": a few hundred arbitrary texts and mutations of valid
//! requests go through `arbiter::solve_json` under `catch_unwind`. Every answer must be a response
//! (feasible, and serializable) or an error object; never a panic.

use crate::common::*;
use arbiter::lp::Backend;
use arbiter::Problem;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Valid requests the mutations start from: every fixture, under every policy name.
fn seeds() -> Vec<String> {
    let mut names = vec!["paper_worked_example.json".to_string(), "paper_water_filling.json".to_string()];
    let dir = fixture_path("policies");
    let mut policy_files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| format!("policies/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".json"))
        .collect();
    policy_files.sort();
    names.extend(policy_files);
    names.iter().map(|n| fixture_text(n)).collect()
}

/// Numbers likely to sit on an edge somewhere.
fn nasty_numbers() -> Vec<Value> {
    vec![
        json!(0),
        json!(-1),
        json!(1),
        json!(2),
        json!(3),
        json!(8),
        json!(0.5),
        json!(1.5),
        json!(1e-300),
        json!(5e-324),
        json!(1e-9),
        json!(1e9),
        json!(1e300),
        json!(-1e300),
        json!(f64::MAX),
        json!(4294967295u64),
        json!(4294967296u64),
        json!(u64::MAX),
        json!(i64::MIN),
    ]
}

/// Any kind of JSON value, for type confusion.
fn nasty_values() -> Vec<Value> {
    let mut values = nasty_numbers();
    values.extend([
        json!(null),
        json!(true),
        json!(""),
        json!("v100"),
        json!("j0"),
        json!([]),
        json!([1.0, 2.0]),
        json!(["j0", "j1"]),
        json!({}),
        json!({"v100": 1.0}),
        json!({"count": 3}),
        json!({"id": "x", "throughput": {"v100": 1.0}}),
        json!({"jobs": ["j0", "j1"], "throughput": {"v100": [1.0, 1.0]}}),
    ]);
    values
}

/// Text tokens spliced into a request's text.
const TOKENS: [&str; 16] =
    ["", "0", "-", "1e999", "NaN", "Infinity", "null", "\"", "{", "}", "[", "]", ",", ":", "\\u0000", "\u{1F600}"];

/// Solves `text` under `catch_unwind`; a panic fails the test with the input that caused it.
/// An accepted request must come back feasible and serializable.
fn must_not_panic(text: &str) {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let result = arbiter::solve_json(text, Backend::default());
        if let Ok(response) = &result {
            serde_json::to_string(response).expect("a response serializes");
        }
        if let Err(error) = &result {
            let _ = error.to_json().to_string();
        }
        result
    }));
    let result = match outcome {
        Ok(result) => result,
        Err(_) => panic!("solve_json panicked on input:\n{text}"),
    };
    if let Ok(response) = result {
        let problem = Problem::from_json(text).expect("an accepted request validates");
        if catch_unwind(AssertUnwindSafe(|| checked_allocation(&problem, &response))).is_err() {
            panic!("an infeasible or inconsistent answer to input:\n{text}");
        }
    }
}

/// One edit of `v` at the node reached by `steps`: op 0 replaces a number by an edge number (so
/// the request stays well typed and reaches validation or the solver), 1 deletes the node, 2
/// duplicates an array element, 3 replaces the node by any value.
fn mutate_value(v: &mut Value, steps: &[Index], pick: &Index, op: u8) {
    let mut node = v;
    for (depth, step) in steps.iter().enumerate() {
        let is_last = depth + 1 == steps.len();
        let len = match node {
            Value::Object(map) => map.len(),
            Value::Array(items) => items.len(),
            _ => 0,
        };
        if len == 0 {
            break;
        }
        let i = step.index(len);
        if is_last && op == 1 {
            match node {
                Value::Object(map) => {
                    let key = map.keys().nth(i).unwrap().clone();
                    map.remove(&key);
                }
                Value::Array(items) => {
                    items.remove(i);
                }
                _ => {}
            }
            return;
        }
        if is_last && op == 2 {
            if let Value::Array(items) = node {
                let copy = items[i].clone();
                items.push(copy);
                return;
            }
        }
        node = match node {
            Value::Object(map) => map.values_mut().nth(i).unwrap(),
            Value::Array(items) => &mut items[i],
            _ => unreachable!(),
        };
    }
    if op == 3 {
        *node = pick.get(&nasty_values()).clone();
    } else if node.is_number() {
        *node = pick.get(&nasty_numbers()).clone();
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 100,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_strings(text in any::<String>()) {
        must_not_panic(&text);
    }

    #[test]
    fn json_like_strings(text in "[{}\\[\\]\",:0-9a-z_ .eE+-]{0,200}") {
        must_not_panic(&text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 150,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Text-level damage to a valid request: deletions, insertions, truncation, duplication.
    #[test]
    fn mutated_request_texts(
        seed in any::<Index>(),
        edits in prop::collection::vec((0u8..4, any::<Index>(), any::<Index>(), select(TOKENS.to_vec())), 1..4),
    ) {
        let seeds = seeds();
        let mut chars: Vec<char> = seed.get(&seeds).chars().collect();
        for (op, at, len, token) in edits {
            let n = chars.len().max(1);
            let start = at.index(n).min(chars.len());
            match op {
                0 => {
                    let end = (start + len.index(8)).min(chars.len());
                    chars.drain(start..end);
                }
                1 => {
                    for (k, c) in token.chars().enumerate() {
                        chars.insert(start + k, c);
                    }
                }
                2 => chars.truncate(start),
                _ => {
                    let end = (start + len.index(40)).min(chars.len());
                    let piece: Vec<char> = chars[start..end].to_vec();
                    for (k, c) in piece.into_iter().enumerate() {
                        chars.insert(end + k, c);
                    }
                }
            }
        }
        let text: String = chars.into_iter().collect();
        must_not_panic(&text);
    }

    /// Structural damage that keeps the JSON well formed, so most requests reach validation and
    /// many reach the solvers: a node replaced by an edge value, deleted, or duplicated, and the
    /// policy switched.
    #[test]
    fn mutated_request_values(
        seed in any::<Index>(),
        policy in select(POLICIES.iter().copied().chain(["gandiva", "allox"]).collect::<Vec<_>>()),
        edits in prop::collection::vec(
            (prop::collection::vec(any::<Index>(), 1..6), any::<Index>(), select(vec![0u8, 0, 0, 1, 2, 3])),
            1..3,
        ),
    ) {
        let seeds = seeds();
        let mut v: Value = serde_json::from_str(seed.get(&seeds).as_str()).unwrap();
        v["policy"] = json!(policy);
        for (steps, pick, op) in edits {
            mutate_value(&mut v, &steps, &pick, op);
        }
        must_not_panic(&v.to_string());
    }
}
