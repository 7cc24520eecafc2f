//! A first decomposition, without an LP: rounds built greedily from the time each entry still
//! needs, the job with most time left first (largest remaining processing time), each held as long
//! as no entry in it is done and no job left out becomes due. When it delivers everything it is
//! the answer; otherwise its configurations seed the column generation.

/// Configurations (entry indices) and their weights, which sum to at most 1.
pub struct Greedy {
    pub columns: Vec<Vec<usize>>,
    pub weights: Vec<f64>,
    /// Per entry: the time the columns supply, at most the time asked.
    pub supplied: Vec<f64>,
}

/// Time below this is done.
const DONE: f64 = 1e-12;

/// At most `max_steps` configurations, over `entries` `(job, type)` asking `requested[e]`.
/// Entries whose gang does not fit their type are never run.
pub fn greedy(
    entries: &[(u32, u32)],
    requested: &[f64],
    scale_factors: &[u32],
    capacity: &[u32],
    max_steps: usize,
) -> Greedy {
    let jobs = scale_factors.len();
    let mut left: Vec<f64> = requested.to_vec();
    for (e, &(m, w)) in entries.iter().enumerate() {
        if scale_factors[m as usize] > capacity[w as usize] {
            left[e] = 0.0;
        }
    }
    // Per job: its entries.
    let mut of_job: Vec<Vec<usize>> = vec![Vec::new(); jobs];
    for (e, &(m, _)) in entries.iter().enumerate() {
        of_job[m as usize].push(e);
    }
    let mut columns = Vec::new();
    let mut weights = Vec::new();
    let mut time = 0.0;
    let mut order: Vec<u32> = (0..jobs as u32).filter(|&m| !of_job[m as usize].is_empty()).collect();
    while columns.len() < max_steps && time < 1.0 - DONE {
        let job_left = |m: u32| of_job[m as usize].iter().map(|&e| left[e]).sum::<f64>();
        let mut remaining: Vec<f64> = vec![0.0; jobs];
        order.retain(|&m| {
            remaining[m as usize] = job_left(m);
            remaining[m as usize] > DONE
        });
        if order.is_empty() {
            break;
        }
        order.sort_by(|&a, &b| {
            remaining[b as usize]
                .total_cmp(&remaining[a as usize])
                .then(scale_factors[b as usize].cmp(&scale_factors[a as usize]))
                .then(a.cmp(&b))
        });
        // Per type: the GPU-time still asked of it, over the GPU-time left.
        let mut load = vec![0.0; capacity.len()];
        for &m in &order {
            for &e in &of_job[m as usize] {
                load[entries[e].1 as usize] += scale_factors[m as usize] as f64 * left[e];
            }
        }
        let pressure: Vec<f64> =
            load.iter().zip(capacity).map(|(&l, &c)| if c > 0 { l / (c as f64 * (1.0 - time)) } else { 0.0 }).collect();
        let mut free: Vec<u32> = capacity.to_vec();
        let mut column = Vec::new();
        let mut step = 1.0 - time;
        let mut due_outside = f64::INFINITY;
        for &m in &order {
            let sf = scale_factors[m as usize];
            // On the type under most pressure, then where it needs most time.
            let pick = of_job[m as usize]
                .iter()
                .copied()
                .filter(|&e| left[e] > DONE && sf <= free[entries[e].1 as usize])
                .max_by(|&a, &b| {
                    let (wa, wb) = (entries[a].1 as usize, entries[b].1 as usize);
                    pressure[wa].total_cmp(&pressure[wb]).then(left[a].total_cmp(&left[b])).then(b.cmp(&a))
                });
            match pick {
                Some(e) => {
                    free[entries[e].1 as usize] -= sf;
                    step = step.min(left[e]);
                    column.push(e);
                }
                // A job left out must still fit in the time that will be left.
                None => due_outside = due_outside.min(1.0 - time - remaining[m as usize]),
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
