//! A training job as OASiS sees it: epochs `E`, data chunks `N`, mini-batches per chunk `M`,
//! mini-batch time `τ`, gradient size `e`, what each worker and parameter server takes, and a
//! utility of its completion time; and the quantities the schedule needs derived from them.
//! Not for pricing or placing anything.

use super::cluster::ClusterSpec;
use super::resources::ResourceVector;
use crate::error::{ArbiterError, ErrorCode, Result};
use serde::{Deserialize, Serialize};

/// `f_i(d)`, the job's value when it completes `d` slots after it arrived (`d ≥ 1`: a job that
/// arrives in slot `a` and ends with slot `t` has `d = t − a + 1`). Non-increasing in `d`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = OasisUtility)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Utility {
    /// Time-insensitive: the same value whenever it completes.
    Constant { value: f64 },
    /// `γ1 / (1 + e^{γ2 (d − γ3)})`: priority `γ1`, decay `γ2 ≥ 0`, target `γ3` slots.
    Sigmoid { priority: f64, decay: f64, target: f64 },
}

impl Utility {
    pub fn at(&self, duration_slots: usize) -> f64 {
        match *self {
            Utility::Constant { value } => value,
            Utility::Sigmoid { priority, decay, target } => {
                priority / (1.0 + (decay * (duration_slots as f64 - target)).exp())
            }
        }
    }

    /// Every number finite, in the contract's range (`problem::refusal`), and at least its minimum.
    fn validate(&self, field: &str) -> Result<()> {
        let check = |name: &str, v: f64, min: f64| match crate::problem::refusal(v, min, name) {
            Some(why) => Err(ArbiterError::at(ErrorCode::InvalidNumber, format!("{field}.{name}"), why)),
            None => Ok(()),
        };
        match *self {
            Utility::Constant { value } => check("value", value, 0.0),
            Utility::Sigmoid { priority, decay, target } => {
                check("priority", priority, 0.0)?;
                check("decay", decay, 0.0)?;
                check("target", target, f64::MIN)
            }
        }
    }
}

/// What a user submits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = OasisJob)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    pub id: String,
    /// The slot `a_i` it arrives in.
    pub arrival_slot: usize,
    /// `E_i`.
    pub epochs: u32,
    /// `N_i`: data chunks, and the most workers the job may run at once.
    pub chunks: u32,
    /// `M_i`.
    pub minibatches_per_chunk: u32,
    /// `τ_i`: seconds of gradient computation per mini-batch.
    pub minibatch_seconds: f64,
    /// `e_i`: MB of gradients a worker sends (and parameters it receives) per mini-batch.
    pub gradient_mb: f64,
    /// `α_i` (its bandwidth is `b_i`).
    pub worker: ResourceVector,
    /// `β_i` (its bandwidth is `B_i`).
    pub parameter_server: ResourceVector,
    pub utility: Utility,
}

/// The most worker-slots `K_i` a job may need: the DP over slots keeps a table of `K_i + 1`
/// entries per slot.
pub const MAX_WORKER_SLOTS: u64 = 1_000_000;

/// A validated job with what its schedule is built from.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub spec: JobSpec,
    /// `τ_i + 2·8·e_i / b_i`: seconds per mini-batch, computation and exchange.
    pub minibatch_time: f64,
    /// `q_i`: whole chunks one worker trains in one slot.
    pub chunks_per_worker_slot: u32,
    /// `K_i = ⌈E_i N_i / q_i⌉`: worker-slots that train the whole workload `E_i N_i`.
    pub worker_slots: u64,
    /// The most workers worth running in one slot: `min(N_i, K_i)`.
    pub max_workers: u32,
}

impl Job {
    /// Refuses numbers out of range and a job that could never progress: no whole chunk per
    /// worker and slot, a parameter server slower than a worker (`B_i < b_i` breaks `s ≤ y`), or
    /// an arrival past the horizon. `field` is the job's path in the input (`jobs[3]`).
    pub fn new(spec: JobSpec, slot_seconds: f64, slots: usize, field: &str) -> Result<Job> {
        let bad = |name: &str, what: &str| {
            Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                format!("{field}.{name}"),
                format!("job {:?}: {name} must be {what}", spec.id),
            ))
        };
        crate::problem::check_job_id(&spec.id, format!("{field}.id"), true)?;
        if spec.epochs == 0 {
            return bad("epochs", "at least 1");
        }
        if spec.chunks == 0 {
            return bad("chunks", "at least 1");
        }
        if spec.minibatches_per_chunk == 0 {
            return bad("minibatches_per_chunk", "at least 1");
        }
        let in_range = crate::problem::in_range;
        if !(in_range(spec.minibatch_seconds) && spec.minibatch_seconds > 0.0) {
            return bad("minibatch_seconds", "a finite number > 0 of magnitude between 1e-100 and 1e100");
        }
        if !(in_range(spec.gradient_mb) && spec.gradient_mb >= 0.0) {
            return bad("gradient_mb", "0 or a finite number of magnitude between 1e-100 and 1e100");
        }
        if spec.worker.bandwidth_mbps == 0 {
            return bad("worker.bandwidth_mbps", "at least 1");
        }
        if spec.parameter_server.bandwidth_mbps < spec.worker.bandwidth_mbps {
            return bad("parameter_server.bandwidth_mbps", "at least the worker's (one PS must serve one worker)");
        }
        if spec.arrival_slot >= slots {
            return bad("arrival_slot", "before the end of the horizon");
        }
        spec.utility.validate(&format!("{field}.utility"))?;
        let minibatch_time = spec.minibatch_seconds + 2.0 * 8.0 * spec.gradient_mb / spec.worker.bandwidth_mbps as f64;
        let per_chunk = spec.minibatches_per_chunk as f64 * minibatch_time;
        let q = (slot_seconds / per_chunk).floor();
        if !q.is_finite() || q < 1.0 {
            // What makes the chunk too long: one mini-batch's compute or its gradient exchange, or
            // the number of mini-batches.
            let exchange = minibatch_time - spec.minibatch_seconds;
            let cause = match minibatch_time > slot_seconds {
                true if exchange > spec.minibatch_seconds => "gradient_mb",
                true => "minibatch_seconds",
                false => "minibatches_per_chunk",
            };
            return Err(ArbiterError::at(
                ErrorCode::JobCannotRun,
                format!("{field}.{cause}"),
                format!(
                    "job {:?}: one chunk takes {} s, longer than a slot ({slot_seconds} s)",
                    spec.id,
                    crate::problem::shown((per_chunk * 10.0).round() / 10.0)
                ),
            ));
        }
        let chunks_per_worker_slot = q.min(u32::MAX as f64) as u32;
        let workload = spec.epochs as u64 * spec.chunks as u64;
        let worker_slots = workload.div_ceil(chunks_per_worker_slot as u64);
        if worker_slots > MAX_WORKER_SLOTS {
            return Err(ArbiterError::at(
                ErrorCode::Unsupported,
                format!("{field}.{}", if spec.chunks > spec.epochs { "chunks" } else { "epochs" }),
                format!(
                    "job {:?}: {worker_slots} worker-slots (E·N/q) is more than the {MAX_WORKER_SLOTS} a schedule is computed for",
                    spec.id
                ),
            ));
        }
        let max_workers = (spec.chunks as u64).min(worker_slots) as u32;
        Ok(Job { spec, minibatch_time, chunks_per_worker_slot, worker_slots, max_workers })
    }

    /// `⌈w·b_i / B_i⌉`: the fewest parameter servers whose bandwidth covers `w` workers' (Eq. 6);
    /// never more than `w` since `B_i ≥ b_i` (Eq. 7).
    pub fn parameter_servers_for(&self, workers: u32) -> u32 {
        let b = self.spec.worker.bandwidth_mbps as u64;
        let big_b = self.spec.parameter_server.bandwidth_mbps as u64;
        (workers as u64 * b).div_ceil(big_b) as u32
    }

    /// The fewest slots the job can finish in: `⌈K_i / N_i⌉`.
    pub fn shortest_duration(&self) -> usize {
        self.worker_slots.div_ceil(self.spec.chunks as u64) as usize
    }

    /// The utility if it completes with slot `t` (`t ≥ a_i`).
    pub fn utility_ending_at(&self, slot: usize) -> f64 {
        self.spec.utility.at(slot + 1 - self.spec.arrival_slot.min(slot))
    }
}

/// The worked example's cluster (`formulations/oasis.md`): one worker server (2 GPUs,
/// 2 Mbit/s: two workers), one PS server (2 cores, 4 Mbit/s: two parameter servers), two
/// slots of 100 s.
pub(crate) fn worked_example_cluster() -> ClusterSpec {
    ClusterSpec {
        slot_seconds: 100.0,
        slots: 2,
        worker_servers: vec![ResourceVector::new(2, 0, 0, 2)],
        ps_servers: vec![ResourceVector::new(0, 2, 0, 4)],
    }
}

/// A job of the worked example: 10 mini-batches of 1 s + 2·8·0.0625 MB / 1 Mbit/s = 2 s a
/// chunk-minibatch: 20 s a chunk, q = 5 chunks a worker-slot; `E·N / 5` worker-slots; one PS
/// per two workers.
pub(crate) fn worked_example_job(id: &str, epochs: u32, utility: Utility) -> JobSpec {
    JobSpec {
        id: id.into(),
        arrival_slot: 0,
        epochs,
        chunks: 5,
        minibatches_per_chunk: 10,
        minibatch_seconds: 1.0,
        gradient_mb: 0.0625,
        worker: ResourceVector::new(1, 0, 0, 1),
        parameter_server: ResourceVector::new(0, 1, 0, 2),
        utility,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// τ = 1 s, e = 62.5 MB at 1,000 Mbit/s: 1 + 1 = 2 s a mini-batch; 10 mini-batches a chunk;
    /// 100 s slots: q = 5 chunks a worker-slot.
    pub(crate) fn small(id: &str, epochs: u32, chunks: u32, utility: Utility) -> JobSpec {
        JobSpec {
            id: id.into(),
            arrival_slot: 0,
            epochs,
            chunks,
            minibatches_per_chunk: 10,
            minibatch_seconds: 1.0,
            gradient_mb: 62.5,
            worker: ResourceVector::new(1, 2, 4, 1000),
            parameter_server: ResourceVector::new(0, 1, 2, 2000),
            utility,
        }
    }

    #[test]
    fn derived_quantities_match_the_model() {
        let job = Job::new(small("j", 3, 4, Utility::Constant { value: 1.0 }), 100.0, 10, "jobs[0]").unwrap();
        assert_eq!(job.minibatch_time, 2.0);
        assert_eq!(job.chunks_per_worker_slot, 5);
        assert_eq!(job.worker_slots, 3); // ⌈12 / 5⌉
        assert_eq!(job.max_workers, 3);
        assert_eq!(job.shortest_duration(), 1);
        assert_eq!(job.parameter_servers_for(0), 0);
        assert_eq!(job.parameter_servers_for(1), 1);
        assert_eq!(job.parameter_servers_for(2), 1);
        assert_eq!(job.parameter_servers_for(3), 2);
    }

    #[test]
    fn sigmoid_is_half_the_priority_at_the_target() {
        let u = Utility::Sigmoid { priority: 10.0, decay: 2.0, target: 3.0 };
        assert_eq!(u.at(3), 5.0);
        assert!(u.at(1) > u.at(2) && u.at(4) < u.at(3));
        assert_eq!(Utility::Sigmoid { priority: 10.0, decay: 0.0, target: 3.0 }.at(9), 5.0);
    }

    #[test]
    fn bad_jobs_are_refused_with_their_field() {
        let mut spec = small("j", 3, 4, Utility::Constant { value: 1.0 });
        spec.minibatches_per_chunk = 100; // 200 s a chunk, slots of 100 s
        let err = Job::new(spec, 100.0, 10, "jobs[2]").unwrap_err();
        assert_eq!(err.code, ErrorCode::JobCannotRun);
        let mut spec = small("j", 3, 4, Utility::Constant { value: f64::NAN });
        assert_eq!(
            Job::new(spec.clone(), 100.0, 10, "jobs[2]").unwrap_err().field.as_deref(),
            Some("jobs[2].utility.value")
        );
        spec.utility = Utility::Constant { value: 1.0 };
        let mut huge = spec.clone();
        (huge.epochs, huge.chunks) = (u32::MAX, u32::MAX);
        assert_eq!(Job::new(huge, 100.0, 10, "jobs[2]").unwrap_err().code, ErrorCode::Unsupported);
        // Numbers past the contract's range (`problem::refusal`): a utility of 1.7e308 priced
        // admission at a payoff of 1.7e308 and wrote out its 309 digits.
        let field = |spec: JobSpec| Job::new(spec, 100.0, 10, "jobs[2]").unwrap_err().field;
        for (utility, name) in [
            (Utility::Constant { value: 1.7e308 }, "value"),
            (Utility::Sigmoid { priority: 1e-300, decay: 1.0, target: 1.0 }, "priority"),
            (Utility::Sigmoid { priority: 1.0, decay: 1.0, target: -1e200 }, "target"),
        ] {
            let bad = JobSpec { utility, ..spec.clone() };
            assert_eq!(field(bad).as_deref(), Some(format!("jobs[2].utility.{name}").as_str()));
        }
        assert_eq!(field(JobSpec { gradient_mb: 5e-324, ..spec.clone() }).as_deref(), Some("jobs[2].gradient_mb"));
        assert_eq!(
            field(JobSpec { minibatch_seconds: 1e-300, ..spec.clone() }).as_deref(),
            Some("jobs[2].minibatch_seconds")
        );
        assert!(Job::new(JobSpec { gradient_mb: 0.0, ..spec.clone() }, 100.0, 10, "jobs[2]").is_ok());
        spec.parameter_server.bandwidth_mbps = 500;
        assert_eq!(
            Job::new(spec, 100.0, 10, "jobs[2]").unwrap_err().field.as_deref(),
            Some("jobs[2].parameter_server.bandwidth_mbps")
        );
    }
}
