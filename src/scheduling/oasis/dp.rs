//! The dynamic program over slots (the paper's `DP_COST`): given what `w` workers (with their
//! parameter servers) cost in each slot, the cheapest way to supply `K` worker-slots by the end
//! of each slot. One pass gives every candidate completion slot at once: the table after slot
//! `t` is the paper's `DP_COST` for completion slot `t`. Knows nothing of prices or servers.

/// The table after every slot of a window and how each entry was reached.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotDp {
    need: usize,
    /// `best[s]`: the least cost of `K` worker-slots within the window's first `s + 1` slots.
    best: Vec<f64>,
    /// `from[s][k]`: `(k_before, w)` — the worker-slots done before slot `s` and the workers
    /// in slot `s` on the cheapest way to have `k` done (capped at `K`) after it.
    from: Vec<Vec<(u32, u32)>>,
}

impl SlotDp {
    /// `costs[s][w]`: what `w` workers cost in the window's slot `s` (`w` up to the table's
    /// length − 1; `f64::INFINITY` where they do not fit). `need` is `K`.
    pub fn solve(costs: &[Vec<f64>], need: u64) -> SlotDp {
        let need = need as usize;
        let mut done = vec![f64::INFINITY; need + 1];
        done[0] = 0.0;
        let mut best = Vec::with_capacity(costs.len());
        let mut from = Vec::with_capacity(costs.len());
        for slot_cost in costs {
            let mut next = vec![f64::INFINITY; need + 1];
            let mut way = vec![(0u32, 0u32); need + 1];
            // Most work done before first: among equal costs, work is done as early as it can be.
            for (k, &before) in done.iter().enumerate().rev() {
                if !before.is_finite() {
                    continue;
                }
                for (w, &c) in slot_cost.iter().enumerate() {
                    let total = before + c;
                    let after = (k + w).min(need);
                    if total < next[after] {
                        next[after] = total;
                        way[after] = (k as u32, w as u32);
                    }
                }
            }
            best.push(next[need]);
            from.push(way);
            done = next;
        }
        SlotDp { need, best, from }
    }

    /// The least cost of finishing by the window's slot `s` (infinite if it cannot).
    pub fn cost_by(&self, s: usize) -> f64 {
        self.best.get(s).copied().unwrap_or(f64::INFINITY)
    }

    /// The workers in each of the window's slots `0..=s` on the cheapest way to finish by `s`.
    pub fn workers_by(&self, s: usize) -> Option<Vec<u32>> {
        if !self.cost_by(s).is_finite() {
            return None;
        }
        let mut workers = vec![0; s + 1];
        let mut k = self.need;
        for slot in (0..=s).rev() {
            let (before, w) = self.from[slot][k];
            workers[slot] = w;
            k = before as usize;
        }
        Some(workers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: f64 = f64::INFINITY;

    /// Three slots, at most 2 workers a slot, 3 worker-slots needed. Slot 0 is dear, slot 1
    /// cheap but holds one worker, slot 2 cheap.
    ///   by slot 0: impossible (2 < 3);
    ///   by slot 1: 2 in slot 0 (5) + 1 in slot 1 (1) = 6;
    ///   by slot 2: 1 in slot 1 (1) + 2 in slot 2 (3) = 4.
    #[test]
    fn the_cheapest_split_for_every_completion_slot() {
        let costs = vec![vec![0.0, 3.0, 5.0], vec![0.0, 1.0, INF], vec![0.0, 1.0, 3.0]];
        let dp = SlotDp::solve(&costs, 3);
        assert_eq!(dp.cost_by(0), INF);
        assert_eq!(dp.workers_by(0), None);
        assert_eq!(dp.cost_by(1), 6.0);
        assert_eq!(dp.workers_by(1).unwrap(), vec![2, 1]);
        assert_eq!(dp.cost_by(2), 4.0);
        assert_eq!(dp.workers_by(2).unwrap(), vec![0, 1, 2]);
    }

    /// Economies of scale (a parameter server shared by two workers) make 2 workers in one slot
    /// cheaper than 1 in each of two.
    #[test]
    fn a_concave_cost_packs_workers_into_one_slot() {
        let costs = vec![vec![0.0, 3.0, 4.0], vec![0.0, 3.0, 4.0]];
        let dp = SlotDp::solve(&costs, 2);
        assert_eq!(dp.cost_by(1), 4.0);
        assert_eq!(dp.workers_by(1).unwrap(), vec![2, 0]);
    }

    /// More than needed in the last slot (capped at K) is allowed when it is cheaper.
    #[test]
    fn overshooting_the_workload_is_capped() {
        let costs = vec![vec![0.0, 5.0, 2.0]];
        let dp = SlotDp::solve(&costs, 1);
        assert_eq!(dp.cost_by(0), 2.0);
        assert_eq!(dp.workers_by(0).unwrap(), vec![2]);
    }
}
