//! One job's best use of its time at GPU prices p: `max Σ_w (a·T_w − sf·p_w)·x_w` over
//! `Σ_w T_w·x_w ≥ f` (its floor), `Σ_w x_w ≤ 1`, `x ≥ 0`. Two rows besides the bounds, so every
//! vertex uses at most two types: none (when the floor is 0), one type with all of its time or
//! just its floor, or two types with both rows tight. The best response is the best vertex; its
//! margin is how far the runner-up (a different allocation) is behind it.

/// A job as the tie-break sees it: its row, scale factor, the value of one step/s (`a = 1 /
/// thr_equal`, so a unit of time on w is worth `a·T_w`), its floor, and the charge per GPU of
/// each type that every price adds to (`Instance::charge`).
#[derive(Clone, Copy)]
pub(super) struct JobView<'a> {
    pub(super) row: &'a [f64],
    pub(super) sf: f64,
    pub(super) value: f64,
    pub(super) floor: f64,
    pub(super) charge: &'a [f64],
}

/// A vertex of a job's polytope: time on at most two types (a second entry of 0 time is unused).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Vertex {
    pub(super) time: [(u32, f64); 2],
}

impl Vertex {
    const IDLE: Vertex = Vertex { time: [(0, 0.0), (0, 0.0)] };

    fn one(w: usize, x: f64) -> Vertex {
        Vertex { time: [(w as u32, x), (w as u32, 0.0)] }
    }

    /// `(type, time)` for the types the vertex gives time.
    pub(super) fn used(&self) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.time.iter().filter(|&&(_, x)| x > 0.0).map(|&(w, x)| (w as usize, x))
    }
}

impl JobView<'_> {
    /// The value of a unit of time on `w` net of its charge, before prices.
    pub(super) fn gain(&self, w: usize) -> f64 {
        self.value * self.row[w] - self.sf * self.charge[w]
    }

    /// The net value of a unit of time on `w` at prices `p`.
    pub(super) fn net(&self, w: usize, p: &[f64]) -> f64 {
        self.gain(w) - self.sf * p[w]
    }

    /// The vertex's net value at prices `p`.
    pub(super) fn worth(&self, vertex: &Vertex, p: &[f64]) -> f64 {
        vertex.used().map(|(w, x)| self.net(w, p) * x).sum()
    }

    /// The size of a unit of time on `w` at prices `p`: its value plus everything it is charged.
    pub(super) fn size(&self, w: usize, p: &[f64]) -> f64 {
        self.value * self.row[w] + self.sf * (p[w] + self.charge[w])
    }

    /// The scale against which values at `p` are compared: the largest value or price a unit of
    /// the job's time can carry.
    pub(super) fn scale(&self, usable: &[bool], p: &[f64]) -> f64 {
        (0..self.row.len()).filter(|&w| usable[w]).map(|w| self.size(w, p)).fold(f64::MIN_POSITIVE, f64::max)
    }

    /// Calls `visit` with every vertex of the job's polytope (on types with GPUs and a positive
    /// throughput), each once.
    fn vertices(&self, usable: &[bool], mut visit: impl FnMut(Vertex)) {
        let f = self.floor;
        if f <= 0.0 {
            visit(Vertex::IDLE);
        }
        let types = || (0..self.row.len()).filter(|&w| usable[w] && self.row[w] > 0.0);
        for a in types() {
            let ta = self.row[a];
            if ta >= f {
                visit(Vertex::one(a, 1.0));
            }
            if f > 0.0 && f < ta {
                visit(Vertex::one(a, f / ta));
            }
            for b in types().filter(|&b| self.row[b] > f && ta < f) {
                let xb = (f - ta) / (self.row[b] - ta);
                visit(Vertex { time: [(a as u32, 1.0 - xb), (b as u32, xb)] });
            }
        }
    }

    /// The best vertex at prices `p`, its net value, and how far the runner-up (another
    /// allocation) is behind it (infinite when it is the only vertex). `None`: the floor is out
    /// of reach.
    pub(super) fn best_response(&self, usable: &[bool], p: &[f64]) -> Option<(Vertex, f64, f64)> {
        let (mut best, mut first, mut second) = (None, f64::NEG_INFINITY, f64::NEG_INFINITY);
        self.vertices(usable, |vertex| {
            let worth = self.worth(&vertex, p);
            if worth > first {
                (best, second, first) = (Some(vertex), first, worth);
            } else if worth > second {
                second = worth;
            }
        });
        best.map(|vertex| (vertex, first, first - second))
    }

    /// Along the ray of prices `c·d`: the usage `B = sf·Σ_w d_w·x_w` of the vertex that is best
    /// at every large enough c (the cheapest along `d`, the most valuable among those), and the
    /// largest c below which another vertex beats it, with that vertex's extra usage (`None`:
    /// none ever does). `None` when the floor is out of reach.
    pub(super) fn first_breakpoint(&self, usable: &[bool], d: &[f64]) -> Option<(f64, Option<(f64, f64)>)> {
        let line = |vertex: &Vertex| -> (f64, f64) {
            let a = vertex.used().map(|(w, x)| self.gain(w) * x).sum();
            let b = vertex.used().map(|(w, x)| self.sf * d[w] * x).sum();
            (a, b)
        };
        let mut cheapest: Option<(f64, f64)> = None;
        self.vertices(usable, |vertex| {
            let (a, b) = line(&vertex);
            if cheapest.is_none_or(|(a0, b0)| b < b0 || (b == b0 && a > a0)) {
                cheapest = Some((a, b));
            }
        });
        let (a0, b0) = cheapest?;
        let mut first: Option<(f64, f64)> = None;
        self.vertices(usable, |vertex| {
            let (a, b) = line(&vertex);
            if b > b0 && a > a0 {
                let c = (a - a0) / (b - b0);
                if first.is_none_or(|(best, jump)| c > best || (c == best && b - b0 > jump)) {
                    first = Some((c, b - b0));
                }
            }
        });
        Some((b0, first))
    }

    /// The best net value at prices `p` (`h(p)`); `None` when the floor is out of reach.
    pub(super) fn best_worth(&self, usable: &[bool], p: &[f64]) -> Option<f64> {
        let mut first = None::<f64>;
        self.vertices(usable, |vertex| {
            let worth = self.worth(&vertex, p);
            first = Some(first.map_or(worth, |f| f.max(worth)));
        });
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [bool; 3] = [true, true, true];

    #[test]
    fn a_job_with_no_floor_and_free_gpus_takes_its_fastest_type() {
        let job = JobView { charge: &[0.0; 3], row: &[1.0, 4.0, 2.0], sf: 1.0, value: 1.0, floor: 0.0 };
        let (vertex, worth, margin) = job.best_response(&ALL, &[0.0; 3]).unwrap();
        assert_eq!(vertex, Vertex::one(1, 1.0));
        assert_eq!(worth, 4.0);
        assert!((margin - 2.0).abs() < 1e-12, "runner-up is type 2 at 2.0: {margin}");
    }

    #[test]
    fn prices_above_the_value_leave_the_job_at_its_floor() {
        // Net values per unit: 1 − 2 = −1, 4 − 8 = −4, 2 − 3 = −1. Floor 2: on type 0 it needs
        // all the time and more (out), on type 1 half a unit (−2), type 2 all of it (−1).
        let job = JobView { charge: &[0.0; 3], row: &[1.0, 4.0, 2.0], sf: 1.0, value: 1.0, floor: 2.0 };
        let (vertex, worth, _) = job.best_response(&ALL, &[2.0, 8.0, 3.0]).unwrap();
        assert_eq!(vertex, Vertex::one(2, 1.0));
        assert_eq!(worth, -1.0);
    }

    #[test]
    fn a_floor_between_two_types_can_take_both() {
        // Floor 3 between T_0 = 2 and T_1 = 4: half and half. Type 1 is dear, type 0 free.
        let job = JobView { charge: &[0.0; 3], row: &[2.0, 4.0], sf: 1.0, value: 1.0, floor: 3.0 };
        let (vertex, worth, _) = job.best_response(&[true, true], &[0.0, 3.9]).unwrap();
        // Vertices: all on 1 (4 − 3.9 = 0.1), floor on 1 (0.75 · 0.1), pair (0.5·2 + 0.5·0.1).
        assert_eq!(vertex, Vertex { time: [(0, 0.5), (1, 0.5)] });
        assert!((worth - 1.05).abs() < 1e-12);
    }

    #[test]
    fn a_floor_out_of_reach_has_no_response() {
        let job = JobView { charge: &[0.0; 3], row: &[1.0, 2.0], sf: 1.0, value: 1.0, floor: 3.0 };
        assert!(job.best_response(&[true, true], &[0.0, 0.0]).is_none());
        // A type with no GPUs does not count.
        let job = JobView { charge: &[0.0; 3], row: &[1.0, 5.0], sf: 1.0, value: 1.0, floor: 3.0 };
        assert!(job.best_response(&[true, false], &[0.0, 0.0]).is_none());
    }

    #[test]
    fn the_first_breakpoint_along_a_ray_is_where_more_time_starts_to_pay() {
        // Row (2, 4), floor 2, value 1, sf 1, prices c·(1, 1). Vertices: all on 0 (a 2, b 1),
        // floor on 1 (half a unit: a 2, b 0.5), all on 1 (a 4, b 1). Cheapest: floor on 1. All on
        // 1 gains 2 for 0.5 more: it pays below c = 4; all on 0 gains nothing.
        let job = JobView { charge: &[0.0; 3], row: &[2.0, 4.0], sf: 1.0, value: 1.0, floor: 2.0 };
        let (floor_usage, first) = job.first_breakpoint(&[true, true], &[1.0, 1.0]).unwrap();
        assert_eq!(floor_usage, 0.5);
        assert_eq!(first, Some((4.0, 0.5)));
        // Just above c = 4 the floor vertex is the best response, just below all on 1.
        assert_eq!(job.best_response(&[true, true], &[4.1, 4.1]).unwrap().0, Vertex::one(1, 0.5));
        assert_eq!(job.best_response(&[true, true], &[3.9, 3.9]).unwrap().0, Vertex::one(1, 1.0));
        // A job whose floor takes all of its time never takes more.
        let full = JobView { charge: &[0.0; 3], row: &[2.0, 4.0], sf: 1.0, value: 1.0, floor: 4.0 };
        assert_eq!(full.first_breakpoint(&[true, true], &[1.0, 1.0]), Some((1.0, None)));
        let out = JobView { charge: &[0.0; 3], row: &[2.0, 4.0], sf: 1.0, value: 1.0, floor: 5.0 };
        assert_eq!(out.first_breakpoint(&[true, true], &[1.0, 1.0]), None);
    }

    #[test]
    fn best_worth_is_the_best_response_value() {
        let job = JobView { charge: &[0.0; 3], row: &[3.0, 1.0, 7.0], sf: 2.0, value: 0.5, floor: 2.0 };
        let p = [0.3, 0.1, 1.4];
        assert_eq!(job.best_worth(&ALL, &p), job.best_response(&ALL, &p).map(|b| b.1));
    }
}
