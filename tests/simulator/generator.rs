//! The trace generator: determinism for a seed, Gavel's job mix in its proportions, Poisson
//! inter-arrival times, static arrivals, steps from the reference type's throughput, refusals,
//! and (when Gavel's data is present) traces drawn from the measured throughput file.

use arbiter::workload::generator::{generate, Arrivals, Durations, GeneratorOptions};
use arbiter::workload::throughputs::ThroughputTable;
use arbiter::workload::Trace;
use arbiter::ErrorCode;
use std::path::PathBuf;

/// A small table in Gavel's format: three job types alone at scale factor 1 (one not measured on
/// the V100), two at 2, 4 and 8.
const TABLE: &str = r#"{
  "v100": {
    "('ResNet-50 (batch size 64)', 1)": {"null": 4.0, "('LM (batch size 20)', 1)": [3.0, 2.0]},
    "('LM (batch size 20)', 1)": {"null": 2.5},
    "('A3C', 1)": {"null": 1.25},
    "('ResNet-50 (batch size 64)', 2)": {"null": 7.0},
    "('LM (batch size 20)', 2)": {"null": 4.5},
    "('ResNet-50 (batch size 64)', 4)": {"null": 13.0},
    "('LM (batch size 20)', 4)": {"null": 8.0},
    "('ResNet-50 (batch size 64)', 8)": {"null": 24.0},
    "('LM (batch size 20)', 8)": {"null": 15.0}
  },
  "k80": {
    "('ResNet-50 (batch size 64)', 1)": {"null": 1.0},
    "('LM (batch size 20)', 1)": {"null": 0.8},
    "('A3C', 1)": {"null": 0.5},
    "('Transformer (batch size 16)', 1)": {"null": 0.4}
  }
}"#;

fn table() -> ThroughputTable {
    ThroughputTable::from_json_str(TABLE).unwrap()
}

fn v100(job_type: &str, scale_factor: u32) -> f64 {
    table().solo("v100", job_type, scale_factor).unwrap()
}

/// The job's duration on the reference type, from its steps.
fn duration_seconds(job: &arbiter::workload::TraceJob) -> f64 {
    job.total_steps / v100(&job.job_type, job.scale_factor)
}

fn fraction(trace: &Trace, keep: impl Fn(&arbiter::workload::TraceJob) -> bool) -> f64 {
    trace.jobs.iter().filter(|j| keep(j)).count() as f64 / trace.jobs.len() as f64
}

fn assert_near(got: f64, want: f64, tolerance: f64, what: &str) {
    assert!((got - want).abs() <= tolerance, "{what}: got {got}, want {want} ± {tolerance}");
}

#[test]
fn the_same_seed_gives_the_same_trace() {
    let options = GeneratorOptions {
        multi_gpu: true,
        multi_priority: true,
        slos: true,
        ..GeneratorOptions::continuous(500, 12.0, 7)
    };
    let a = generate(&table(), &options).unwrap();
    let b = generate(&table(), &options).unwrap();
    assert_eq!(a, b);
    let c = generate(&table(), &GeneratorOptions { seed: 8, ..options.clone() }).unwrap();
    assert_ne!(a, c);
    assert_eq!(a.jobs.len(), 500);
}

/// Each attribute has its own stream: another arrival rate moves only the arrivals, and turning
/// priorities and SLOs on keeps the job types, steps and scale factors.
#[test]
fn options_change_only_what_they_are_about() {
    let base = GeneratorOptions { multi_gpu: true, ..GeneratorOptions::continuous(300, 6.0, 3) };
    let a = generate(&table(), &base).unwrap();
    let faster =
        generate(&table(), &GeneratorOptions { arrivals: Arrivals::Poisson { jobs_per_hour: 60.0 }, ..base.clone() })
            .unwrap();
    let richer = generate(&table(), &GeneratorOptions { multi_priority: true, slos: true, ..base.clone() }).unwrap();
    for ((x, y), z) in a.jobs.iter().zip(&faster.jobs).zip(&richer.jobs) {
        assert_eq!((&x.job_type, x.total_steps, x.scale_factor), (&y.job_type, y.total_steps, y.scale_factor));
        assert_eq!((&x.job_type, x.total_steps, x.scale_factor), (&z.job_type, z.total_steps, z.scale_factor));
        assert_eq!(x.arrival_seconds, z.arrival_seconds);
        assert!(y.arrival_seconds <= x.arrival_seconds);
    }
    assert!(a.jobs.last().unwrap().arrival_seconds > 5.0 * faster.jobs.last().unwrap().arrival_seconds);
}

#[test]
fn static_traces_arrive_at_zero() {
    let trace = generate(&table(), &GeneratorOptions::static_trace(200, 1)).unwrap();
    assert!(trace.jobs.iter().all(|j| j.arrival_seconds == 0.0));
    assert!(trace.jobs.iter().all(|j| j.scale_factor == 1 && j.weight == 1.0 && j.slo_seconds.is_none()));
}

/// 20,000 arrivals at 30 jobs/hour: the mean gap is 120 s (the sample mean's standard deviation
/// is 120/√20,000 ≈ 0.85 s), about e^-1 ≈ 36.8% of gaps exceed the mean, and arrivals are sorted.
#[test]
fn poisson_inter_arrival_times_have_the_rate_s_mean() {
    let trace = generate(&table(), &GeneratorOptions::continuous(20_001, 30.0, 11)).unwrap();
    assert_eq!(trace.jobs[0].arrival_seconds, 0.0);
    let gaps: Vec<f64> = trace.jobs.windows(2).map(|w| w[1].arrival_seconds - w[0].arrival_seconds).collect();
    assert!(gaps.iter().all(|&g| g >= 0.0));
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert_near(mean, 120.0, 4.0, "mean inter-arrival seconds");
    let above = gaps.iter().filter(|&&g| g > 120.0).count() as f64 / gaps.len() as f64;
    assert_near(above, (-1.0f64).exp(), 0.015, "share of gaps above the mean");
}

/// 20,000 multi-GPU, multi-priority jobs with SLOs: scale factors 70/10/15/5%, weight 5 for 20%,
/// SLO multipliers 1.2/2/10 for 33/34/33%, durations short (10^U(1.5,3) min) for 80%; tolerances
/// are about four standard deviations of a proportion over 20,000 draws.
#[test]
fn the_job_mix_has_gavel_s_proportions() {
    let options = GeneratorOptions {
        multi_gpu: true,
        multi_priority: true,
        slos: true,
        ..GeneratorOptions::continuous(20_000, 10.0, 2026)
    };
    let trace = generate(&table(), &options).unwrap();
    for (sf, p) in [(1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05)] {
        assert_near(fraction(&trace, |j| j.scale_factor == sf), p, 0.015, &format!("scale factor {sf}"));
    }
    assert_near(fraction(&trace, |j| j.weight == 5.0), 0.2, 0.015, "weight 5");
    assert!(trace.jobs.iter().all(|j| j.weight == 1.0 || j.weight == 5.0));
    let multiplier = |j: &arbiter::workload::TraceJob| j.slo_seconds.unwrap() / duration_seconds(j);
    for (m, p) in [(1.2, 0.33), (2.0, 0.34), (10.0, 0.33)] {
        assert_near(fraction(&trace, |j| (multiplier(j) - m).abs() < 1e-3 * m), p, 0.015, &format!("SLO {m}×"));
    }
    let minutes = |j: &arbiter::workload::TraceJob| duration_seconds(j) / 60.0;
    assert!(trace.jobs.iter().all(|j| minutes(j) >= 10f64.powf(1.5) * 0.999 && minutes(j) <= 1e4 * 1.001));
    assert_near(fraction(&trace, |j| minutes(j) < 1000.0), 0.8, 0.015, "short jobs");
    // log10(minutes) of short jobs is uniform on [1.5, 3]: mean 2.25, sd 0.433/√16,000 ≈ 0.0034.
    let short: Vec<f64> = trace.jobs.iter().map(|j| minutes(j).log10()).filter(|&l| l < 3.0).collect();
    assert_near(short.iter().sum::<f64>() / short.len() as f64, 2.25, 0.015, "mean log10 minutes of short jobs");
}

/// Job types are uniform over those measured on the reference type at the job's scale factor:
/// at sf 1, "Transformer" has no V100 throughput, so the other three get a third each.
#[test]
fn job_types_are_uniform_over_the_reference_type_s_measurements() {
    let trace = generate(&table(), &GeneratorOptions::static_trace(12_000, 5)).unwrap();
    for name in ["ResNet-50 (batch size 64)", "LM (batch size 20)", "A3C"] {
        assert_near(fraction(&trace, |j| j.job_type == name), 1.0 / 3.0, 0.02, name);
    }
    let multi =
        generate(&table(), &GeneratorOptions { multi_gpu: true, ..GeneratorOptions::static_trace(2000, 5) }).unwrap();
    assert!(multi.jobs.iter().all(|j| j.scale_factor == 1 || j.job_type != "A3C"));
}

/// Steps are the duration times the throughput alone on the reference type, rounded to whole steps.
#[test]
fn steps_come_from_the_reference_type_s_throughput() {
    let options = GeneratorOptions {
        durations: Durations::Fixed(3600.0),
        multi_gpu: true,
        ..GeneratorOptions::static_trace(300, 9)
    };
    let trace = generate(&table(), &options).unwrap();
    for job in &trace.jobs {
        assert_eq!(job.total_steps, (3600.0 * v100(&job.job_type, job.scale_factor)).round());
    }
    let on_k80 = GeneratorOptions { reference_worker_type: "k80".into(), ..options.clone() };
    let trace = generate(&table(), &GeneratorOptions { multi_gpu: false, ..on_k80 }).unwrap();
    assert!(trace.jobs.iter().any(|j| j.job_type.starts_with("Transformer")));
    // Uniform durations: each job's steps are those of 10 to 60 minutes on the reference type,
    // and the range is covered.
    let short = GeneratorOptions { durations: Durations::Uniform { low: 600.0, high: 3600.0 }, ..options };
    let seconds: Vec<f64> = generate(&table(), &short)
        .unwrap()
        .jobs
        .iter()
        .map(|j| j.total_steps / v100(&j.job_type, j.scale_factor))
        .collect();
    assert!(seconds.iter().all(|&s| (599.0..=3601.0).contains(&s)), "{seconds:?}");
    assert!(seconds.iter().any(|&s| s < 900.0) && seconds.iter().any(|&s| s > 3300.0));
}

#[test]
fn refusals_name_the_option() {
    let t = table();
    let err = |options: GeneratorOptions| generate(&t, &options).unwrap_err();
    let e = err(GeneratorOptions { reference_worker_type: "a100".into(), ..Default::default() });
    assert_eq!((e.code, e.field.as_deref()), (ErrorCode::UnknownWorkerType, Some("reference_worker_type")));
    for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let e = err(GeneratorOptions::continuous(10, rate, 0));
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidNumber, Some("jobs_per_hour")));
    }
    for durations in [
        Durations::Fixed(0.0),
        Durations::Uniform { low: 600.0, high: f64::INFINITY },
        Durations::Uniform { low: 3600.0, high: 600.0 },
    ] {
        let e = err(GeneratorOptions { durations, ..Default::default() });
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidNumber, Some("durations")), "{durations:?}");
    }
    let single_gpu_only = ThroughputTable::from_json_str(r#"{"v100": {"('A3C', 1)": {"null": 1.0}}}"#).unwrap();
    let e = generate(&single_gpu_only, &GeneratorOptions { multi_gpu: true, ..Default::default() }).unwrap_err();
    assert_eq!((e.code, e.field.as_deref()), (ErrorCode::MissingField, Some("throughputs")));
    assert!(generate(&single_gpu_only, &GeneratorOptions::static_trace(5, 0)).is_ok());
    assert!(generate(&t, &GeneratorOptions::static_trace(0, 0)).unwrap().jobs.is_empty());
}

fn gavel_data() -> Option<PathBuf> {
    let dir = std::env::var("ARBITER_GAVEL_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/gavel"));
    if dir.join("simulation_throughputs.json").is_file() {
        Some(dir)
    } else {
        eprintln!("note: Gavel's data not found at {} (set ARBITER_GAVEL_DATA); skipping", dir.display());
        None
    }
}

/// On Gavel's simulation throughputs: every drawn job type runs on the V100 at its scale factor,
/// and the 26 single-GPU and 19 multi-GPU job types all appear.
#[test]
fn traces_from_gavel_s_throughput_file() {
    let Some(dir) = gavel_data() else { return };
    let table = ThroughputTable::from_path(&dir.join("simulation_throughputs.json")).unwrap();
    let options = GeneratorOptions { multi_gpu: true, ..GeneratorOptions::continuous(5000, 3.0, 1) };
    let trace = generate(&table, &options).unwrap();
    for job in &trace.jobs {
        assert!(table.solo("v100", &job.job_type, job.scale_factor).unwrap() > 0.0);
        assert!(job.total_steps >= 1.0);
    }
    let distinct = |sf: u32| {
        let mut names: Vec<&str> =
            trace.jobs.iter().filter(|j| j.scale_factor == sf).map(|j| j.job_type.as_str()).collect();
        names.sort();
        names.dedup();
        names.len()
    };
    assert_eq!(distinct(1), 26);
    assert_eq!(distinct(2), 19);
}
