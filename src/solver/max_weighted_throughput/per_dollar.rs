//! `min_cost`'s two LPs with floors, by the same decomposition, on mostly distinct rows:
//! - Dinkelbach's step `max N(X) − λ·D(X)` is `max Σ_m thr_m` with every GPU of type w charged
//!   `λ·cost_w` per unit of time before any capacity price (`Instance::charge`);
//! - the most throughput at the optimal ratio moves only the jobs whose best response at the last
//!   step's certified prices is not unique. Every optimal allocation of that step gives each
//!   other job its one best response (complementary slackness), and the allocations at the ratio
//!   are those optimal ones, so a recovery LP over the tied jobs, with the ratio row and every
//!   other job a constant, is the whole second stage.
//!
//! See `formulations/min_cost.md`.

use super::best_response::JobView;
use super::recovery::{self, Keep};
use super::{solve, wanted, Decomposed, Instance, Starts};
use crate::error::Result;
use crate::lp::Backend;
use crate::max_min_ratio::{fatal, fit_capacity, DecompositionOptions};
use crate::problem::{Matrix, Problem};

/// A job whose best response leads the runner-up by at most this share of its scale counts as
/// tied in the second stage (the certificate's own tolerance is 10⁻⁹; a wider net only makes its
/// LP larger).
const TIED: f64 = 1e-7;

/// `min_cost`'s instance as the decomposition reads it: every job worth 1 per step/s.
pub(crate) struct PerDollar<'a> {
    throughput: &'a Matrix,
    scale_factor: Vec<u32>,
    capacity: Vec<f64>,
    usable: Vec<bool>,
    value: Vec<f64>,
    floor: &'a [f64],
    /// Dollars per hour of one GPU of each type.
    cost: Vec<f64>,
}

impl<'a> PerDollar<'a> {
    /// `None` where the request's method and its rows do not call for the decomposition (as
    /// `solve_problem` decides) or a type has no price.
    pub(crate) fn new(problem: &'a Problem, floor: &'a [f64]) -> Option<PerDollar<'a>> {
        let scale_factor = crate::policies::scale_factors(problem);
        if !wanted(problem, &scale_factor) {
            return None;
        }
        let cost: Option<Vec<f64>> = problem.worker_types.iter().map(|w| w.cost_per_hour).collect();
        let capacity = crate::policies::capacities(problem);
        Some(PerDollar {
            throughput: &problem.throughput,
            usable: capacity.iter().map(|&g| g > 0.0).collect(),
            capacity,
            value: vec![1.0; problem.num_jobs()],
            scale_factor,
            floor,
            cost: cost?,
        })
    }

    fn instance<'b>(&'b self, charge: &'b [f64]) -> Instance<'b> {
        Instance {
            throughput: self.throughput,
            scale_factor: &self.scale_factor,
            value: &self.value,
            floor: self.floor,
            usable: self.usable.clone(),
            charge,
        }
    }

    fn charge(&self, lambda: f64) -> Vec<f64> {
        self.cost.iter().map(|c| lambda * c).collect()
    }

    /// How far `allocation`'s `N − λ·D` lies below the Lagrangian bound at `prices`, `L(p) = G·p +
    /// Σ_m h_m(p)`, each job's best response (with the charge `λ·cost`) enumerated exactly: every
    /// allocation X that meets the floors has `N(X) − λ·D(X) ≤ L(p)`. `None` when a floor is out
    /// of every type's reach.
    pub(crate) fn gap(&self, lambda: f64, prices: &[f64], allocation: &Matrix) -> Option<f64> {
        let charge = self.charge(lambda);
        let instance = self.instance(&charge);
        let mut bound: f64 =
            self.capacity.iter().zip(prices).zip(&self.usable).filter(|(_, &on)| on).map(|((g, p), _)| g * p).sum();
        let mut value = 0.0;
        for m in 0..self.throughput.rows() {
            let job = instance.job(m);
            bound += job.best_worth(&self.usable, prices)?;
            value += allocation.row(m).iter().enumerate().map(|(w, &x)| job.gain(w) * x).sum::<f64>();
        }
        Some(bound - value)
    }

    /// The least `D` an allocation meeting the floors pays: each floor met the cheapest way.
    pub(crate) fn least_cost(&self) -> f64 {
        // Worth nothing per step and charged its dollars, a job's best response is its cheapest.
        let charged = self.instance(&self.cost);
        let zero = vec![0.0; self.capacity.len()];
        (0..self.throughput.rows())
            .filter(|&m| self.floor[m] > 0.0)
            .filter_map(|m| {
                JobView { value: 0.0, ..charged.job(m) }.best_worth(&self.usable, &zero).map(|worth| -worth)
            })
            .sum()
    }

    /// Whether every job keeps its floor in `allocation`, within `share` of it.
    pub(crate) fn floors_kept(&self, allocation: &Matrix, share: f64) -> bool {
        (0..self.throughput.rows())
            .all(|m| crate::problem::dot(self.throughput.row(m), allocation.row(m)) >= self.floor[m] * (1.0 - share))
    }

    /// Dinkelbach's step: `max N(X) − λ·D(X)` over the floors, certified. `previous`: the last
    /// step's λ and capacity prices, which start this one's search less what the rise of λ now
    /// charges. `Ok(Err(why))` when it could not certify an optimum.
    pub(crate) fn step(
        &self,
        lambda: f64,
        previous: Option<(f64, &[f64])>,
        backend: Backend,
    ) -> Result<std::result::Result<Decomposed, String>> {
        let charge = self.charge(lambda);
        let warm: Option<Vec<f64>> = previous
            .map(|(at, prices)| prices.iter().zip(&self.cost).map(|(p, c)| (p - (lambda - at) * c).max(0.0)).collect());
        let starts = Starts { ray: None, warm: warm.as_deref() };
        solve(&self.instance(&charge), &self.capacity, backend, &DecompositionOptions::default(), starts)
    }

    /// Among the optimal allocations of the step at `lambda` (`last`, whose prices certify it),
    /// the one with the most throughput whose ratio is at least `keep_ratio`: only the tied jobs
    /// move, in one recovery LP with the ratio row. `Ok(Err(why))` when that LP fails.
    pub(crate) fn most_throughput(
        &self,
        lambda: f64,
        keep_ratio: f64,
        last: &Decomposed,
        backend: Backend,
    ) -> Result<std::result::Result<Matrix, String>> {
        let charge = self.charge(lambda);
        let at_step = self.instance(&charge);
        let num_types = self.capacity.len();
        let mut tied: Vec<u32> = Vec::new();
        let mut fixed_usage = vec![0.0; num_types];
        let (mut fixed_n, mut fixed_d) = (0.0, 0.0);
        for m in 0..self.throughput.rows() {
            let job = at_step.job(m);
            let row = last.allocation.row(m);
            let unique = job.best_response(&self.usable, &last.prices).filter(|&(vertex, _, margin)| {
                let mut time = vec![0.0; num_types];
                vertex.used().for_each(|(w, x)| time[w] = x);
                let held = row.iter().zip(&time).all(|(a, b)| (a - b).abs() <= 1e-12);
                held && margin > TIED * job.scale(&self.usable, &last.prices)
            });
            if unique.is_some() {
                for (w, &x) in row.iter().enumerate() {
                    fixed_usage[w] += job.sf * x;
                    fixed_n += self.throughput.get(m, w) * x;
                    fixed_d += self.cost[w] * job.sf * x;
                }
            } else {
                tied.push(m as u32);
            }
        }
        if tied.is_empty() {
            return Ok(Ok(last.allocation.clone()));
        }
        let zero = vec![0.0; num_types];
        let keep_charge = self.charge(keep_ratio);
        let keep = Keep { charge: &keep_charge, at_least: -(fixed_n - keep_ratio * fixed_d) };
        let plain = self.instance(&zero);
        let rec = match recovery::solve(&plain, &tied, &self.capacity, &fixed_usage, None, None, backend, Some(keep)) {
            Ok(rec) => rec,
            Err(e) => return Ok(Err(fatal(e)?)),
        };
        let mut allocation = last.allocation.clone();
        for (&m, time) in tied.iter().zip(&rec.time) {
            (0..num_types).for_each(|w| allocation.set(m as usize, w, 0.0));
            time.iter().for_each(|&(w, x)| allocation.set(m as usize, w, x.min(1.0)));
        }
        Ok(fit_capacity(&mut allocation, &self.scale_factor, &self.capacity).map(|()| allocation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One K80 at 1 $/h; a makes 2 steps/s and has no floor, b makes 1 and must keep 0.5. At
    /// λ = 1 a unit of time is worth 2 − 1 = 1 to a and 0 to b. The best `N − λ·D` is b at its
    /// floor (half the K80) and a on the rest: 0.5. At the K80 price 1 every job's best response
    /// gives `L = 1 + 0 − 0.5 = 0.5`, no gap; at 0.5, `L = 0.5 + 0.5 − 0.25 = 0.75`, a gap of 0.25.
    #[test]
    fn the_gap_is_the_lagrangian_bound_above_the_allocations_value() {
        let problem = Problem::from_json(
            r#"{"policy": "min_cost_slo", "method": "decomposition",
                "cluster": {"worker_types": {"k80": {"count": 1, "cost_per_hour": 1.0}}},
                "jobs": [{"id": "a", "throughput": {"k80": 2.0}, "steps_remaining": 1},
                         {"id": "b", "throughput": {"k80": 1.0}, "steps_remaining": 1, "slo_seconds": 2}]}"#,
        )
        .unwrap();
        let floor = [0.0, 0.5];
        let per_dollar = PerDollar::new(&problem, &floor).expect("method decomposition");
        let allocation = Matrix::from_rows(&[[0.5], [0.5]]);
        assert!(per_dollar.gap(1.0, &[1.0], &allocation).unwrap().abs() < 1e-15);
        assert!((per_dollar.gap(1.0, &[0.5], &allocation).unwrap() - 0.25).abs() < 1e-15);
        assert_eq!(per_dollar.least_cost(), 0.5);
        assert!(per_dollar.floors_kept(&allocation, 0.0));
        assert!(!per_dollar.floors_kept(&Matrix::from_rows(&[[0.6], [0.4]]), 1e-9));
        // The decomposition finds that optimum at λ = 1.
        let step = per_dollar.step(1.0, None, Backend::highs()).unwrap().unwrap();
        let steps: f64 = (0..2).map(|m| step.allocation.get(m, 0) * problem.throughput.get(m, 0)).sum();
        assert!((steps - 1.5).abs() < 1e-9, "{:?}", step.allocation);
    }
}
