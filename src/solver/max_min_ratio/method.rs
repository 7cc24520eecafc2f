//! Which method solves `Engine::max_ratio`: the plain LP over classes, or the price
//! decomposition (automatic when rows are mostly distinct), and the report of which one ran.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// At least this many jobs with a demand before `auto` picks the decomposition (below, the
/// plain LP is as fast).
pub const AUTO_MIN_JOBS: usize = 2048;
/// `auto` picks the decomposition when the classes are at least this share of the jobs.
pub const AUTO_MIN_DISTINCT: f64 = 0.5;

/// How `max_ratio` is solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// The decomposition when rows are mostly distinct and nothing else is formulated (no pairs,
    /// no placement sensitivity); the plain LP otherwise.
    #[default]
    Auto,
    /// Always the plain LP over classes (the reference path).
    Lp,
    /// The decomposition whenever it applies (falling back, with the reason, when it cannot
    /// certify an optimum or the instance has pairs or placement sensitivity).
    Decomposition,
}

impl Method {
    pub const ALL: [Method; 3] = [Method::Auto, Method::Lp, Method::Decomposition];

    pub fn name(self) -> &'static str {
        match self {
            Method::Auto => "auto",
            Method::Lp => "lp",
            Method::Decomposition => "decomposition",
        }
    }

    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// Which method solved a `max_ratio`, and why the decomposition did not when it was tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MethodReport {
    /// `decomposition` or `lp`.
    pub method: String,
    /// Why the decomposition fell back to the plain LP (absent when it was not tried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// The decomposition's recovery LPs at full size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<usize>,
    /// The decomposition's ambiguous jobs: those with full columns in its last recovery LP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ambiguous_jobs: Option<usize>,
    /// The GPU prices the decomposition ended at: a warm start for the next solve on this
    /// cluster (`Problem::warm_prices`). Not part of a response.
    #[serde(skip)]
    pub prices: Option<Vec<f64>>,
}

impl MethodReport {
    pub fn decomposition(rounds: usize, ambiguous: usize) -> MethodReport {
        MethodReport {
            method: Method::Decomposition.name().into(),
            fallback: None,
            rounds: Some(rounds),
            ambiguous_jobs: Some(ambiguous),
            prices: None,
        }
    }

    pub fn lp(fallback: Option<String>) -> MethodReport {
        MethodReport { method: Method::Lp.name().into(), fallback, rounds: None, ambiguous_jobs: None, prices: None }
    }
}

/// Whether the jobs with a demand have mostly distinct (throughput row, scale factor) pairs, and
/// there are enough of them for the decomposition to pay. Rows are told apart by a hash of their
/// bits (a collision only makes them look less distinct), with no allocation per job.
pub(crate) fn mostly_distinct(throughput: &crate::problem::Matrix, scale_factor: &[u32], demand: &[f64]) -> bool {
    let jobs: Vec<usize> = (0..demand.len()).filter(|&m| demand[m] > 0.0).collect();
    if jobs.len() < AUTO_MIN_JOBS {
        return false;
    }
    let mut seen: HashSet<u64, BuildHasherDefault<Mixed>> =
        HashSet::with_capacity_and_hasher(jobs.len(), Default::default());
    for &m in &jobs {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ scale_factor[m] as u64;
        for v in throughput.row(m) {
            h = (h ^ v.to_bits()).wrapping_mul(0x1000_0000_01b3).rotate_left(29);
        }
        seen.insert(h);
    }
    seen.len() as f64 >= AUTO_MIN_DISTINCT * jobs.len() as f64
}

/// A hasher for keys that are hashes already (`mostly_distinct`'s): it passes the key through.
#[derive(Default)]
struct Mixed(u64);

impl Hasher for Mixed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.0 = self.0.rotate_left(8) ^ b as u64);
    }
    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}
