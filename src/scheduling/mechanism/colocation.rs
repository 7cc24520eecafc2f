//! Space sharing (Gavel §5): pairs of active jobs of equal scale factor that may run together on
//! the same `scale_factor` GPUs of one worker type, each at its paired throughput. A pair is a job
//! combination like a job alone: its allocation `Y[k][·]` is tracked, prioritized and granted as a
//! job's `X[m][·]` is. This module holds the pairs' events, their accessors and the throughputs
//! a placement runs at.

use super::placement::{Placement, Tenants};
use super::priority;
use super::session::{invalid, unknown_job, Session};
use super::share::Share;
use super::JobId;
use crate::error::{ArbiterError, ErrorCode, Result};

/// One colocation: two active jobs of equal scale factor that may share GPUs.
#[derive(Debug, Clone)]
pub(super) struct PairState {
    /// The tenants, in the order the colocation was added.
    pub(super) jobs: [JobId; 2],
    /// `throughput[w] = [steps/s of jobs[0], steps/s of jobs[1]]` while paired on type `w`
    /// (smoothed by `report_colocated_progress`); 0 where they cannot share.
    pub(super) throughput: Vec<[f64; 2]>,
    /// Per type, the slower tenant's paired throughput: positive exactly where the pair can share.
    pub(super) slowest: Vec<f64>,
    /// `Y[k][·]` and the time the pair ran together.
    pub(super) share: Share,
    pub(super) added_at: f64,
}

impl PairState {
    /// Whether the pair can share type `w` at all: both tenants progress there.
    pub(super) fn runs_on(&self, w: usize) -> bool {
        self.slowest[w] > 0.0
    }

    fn set_throughput(&mut self, throughput: Vec<[f64; 2]>) {
        self.slowest = throughput.iter().map(|t| t[0].min(t[1])).collect();
        self.throughput = throughput;
    }

    /// Where tenant `id` sits in `jobs`.
    fn tenant(&self, id: &str) -> Option<usize> {
        self.jobs.iter().position(|j| &**j == id)
    }
}

fn no_colocation(a: &str, b: &str) -> ArbiterError {
    ArbiterError::at(
        ErrorCode::InvalidColocation,
        "colocation.jobs",
        format!("the session has no colocation of jobs {a:?} and {b:?}"),
    )
}

impl Session {
    /// Jobs `a` and `b` may share GPUs: `throughput[w] = [steps/s of a, steps/s of b]` while
    /// paired on worker type `w`, in the cluster's type order (0: they cannot share that type).
    /// Both must be active, different, and of equal scale factor. The allocation becomes stale:
    /// the next solve gives the policy this colocation, with space sharing on. Adding a pair
    /// again (in either order) replaces its paired throughputs. A job's colocations leave with it.
    pub fn add_colocation(&mut self, a: &str, b: &str, throughput: &[[f64; 2]]) -> Result<()> {
        for (i, id) in [a, b].into_iter().enumerate() {
            if !self.index.contains_key(id) {
                let mut e = unknown_job(id);
                e.field = Some(format!("colocation.jobs[{i}]"));
                return Err(e);
            }
        }
        if a == b {
            return Err(ArbiterError::at(
                ErrorCode::InvalidColocation,
                "colocation.jobs",
                format!("a colocation needs two different jobs, got {a:?} twice"),
            ));
        }
        let (sa, sb) = (self.slot(a)?.job.scale_factor, self.slot(b)?.job.scale_factor);
        if sa != sb {
            return Err(ArbiterError::at(
                ErrorCode::InvalidColocation,
                "colocation.jobs",
                format!(
                    "jobs {a:?} and {b:?} have scale factors {sa} and {sb}; only equal scale factors can share GPUs"
                ),
            ));
        }
        let types = self.cluster.num_types();
        if throughput.len() != types {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "colocation.throughput",
                format!("{} paired throughputs given, the cluster has {types} worker types", throughput.len()),
            ));
        }
        for (w, pair) in throughput.iter().enumerate() {
            for (i, &t) in pair.iter().enumerate() {
                if let Some(why) = crate::problem::refusal(t, 0.0, "a colocated throughput") {
                    return Err(invalid(format!("colocation.throughput.{}[{i}]", self.cluster.type_name(w)), why));
                }
            }
        }
        match self.find_pair(a, b) {
            Some((k, swapped)) => {
                let given = throughput.iter().map(|&[x, y]| if swapped { [y, x] } else { [x, y] }).collect();
                self.pairs[k].set_throughput(given);
            }
            None => {
                let jobs: [JobId; 2] = [self.slot(a)?.id.clone(), self.slot(b)?.id.clone()];
                let k = self.pairs.len();
                for id in &jobs {
                    let m = self.index[id];
                    self.jobs[m].pairs.push(k as u32);
                }
                self.pair_index.insert(jobs.clone(), k);
                let mut pair = PairState {
                    jobs,
                    throughput: Vec::new(),
                    slowest: Vec::new(),
                    share: Share::new(types),
                    added_at: self.time,
                };
                pair.set_throughput(throughput.to_vec());
                self.pairs.push(pair);
            }
        }
        self.stale = true;
        Ok(())
    }

    /// Withdraws the colocation of `a` and `b` (either order): they no longer share GPUs once the
    /// allocation is next solved, which this makes stale.
    pub fn remove_colocation(&mut self, a: &str, b: &str) -> Result<()> {
        self.slot(a)?;
        self.slot(b)?;
        let (k, _) = self.find_pair(a, b).ok_or_else(|| no_colocation(a, b))?;
        self.remove_pairs(|i| i == k);
        self.stale = true;
        Ok(())
    }

    /// The pairs jobs `a` and `b` ran as while sharing `worker_type`: `steps` of each, measured at
    /// `throughput` steps/s each. Steps remaining go down for both, and the measurement is folded
    /// into the pair's throughputs as an exponential moving average (a job's throughput alone is
    /// left as it is). A move beyond `Config::resolve_threshold` makes the allocation stale.
    pub fn report_colocated_progress(
        &mut self,
        a: &str,
        b: &str,
        worker_type: usize,
        steps: [f64; 2],
        throughput: [f64; 2],
    ) -> Result<()> {
        let types = self.cluster.num_types();
        if worker_type >= types {
            return Err(ArbiterError::at(
                ErrorCode::UnknownWorkerType,
                "worker_type",
                format!("worker type index {worker_type} is not in the cluster's {types} types"),
            ));
        }
        for (f, values) in [("steps", steps), ("throughput", throughput)] {
            for (i, v) in values.into_iter().enumerate() {
                if let Some(why) = crate::problem::refusal(v, 0.0, f) {
                    return Err(invalid(format!("{f}[{i}]"), why));
                }
            }
        }
        self.slot(a)?;
        self.slot(b)?;
        let (k, swapped) = self.find_pair(a, b).ok_or_else(|| no_colocation(a, b))?;
        let order = |v: [f64; 2]| if swapped { [v[1], v[0]] } else { v };
        let (steps, measured) = (order(steps), order(throughput));
        let (smoothing, threshold) = (self.config.throughput_smoothing, self.config.resolve_threshold);
        let mut moved = false;
        let pair = &mut self.pairs[k];
        let mut throughput = pair.throughput.clone();
        for i in 0..2 {
            let old = throughput[worker_type][i];
            let new = if old > 0.0 { smoothing * measured[i] + (1.0 - smoothing) * old } else { measured[i] };
            throughput[worker_type][i] = new;
            moved |= (old > 0.0) != (new > 0.0) || (new - old).abs() > threshold * old;
        }
        pair.set_throughput(throughput);
        let tenants = pair.jobs.clone();
        for (id, s) in tenants.iter().zip(steps) {
            let i = self.index[id];
            if let Some(r) = self.jobs[i].job.steps_remaining.as_mut() {
                *r = (*r - s).max(0.0);
            }
        }
        if moved {
            self.stale = true;
        }
        Ok(())
    }

    pub fn num_colocations(&self) -> usize {
        self.pairs.len()
    }

    /// The colocations, each as its two jobs in the order it was added: the order of `Y`'s rows
    /// in `set_colocated_allocation` and `solve_colocated_allocation`.
    pub fn colocations(&self) -> impl Iterator<Item = &[JobId; 2]> {
        self.pairs.iter().map(|p| &p.jobs)
    }

    /// `(position, swapped)` of the colocation of `a` and `b`: `swapped` when it was added as
    /// `(b, a)`.
    pub(super) fn find_pair(&self, a: &str, b: &str) -> Option<(usize, bool)> {
        let key = |x: &str, y: &str| -> Option<[JobId; 2]> {
            let id = |s: &str| self.index.get_key_value(s).map(|(k, _)| k.clone());
            Some([id(x)?, id(y)?])
        };
        let forward = key(a, b)?;
        if let Some(&k) = self.pair_index.get(&forward) {
            return Some((k, false));
        }
        let [x, y] = forward;
        self.pair_index.get(&[y, x]).map(|&k| (k, true))
    }

    fn pair(&self, a: &str, b: &str) -> Result<(&PairState, bool)> {
        self.slot(a)?;
        self.slot(b)?;
        let (k, swapped) = self.find_pair(a, b).ok_or_else(|| no_colocation(a, b))?;
        Ok((&self.pairs[k], swapped))
    }

    /// `Y[k][·]`: the fraction of time `a` and `b` run together on each worker type.
    pub fn colocated_allocation(&self, a: &str, b: &str) -> Result<&[f64]> {
        Ok(&self.pair(a, b)?.0.share.allocation)
    }

    /// Seconds `a` and `b` ran together on each worker type since the last reset.
    pub fn colocated_received(&self, a: &str, b: &str) -> Result<&[f64]> {
        Ok(&self.pair(a, b)?.0.share.received)
    }

    /// Seconds `a` and `b` ran together on each worker type since the colocation was added.
    pub fn colocated_total_received(&self, a: &str, b: &str) -> Result<&[f64]> {
        Ok(&self.pair(a, b)?.0.share.total_received)
    }

    /// Fraction of session time since the colocation was added that `a` and `b` ran together on
    /// each type.
    pub fn colocated_received_fraction(&self, a: &str, b: &str) -> Result<Vec<f64>> {
        let pair = self.pair(a, b)?.0;
        Ok(pair.share.received_fraction(self.time - pair.added_at))
    }

    /// Seconds the pair is owed together on each type: carried + `Y · elapsed` − received.
    pub fn colocated_deficit(&self, a: &str, b: &str) -> Result<Vec<f64>> {
        Ok(self.pair(a, b)?.0.share.deficit(self.elapsed))
    }

    /// The pair's priority on each type, `deficit + Y·R`, as for a job alone.
    pub fn colocated_priorities(&self, a: &str, b: &str) -> Result<Vec<f64>> {
        Ok(self.pair(a, b)?.0.share.priorities(self.elapsed, self.config.round_seconds))
    }

    /// `[steps/s of a, steps/s of b]` while paired, per worker type, in the order asked.
    pub fn colocated_throughput(&self, a: &str, b: &str) -> Result<Vec<[f64; 2]>> {
        let (pair, swapped) = self.pair(a, b)?;
        Ok(pair.throughput.iter().map(|&[x, y]| if swapped { [y, x] } else { [x, y] }).collect())
    }

    /// Worker types where the pair has allocation but cannot be placed (its scale factor exceeds
    /// the healthy GPUs there, or a tenant cannot progress there): rounds never grant that share.
    pub fn colocated_unplaceable_types(&self, a: &str, b: &str) -> Result<Vec<usize>> {
        let pair = self.pair(a, b)?.0;
        Ok((0..self.cluster.num_types())
            .filter(|&w| pair.share.allocation[w] > 0.0 && !self.pair_placeable(pair, w))
            .collect())
    }

    /// The scale factor of a pair: that of each tenant.
    pub(super) fn pair_scale_factor(&self, pair: &PairState) -> u32 {
        self.jobs[self.index[&pair.jobs[0]]].job.scale_factor
    }

    pub(super) fn pair_placeable(&self, pair: &PairState, w: usize) -> bool {
        priority::placeable(self.pair_scale_factor(pair), pair.slowest[w], self.cluster.healthy_count(w))
    }

    /// The steps/s each tenant of a placement runs at: a job alone at its throughput on the
    /// placement's type, a pair at their paired throughputs. A job no longer active, or a pair no
    /// longer colocated, runs at 0.
    pub fn placement_throughput(&self, p: &Placement) -> Vec<(JobId, f64)> {
        let w = p.worker_type;
        match &p.jobs {
            Tenants::Single(id) => {
                let t = self.slot(id).ok().and_then(|j| j.throughput.get(w).copied()).unwrap_or(0.0);
                vec![(id.clone(), t)]
            }
            Tenants::Pair([a, b]) => {
                let t = self
                    .pair(a, b)
                    .ok()
                    .and_then(|(pair, swapped)| {
                        let [x, y] = *pair.throughput.get(w)?;
                        Some(if swapped { [y, x] } else { [x, y] })
                    })
                    .unwrap_or([0.0; 2]);
                vec![(a.clone(), t[0]), (b.clone(), t[1])]
            }
        }
    }

    /// The job's effective throughput under the current allocation, in steps/s:
    /// `Σ_w T[m][w]·X[m][w] + Σ_{k∋m} Σ_w T_k[m][w]·Y[k][w]`, with the measured throughputs
    /// alone (`T`) and paired (`T_k`). What ideal mode grants per second.
    pub fn effective_throughput(&self, id: &str) -> Result<f64> {
        let j = self.slot(id)?;
        let alone: f64 = j.throughput.iter().zip(&j.share.allocation).map(|(t, x)| t * x).sum();
        let paired: f64 = j
            .pairs
            .iter()
            .map(|&k| &self.pairs[k as usize])
            .filter_map(|p| p.tenant(id).map(|i| (p, i)))
            .map(|(p, i)| p.throughput.iter().zip(&p.share.allocation).map(|(t, y)| t[i] * y).sum::<f64>())
            .sum();
        Ok(alone + paired)
    }

    /// Drops every colocation of a job that left.
    pub(super) fn drop_colocations_of(&mut self, id: &JobId) {
        let gone: Vec<bool> = self.pairs.iter().map(|p| p.tenant(id).is_some()).collect();
        if gone.iter().any(|&g| g) {
            self.remove_pairs(|k| gone[k]);
        }
    }

    fn remove_pairs(&mut self, remove: impl Fn(usize) -> bool) {
        let mut k = 0;
        self.pairs.retain(|_| {
            let keep = !remove(k);
            k += 1;
            keep
        });
        self.pair_index = self.pairs.iter().enumerate().map(|(k, p)| (p.jobs.clone(), k)).collect();
        for j in &mut self.jobs {
            j.pairs.clear();
        }
        for (k, p) in self.pairs.iter().enumerate() {
            for id in &p.jobs {
                if let Some(&m) = self.index.get(id) {
                    self.jobs[m].pairs.push(k as u32);
                }
            }
        }
    }
}
