//! The ambiguous set of a price decomposition (`max_min_ratio::decomposition`,
//! `max_weighted_throughput`): the jobs kept as full columns in its recovery LP. Each round adds
//! the jobs nearest a change of best response (smallest margin); after a recovery LP the jobs whose
//! certificate failed join it, unless far more failed than the band holds (the estimate's prices
//! were too far off for the band to absorb), in which case the band doubles and the round is
//! played again from the same estimate.

use crate::max_min_ratio::DecompositionOptions;

/// What the caller does after a recovery LP (`Band::absorb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Absorbed {
    /// The failed jobs joined the set; the recovered prices stand.
    Joined,
    /// Too many failed: the band doubled; keep the estimate and play the round again.
    Widened,
}

#[derive(Debug, Clone)]
pub struct Band {
    /// Per job (by position in the level's job list): whether it is ambiguous.
    pub contains: Vec<bool>,
    /// The ambiguous jobs' positions, in the order they joined.
    pub members: Vec<usize>,
    width: usize,
    first_width: usize,
    max: usize,
}

impl Band {
    pub fn new(jobs: usize, options: &DecompositionOptions) -> Band {
        Band {
            contains: vec![false; jobs],
            members: Vec::new(),
            width: options.band,
            first_width: options.band,
            max: options.max_ambiguous,
        }
    }

    /// The first band's width on a level of `jobs` jobs: `band`, at most a quarter of them (a
    /// band of 256 would be every job of a 256-job instance).
    pub fn first_width(jobs: usize, band: usize) -> usize {
        band.min((jobs / 4).max(1))
    }

    /// How many jobs the next `add_nearest` adds at most.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Adds the band's width of jobs of smallest margin among `margins` (`(margin, position)` of
    /// the jobs not yet ambiguous; reordered).
    pub fn add_nearest(&mut self, margins: &mut [(f64, u32)]) {
        let band = self.width.min(margins.len());
        if band > 0 && band < margins.len() {
            margins.select_nth_unstable_by(band - 1, |a, b| a.0.total_cmp(&b.0));
        }
        for &(_, i) in &margins[..band] {
            self.contains[i as usize] = true;
            self.members.push(i as usize);
        }
    }

    /// Whether the set has grown past its bound (the caller gives up on the decomposition).
    pub fn outgrown(&self) -> bool {
        self.members.len() > self.max
    }

    /// Doubles the width when it can; `false` when it is already at the bound.
    pub fn widen(&mut self) -> bool {
        if self.width >= self.max {
            return false;
        }
        self.width = (self.width * 2).min(self.max);
        true
    }

    /// After a recovery LP whose certificate failed for `failures`: they join the set (and the
    /// next round adds a quarter band), or, when far more failed than the band holds and it can
    /// still grow, the band widens instead.
    pub fn absorb(&mut self, failures: &[usize]) -> Absorbed {
        if failures.len() > 4 * self.width.max(64) && self.widen() {
            return Absorbed::Widened;
        }
        for &i in failures {
            self.contains[i] = true;
            self.members.push(i);
        }
        self.width = (self.first_width / 4).max(1);
        Absorbed::Joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(band: usize, max: usize) -> DecompositionOptions {
        DecompositionOptions { band, max_ambiguous: max, ..Default::default() }
    }

    #[test]
    fn the_nearest_jobs_join_and_failures_follow() {
        let mut band = Band::new(6, &options(2, 10));
        let mut margins = vec![(0.5, 0), (0.1, 1), (0.9, 2), (0.05, 3), (0.7, 4), (0.3, 5)];
        band.add_nearest(&mut margins);
        let mut members = band.members.clone();
        members.sort();
        assert_eq!(members, vec![1, 3]);
        assert_eq!(band.absorb(&[5]), Absorbed::Joined);
        assert!(band.contains[5] && !band.contains[0]);
        assert!(!band.outgrown());
    }

    #[test]
    fn a_flood_of_failures_widens_the_band_until_its_bound() {
        let mut band = Band::new(1000, &options(1, 4));
        let failures: Vec<usize> = (0..300).collect();
        assert_eq!(band.absorb(&failures), Absorbed::Widened);
        assert_eq!(band.absorb(&failures), Absorbed::Widened);
        // Width 4 is the bound: the failures join, and the set has outgrown it.
        assert_eq!(band.absorb(&failures), Absorbed::Joined);
        assert!(band.outgrown());
    }
}
