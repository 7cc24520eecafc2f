//! The greedy placement of one slot (the paper's `COST_t`): with the prices fixed for the job
//! being decided, `n` workers (or parameter servers) cost least on the servers of least unit
//! cost, each filled to what is free on it. Not for choosing `n` (`dp.rs`).

use super::cluster::Pool;
use super::price::PriceFunction;
use super::resources::ResourceVector;

/// One pool in one slot, for one job's demand: the servers that can take at least one copy,
/// cheapest first, and what the cheapest `n` copies cost for every `n` up to a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotOffer {
    /// `(server, copies that fit, unit cost)`, by unit cost then server index.
    servers: Vec<(usize, u32, f64)>,
    /// `cost[n]`: the cheapest `n` copies; its length is one more than the most that fit (up to
    /// the limit).
    cost: Vec<f64>,
}

impl SlotOffer {
    pub fn new(pool: &Pool, prices: &PriceFunction, slot: usize, demand: &ResourceVector, limit: u32) -> SlotOffer {
        let amounts = demand.amounts();
        let mut servers: Vec<(usize, u32, f64)> = (0..pool.servers())
            .filter_map(|h| {
                let fit = demand.copies_in(&pool.free(slot, h)).min(limit);
                (fit > 0).then(|| (h, fit, prices.unit_cost(&amounts, pool.used(slot, h), &pool.capacity[h])))
            })
            .collect();
        servers.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)));
        let mut cost = vec![0.0];
        let mut total = 0.0;
        'fill: for &(_, fit, unit) in &servers {
            for _ in 0..fit {
                if cost.len() > limit as usize {
                    break 'fill;
                }
                total += unit;
                cost.push(total);
            }
        }
        SlotOffer { servers, cost }
    }

    /// What the cheapest `n` copies cost; `None` if fewer than `n` fit.
    pub fn cost(&self, n: u32) -> Option<f64> {
        self.cost.get(n as usize).copied()
    }

    /// The most copies that fit (up to the limit).
    pub fn most(&self) -> u32 {
        (self.cost.len() - 1) as u32
    }

    /// Where the cheapest `n` copies go: `(server, copies)`, cheapest server first; `None` if
    /// fewer than `n` fit.
    pub fn place(&self, n: u32) -> Option<Vec<(usize, u32)>> {
        if n > self.most() {
            return None;
        }
        let mut left = n;
        let mut placed = Vec::new();
        for &(server, fit, _) in &self.servers {
            if left == 0 {
                break;
            }
            let take = fit.min(left);
            placed.push((server, take));
            left -= take;
        }
        Some(placed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::oasis::resources::ResourceVector;

    /// Three servers of 2 GPUs; server 1 already has 1 GPU taken, server 2 is empty but larger
    /// in CPU so the same use is a smaller share.
    #[test]
    fn workers_go_to_the_cheapest_servers_first() {
        let servers =
            [ResourceVector::new(2, 4, 0, 0), ResourceVector::new(2, 4, 0, 0), ResourceVector::new(4, 8, 0, 0)];
        let mut pool = Pool::new(&servers, 1);
        pool.commit(0, 0, &ResourceVector::new(1, 0, 0, 0), 1).unwrap(); // server 0: 1 of 2 GPUs
        pool.commit(0, 2, &ResourceVector::new(1, 0, 0, 0), 1).unwrap(); // server 2: 1 of 4 GPUs
                                                                         // L/2η = 1; a GPU costs 1·16^{g/c}, a core 1·1^{g/c} = 1 (U = L/2η).
        let prices = PriceFunction { lower: [2.0; 4], upper: [16.0, 1.0, 1.0, 1.0], eta: 1.0 };
        let worker = ResourceVector::new(1, 1, 0, 0);
        let offer = SlotOffer::new(&pool, &prices, 0, &worker, 10);
        let unit = |h: usize| prices.unit_cost(&worker.amounts(), pool.used(0, h), &pool.capacity[h]);
        // By hand: server 1 has nothing used: 1 + 1; server 2 has 1/4 of its GPUs: 16^{1/4} + 1;
        // server 0 half of them: 16^{1/2} + 1.
        assert!((unit(1) - 2.0).abs() < 1e-12);
        assert!((unit(2) - 3.0).abs() < 1e-12);
        assert!((unit(0) - 5.0).abs() < 1e-12);
        // server 1 (nothing used) is cheapest, then server 2 (1/4 of its GPUs), then server 0 (1/2).
        assert!(unit(1) < unit(2) && unit(2) < unit(0));
        assert_eq!(offer.most(), 6); // 2 + 3 + 1 free GPUs
        assert_eq!(offer.place(4).unwrap(), vec![(1, 2), (2, 2)]);
        assert_eq!(offer.place(6).unwrap(), vec![(1, 2), (2, 3), (0, 1)]);
        assert!(offer.place(7).is_none());
        assert!((offer.cost(4).unwrap() - 10.0).abs() < 1e-12); // 2·2 + 2·3
        assert!((offer.cost(6).unwrap() - 18.0).abs() < 1e-12); // 2·2 + 3·3 + 5
        assert_eq!(offer.cost(7), None);
    }
}
