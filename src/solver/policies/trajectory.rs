//! A water-filling level's rise between ceilings (`water_filling::Levels::gallop`). Every rising
//! job climbs from its floor at its weight's rate until it reaches its own ceiling, where it
//! freezes and the weights are re-derived. When a freeze re-derives only the weights of its own
//! group (a job's own weight, which never changes; a `fairness` root entity of a flat tree), each
//! group is a clock: a job's rise is its clock's reading times a constant of its own, and only
//! the clock's speed changes, at the group's own freezes. The ceilings are then marks on the
//! clocks, and merging the clocks gives every freeze in time order in `O(n log n)`, with the needs
//! after any number of freezes in `O(n)`. See `formulations/max_min_fairness_water_filling.md`.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// How a group shares its weight among its live jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// Every job keeps its own weight.
    Fixed,
    /// The group's weight in proportion to the live jobs' own weights.
    Fairness,
}

/// Jobs whose weights depend only on which of them are frozen.
#[derive(Debug, Clone)]
pub struct Group {
    /// The group's weight (unused by `Fixed`).
    pub weight: f64,
    pub share: Share,
    /// The group's unfrozen jobs and their own weights.
    pub jobs: Vec<(usize, f64)>,
}

/// One group's clock. Its jobs, in the order they reach their ceilings, rise by `a_m·K` until
/// `K = end_m` (`K` the clock's reading); after `p` of them froze it runs at `speed[p]`.
struct Clock {
    jobs: Vec<usize>,
    own: Vec<f64>,
    end: Vec<f64>,
    speed: Vec<f64>,
    /// Per job of `jobs`: the index of its freeze among all freezes, and its time.
    event: Vec<usize>,
    time: Vec<f64>,
}

impl Clock {
    /// How many of its jobs froze in the first `j` freezes, and its reading then.
    fn at(&self, j: usize, t: f64) -> (usize, f64) {
        let p = self.event.partition_point(|&e| e < j);
        let reading = if p == 0 { self.speed[0] * t } else { self.end[p - 1] + self.speed[p] * (t - self.time[p - 1]) };
        (p, reading)
    }
}

/// A job reaching its ceiling: when, which, and its weight as it rose.
#[derive(Debug, Clone, Copy)]
struct Freeze {
    time: f64,
    job: usize,
    weight: f64,
}

/// Every freeze of a rise from given floors, in time order.
pub struct Trajectory<'a> {
    clocks: Vec<Clock>,
    freezes: Vec<Freeze>,
    /// Per job: its rise per unit of its clock (`own weight · thr_equal / sf`).
    unit: Vec<f64>,
    floor: &'a [f64],
    ceiling: &'a [f64],
}

/// A clock's next freeze, ordered earliest first (then by clock, for a fixed order on ties).
struct Next {
    time: f64,
    clock: usize,
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
        other.time.total_cmp(&self.time).then(other.clock.cmp(&self.clock))
    }
}

impl<'a> Trajectory<'a> {
    /// The rise of `groups` from `floor` (`rate_unit[m] = thr_equal_m/sf_m`). `None` when a rate
    /// is not positive and finite (such a level is left to the one-level-at-a-time path).
    pub fn new(groups: &[Group], floor: &'a [f64], ceiling: &'a [f64], rate_unit: &[f64]) -> Option<Trajectory<'a>> {
        let mut unit = vec![0.0; floor.len()];
        let mut clocks = Vec::with_capacity(groups.len());
        for group in groups.iter().filter(|g| !g.jobs.is_empty()) {
            let mut jobs = group.jobs.clone();
            for &(m, own) in &jobs {
                unit[m] = own * rate_unit[m];
                if !(unit[m] > 0.0 && unit[m].is_finite()) {
                    return None;
                }
            }
            let span = |m: usize| ((ceiling[m] - floor[m]) / unit[m]).max(0.0);
            jobs.sort_by(|a, b| span(a.0).total_cmp(&span(b.0)).then(a.0.cmp(&b.0)));
            let end: Vec<f64> = jobs.iter().map(|&(m, _)| span(m)).collect();
            // Live own weight after p freezes, for `Fairness`.
            let mut live: Vec<f64> = vec![0.0; jobs.len() + 1];
            for i in (0..jobs.len()).rev() {
                live[i] = live[i + 1] + jobs[i].1;
            }
            let speed: Vec<f64> = (0..=jobs.len())
                .map(|p| match group.share {
                    Share::Fixed => 1.0,
                    Share::Fairness if p < jobs.len() => group.weight / live[p],
                    Share::Fairness => 0.0,
                })
                .collect();
            if speed[..jobs.len()].iter().any(|s| !(*s > 0.0 && s.is_finite())) {
                return None;
            }
            clocks.push(Clock {
                own: jobs.iter().map(|j| j.1).collect(),
                jobs: jobs.into_iter().map(|j| j.0).collect(),
                end,
                speed,
                event: Vec::new(),
                time: Vec::new(),
            });
        }
        // Merge the clocks' marks: each clock's next freeze in a heap, earliest first.
        let mut freezes = Vec::with_capacity(floor.len());
        let mut heap = BinaryHeap::with_capacity(clocks.len());
        let next = |clock: &Clock| {
            let p = clock.event.len();
            let (since, reading) = match p {
                0 => (0.0, 0.0),
                _ => (clock.time[p - 1], clock.end[p - 1]),
            };
            since + (clock.end[p] - reading) / clock.speed[p]
        };
        for (c, clock) in clocks.iter().enumerate() {
            heap.push(Next { time: next(clock), clock: c });
        }
        while let Some(Next { time, clock: c }) = heap.pop() {
            let clock = &mut clocks[c];
            let p = clock.event.len();
            let time = clock.time.last().map_or(time, |&t| time.max(t));
            freezes.push(Freeze { time, job: clock.jobs[p], weight: clock.speed[p] * clock.own[p] });
            clock.event.push(freezes.len() - 1);
            clock.time.push(time);
            if p + 1 < clock.jobs.len() {
                heap.push(Next { time: next(clock), clock: c });
            }
        }
        Some(Trajectory { clocks, freezes, unit, floor, ceiling })
    }

    /// How many freezes the rise has (one per job of the groups).
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

    /// Every job's throughput after the first `j` freezes: the frozen at their ceilings, the
    /// rising at floor plus their rise so far, the rest at their floors.
    pub fn needs(&self, j: usize) -> Vec<f64> {
        let t = self.time(j);
        let mut need = self.floor.to_vec();
        for clock in &self.clocks {
            let (p, reading) = clock.at(j, t);
            for (i, &m) in clock.jobs.iter().enumerate() {
                need[m] = if i < p {
                    self.ceiling[m]
                } else {
                    let rise = reading.clamp(0.0, clock.end[i]);
                    (self.floor[m] + self.unit[m] * rise).min(self.ceiling[m].max(self.floor[m]))
                };
            }
        }
        need
    }

    /// After the first `j` freezes: every job's rate of rise and its weight (0 for jobs not
    /// rising).
    pub fn rates(&self, j: usize) -> (Vec<f64>, Vec<f64>) {
        let t = self.time(j);
        let (mut rate, mut weight) = (vec![0.0; self.floor.len()], vec![0.0; self.floor.len()]);
        for clock in &self.clocks {
            let (p, _) = clock.at(j, t);
            for (i, &m) in clock.jobs.iter().enumerate().skip(p) {
                rate[m] = self.unit[m] * clock.speed[p];
                weight[m] = clock.own[i] * clock.speed[p];
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

    /// A fairness group of weight 2 with jobs of own weights 1 and 3, spans 1 and 6 (in need):
    /// the first freezes when its need rose 1 at rate 2·1/4 (t = 2); the second then rose
    /// 2·3/4·2 = 3 and rises at 2·3/3 = 2: it reaches its ceiling 3 later, at t = 3.5.
    #[test]
    fn a_fairness_group_speeds_up_as_its_jobs_freeze() {
        let groups = [Group { weight: 2.0, share: Share::Fairness, jobs: vec![(0, 1.0), (1, 3.0)] }];
        let (floor, ceiling) = ([0.0, 0.0], [1.0, 6.0]);
        let path = Trajectory::new(&groups, &floor, &ceiling, &[1.0, 1.0]).expect("positive rates");
        assert_eq!(path.freezes(), 2);
        assert_eq!(path.frozen(2), vec![(0, 0.5), (1, 2.0)]);
        assert!((path.time(1) - 2.0).abs() < 1e-12 && (path.time(2) - 3.5).abs() < 1e-12);
        let need = path.needs(1);
        assert!((need[0] - 1.0).abs() < 1e-12 && (need[1] - 3.0).abs() < 1e-12, "{need:?}");
        let (rate, weight) = path.rates(1);
        assert_eq!((rate, weight), (vec![0.0, 2.0], vec![0.0, 2.0]));
    }

    /// Two groups keep their own clocks: a fixed group's job rises at its own weight while a
    /// fairness group beside it speeds up.
    #[test]
    fn groups_interleave() {
        let groups = [
            Group { weight: 1.0, share: Share::Fairness, jobs: vec![(1, 1.0), (0, 1.0)] },
            Group { weight: 9.0, share: Share::Fixed, jobs: vec![(2, 0.5)] },
        ];
        let (floor, ceiling) = ([0.0, 1.0, 0.0], [2.0, 1.5, 2.5]);
        let path = Trajectory::new(&groups, &floor, &ceiling, &[1.0, 1.0, 1.0]).expect("positive rates");
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
}
