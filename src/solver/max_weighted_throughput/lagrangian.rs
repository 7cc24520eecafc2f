//! The Lagrangian bound `L(p) = G·p + Σ_m h_m(p)` and its supergradient, evaluated lazily. A job
//! whose best vertex at an *anchor* `p₀` leads the runner-up by `μ_m` keeps that vertex at every
//! p with `sf_m·reach(p₀, p) < μ_m` (`classification.rs`), and there its `h_m` is linear:
//! `h_m(p₀) − sf_m·(p − p₀)·x_m`. So a query near the anchor evaluates only the jobs within reach
//! of a change of vertex (`μ_m / sf_m`, the job's *stability radius*, at most the reach) and
//! takes every other job's part from the anchor's sums. Cutting planes query ever closer to
//! their best point, so most queries evaluate few jobs; a query that would evaluate more than half
//! of them is evaluated in full and becomes the new anchor, and so does one where the queries
//! have settled far from the anchor.

use super::best_response::Vertex;
use super::classification::{reach, Classification};
use super::Instance;
use crate::solver::stability::Radii;

/// One job at the anchor: its best vertex, its lead and `h_m(p₀)`.
#[derive(Clone, Copy)]
struct Anchored {
    vertex: Vertex,
    lead: f64,
    worth: f64,
}

pub(super) struct Lagrangian<'a> {
    instance: &'a Instance<'a>,
    jobs: &'a [u32],
    capacity: &'a [f64],
    anchor: Vec<f64>,
    /// The last query.
    previous: Vec<f64>,
    /// Per position in `jobs` (`None`: its floor is out of reach, it takes no part).
    anchored: Vec<Option<Anchored>>,
    /// The stability radii of the jobs that take part.
    radii: Radii,
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
            previous: Vec::new(),
            anchored: Vec::new(),
            radii: Radii::default(),
            worth: 0.0,
            usage: vec![0.0; capacity.len()],
        }
    }

    fn sf(&self, i: usize) -> f64 {
        self.instance.scale_factor[self.jobs[i] as usize] as f64
    }

    /// Evaluates every job at `p` and makes `p` the anchor.
    fn anchor_at(&mut self, p: &[f64]) {
        let instance = self.instance;
        self.anchored.clear();
        self.anchored.extend(self.jobs.iter().map(|&m| {
            let (vertex, worth, lead) = instance.job(m as usize).best_response(&instance.usable, p)?;
            Some(Anchored { vertex, lead, worth })
        }));
        self.anchor = p.to_vec();
        self.worth = 0.0;
        self.usage.iter_mut().for_each(|u| *u = 0.0);
        let mut radii = Vec::with_capacity(self.jobs.len());
        for (i, a) in self.anchored.iter().enumerate() {
            let Some(a) = a else { continue };
            let sf = self.sf(i);
            self.worth += a.worth;
            for (w, x) in a.vertex.used() {
                self.usage[w] += sf * x;
            }
            radii.push((a.lead / sf, i as u32));
        }
        self.radii.rebuild(&radii);
    }

    /// Every job's best response at the anchor, with its lead (`None` before the first query).
    pub(super) fn classification(&self) -> Option<Classification> {
        if self.anchor.is_empty() {
            return None;
        }
        let entries = self.anchored.iter().map(|a| a.map(|a| (a.vertex, a.lead))).collect();
        Some(Classification::from_entries(self.anchor.clone(), entries))
    }

    /// `(−L(p), U(p) − G)`: the value and a supergradient of `−L` at `p`, for cutting planes.
    pub(super) fn negated(&mut self, p: &[f64]) -> (f64, Vec<f64>) {
        let k = self.capacity.len();
        let mut distance = reach(&self.anchor, p);
        let unstable = if distance.is_finite() { self.radii.within(distance).count() } else { 0 };
        // Queries that settle far from the anchor (each within a quarter of the reach of the
        // last) move it there, when they evaluate an eighth of the jobs or more.
        let step = reach(&self.previous, p);
        let settled = 4.0 * step < distance && 8 * unstable > self.jobs.len();
        self.previous.clear();
        self.previous.extend_from_slice(p);
        if distance.is_infinite() || 2 * unstable > self.jobs.len() || settled {
            self.anchor_at(p);
            distance = 0.0;
        }
        let (mut bound, mut usage) = (self.worth, self.usage.clone());
        bound -= (0..k).map(|w| (p[w] - self.anchor[w]) * self.usage[w]).sum::<f64>();
        // The jobs within reach of a change of vertex: their anchor part out, their part at p in.
        for i in self.radii.within(distance) {
            let Some(a) = self.anchored[i] else { continue };
            let job = self.instance.job(self.jobs[i] as usize);
            bound -= a.worth;
            for (w, x) in a.vertex.used() {
                bound += (p[w] - self.anchor[w]) * job.sf * x;
                usage[w] -= job.sf * x;
            }
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
        let instance = Instance {
            throughput: &t,
            scale_factor: &sf,
            value: &value,
            floor: &floor,
            usable: vec![true; k],
            charge: &[0.0; 3],
        };
        let jobs: Vec<u32> = (0..n as u32).collect();
        let capacity = [40.0, 30.0, 20.0];
        let mut lazy = Lagrangian::new(&instance, &jobs, &capacity);
        let mut points =
            vec![[1.0, 2.0, 0.5], [1.001, 2.0, 0.5], [1.0, 2.01, 0.49], [0.3, 0.1, 3.0], [0.3, 0.1, 3.0001]];
        // Queries that close in on a point, as cutting planes do, from both sides.
        for i in 0..24 {
            let step = 0.2 * 0.7f64.powi(i) * if i % 2 == 0 { 1.0 } else { -1.0 };
            points.push([0.6 + step, 1.2 - 0.5 * step, 0.8 + 0.3 * step]);
        }
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
