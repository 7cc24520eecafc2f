//! Finish-time fairness after the fact: how crowded the cluster was while each job was present,
//! and how long the job would have taken on its equal share of the cluster.

use crate::problem::WorkerType;

/// The number of jobs present over time, as a step function with its running integral.
pub struct Crowding {
    /// Event times, sorted, and the job count and integral of the count just after each.
    times: Vec<f64>,
    count: Vec<f64>,
    integral: Vec<f64>,
}

impl Crowding {
    /// From each job's `(arrival, departure)`.
    pub fn new(intervals: &[(f64, f64)]) -> Crowding {
        let mut events: Vec<(f64, f64)> = Vec::with_capacity(intervals.len() * 2);
        for &(a, d) in intervals {
            events.push((a, 1.0));
            events.push((d.max(a), -1.0));
        }
        events.sort_by(|x, y| x.0.total_cmp(&y.0));
        let (mut times, mut count, mut integral) = (Vec::new(), Vec::new(), Vec::new());
        let (mut n, mut area) = (0.0, 0.0);
        for (t, delta) in events {
            if let Some(&last) = times.last() {
                area += n * (t - last);
            }
            n += delta;
            if times.last() == Some(&t) {
                *count.last_mut().unwrap() = n;
                *integral.last_mut().unwrap() = area;
            } else {
                times.push(t);
                count.push(n);
                integral.push(area);
            }
        }
        Crowding { times, count, integral }
    }

    /// `∫ count dt` from the first event to `t`.
    fn area_to(&self, t: f64) -> f64 {
        match self.times.partition_point(|&x| x <= t) {
            0 => 0.0,
            k => self.integral[k - 1] + self.count[k - 1] * (t - self.times[k - 1]),
        }
    }

    /// Average number of jobs present over `[from, to]` (at least 1: the job itself).
    pub fn average(&self, from: f64, to: f64) -> f64 {
        if to <= from {
            return 1.0;
        }
        ((self.area_to(to) - self.area_to(from)) / (to - from)).max(1.0)
    }
}

/// Seconds a job of `steps` would take on its equal share `X_iso[w] = count_w / (n · sf)` of every
/// worker type (scaled to sum to at most 1), at its throughput-matrix row; `None` if that share
/// gives it no throughput.
pub fn isolated_seconds(row: &[f64], cluster: &[WorkerType], sf: u32, n: f64, steps: f64) -> Option<f64> {
    let mut share: Vec<f64> = cluster.iter().map(|w| w.count / (n * sf as f64)).collect();
    let sum: f64 = share.iter().sum();
    if sum > 1.0 {
        share.iter_mut().for_each(|x| *x /= sum);
    }
    let throughput: f64 = row.iter().zip(&share).map(|(t, x)| t * x).sum();
    (throughput > 0.0).then(|| steps / throughput)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_the_job_count() {
        // One job over [0, 10], another over [5, 10]: 1.5 jobs on average over [0, 10].
        let c = Crowding::new(&[(0.0, 10.0), (5.0, 10.0)]);
        assert!((c.average(0.0, 10.0) - 1.5).abs() < 1e-12);
        assert!((c.average(5.0, 10.0) - 2.0).abs() < 1e-12);
        assert_eq!(c.average(3.0, 3.0), 1.0);
    }

    #[test]
    fn isolated_share_is_scaled_to_one() {
        let cluster = vec![
            WorkerType { name: "a".into(), count: 4.0, gpus_per_server: 4, cost_per_hour: None },
            WorkerType { name: "b".into(), count: 4.0, gpus_per_server: 4, cost_per_hour: None },
        ];
        // Alone (n = 1): shares 4 and 4 scaled to 1/2 each: 0.5·2 + 0.5·1 = 1.5 steps/s.
        assert_eq!(isolated_seconds(&[2.0, 1.0], &cluster, 1, 1.0, 3.0), Some(2.0));
        // Among 16: 1/4 of each type: 0.75 steps/s.
        assert_eq!(isolated_seconds(&[2.0, 1.0], &cluster, 1, 16.0, 3.0), Some(4.0));
        assert_eq!(isolated_seconds(&[0.0, 0.0], &cluster, 1, 1.0, 3.0), None);
    }
}
