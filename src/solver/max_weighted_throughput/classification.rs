//! Every job's best response at prices `p`, kept as prices move. A job whose best vertex leads
//! the runner-up by `μ` at `p` still leads it by at least `μ − sf·reach(p, p')` at `p'`, where
//! `reach(p, p') = max(0, max_w Δp_w) − min(0, min_w Δp_w)`: a vertex's net value moves by
//! `−sf·Σ_w Δp_w·x_w`, and its time (at most one unit, none negative) keeps that sum between
//! `min(0, min Δp)` and `max(0, max Δp)`. So moving the prices re-evaluates only the jobs whose
//! lead could have run out, and lowers the others' leads by that much. Those leads are lower
//! bounds: enough to certify a vertex at new prices without evaluating its job. To pick the jobs
//! nearest a change of vertex, the smallest margins are made exact by evaluating the jobs whose
//! bounds would place them among the smallest, until those are all exact.

use super::best_response::Vertex;
use super::Instance;

#[derive(Debug, Clone, Default)]
pub(super) struct Classification {
    /// The prices the leads are bounds at (empty: nothing classified yet).
    at: Vec<f64>,
    /// Per position in the level's job list (`None`: not classified, a job of the ambiguous set).
    entries: Vec<Option<Entry>>,
}

/// A job's best vertex at the classification's prices and a lower bound on its lead, exact when
/// the job was evaluated there.
#[derive(Debug, Clone, Copy)]
struct Entry {
    vertex: Vertex,
    lead: f64,
    exact: bool,
}

/// How far a move from prices `a` to `b` can shift the gap between two vertices of a job, per
/// unit of scale factor (infinite when `a` is not prices for the same types).
pub(super) fn reach(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    let (rise, fall) =
        a.iter().zip(b).fold((0.0, 0.0), |(rise, fall): (f64, f64), (a, b)| (rise.max(b - a), fall.max(a - b)));
    rise + fall
}

impl Classification {
    /// Classification at `at` from entries known there.
    pub(super) fn from_entries(at: Vec<f64>, entries: Vec<Option<(Vertex, f64)>>) -> Classification {
        let entries =
            entries.into_iter().map(|e| e.map(|(vertex, lead)| Entry { vertex, lead, exact: true })).collect();
        Classification { at, entries }
    }

    /// Evaluates job `i` (job `m`) at the classification's prices. `Err(m)`: its floor is out
    /// of its reach.
    fn evaluate(&self, instance: &Instance, m: u32) -> Result<Entry, u32> {
        match instance.job(m as usize).best_response(&instance.usable, &self.at) {
            Some((vertex, _, lead)) => Ok(Entry { vertex, lead, exact: true }),
            None => Err(m),
        }
    }

    /// Moves to prices `p`: every job of `jobs` not `skip`ped whose lead could have run out is
    /// evaluated at `p`. `Err(m)`: job m's floor is out of its reach.
    pub(super) fn move_to(&mut self, instance: &Instance, jobs: &[u32], p: &[f64], skip: &[bool]) -> Result<(), u32> {
        let d = reach(&self.at, p);
        self.at = p.to_vec();
        self.entries.resize(jobs.len(), None);
        for (i, &m) in jobs.iter().enumerate() {
            if skip[i] {
                self.entries[i] = None;
                continue;
            }
            let shift = instance.scale_factor[m as usize] as f64 * d;
            self.entries[i] = Some(match self.entries[i] {
                Some(e) if d == 0.0 => e,
                Some(e) if e.lead > shift => Entry { lead: e.lead - shift, exact: false, ..e },
                _ => self.evaluate(instance, m)?,
            });
        }
        Ok(())
    }

    /// `(margin, position)` of every classified job, where a job's margin is its lead over
    /// `scale(i)`, with the `k` smallest exact.
    pub(super) fn margins(
        &mut self,
        instance: &Instance,
        jobs: &[u32],
        k: usize,
        scale: impl Fn(usize) -> f64,
        margins: &mut Vec<(f64, u32)>,
    ) -> Result<(), u32> {
        margins.clear();
        margins.extend(self.entries.iter().enumerate().filter_map(|(i, e)| e.map(|e| (e.lead / scale(i), i as u32))));
        let k = k.min(margins.len());
        if k == 0 {
            return Ok(());
        }
        loop {
            if k < margins.len() {
                margins.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0));
            }
            let mut sharpened = false;
            for entry in &mut margins[..k] {
                let i = entry.1 as usize;
                let Some(e) = self.entries[i] else { continue };
                if !e.exact {
                    let e = self.evaluate(instance, jobs[i])?;
                    self.entries[i] = Some(e);
                    entry.0 = e.lead / scale(i);
                    sharpened = true;
                }
            }
            if !sharpened {
                return Ok(());
            }
        }
    }

    /// Job `i`'s vertex and lead bound.
    pub(super) fn get(&self, i: usize) -> Option<(Vertex, f64)> {
        self.entries.get(i).copied().flatten().map(|e| (e.vertex, e.lead))
    }

    /// Whether job `i` (job `m`) still has a vertex within `tolerance` of its best response's
    /// value at `p`: at once when its lead covers the move, else by evaluating it.
    pub(super) fn certifies(&self, instance: &Instance, i: usize, m: u32, p: &[f64], tolerance: f64) -> bool {
        let Some((vertex, lead)) = self.get(i) else { return true };
        let job = instance.job(m as usize);
        if lead > job.sf * reach(&self.at, p) {
            return true;
        }
        let best = job.best_worth(&instance.usable, p).unwrap_or(f64::INFINITY);
        best - job.worth(&vertex, p) <= tolerance * job.scale(&instance.usable, p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Matrix;

    /// A random instance's data: `n` jobs on three types, with floors on three jobs in four.
    struct Random {
        throughput: Matrix,
        scale_factor: Vec<u32>,
        value: Vec<f64>,
        floor: Vec<f64>,
    }

    impl Random {
        fn new(n: usize, seed: u64) -> Random {
            let mut seed = seed;
            let mut next = || {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (seed >> 11) as f64 / (1u64 << 53) as f64
            };
            let mut throughput = Matrix::zeros(n, 3);
            for m in 0..n {
                for w in 0..3 {
                    throughput.set(m, w, 0.5 + 10.0 * next());
                }
            }
            Random {
                throughput,
                scale_factor: (0..n).map(|m| 1 << (m % 3)).collect(),
                value: (0..n).map(|_| 0.1 + next()).collect(),
                floor: (0..n).map(|m| if m % 4 == 0 { 0.0 } else { 2.0 * next() }).collect(),
            }
        }

        fn instance(&self) -> Instance<'_> {
            Instance {
                throughput: &self.throughput,
                scale_factor: &self.scale_factor,
                value: &self.value,
                floor: &self.floor,
                usable: vec![true; 3],
                charge: &[0.0; 3],
            }
        }
    }

    /// Every job of `instance` classified at `p`.
    fn classified(instance: &Instance, p: &[f64]) -> (Vec<u32>, Classification) {
        let n = instance.throughput.rows();
        let jobs: Vec<u32> = (0..n as u32).collect();
        let mut classes = Classification::default();
        classes.move_to(instance, &jobs, p, &vec![false; n]).expect("every floor is within reach");
        (jobs, classes)
    }

    /// After moves of every size, each vertex is a best response at the new prices and each lead
    /// a lower bound on the true one.
    #[test]
    fn moved_classifications_keep_best_responses_and_bound_the_leads() {
        let data = Random::new(300, 11);
        let instance = data.instance();
        let mut p = vec![1.0, 0.5, 2.0];
        let (jobs, mut classes) = classified(&instance, &p);
        let skip = vec![false; jobs.len()];
        for (s, step) in [0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1e-3, 0.5].into_iter().enumerate() {
            p = p.iter().enumerate().map(|(w, &x)| (x + step * ((s + w) % 3) as f64 - 0.8 * step).max(0.0)).collect();
            classes.move_to(&instance, &jobs, &p, &skip).expect("every floor is within reach");
            for (i, &m) in jobs.iter().enumerate() {
                let job = instance.job(m as usize);
                let (vertex, lead) = classes.get(i).expect("classified");
                let (_, best, true_lead) = job.best_response(&instance.usable, &p).expect("reachable");
                let scale = job.scale(&instance.usable, &p);
                assert!(best - job.worth(&vertex, &p) <= 1e-12 * scale, "job {m} at step {step}");
                assert!(lead <= true_lead + 1e-9 * scale, "job {m}: lead {lead} above {true_lead}");
            }
        }
    }

    /// The certificate at new prices, taken from the leads where they cover the move, agrees
    /// with evaluating every job there, and some vertices do fail it.
    #[test]
    fn certificates_from_leads_agree_with_evaluation() {
        let data = Random::new(400, 23);
        let instance = data.instance();
        let (jobs, classes) = classified(&instance, &[1.0, 0.5, 2.0]);
        let mut failed = 0;
        for move_by in [1e-4, 1e-3, 1e-2, 5e-2, 0.2] {
            let p = [1.0 + move_by, 0.5 - move_by, 2.0 + 0.5 * move_by];
            for (i, &m) in jobs.iter().enumerate() {
                let job = instance.job(m as usize);
                let (vertex, _) = classes.get(i).expect("classified");
                let best = job.best_worth(&instance.usable, &p).expect("reachable");
                let holds = best - job.worth(&vertex, &p) <= 1e-9 * job.scale(&instance.usable, &p);
                assert_eq!(classes.certifies(&instance, i, m, &p, 1e-9), holds, "job {m}, move {move_by}");
                failed += usize::from(!holds);
            }
        }
        assert!(failed > 0, "no vertex failed: the test does not exercise the certificate");
    }

    /// After a move, the `k` smallest margins are the `k` smallest of the true ones.
    #[test]
    fn the_smallest_margins_are_exact() {
        let n = 500;
        let data = Random::new(n, 5);
        let instance = data.instance();
        let (jobs, mut classes) = classified(&instance, &[1.0, 0.5, 2.0]);
        let p = [1.01, 0.49, 2.005];
        classes.move_to(&instance, &jobs, &p, &vec![false; n]).expect("every floor is within reach");
        let scale = |i: usize| instance.job(i).scale(&instance.usable, &p);
        let mut truth: Vec<f64> = (0..n)
            .map(|m| instance.job(m).best_response(&instance.usable, &p).expect("reachable").2 / scale(m))
            .collect();
        truth.sort_by(f64::total_cmp);
        let k = 25;
        let mut margins = Vec::new();
        classes.margins(&instance, &jobs, k, scale, &mut margins).expect("every floor is within reach");
        let mut smallest: Vec<f64> = margins.iter().map(|&(margin, _)| margin).collect();
        smallest.sort_by(f64::total_cmp);
        for (got, want) in smallest[..k].iter().zip(&truth[..k]) {
            assert!(
                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                "{:?} against {:?}",
                &smallest[..k],
                &truth[..k]
            );
        }
    }
}
