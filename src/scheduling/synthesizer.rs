//! The scheduler synthesizer (Blox §5.2): every `every_rounds` rounds, fork the live state under
//! every candidate composition, play each forward `horizon_rounds` rounds in parallel (rayon), score
//! the forks on the chosen metric and switch the live pipeline to the best. It knows no future
//! arrivals: each fork plays the jobs present now. It reports what it chose and the scores why.
//!
//! Scores over the jobs present at the check (admitted or waiting), in seconds, a job unfinished
//! at the horizon counted as finishing there:
//! - `jct`: mean of `finish − arrival`;
//! - `responsiveness`: mean of `first run − arrival` (a job not yet run: the horizon);
//! - `both`: the sum of the two, each normalized by the current composition's value.

use super::simulation::play_round;
use super::{Composition, Pipeline};
use crate::error::{ArbiterError, ErrorCode, Result};
use rayon::prelude::*;
use serde::Serialize;

/// What the synthesizer optimizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Jct,
    Responsiveness,
    Both,
}

impl Metric {
    pub fn from_name(name: &str) -> Result<Metric> {
        match name {
            "jct" => Ok(Metric::Jct),
            "responsiveness" => Ok(Metric::Responsiveness),
            "both" => Ok(Metric::Both),
            other => Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "metric",
                format!("unknown synthesizer metric {other:?}; expected jct, responsiveness or both"),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::Jct => "jct",
            Metric::Responsiveness => "responsiveness",
            Metric::Both => "both",
        }
    }
}

/// The synthesizer's settings and candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct Synthesizer {
    pub candidates: Vec<Composition>,
    pub every_rounds: u64,
    pub horizon_rounds: u64,
    pub metric: Metric,
}

/// One candidate's forecast at a check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    pub composition: String,
    pub average_jct_seconds: f64,
    pub average_responsiveness_seconds: f64,
    /// What was minimized.
    pub score: f64,
}

/// One check: when, what ran before, what was chosen, and every candidate's forecast.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    pub round: u64,
    pub time_seconds: f64,
    pub previous: String,
    pub chosen: String,
    pub reason: String,
    pub scores: Vec<Score>,
}

/// Blox's nine candidates: FIFO, SRTF and LAS, each with `accept_all`, `accept_x=1.2` and
/// `accept_x=1.5`, consolidated placement, lease preemption.
pub fn blox_candidates() -> Vec<Composition> {
    let mut out = Vec::new();
    for scheduling in ["fifo", "srtf", "las"] {
        for admission in ["accept_all", "accept_x=1.2", "accept_x=1.5"] {
            out.push(
                Composition::from_flags(None, Some(admission), Some(scheduling), Some("consolidated"), Some("lease"))
                    .expect("the candidates are valid"),
            );
        }
    }
    out
}

impl Synthesizer {
    /// Blox's nine candidates, checked every `every_rounds` over `horizon_rounds`.
    pub fn new(candidates: Vec<Composition>, every_rounds: u64, horizon_rounds: u64, metric: Metric) -> Result<Self> {
        if candidates.is_empty() {
            return Err(ArbiterError::at(ErrorCode::MissingField, "candidates", "the synthesizer needs a candidate"));
        }
        for (field, v) in [("every_rounds", every_rounds), ("horizon_rounds", horizon_rounds)] {
            if v == 0 {
                return Err(ArbiterError::at(ErrorCode::InvalidNumber, field, format!("{field} must be at least 1")));
            }
        }
        for c in &candidates {
            c.list_scheduling()?;
            c.validate()?;
        }
        Ok(Synthesizer { candidates, every_rounds, horizon_rounds, metric })
    }

    /// Blox's nine candidates with options `every=N`, `horizon=N`, `metric=jct|responsiveness|both`
    /// (defaults: every 12 rounds, a 24-round horizon, average JCT).
    pub fn parse<'a>(options: impl IntoIterator<Item = &'a str>) -> Result<Synthesizer> {
        let (mut every, mut horizon, mut metric) = (12u64, 24u64, Metric::Jct);
        let mut given: Vec<&str> = Vec::new();
        for part in options.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || {
                ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "synthesizer",
                    format!("synthesizer options are every=N, horizon=N, metric=jct|responsiveness|both, got {part:?}"),
                )
            };
            let (key, value) = part.split_once('=').ok_or_else(bad)?;
            // The last would win and the first be ignored without a word.
            if given.contains(&key.trim()) {
                return Err(ArbiterError::at(
                    ErrorCode::MalformedRequest,
                    "synthesizer",
                    format!("the synthesizer's options name {} twice: give each at most once", key.trim()),
                ));
            }
            given.push(key.trim());
            // Refused as given (`every=0`, `metric=foo`), naming the flag, not `Synthesizer::new`'s
            // `every_rounds` or the metric's field.
            let rounds = || match value.trim().parse::<u64>() {
                Ok(0) => Err(ArbiterError::at(
                    ErrorCode::InvalidNumber,
                    "synthesizer",
                    format!("the synthesizer's {} must be at least 1 round, got {part:?}", key.trim()),
                )),
                Ok(n) => Ok(n),
                Err(_) => Err(bad()),
            };
            match key.trim() {
                "every" => every = rounds()?,
                "horizon" => horizon = rounds()?,
                "metric" => {
                    metric = Metric::from_name(value.trim()).map_err(|e| e.field_renamed("metric", "synthesizer"))?
                }
                _ => return Err(bad()),
            }
        }
        Synthesizer::new(blox_candidates(), every, horizon, metric)
    }

    /// Forecasts of every candidate from `pipeline`'s state, in candidate order.
    pub fn forecast(&self, pipeline: &Pipeline, round_seconds: f64) -> Result<Vec<(f64, f64)>> {
        let present: Vec<usize> = pipeline.active().iter().chain(pipeline.waiting()).copied().collect();
        self.candidates
            .par_iter()
            .map(|c| {
                let mut fork = pipeline.fork(c, pipeline.rounds())?;
                for _ in 0..self.horizon_rounds {
                    if fork.active().is_empty() && fork.waiting().is_empty() {
                        break;
                    }
                    play_round(&mut fork, round_seconds);
                }
                let end = pipeline.now() + self.horizon_rounds as f64 * round_seconds;
                let n = present.len().max(1) as f64;
                let jct: f64 = present.iter().map(|&j| fork.jobs[j].finish.unwrap_or(end) - fork.jobs[j].arrival).sum();
                let resp: f64 =
                    present.iter().map(|&j| fork.jobs[j].first_run.unwrap_or(end) - fork.jobs[j].arrival).sum();
                Ok((jct / n, resp / n))
            })
            .collect()
    }

    /// Forecasts every candidate, switches `pipeline` to the best (ties: the current one, then
    /// candidate order) and says why.
    pub fn choose_and_switch(&self, pipeline: &mut Pipeline, round_seconds: f64) -> Result<Choice> {
        let forecasts = self.forecast(pipeline, round_seconds)?;
        let previous = pipeline.composition().name();
        let current = self.candidates.iter().position(|c| c.name() == previous);
        let reference = current.map(|i| forecasts[i]).unwrap_or(forecasts[0]);
        let score = |(jct, resp): (f64, f64)| match self.metric {
            Metric::Jct => jct,
            Metric::Responsiveness => resp,
            Metric::Both => jct / reference.0.max(1e-9) + resp / reference.1.max(1e-9),
        };
        let mut best = current.unwrap_or(0);
        for (i, &f) in forecasts.iter().enumerate() {
            if score(f) < score(forecasts[best]) - 1e-9 {
                best = i;
            }
        }
        let chosen = self.candidates[best].name();
        let reason = if chosen == previous {
            format!("{previous} keeps the lowest forecast {} ({:.0})", self.metric.name(), score(forecasts[best]))
        } else {
            format!(
                "{chosen} forecasts {} {:.0} against {:.0} for {previous} over {} rounds",
                self.metric.name(),
                score(forecasts[best]),
                current.map_or(f64::NAN, |i| score(forecasts[i])),
                self.horizon_rounds
            )
        };
        if chosen != previous {
            pipeline.recompose(&self.candidates[best], pipeline.rounds())?;
        }
        Ok(Choice {
            round: pipeline.rounds(),
            time_seconds: pipeline.now(),
            previous,
            chosen,
            reason,
            scores: self
                .candidates
                .iter()
                .zip(&forecasts)
                .map(|(c, &f)| Score {
                    composition: c.name(),
                    average_jct_seconds: f.0,
                    average_responsiveness_seconds: f.1,
                    score: score(f),
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::WorkerType;
    use crate::scheduling::{ClusterState, JobState};

    #[test]
    fn switches_from_fifo_to_srtf_when_a_long_job_blocks_short_ones() {
        // One GPU: a 10-round job arrived first, then three 1-round jobs. Over 13 rounds FIFO
        // finishes them at 10, 11, 12, 13 rounds; SRTF (and LAS) at 1, 2, 3, 13.
        let gpu = WorkerType { name: "v100".into(), count: 1.0, gpus_per_server: 1, cost_per_hour: None };
        let fifo = Composition::from_flags(None, None, Some("fifo"), None, None).unwrap();
        let srtf = Composition::from_flags(None, None, Some("srtf"), None, None).unwrap();
        let mut p = Pipeline::new(&fifo, ClusterState::new(&[gpu]), 0).unwrap();
        p.submit(JobState::new("long", 0.0, 1, vec![1.0], 10.0 * 60.0)).unwrap();
        for k in 0..3 {
            p.submit(JobState::new(format!("short{k}"), 0.0, 1, vec![1.0], 60.0)).unwrap();
        }
        let s = Synthesizer::new(vec![fifo, srtf], 1, 13, Metric::Jct).unwrap();
        let choice = s.choose_and_switch(&mut p, 60.0).unwrap();
        assert_eq!(choice.previous, "accept_all+fifo+consolidated+lease");
        assert_eq!(choice.chosen, "accept_all+srtf+consolidated+lease");
        // Mean JCT in rounds: FIFO (10 + 11 + 12 + 13)/4 = 11.5; SRTF (1 + 2 + 3 + 13)/4 = 4.75.
        assert!((choice.scores[0].average_jct_seconds - 11.5 * 60.0).abs() < 1e-6, "{choice:?}");
        assert!((choice.scores[1].average_jct_seconds - 4.75 * 60.0).abs() < 1e-6, "{choice:?}");
        assert_eq!(p.composition().name(), "accept_all+srtf+consolidated+lease");
        // The live state did not move.
        assert_eq!((p.rounds(), p.jobs[0].remaining_steps), (0, 600.0));
        assert_eq!(Metric::from_name("makespan").unwrap_err().code, ErrorCode::MalformedRequest);
        assert_eq!(Synthesizer::new(blox_candidates(), 0, 1, Metric::Jct).unwrap_err().code, ErrorCode::InvalidNumber);
        assert_eq!(blox_candidates().len(), 9);
    }
}
