//! Hierarchical fairness: water-filling where a job's weight comes from its entity, re-derived
//! after every freeze. An entity passes its weight down to its live children (jobs with an
//! unfrozen job, sub-entities containing one): `fairness` in proportion to the children's own
//! weights, `fifo` all of it to the earliest-arrived child. Entities nest to any depth; roots keep
//! their own weight. See `formulations/hierarchical.md`.

use super::fifo::arrival_ranks;
use super::trajectory::{self, Forest, Member, Share};
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

    /// The tree with only the unfrozen jobs, for `trajectory`.
    fn forest_of(&self, problem: &Problem, frozen: &[bool]) -> Forest {
        let entities = self
            .children
            .iter()
            .enumerate()
            .map(|(e, children)| trajectory::Entity {
                weight: problem.entities[e].weight,
                share: match problem.entities[e].sharing {
                    Sharing::Fairness => Share::Fairness,
                    Sharing::Fifo => Share::Fifo,
                },
                members: children
                    .iter()
                    .filter_map(|&c| match c {
                        Child::Job(m) => (!frozen[m]).then_some(Member::Job(m)),
                        Child::Entity(sub) => Some(Member::Entity(sub)),
                    })
                    .collect(),
            })
            .collect();
        Forest { entities, own: problem.jobs.iter().map(|j| j.weight).collect(), rank: self.rank.clone() }
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

    /// The entity tree as it is, with only the unfrozen jobs. Not with `fifo` entities: a job
    /// whose turn comes when the GPUs are full gets nothing, and the decomposition, whose LPs
    /// meet the GPUs to 1e-7 of them, can hand it that slack, which jobs moving between types
    /// multiply; on random ill-conditioned trees the two methods differed by several percent of
    /// such a job's best level (`formulations/hierarchical.md`), so the engine's levels keep them.
    fn forest(&self, problem: &Problem, frozen: &[bool]) -> Option<Forest> {
        let fifo = problem.entities.iter().any(|e| e.sharing == Sharing::Fifo);
        (!fifo).then(|| self.forest_of(problem, frozen))
    }
}

impl Policy for Hierarchical {
    fn solve(&self, problem: &Problem, backend: Backend) -> Result<Outcome> {
        water_fill(problem, backend, &EntityTree::new(problem))
    }
}

#[cfg(test)]
mod tests {
    use super::super::trajectory::Trajectory;
    use super::*;
    use crate::request::Request;
    use proptest::prelude::*;

    /// A request of `jobs` (entity, arrival, weight) on one type, over `entities` (weight, fifo,
    /// parent).
    fn problem(entities: &[(f64, bool, Option<usize>)], jobs: &[(usize, f64, f64)]) -> Problem {
        let entities: serde_json::Map<String, serde_json::Value> = entities
            .iter()
            .enumerate()
            .map(|(e, &(weight, fifo, parent))| {
                let mut spec = serde_json::json!({"weight": weight, "policy": if fifo { "fifo" } else { "fairness" }});
                if let Some(p) = parent {
                    spec["parent"] = serde_json::json!(format!("e{p}"));
                }
                (format!("e{e}"), spec)
            })
            .collect();
        let jobs: Vec<serde_json::Value> = jobs
            .iter()
            .enumerate()
            .map(|(m, &(entity, arrival, weight))| {
                serde_json::json!({"id": format!("j{m}"), "throughput": {"v100": 1.0}, "entity": format!("e{entity}"),
                    "arrival": arrival, "weight": weight})
            })
            .collect();
        let request: Request = serde_json::from_value(serde_json::json!({"policy": "hierarchical",
            "cluster": {"worker_types": {"v100": {"count": 4}}}, "entities": entities, "jobs": jobs}))
        .unwrap();
        Problem::from_request(&request).unwrap()
    }

    /// The rise traced one freeze at a time, the weights re-derived from the whole tree after
    /// each: `(time, job, weight)` per freeze, and the needs and weights after each.
    type Traced = (Vec<(f64, usize, f64)>, Vec<Vec<f64>>, Vec<Vec<f64>>);

    fn traced(problem: &Problem, tree: &EntityTree, floor: &[f64], ceiling: &[f64], unit: &[f64]) -> Traced {
        let n = floor.len();
        let (mut frozen, mut need, mut t) = (vec![false; n], floor.to_vec(), 0.0);
        let (mut freezes, mut needs, mut weights) = (Vec::new(), vec![need.clone()], Vec::new());
        loop {
            let w = tree.weights(problem, &frozen);
            weights.push(w.clone());
            let next = (0..n)
                .filter(|&m| !frozen[m] && w[m] > 0.0)
                .map(|m| ((ceiling[m] - need[m]) / (w[m] * unit[m]), m))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            let Some((dt, job)) = next else { break };
            (0..n).filter(|&m| !frozen[m]).for_each(|m| need[m] += dt * w[m] * unit[m]);
            need[job] = ceiling[job];
            t += dt;
            frozen[job] = true;
            freezes.push((t, job, w[job]));
            needs.push(need.clone());
        }
        (freezes, needs, weights)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

        /// The clocks give every freeze, need and weight that re-deriving the whole tree's weights
        /// after each freeze gives, on nested trees with `fifo` entities and jobs at every depth.
        #[test]
        fn the_trajectory_follows_the_tree(
            entities in prop::collection::vec((prop::sample::select(vec![1.0, 2.0, 3.0]), any::<bool>(), 0usize..6), 1..6),
            jobs in prop::collection::vec(
                (0usize..6, 0u32..5, prop::sample::select(vec![1.0, 2.0]), 0.0f64..1.0, 0.05f64..3.0, 0.5f64..2.0),
                1..14,
            ),
        ) {
            let entities: Vec<(f64, bool, Option<usize>)> = entities
                .iter()
                .enumerate()
                .map(|(e, &(w, fifo, p))| (w, fifo, (e > 0 && p % 2 == 1).then(|| p % e)))
                .collect();
            let specs: Vec<(usize, f64, f64)> =
                jobs.iter().map(|&(e, arrival, w, ..)| (e % entities.len(), f64::from(arrival), w)).collect();
            let problem = problem(&entities, &specs);
            let floor: Vec<f64> = jobs.iter().map(|j| j.3).collect();
            let ceiling: Vec<f64> = jobs.iter().map(|j| j.3 + j.4).collect();
            let unit: Vec<f64> = jobs.iter().map(|j| j.5).collect();
            let tree = EntityTree::new(&problem);
            let n = jobs.len();
            let forest = tree.forest_of(&problem, &vec![false; n]);
            let path = Trajectory::new(&forest, &floor, &ceiling, &unit).unwrap();
            let (freezes, needs, weights) = traced(&problem, &tree, &floor, &ceiling, &unit);
            prop_assert_eq!(path.freezes(), freezes.len());
            let got = path.frozen(n);
            for (j, &(t, job, w)) in freezes.iter().enumerate() {
                prop_assert!(close(path.time(j + 1), t), "freeze {}: time {} against {}", j, path.time(j + 1), t);
                prop_assert_eq!(got[j].0, job, "freeze {}", j);
                prop_assert!(close(got[j].1, w), "freeze {}: weight {} against {}", j, got[j].1, w);
            }
            for (j, (want_need, want_weight)) in needs.iter().zip(&weights).enumerate() {
                let need = path.needs(j);
                let (rate, weight) = path.rates(j);
                for m in 0..n {
                    prop_assert!(close(need[m], want_need[m]), "after {} freezes, job {}: need {} against {}", j, m, need[m], want_need[m]);
                    prop_assert!(close(weight[m], want_weight[m]), "after {} freezes, job {}: weight {} against {}", j, m, weight[m], want_weight[m]);
                    prop_assert!(close(rate[m], want_weight[m] * unit[m]));
                }
            }
        }
    }
}
