//! The round-based mechanism (Gavel §5, Algorithm 1): turns an allocation of time fractions into
//! placements on real servers, round after round, with leases, received time and deficits.
//!
//! - [`cluster`]: servers and GPUs per worker type, GPU ids, health.
//! - [`session`]: one cluster's state and the events that change it.
//! - [`colocation`]: space sharing: pairs of jobs that may share GPUs, each at its paired
//!   throughput; effective throughputs.
//! - [`allocation`]: recomputing the allocation (`X` alone, `Y` for pairs) with the policy, and
//!   the reset it brings.
//! - [`round`]: `next_round`, and what one round decides.
//! - [`priority`]: priority of a job combination (a job alone or a pair) = seconds behind its
//!   allocation by the end of the round if it does not run (`deficit + X·R`), and which
//!   combinations run this round, never a job twice.
//! - [`placement`]: which GPUs they get, consolidated, renewing leases.
//! - [`report`]: the `arbiter rounds` run on a fixed request, and its JSON.
//! - `realizable`: how much of the current allocation rounds on whole GPUs can deliver.
//! - `configurations`: rounds that run the allocation's decomposition into round configurations
//!   by deficit rounding (`Mode::Configurations`).
//! - `composed`: a session whose rounds a composition of list-policy stages decides
//!   (`crate::scheduling::Pipeline`), every event mirrored into it.
//! - `metrics`: JCT, responsiveness, preemptions and utilization of a session so far.
//!
//! See `formulations/round_mechanism.md` for the algorithm in these names.

pub mod allocation;
pub mod cluster;
pub mod colocation;
mod composed;
mod configurations;
mod metrics;
pub mod placement;
pub mod priority;
mod realizable;
pub mod report;
pub mod round;
pub mod session;
mod share;

pub use allocation::{Allocation, Realized};
pub use cluster::{Cluster, GpuId, ServerId, Worker};
pub use metrics::SessionMetrics;
pub use placement::{Lease, Placement, Tenants};
pub use realizable::realizability;
pub use round::{JobRound, LeaseChange, Round};
pub use session::Session;

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use std::sync::Arc;

/// A job's id, shared by the session and every round that names the job.
pub type JobId = Arc<str>;

/// How rounds grant time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Whole rounds on whole GPUs, chosen by priority and placed on servers.
    #[default]
    Rounds,
    /// Every job receives exactly its allocation's fractions each round, with no placement: the
    /// yardstick the rounds are compared against.
    Ideal,
    /// Whole rounds on whole GPUs that run the round configurations of the allocation's
    /// decomposition (`solver::realizability`) by deficit rounding, so that every job receives
    /// what rounds can deliver of its allocation, within about one round's share
    /// (`configurations`); the priority selection while there is no decomposition.
    Configurations,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Rounds => "rounds",
            Mode::Ideal => "ideal",
            Mode::Configurations => "configurations",
        }
    }

    /// The mode of a name (`rounds`, `ideal`, `configurations`).
    pub fn from_name(name: &str) -> Option<Mode> {
        [Mode::Rounds, Mode::Ideal, Mode::Configurations].into_iter().find(|m| m.name() == name)
    }
}

/// The mechanism's knobs. All times are seconds of session time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Length of a round (Gavel's default, 6 minutes).
    pub round_seconds: f64,
    /// The allocation is recomputed at most this often, however often the jobs or the cluster
    /// change; until then new jobs wait with no allocation.
    pub min_solve_interval: f64,
    /// Weight of a new throughput measurement in the exponential moving average, in (0, 1].
    pub throughput_smoothing: f64,
    /// A measured throughput moving by more than this fraction makes the allocation stale.
    pub resolve_threshold: f64,
    /// Deficits carried across a reset are bounded by this many rounds of time, so a job cannot
    /// bank unbounded credit (or debt) from an old allocation.
    pub max_deficit_rounds: f64,
    /// `false`: a job runs on a type only while it is owed time there (it would fall behind its
    /// allocation by the end of the round otherwise), so received time tracks the allocation even
    /// when the allocation leaves GPUs unused. `true`: GPUs left over then go to jobs ahead of
    /// their allocation, in priority order: more work done, less fidelity to the policy.
    pub work_conserving: bool,
    pub mode: Mode,
    pub backend: Backend,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            round_seconds: 360.0,
            min_solve_interval: 0.0,
            throughput_smoothing: 0.5,
            resolve_threshold: 0.1,
            max_deficit_rounds: 2.0,
            work_conserving: false,
            mode: Mode::Rounds,
            backend: Backend::default(),
        }
    }
}

/// The shortest and the longest round a session or a simulation takes, in seconds: a
/// millisecond and a year. Rounds outside them are a mistaken unit, not a schedule (a round of
/// 10⁹⁹ s put every later arrival past the contract's largest number).
pub const ROUND_SECONDS: std::ops::RangeInclusive<f64> = 1e-3..=3.2e7;

/// Why `round_seconds` is not a round's length, if it is not.
pub fn round_seconds_refusal(round_seconds: f64) -> Option<String> {
    (!ROUND_SECONDS.contains(&round_seconds)).then(|| {
        format!(
            "round_seconds must be from {} to {:e} seconds (a millisecond to a year), got {}",
            ROUND_SECONDS.start(),
            ROUND_SECONDS.end(),
            crate::problem::shown(round_seconds)
        )
    })
}

impl Config {
    /// Refuses knobs that would make rounds meaningless (a zero or infinite round, a smoothing
    /// weight outside (0, 1], negative intervals).
    pub fn validate(&self) -> Result<()> {
        let check = |ok: bool, field: &str, what: String| {
            if ok {
                Ok(())
            } else {
                Err(ArbiterError::at(ErrorCode::InvalidNumber, field, what))
            }
        };
        // Every knob also within the contract's range of magnitudes (`problem::refusal`).
        let in_range = |field: &str, v: f64| match crate::problem::refusal(v, 0.0, field) {
            Some(why) => check(false, field, why),
            None => Ok(()),
        };
        if let Some(why) = round_seconds_refusal(self.round_seconds) {
            return check(false, "round_seconds", why);
        }
        for (field, v) in [
            ("min_solve_interval", self.min_solve_interval),
            ("resolve_threshold", self.resolve_threshold),
            ("max_deficit_rounds", self.max_deficit_rounds),
        ] {
            in_range(field, v)?;
        }
        let a = self.throughput_smoothing;
        check(a > 0.0 && a <= 1.0, "throughput_smoothing", format!("throughput_smoothing must be in (0, 1], got {a}"))?;
        in_range("throughput_smoothing", a)
    }
}
