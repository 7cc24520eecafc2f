//! The preemption policies a TE job that does not fit can call on: `fitgpp` (one BE job, by
//! score), `lrtp` (longest remaining time first, with perfect knowledge) and `rand` (uniformly at
//! random), both preempting until the TE job fits on one node, and `none` (plain FIFO). Each
//! returns the victims and the node; applying the decision is `cluster.rs`'s.

use super::job::{JobIndex, NodeIndex};
use super::resources::{Node, Resources};
use super::score::{self, RunningBe};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::workload::generator::Rng;

/// The BE jobs to preempt for a TE job, and the node it will start on once the grace periods of
/// those among them on that node end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preemption {
    pub victims: Vec<JobIndex>,
    pub node: NodeIndex,
}

/// A preemption policy.
pub trait Preemptor: std::fmt::Debug + Send + dyn_clone::DynClone {
    fn name(&self) -> String;
    /// Whether TE jobs jump the queue and may preempt (false: plain FIFO).
    fn preempts(&self) -> bool {
        true
    }
    /// The cap P on preemptions per BE job.
    fn max_preemptions(&self) -> u32;
    /// What to preempt so `te` fits (it fits on no node's free resources now); None: nothing.
    fn choose(&mut self, te: &Resources, running: &[RunningBe], nodes: &[Node]) -> Option<Preemption>;
}

dyn_clone::clone_trait_object!(Preemptor);

/// FitGpp: the candidate of smallest score (`score::choose`); with `random_fallback` (the paper's
/// option), when no job is a candidate, random BE jobs until the TE job fits, as `rand` does.
#[derive(Debug, Clone)]
pub struct FitGpp {
    pub lambda: f64,
    pub max_preemptions: u32,
    pub random_fallback: Option<Rng>,
}

/// Longest remaining time first (Big-C), with every job's remaining time known exactly.
#[derive(Debug, Clone)]
pub struct Lrtp {
    pub max_preemptions: u32,
}

/// Uniformly random running BE jobs.
#[derive(Debug, Clone)]
pub struct Rand {
    pub max_preemptions: u32,
    pub rng: Rng,
}

/// Non-preemptive FIFO.
#[derive(Debug, Clone, Copy)]
pub struct NoPreemption;

impl Preemptor for FitGpp {
    fn name(&self) -> String {
        "fitgpp".into()
    }
    fn max_preemptions(&self) -> u32 {
        self.max_preemptions
    }
    fn choose(&mut self, te: &Resources, running: &[RunningBe], nodes: &[Node]) -> Option<Preemption> {
        if let Some(k) = score::choose(te, running, nodes, self.lambda, self.max_preemptions) {
            return Some(Preemption { victims: vec![running[k].job], node: running[k].node });
        }
        let rng = self.random_fallback.as_mut()?;
        let order = shuffled(eligible(running, self.max_preemptions), rng);
        until_fits(te, &order, nodes)
    }
}

impl Preemptor for Lrtp {
    fn name(&self) -> String {
        "lrtp".into()
    }
    fn max_preemptions(&self) -> u32 {
        self.max_preemptions
    }
    fn choose(&mut self, te: &Resources, running: &[RunningBe], nodes: &[Node]) -> Option<Preemption> {
        let mut order = eligible(running, self.max_preemptions);
        order.sort_by(|a, b| b.remaining_seconds.total_cmp(&a.remaining_seconds).then(a.job.cmp(&b.job)));
        until_fits(te, &order, nodes)
    }
}

impl Preemptor for Rand {
    fn name(&self) -> String {
        "rand".into()
    }
    fn max_preemptions(&self) -> u32 {
        self.max_preemptions
    }
    fn choose(&mut self, te: &Resources, running: &[RunningBe], nodes: &[Node]) -> Option<Preemption> {
        let order = shuffled(eligible(running, self.max_preemptions), &mut self.rng);
        until_fits(te, &order, nodes)
    }
}

impl Preemptor for NoPreemption {
    fn name(&self) -> String {
        "none".into()
    }
    fn preempts(&self) -> bool {
        false
    }
    fn max_preemptions(&self) -> u32 {
        0
    }
    fn choose(&mut self, _: &Resources, _: &[RunningBe], _: &[Node]) -> Option<Preemption> {
        None
    }
}

/// Running BE jobs preempted fewer than `cap` times.
fn eligible(running: &[RunningBe], cap: u32) -> Vec<RunningBe> {
    running.iter().filter(|j| j.preemptions < cap).copied().collect()
}

fn shuffled(mut jobs: Vec<RunningBe>, rng: &mut Rng) -> Vec<RunningBe> {
    for k in (1..jobs.len()).rev() {
        jobs.swap(k, rng.below(k + 1));
    }
    jobs
}

/// Preempts down `order` until some node's free resources plus what its victims free hold `te`;
/// the victims so far (on every node) and that node. None, and nothing preempted, if even all of
/// `order` would not do.
fn until_fits(te: &Resources, order: &[RunningBe], nodes: &[Node]) -> Option<Preemption> {
    let mut freed: Vec<Resources> = Vec::new();
    let mut victims = Vec::new();
    for j in order {
        if freed.len() <= j.node {
            freed.resize(j.node + 1, Resources::default());
        }
        freed[j.node] = freed[j.node].plus(&j.demand);
        victims.push(j.job);
        if te.fits_in(&nodes[j.node].free().plus(&freed[j.node])) {
            return Some(Preemption { victims, node: j.node });
        }
    }
    None
}

/// The policy a name gives: `fitgpp`, `lrtp`, `rand` or `none`; `seed` seeds `rand` and FitGpp's
/// random fallback.
pub fn named(
    name: &str,
    lambda: f64,
    max_preemptions: u32,
    random_fallback: bool,
    seed: u64,
) -> Result<Box<dyn Preemptor>> {
    if let Some(why) = crate::problem::refusal(lambda, 0.0, "λ") {
        return Err(ArbiterError::at(ErrorCode::InvalidNumber, "lambda", why));
    }
    Ok(match name {
        "fitgpp" => {
            Box::new(FitGpp { lambda, max_preemptions, random_fallback: random_fallback.then(|| Rng::new(seed)) })
        }
        "lrtp" => Box::new(Lrtp { max_preemptions }),
        "rand" => Box::new(Rand { max_preemptions, rng: Rng::new(seed) }),
        "none" => Box::new(NoPreemption),
        other => {
            return Err(ArbiterError::at(
                ErrorCode::UnknownPolicy,
                "preemption",
                format!("unknown preemption policy {other:?}; expected fitgpp, lrtp, rand or none"),
            ))
        }
    })
}
