//! Kelley's cutting planes with a trust region: the maximum of a concave, piecewise-linear
//! function of a few variables (the GPU prices of a Lagrangian) from an oracle that returns its
//! value and a supergradient. Each cut `θ ≤ F(p_j) + g_j·(q − p_j)` holds everywhere; the next
//! point maximizes the lowest cut inside a box around the best point so far, which halves after a
//! step that does not improve on the best and doubles (up to its first width) after one that
//! realizes at least half of the rise the cuts predicted. Prices are estimates for the callers:
//! their recovery LPs and certificates decide exactness, never this.

mod dense;

use crate::lp::{Backend, LinearProgram, Row, Sense, Session, SolveError};

/// Where the variables live and when to stop.
#[derive(Debug, Clone)]
pub struct Region {
    /// Per variable: `None` keeps it at 0 (a type with no GPUs); otherwise its bounds.
    pub bounds: Vec<Option<(f64, f64)>>,
    /// The variables sum to 1 (a homogeneous function needs only the simplex).
    pub simplex: bool,
    /// The trust region's first half-width, and the half-width at which the search stops.
    pub radius: f64,
    pub min_radius: f64,
    /// Stop when the cuts' bound is within this of the best value (with the step inside the box).
    pub gap: f64,
    /// Oracle calls at most.
    pub max_cuts: usize,
    /// Stop as soon as a value above this is found (`f64::INFINITY`: never), for a caller that
    /// only asks whether the maximum is positive.
    pub enough: f64,
}

/// The best point found, its value, and the LPs solved.
#[derive(Debug, Clone)]
pub struct Maximum {
    pub point: Vec<f64>,
    pub value: f64,
    pub lp_solves: usize,
}

/// Maximizes the concave `F` from `start` (projected into the region's bounds) over `region`.
/// `oracle(p)` returns `(F(p), g)` with `g` a supergradient at `p`.
pub fn maximize(
    start: &[f64],
    region: &Region,
    backend: Backend,
    mut oracle: impl FnMut(&[f64]) -> (f64, Vec<f64>),
) -> Result<Maximum, SolveError> {
    let free: Vec<(usize, f64, f64)> =
        region.bounds.iter().enumerate().filter_map(|(w, b)| b.map(|(lo, hi)| (w, lo, hi))).collect();
    let mut p: Vec<f64> = (0..region.bounds.len())
        .map(|w| region.bounds[w].map_or(0.0, |(lo, hi)| start.get(w).copied().unwrap_or(lo).clamp(lo, hi)))
        .collect();
    let mut cuts = Cuts::new(&free, region, backend);
    let mut best = Maximum { point: p.clone(), value: f64::NEG_INFINITY, lp_solves: 0 };
    let (mut radius, mut predicted) = (region.radius, f64::INFINITY);
    for _ in 0..region.max_cuts {
        let (value, g) = oracle(&p);
        if value > region.enough {
            best = Maximum { point: p.clone(), value, lp_solves: best.lp_solves };
            break;
        }
        if value > best.value {
            if value - best.value >= 0.5 * predicted {
                radius = (radius * 2.0).min(region.radius);
            }
            best.value = value;
            best.point.clone_from(&p);
        } else {
            radius *= 0.5;
        }
        if radius < region.min_radius || free.is_empty() {
            break;
        }
        // θ − g·q ≤ F(p) − g·p
        let intercept = value - g.iter().zip(&p).map(|(g, p)| g * p).sum::<f64>();
        cuts.add(intercept, &g);
        if region.enough.is_finite() {
            // Every cut bounds F everywhere: the cuts' maximum over the whole region bounds its
            // maximum. At most `enough` answers a caller that asks only whether it is above.
            best.lp_solves += 1;
            if cuts.maximize(None)?.0 <= region.enough {
                break;
            }
        }
        best.lp_solves += 1;
        let (bound, next) = cuts.maximize(Some((&best.point, radius)))?;
        // The bound holds beyond the box only when the step stays inside it.
        let inside = free.iter().all(|&(w, _, _)| (next[w] - best.point[w]).abs() < 0.999 * radius);
        p = next;
        predicted = bound - best.value;
        if inside && predicted <= region.gap {
            break;
        }
    }
    Ok(best)
}

/// The LP `max θ` s.t. `θ ≤ every cut`, over the region's variables, solved densely
/// (`dense.rs`); where that gives no answer, in one backend session that keeps every cut: each cut a row added in place and each box a change of column bounds,
/// so every solve is a hot start from the last basis.
struct Cuts<'a> {
    free: &'a [(usize, f64, f64)],
    simplex: bool,
    backend: Backend,
    /// Every cut: its intercept and its slope over the free variables.
    cuts: Vec<(f64, Vec<f64>)>,
    /// The session, opened when first needed; θ is column 0, the free variables follow. It
    /// holds the first `in_session` cuts.
    session: Option<Box<dyn Session>>,
    in_session: usize,
    /// The number of variables (free or not).
    width: usize,
}

impl<'a> Cuts<'a> {
    fn new(free: &'a [(usize, f64, f64)], region: &Region, backend: Backend) -> Cuts<'a> {
        Cuts {
            free,
            simplex: region.simplex,
            backend,
            cuts: Vec::new(),
            session: None,
            in_session: 0,
            width: region.bounds.len(),
        }
    }

    fn add(&mut self, intercept: f64, g: &[f64]) {
        self.cuts.push((intercept, self.free.iter().map(|&(w, _, _)| g[w]).collect()));
    }

    fn row(&self, cut: usize) -> Row {
        let (intercept, slope) = &self.cuts[cut];
        let mut coefs: Vec<(usize, f64)> = slope.iter().enumerate().map(|(i, &g)| (i + 1, -g)).collect();
        coefs.push((0, 1.0));
        Row::at_most(*intercept, coefs)
    }

    /// The backend session with every cut so far.
    fn session(&mut self) -> &mut Box<dyn Session> {
        if self.session.is_none() {
            let mut lp = LinearProgram::new(Sense::Maximize);
            lp.add_col(1.0, f64::NEG_INFINITY, f64::INFINITY);
            for &(_, lo, hi) in self.free {
                lp.add_col(0.0, lo, hi);
            }
            if self.simplex {
                lp.add_row(Row::equal(1.0, (1..=self.free.len()).map(|c| (c, 1.0)).collect()));
            }
            self.session = Some(self.backend.open(lp));
        }
        let rows: Vec<Row> = (self.in_session..self.cuts.len()).map(|c| self.row(c)).collect();
        self.in_session = self.cuts.len();
        let session = self.session.as_mut().expect("opened above");
        if !rows.is_empty() {
            session.add_rows(&rows);
        }
        session
    }

    /// The cuts' maximum within the box `around` a point (the whole region: `None`), and where.
    fn maximize(&mut self, around: Option<(&[f64], f64)>) -> Result<(f64, Vec<f64>), SolveError> {
        assert!(!self.cuts.is_empty(), "a cut before the first solve");
        let (lower, upper): (Vec<f64>, Vec<f64>) = self
            .free
            .iter()
            .map(|&(w, lo, hi)| match around {
                Some((center, radius)) => ((center[w] - radius).max(lo), (center[w] + radius).min(hi)),
                None => (lo, hi),
            })
            .unzip();
        let mut point = vec![0.0; self.width];
        if let Some((bound, q)) = dense::maximize(&self.cuts, &lower, &upper, self.simplex) {
            for (i, &(w, lo, hi)) in self.free.iter().enumerate() {
                point[w] = q[i].clamp(lo, hi);
            }
            return Ok((bound, point));
        }
        let session = self.session();
        for (i, (&lower, &upper)) in lower.iter().zip(&upper).enumerate() {
            session.set_col_bounds(i + 1, lower, upper);
        }
        let solution = session.solve()?;
        for (i, &(w, lo, hi)) in self.free.iter().enumerate() {
            point[w] = solution.values[i + 1].clamp(lo, hi);
        }
        Ok((solution.values[0], point))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `F(p) = offset + min_w (1 − 3·p_w)` on the simplex of three prices: concave, its maximum
    /// `offset` at the centre. Returns the maximum found and the oracle calls it took.
    fn search(offset: f64, enough: f64) -> (Maximum, usize) {
        let region = Region {
            bounds: vec![Some((0.0, 1.0)); 3],
            simplex: true,
            radius: 0.05,
            min_radius: 1e-9,
            gap: 1e-9,
            max_cuts: 60,
            enough,
        };
        let mut calls = 0;
        let found = maximize(&[0.8, 0.1, 0.1], &region, Backend::default(), |p| {
            calls += 1;
            let w = (0..3).min_by(|&a, &b| p[b].total_cmp(&p[a])).unwrap_or(0);
            let mut g = vec![0.0; 3];
            g[w] = -3.0;
            (offset + 1.0 - 3.0 * p[w], g)
        })
        .expect("the cut LPs solve");
        (found, calls)
    }

    #[test]
    fn a_search_without_a_threshold_finds_the_maximum() {
        let (found, _) = search(0.25, f64::INFINITY);
        assert!((found.value - 0.25).abs() < 1e-6, "{found:?}");
    }

    #[test]
    fn a_search_stops_at_the_first_value_above_its_threshold() {
        let (found, calls) = search(0.25, 0.0);
        assert!(found.value > 0.0, "{found:?}");
        let (full, full_calls) = search(0.25, f64::INFINITY);
        assert!(calls < full_calls, "{calls} oracle calls against {full_calls} ({full:?})");
    }

    #[test]
    fn a_search_stops_once_the_cuts_bound_the_maximum_below_its_threshold() {
        let (found, calls) = search(-0.25, 0.0);
        assert!(found.value <= 0.0, "{found:?}");
        let (_, full_calls) = search(-0.25, f64::INFINITY);
        assert!(calls < full_calls, "{calls} oracle calls against {full_calls}");
    }
}
