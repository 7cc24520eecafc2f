//! Max-min fairness by water-filling: the lexicographic max-min of `(sf_m/weight_m)·nt_m`, so
//! capacity that LAS leaves idle goes to jobs that can still use it. See
//! `formulations/max_min_fairness_water_filling.md`.

use super::trajectory::{Entity, Forest, Member, Share};
use super::water_filling::{water_fill, Reweighting};
use super::{Outcome, Policy};
use crate::error::Result;
use crate::lp::Backend;
use crate::problem::Problem;

pub struct MaxMinFairnessWaterFilling;

/// Every job keeps its own weight at every level.
struct JobWeights;

impl Reweighting for JobWeights {
    fn weights(&self, problem: &Problem, _frozen: &[bool]) -> Vec<f64> {
        problem.jobs.iter().map(|j| j.weight).collect()
    }

    fn forest(&self, problem: &Problem, frozen: &[bool]) -> Option<Forest> {
        let members = (0..problem.num_jobs()).filter(|&m| !frozen[m]).map(Member::Job).collect();
        Some(Forest {
            entities: vec![Entity { weight: 1.0, share: Share::Fixed, members }],
            own: problem.jobs.iter().map(|j| j.weight).collect(),
            rank: (0..problem.num_jobs()).collect(),
        })
    }
}

impl Policy for MaxMinFairnessWaterFilling {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        water_fill(problem, backend, &JobWeights)
    }
}
