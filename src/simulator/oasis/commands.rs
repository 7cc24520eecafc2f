//! `arbiter simulate` and `arbiter sweep` on OASiS's workloads: which sweeps are OASiS's (the
//! sweep names one of its schemes; `cli::TraceKind` tells its workloads), the
//! scheme the stage flags name, and refusing the flags that only mean something in rounds.
//! `simulator::cli` dispatches here; the runs are `scheme`'s, the output `report`'s and `sweep`'s.

use super::cli::OasisInput;
use super::report::OasisReport;
use super::run::validate;
use super::scheme::{Scheme, BASELINES, OWN_NAMES};
use super::sweep::{self, OasisSweep};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::simulator::cli::{
    backend_named, in_parallel, number_list, refuse_given, round_only_flags, round_only_sweep_flags, write_file,
    write_output, write_report, SimulateArgs, SweepArgs,
};
use crate::simulator::progress::ProgressBar;
use std::time::Instant;

/// Whether a stage flag's value names something only OASiS's workloads have (`oasis`, `drf`,
/// `rrh`, `dorm`).
pub fn names_own_scheme(value: Option<&str>) -> bool {
    value.is_some_and(|v| OWN_NAMES.contains(&v.split(':').next().unwrap_or_default().trim()))
}

/// A round-based trace given with a stage only OASiS's workloads have.
pub fn refuse_for_rounds(admission: Option<&str>, scheduling: Option<&str>) -> Result<()> {
    for (field, value) in [("admission", admission), ("scheduling", scheduling)] {
        if names_own_scheme(value) {
            return Err(ArbiterError::at(
                ErrorCode::Unsupported,
                field,
                format!(
                    "--{field} {} runs on an OASiS workload (a JSON {{\"cluster\", \"jobs\"}} of worker and \
                     parameter-server servers over slots, docs/oasis.md); this trace's jobs have no epochs, \
                     chunks or utilities",
                    value.unwrap_or_default()
                ),
            ));
        }
    }
    Ok(())
}

/// What an OASiS run is instead of rounds, for refusing round-only flags.
const NOT_ROUNDS: &str = "an OASiS workload runs in slots on its own cluster of worker and parameter-server servers";

/// The scheme `--admission` and `--scheduling` name: `--admission oasis[:OPTIONS]` alone, or a
/// baseline as `--scheduling` (admission `accept_all` or none).
fn scheme_of(admission: Option<&str>, scheduling: Option<&str>) -> Result<Scheme> {
    let admission = admission.map(str::trim).filter(|a| *a != "accept_all");
    match (admission, scheduling) {
        (Some(a), None) if a.split(':').next() == Some("oasis") => Scheme::parse(a, "admission"),
        (Some(a), Some(_)) if a.split(':').next() == Some("oasis") => Err(ArbiterError::at(
            ErrorCode::MalformedRequest,
            "scheduling",
            format!(
                "OASiS runs each job it admits on the schedule it admitted it with; --scheduling picks a \
                 baseline ({}) under --admission accept_all",
                BASELINES.join(", ")
            ),
        )),
        (Some(a), _) => Err(ArbiterError::at(
            ErrorCode::Unsupported,
            "admission",
            format!("an OASiS workload is admitted by oasis, or by accept_all under a baseline; got {a:?}"),
        )),
        (None, Some(s)) => match Scheme::parse(s, "scheduling")? {
            Scheme::Oasis { .. } => Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                "scheduling",
                "oasis is an admission stage: --admission oasis",
            )),
            baseline => Ok(baseline),
        },
        (None, None) => Err(ArbiterError::at(
            ErrorCode::MissingField,
            "admission",
            format!("an OASiS workload runs under --admission oasis or --scheduling {}", BASELINES.join("|")),
        )),
    }
}

/// `arbiter simulate` on an OASiS workload (`text`, the trace file's).
pub fn simulate(args: &SimulateArgs, text: &str) -> Result<()> {
    let mut flags = round_only_flags(args);
    // Every scheme decides deterministically from the workload: a seed would change nothing.
    flags.extend([
        ("preemption", args.preemption.is_some()),
        ("window", args.window.is_some()),
        ("seed", args.seed != 0),
    ]);
    refuse_given(&flags, NOT_ROUNDS)?;
    let scheme = scheme_of(args.admission.as_deref(), args.scheduling.as_deref())?;
    let backend = backend_named(&args.backend)?;
    let input: OasisInput = crate::contract::json::read(text).map_err(|e| {
        let field = e.path.map_or_else(|| "trace".to_string(), |path| format!("trace.{path}"));
        ArbiterError::at(ErrorCode::MalformedRequest, field, format!("the OASiS workload is not valid: {}", e.message))
    })?;
    let jobs = validate(&input.cluster, &input.jobs)?;
    let started = Instant::now();
    let mut bar = ProgressBar::new(format!("simulate {}", scheme.label()));
    let result = scheme.run(&input.cluster, &jobs, backend, &mut |p| bar.update(p));
    bar.finish();
    let (run, prices) = result?;
    let report = OasisReport::new(run, &jobs, prices, started.elapsed().as_secs_f64());
    write_report(args, &report, || report.lateness_chart())
}

/// Whether a sweep's policies name one of OASiS's schemes (then every one must be).
pub fn is_oasis_sweep(policies: &str) -> bool {
    policies.split(',').any(|p| names_own_scheme(Some(p)))
}

/// `arbiter sweep` over OASiS's study: `--policies` are schemes, `--jobs` a list of workload
/// sizes.
pub fn sweep(args: &SweepArgs) -> Result<()> {
    let mut flags = round_only_sweep_flags(args);
    flags.extend([("cluster", args.cluster.is_some()), ("loads", args.loads.is_some())]);
    refuse_given(&flags, NOT_ROUNDS)?;
    let config = OasisSweep {
        schemes: args.policies.split(',').map(|p| Scheme::parse(p, "policies")).collect::<Result<_>>()?,
        jobs: number_list(args.jobs.as_deref().unwrap_or("25,50,100,200"), "jobs")?,
        seeds: number_list(&args.seeds, "seeds")?,
        backend: backend_named(&args.backend)?,
    };
    let points = in_parallel(args.threads, |report| sweep::run(&config, report))?;
    write_output(&args.output, sweep::csv(&points).trim_end())?;
    crate::simulator::cli::failures(points.iter().map(|p| p.outcome.as_ref().err()))?;
    if let Some(path) = &args.plot {
        write_file(path, &sweep::utility_vs_jobs(&points).to_svg())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::oasis::LowestUtility;

    #[test]
    fn recognizes_workloads_and_schemes() {
        use crate::simulator::cli::TraceKind;
        assert_eq!(TraceKind::of(r#" {"cluster": {"slots": 1}, "jobs": []}"#), TraceKind::Oasis);
        assert_eq!(TraceKind::of(r#"{"jobs": []}"#), TraceKind::Rounds);
        assert_eq!(TraceKind::of("resnet50\tcmd\t...\n"), TraceKind::Rounds);
        assert_eq!(TraceKind::of(r#"{"nodes": [], "jobs": []}"#), TraceKind::FitGpp);
        assert!(is_oasis_sweep("las,drf") && is_oasis_sweep("oasis:u=2") && !is_oasis_sweep("fifo,las"));
    }

    #[test]
    fn the_stage_flags_name_one_scheme() {
        let oasis = Scheme::Oasis { lowest: LowestUtility::AtShortest, u: 1.0, l: 1.0 };
        assert_eq!(scheme_of(Some("oasis"), None).unwrap(), oasis);
        assert_eq!(
            scheme_of(Some("accept_all"), Some("rrh")).unwrap(),
            Scheme::Baseline { name: "rrh", workers: None }
        );
        assert_eq!(scheme_of(None, Some("fifo")).unwrap(), Scheme::Baseline { name: "fifo", workers: None });
        for (admission, scheduling, field) in [
            (Some("oasis"), Some("drf"), "scheduling"),
            (Some("accept_x=1.2"), Some("drf"), "admission"),
            (None, Some("oasis"), "scheduling"),
            (None, Some("las"), "scheduling"),
            (None, None, "admission"),
        ] {
            let e = scheme_of(admission, scheduling).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{admission:?} {scheduling:?}");
        }
        assert!(refuse_for_rounds(Some("oasis"), None).is_err());
        assert!(refuse_for_rounds(None, Some("dorm")).is_err());
        assert!(refuse_for_rounds(Some("accept_x=1.2"), Some("fifo")).is_ok());
    }
}
