//! A scheme of OASiS's study as `arbiter simulate` and `arbiter sweep` name it — OASiS itself
//! (`oasis`, with how its prices are estimated) or one of the baselines (`fifo`, `drf`, `rrh`,
//! `dorm`; FIFO's and RRH's fixed worker count as `workers=N`) — and running it over one
//! workload. The schemes themselves are the scheduling layer's; this only names and runs them.

use super::run::{oasis_reporting, RunOutcome};
use super::slots::simulate_reporting;
use super::study::baseline;
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::scheduling::oasis::{ClusterSpec, Job, LowestUtility, PriceParameters};
use crate::simulator::Progress;

/// The baselines, as `--scheduling` names them.
pub const BASELINES: [&str; 4] = ["fifo", "drf", "rrh", "dorm"];

/// Names only OASiS's workloads have: a policy list or flag naming one of these is about them
/// (`fifo` is also a list policy of the round-based pipeline, so it does not decide).
pub const OWN_NAMES: [&str; 4] = ["oasis", "drf", "rrh", "dorm"];

/// One scheme.
#[derive(Debug, Clone, PartialEq)]
pub enum Scheme {
    /// OASiS with prices estimated from the workload: `L` from each job's utility at `lowest`,
    /// then `U` and `L` taken at `u` and `l` times their estimates.
    Oasis { lowest: LowestUtility, u: f64, l: f64 },
    /// A baseline of `BASELINES`, with the study's settings (`study::baseline`); FIFO and RRH
    /// run `workers` per job when given (`study::FIXED_WORKERS` otherwise).
    Baseline { name: &'static str, workers: Option<u32> },
}

/// The baselines that run a fixed number of workers per job, which `workers=N` sets.
const FIXED_COUNT: [&str; 2] = ["fifo", "rrh"];

impl Scheme {
    /// `oasis[:lowest=shortest|horizon][:u=F][:l=F]`, or a baseline's name (`fifo` and `rrh`
    /// with `[:workers=N]`); refusals name `field`.
    pub fn parse(spec: &str, field: &str) -> Result<Scheme> {
        let bad = |message: String| ArbiterError::at(ErrorCode::MalformedRequest, field, message);
        let mut parts = spec.split(':').map(str::trim);
        let name = parts.next().unwrap_or_default();
        if let Some(&baseline) = BASELINES.iter().find(|&&b| b == name) {
            let mut workers = None;
            for option in parts {
                let value = match option.split_once('=') {
                    Some(("workers", value)) if FIXED_COUNT.contains(&baseline) => value,
                    _ if FIXED_COUNT.contains(&baseline) => {
                        return Err(bad(format!("unknown option {option:?} in {spec:?}; expected workers=N")))
                    }
                    _ => return Err(bad(format!("{name} takes no options, got {option:?} in {spec:?}"))),
                };
                let n = value.parse::<u32>().ok().filter(|&n| n >= 1).ok_or_else(|| {
                    ArbiterError::at(
                        ErrorCode::InvalidNumber,
                        field,
                        format!("workers must be a whole number ≥ 1, got {value:?} in {spec:?}"),
                    )
                })?;
                workers = Some(n);
            }
            return Ok(Scheme::Baseline { name: baseline, workers });
        }
        if name != "oasis" {
            return Err(ArbiterError::at(
                ErrorCode::UnknownPolicy,
                field,
                format!("unknown scheme {name:?} for an OASiS workload; expected oasis, {}", BASELINES.join(", ")),
            ));
        }
        let (mut lowest, mut u, mut l) = (LowestUtility::AtShortest, 1.0, 1.0);
        for option in parts {
            let (key, value) = option.split_once('=').unwrap_or((option, ""));
            let factor = || -> Result<f64> {
                value.parse::<f64>().ok().filter(|&f| crate::problem::positive_refusal(f, key).is_none()).ok_or_else(|| {
                    ArbiterError::at(
                        ErrorCode::InvalidNumber,
                        field,
                        format!(
                            "{key} must be a factor > 0, of magnitude between 1e-100 and 1e100, got {value:?} in {spec:?}"
                        ),
                    )
                })
            };
            match key {
                "lowest" => {
                    lowest = LowestUtility::from_name(value)
                        .ok_or_else(|| bad(format!("lowest is shortest or horizon, got {value:?} in {spec:?}")))?
                }
                "u" => u = factor()?,
                "l" => l = factor()?,
                _ => return Err(bad(format!("unknown option {option:?} in {spec:?}; expected lowest=, u= or l="))),
            }
        }
        Ok(Scheme::Oasis { lowest, u, l })
    }

    /// The name it is parsed from, options at their values: `oasis`, `oasis:u=0.5`, `drf`,
    /// `rrh:workers=4`.
    pub fn label(&self) -> String {
        match self {
            Scheme::Baseline { name, workers: None } => name.to_string(),
            Scheme::Baseline { name, workers: Some(n) } => format!("{name}:workers={n}"),
            Scheme::Oasis { lowest, u, l } => {
                let mut label = String::from("oasis");
                if *lowest == LowestUtility::AtHorizon {
                    label.push_str(":lowest=horizon");
                }
                for (key, value) in [("u", u), ("l", l)] {
                    if *value != 1.0 {
                        // 1e-50 as itself, not as 52 digits.
                        label.push_str(&format!(":{key}={}", crate::problem::shown(*value)));
                    }
                }
                label
            }
        }
    }

    /// Runs over `jobs` (validated against `cluster`); OASiS also returns its prices.
    /// `progress` hears after each decision (OASiS) or slot (a baseline).
    pub fn run(
        &self,
        cluster: &ClusterSpec,
        jobs: &[Job],
        backend: Backend,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(RunOutcome, Option<PriceParameters>)> {
        match *self {
            Scheme::Oasis { lowest, u, l } => {
                let (mut run, prices) = oasis_reporting(cluster, jobs, lowest, u, l, progress)?;
                run.scheme = self.label();
                Ok((run, Some(prices)))
            }
            Scheme::Baseline { name, workers } => {
                let mut scheme =
                    baseline(name, cluster, backend, workers).expect("BASELINES are the study's baselines");
                let mut run = simulate_reporting(cluster, jobs, scheme.as_mut(), progress)?;
                run.scheme = self.label();
                Ok((run, None))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_scheme_and_its_options() {
        assert_eq!(Scheme::parse("drf", "f").unwrap(), Scheme::Baseline { name: "drf", workers: None });
        let rrh = Scheme::parse("rrh:workers=4", "f").unwrap();
        assert_eq!(rrh, Scheme::Baseline { name: "rrh", workers: Some(4) });
        assert_eq!(rrh.label(), "rrh:workers=4");
        let s = Scheme::parse("oasis:lowest=horizon:u=0.5", "f").unwrap();
        assert_eq!(s, Scheme::Oasis { lowest: LowestUtility::AtHorizon, u: 0.5, l: 1.0 });
        assert_eq!(s.label(), "oasis:lowest=horizon:u=0.5");
        assert_eq!(Scheme::parse(" oasis ", "f").unwrap().label(), "oasis");
        for (spec, code) in [
            ("sjf", ErrorCode::UnknownPolicy),
            ("rrh:u=2", ErrorCode::MalformedRequest),
            ("drf:workers=4", ErrorCode::MalformedRequest),
            ("fifo:workers=0", ErrorCode::InvalidNumber),
            ("rrh:workers=2.5", ErrorCode::InvalidNumber),
            ("rrh:workers", ErrorCode::MalformedRequest),
            ("oasis:u=0", ErrorCode::InvalidNumber),
            ("oasis:l=nan", ErrorCode::InvalidNumber),
            ("oasis:lowest=median", ErrorCode::MalformedRequest),
            ("oasis:eta=2", ErrorCode::MalformedRequest),
        ] {
            let e = Scheme::parse(spec, "policies").unwrap_err();
            assert_eq!((e.code, e.field.as_deref()), (code, Some("policies")), "{spec}");
        }
    }
}
