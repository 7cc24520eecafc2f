//! The Lagrangian bound `L(p) = G·p + Σ_m h_m(p)` and its supergradient, evaluated lazily. A job
//! whose best vertex at an *anchor* `p₀` leads the runner-up by `μ_m` keeps that vertex at every
//! p with `2·sf_m·‖p − p₀‖_∞ < μ_m` (each vertex uses at most one unit of time, so the gap between
//! two vertices moves by at most that much), and there its `h_m` is linear:
//! `h_m(p₀) − sf_m·(p − p₀)·x_m`. So a query near the anchor evaluates only the jobs within reach
//! of a change of vertex (`μ_m / (2·sf_m)`, the job's *stability radius*, at most the distance)
//! and takes every other job's part from the anchor's sums. Cutting planes query ever closer to
//! their best point, so most queries evaluate few jobs; a query that would evaluate more than half
//! of them is evaluated in full and becomes the new anchor.

use super::Instance;

/// One job at the anchor: its stability radius, `h_m(p₀)` and its vertex's usage `sf_m·x_m`.
#[derive(Clone, Copy)]
struct Anchored {
    radius: f64,
    worth: f64,
    usage: [(u32, f64); 2],
}

pub(super) struct Lagrangian<'a> {
    instance: &'a Instance<'a>,
    jobs: &'a [u32],
    capacity: &'a [f64],
    anchor: Vec<f64>,
    /// Per job of `jobs` (`None`: its floor is out of reach, it takes no part).
    anchored: Vec<Option<Anchored>>,
    /// Over every anchored job: `Σ h_m(p₀)` and `Σ sf_m·x_m` per type.
    worth: f64,
    usage: Vec<f64>,
}

impl<'a> Lagrangian<'a> {
    pub(super) fn new(instance: &'a Instance<'a>, jobs: &'a [u32], capacity: &'a [f64]) -> Lagrangian<'a> {
        Lagrangian {
            instance,
            jobs,
            capacity,
            anchor: Vec::new(),
            anchored: Vec::new(),
            worth: 0.0,
            usage: vec![0.0; capacity.len()],
        }
    }

    /// Evaluates every job at `p` and makes `p` the anchor.
    fn anchor_at(&mut self, p: &[f64]) {
        let instance = self.instance;
        self.anchored = self
            .jobs
            .iter()
            .map(|&m| {
                let job = instance.job(m as usize);
                let (vertex, worth, lead) = job.best_response(&instance.usable, p)?;
                let usage = vertex.time.map(|(w, x)| (w, job.sf * x));
                Some(Anchored { radius: lead / (2.0 * job.sf), worth, usage })
            })
            .collect();
        self.anchor = p.to_vec();
        self.worth = 0.0;
        self.usage.iter_mut().for_each(|u| *u = 0.0);
        for a in self.anchored.iter().flatten() {
            self.worth += a.worth;
            for (w, u) in a.usage {
                self.usage[w as usize] += u;
            }
        }
    }

    /// `(−L(p), U(p) − G)`: the value and a supergradient of `−L` at `p`, for cutting planes.
    pub(super) fn negated(&mut self, p: &[f64]) -> (f64, Vec<f64>) {
        let k = self.capacity.len();
        let mut distance = if self.anchor.len() == p.len() {
            self.anchor.iter().zip(p).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max)
        } else {
            f64::INFINITY
        };
        let unstable = self.anchored.iter().flatten().filter(|a| a.radius <= distance).count();
        if distance.is_infinite() || 2 * unstable > self.jobs.len() {
            self.anchor_at(p);
            distance = 0.0;
        }
        let (mut bound, mut usage) = (self.worth, self.usage.clone());
        bound -= (0..k).map(|w| (p[w] - self.anchor[w]) * self.usage[w]).sum::<f64>();
        // The jobs within reach of a change of vertex: their anchor part out, their part at p in.
        for (&m, anchored) in self.jobs.iter().zip(&self.anchored) {
            let Some(a) = anchored.filter(|a| a.radius <= distance) else { continue };
            bound -= a.worth
                - (0..2)
                    .map(|i| (p[a.usage[i].0 as usize] - self.anchor[a.usage[i].0 as usize]) * a.usage[i].1)
                    .sum::<f64>();
            for (w, u) in a.usage {
                usage[w as usize] -= u;
            }
            let job = self.instance.job(m as usize);
            if let Some((vertex, worth, _)) = job.best_response(&self.instance.usable, p) {
                bound += worth;
                for (w, x) in vertex.used() {
                    usage[w] += job.sf * x;
                }
            }
        }
        bound += self.capacity.iter().zip(p).map(|(g, p)| g * p).sum::<f64>();
        (-bound, (0..k).map(|w| usage[w] - self.capacity[w]).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::Instance;
    use super::*;
    use crate::problem::Matrix;

    /// The lazy evaluation equals the full one at points near and far from the anchor.
    #[test]
    fn lazy_values_equal_full_ones() {
        let (n, k) = (400, 3);
        let mut t = Matrix::zeros(n, k);
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for m in 0..n {
            for w in 0..k {
                t.set(m, w, 0.5 + 10.0 * next());
            }
        }
        let sf: Vec<u32> = (0..n).map(|m| 1 << (m % 3)).collect();
        let value: Vec<f64> = (0..n).map(|_| 0.1 + next()).collect();
        let floor: Vec<f64> = (0..n).map(|m| if m % 4 == 0 { 0.0 } else { 2.0 * next() }).collect();
        let instance =
            Instance { throughput: &t, scale_factor: &sf, value: &value, floor: &floor, usable: vec![true; k] };
        let jobs: Vec<u32> = (0..n as u32).collect();
        let capacity = [40.0, 30.0, 20.0];
        let mut lazy = Lagrangian::new(&instance, &jobs, &capacity);
        let points = [[1.0, 2.0, 0.5], [1.001, 2.0, 0.5], [1.0, 2.01, 0.49], [0.3, 0.1, 3.0], [0.3, 0.1, 3.0001]];
        for p in points {
            let got = lazy.negated(&p);
            let want = Lagrangian::new(&instance, &jobs, &capacity).negated(&p);
            assert!((got.0 - want.0).abs() <= 1e-9 * want.0.abs().max(1.0), "{p:?}: {} vs {}", got.0, want.0);
            for w in 0..k {
                assert!(
                    (got.1[w] - want.1[w]).abs() <= 1e-9 * want.1[w].abs().max(1.0),
                    "{p:?}: {:?} vs {:?}",
                    got.1,
                    want.1
                );
            }
        }
    }
}
