//! Pricing for the column generation: given a value per (job, worker type) entry (the master's
//! duals), the round configuration of greatest total value. Per type it is a knapsack (scale
//! factors into the type's GPUs), solved exactly by dynamic programming over jobs grouped by
//! scale factor; a job chosen on two types is resolved by branch and bound over the types it may
//! keep, the per-type knapsacks being the bound.

/// Values below this are taken as 0: a job with no value is never worth a GPU in pricing.
const VALUE_TOL: f64 = 1e-12;

/// The configurations' search space: entries `(job, type)`, jobs' scale factors, types' GPUs.
pub struct Pricing<'a> {
    entries: &'a [(u32, u32)],
    scale_factors: &'a [u32],
    capacity: &'a [u32],
    /// Per type: its entries whose gang fits the type at all.
    by_type: Vec<Vec<usize>>,
    /// Per entry: the time asked of it, to fill spare GPUs with the entries that need most.
    requested: &'a [f64],
}

/// The best configuration found, as entry indices, and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub value: f64,
    pub entries: Vec<usize>,
}

/// A pricing answer: a column worth more than the threshold (if one was found) and an upper
/// bound on the value of every configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Priced {
    pub column: Option<Column>,
    pub bound: f64,
}

/// One type's best set: its value and entries.
struct Knapsack {
    value: f64,
    entries: Vec<usize>,
}

impl<'a> Pricing<'a> {
    pub fn new(
        entries: &'a [(u32, u32)],
        scale_factors: &'a [u32],
        capacity: &'a [u32],
        requested: &'a [f64],
    ) -> Pricing<'a> {
        let mut by_type = vec![Vec::new(); capacity.len()];
        for (e, &(m, w)) in entries.iter().enumerate() {
            if scale_factors[m as usize] <= capacity[w as usize] {
                by_type[w as usize].push(e);
            }
        }
        Pricing { entries, scale_factors, capacity, by_type, requested }
    }

    /// The configuration of greatest `Σ value[e]` if it is worth more than `threshold`, else
    /// `None` once no configuration is (exact), or once `node_budget` branch-and-bound nodes are
    /// spent (then `bound` is the largest bound of a subtree left open, above the threshold).
    pub fn price(&self, value: &[f64], threshold: f64, node_budget: usize) -> Priced {
        let mut forbidden = vec![false; self.entries.len()];
        let root = self.relaxation(value, &forbidden);
        let bound = root.iter().map(|k| k.value).sum::<f64>();
        if bound <= threshold {
            return Priced { column: None, bound };
        }
        let mut conflicts = self.conflicts(value, &root);
        if conflicts.is_empty() {
            let column = self.complete(value, root.into_iter().flat_map(|k| k.entries).collect());
            return Priced { column: Some(column), bound };
        }
        // Fix and re-solve: a shared job keeps the type where it is worth most, the knapsacks run
        // again without its other entries, until no job is shared.
        let mut sets = root;
        while !conflicts.is_empty() {
            for (_, shared) in &conflicts {
                let keep = shared.iter().copied().max_by(|&a, &b| value[a].total_cmp(&value[b]).then(b.cmp(&a)));
                for &e in shared {
                    forbidden[e] = Some(e) != keep;
                }
            }
            sets = self.relaxation(value, &forbidden);
            conflicts = self.conflicts(value, &sets);
        }
        let fixed = self.complete(value, sets.into_iter().flat_map(|k| k.entries).collect());
        if fixed.value > threshold {
            return Priced { column: Some(fixed), bound };
        }
        self.branch_and_bound(value, threshold.max(fixed.value), bound, node_budget)
    }

    /// Best-first branch and bound: a node forbids entries, its per-type knapsacks bound its
    /// subtree, and a job chosen on several types keeps one of them in each child.
    fn branch_and_bound(&self, value: &[f64], floor: f64, root_bound: f64, node_budget: usize) -> Priced {
        let mut open = std::collections::BinaryHeap::new();
        open.push(Node { bound: root_bound, forbidden: Vec::new() });
        let mut mask = vec![false; self.entries.len()];
        let mut nodes = 0;
        while let Some(node) = open.pop() {
            if node.bound <= floor {
                break;
            }
            if nodes >= node_budget {
                return Priced { column: None, bound: node.bound };
            }
            nodes += 1;
            for &e in &node.forbidden {
                mask[e] = true;
            }
            let sets = self.relaxation(value, &mask);
            for &e in &node.forbidden {
                mask[e] = false;
            }
            let node_value: f64 = sets.iter().map(|k| k.value).sum();
            if node_value <= floor {
                continue;
            }
            let conflicts = self.conflicts(value, &sets);
            let Some((_, shared)) = conflicts.first() else {
                let column = self.complete(value, sets.into_iter().flat_map(|k| k.entries).collect());
                return Priced { column: Some(column), bound: root_bound };
            };
            for &keep in shared {
                let mut forbidden = node.forbidden.clone();
                forbidden.extend(shared.iter().copied().filter(|&e| e != keep));
                open.push(Node { bound: node_value, forbidden });
            }
        }
        Priced { column: None, bound: floor }
    }

    /// Per type, the best set ignoring that a job runs on one type only (`forbidden` entries out).
    fn relaxation(&self, value: &[f64], forbidden: &[bool]) -> Vec<Knapsack> {
        (0..self.capacity.len())
            .map(|w| {
                let items: Vec<(u32, f64, usize)> = self.by_type[w]
                    .iter()
                    .filter(|&&e| value[e] > VALUE_TOL && !forbidden[e])
                    .map(|&e| (self.scale_factors[self.entries[e].0 as usize], value[e], e))
                    .collect();
                knapsack(self.capacity[w], items)
            })
            .collect()
    }

    /// Jobs chosen on more than one type, with the entries they were chosen by.
    fn conflicts(&self, value: &[f64], sets: &[Knapsack]) -> Vec<(u32, Vec<usize>)> {
        let mut chosen: Vec<(u32, usize)> =
            sets.iter().flat_map(|k| k.entries.iter().map(|&e| (self.entries[e].0, e))).collect();
        chosen.sort_unstable();
        let mut out: Vec<(u32, Vec<usize>)> = Vec::new();
        for group in chosen.chunk_by(|a, b| a.0 == b.0) {
            if group.len() > 1 {
                out.push((group[0].0, group.iter().map(|&(_, e)| e).collect()));
            }
        }
        // The most valuable conflict first: branching on it moves the bound most.
        let worth = |es: &Vec<usize>| es.iter().map(|&e| value[e]).sum::<f64>();
        out.sort_by(|a, b| worth(&b.1).total_cmp(&worth(&a.1)).then(a.0.cmp(&b.0)));
        out
    }

    /// A column made maximal: GPUs it leaves free go to jobs it does not run (with no value now,
    /// most time asked first), which costs nothing and supplies entries later iterations price.
    fn complete(&self, value: &[f64], mut chosen: Vec<usize>) -> Column {
        let mut running = vec![false; self.scale_factors.len()];
        let mut free: Vec<u64> = self.capacity.iter().map(|&c| c as u64).collect();
        for &e in &chosen {
            let (m, w) = self.entries[e];
            running[m as usize] = true;
            free[w as usize] -= self.scale_factors[m as usize] as u64;
        }
        let mut rest: Vec<usize> = (0..self.entries.len()).filter(|&e| !running[self.entries[e].0 as usize]).collect();
        rest.sort_by(|&a, &b| self.requested[b].total_cmp(&self.requested[a]).then(a.cmp(&b)));
        for e in rest {
            let (m, w) = self.entries[e];
            let sf = self.scale_factors[m as usize] as u64;
            if !running[m as usize] && sf <= free[w as usize] {
                running[m as usize] = true;
                free[w as usize] -= sf;
                chosen.push(e);
            }
        }
        chosen.sort_unstable();
        Column { value: chosen.iter().map(|&e| value[e]).sum(), entries: chosen }
    }
}

/// A subtree of the branch and bound: the entries it forbids, and its parent's bound.
struct Node {
    bound: f64,
    forbidden: Vec<usize>,
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        self.bound.total_cmp(&other.bound).is_eq()
    }
}
impl Eq for Node {}
impl PartialOrd for Node {
    fn partial_cmp(&self, other: &Node) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Node {
    fn cmp(&self, other: &Node) -> std::cmp::Ordering {
        self.bound.total_cmp(&other.bound)
    }
}

/// 0/1 knapsack of `(scale factor, value, entry)` items into `capacity` GPUs, exact. Items of one
/// scale factor are interchangeable but for their values, so the best `k` of them are the `k`
/// most valuable: a dynamic program over scale factors and GPUs used, choosing how many of each.
fn knapsack(capacity: u32, mut items: Vec<(u32, f64, usize)>) -> Knapsack {
    let total: u64 = items.iter().map(|i| i.0 as u64).sum();
    if total <= capacity as u64 {
        let value = items.iter().map(|i| i.1).sum();
        return Knapsack { value, entries: items.into_iter().map(|i| i.2).collect() };
    }
    items.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
    let cap = capacity as usize;
    let mut best = vec![0.0f64; cap + 1];
    let mut choices: Vec<Vec<u32>> = Vec::new();
    let groups: Vec<&[(u32, f64, usize)]> = items.chunk_by(|a, b| a.0 == b.0).collect();
    for group in &groups {
        let s = group[0].0 as usize;
        let mut prefix = Vec::with_capacity(group.len() + 1);
        prefix.push(0.0);
        for item in group.iter() {
            prefix.push(prefix.last().copied().unwrap_or(0.0) + item.1);
        }
        let mut next = best.clone();
        let mut choice = vec![0u32; cap + 1];
        for c in s..=cap {
            let most = group.len().min(c / s);
            for k in 1..=most {
                let v = best[c - k * s] + prefix[k];
                if v > next[c] {
                    next[c] = v;
                    choice[c] = k as u32;
                }
            }
        }
        best = next;
        choices.push(choice);
    }
    let mut entries = Vec::new();
    let mut c = cap;
    for (group, choice) in groups.iter().zip(&choices).rev() {
        let k = choice[c] as usize;
        entries.extend(group[..k].iter().map(|i| i.2));
        c -= k * group[0].0 as usize;
    }
    Knapsack { value: best[cap], entries }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subset, for small instances.
    fn brute(capacity: u32, items: &[(u32, f64, usize)]) -> f64 {
        let mut best: f64 = 0.0;
        for set in 0u32..(1 << items.len()) {
            let (mut used, mut value) = (0, 0.0);
            for (i, item) in items.iter().enumerate() {
                if set >> i & 1 == 1 {
                    used += item.0;
                    value += item.1;
                }
            }
            if used <= capacity {
                best = best.max(value);
            }
        }
        best
    }

    #[test]
    fn knapsack_matches_every_subset() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        for _ in 0..300 {
            let capacity = 1 + next() % 9;
            let n = 1 + next() as usize % 10;
            let items: Vec<(u32, f64, usize)> =
                (0..n).map(|i| ([1, 1, 2, 4, 3][next() as usize % 5], (next() % 1000) as f64 / 100.0, i)).collect();
            let k = knapsack(capacity, items.clone());
            let used: u32 = k.entries.iter().map(|&e| items[e].0).sum();
            let value: f64 = k.entries.iter().map(|&e| items[e].1).sum();
            assert!(used <= capacity);
            assert!((value - k.value).abs() < 1e-9);
            assert!((k.value - brute(capacity, &items)).abs() < 1e-9, "{capacity} {items:?}");
        }
    }
}
