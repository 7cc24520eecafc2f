//! A cluster of multi-resource nodes under a FIFO queue and one preemption policy, driven by
//! events (arrivals, completions, the ends of grace periods): it owns the queue, what each node
//! holds, and applying the policy's decisions. The rule itself is `score.rs`/`preemption.rs`'s;
//! workloads and metrics are the simulator's.
//!
//! Each pass (after every batch of events at one instant): with a preemptive policy, every
//! waiting TE job in arrival order starts on the first node it fits, or else asks the policy;
//! then the BE queue starts from its head while the head fits (no backfilling: a head that does
//! not fit blocks the queue). Under `none`, TE and BE jobs share the one FIFO queue.

use super::job::{Job, JobIndex, JobKind, JobSpec, NodeIndex, Phase};
use super::preemption::{Preemption, Preemptor};
use super::resources::{Node, Resources};
use super::score::RunningBe;
use crate::error::{ArbiterError, ErrorCode, Result};
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::{BTreeSet, BinaryHeap, HashSet, VecDeque};

/// One BE job preempted for a TE job.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PreemptionRecord {
    /// When the job was told to stop.
    pub at: f64,
    pub victim: JobIndex,
    pub node: NodeIndex,
    /// When its grace period ends: its resources free up and it returns to the head of the queue.
    pub grace_deadline: f64,
    /// The TE job it makes room for.
    pub for_job: JobIndex,
}

/// What one pass (or every pass up to a time) did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Pass {
    /// Jobs that started or resumed, and where.
    pub started: Vec<(JobIndex, NodeIndex)>,
    pub preemptions: Vec<PreemptionRecord>,
    /// TE jobs that will start on a node when their victims' grace periods end: (job, node, time).
    pub reserved: Vec<(JobIndex, NodeIndex, f64)>,
}

impl Pass {
    /// Appends what a later pass at the same or a later time did.
    pub fn extend(&mut self, other: Pass) {
        self.started.extend(other.started);
        self.preemptions.extend(other.preemptions);
        self.reserved.extend(other.reserved);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventKind {
    Completion { job: JobIndex, run: u32 },
    GraceEnd { job: JobIndex },
    TeStart { job: JobIndex },
}

impl EventKind {
    /// At one instant: completions, then grace ends, then the TE starts they allow.
    fn rank(&self) -> u8 {
        match self {
            EventKind::Completion { .. } => 0,
            EventKind::GraceEnd { .. } => 1,
            EventKind::TeStart { .. } => 2,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Event {
    time: f64,
    seq: u64,
    kind: EventKind,
}

impl Eq for Event {}

impl Ord for Event {
    /// Earliest first in a max-heap: reversed on time, rank, then order of creation.
    fn cmp(&self, other: &Self) -> Ordering {
        other.time.total_cmp(&self.time).then(other.kind.rank().cmp(&self.kind.rank())).then(other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Nodes, jobs, the queue and the pending events.
#[derive(Debug, Clone)]
pub struct Cluster {
    nodes: Vec<Node>,
    jobs: Vec<Job>,
    /// The FIFO queue; preempted BE jobs return to its front. Under `none`, TE jobs too.
    queue: VecDeque<JobIndex>,
    /// TE jobs waiting for room, in arrival order (preemptive policies only).
    te_waiting: Vec<JobIndex>,
    /// Running BE jobs, by index.
    running_be: BTreeSet<JobIndex>,
    ids: HashSet<String>,
    events: BinaryHeap<Event>,
    preemptor: Box<dyn Preemptor>,
    now: f64,
    seq: u64,
}

/// Latest time the clock runs to, in seconds (about 31,700 years). Past it a job's seconds are
/// lost to rounding: at 10⁹⁹ s a job of 10 s finished as it arrived.
pub const MAX_TIME: f64 = 1e12;

impl Cluster {
    /// Nodes of the given capacities, empty, at time 0.
    pub fn new(capacities: &[Resources], preemptor: Box<dyn Preemptor>) -> Result<Cluster> {
        if capacities.is_empty() {
            return Err(ArbiterError::at(ErrorCode::MissingField, "nodes", "a cluster needs at least one node"));
        }
        Ok(Cluster {
            nodes: capacities.iter().map(|&c| Node::new(c)).collect(),
            jobs: Vec::new(),
            queue: VecDeque::new(),
            te_waiting: Vec::new(),
            running_be: BTreeSet::new(),
            ids: HashSet::new(),
            events: BinaryHeap::new(),
            preemptor,
            now: 0.0,
            seq: 0,
        })
    }

    pub fn now(&self) -> f64 {
        self.now
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }

    pub fn preemptor(&self) -> &dyn Preemptor {
        self.preemptor.as_ref()
    }

    /// The FIFO queue, head first.
    pub fn queue(&self) -> impl Iterator<Item = JobIndex> + '_ {
        self.queue.iter().copied()
    }

    /// TE jobs waiting for room (preemptive policies).
    pub fn te_waiting(&self) -> &[JobIndex] {
        &self.te_waiting
    }

    /// The time of the next completion or grace-period end, if any.
    pub fn next_event(&self) -> Option<f64> {
        self.events.peek().map(|e| e.time)
    }

    /// A job arrives now; `schedule` (or the next `advance_to`) decides where it goes.
    pub fn submit(&mut self, spec: JobSpec) -> Result<JobIndex> {
        let capacities: Vec<Resources> = self.nodes.iter().map(|n| n.capacity).collect();
        spec.validate(&capacities)?;
        if self.ids.contains(&spec.id) {
            return Err(ArbiterError::at(
                ErrorCode::DuplicateJobId,
                "job.id",
                format!("a job {:?} was already submitted", spec.id),
            ));
        }
        self.ids.insert(spec.id.clone());
        let j = self.jobs.len();
        let kind = spec.kind;
        self.jobs.push(Job::new(spec, self.now));
        if kind == JobKind::Te && self.preemptor.preempts() {
            self.te_waiting.push(j);
        } else {
            self.queue.push_back(j);
        }
        Ok(j)
    }

    /// Runs every event up to `time` (a pass after each instant's events), then sets the clock there.
    pub fn advance_to(&mut self, time: f64) -> Result<Pass> {
        if !(time.is_finite() && time >= self.now) {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                "time",
                format!("the clock moves forward only: now {}, asked {time}", self.now),
            ));
        }
        if let Some(why) = crate::problem::refusal(time, f64::MIN, "time") {
            return Err(ArbiterError::at(ErrorCode::InvalidNumber, "time", why));
        }
        if time > MAX_TIME {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                "time",
                format!(
                    "the clock runs to at most {MAX_TIME:e} s, where a millisecond still counts; asked {}",
                    crate::problem::shown(time)
                ),
            ));
        }
        let mut pass = Pass::default();
        while let Some(instant) = self.next_event().filter(|&t| t <= time) {
            self.now = instant;
            while let Some(e) = self.events.peek().copied().filter(|e| e.time == instant) {
                self.events.pop();
                self.apply(e.kind, &mut pass);
            }
            pass.extend(self.schedule());
        }
        self.now = time;
        Ok(pass)
    }

    /// Running BE jobs as the policies see them.
    pub fn running_be(&self) -> Vec<RunningBe> {
        self.running_be
            .iter()
            .filter_map(|&j| {
                let job = &self.jobs[j];
                match job.phase {
                    Phase::Running { node, .. } => Some(RunningBe {
                        job: j,
                        node,
                        demand: job.spec.demand,
                        grace_period_seconds: job.spec.grace_period_seconds,
                        preemptions: job.preemptions,
                        remaining_seconds: job.remaining_at(self.now),
                    }),
                    _ => None,
                }
            })
            .collect()
    }

    /// One pass at the current time (see the module's comment).
    pub fn schedule(&mut self) -> Pass {
        let mut pass = Pass::default();
        if self.preemptor.preempts() {
            let waiting = std::mem::take(&mut self.te_waiting);
            for te in waiting {
                let demand = self.jobs[te].spec.demand;
                if let Some(node) = self.first_fit(&demand) {
                    self.start(te, node, &mut pass);
                    continue;
                }
                let running = self.running_be();
                let decision = self.preemptor.choose(&demand, &running, &self.nodes);
                if !decision.is_some_and(|p| self.preempt_for(te, p, &mut pass)) {
                    self.jobs[te].declined += 1;
                    self.te_waiting.push(te);
                }
            }
        }
        while let Some(&head) = self.queue.front() {
            let Some(node) = self.first_fit(&self.jobs[head].spec.demand) else { break };
            self.queue.pop_front();
            self.start(head, node, &mut pass);
        }
        pass
    }

    fn first_fit(&self, demand: &Resources) -> Option<NodeIndex> {
        self.nodes.iter().position(|n| demand.fits_in(&n.free()))
    }

    fn push(&mut self, time: f64, kind: EventKind) {
        self.seq += 1;
        self.events.push(Event { time, seq: self.seq, kind });
    }

    /// `j` starts on `node`, whose resources it takes (a reserved TE job's are already taken).
    fn start(&mut self, j: JobIndex, node: NodeIndex, pass: &mut Pass) {
        let now = self.now;
        let demand = self.jobs[j].spec.demand;
        if let Phase::Reserved { held, .. } = self.jobs[j].phase {
            self.nodes[node].release(&held);
        }
        let taken = self.nodes[node].commit(&demand);
        debug_assert!(taken, "job {j} started on node {node} without room");
        let job = &mut self.jobs[j];
        job.phase = Phase::Running { node, since: now };
        job.first_start.get_or_insert(now);
        if let Some(last) = job.interruptions.last_mut() {
            last.1.get_or_insert(now);
        }
        job.run += 1;
        let (run, end) = (job.run, now + job.remaining_at(now));
        if job.kind() == JobKind::Be {
            self.running_be.insert(j);
        }
        self.push(end, EventKind::Completion { job: j, run });
        pass.started.push((j, node));
    }

    /// Applies a policy's decision for TE job `te`: every victim stops and enters its grace
    /// period; `te` holds what its node has free towards its demand and starts there when the
    /// last grace period on that node ends. False (nothing done) if the decision does not add up.
    fn preempt_for(&mut self, te: JobIndex, p: Preemption, pass: &mut Pass) -> bool {
        let Some(node) = self.nodes.get(p.node).map(|_| p.node) else { return false };
        let demand = self.jobs[te].spec.demand;
        let mut distinct = p.victims.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() != p.victims.len() || p.victims.is_empty() {
            return false;
        }
        let mut freed = Resources::default();
        for &v in &p.victims {
            let ok = v != te
                && self.jobs.get(v).is_some_and(|job| job.kind() == JobKind::Be && self.running_be.contains(&v));
            if !ok {
                return false;
            }
            if self.jobs[v].node() == Some(node) {
                freed = freed.plus(&self.jobs[v].spec.demand);
            }
        }
        let held = demand.minus(&freed);
        if !demand.fits_in(&self.nodes[node].free().plus(&freed)) || !self.nodes[node].commit(&held) {
            return false;
        }
        let now = self.now;
        let mut until = now;
        for &v in &p.victims {
            let job = &mut self.jobs[v];
            let Phase::Running { node: on, since } = job.phase else { continue };
            let deadline = now + job.spec.grace_period_seconds;
            job.executed_seconds = (job.executed_seconds + (now - since)).min(job.spec.duration_seconds);
            job.preemptions += 1;
            job.interruptions.push((now, None));
            job.phase = Phase::Grace { node: on, since: now, until: deadline, for_job: te };
            self.running_be.remove(&v);
            if on == node {
                until = until.max(deadline);
            }
            self.push(deadline, EventKind::GraceEnd { job: v });
            pass.preemptions.push(PreemptionRecord {
                at: now,
                victim: v,
                node: on,
                grace_deadline: deadline,
                for_job: te,
            });
        }
        self.jobs[te].phase = Phase::Reserved { node, until, held };
        self.jobs[te].made_room = true;
        self.push(until, EventKind::TeStart { job: te });
        pass.reserved.push((te, node, until));
        true
    }

    fn apply(&mut self, event: EventKind, pass: &mut Pass) {
        match event {
            EventKind::Completion { job, run } => {
                let j = &mut self.jobs[job];
                let Phase::Running { node, .. } = j.phase else { return };
                if j.run != run {
                    return; // foreseen for a run that was preempted
                }
                j.phase = Phase::Finished;
                j.executed_seconds = j.spec.duration_seconds;
                j.finish = Some(self.now);
                let demand = j.spec.demand;
                self.nodes[node].release(&demand);
                self.running_be.remove(&job);
            }
            EventKind::GraceEnd { job } => {
                let Phase::Grace { node, for_job, .. } = self.jobs[job].phase else { return };
                let demand = self.jobs[job].spec.demand;
                // On the TE job's node its resources pass to the TE job; elsewhere they free up.
                match &mut self.jobs[for_job].phase {
                    Phase::Reserved { node: n, held, .. } if *n == node => *held = held.plus(&demand),
                    _ => self.nodes[node].release(&demand),
                }
                self.jobs[job].phase = Phase::Queued;
                self.queue.push_front(job);
            }
            EventKind::TeStart { job } => {
                let Phase::Reserved { node, .. } = self.jobs[job].phase else { return };
                self.start(job, node, pass);
            }
        }
    }
}
