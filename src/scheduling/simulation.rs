//! A trace through a composition of list-policy stages on a virtual clock: jobs arrive, every
//! round the `Pipeline` decides, each running job advances by its throughput × the round (less the
//! restart overhead when it resumes after a suspension), and the report is the simulator's
//! (`crate::simulator::SimulationReport`). Gavel's composition runs in `crate::simulator::engine`.
//!
//! Rounds have a fixed length (Blox's simulator): a job that finishes mid-round leaves its GPUs
//! idle until the round ends; jobs arriving during a round are submitted when it ends, their JCT
//! counted from their arrival; with no job present the clock jumps to the next arrival.

use super::state::{ClusterState, JobIndex, JobState};
use super::synthesizer::Synthesizer;
use super::{Composition, Pipeline, RoundDecision};
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::simulator::report::{self, SimulationReport};
use crate::simulator::{Progress, SimulationConfig};
use crate::workload::throughputs::ThroughputTable;
use crate::workload::Trace;
use std::collections::HashSet;
use std::time::Instant;

/// Steps left below this fraction of a job's total count as done (floating-point dust).
const DONE_TOLERANCE: f64 = 1e-9;
/// Rounds in a row with jobs present, none running and no arrival to wait for, before giving up.
const MAX_IDLE_ROUNDS: u32 = 10_000;
/// Rounds a run plays at most (about 95 years of 5-minute rounds, seconds of work): a job whose
/// steps or restart overhead need more would otherwise keep the run going for hours.
pub const MAX_ROUNDS: u64 = 10_000_000;

/// The refusal of a run that reached [`MAX_ROUNDS`].
pub fn too_many_rounds(seconds: f64, unfinished: usize) -> ArbiterError {
    ArbiterError::new(
        ErrorCode::Unsupported,
        format!(
            "the run reached {MAX_ROUNDS} rounds ({} days simulated) with {unfinished} jobs unfinished: some job's \
             steps (or restart overhead) need more rounds than a simulation plays",
            (seconds / 86_400.0).round()
        ),
    )
}

/// What one round did to the jobs.
pub struct PlayedRound {
    pub decision: RoundDecision,
    /// Seconds each running job ran (after any restart overhead).
    pub ran: Vec<(JobIndex, f64)>,
    /// Jobs that finished, and when; they have left the pipeline.
    pub finished: Vec<(JobIndex, f64)>,
    /// Busy GPU-seconds per worker type (restart overhead included).
    pub busy: Vec<(usize, f64)>,
}

/// One round of `round` seconds from the pipeline's clock: the pipeline decides, every running
/// job advances by its throughput × the time it runs, finished jobs leave, and the clock moves
/// to the round's end.
pub fn play_round(pipeline: &mut Pipeline, round: f64) -> PlayedRound {
    let now = pipeline.now();
    let decision = pipeline.next_round();
    let launched: HashSet<JobIndex> = decision.launched.iter().copied().collect();
    let (mut ran, mut finished, mut busy) = (Vec::new(), Vec::new(), Vec::new());
    for j in decision.running() {
        let overhead = pipeline.restart_overhead(j, launched.contains(&j), round);
        let job = &mut pipeline.jobs[j];
        let w = pipeline.cluster.gpus[job.gpus[0] as usize].worker_type as usize;
        let rate = job.throughput[w];
        let steps = job.remaining_steps.min(rate * (round - overhead));
        let secs = if rate > 0.0 { steps / rate } else { 0.0 };
        job.remaining_steps -= steps;
        busy.push((w, job.scale_factor as f64 * (overhead + secs)));
        ran.push((j, secs));
        if job.remaining_steps <= DONE_TOLERANCE * job.total_steps {
            job.remaining_steps = 0.0;
            finished.push((j, now + overhead + secs));
        }
    }
    pipeline.account(&decision, &ran, round);
    for &(j, at) in &finished {
        pipeline.complete(j, at);
    }
    pipeline.advance_to(now + round);
    PlayedRound { decision, ran, finished, busy }
}

/// Runs `trace` under `composition` on `config`'s cluster until every measured job finished.
pub fn run(
    trace: &Trace,
    table: &ThroughputTable,
    config: &SimulationConfig,
    composition: &Composition,
    progress: &mut dyn FnMut(Progress),
) -> Result<SimulationReport> {
    run_with(trace, table, config, composition, None, progress)
}

/// `run`, starting from `composition` and letting `synthesizer` (if any) switch compositions
/// every `every_rounds` rounds; the report lists its choices.
pub fn run_with(
    trace: &Trace,
    table: &ThroughputTable,
    config: &SimulationConfig,
    composition: &Composition,
    synthesizer: Option<&Synthesizer>,
    progress: &mut dyn FnMut(Progress),
) -> Result<SimulationReport> {
    let started = Instant::now();
    config.validate(trace.jobs.len())?;
    if !config.heterogeneity_aware {
        return Err(ArbiterError::at(
            ErrorCode::Unsupported,
            "heterogeneity_aware",
            "list policies run each job on its fastest type with room; the type-blind variant is an LP policy's",
        ));
    }
    if config.space_sharing || config.ideal {
        return Err(ArbiterError::at(
            ErrorCode::Unsupported,
            "scheduling",
            "space sharing and ideal mode belong to Gavel's mechanism (an LP policy); list policies place whole jobs",
        ));
    }
    for (i, job) in trace.jobs.iter().enumerate() {
        crate::workload::trace::validate(i, job)?;
    }
    let rows = crate::simulator::engine::throughput_rows(trace, table, config)?;
    let mut pipeline = Pipeline::new(composition, ClusterState::new(&config.cluster), config.seed)?;
    if config.restart_seconds > 0.0 {
        pipeline.set_restart_seconds(config.restart_seconds)?;
    }
    let restarts = pipeline.restart_seconds() > 0.0;
    let tenancy = trace.tenancy();
    if let Some((tenants, _)) = &tenancy {
        pipeline.set_tenants(tenants)?;
    }
    let mut periods = crate::simulator::long_term_fairness::Periods::default();
    let mut order: Vec<usize> = (0..trace.jobs.len()).collect();
    order.sort_by(|&a, &b| trace.jobs[a].arrival_seconds.total_cmp(&trace.jobs[b].arrival_seconds).then(a.cmp(&b)));
    let start_time = order.first().map_or(0.0, |&i| trace.jobs[i].arrival_seconds);
    let round = config.round_seconds;
    let mut choices = Vec::new();

    // Pipeline index ↔ trace index.
    let mut trace_of: Vec<usize> = Vec::with_capacity(trace.jobs.len());
    let mut pipeline_of: Vec<Option<usize>> = vec![None; trace.jobs.len()];
    let mut busy = vec![0.0; config.cluster.len()];
    let (mut preemptions, mut renewals) = (0u64, 0u64);
    let measured_total = (0..trace.jobs.len()).filter(|&i| config.measures(i)).count();
    let (mut measured_done, mut next, mut idle_rounds) = (0, 0, 0);
    let mut now = start_time;
    while measured_done < measured_total {
        while next < order.len() && trace.jobs[order[next]].arrival_seconds <= now {
            let i = order[next];
            let t = &trace.jobs[i];
            let mut job =
                JobState::new(i.to_string(), t.arrival_seconds, t.scale_factor, rows[i].clone(), t.total_steps);
            job.weight = t.weight;
            job.tenant = tenancy.as_ref().map_or(0, |(_, of_job)| of_job[i]);
            let j = pipeline.submit(job)?;
            trace_of.push(i);
            pipeline_of[i] = Some(j);
            next += 1;
        }
        if pipeline.active().is_empty() && pipeline.waiting().is_empty() {
            match order.get(next) {
                Some(&i) => now = trace.jobs[i].arrival_seconds,
                None => break,
            }
            continue;
        }
        pipeline.advance_to(now);
        if let Some(synthesizer) = synthesizer {
            if pipeline.rounds() > 0 && pipeline.rounds() % synthesizer.every_rounds == 0 {
                choices.push(synthesizer.choose_and_switch(&mut pipeline, round)?);
            }
        }
        if pipeline.rounds() >= MAX_ROUNDS {
            return Err(too_many_rounds(now - start_time, pipeline.active().len() + pipeline.waiting().len()));
        }
        let played = play_round(&mut pipeline, round);
        preemptions += played.decision.suspended.len() as u64;
        renewals += played.decision.renewed.len() as u64;
        for (w, b) in played.busy {
            busy[w] += b;
        }
        let ran = played.ran;
        let finished = played.finished;
        if ran.is_empty() && next == order.len() {
            idle_rounds += 1;
            if idle_rounds >= MAX_IDLE_ROUNDS {
                return Err(ArbiterError::new(
                    ErrorCode::Infeasible,
                    format!(
                        "no job could be placed for {MAX_IDLE_ROUNDS} rounds with {} jobs waiting under {}",
                        pipeline.active().len() + pipeline.waiting().len(),
                        composition.name()
                    ),
                ));
            }
        } else {
            idle_rounds = 0;
        }
        for (j, _) in finished {
            if config.measures(trace_of[j]) {
                measured_done += 1;
            }
        }
        now += round;
        periods.observe(now - start_time, &pipeline.tenants);
        progress(Progress {
            now_seconds: now - start_time,
            rounds: pipeline.rounds(),
            measured_finished: measured_done,
            measured_total,
            active_jobs: pipeline.active().len() + pipeline.waiting().len(),
        });
    }
    let outcomes: Vec<report::JobOutcome> = (0..trace.jobs.len())
        .map(|i| match pipeline_of[i] {
            Some(j) => {
                let job = &pipeline.jobs[j];
                report::JobOutcome {
                    throughput: &job.throughput,
                    remaining: job.remaining_steps,
                    start: job.first_run,
                    finish: job.finish,
                    preemptions: Some(job.preemptions),
                    restart_seconds: restarts.then_some(job.restart_seconds),
                    ltgf_rho: Some(job.ltgf()).filter(|r| r.is_finite() && job.fair_share_seconds > 0.0),
                }
            }
            None => report::JobOutcome {
                throughput: &rows[i],
                remaining: trace.jobs[i].total_steps,
                start: None,
                finish: None,
                preemptions: Some(0),
                restart_seconds: restarts.then_some(0.0),
                ltgf_rho: None,
            },
        })
        .collect();
    let mut report = report::assemble(
        trace,
        config,
        &outcomes,
        report::Totals {
            composition: composition.name(),
            start_time,
            end: now,
            busy,
            preemptions,
            lease_renewals: renewals,
            rounds: pipeline.rounds(),
            allocation_solves: 0,
            wall_seconds: started.elapsed().as_secs_f64(),
            restart_seconds: pipeline.restart_seconds(),
        },
    );
    let job_rho: Vec<f64> =
        report.jobs.iter().filter(|j| j.measured && j.finish_seconds.is_some()).filter_map(|j| j.ltgf_rho).collect();
    report.ltgf = Some(periods.summarize(&pipeline.tenants, &job_rho));
    if synthesizer.is_some() {
        report.composition = format!("synthesizer from {}", composition.name());
        report.synthesis = choices;
    }
    report.policy = match &composition.scheduling {
        super::SchedulingSpec::List { name, .. } => name.clone(),
        super::SchedulingSpec::Allocation(p) => p.name().to_string(),
    };
    Ok(report)
}
