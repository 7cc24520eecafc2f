//! Which method solves `Engine::max_ratio`: the plain LP over classes, or the price
//! decomposition (automatic when rows are mostly distinct), and the report of which one ran.

use serde::{Deserialize, Serialize};

/// At least this many jobs with a demand before `auto` picks the decomposition. On distinct rows
/// it is as fast as the plain LP from 32 jobs and faster from 128 (ten times for water-filling
/// and hierarchical, seven for LAS at 1,024 jobs: benches/README.md); below this, every solve
/// takes well under a millisecond either way.
pub const AUTO_MIN_JOBS: usize = 64;
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
/// bits (a collision only makes them look less distinct) and counted by linear counting (Whang,
/// Vander-Zanden and Taylor, 1990): each hash sets one bit of a bitmap of 8 bits per counted row,
/// and `z` bits left clear out of `b` estimate `b·ln(b/z)` distinct rows. Past 2^16 jobs only the
/// rows whose hash is 0 modulo `keep` are counted (equal rows are kept or dropped together, so the
/// count of the kept ones, times `keep`, estimates the distinct rows, with a standard error under
/// 0.5% of the jobs): the bitmap stays at 64 KB, in cache, where one of a byte per job (1 MB at
/// 2^20 jobs) missed it on every row. Both methods are exact, so a miscount near the threshold
/// costs time, never the answer.
pub(crate) fn mostly_distinct(throughput: &crate::problem::Matrix, scale_factor: &[u32], demand: &[f64]) -> bool {
    let jobs = demand.iter().filter(|&&d| d > 0.0).count();
    if jobs < AUTO_MIN_JOBS {
        return false;
    }
    let keep = (jobs >> 16).next_power_of_two() as u64;
    let bits = (8 * jobs / keep as usize).next_power_of_two();
    let mut bitmap = vec![0u64; bits / 64];
    let rows = throughput.row_iter().zip(scale_factor).zip(demand);
    for ((row, &sf), _) in rows.filter(|&(_, &d)| d > 0.0) {
        // Rotate-and-xor the row's bits, then mix once: a short dependency chain per row.
        let h = mix(row.iter().fold(0xcbf2_9ce4_8422_2325 ^ sf as u64, |h, v| h.rotate_left(23) ^ v.to_bits()));
        if h.is_multiple_of(keep) {
            let bit = ((h / keep) as usize) & (bits - 1);
            bitmap[bit / 64] |= 1 << (bit % 64);
        }
    }
    let clear = bits - bitmap.iter().map(|w| w.count_ones() as usize).sum::<usize>();
    let distinct = keep as f64 * bits as f64 * (bits as f64 / clear as f64).ln();
    distinct >= AUTO_MIN_DISTINCT * jobs as f64
}

/// SplitMix64's finalizer: every bit of the row hash reaches the bitmap's index bits.
fn mix(mut h: u64) -> u64 {
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Matrix;

    /// `jobs` rows on 3 types, `classes` of them distinct (job m has row m mod classes).
    fn rows(jobs: usize, classes: usize) -> Matrix {
        let mut throughput = Matrix::zeros(jobs, 3);
        for m in 0..jobs {
            let c = (m % classes) as f64;
            for w in 0..3 {
                throughput.set(m, w, 1.0 + c * 0.001 + w as f64);
            }
        }
        throughput
    }

    #[test]
    fn distinct_rows_are_counted_to_within_the_threshold() {
        for (jobs, classes, expected) in [
            (4096, 4096, true),
            (4096, 2300, true),
            (4096, 1800, false),
            (4096, 100, false),
            (1 << 18, 140_000, true),
            (1 << 18, 120_000, false),
            (1 << 20, 560_000, true),
            (1 << 20, 480_000, false),
        ] {
            let demand = vec![1.0; jobs];
            let sf = vec![1; jobs];
            assert_eq!(mostly_distinct(&rows(jobs, classes), &sf, &demand), expected, "{classes} of {jobs}");
        }
    }

    #[test]
    fn scale_factors_tell_rows_apart_and_jobs_without_demand_do_not_count() {
        let jobs = 4096;
        let throughput = rows(jobs, 1);
        let sf: Vec<u32> = (0..jobs as u32).collect();
        assert!(mostly_distinct(&throughput, &sf, &vec![1.0; jobs]));
        assert!(!mostly_distinct(&throughput, &vec![1; jobs], &vec![1.0; jobs]));
        let mut demand = vec![0.0; jobs];
        demand[..AUTO_MIN_JOBS - 1].iter_mut().for_each(|d| *d = 1.0);
        assert!(!mostly_distinct(&throughput, &sf, &demand), "too few jobs with a demand");
    }
}
