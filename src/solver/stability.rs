//! Jobs ordered by their stability radius: how far the prices may move from an anchor before a
//! job's best response there can change. The price decompositions' searches query ever closer to
//! a point near their anchor, and only the jobs whose radius is within a query's distance from the
//! anchor need evaluating again (`max_min_ratio::decomposition::prices`,
//! `max_weighted_throughput::lagrangian`). Radii are grouped by their binary exponent (a counting
//! sort, linear in the jobs), so the jobs within a distance are a prefix of the groups plus part
//! of one.

const GROUPS: usize = 2048;

fn group(radius: f64) -> usize {
    (radius.max(0.0).to_bits() >> 52) as usize & (GROUPS - 1)
}

/// `(radius, position)` of the jobs, ordered by the radius' exponent.
#[derive(Debug, Clone)]
pub struct Radii {
    /// Group g is `order[starts[g]..starts[g + 1]]`.
    order: Vec<(f64, u32)>,
    starts: Vec<usize>,
}

impl Default for Radii {
    fn default() -> Radii {
        Radii { order: Vec::new(), starts: vec![0; GROUPS + 1] }
    }
}

impl Radii {
    /// Orders `radii` (`(radius, position)`), replacing what was there.
    pub fn rebuild(&mut self, radii: &[(f64, u32)]) {
        self.starts.iter_mut().for_each(|s| *s = 0);
        for entry in radii {
            self.starts[group(entry.0) + 1] += 1;
        }
        for g in 0..GROUPS {
            self.starts[g + 1] += self.starts[g];
        }
        let mut next = self.starts.clone();
        self.order.clear();
        self.order.resize(radii.len(), (0.0, 0));
        for &entry in radii {
            let g = group(entry.0);
            self.order[next[g]] = entry;
            next[g] += 1;
        }
    }

    /// The positions whose radius is at most `distance`.
    pub fn within(&self, distance: f64) -> impl Iterator<Item = usize> + '_ {
        self.order[..self.starts[group(distance) + 1]].iter().filter(move |e| e.0 <= distance).map(|e| e.1 as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_returns_exactly_the_radii_up_to_the_distance() {
        let radii: Vec<(f64, u32)> = [0.0, 1e-9, 3e-4, 2.5e-4, 0.5, 0.25, 7.0, f64::INFINITY]
            .iter()
            .enumerate()
            .map(|(i, &r)| (r, i as u32))
            .collect();
        let mut index = Radii::default();
        index.rebuild(&radii);
        for distance in [0.0, 1e-9, 2.6e-4, 3e-4, 0.3, 0.5, 100.0, f64::INFINITY] {
            let mut got: Vec<usize> = index.within(distance).collect();
            got.sort_unstable();
            let want: Vec<usize> = radii.iter().filter(|e| e.0 <= distance).map(|e| e.1 as usize).collect();
            assert_eq!(got, want, "distance {distance}");
        }
    }
}
