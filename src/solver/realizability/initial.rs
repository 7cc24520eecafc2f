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

/// At most `max_steps` configurations, over `entries` `(gang, type)` asking `requested[e]`.
/// Entries whose gang does not fit their type are never run; a job runs in one gang at a time.
pub fn greedy(entries: &[(u32, u32)], requested: &[f64], gangs: &[Gang], capacity: &[u32], max_steps: usize) -> Greedy {
    let jobs = Gang::jobs_spanned(gangs);
    let mut left: Vec<f64> = requested.to_vec();
    for (e, &(g, w)) in entries.iter().enumerate() {
        if gangs[g as usize].gpus > capacity[w as usize] {
            left[e] = 0.0;
        }
    }
    // Per gang: its entries.
    let mut of_gang: Vec<Vec<usize>> = vec![Vec::new(); gangs.len()];
    for (e, &(g, _)) in entries.iter().enumerate() {
        of_gang[g as usize].push(e);
    }
    let gpus = |g: u32| gangs[g as usize].gpus;
    let mut columns = Vec::new();
    let mut weights = Vec::new();
    let mut time = 0.0;
    let gang_left = |g: u32, left: &[f64]| of_gang[g as usize].iter().map(|&e| left[e]).sum::<f64>();
    // Per gang: its time left; `order`: the gangs with time left, most first (then larger gangs,
    // then by index: a total order, so keeping it sorted step by step gives the order a sort
    // afresh would).
    let mut remaining: Vec<f64> = (0..gangs.len() as u32).map(|g| gang_left(g, &left)).collect();
    let mut order: Vec<u32> = (0..gangs.len() as u32).filter(|&g| remaining[g as usize] > DONE).collect();
    order.sort_by(|&a, &b| most_left_first(&remaining, gangs, a, b));
    // The gangs the last configuration ran: only their time left changed.
    let mut ran: Vec<u32> = Vec::new();
    let mut moved = vec![false; gangs.len()];
    let mut merged: Vec<u32> = Vec::with_capacity(order.len());
    while columns.len() < max_steps && time < 1.0 - DONE {
        if !ran.is_empty() {
            for &g in &ran {
                remaining[g as usize] = gang_left(g, &left);
                moved[g as usize] = true;
            }
            order.retain(|&g| !moved[g as usize]);
            for &g in &ran {
                moved[g as usize] = false;
            }
            ran.retain(|&g| remaining[g as usize] > DONE);
            ran.sort_by(|&a, &b| most_left_first(&remaining, gangs, a, b));
            merge(&order, &ran, &mut merged, |a, b| most_left_first(&remaining, gangs, a, b));
            std::mem::swap(&mut order, &mut merged);
            ran.clear();
        }
        if order.is_empty() {
            break;
        }
        // Per type: the GPU-time still asked of it, over the GPU-time left.
        let mut load = vec![0.0; capacity.len()];
        for &g in &order {
            for &e in &of_gang[g as usize] {
                load[entries[e].1 as usize] += gpus(g) as f64 * left[e];
            }
        }
        let pressure: Vec<f64> =
            load.iter().zip(capacity).map(|(&l, &c)| if c > 0 { l / (c as f64 * (1.0 - time)) } else { 0.0 }).collect();
        let mut free: Vec<u32> = capacity.to_vec();
        let mut running = vec![false; jobs];
        let mut column = Vec::with_capacity(columns.last().map_or(0, Vec::len));
        let mut step = 1.0 - time;
        let mut due_outside = f64::INFINITY;
        for &g in &order {
            let gang = &gangs[g as usize];
            let sf = gang.gpus;
            // On the type under most pressure, then where it needs most time.
            let pick = if gang.jobs().iter().any(|&m| running[m as usize]) {
                None
            } else {
                of_gang[g as usize]
                    .iter()
                    .copied()
                    .filter(|&e| left[e] > DONE && sf <= free[entries[e].1 as usize])
                    .max_by(|&a, &b| {
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
                    column.push(e);
                }
                // A gang left out must still fit in the time that will be left.
                None => due_outside = due_outside.min(1.0 - time - remaining[g as usize]),
            }
        }
        if column.is_empty() {
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
        for &e in &column {
            left[e] = (left[e] - step).max(0.0);
            ran.push(entries[e].0);
        }
        time += step;
        column.sort_unstable();
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

/// Gang `a` before gang `b`: more time left, then more GPUs, then the lower index.
fn most_left_first(remaining: &[f64], gangs: &[Gang], a: u32, b: u32) -> std::cmp::Ordering {
    let gpus = |g: u32| gangs[g as usize].gpus;
    remaining[b as usize].total_cmp(&remaining[a as usize]).then(gpus(b).cmp(&gpus(a))).then(a.cmp(&b))
}

/// `out`: the sorted union of two sorted lists.
fn merge(a: &[u32], b: &[u32], out: &mut Vec<u32>, mut before: impl FnMut(u32, u32) -> std::cmp::Ordering) {
    out.clear();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if before(b[j], a[i]).is_lt() {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}
