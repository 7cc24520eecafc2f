//! Rounds that follow the realizability decomposition (`Mode::Configurations`). The allocation
//! is decomposed into round configurations (`solver::realizability`, with its shortfall, if any,
//! spread so that every job keeps the same fraction of its time), which delivers each job `d[m][w]`
//! of its time on each type. Every round runs the configuration of the decomposition whose jobs
//! are owed the most time against `d` by the end of the round (max-weight over the decomposition's
//! configurations, by the sum of squares: `d` lies in their convex hull, so what each job is owed
//! stays bounded), less the jobs that running would leave more than `AHEAD_ROUNDS` rounds ahead.
//! Rounds choose jobs by priority instead while there is no certified decomposition to follow.
//! See `formulations/round_mechanism.md`.

use super::session::Session;
use super::JobId;
use crate::solver::realizability::{Budget, Configuration, Realizability, RealizabilityReport};

/// Seconds the decomposition may take. Its work is bounded by the budget's iterations, work and
/// pricing nodes, so that a session's rounds do not depend on the machine's load; this only stops
/// a pathological case.
const DECOMPOSITION_SECONDS: f64 = 10.0;

/// A job sits out its configuration when running would leave it more than this many rounds ahead
/// of what the decomposition delivers it. Less makes jobs that sit out lag behind (on a 256-job
/// reference case after 200 rounds: 0.027 off with 1/2, 0.017 with 1, 0.0115 with 3/2).
pub(super) const AHEAD_ROUNDS: f64 = 1.5;

/// Entries (job, type) up to which the decomposition the rounds follow is made by column
/// generation (the check's default stops at 128, to stay cheap in every response).
const MAX_MASTER_ENTRIES: usize = 1024;

/// The decomposition's work at most (`Budget::work`; about 2 s on the benchmark's machine, 20
/// times a response's check). On the 150 seeds of `mechanism_realizability`'s summary, every
/// decomposition that certifies needs at most 9.5 million; the ones it stops (300 master solves
/// or this) never certify, and the rounds then fall back on the priority selection either way.
const DECOMPOSITION_WORK: u64 = 12_000_000;

/// The check's budget for a decomposition the rounds follow: bounded by work rather than time,
/// larger than a response's, and spreading any shortfall over the jobs.
pub(super) fn budget() -> Budget {
    Budget {
        seconds: DECOMPOSITION_SECONDS,
        max_master_entries: MAX_MASTER_ENTRIES,
        spread_shortfall: true,
        work: DECOMPOSITION_WORK,
        ..Budget::default()
    }
}

/// One allocation's decomposition, or why the rounds cannot follow one.
#[derive(Debug, Clone)]
pub(super) struct Schedule {
    /// The session's jobs when decomposed, and the healthy GPUs per type then: a change in either
    /// makes the schedule stale.
    jobs: Vec<JobId>,
    capacity: Vec<u32>,
    pub(super) plan: Result<Plan, String>,
    /// The check that made it, as the session's views report it.
    pub(super) report: RealizabilityReport,
}

/// A decomposition the rounds follow, and the time it delivers each (job, type).
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// The configurations with positive weight, `[(job, worker type)]`.
    configurations: Vec<Vec<(usize, usize)>>,
    /// `d[m][w]`: the fraction of time the decomposition delivers job `m` on type `w`.
    deliverable: Vec<Vec<f64>>,
    /// The configuration the last round ran (ties go to it: leases stay).
    last: Option<usize>,
}

impl Schedule {
    /// The decomposition of the session's allocation, or the reason there is none to follow: the
    /// check does not cover the allocation (space sharing, past its size budget, an LP failure)
    /// or does not prove its decomposition delivers the most (its budget ran out first; the
    /// priority selection then does better).
    pub(super) fn decompose(session: &Session) -> Schedule {
        let jobs: Vec<JobId> = session.jobs.iter().map(|j| j.id.clone()).collect();
        let capacity = session.capacity();
        let (result, report) = super::realizable::checked(session, &budget());
        let plan = result.and_then(|result| Plan::of(&result, jobs.len(), capacity.len()));
        Schedule { jobs, capacity, plan, report }
    }

    /// The decomposition a realizable solve made of the allocation just installed (configurations
    /// of session job indices with their weights): everything asked is delivered.
    pub(super) fn followed(session: &Session, configurations: &[super::allocation::WeightedRuns]) -> Schedule {
        let jobs: Vec<JobId> = session.jobs.iter().map(|j| j.id.clone()).collect();
        let capacity = session.capacity();
        let (instance, ids) = match super::realizable::instance(session) {
            Ok(found) => found,
            Err(why) => {
                return Schedule { jobs, capacity, plan: Err(why.clone()), report: RealizabilityReport::skipped(why) }
            }
        };
        let runs = configurations
            .iter()
            .map(|(weight, runs)| {
                (*weight, Configuration::new(runs.iter().map(|&(m, w)| (m as u32, w as u32)).collect()))
            })
            .collect();
        let result = Realizability::of_configurations(&instance.requested, &[], &[], runs, 0);
        let (ids, types) = super::realizable::names(session, &ids);
        let report = crate::solver::realizability::report_of(&result, &ids, &types, 0.0);
        let plan = Plan::of(&result, jobs.len(), capacity.len());
        Schedule { jobs, capacity, plan, report }
    }

    /// Whether the session's jobs or healthy GPUs changed since the decomposition.
    pub(super) fn is_current(&self, session: &Session) -> bool {
        self.capacity == session.capacity()
            && self.jobs.len() == session.jobs.len()
            && self.jobs.iter().zip(&session.jobs).all(|(a, b)| *a == b.id)
    }
}

impl Plan {
    /// The plan of a certified decomposition of `jobs` × `types`.
    fn of(result: &Realizability, jobs: usize, types: usize) -> Result<Plan, String> {
        if let Some(why) = &result.stopped {
            return Err(format!("the decomposition is not certified ({why})"));
        }
        let mut deliverable = vec![vec![0.0; types]; jobs];
        for &(m, w, _, d) in &result.entries {
            deliverable[m][w] = d;
        }
        let configurations = result
            .configurations
            .iter()
            .map(|(_, c)| c.runs.iter().map(|&(m, w)| (m as usize, w as usize)).collect())
            .collect();
        Ok(Plan { configurations, deliverable, last: None })
    }

    /// The runs of this round of `seconds`: the configuration whose runs are owed the most time by
    /// the end of the round, `owed(m, w, d[m][w])` seconds each, by `Σ max(owed, 0)²` (squares
    /// favour the configurations of the jobs furthest behind: 0.0115 off after 200 rounds on the
    /// reference cases against 0.0170 with plain sums), less its runs that running would leave
    /// more than `ahead` seconds ahead; none when nothing is owed.
    pub(super) fn next(
        &mut self,
        owed: impl Fn(usize, usize, f64) -> f64,
        seconds: f64,
        ahead: f64,
    ) -> Vec<(usize, usize)> {
        let d = &self.deliverable;
        let weight =
            |c: &[(usize, usize)]| -> f64 { c.iter().map(|&(m, w)| owed(m, w, d[m][w]).max(0.0).powi(2)).sum() };
        let mut best = self.last.map(|c| (c, weight(&self.configurations[c])));
        for (c, runs) in self.configurations.iter().enumerate() {
            let v = weight(runs);
            if best.is_none_or(|(_, b)| v > b + 1e-9) {
                best = Some((c, v));
            }
        }
        match best {
            Some((c, v)) if v > 0.0 => {
                self.last = Some(c);
                let runs = |&(m, w): &(usize, usize)| seconds - owed(m, w, d[m][w]) <= ahead + 1e-9 * seconds;
                self.configurations[c].iter().copied().filter(runs).collect()
            }
            _ => {
                self.last = None;
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan over one type, configurations of job indices, delivering `d` to each job.
    fn schedule(configurations: &[&[usize]], d: &[f64]) -> Plan {
        Plan {
            configurations: configurations.iter().map(|c| c.iter().map(|&m| (m, 0)).collect()).collect(),
            deliverable: d.iter().map(|&v| vec![v]).collect(),
            last: None,
        }
    }

    /// Runs `rounds` rounds of one second and returns each job's rounds run.
    fn play(s: &mut Plan, jobs: usize, rounds: u32, mut check: impl FnMut(u32, &[f64])) -> Vec<f64> {
        let mut received = vec![0.0; jobs];
        for t in 1..=rounds {
            let now = received.clone();
            for (m, _) in s.next(|m, _, d| d * t as f64 - now[m], 1.0, 0.5) {
                received[m] += 1.0;
            }
            check(t, &received);
        }
        received
    }

    #[test]
    fn every_job_receives_what_the_decomposition_delivers_within_a_few_rounds() {
        // Five configurations over six jobs, weights 0.4, 0.25, 0.2, 0.1, 0.05.
        let configurations: [&[usize]; 5] = [&[0, 1], &[0, 2, 3], &[1, 4], &[2, 5], &[3, 4, 5]];
        let weights = [0.4, 0.25, 0.2, 0.1, 0.05];
        let mut d = vec![0.0; 6];
        for (c, &l) in configurations.iter().zip(&weights) {
            for &m in *c {
                d[m] += l;
            }
        }
        let mut s = schedule(&configurations, &d);
        play(&mut s, 6, 2000, |t, received| {
            for m in 0..6 {
                let off = received[m] - d[m] * t as f64;
                assert!(off.abs() <= 2.5, "round {t}: job {m} ran {} of {}", received[m], d[m] * t as f64);
            }
        });
    }

    #[test]
    fn a_job_ahead_sits_out_and_ties_keep_the_last_configuration() {
        // Two configurations, {0, 1} and {0, 2}; job 0 is delivered 1/2 only (the decomposition
        // supplies it more than it asks), 1 and 2 a half each.
        let mut s = schedule(&[&[0, 1], &[0, 2]], &[0.5, 0.5, 0.5]);
        let received = play(&mut s, 3, 100, |t, received| {
            assert!(received[0] <= 0.5 * t as f64 + 0.5 + 1e-9, "round {t}: job 0 ahead: {received:?}");
        });
        assert_eq!(received, vec![50.0, 50.0, 50.0]);
        // A decomposition that delivers everything all the time: the same configuration every
        // round (its jobs keep their GPUs).
        let mut s = schedule(&[&[0, 1, 2, 3]], &[1.0; 4]);
        for t in 1..=5 {
            assert_eq!(s.next(|_, _, d| d * t as f64 - (t - 1) as f64, 1.0, 0.5).len(), 4);
        }
        // Nothing owed: nothing runs.
        let mut s = schedule(&[&[0]], &[0.0]);
        assert!(s.next(|_, _, d| d, 1.0, 0.5).is_empty());
    }
}
