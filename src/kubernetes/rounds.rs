//! When a controller runs its session's next round: at its first step, then every `round_seconds`
//! of wall-clock time, and only while the session has jobs. Shared by `arbiter kueue` and
//! `arbiter k8s-sync --run-rounds`, so both keep the same rhythm.

use super::arbiter::ArbiterClient;
use super::http::CallError;
use super::session::SessionSnapshot;
use std::time::{Duration, Instant};

/// The next round's due time, as one controller keeps it.
#[derive(Debug, Clone, Default)]
pub struct RoundClock {
    /// None yet: due at the first step.
    next: Option<Instant>,
}

impl RoundClock {
    /// Whether a round is due at `now` for `session`: its time has come and it has jobs.
    pub fn is_due(&self, now: Instant, session: &SessionSnapshot) -> bool {
        self.next.is_none_or(|t| now >= t) && !session.jobs.is_empty()
    }

    /// Seconds from `now` to the next round (0 when it is due).
    pub fn seconds_to_next(&self, now: Instant) -> f64 {
        self.next.map_or(0.0, |t| t.saturating_duration_since(now).as_secs_f64())
    }

    /// Runs the session's next round if one is due: `Ok(None)` when none is, the round's index
    /// when it ran (the next is then due `round_seconds` later), the error when it failed (tried
    /// again at the next step).
    pub fn run_if_due(
        &mut self,
        arbiter: &ArbiterClient,
        session: &SessionSnapshot,
        now: Instant,
    ) -> Result<Option<u64>, CallError> {
        if !self.is_due(now, session) {
            return Ok(None);
        }
        let round = arbiter.run_round(&session.id)?;
        let index = round["index"].as_u64().unwrap_or(session.rounds);
        tracing::info!(session = %session.id, round = index, placements = %round["placements"], "round run");
        // At least a second, at most a year (the server's round lengths are finite and positive).
        let length = Duration::from_secs_f64(session.round_seconds.clamp(1.0, 31_536_000.0));
        self.next = Some(now + length);
        Ok(Some(index))
    }
}
