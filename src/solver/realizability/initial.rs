//! A first decomposition, without an LP: rounds built greedily from the time each entry still
//! needs, the gang (a job, or a colocated pair) with most time left first (largest remaining
//! processing time), each held as long as no entry in it is done and no gang left out becomes due.
//! When it delivers everything it is the answer; otherwise its configurations seed the column
//! generation.

use super::configuration::Gang;

/// Configurations (entry indices) and their weights, which sum to at most 1.
pub struct Greedy {
    pub columns: Vec<Vec<usize>>,
    pub weights: Vec<f64>,
    /// Per entry: the time the columns supply, at most the time asked.
    pub supplied: Vec<f64>,
}

/// Time below this is done.
const DONE: f64 = 1e-12;

/// At most `max_steps` configurations, over `entries` `(gang, type)`, listed gang by gang, asking `requested[e]`.
/// Entries whose gang does not fit their type are never run; a job runs in one gang at a time.
pub fn greedy(entries: &[(u32, u32)], requested: &[f64], gangs: &[Gang], capacity: &[u32], max_steps: usize) -> Greedy {
    let mut left: Vec<f64> = requested.to_vec();
    for (e, &(g, w)) in entries.iter().enumerate() {
        if gangs[g as usize].gpus > capacity[w as usize] {
            left[e] = 0.0;
        }
    }
    let of_gang = EntriesOfGang::new(entries, gangs.len());
    let gpus = |g: u32| gangs[g as usize].gpus;
    let mut columns = Vec::new();
    let mut weights = Vec::new();
    let mut time = 0.0;
    let gang_left = |g: u32, left: &[f64]| left[of_gang.of(g)].iter().sum::<f64>();
    // Per gang: its time left; `order`: the gangs with time left as `rank` keys, most first.
    let mut remaining: Vec<f64> = (0..gangs.len() as u32).map(|g| gang_left(g, &left)).collect();
    let mut order: Vec<u128> = (0..gangs.len() as u32)
        .filter(|&g| remaining[g as usize] > DONE)
        .map(|g| rank(remaining[g as usize], gpus(g), g))
        .collect();
    order.sort_unstable();
    let mut ranked: Vec<u128> = Vec::new();
    let mut moved = vec![false; gangs.len()];
    let mut merged: Vec<u128> = Vec::with_capacity(order.len());
    // Per job: whether the configuration being built runs it; per entry: whether it is in it.
    let mut running = vec![false; Gang::jobs_spanned(gangs)];
    let mut chosen = vec![false; entries.len()];
    // The entries of the configuration being built, in the order's order; until then, the last
    // one's: only its gangs' time left changed.
    let mut picked: Vec<usize> = Vec::new();
    while columns.len() < max_steps && time < 1.0 - DONE {
        if !picked.is_empty() {
            ranked.clear();
            for g in picked.iter().map(|&e| entries[e].0) {
                remaining[g as usize] = gang_left(g, &left);
                moved[g as usize] = true;
                if remaining[g as usize] > DONE {
                    ranked.push(rank(remaining[g as usize], gpus(g), g));
                }
            }
            // Nearly sorted already (each ran the same step), which a merge sort finds in one pass.
            ranked.sort();
            merge_unmoved(&order, &ranked, &moved, &mut merged);
            std::mem::swap(&mut order, &mut merged);
            for &e in &picked {
                moved[entries[e].0 as usize] = false;
            }
        }
        if order.is_empty() {
            break;
        }
        // Per type: the GPU-time still asked of it, over the GPU-time left.
        let mut load = vec![0.0; capacity.len()];
        for &key in &order {
            let g = key as u32;
            for e in of_gang.of(g) {
                load[entries[e].1 as usize] += gpus(g) as f64 * left[e];
            }
        }
        let pressure: Vec<f64> =
            load.iter().zip(capacity).map(|(&l, &c)| if c > 0 { l / (c as f64 * (1.0 - time)) } else { 0.0 }).collect();
        let mut free: Vec<u32> = capacity.to_vec();
        picked.clear();
        let mut step = 1.0 - time;
        let mut due_outside = f64::INFINITY;
        for &key in &order {
            let g = key as u32;
            let gang = &gangs[g as usize];
            let sf = gang.gpus;
            // On the type under most pressure, then where it needs most time.
            let pick = if gang.jobs().iter().any(|&m| running[m as usize]) {
                None
            } else {
                of_gang.of(g).filter(|&e| left[e] > DONE && sf <= free[entries[e].1 as usize]).max_by(|&a, &b| {
                    let (wa, wb) = (entries[a].1 as usize, entries[b].1 as usize);
                    pressure[wa].total_cmp(&pressure[wb]).then(left[a].total_cmp(&left[b])).then(b.cmp(&a))
                })
            };
            match pick {
                Some(e) => {
                    free[entries[e].1 as usize] -= sf;
                    for &m in gang.jobs() {
                        running[m as usize] = true;
                    }
                    step = step.min(left[e]);
                    picked.push(e);
                }
                // A gang left out must still fit in the time that will be left.
                None => due_outside = due_outside.min(1.0 - time - remaining[g as usize]),
            }
        }
        if picked.is_empty() {
            break;
        }
        if due_outside > DONE {
            step = step.min(due_outside);
        }
        // A type with idle GPUs this round must still fit what is asked of it in the time left.
        for (w, &idle) in free.iter().enumerate() {
            let slack = capacity[w] as f64 * (1.0 - time) - load[w];
            if idle > 0 && slack > DONE {
                step = step.min(slack / idle as f64);
            }
        }
        for &e in &picked {
            left[e] = (left[e] - step).max(0.0);
            let g = entries[e].0;
            for &m in gangs[g as usize].jobs() {
                running[m as usize] = false;
            }
            chosen[e] = true;
        }
        time += step;
        // The column in entry order, read off the marks (a sort of the picks costs more).
        let mut column = Vec::with_capacity(picked.len());
        for (e, mark) in chosen.iter_mut().enumerate() {
            if std::mem::take(mark) {
                column.push(e);
            }
        }
        columns.push(column);
        weights.push(step);
    }
    let mut supplied = vec![0.0; entries.len()];
    for (column, &weight) in columns.iter().zip(&weights) {
        for &e in column {
            supplied[e] += weight;
        }
    }
    Greedy { columns, weights, supplied }
}

/// Each gang's entries: a range, since `check` lists the entries gang by gang.
struct EntriesOfGang {
    /// Gang `g`'s entries are `start[g]..start[g + 1]`.
    start: Vec<usize>,
}

impl EntriesOfGang {
    fn new(entries: &[(u32, u32)], gangs: usize) -> EntriesOfGang {
        debug_assert!(entries.windows(2).all(|p| p[0].0 <= p[1].0), "entries are listed gang by gang");
        let mut start = vec![0usize; gangs + 1];
        for &(g, _) in entries {
            start[g as usize + 1] += 1;
        }
        for g in 0..gangs {
            start[g + 1] += start[g];
        }
        EntriesOfGang { start }
    }

    fn of(&self, g: u32) -> std::ops::Range<usize> {
        self.start[g as usize]..self.start[g as usize + 1]
    }
}

/// Gang `g`'s place in the order as one integer, smallest first: most time left, then most GPUs,
/// then the lowest index (a total order, so keeping it sorted step by step gives the order a
/// sort afresh would). Times compare as `f64::total_cmp` does.
fn rank(remaining: f64, gpus: u32, g: u32) -> u128 {
    let bits = remaining.to_bits() as i64;
    let ordered = (bits ^ ((((bits >> 63) as u64) >> 1) as i64)) as u64 ^ (1 << 63);
    ((!ordered as u128) << 64) | (((!gpus) as u128) << 32) | g as u128
}

/// `out`: the sorted union of the keys of `order` whose gang has not `moved` and of `ranked`.
fn merge_unmoved(order: &[u128], ranked: &[u128], moved: &[bool], out: &mut Vec<u128>) {
    out.clear();
    let mut j = 0;
    for &key in order {
        if moved[key as u32 as usize] {
            continue;
        }
        while j < ranked.len() && ranked[j] < key {
            out.push(ranked[j]);
            j += 1;
        }
        out.push(key);
    }
    out.extend_from_slice(&ranked[j..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_orders_as_most_time_left_then_most_gpus_then_lowest_index() {
        let times = [0.0, -0.0, 1e-300, 0.25, 0.5, 0.5, 1.0, f64::MIN_POSITIVE, 3.0];
        let mut gangs: Vec<(f64, u32, u32)> = Vec::new();
        for (i, &t) in times.iter().enumerate() {
            for gpus in [1, 2, 8] {
                gangs.push((t, gpus, (i as u32 * 7 + gpus) % 11 + 100 * i as u32));
            }
        }
        let mut by_rank = gangs.clone();
        by_rank.sort_by_key(|&(t, gpus, g)| rank(t, gpus, g));
        let mut by_fields = gangs;
        by_fields.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
        assert_eq!(by_rank.iter().map(|x| x.2).collect::<Vec<_>>(), by_fields.iter().map(|x| x.2).collect::<Vec<_>>());
        assert!(rank(0.5, 1, 0) < rank(0.25, 8, 0), "more time left comes first");
        assert!(rank(0.5, 2, 9) < rank(0.5, 1, 0), "then more GPUs");
        assert!(rank(0.5, 2, 3) < rank(0.5, 2, 4), "then the lower index");
    }

    #[test]
    fn a_column_lists_its_entries_in_order_and_each_job_once() {
        // Three single jobs of 1 GPU and a pair of jobs 0 and 1 on one type of 2 GPUs.
        let gangs = vec![Gang::single(0, 1), Gang::single(1, 1), Gang::single(2, 1), Gang::pair([0, 1], 1)];
        let entries = [(0, 0), (1, 0), (2, 0), (3, 0)];
        let requested = [0.5, 0.25, 0.5, 0.5];
        let g = greedy(&entries, &requested, &gangs, &[2], 64);
        for column in &g.columns {
            assert!(column.windows(2).all(|p| p[0] < p[1]), "{column:?}");
            let mut jobs: Vec<u32> =
                column.iter().flat_map(|&e| gangs[entries[e].0 as usize].jobs().to_vec()).collect();
            let n = jobs.len();
            jobs.sort_unstable();
            jobs.dedup();
            assert_eq!(jobs.len(), n, "a job twice in {column:?}");
            assert!(column.len() <= 2, "more GPUs than the type has: {column:?}");
        }
        assert!(g.weights.iter().sum::<f64>() <= 1.0 + 1e-12);
        for (e, (&s, &x)) in g.supplied.iter().zip(&requested).enumerate() {
            assert!(s <= x + 1e-12, "entry {e}: {s} supplied of {x}");
        }
        assert!(g.supplied.iter().sum::<f64>() > 1.0, "{:?}", g.supplied);
    }
}
