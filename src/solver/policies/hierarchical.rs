//! Hierarchical fairness: water-filling where a job's weight comes from its entity, re-derived
//! after every freeze. An entity passes its weight down to its live children (jobs with an
//! unfrozen job, sub-entities containing one): `fairness` in proportion to the children's own
//! weights, `fifo` all of it to the earliest-arrived child. Entities nest to any depth; roots keep
//! their own weight. See `formulations/hierarchical.md`.

use super::fifo::arrival_ranks;
use super::trajectory::{Group, Share};
use super::water_filling::{water_fill, Reweighting};
use super::{Outcome, Policy};
use crate::error::Result;
use crate::lp::Backend;
use crate::problem::{Problem, Sharing};

pub struct Hierarchical;

/// A child of an entity: a job or a sub-entity.
#[derive(Clone, Copy)]
enum Child {
    Job(usize),
    Entity(usize),
}

struct EntityTree {
    children: Vec<Vec<Child>>,
    roots: Vec<usize>,
    rank: Vec<usize>,
}

impl EntityTree {
    fn new(problem: &Problem) -> EntityTree {
        let mut children = vec![Vec::new(); problem.entities.len()];
        let mut roots = Vec::new();
        for (e, entity) in problem.entities.iter().enumerate() {
            match entity.parent {
                Some(p) => children[p].push(Child::Entity(e)),
                None => roots.push(e),
            }
        }
        for (m, entity) in problem.job_entity.iter().enumerate() {
            if let Some(e) = entity {
                children[*e].push(Child::Job(m));
            }
        }
        EntityTree { children, roots, rank: arrival_ranks(problem) }
    }

    /// The earliest arrival rank among the unfrozen jobs below `child`, if any.
    fn earliest_live(&self, child: Child, frozen: &[bool]) -> Option<usize> {
        match child {
            Child::Job(m) => (!frozen[m]).then_some(self.rank[m]),
            Child::Entity(e) => self.children[e].iter().filter_map(|&c| self.earliest_live(c, frozen)).min(),
        }
    }

    fn own_weight(problem: &Problem, child: Child) -> f64 {
        match child {
            Child::Job(m) => problem.jobs[m].weight,
            Child::Entity(e) => problem.entities[e].weight,
        }
    }

    /// Hands `weight` of entity `e` down to its live children, recursively.
    fn distribute(&self, problem: &Problem, e: usize, weight: f64, frozen: &[bool], out: &mut [f64]) {
        let live: Vec<(Child, usize)> =
            self.children[e].iter().filter_map(|&c| self.earliest_live(c, frozen).map(|r| (c, r))).collect();
        let shares: Vec<(Child, f64)> = match problem.entities[e].sharing {
            Sharing::Fairness => {
                let total: f64 = live.iter().map(|&(c, _)| Self::own_weight(problem, c)).sum();
                live.iter().map(|&(c, _)| (c, weight * Self::own_weight(problem, c) / total)).collect()
            }
            Sharing::Fifo => {
                live.iter().min_by_key(|&&(_, rank)| rank).map(|&(c, _)| (c, weight)).into_iter().collect()
            }
        };
        for (child, share) in shares {
            match child {
                Child::Job(m) => out[m] = share,
                Child::Entity(sub) => self.distribute(problem, sub, share, frozen, out),
            }
        }
    }
}

impl Reweighting for EntityTree {
    fn weights(&self, problem: &Problem, frozen: &[bool]) -> Vec<f64> {
        let mut out = vec![0.0; problem.num_jobs()];
        for &root in &self.roots {
            self.distribute(problem, root, problem.entities[root].weight, frozen, &mut out);
        }
        out
    }

    /// A flat tree of `fairness` entities: each root entity is a group, and a freeze re-derives
    /// the weights of its own entity only. Not for nested trees (a sub-entity's last freeze
    /// reweights its siblings), nor for `fifo` entities: a FIFO job whose turn comes when the GPUs
    /// are full gets exactly nothing, and the decomposition, whose LPs meet the GPUs to 1e-7 of
    /// them, hands it that slack (up to a few thousandths of its level were seen).
    fn groups(&self, problem: &Problem, frozen: &[bool]) -> Option<Vec<Group>> {
        let flat_fairness = problem.entities.iter().all(|e| e.parent.is_none() && e.sharing == Sharing::Fairness);
        if !flat_fairness {
            return None;
        }
        let groups = self
            .roots
            .iter()
            .map(|&e| {
                let jobs = self.children[e]
                    .iter()
                    .filter_map(|&c| match c {
                        Child::Job(m) if !frozen[m] => Some((m, problem.jobs[m].weight)),
                        _ => None,
                    })
                    .collect();
                Group { weight: problem.entities[e].weight, share: Share::Fairness, jobs }
            })
            .collect();
        Some(groups)
    }
}

impl Policy for Hierarchical {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        water_fill(problem, backend, &EntityTree::new(problem))
    }
}
