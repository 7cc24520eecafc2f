//! The `arbiter oasis` command: a cluster and jobs as JSON in, OASiS's decision on each job (in
//! arrival order) out, with the payoff, utility and priced cost that made it and the schedule of
//! each admitted job; with `--baselines`, the same jobs under FIFO, DRF, RRH or Dorm in the slot
//! simulator beside it. The command line (`src/cli.rs`) only dispatches here.

use super::run::{check_sizes, validate, RunOutcome};
use super::scheme::Scheme;
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::scheduling::oasis::{ClusterSpec, Decision, JobSpec, LowestUtility, Oasis, PriceParameters};
use serde::{Deserialize, Serialize};

/// Flags of `arbiter oasis`.
#[derive(Debug, Clone, clap::Args)]
pub struct OasisArgs {
    /// `{"cluster": {...}, "jobs": [...]}` (docs/oasis.md), a file or `-` for standard input.
    #[arg(long)]
    pub input: String,
    /// Which utility sets the lowest unit utility L: `shortest` (each job's at its shortest
    /// duration) or `horizon` (at the end of the horizon, the paper's).
    #[arg(long, default_value = "shortest")]
    pub lowest: String,
    /// U estimated at this factor of its value.
    #[arg(long, default_value_t = 1.0)]
    pub u: f64,
    /// L estimated at this factor of its value.
    #[arg(long, default_value_t = 1.0)]
    pub l: f64,
    /// Also run the jobs under these baselines (comma-separated: `fifo`, `drf`, `rrh`, `dorm`;
    /// `fifo` and `rrh` with `:workers=N` workers per job; `docs/oasis.md` describes each) and
    /// report each one's total utility and every job's fate.
    #[arg(long, value_name = "SCHEMES")]
    pub baselines: Option<String>,
}

/// What the command reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OasisInput {
    pub cluster: ClusterSpec,
    pub jobs: Vec<JobSpec>,
}

/// What it prints.
#[derive(Debug, Clone, Serialize)]
pub struct OasisOutput {
    pub prices: PriceParameters,
    pub competitive_ratio_bound: f64,
    pub total_utility: f64,
    pub admitted: usize,
    pub decisions: Vec<Decision>,
    /// With `--baselines`: each one's run over the same jobs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub baselines: Vec<RunOutcome>,
}

/// Decides every job of `text` (the input's JSON), and runs it under each of `baselines`.
pub fn decide_all(text: &str, lowest: LowestUtility, u: f64, l: f64, baselines: &[String]) -> Result<OasisOutput> {
    let input: OasisInput = crate::contract::json::read(text).map_err(|e| e.into_error(""))?;
    let jobs = validate(&input.cluster, &input.jobs)?;
    // Before the baselines run: a refused --u or --l would otherwise come after them.
    let prices = PriceParameters::estimate_with(&jobs, &input.cluster, lowest)?.scaled(u, l)?;
    let mut oasis = Oasis::new(input.cluster.clone(), prices)?;
    check_sizes(&oasis, &jobs)?;
    let mut schemes: Vec<Scheme> = Vec::with_capacity(baselines.len());
    for spec in baselines {
        let not_one = || {
            ArbiterError::at(
                ErrorCode::UnknownPolicy,
                "baselines",
                format!("unknown baseline {spec:?}: fifo, drf, rrh or dorm (fifo and rrh take :workers=N)"),
            )
        };
        let scheme = match Scheme::parse(spec, "baselines") {
            Ok(scheme @ Scheme::Baseline { .. }) => scheme,
            Ok(Scheme::Oasis { .. }) => return Err(not_one()),
            Err(e) if e.code == ErrorCode::UnknownPolicy => return Err(not_one()),
            Err(e) => return Err(e),
        };
        if schemes.iter().any(|s| s.label() == scheme.label()) {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "baselines",
                format!("--baselines names {} twice: it would run and print the same run twice", scheme.label()),
            ));
        }
        schemes.push(scheme);
    }
    let mut runs = Vec::with_capacity(schemes.len());
    for scheme in &schemes {
        runs.push(scheme.run(&input.cluster, &jobs, Backend::default(), &mut |_| {})?.0);
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| (jobs[i].spec.arrival_slot, i));
    let mut decisions = Vec::with_capacity(jobs.len());
    for i in order {
        decisions.push(oasis.decide(&jobs[i])?);
    }
    let admitted = decisions.iter().filter(|d| d.admitted).count();
    let total_utility = decisions.iter().filter(|d| d.admitted).map(|d| d.utility).sum();
    Ok(OasisOutput {
        prices,
        competitive_ratio_bound: prices.competitive_ratio_bound(),
        total_utility,
        admitted,
        decisions,
        baselines: runs,
    })
}

pub fn run(args: &OasisArgs) -> Result<String> {
    let lowest = LowestUtility::from_name(&args.lowest).ok_or_else(|| {
        ArbiterError::at(
            ErrorCode::MalformedRequest,
            "lowest",
            format!("--lowest is shortest or horizon, not {:?}", args.lowest),
        )
    })?;
    let input = &args.input;
    let text = crate::contract::json::read_input(input)?;
    let baselines: Vec<String> = args
        .baselines
        .as_deref()
        .map(|list| list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let output = decide_all(&text, lowest, args.u, args.l, &baselines)?;
    Ok(serde_json::to_string_pretty(&output).expect("the output serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HAND: &str = r#"{
      "cluster": {"slot_seconds": 100, "slots": 2,
                  "worker_servers": [{"gpus": 2, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 2}],
                  "ps_servers": [{"gpus": 0, "cpus": 2, "memory_gb": 0, "bandwidth_mbps": 4}]},
      "jobs": [
        {"id": "A", "arrival_slot": 0, "epochs": 2, "chunks": 5, "minibatches_per_chunk": 10,
         "minibatch_seconds": 1, "gradient_mb": 0.0625,
         "worker": {"gpus": 1, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 1},
         "parameter_server": {"gpus": 0, "cpus": 1, "memory_gb": 0, "bandwidth_mbps": 2},
         "utility": {"kind": "constant", "value": 20}},
        {"id": "C", "arrival_slot": 1, "epochs": 1, "chunks": 5, "minibatches_per_chunk": 10,
         "minibatch_seconds": 1, "gradient_mb": 0.0625,
         "worker": {"gpus": 1, "cpus": 0, "memory_gb": 0, "bandwidth_mbps": 1},
         "parameter_server": {"gpus": 0, "cpus": 1, "memory_gb": 0, "bandwidth_mbps": 2},
         "utility": {"kind": "sigmoid", "priority": 16, "decay": 0, "target": 1}}
      ]}"#;

    #[test]
    fn decides_a_json_workload_in_arrival_order() {
        let out = decide_all(HAND, LowestUtility::AtShortest, 1.0, 1.0, &[]).unwrap();
        assert_eq!(out.decisions.iter().map(|d| d.job.as_str()).collect::<Vec<_>>(), vec!["A", "C"]);
        assert_eq!(out.admitted, 2);
        assert!((out.total_utility - 28.0).abs() < 1e-9); // 20 + 16/2
        let text = serde_json::to_string(&out).unwrap();
        assert!(text.contains("\"completion_slot\":0") && text.contains("\"completion_slot\":1"));
    }

    /// The two jobs under every baseline: each admits both (FIFO, DRF and Dorm admit all; RRH
    /// finds no delay cost against an empty backlog), and each finishes A (2 worker-slots, 2
    /// workers fit) in slot 0 and C in slot 1, worth 20 + 8. Dorm's MILP needs HiGHS.
    #[test]
    fn baselines_run_the_same_jobs() {
        let mut names: Vec<String> = ["fifo", "drf", "rrh"].map(String::from).to_vec();
        if Backend::default().solves_integer_programs() {
            names.push("dorm".into());
        }
        let out = decide_all(HAND, LowestUtility::AtShortest, 1.0, 1.0, &names).unwrap();
        assert_eq!(out.baselines.iter().map(|r| r.scheme.as_str()).collect::<Vec<_>>(), names);
        for run in &out.baselines {
            assert_eq!(run.admitted, 2, "{}", run.scheme);
            let done: Vec<Option<usize>> = run.jobs.iter().map(|j| j.completion_slot).collect();
            assert_eq!(done, vec![Some(0), Some(1)], "{}", run.scheme);
            assert!((run.total_utility - 28.0).abs() < 1e-9, "{}: {}", run.scheme, run.total_utility);
        }
        for (spec, code) in [
            ("sjf", ErrorCode::UnknownPolicy),
            ("oasis", ErrorCode::UnknownPolicy),
            ("rrh:workers=0", ErrorCode::InvalidNumber),
            ("drf:workers=2", ErrorCode::MalformedRequest),
        ] {
            let err = decide_all(HAND, LowestUtility::AtShortest, 1.0, 1.0, &[spec.into()]).unwrap_err();
            assert_eq!((err.code, err.field.as_deref()), (code, Some("baselines")), "{spec}");
        }
    }

    /// FIFO and RRH at one worker per job: A's 2 worker-slots take slots 0 and 1.
    #[test]
    fn fixed_baselines_run_the_workers_they_are_given() {
        let names: Vec<String> = ["fifo:workers=1", "rrh:workers=1"].map(String::from).to_vec();
        let out = decide_all(HAND, LowestUtility::AtShortest, 1.0, 1.0, &names).unwrap();
        for (run, name) in out.baselines.iter().zip(&names) {
            assert_eq!(&run.scheme, name);
            assert_eq!(run.jobs[0].completion_slot, Some(1), "{name}");
        }
    }

    #[test]
    fn bad_input_names_the_field() {
        let err =
            decide_all(&HAND.replace("\"epochs\": 2", "\"epochs\": -2"), LowestUtility::AtShortest, 1.0, 1.0, &[])
                .unwrap_err();
        assert_eq!(err.code, ErrorCode::MalformedRequest);
        assert_eq!(err.field.as_deref(), Some("jobs[0].epochs"));
        let err = decide_all(&HAND.replace("\"epochs\": 2", "\"epochs\": 0"), LowestUtility::AtShortest, 1.0, 1.0, &[])
            .unwrap_err();
        assert_eq!(err.field.as_deref(), Some("jobs[0].epochs"));
        let err = decide_all(HAND, LowestUtility::AtShortest, f64::NAN, 1.0, &[]).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidNumber);
    }
}
