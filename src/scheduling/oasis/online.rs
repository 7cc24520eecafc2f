//! OASiS itself (the paper's Algorithms 1 and 2): on each arrival, the best schedule of the job
//! at the current prices over every completion slot, admission iff its payoff is positive, and
//! the admitted schedule committed to the pools (which moves the prices). Owns the pools; the
//! pieces are `placement.rs` (one slot), `dp.rs` (the slots) and `price.rs`.

use super::cluster::{ClusterSpec, Pool};
use super::dp::SlotDp;
use super::job::Job;
use super::placement::SlotOffer;
use super::price::PriceParameters;
use crate::error::{ArbiterError, ErrorCode, Result};
use serde::Serialize;

/// The most entries (slots left × (worker-slots + 1)) of one decision's dynamic program: about
/// 160 MB of table.
pub const MAX_DP_CELLS: u64 = 20_000_000;
/// The most steps (entries × the most workers that fit in a slot) of one decision's dynamic
/// program: a few seconds.
pub const MAX_DP_STEPS: u64 = 2_000_000_000;

/// Where a job's workers and parameter servers run in one slot: `(server, count)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlotPlan {
    pub slot: usize,
    pub workers: Vec<(usize, u32)>,
    pub parameter_servers: Vec<(usize, u32)>,
}

impl SlotPlan {
    pub fn worker_count(&self) -> u32 {
        self.workers.iter().map(|&(_, n)| n).sum()
    }
    pub fn parameter_server_count(&self) -> u32 {
        self.parameter_servers.iter().map(|&(_, n)| n).sum()
    }
}

/// A job's schedule: the slots it runs in (only those with workers) and the last of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schedule {
    pub completion_slot: usize,
    pub slots: Vec<SlotPlan>,
}

/// What OASiS decided for one job, and why: the best schedule's utility, its cost at the
/// prices the job met, and their difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    pub job: String,
    pub admitted: bool,
    /// `f_i(t_i − a_i) − cost`; `-∞` (null on the wire) when no schedule fits in the horizon.
    pub payoff: f64,
    pub utility: f64,
    /// `Σ_t Σ_h y_h(t) Σ_r α^r p_h^r(t) + Σ_t Σ_k s_k(t) Σ_r β^r p_k^r(t)`.
    pub cost: f64,
    pub schedule: Option<Schedule>,
}

/// The online scheduler: the cluster, the prices' parameters and what admitted jobs hold.
#[derive(Debug, Clone)]
pub struct Oasis {
    cluster: ClusterSpec,
    prices: PriceParameters,
    workers: Pool,
    parameter_servers: Pool,
}

impl Oasis {
    pub fn new(cluster: ClusterSpec, prices: PriceParameters) -> Result<Oasis> {
        cluster.validate()?;
        let workers = Pool::new(&cluster.worker_servers, cluster.slots);
        let parameter_servers = Pool::new(&cluster.ps_servers, cluster.slots);
        Ok(Oasis { cluster, prices, workers, parameter_servers })
    }

    pub fn cluster(&self) -> &ClusterSpec {
        &self.cluster
    }

    pub fn prices(&self) -> &PriceParameters {
        &self.prices
    }

    pub fn worker_pool(&self) -> &Pool {
        &self.workers
    }

    pub fn ps_pool(&self) -> &Pool {
        &self.parameter_servers
    }

    /// Validates a job against this cluster (`field`: its path in the input), its schedule's
    /// size included (`check_size`).
    pub fn job(&self, spec: super::job::JobSpec, field: &str) -> Result<Job> {
        let job = Job::new(spec, self.cluster.slot_seconds, self.cluster.slots, field)?;
        self.check_size(&job, field)?;
        Ok(job)
    }

    /// Refuses a job whose best schedule would take more than `MAX_DP_CELLS` table entries
    /// (slots left × worker-slots `K_i`) or `MAX_DP_STEPS` steps (that times the most workers
    /// that fit in a slot) to find: an `unsupported` error naming the job, where the dynamic
    /// program would otherwise exhaust memory or run for hours. The field is the larger side of
    /// the table: `cluster.slots` when the slots left outnumber the job's worker-slots, else the
    /// job's epochs.
    pub fn check_size(&self, job: &Job, field: &str) -> Result<()> {
        let slots = self.cluster.slots.saturating_sub(job.spec.arrival_slot) as u64;
        let cells = slots.saturating_mul(job.worker_slots + 1);
        let fit: u64 = (0..self.workers.servers())
            .map(|h| job.spec.worker.copies_in(&self.workers.capacity[h]) as u64)
            .fold(0, u64::saturating_add);
        let steps = cells.saturating_mul(fit.min(job.max_workers as u64) + 1);
        if cells > MAX_DP_CELLS || steps > MAX_DP_STEPS {
            // The larger of the table's two sides is named: the cluster's slots left from the
            // job's arrival, or the job's worker-slots (its epochs).
            let (named, larger) = if slots > job.worker_slots + 1 {
                ("cluster.slots".to_string(), "the cluster's slots")
            } else {
                (format!("{field}.epochs"), "the job's worker-slots")
            };
            return Err(ArbiterError::at(
                ErrorCode::Unsupported,
                named,
                format!(
                    "job {:?}: its schedule over {slots} slots and {} worker-slots is {cells} table entries and \
                     {steps} steps to find, more than the {MAX_DP_CELLS} and {MAX_DP_STEPS} a decision is computed \
                     for; {larger} are the most of it",
                    job.spec.id, job.worker_slots
                ),
            ));
        }
        Ok(())
    }

    /// The job's best schedule at the current prices and the decision it leads to; commits
    /// nothing (Algorithm 2).
    pub fn evaluate(&self, job: &Job) -> Decision {
        let arrival = job.spec.arrival_slot;
        let most_ps = job.parameter_servers_for(job.max_workers);
        let mut offers = Vec::with_capacity(self.cluster.slots.saturating_sub(arrival));
        let mut costs = Vec::with_capacity(offers.capacity());
        for slot in arrival..self.cluster.slots {
            let w = SlotOffer::new(&self.workers, &self.prices.workers, slot, &job.spec.worker, job.max_workers);
            let s = SlotOffer::new(
                &self.parameter_servers,
                &self.prices.parameter_servers,
                slot,
                &job.spec.parameter_server,
                most_ps,
            );
            // w workers need ⌈w b / B⌉ parameter servers; past the first w that does not fit, none does.
            let table: Vec<f64> =
                (0..=w.most()).map_while(|n| Some(w.cost(n)? + s.cost(job.parameter_servers_for(n))?)).collect();
            costs.push(table);
            offers.push((w, s));
        }
        let dp = SlotDp::solve(&costs, job.worker_slots);
        let mut best: Option<(usize, f64)> = None;
        for s in 0..costs.len() {
            let payoff = job.utility_ending_at(arrival + s) - dp.cost_by(s);
            if payoff.is_finite() && best.is_none_or(|(_, p)| payoff > p) {
                best = Some((s, payoff));
            }
        }
        let rejected = |payoff: f64| Decision {
            job: job.spec.id.clone(),
            admitted: false,
            payoff,
            utility: 0.0,
            cost: 0.0,
            schedule: None,
        };
        let Some((deadline, _)) = best else {
            return rejected(f64::NEG_INFINITY);
        };
        let Some(workers) = dp.workers_by(deadline) else {
            return rejected(f64::NEG_INFINITY);
        };
        let mut slots = Vec::new();
        let mut cost = 0.0;
        for (s, &w) in workers.iter().enumerate() {
            if w == 0 {
                continue;
            }
            let (wo, so) = &offers[s];
            let p = job.parameter_servers_for(w);
            cost += costs[s][w as usize];
            slots.push(SlotPlan {
                slot: arrival + s,
                workers: wo.place(w).unwrap_or_default(),
                parameter_servers: so.place(p).unwrap_or_default(),
            });
        }
        let completion_slot = slots.last().map_or(arrival, |p| p.slot);
        let utility = job.utility_ending_at(completion_slot);
        let payoff = utility - cost;
        Decision {
            job: job.spec.id.clone(),
            admitted: payoff > 0.0,
            payoff,
            utility,
            cost,
            schedule: Some(Schedule { completion_slot, slots }),
        }
    }

    /// Decides the job (Algorithm 1): evaluates it and, if admitted, commits its schedule,
    /// which raises the prices of what it takes. A job past `check_size` is an error.
    pub fn decide(&mut self, job: &Job) -> Result<Decision> {
        self.check_size(job, "job")?;
        let decision = self.evaluate(job);
        if decision.admitted {
            if let Some(schedule) = &decision.schedule {
                self.commit(job, schedule)?;
            }
        }
        Ok(decision)
    }

    /// Commits a schedule (all of it or, on a slot that does not fit, an error and nothing).
    pub fn commit(&mut self, job: &Job, schedule: &Schedule) -> Result<()> {
        let (mut workers, mut parameter_servers) = (self.workers.clone(), self.parameter_servers.clone());
        for plan in &schedule.slots {
            for &(h, n) in &plan.workers {
                workers.commit(plan.slot, h, &job.spec.worker, n)?;
            }
            for &(k, n) in &plan.parameter_servers {
                parameter_servers.commit(plan.slot, k, &job.spec.parameter_server, n)?;
            }
        }
        if schedule.slots.iter().any(|p| p.slot < job.spec.arrival_slot) {
            return Err(ArbiterError::new(
                ErrorCode::Infeasible,
                format!("job {:?}: a schedule cannot start before its arrival", job.spec.id),
            ));
        }
        self.workers = workers;
        self.parameter_servers = parameter_servers;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::oasis::job::Utility;
    use crate::scheduling::oasis::job::{worked_example_cluster, worked_example_job};
    use crate::scheduling::oasis::price::PriceFunction;
    use crate::scheduling::oasis::resources::ResourceVector;

    /// One worker server (2 GPUs, 2 Mbit/s: two workers), one PS server (2 cores, 4 Mbit/s:
    /// two parameter servers), two slots of 100 s. In both pools `L/2η = 1` and `2Uη/L = 4`,
    /// so a unit costs `4^{g/c}`: a worker (1 GPU, 1 Mbit/s) costs 2 on an empty server and 4
    /// on a half-full one; a parameter server (1 core, 2 Mbit/s) 3 and 6.
    fn hand_cluster() -> Oasis {
        let cluster = worked_example_cluster();
        let f = PriceFunction { lower: [2.0; 4], upper: [4.0; 4], eta: 1.0 };
        Oasis::new(cluster, PriceParameters::new(f, f).unwrap()).unwrap()
    }

    /// A (2 worker-slots, worth 20): at zero use 1 worker + 1 PS cost 5 a slot, 2 workers + 1
    /// PS cost 2·2 + 3 = 7; finishing in slot 0 costs 7, payoff 13 → admitted, 2 workers and 1
    /// PS in slot 0 (the worker server is then full in slot 0).
    /// B (2 worker-slots, sigmoid γ1 = 24, γ2 = ln 3, γ3 = 1: worth 12 ending in slot 0, 6 in
    /// slot 1): slot 0 has no room, so 2 workers + 1 PS in slot 1 for 7: payoff −1 → rejected
    /// (first, it would have paid 12 − 7 = 5).
    /// C (1 worker-slot, worth 8): slot 1 at zero use, 1 worker + 1 PS for 5, payoff 3 →
    /// admitted. Total utility 28.
    #[test]
    fn three_jobs_worked_by_hand() {
        let mut oasis = hand_cluster();
        let a = oasis.job(worked_example_job("A", 2, Utility::Constant { value: 20.0 }), "jobs[0]").unwrap();
        assert_eq!((a.chunks_per_worker_slot, a.worker_slots, a.max_workers), (5, 2, 2));
        let da = oasis.decide(&a).unwrap();
        assert!(da.admitted);
        assert!((da.cost - 7.0).abs() < 1e-12 && (da.payoff - 13.0).abs() < 1e-12);
        let sa = da.schedule.unwrap();
        assert_eq!(sa.completion_slot, 0);
        assert_eq!(sa.slots, vec![SlotPlan { slot: 0, workers: vec![(0, 2)], parameter_servers: vec![(0, 1)] }]);
        // After A: slot 0's worker server is full, a worker there would cost 2·4 = 8.
        assert_eq!(oasis.worker_pool().free(0, 0), [0, 0, 0, 0]);
        let f = oasis.prices().workers;
        assert!((f.unit_cost(&[1, 0, 0, 1], oasis.worker_pool().used(0, 0), &[2, 0, 0, 2]) - 8.0).abs() < 1e-12);

        let sigmoid = Utility::Sigmoid { priority: 24.0, decay: 3f64.ln(), target: 1.0 };
        let b = oasis.job(worked_example_job("B", 2, sigmoid), "jobs[1]").unwrap();
        assert!((b.utility_ending_at(0) - 12.0).abs() < 1e-12 && (b.utility_ending_at(1) - 6.0).abs() < 1e-12);
        let first = hand_cluster().evaluate(&b);
        assert!(first.admitted && (first.payoff - 5.0).abs() < 1e-12);
        let db = oasis.decide(&b).unwrap();
        assert!(!db.admitted);
        assert!((db.cost - 7.0).abs() < 1e-12 && (db.payoff + 1.0).abs() < 1e-12);
        assert_eq!(db.schedule.unwrap().completion_slot, 1);
        assert_eq!(oasis.worker_pool().used(1, 0), &[0, 0, 0, 0], "a rejected job takes nothing");

        let c = oasis.job(worked_example_job("C", 1, Utility::Constant { value: 8.0 }), "jobs[2]").unwrap();
        let dc = oasis.decide(&c).unwrap();
        assert!(dc.admitted && (dc.payoff - 3.0).abs() < 1e-12);
        let sc = dc.schedule.unwrap();
        assert_eq!(sc.slots, vec![SlotPlan { slot: 1, workers: vec![(0, 1)], parameter_servers: vec![(0, 1)] }]);
        assert_eq!(da.utility + dc.utility, 28.0);
    }

    /// A job whose dynamic program would be too large is refused before it runs, naming the job;
    /// one just under the bound is decided.
    #[test]
    fn a_schedule_too_large_to_compute_is_refused() {
        let mut cluster = worked_example_cluster();
        cluster.slots = 40;
        // A worker of 1 Mbit/s on a server of 4e9 Mbit/s: billions fit. 1,000 chunks, 5 a
        // worker-slot: K = E·1000/5 = 10⁶ worker-slots at 5,000 epochs, 40 slots of 10⁶ + 1
        // entries: 4·10⁷ > 2·10⁷.
        cluster.worker_servers[0] = ResourceVector::new(0, 0, 0, 4_000_000_000);
        cluster.ps_servers[0] = ResourceVector::new(0, 0, 0, 4_000_000_000);
        let f = PriceFunction { lower: [2.0; 4], upper: [4.0; 4], eta: 1.0 };
        let mut oasis = Oasis::new(cluster, PriceParameters::new(f, f).unwrap()).unwrap();
        let mut spec = worked_example_job("huge", 5_000, Utility::Constant { value: 1.0 });
        spec.worker = ResourceVector::new(0, 0, 0, 1);
        spec.chunks = 1_000;
        let err = oasis.job(spec.clone(), "jobs[0]").unwrap_err();
        assert_eq!((err.code, err.field.as_deref()), (ErrorCode::Unsupported, Some("jobs[0].epochs")));
        assert!(err.message.contains("\"huge\""), "{}", err.message);
        let unchecked = Job::new(spec, 100.0, 40, "jobs[0]").unwrap();
        assert_eq!(oasis.decide(&unchecked).unwrap_err().code, ErrorCode::Unsupported);
        let mut small = worked_example_job("small", 2, Utility::Constant { value: 20.0 });
        (small.worker, small.parameter_server) = (ResourceVector::new(0, 0, 0, 1), ResourceVector::new(0, 0, 0, 2));
        let small = oasis.job(small, "jobs[1]").unwrap();
        assert!(oasis.decide(&small).unwrap().admitted);
    }

    /// Ten million slots make even a job of two worker-slots too large to decide: the slots are
    /// named, not the job's epochs.
    #[test]
    fn too_many_slots_are_named_as_the_slots() {
        let mut cluster = worked_example_cluster();
        cluster.slots = 10_000_000;
        let f = PriceFunction { lower: [2.0; 4], upper: [4.0; 4], eta: 1.0 };
        let mut oasis = Oasis::new(cluster, PriceParameters::new(f, f).unwrap()).unwrap();
        let spec = worked_example_job("A", 2, Utility::Constant { value: 20.0 });
        let err = oasis.job(spec.clone(), "jobs[0]").unwrap_err();
        assert_eq!((err.code, err.field.as_deref()), (ErrorCode::Unsupported, Some("cluster.slots")));
        let unchecked = Job::new(spec, 100.0, 10_000_000, "jobs[0]").unwrap();
        assert_eq!(oasis.decide(&unchecked).unwrap_err().field.as_deref(), Some("cluster.slots"));
    }

    #[test]
    fn a_job_that_cannot_fit_is_rejected_without_a_schedule() {
        let mut oasis = hand_cluster();
        // 30 worker-slots with at most 5 workers a slot, 2 of which fit: 4 in two slots.
        let big = oasis.job(worked_example_job("big", 30, Utility::Constant { value: 1e9 }), "jobs[0]").unwrap();
        let d = oasis.decide(&big).unwrap();
        assert!(!d.admitted && d.schedule.is_none() && d.payoff == f64::NEG_INFINITY);
    }
}
