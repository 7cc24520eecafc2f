//! The time one job combination (a job alone, or a colocated pair) is owed and has received on
//! each worker type: its allocation (`X[m][·]` or `Y[k][·]`), the time received since the last
//! reset, the deficit carried across it, and the time received since the combination began.

use super::priority;

/// One job combination's time per worker type. Singles and pairs are tracked and granted alike.
#[derive(Debug, Clone)]
pub(super) struct Share {
    /// The allocation: `X[m][·]` for a job alone, `Y[k][·]` for a pair.
    pub(super) allocation: Vec<f64>,
    /// Seconds run per type since the last reset.
    pub(super) received: Vec<f64>,
    /// Seconds owed per type from before the last reset (negative: ran ahead).
    pub(super) carried: Vec<f64>,
    /// Seconds run per type since the combination began.
    pub(super) total_received: Vec<f64>,
}

impl Share {
    pub(super) fn new(types: usize) -> Share {
        Share {
            allocation: vec![0.0; types],
            received: vec![0.0; types],
            carried: vec![0.0; types],
            total_received: vec![0.0; types],
        }
    }

    /// Seconds owed on type `w`: carried deficit + `allocation · elapsed` − received.
    pub(super) fn owed(&self, w: usize, elapsed: f64) -> f64 {
        self.carried[w] + self.allocation[w] * elapsed - self.received[w]
    }

    pub(super) fn deficit(&self, elapsed: f64) -> Vec<f64> {
        (0..self.allocation.len()).map(|w| self.owed(w, elapsed)).collect()
    }

    /// `owed + allocation · R` on every type (see `priority::priority`).
    pub(super) fn priorities(&self, elapsed: f64, round_seconds: f64) -> Vec<f64> {
        (0..self.allocation.len())
            .map(|w| priority::priority(self.allocation[w], self.owed(w, elapsed), round_seconds))
            .collect()
    }

    /// The combination ran `seconds` on type `w`.
    pub(super) fn grant(&mut self, w: usize, seconds: f64) {
        self.received[w] += seconds;
        self.total_received[w] += seconds;
    }

    /// Fraction of the `span` seconds since the combination began that it ran on each type.
    pub(super) fn received_fraction(&self, span: f64) -> Vec<f64> {
        self.total_received.iter().map(|r| if span > 0.0 { r / span } else { 0.0 }).collect()
    }

    /// Installs a new allocation row: what was owed under the old one is carried, within
    /// `±bound`, on the types the new one allocates and the combination can be placed on;
    /// received time restarts from zero. Allocations below `epsilon` are taken as 0.
    pub(super) fn reset(
        &mut self,
        row: &[f64],
        elapsed: f64,
        bound: f64,
        epsilon: f64,
        placeable: impl Fn(usize) -> bool,
    ) {
        for (w, &x) in row.iter().enumerate() {
            let x = if x < epsilon { 0.0 } else { x.min(1.0) };
            let owed = self.owed(w, elapsed);
            self.carried[w] = if x > 0.0 && placeable(w) { owed.clamp(-bound, bound) } else { 0.0 };
            self.received[w] = 0.0;
            self.allocation[w] = x;
        }
    }
}
