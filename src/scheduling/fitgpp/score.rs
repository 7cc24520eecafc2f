//! FitGpp's rule for the BE job to preempt (Eqs. 1–4 of the paper, `formulations/fitgpp.md`):
//! among the running BE jobs that free enough on their node for the TE job alone and were
//! preempted fewer than P times, the one of smallest `S_j = s_j / max s + λ · GP_j / max GP`.
//! Only the rule; applying it (grace periods, the queue) is `cluster.rs`'s.

use super::job::{JobIndex, NodeIndex};
use super::resources::{Node, Resources};

/// A running BE job, as the decision sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunningBe {
    pub job: JobIndex,
    pub node: NodeIndex,
    pub demand: Resources,
    pub grace_period_seconds: f64,
    /// Times it was preempted so far (`n_j`).
    pub preemptions: u32,
    /// Seconds of work left: LRTP's key (with perfect knowledge); FitGpp never reads it.
    pub remaining_seconds: f64,
}

/// `s_j` (Eq. 1): the job's demand over its node's capacity, summed over the three resources.
pub fn size(job: &RunningBe, nodes: &[Node]) -> f64 {
    job.demand.size_on(&nodes[job.node].capacity)
}

/// Eq. 2 and the cap: `d_te ≤ d_j + free(node_j)` in every resource, and `n_j < P`.
pub fn is_candidate(job: &RunningBe, te: &Resources, nodes: &[Node], max_preemptions: u32) -> bool {
    job.preemptions < max_preemptions && te.fits_in(&job.demand.plus(&nodes[job.node].free()))
}

/// The normalizers of Eq. 3, over every running BE job (`R`), candidates or not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normalizers {
    pub max_size: f64,
    pub max_grace_period: f64,
}

impl Normalizers {
    pub fn over(running: &[RunningBe], nodes: &[Node]) -> Normalizers {
        running.iter().fold(Normalizers { max_size: 0.0, max_grace_period: 0.0 }, |n, j| Normalizers {
            max_size: n.max_size.max(size(j, nodes)),
            max_grace_period: n.max_grace_period.max(j.grace_period_seconds),
        })
    }

    /// `S_j = s_j / max s + λ · GP_j / max GP` (Eq. 3); a maximum of 0 makes its term 0.
    pub fn score(&self, job: &RunningBe, nodes: &[Node], lambda: f64) -> f64 {
        let ratio = |x: f64, max: f64| if max > 0.0 { x / max } else { 0.0 };
        ratio(size(job, nodes), self.max_size) + lambda * ratio(job.grace_period_seconds, self.max_grace_period)
    }
}

/// Eq. 4: the position in `running` of the candidate with the smallest score (ties: the lower
/// job index); None when no running BE job is a candidate.
pub fn choose(
    te: &Resources,
    running: &[RunningBe],
    nodes: &[Node],
    lambda: f64,
    max_preemptions: u32,
) -> Option<usize> {
    let normalizers = Normalizers::over(running, nodes);
    let mut best: Option<(f64, JobIndex, usize)> = None;
    for (k, j) in running.iter().enumerate() {
        if !is_candidate(j, te, nodes, max_preemptions) {
            continue;
        }
        let s = normalizers.score(j, nodes, lambda);
        if best.is_none_or(|(bs, bj, _)| s < bs || (s == bs && j.job < bj)) {
            best = Some((s, j.job, k));
        }
    }
    best.map(|(_, _, k)| k)
}
