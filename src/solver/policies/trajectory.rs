//! A water-filling level's rise between ceilings (`water_filling::Levels::gallop`). Every rising
//! job climbs from its floor at its weight's rate until it reaches its own ceiling, where it
//! freezes and the weights are re-derived. The weights come from a forest of entities (a single
//! `Fixed` root for plain water-filling), and each entity is a clock: a job's rise is its
//! entity's reading times a constant of its own (from the moment its turn came, under `fifo`),
//! and an entity's reading is an affine function of its parent's, which changes only at freezes
//! below it. A freeze therefore touches only the entities on its job's path to the root: the
//! freezes come in time order in `O(n·(d + f) + n log r)` (depth `d`, entity members `f` of an
//! entity on the path, `r` roots), and the needs after any number of freezes in `O(n)`. See
//! `formulations/max_min_fairness_water_filling.md`.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// How an entity passes the weight it receives to its live members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// Every job keeps its own weight (a root of jobs only; its weight is unused).
    Fixed,
    /// In proportion to the live members' own weights.
    Fairness,
    /// All of it to the live member holding the earliest-arrived unfrozen job.
    Fifo,
}

/// A member of an entity: an unfrozen job, or an entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    Job(usize),
    Entity(usize),
}

/// An entity of the forest.
#[derive(Debug, Clone)]
pub struct Entity {
    /// A root's weight, or the entity's own weight as a member of a `fairness` parent.
    pub weight: f64,
    pub share: Share,
    /// Its unfrozen jobs and its sub-entities (those with no unfrozen job below are ignored).
    pub members: Vec<Member>,
}

/// The unfrozen jobs, in a forest of entities whose weights depend only on which jobs are frozen.
#[derive(Debug, Clone)]
pub struct Forest {
    pub entities: Vec<Entity>,
    /// Per job of the problem: its own weight (read by `Fixed` and `Fairness` parents).
    pub own: Vec<f64>,
    /// Per job of the problem: its arrival rank (read by `Fifo` parents).
    pub rank: Vec<usize>,
}

/// A job reaching its ceiling: when, which, and its weight as it rose.
#[derive(Debug, Clone, Copy)]
struct Freeze {
    time: f64,
    job: usize,
    weight: f64,
}

const NONE: usize = usize::MAX;

/// Every freeze of a rise from given floors, in time order.
pub struct Trajectory<'a> {
    freezes: Vec<Freeze>,
    /// Entities, parents before members.
    order: Vec<usize>,
    parent: Vec<Option<usize>>,
    /// Per entity: `(after freeze j, a, b)`, its reading `K = a·K_parent + b` (a root's:
    /// `a·time + b`) from then on.
    history: Vec<Vec<(usize, f64, f64)>>,
    share: Vec<Share>,
    /// Per job in the forest: its entity, its rise per unit of that entity's reading, and under
    /// `fifo` the freeze after which its turn came and the reading then.
    entity_of: Vec<usize>,
    unit: Vec<f64>,
    own: Vec<f64>,
    start: Vec<Option<(usize, f64)>>,
    /// Per job: after how many freezes it is frozen (`NONE`: not in the forest).
    frozen_after: Vec<usize>,
    floor: &'a [f64],
    ceiling: &'a [f64],
}

/// A root's next freeze, ordered earliest first (then by root, for a fixed order on ties).
struct Next {
    time: f64,
    root: usize,
}

impl PartialEq for Next {
    fn eq(&self, other: &Next) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Next {}
impl PartialOrd for Next {
    fn partial_cmp(&self, other: &Next) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Next {
    fn cmp(&self, other: &Next) -> Ordering {
        other.time.total_cmp(&self.time).then(other.root.cmp(&self.root))
    }
}

/// The clocks while the rise is traced.
struct Clocks<'f> {
    forest: &'f Forest,
    parent: Vec<Option<usize>>,
    /// Per entity: its job members in the order they freeze (`fixed`/`fairness`: by span over
    /// own weight; `fifo`: by rank) and the next unfrozen one, by rank and the earliest unfrozen
    /// one, and its sub-entities.
    jobs: Vec<Vec<usize>>,
    next_job: Vec<usize>,
    by_rank: Vec<Vec<usize>>,
    next_rank: Vec<usize>,
    subs: Vec<Vec<usize>>,
    /// Per entity: the sum of its live members' own weights (`fairness`), its earliest live rank
    /// below (`NONE`: no live job below), its current member (`fifo`).
    live_weight: Vec<f64>,
    earliest: Vec<usize>,
    first: Vec<Option<Member>>,
    a: Vec<f64>,
    b: Vec<f64>,
    /// Per entity: its next freeze below, as its own reading and the job.
    next: Vec<(f64, usize)>,
    /// Per job: its span (rise to its ceiling in units of its entity's reading past its start).
    span: Vec<f64>,
    own: Vec<f64>,
    start: Vec<Option<(usize, f64)>>,
    /// Per job: after how many freezes it froze (`NONE`: not yet, or not in the forest).
    frozen_after: Vec<usize>,
}

impl Clocks<'_> {
    /// Whether an entity has a live job below it.
    fn alive(&self, x: usize) -> bool {
        self.earliest[x] != NONE
    }

    fn frozen(&self, m: usize) -> bool {
        self.frozen_after[m] != NONE
    }

    /// `g`: how fast an entity's reading runs per unit of the weight it receives.
    fn gain(&self, x: usize) -> f64 {
        match self.forest.entities[x].share {
            Share::Fairness if self.live_weight[x] > 0.0 => 1.0 / self.live_weight[x],
            Share::Fairness => 0.0,
            Share::Fixed | Share::Fifo => 1.0,
        }
    }

    /// `c`: the weight an entity receives per unit of its parent's reading (a root: its own).
    fn share_of_parent(&self, x: usize) -> f64 {
        if !self.alive(x) {
            return 0.0;
        }
        match self.parent[x] {
            None if self.forest.entities[x].share == Share::Fixed => 1.0,
            None => self.forest.entities[x].weight,
            Some(p) => match self.forest.entities[p].share {
                Share::Fifo => f64::from(u8::from(self.first[p] == Some(Member::Entity(x)))),
                _ => self.forest.entities[x].weight,
            },
        }
    }

    /// Sets `x`'s clock factor, its reading continuous at `now` (its parent's reading then:
    /// `parent_now`); whether it changed.
    fn retune(&mut self, x: usize, parent_now: f64, now: f64) -> bool {
        let a = self.share_of_parent(x) * self.gain(x);
        let changed = a != self.a[x];
        if changed {
            self.a[x] = a;
            self.b[x] = now - a * parent_now;
        }
        changed
    }

    /// Its earliest live rank below (`NONE`: no live job below).
    fn refresh_earliest(&mut self, x: usize) {
        while self.by_rank[x].get(self.next_rank[x]).is_some_and(|&m| self.frozen(m)) {
            self.next_rank[x] += 1;
        }
        let own = self.by_rank[x].get(self.next_rank[x]).map_or(NONE, |&m| self.forest.rank[m]);
        let below = self.subs[x].iter().map(|&s| self.earliest[s]).min().unwrap_or(NONE);
        self.earliest[x] = own.min(below);
    }

    /// The live member of a `fifo` entity holding the earliest job.
    fn current(&self, x: usize) -> Option<Member> {
        let job = self.jobs[x].get(self.next_job[x]).map(|&m| (self.forest.rank[m], Member::Job(m)));
        let sub = self.subs[x].iter().filter(|&&s| self.alive(s)).map(|&s| (self.earliest[s], Member::Entity(s)));
        job.into_iter().chain(sub).min_by_key(|&(rank, _)| rank).map(|(_, member)| member)
    }

    /// The next freeze below `x`, in its own reading.
    fn refresh_next(&mut self, x: usize) {
        let mut best = (f64::INFINITY, NONE);
        let mut consider = |candidate: (f64, usize)| {
            if candidate.1 != NONE && candidate.0 < best.0 {
                best = candidate;
            }
        };
        match self.forest.entities[x].share {
            Share::Fifo => match self.first[x] {
                Some(Member::Job(m)) => consider((self.start[m].map_or(0.0, |s| s.1) + self.span[m], m)),
                Some(Member::Entity(s)) => consider(self.in_parent_reading(s)),
                None => {}
            },
            _ => {
                if let Some(&m) = self.jobs[x].get(self.next_job[x]) {
                    consider((self.span[m] / self.own[m], m));
                }
                for i in 0..self.subs[x].len() {
                    consider(self.in_parent_reading(self.subs[x][i]));
                }
            }
        }
        self.next[x] = best;
    }

    /// `s`'s next freeze, in its parent's reading.
    fn in_parent_reading(&self, s: usize) -> (f64, usize) {
        let (reading, job) = self.next[s];
        if self.a[s] > 0.0 && job != NONE {
            ((reading - self.b[s]) / self.a[s], job)
        } else {
            (f64::INFINITY, NONE)
        }
    }
}

impl<'a> Trajectory<'a> {
    /// The rise of `forest` from `floor` (`rate_unit[m] = thr_equal_m/sf_m`). `None` when a rate
    /// is not positive and finite, or the forest is not one (such a level is left to the
    /// one-level-at-a-time path).
    pub fn new(forest: &Forest, floor: &'a [f64], ceiling: &'a [f64], rate_unit: &[f64]) -> Option<Trajectory<'a>> {
        let (n, count) = (floor.len(), forest.entities.len());
        let mut parent = vec![None; count];
        let mut entity_of = vec![NONE; n];
        for (x, entity) in forest.entities.iter().enumerate() {
            if !(entity.weight > 0.0 && entity.weight.is_finite()) {
                return None;
            }
            for &member in &entity.members {
                match member {
                    Member::Job(m) if m < n && entity_of[m] == NONE => entity_of[m] = x,
                    Member::Entity(s) if s < count && parent[s].is_none() && s != x && entity.share != Share::Fixed => {
                        parent[s] = Some(x)
                    }
                    _ => return None,
                }
            }
        }
        // Parents before members (and no cycle).
        let mut order: Vec<usize> = (0..count).filter(|&x| parent[x].is_none()).collect();
        let mut i = 0;
        while i < order.len() {
            let x = order[i];
            order.extend(forest.entities[x].members.iter().filter_map(|&c| match c {
                Member::Entity(s) => Some(s),
                Member::Job(_) => None,
            }));
            i += 1;
        }
        if order.len() != count {
            return None;
        }
        let (mut own, mut unit, mut span) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        for m in (0..n).filter(|&m| entity_of[m] != NONE) {
            own[m] = match forest.entities[entity_of[m]].share {
                Share::Fifo => 1.0,
                _ => forest.own[m],
            };
            unit[m] = rate_unit[m];
            if !(own[m] > 0.0 && own[m].is_finite() && unit[m] > 0.0 && unit[m].is_finite()) {
                return None;
            }
            // The rise to the ceiling per unit rate (its entity's reading times its own weight).
            span[m] = ((ceiling[m] - floor[m]) / unit[m]).max(0.0);
        }
        let mut clocks = Clocks {
            forest,
            parent,
            jobs: vec![Vec::new(); count],
            next_job: vec![0; count],
            by_rank: vec![Vec::new(); count],
            next_rank: vec![0; count],
            subs: vec![Vec::new(); count],
            live_weight: vec![0.0; count],
            earliest: vec![NONE; count],
            first: vec![None; count],
            a: vec![0.0; count],
            b: vec![0.0; count],
            next: vec![(f64::INFINITY, NONE); count],
            span,
            own,
            start: vec![None; n],
            frozen_after: vec![NONE; n],
        };
        for (x, entity) in forest.entities.iter().enumerate() {
            for &member in &entity.members {
                match member {
                    Member::Job(m) => clocks.jobs[x].push(m),
                    Member::Entity(s) => clocks.subs[x].push(s),
                }
            }
            let (span, own, rank) = (&clocks.span, &clocks.own, &forest.rank);
            let mut by_rank = clocks.jobs[x].clone();
            by_rank.sort_by_key(|&m| (rank[m], m));
            match entity.share {
                Share::Fifo => clocks.jobs[x].clone_from(&by_rank),
                _ => clocks.jobs[x].sort_by(|&p, &q| (span[p] / own[p]).total_cmp(&(span[q] / own[q])).then(p.cmp(&q))),
            }
            clocks.by_rank[x] = by_rank;
        }
        // Members before parents: liveness, live weights, turns, clocks, next freezes.
        for &x in order.iter().rev() {
            clocks.refresh_earliest(x);
            clocks.live_weight[x] = clocks.jobs[x].iter().map(|&m| forest.own[m]).sum::<f64>()
                + clocks.subs[x].iter().filter(|&&s| clocks.alive(s)).map(|&s| forest.entities[s].weight).sum::<f64>();
            if forest.entities[x].share == Share::Fifo {
                clocks.first[x] = clocks.current(x);
                if let Some(Member::Job(m)) = clocks.first[x] {
                    clocks.start[m] = Some((0, 0.0));
                }
            }
        }
        for &x in &order {
            clocks.a[x] = clocks.share_of_parent(x) * clocks.gain(x);
        }
        for &x in order.iter().rev() {
            clocks.refresh_next(x);
        }
        let mut history: Vec<Vec<(usize, f64, f64)>> = (0..count).map(|x| vec![(0, clocks.a[x], 0.0)]).collect();

        let root_time = |clocks: &Clocks, r: usize| {
            let (reading, job) = clocks.next[r];
            if job == NONE || clocks.a[r] <= 0.0 {
                f64::INFINITY
            } else {
                (reading - clocks.b[r]) / clocks.a[r]
            }
        };
        let roots: Vec<usize> = order.iter().copied().filter(|&x| clocks.parent[x].is_none()).collect();
        let mut key = vec![f64::INFINITY; count];
        let mut heap = BinaryHeap::with_capacity(roots.len());
        for &r in &roots {
            key[r] = root_time(&clocks, r);
            if key[r].is_finite() {
                heap.push(Next { time: key[r], root: r });
            }
        }
        let mut freezes: Vec<Freeze> = Vec::with_capacity(n);
        let mut path = Vec::new();
        let mut reading = vec![0.0; count];
        while let Some(Next { time, root }) = heap.pop() {
            if time.to_bits() != key[root].to_bits() {
                continue;
            }
            let time = freezes.last().map_or(time, |f| time.max(f.time));
            let m = clocks.next[root].1;
            // The path from the job's entity to its root, and the readings now.
            path.clear();
            let mut x = entity_of[m];
            path.push(x);
            while let Some(p) = clocks.parent[x] {
                path.push(p);
                x = p;
            }
            let mut speed = 1.0;
            for &x in path.iter().rev() {
                reading[x] = match clocks.parent[x] {
                    None => clocks.a[x] * time + clocks.b[x],
                    Some(p) => clocks.a[x] * reading[p] + clocks.b[x],
                };
                speed *= clocks.a[x];
            }
            freezes.push(Freeze { time, job: m, weight: clocks.own[m] * speed });
            let j = freezes.len();
            clocks.frozen_after[m] = j;
            let mut record = |x: usize, a: f64, b: f64| match history[x].last_mut() {
                Some(last) if last.0 == j => (last.1, last.2) = (a, b),
                _ => history[x].push((j, a, b)),
            };
            // Bottom up: the member that left, live weights, turns, clocks, next freezes.
            let mut left = Some(Member::Job(m));
            let mut earlier_moved = false;
            for &x in &path {
                let was = clocks.earliest[x];
                let share = forest.entities[x].share;
                match left {
                    Some(Member::Job(m)) => {
                        clocks.live_weight[x] -= forest.own[m];
                        while clocks.jobs[x].get(clocks.next_job[x]).is_some_and(|&q| clocks.frozen(q)) {
                            clocks.next_job[x] += 1;
                        }
                    }
                    Some(Member::Entity(s)) => clocks.live_weight[x] -= forest.entities[s].weight,
                    None => {}
                }
                clocks.refresh_earliest(x);
                if share == Share::Fairness && !clocks.alive(x) {
                    clocks.live_weight[x] = 0.0;
                }
                if share == Share::Fifo && (left.is_some() || earlier_moved) {
                    let turn = clocks.current(x);
                    if turn != clocks.first[x] {
                        let old = std::mem::replace(&mut clocks.first[x], turn);
                        for member in [old, turn].into_iter().flatten() {
                            match member {
                                Member::Entity(s) => {
                                    let now = clocks.a[s] * reading[x] + clocks.b[s];
                                    if clocks.retune(s, reading[x], now) {
                                        record(s, clocks.a[s], clocks.b[s]);
                                    }
                                }
                                Member::Job(q) if Some(member) == turn => clocks.start[q] = Some((j, reading[x])),
                                Member::Job(_) => {}
                            }
                        }
                    }
                }
                let parent_now = clocks.parent[x].map_or(time, |p| reading[p]);
                if clocks.retune(x, parent_now, reading[x]) {
                    record(x, clocks.a[x], clocks.b[x]);
                }
                clocks.refresh_next(x);
                left = (!clocks.alive(x)).then_some(Member::Entity(x));
                earlier_moved = clocks.earliest[x] != was;
            }
            key[root] = root_time(&clocks, root);
            if key[root].is_finite() {
                heap.push(Next { time: key[root], root });
            }
        }
        Some(Trajectory {
            freezes,
            order,
            parent: clocks.parent,
            history,
            share: forest.entities.iter().map(|e| e.share).collect(),
            entity_of,
            unit,
            own: clocks.own,
            start: clocks.start,
            frozen_after: clocks.frozen_after,
            floor,
            ceiling,
        })
    }

    /// How many freezes the rise has (one per job of the forest).
    pub fn freezes(&self) -> usize {
        self.freezes.len()
    }

    /// When the `j`-th freeze happens (0 for `j = 0`).
    pub fn time(&self, j: usize) -> f64 {
        if j == 0 {
            0.0
        } else {
            self.freezes[j - 1].time
        }
    }

    /// Each entity's clock `(a, b)` after the first `j` freezes.
    fn clock(&self, x: usize, j: usize) -> (f64, f64) {
        let history = &self.history[x];
        let i = history.partition_point(|e| e.0 <= j) - 1;
        (history[i].1, history[i].2)
    }

    /// Every job's throughput after the first `j` freezes: the frozen at their ceilings, the
    /// rising at floor plus their rise so far, the rest at their floors.
    pub fn needs(&self, j: usize) -> Vec<f64> {
        let t = self.time(j);
        let mut reading = vec![0.0; self.history.len()];
        for &x in &self.order {
            let (a, b) = self.clock(x, j);
            reading[x] = a * self.parent[x].map_or(t, |p| reading[p]) + b;
        }
        let mut need = self.floor.to_vec();
        for (m, &x) in self.entity_of.iter().enumerate().filter(|(_, &x)| x != NONE) {
            need[m] = if self.frozen_after[m] <= j {
                self.ceiling[m]
            } else {
                let rise = match self.share[x] {
                    Share::Fifo => match self.start[m] {
                        Some((since, at)) if since <= j => reading[x] - at,
                        _ => 0.0,
                    },
                    _ => reading[x],
                };
                (self.floor[m] + self.unit[m] * self.own[m] * rise.max(0.0)).min(self.ceiling[m].max(self.floor[m]))
            };
        }
        need
    }

    /// After the first `j` freezes: every job's rate of rise and its weight (0 for jobs not
    /// rising).
    pub fn rates(&self, j: usize) -> (Vec<f64>, Vec<f64>) {
        let n = self.floor.len();
        let mut speed = vec![0.0; self.history.len()];
        for &x in &self.order {
            speed[x] = self.clock(x, j).0 * self.parent[x].map_or(1.0, |p| speed[p]);
        }
        let (mut rate, mut weight) = (vec![0.0; n], vec![0.0; n]);
        for (m, &x) in self.entity_of.iter().enumerate().filter(|(_, &x)| x != NONE) {
            let rising = self.frozen_after[m] > j
                && (self.share[x] != Share::Fifo || self.start[m].is_some_and(|(since, _)| since <= j));
            if rising {
                weight[m] = self.own[m] * speed[x];
                rate[m] = self.unit[m] * weight[m];
            }
        }
        (rate, weight)
    }

    /// The first `j` frozen jobs, with the weights they rose at.
    pub fn frozen(&self, j: usize) -> Vec<(usize, f64)> {
        self.freezes[..j].iter().map(|f| (f.job, f.weight)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forest(entities: Vec<Entity>, own: Vec<f64>) -> Forest {
        let rank = (0..own.len()).collect();
        Forest { entities, own, rank }
    }

    /// A fairness entity of weight 2 with jobs of own weights 1 and 3, spans 1 and 6 (in need):
    /// the first freezes when its need rose 1 at rate 2·1/4 (t = 2); the second then rose
    /// 2·3/4·2 = 3 and rises at 2·3/3 = 2: it reaches its ceiling 3 later, at t = 3.5.
    #[test]
    fn a_fairness_entity_speeds_up_as_its_jobs_freeze() {
        let members = vec![Member::Job(0), Member::Job(1)];
        let forest = forest(vec![Entity { weight: 2.0, share: Share::Fairness, members }], vec![1.0, 3.0]);
        let (floor, ceiling) = ([0.0, 0.0], [1.0, 6.0]);
        let path = Trajectory::new(&forest, &floor, &ceiling, &[1.0, 1.0]).expect("positive rates");
        assert_eq!(path.freezes(), 2);
        assert_eq!(path.frozen(2), vec![(0, 0.5), (1, 2.0)]);
        assert!((path.time(1) - 2.0).abs() < 1e-12 && (path.time(2) - 3.5).abs() < 1e-12);
        let need = path.needs(1);
        assert!((need[0] - 1.0).abs() < 1e-12 && (need[1] - 3.0).abs() < 1e-12, "{need:?}");
        let (rate, weight) = path.rates(1);
        assert_eq!((rate, weight), (vec![0.0, 2.0], vec![0.0, 2.0]));
    }

    /// Two roots keep their own clocks: a fixed root's job rises at its own weight while a
    /// fairness root beside it speeds up.
    #[test]
    fn roots_interleave() {
        let forest = forest(
            vec![
                Entity { weight: 1.0, share: Share::Fairness, members: vec![Member::Job(1), Member::Job(0)] },
                Entity { weight: 9.0, share: Share::Fixed, members: vec![Member::Job(2)] },
            ],
            vec![1.0, 1.0, 0.5],
        );
        let (floor, ceiling) = ([0.0, 1.0, 0.0], [2.0, 1.5, 2.5]);
        let path = Trajectory::new(&forest, &floor, &ceiling, &[1.0, 1.0, 1.0]).expect("positive rates");
        // Job 1 first (0.5 at rate 1/2, t = 1); job 0 has 1.5 left at rate 1 (t = 2.5); job 2
        // rises at 0.5 (t = 5).
        let order: Vec<usize> = path.frozen(3).iter().map(|f| f.0).collect();
        assert_eq!(order, vec![1, 0, 2]);
        assert_eq!([path.time(1), path.time(2), path.time(3)], [1.0, 2.5, 5.0]);
        assert_eq!(path.needs(0), vec![0.0, 1.0, 0.0]);
        assert_eq!(path.needs(1), vec![0.5, 1.5, 0.5]);
        assert_eq!(path.needs(2), vec![2.0, 1.5, 1.25]);
        assert_eq!(path.rates(1), (vec![1.0, 0.0, 0.5], vec![1.0, 0.0, 0.5]));
    }

    /// A fairness root of weight 4 over a job (own weight 1) and a sub-entity (weight 1) of two
    /// jobs: the sub-entity's jobs rise at 1 each until the root's job freezes at t = 1 (span 2
    /// at rate 2); then the sub-entity gets all 4, 2 per job, and its job with span 3 freezes at
    /// t = 2. Malformed forests (a job twice, a cycle) are refused.
    #[test]
    fn a_freeze_speeds_up_its_siblings_subtrees() {
        let forest = forest(
            vec![
                Entity { weight: 4.0, share: Share::Fairness, members: vec![Member::Job(0), Member::Entity(1)] },
                Entity { weight: 1.0, share: Share::Fairness, members: vec![Member::Job(1), Member::Job(2)] },
            ],
            vec![1.0, 1.0, 1.0],
        );
        let (floor, ceiling) = ([0.0; 3], [2.0, 3.0, 10.0]);
        let path = Trajectory::new(&forest, &floor, &ceiling, &[1.0; 3]).expect("positive rates");
        assert_eq!(path.frozen(2), vec![(0, 2.0), (1, 2.0)]);
        assert_eq!([path.time(1), path.time(2)], [1.0, 2.0]);
        assert_eq!(path.needs(1), vec![2.0, 1.0, 1.0]);
        assert_eq!(path.rates(2), (vec![0.0, 0.0, 4.0], vec![0.0, 0.0, 4.0]));

        let twice = Forest { entities: vec![forest.entities[1].clone(), forest.entities[1].clone()], ..forest.clone() };
        assert!(Trajectory::new(&twice, &floor, &ceiling, &[1.0; 3]).is_none());
        let mut cycle = forest.clone();
        cycle.entities[1].members.push(Member::Entity(0));
        assert!(Trajectory::new(&cycle, &floor, &ceiling, &[1.0; 3]).is_none());
    }
}
