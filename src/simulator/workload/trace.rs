//! Reading traces: Gavel's tab-separated trace format and our JSON (`{"jobs": [TraceJob, ...]}`),
//! both into a [`Trace`]. Job `i` of a trace is the `i`-th line (or array entry); the simulator
//! names it `"i"`, as Gavel numbers its job ids.
//!
//! A Gavel line has ten tab-separated fields: job type, command, working directory, steps flag,
//! needs-data-dir, total steps, scale factor, priority weight, SLO (a multiple of the job's
//! duration alone on its fastest worker type; -1 or 0: none), arrival time in seconds (in either
//! format, 0 to 10⁹).

use super::throughputs::ThroughputTable;
use super::{Trace, TraceJob};
use crate::contract::json::without_bom;
use crate::error::{ArbiterError, ErrorCode, Result};
use std::path::Path;

const GAVEL_FIELDS: usize = 10;

/// The latest arrival a trace's job may have, in seconds: past 10⁹ s a round's seconds vanish
/// in the clock's rounding, and a job would finish the instant it arrives.
pub const MAX_ARRIVAL_SECONDS: f64 = 1e9;

fn at(code: ErrorCode, field: impl Into<String>, message: impl Into<String>) -> ArbiterError {
    ArbiterError::at(code, field, message)
}

/// Reads a trace file: JSON when its first character is `{`, else Gavel's format. `throughputs`
/// turns Gavel's SLO multiples into seconds.
pub fn read_path(path: &Path, throughputs: &ThroughputTable) -> Result<Trace> {
    parse(&read_text(path)?, throughputs)
}

/// A trace file's text (`trace` names a file that cannot be read).
pub fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        at(ErrorCode::MalformedRequest, "trace", format!("cannot read trace file {}: {e}", path.display()))
    })
}

/// A trace's text: JSON when its first character (after any byte-order mark) is `{`, else
/// Gavel's format. A trace has at least one job.
pub fn parse(text: &str, throughputs: &ThroughputTable) -> Result<Trace> {
    let text = without_bom(text);
    let trace = if text.trim_start().starts_with('{') { from_json_str(text) } else { parse_gavel(text, throughputs) }?;
    if trace.jobs.is_empty() {
        return Err(at(ErrorCode::MissingField, "trace.jobs", "the trace has no jobs: there is nothing to simulate"));
    }
    Ok(trace)
}

/// Parses our JSON trace and checks every job (`trace.jobs[i].<field>` on refusal).
pub fn from_json_str(text: &str) -> Result<Trace> {
    let trace: Trace = crate::contract::json::read(text).map_err(|e| {
        let field = e.path.map_or_else(|| "trace".to_string(), |path| format!("trace.{path}"));
        at(ErrorCode::MalformedRequest, field, format!("the trace is not valid: {}", e.message))
    })?;
    for (i, job) in trace.jobs.iter().enumerate() {
        validate(i, job)?;
    }
    for (tenant, &weight) in &trace.tenants {
        if !(weight > 0.0 && crate::problem::in_range(weight)) {
            return Err(at(
                ErrorCode::InvalidNumber,
                format!("trace.tenants.{tenant}"),
                format!(
                    "tenant {}'s weight must be a number > 0, of magnitude between 1e-100 and 1e100, got {}",
                    crate::error::quoted(tenant),
                    crate::problem::shown(weight)
                ),
            ));
        }
    }
    Ok(trace)
}

/// Checks one job of a trace; refusals name `trace.jobs[i].<field>`. Steps, weight and SLO are
/// numbers > 0 within the contract's magnitudes (`problem::positive_refusal`), as the mechanism
/// takes them.
pub fn validate(i: usize, job: &TraceJob) -> Result<()> {
    check(job, &|f| f.to_string(), &|f| format!("trace.jobs[{i}].{f}"))
}

/// [`validate`], naming each field `name(f)` in messages and `field(f)` in refusals.
fn check(job: &TraceJob, name: &dyn Fn(&str) -> String, field: &dyn Fn(&str) -> String) -> Result<()> {
    if job.job_type.is_empty() {
        return Err(at(ErrorCode::MissingField, field("job_type"), "a job type must not be empty"));
    }
    let positive =
        [("total_steps", Some(job.total_steps)), ("weight", Some(job.weight)), ("slo_seconds", job.slo_seconds)];
    for (f, value) in positive {
        if let Some(v) = value {
            crate::problem::positive(v, || field(f), &name(f))?;
        }
    }
    let arrival = job.arrival_seconds;
    if !(0.0..=MAX_ARRIVAL_SECONDS).contains(&arrival) {
        return Err(at(
            ErrorCode::InvalidNumber,
            field("arrival_seconds"),
            format!(
                "{} must be a finite number ≥ 0 and at most 10⁹ seconds, got {}",
                name("arrival_seconds"),
                crate::problem::shown(arrival)
            ),
        ));
    }
    if job.scale_factor < 1 {
        return Err(at(ErrorCode::InvalidScaleFactor, field("scale_factor"), "a scale factor must be at least 1"));
    }
    Ok(())
}

fn number(text: &str, line: usize, name: &str) -> Result<f64> {
    text.trim().parse::<f64>().map_err(|_| {
        at(
            ErrorCode::MalformedRequest,
            format!("trace.line[{line}].{name}"),
            format!("{name} must be a number, got {text:?}"),
        )
    })
}

/// Parses Gavel's tab-separated trace (after any byte-order mark, which would otherwise be part
/// of the first job type). Blank lines are skipped; line numbers in refusals count from 1.
pub fn parse_gavel(text: &str, throughputs: &ThroughputTable) -> Result<Trace> {
    let mut jobs = Vec::new();
    let mut lines = Vec::new();
    for (n, line) in without_bom(text).lines().enumerate() {
        let line_no = n + 1;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != GAVEL_FIELDS {
            return Err(at(
                ErrorCode::MalformedRequest,
                format!("trace.line[{line_no}]"),
                format!("a Gavel trace line has {GAVEL_FIELDS} tab-separated fields, this one has {}", fields.len()),
            ));
        }
        let total_steps = number(fields[5], line_no, "total_steps")?;
        let scale_factor = number(fields[6], line_no, "scale_factor")?;
        if !(scale_factor >= 1.0 && scale_factor.fract() == 0.0 && scale_factor <= u32::MAX as f64) {
            return Err(at(
                ErrorCode::InvalidScaleFactor,
                format!("trace.line[{line_no}].scale_factor"),
                format!("a scale factor must be a whole number ≥ 1, got {}", fields[6].trim()),
            ));
        }
        let job_type = fields[0].trim().to_string();
        let slo = number(fields[8], line_no, "slo")?;
        // Gavel's "no SLO" is -1 (or 0); any other number at or below 0, or none, is a mistake.
        if !(slo.is_finite() && (slo >= 0.0 || slo == -1.0)) {
            return Err(at(
                ErrorCode::InvalidNumber,
                format!("trace.line[{line_no}].slo"),
                format!("slo must be a multiple > 0 of the job's duration alone, or -1 (or 0) for none, got {slo}"),
            ));
        }
        let mut job = TraceJob {
            job_type,
            total_steps,
            scale_factor: scale_factor as u32,
            weight: number(fields[7], line_no, "priority_weight")?,
            slo_seconds: None,
            arrival_seconds: number(fields[9], line_no, "arrival_seconds")?,
            tenant: None,
        };
        // A Gavel line names its columns: the weight is `priority_weight`, and the SLO in seconds
        // is `slo` times the job's duration alone.
        let column = |f: &str| match f {
            "weight" => "priority_weight".to_string(),
            "slo_seconds" => "slo".to_string(),
            f => f.to_string(),
        };
        let name = |f: &str| match f {
            "slo_seconds" => {
                format!("the SLO (slo {} × the job's duration alone, in seconds)", crate::problem::shown(slo))
            }
            f => column(f),
        };
        let field = |f: &str| format!("trace.line[{line_no}].{}", column(f));
        check(&job, &name, &field)?;
        // The rest of the line checked, the SLO in seconds is checked alone.
        if slo > 0.0 {
            let alone = isolated_duration(throughputs, &job.job_type, job.scale_factor, total_steps, line_no)?;
            let seconds = slo * alone;
            crate::problem::positive(seconds, || field("slo_seconds"), &name("slo_seconds"))?;
            job.slo_seconds = Some(seconds);
        }
        jobs.push(job);
        lines.push(line_no);
    }
    Ok(Trace { lines, ..Trace::new(jobs) })
}

/// Seconds the job takes alone on its fastest worker type: what Gavel's SLO multiples multiply.
fn isolated_duration(throughputs: &ThroughputTable, job_type: &str, sf: u32, steps: f64, line: usize) -> Result<f64> {
    let best =
        throughputs.worker_types().iter().filter_map(|w| throughputs.solo(w, job_type, sf)).fold(0.0_f64, f64::max);
    if best <= 0.0 {
        return Err(at(
            ErrorCode::JobCannotRun,
            format!("trace.line[{line}].slo"),
            format!("job type {job_type:?} at scale factor {sf} has no throughput to measure its SLO against"),
        ));
    }
    Ok(steps / best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> ThroughputTable {
        ThroughputTable::from_json_str(r#"{"v100": {"('A', 1)": {"null": 10.0}}, "k80": {"('A', 1)": {"null": 2.0}}}"#)
            .unwrap()
    }

    #[test]
    fn reads_gavel_lines() {
        let text =
            "A\tpython3 main.py\tdir\t--steps\t1\t1000\t1\t1\t-1.000000\t0\n\nA\tcmd\tdir\t-s\t0\t500\t1\t5\t2\t60.5\n";
        let trace = parse_gavel(text, &table()).unwrap();
        assert_eq!(trace.jobs.len(), 2);
        assert_eq!(trace.jobs[0].total_steps, 1000.0);
        assert_eq!(trace.jobs[0].slo_seconds, None);
        assert_eq!(trace.jobs[1].weight, 5.0);
        assert_eq!(trace.jobs[1].arrival_seconds, 60.5);
        // 2 × (500 steps at 10 steps/s on the fastest type).
        assert_eq!(trace.jobs[1].slo_seconds, Some(100.0));
    }

    #[test]
    fn refusals_name_the_line() {
        let e = parse_gavel("A\tcmd\n", &table()).unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::MalformedRequest, Some("trace.line[1]")));
        let e = parse_gavel("A\tc\td\t-s\t1\tmany\t1\t1\t-1\t0\n", &table()).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("trace.line[1].total_steps"));
        // -1 and 0 mean no SLO; NaN or another negative number is not silently the same.
        for slo in ["NaN", "-3"] {
            let e = parse_gavel(&format!("A\tc\td\t-s\t1\t10\t1\t1\t{slo}\t0\n"), &table()).unwrap_err();
            assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidNumber, Some("trace.line[1].slo")), "{slo}");
        }
        assert!(parse_gavel("A\tc\td\t-s\t1\t10\t1\t1\t0\t0\n", &table()).is_ok());
        let e = parse_gavel("A\tc\td\t-s\t1\t10\t0\t1\t-1\t0\n", &table()).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidScaleFactor);
        let e = parse_gavel("A\tc\td\t-s\t1\t10\t1\t1\t-1\t-5\n", &table()).unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidNumber, Some("trace.line[1].arrival_seconds")));
        let e = parse_gavel("B\tc\td\t-s\t1\t10\t1\t1\t3\t0\n", &table()).unwrap_err();
        assert_eq!(e.code, ErrorCode::JobCannotRun);
    }

    /// Steps, weight and SLO past the contract's magnitudes are refused here, naming the line's
    /// column (the mechanism would name only `job.steps_remaining` or `job.weight`).
    #[test]
    fn magnitudes_name_the_line_and_column() {
        for (line, column) in [
            ("A\tc\td\t-s\t1\t1e300\t1\t1\t-1\t0\n", "total_steps"),
            ("A\tc\td\t-s\t1\t10\t1\t1e300\t-1\t0\n", "priority_weight"),
            ("A\tc\td\t-s\t1\t10\t1\t1e-300\t-1\t0\n", "priority_weight"),
            ("A\tc\td\t-s\t1\t10\t1\t1\t1e-300\t0\n", "slo"),
            ("A\tc\td\t-s\t1\t10\t1\t1\t1e300\t0\n", "slo"),
        ] {
            let e = parse_gavel(&format!("A\tc\td\t-s\t1\t10\t1\t1\t-1\t0\n{line}"), &table()).unwrap_err();
            let field = format!("trace.line[2].{column}");
            assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidNumber, Some(field.as_str())), "{line}");
            assert!(e.message.contains("magnitude between 1e-100 and 1e100"), "{}", e.message);
        }
    }

    #[test]
    fn reads_json_traces() {
        let text = r#"{"jobs": [{"job_type": "A", "total_steps": 10, "scale_factor": 2, "weight": 1,
            "slo_seconds": null, "arrival_seconds": 3}]}"#;
        let trace = from_json_str(text).unwrap();
        assert_eq!(trace.jobs[0].scale_factor, 2);
        let e = from_json_str(r#"{"jobs": [{"job_type": "A"}]}"#).unwrap_err();
        assert_eq!(e.code, ErrorCode::MalformedRequest);
        let bad = text.replace("\"total_steps\": 10", "\"total_steps\": 0");
        let e = from_json_str(&bad).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("trace.jobs[0].total_steps"));
        for (from, to, field) in [
            ("\"total_steps\": 10", "\"total_steps\": 1e300", "total_steps"),
            ("\"weight\": 1", "\"weight\": 1e300", "weight"),
            ("\"slo_seconds\": null", "\"slo_seconds\": 1e-300", "slo_seconds"),
        ] {
            let e = from_json_str(&text.replace(from, to)).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(format!("trace.jobs[0].{field}").as_str()));
            assert!(e.message.contains("magnitude between 1e-100 and 1e100"), "{}", e.message);
        }
        // An SLO of 0 seconds is refused as a number that must be > 0, in either format's words.
        let e = from_json_str(&text.replace("\"slo_seconds\": null", "\"slo_seconds\": 0")).unwrap_err();
        assert_eq!(e.message, "slo_seconds must be a finite number > 0, got 0");
    }
}
