//! What a table-printing bench reads from its command line and environment: whether it runs in
//! full (`cargo bench`, `--bench`) or as a smoke run (`cargo test`), its sizes
//! (`ARBITER_BENCH_SIZES=512,2048`), and the policies and rows it is narrowed to
//! (`ARBITER_BENCH_POLICIES=min_makespan,...`, `ARBITER_BENCH_ROWS=distinct|repeated`).

use arbiter::policies::PolicyKind;

/// The median of `times` (sorted in place; the upper one of an even count).
pub fn median(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

pub struct Run {
    /// `cargo bench`: every size; `cargo test`: the smoke size once.
    pub full: bool,
    pub sizes: Vec<usize>,
    policies: String,
    rows: String,
}

impl Run {
    /// The run's settings, with `sizes` in full and 64 jobs as a smoke run.
    pub fn from_env(sizes: &[usize]) -> Run {
        let full = std::env::args().any(|a| a == "--bench");
        let sizes = match std::env::var("ARBITER_BENCH_SIZES") {
            Ok(list) if full => list.split(',').filter_map(|s| s.trim().parse().ok()).collect(),
            _ if full => sizes.to_vec(),
            _ => vec![64],
        };
        let policies = std::env::var("ARBITER_BENCH_POLICIES").unwrap_or_default();
        let rows = std::env::var("ARBITER_BENCH_ROWS").unwrap_or_default();
        Run { full, sizes, policies, rows }
    }

    /// The policies of `all` the run keeps.
    pub fn policies(&self, all: &[PolicyKind]) -> Vec<PolicyKind> {
        all.iter()
            .copied()
            .filter(|p| self.policies.is_empty() || self.policies.split(',').any(|n| n == p.name()))
            .collect()
    }

    /// The row kinds the run keeps: `false` repeated rows, `true` distinct.
    pub fn distinct(&self) -> Vec<bool> {
        [false, true]
            .into_iter()
            .filter(|&d| self.rows.is_empty() || self.rows == if d { "distinct" } else { "repeated" })
            .collect()
    }
}
