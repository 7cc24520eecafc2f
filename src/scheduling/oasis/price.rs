//! OASiS's resource prices: the exponential price function of a resource's use, and its
//! parameters `U`, `L`, `η` estimated from a workload; with the competitive ratio they give.
//! Not for placing anything (`placement.rs`).

use super::cluster::ClusterSpec;
use super::job::Job;
use super::resources::{ResourceVector, RESOURCE_TYPES};
use crate::error::{ArbiterError, ErrorCode, Result};
use serde::{Deserialize, Serialize};

/// One pool's price function `p^r(g) = (L^r / 2η) · (2 U^r η / L^r)^{g / c}` for each resource
/// `r`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = OasisPriceFunction)]
#[serde(deny_unknown_fields)]
pub struct PriceFunction {
    /// `L^r`: the least utility per unit of resource `r` and slot among the jobs.
    pub lower: [f64; RESOURCE_TYPES],
    /// `U^r`: the most utility per unit of resource `r` among the jobs.
    pub upper: [f64; RESOURCE_TYPES],
    /// `η ≥ 1`: keeps the prices at zero use, summed over the cluster, small beside any job.
    pub eta: f64,
}

impl PriceFunction {
    /// The unit price of resource `r` on a server of capacity `capacity` when `used` of it is
    /// taken: `L^r/2η` at 0, `U^r` at full use.
    pub fn price(&self, r: usize, used: u32, capacity: u32) -> f64 {
        let start = self.lower[r] / (2.0 * self.eta);
        if capacity == 0 {
            return self.upper[r].max(start);
        }
        let base = 2.0 * self.upper[r] * self.eta / self.lower[r];
        start * base.powf(used as f64 / capacity as f64)
    }

    /// `Σ_r demand^r · p^r(g^r)`: what one more worker (or parameter server) costs on a server.
    pub fn unit_cost(
        &self,
        demand: &[u32; RESOURCE_TYPES],
        used: &[u32; RESOURCE_TYPES],
        capacity: &[u32; RESOURCE_TYPES],
    ) -> f64 {
        (0..RESOURCE_TYPES)
            .filter(|&r| demand[r] > 0)
            .map(|r| demand[r] as f64 * self.price(r, used[r], capacity[r]))
            .sum()
    }

    /// Whether resource `r`'s price falls with use (`2U^rη < L^r`): its base is below 1.
    pub fn falls_with_use(&self, r: usize) -> bool {
        2.0 * self.upper[r] * self.eta < self.lower[r]
    }

    /// `α = max(1, max_r ln(2 U^r η / L^r))` over the resources some job demands (`demanded[r]`).
    fn alpha(&self, demanded: &[bool; RESOURCE_TYPES]) -> f64 {
        (0..RESOURCE_TYPES)
            .filter(|&r| demanded[r])
            .map(|r| (2.0 * self.upper[r] * self.eta / self.lower[r]).ln())
            .fold(1.0, f64::max)
    }
}

/// Which utility of each job sets the lowest unit utility `L`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LowestUtility {
    /// `f_i(T − a_i)`, the least it may earn (the paper's definition).
    AtHorizon,
    /// `f_i(d̂_i)`, the most it may earn: a job whose sigmoid has all but vanished by the end of
    /// the horizon does not drive `L`, and with it every price at zero use, to nearly nothing.
    AtShortest,
}

/// The price functions of both pools, and which resources any job demands in each.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PriceParameters {
    pub workers: PriceFunction,
    pub parameter_servers: PriceFunction,
    demanded_by_workers: [bool; RESOURCE_TYPES],
    demanded_by_ps: [bool; RESOURCE_TYPES],
}

impl LowestUtility {
    /// `horizon` or `shortest`.
    pub fn from_name(name: &str) -> Option<LowestUtility> {
        match name {
            "horizon" => Some(LowestUtility::AtHorizon),
            "shortest" => Some(LowestUtility::AtShortest),
            _ => None,
        }
    }
}

impl PriceParameters {
    /// Price functions given directly (every resource counted as demanded in the bound); a
    /// refusal names the number at fault (`prices.workers.lower[1]`).
    pub fn new(workers: PriceFunction, parameter_servers: PriceFunction) -> Result<PriceParameters> {
        for (name, f) in [("workers", &workers), ("parameter_servers", &parameter_servers)] {
            let refuse = |field: String, why: String| Err(ArbiterError::at(ErrorCode::InvalidNumber, field, why));
            if let Some(why) = crate::problem::refusal(f.eta, 1.0, "η") {
                return refuse(format!("prices.{name}.eta"), why);
            }
            for r in 0..RESOURCE_TYPES {
                let (l, u) = (f.lower[r], f.upper[r]);
                if let Some(why) = crate::problem::positive_refusal(l, "L") {
                    return refuse(format!("prices.{name}.lower[{r}]"), why);
                }
                let upper = format!("prices.{name}.upper[{r}]");
                if let Some(why) = crate::problem::positive_refusal(u, "U") {
                    return refuse(upper, why);
                }
                if f.falls_with_use(r) {
                    let why = format!("2Uη = {:e} is below L = {l:e}: prices would fall with use", 2.0 * u * f.eta);
                    return refuse(upper, why);
                }
            }
        }
        let all = [true; RESOURCE_TYPES];
        Ok(PriceParameters { workers, parameter_servers, demanded_by_workers: all, demanded_by_ps: all })
    }

    /// The first (pool, resource) whose price would fall with use (`2U^rη < L^r`), if any: given
    /// prices are refused so (`new`); scaled ones (`scaled`) can come to it.
    pub fn falls_with_use(&self) -> Option<(&'static str, usize)> {
        [("workers", &self.workers), ("parameter_servers", &self.parameter_servers)]
            .into_iter()
            .find_map(|(name, f)| (0..RESOURCE_TYPES).find(|&r| f.falls_with_use(r)).map(|r| (name, r)))
    }

    /// These prices with the resources jobs demand in each pool (only those count in the
    /// competitive bound), as `estimate_with` found them and `arbiter oasis` prints them.
    pub fn with_demanded(self, by_workers: [bool; RESOURCE_TYPES], by_ps: [bool; RESOURCE_TYPES]) -> PriceParameters {
        PriceParameters { demanded_by_workers: by_workers, demanded_by_ps: by_ps, ..self }
    }

    /// Which resources jobs demand in the worker pool and in the parameter-server pool.
    pub fn demanded(&self) -> ([bool; RESOURCE_TYPES], [bool; RESOURCE_TYPES]) {
        (self.demanded_by_workers, self.demanded_by_ps)
    }

    /// `U`, `L` and `η` of a workload on a cluster (`formulations/oasis.md`), with `L` from
    /// each job's utility at the end of the horizon, as the paper defines it.
    pub fn estimate(jobs: &[Job], cluster: &ClusterSpec) -> Result<PriceParameters> {
        PriceParameters::estimate_with(jobs, cluster, LowestUtility::AtHorizon)
    }

    /// `U`, `L` and `η` of a workload on a cluster:
    ///
    /// - `U^r = max_i f_i(d̂_i) / α_i^r` (`β_i^r` for parameter servers), `d̂_i` the job's
    ///   shortest duration, over the jobs that demand `r`;
    /// - `L^r = min_i f_i(·) / (R_i K_i α_i^r)` for workers and
    ///   `min_i f_i(·) / (R_i ⌈K_i b_i/B_i⌉ β_i^r)` for parameter servers (the fewest PS-slots),
    ///   over the jobs that demand `r`, `R_i` the number of resources the job demands there and
    ///   `f_i(·)` its utility at the horizon's end or at its shortest duration (`lowest`);
    /// - `η = max(1, 2 T Σ_h Σ_r c_h^r L^r / f_min)`, `f_min` the least of those utilities: the
    ///   prices at zero use, over the whole pool and horizon, add up to at most `f_min / 4`.
    pub fn estimate_with(jobs: &[Job], cluster: &ClusterSpec, lowest: LowestUtility) -> Result<PriceParameters> {
        if jobs.is_empty() {
            return Err(ArbiterError::at(
                ErrorCode::MissingField,
                "jobs",
                "prices are estimated from at least one job",
            ));
        }
        let best = |job: &Job| job.spec.utility.at(job.shortest_duration());
        let low = |job: &Job| match lowest {
            LowestUtility::AtHorizon => job.spec.utility.at(cluster.slots.saturating_sub(job.spec.arrival_slot).max(1)),
            LowestUtility::AtShortest => best(job),
        };
        let f_min = jobs.iter().map(low).fold(f64::INFINITY, f64::min);
        if !f_min.is_finite() || f_min <= 0.0 {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                "jobs",
                "every job needs a positive utility where the lowest price is set",
            ));
        }
        let pool = |demand: fn(&Job) -> &ResourceVector, slots: fn(&Job) -> u64, servers: &[ResourceVector]| {
            let mut upper = [0.0f64; RESOURCE_TYPES];
            let mut lower = [f64::INFINITY; RESOURCE_TYPES];
            let mut demanded = [false; RESOURCE_TYPES];
            for job in jobs {
                let amounts = demand(job).amounts();
                let kinds = amounts.iter().filter(|&&a| a > 0).count() as f64;
                for r in 0..RESOURCE_TYPES {
                    if amounts[r] > 0 {
                        demanded[r] = true;
                        upper[r] = upper[r].max(best(job) / amounts[r] as f64);
                        lower[r] = lower[r].min(low(job) / (kinds * slots(job) as f64 * amounts[r] as f64));
                    }
                }
            }
            for r in 0..RESOURCE_TYPES {
                if !demanded[r] {
                    // No job demands it: its price never matters; keep it flat.
                    (lower[r], upper[r]) = (f_min, f_min);
                }
                upper[r] = upper[r].max(lower[r]);
            }
            let at_zero: f64 = servers
                .iter()
                .map(|s| {
                    s.amounts().iter().zip(&lower).filter(|(&c, _)| c > 0).map(|(&c, &l)| c as f64 * l).sum::<f64>()
                })
                .sum();
            let eta = (2.0 * cluster.slots as f64 * at_zero / f_min).max(1.0);
            (PriceFunction { lower, upper, eta }, demanded)
        };
        let (workers, demanded_by_workers) = pool(|j| &j.spec.worker, |j| j.worker_slots, &cluster.worker_servers);
        let (parameter_servers, demanded_by_ps) = pool(
            |j| &j.spec.parameter_server,
            |j| {
                let (b, big_b) = (j.spec.worker.bandwidth_mbps as u64, j.spec.parameter_server.bandwidth_mbps as u64);
                (j.worker_slots * b).div_ceil(big_b)
            },
            &cluster.ps_servers,
        );
        Ok(PriceParameters { workers, parameter_servers, demanded_by_workers, demanded_by_ps })
    }

    /// The same with every `U` times `u` and both `L` times `l` (`η` kept): estimates off by
    /// those factors, each a number > 0 within the contract's magnitudes.
    pub fn scaled(&self, u: f64, l: f64) -> Result<PriceParameters> {
        Self::refuse_scale_factors(u, l)?;
        self.rescaled(u, l)
    }

    /// `u` and `l` as [`PriceParameters::scaled`] takes them: finite, > 0, and of magnitude
    /// between 1e-100 and 1e100.
    pub fn refuse_scale_factors(u: f64, l: f64) -> Result<()> {
        for (name, factor) in [("u", u), ("l", l)] {
            crate::problem::positive(factor, || name.to_string(), &format!("the price scale factor {name}"))?;
        }
        Ok(())
    }

    /// [`PriceParameters::scaled`] for factors that need only be finite and > 0, as long as the
    /// scaled prices stay finite and positive: what a session stored before the magnitudes were
    /// checked was created with, and replays with.
    pub fn rescaled(&self, u: f64, l: f64) -> Result<PriceParameters> {
        for (name, factor) in [("u", u), ("l", l)] {
            if !(factor.is_finite() && factor > 0.0) {
                let why = format!("the price scale factor {name} must be a finite number > 0, got {factor}");
                return Err(ArbiterError::at(ErrorCode::InvalidNumber, name, why));
            }
        }
        let scale = |f: PriceFunction| PriceFunction {
            lower: f.lower.map(|x| x * l),
            upper: f.upper.map(|x| x * u),
            eta: f.eta,
        };
        let scaled =
            PriceParameters { workers: scale(self.workers), parameter_servers: scale(self.parameter_servers), ..*self };
        let (before, after) = ([self.workers, self.parameter_servers], [scaled.workers, scaled.parameter_servers]);
        let pairs = |of: fn(&PriceFunction) -> [f64; RESOURCE_TYPES]| -> Vec<(f64, f64)> {
            before.iter().zip(&after).flat_map(|(b, a)| of(b).into_iter().zip(of(a))).collect()
        };
        for (field, factor, estimate, values) in [("u", u, "U", pairs(|f| f.upper)), ("l", l, "L", pairs(|f| f.lower))]
        {
            // A positive estimate must stay finite and positive (0 stays 0).
            if values.iter().any(|&(b, a)| b > 0.0 && !(a.is_finite() && a > 0.0)) {
                return Err(ArbiterError::at(
                    ErrorCode::InvalidNumber,
                    field,
                    format!("{field} = {factor:e} takes an estimated {estimate} out of the finite positive numbers"),
                ));
            }
        }
        for f in &after {
            let ratio = f.upper.iter().zip(&f.lower).filter(|&(_, &l)| l > 0.0).map(|(&u, &l)| 2.0 * u * f.eta / l);
            if ratio.into_iter().any(|r| !r.is_finite()) {
                return Err(ArbiterError::at(
                    ErrorCode::InvalidNumber,
                    "l",
                    format!("u = {u:e} and l = {l:e} put 2Uη/L past the largest number: the price function overflows"),
                ));
            }
        }
        Ok(scaled)
    }

    /// The competitive ratio of OASiS with these prices (the paper's Theorem 4): `2α`,
    /// `α = max(1, max_r ln(2 U^r η / L))` over both pools.
    pub fn competitive_ratio_bound(&self) -> f64 {
        2.0 * self.workers.alpha(&self.demanded_by_workers).max(self.parameter_servers.alpha(&self.demanded_by_ps))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_refuses_estimates_that_leave_the_finite_numbers() {
        let f = PriceFunction { lower: [0.5; 4], upper: [8.0; 4], eta: 2.0 };
        let p = PriceParameters {
            workers: f,
            parameter_servers: f,
            demanded_by_workers: [true; RESOURCE_TYPES],
            demanded_by_ps: [true; RESOURCE_TYPES],
        };
        assert!(p.scaled(0.5, 2.0).is_ok());
        // Outside the contract's magnitudes only `rescaled` (replay) takes a factor.
        assert_eq!(p.scaled(1e-120, 1.0).unwrap_err().field.as_deref(), Some("u"));
        assert!(p.rescaled(1e-120, 1.0).is_ok());
        assert_eq!(p.rescaled(0.0, 1.0).unwrap_err().field.as_deref(), Some("u"));
        for (u, l, field) in [(1e308, 1.0, "u"), (1.0, 1e-320, "l"), (0.0, 1.0, "u"), (1.0, f64::NAN, "l")] {
            let e = p.scaled(u, l).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidNumber);
            if !field.is_empty() {
                assert_eq!(e.field.as_deref(), Some(field), "{u} {l}");
            }
        }
    }

    #[test]
    fn price_is_l_over_2_eta_at_zero_and_u_at_full_use() {
        let f = PriceFunction { lower: [0.5; 4], upper: [8.0, 2.0, 1.0, 0.001], eta: 2.0 };
        assert_eq!(f.price(0, 0, 4), 0.125); // 0.5 / (2·2)
        assert!((f.price(0, 4, 4) - 8.0).abs() < 1e-12);
        // halfway: (L/2η)·sqrt(2Uη/L) = 0.125 · sqrt(64) = 1
        assert!((f.price(0, 2, 4) - 1.0).abs() < 1e-12);
        assert!((f.price(1, 3, 3) - 2.0).abs() < 1e-12);
        // a worker of 1 GPU, 2 cores at zero use: 1·0.125 + 2·0.125
        assert!((f.unit_cost(&[1, 2, 0, 0], &[0; 4], &[4, 8, 16, 100]) - 0.375).abs() < 1e-12);
    }
}
