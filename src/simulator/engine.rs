//! The virtual clock: jobs arrive, the session (the same `mechanism::Session` the service runs)
//! recomputes its allocation on arrivals and completions and decides every round's placements,
//! and each placed job advances by its throughput × time, finishing mid-round.
//!
//! As in Gavel's simulator: a round ends when its last job stops (a full round unless every job
//! placed in it finished early); a job that finishes mid-round leaves its GPUs idle until the next
//! round; jobs that arrive during a round join the session when it ends, their JCT counted from
//! their arrival; with no job present, the clock jumps to the next arrival.

use super::config::SimulationConfig;
use super::report::{self, SimulationReport};
use super::Progress;
use crate::error::{ArbiterError, ErrorCode, Result};
use crate::mechanism::{Config, JobId, LeaseChange, Session};
use crate::policies::PolicyKind;
use crate::problem::Job;
use crate::scheduling::state::{account_fair_shares, Presence, Tenant};
use crate::simulator::long_term_fairness::Periods;
use crate::workload::throughputs::ThroughputTable;
use crate::workload::Trace;
use std::collections::HashMap;
use std::time::Instant;

/// Steps left below this fraction of a job's total count as done (floating-point dust).
const DONE_TOLERANCE: f64 = 1e-9;
/// Rounds in a row in which no job may run, with no arrival to wait for, before giving up.
const MAX_IDLE_ROUNDS: u32 = 10_000;

/// What one round did: when its last job stopped, and which jobs finished.
struct RoundStep {
    end: f64,
    finished: Vec<usize>,
    /// Seconds each job ran (trace index).
    ran: HashMap<usize, f64>,
}

/// One trace job's progress.
struct JobProgress {
    /// Measured steps/s alone per worker type, in the cluster's order.
    throughput: Vec<f64>,
    /// The row the policy starts from: `throughput`, or its estimate (`--profiled-types`).
    believed: Vec<f64>,
    remaining: f64,
    start: Option<f64>,
    finish: Option<f64>,
    /// GPU-seconds run, and fair GPU-seconds owed (Astraea's `∫ Alloc`, `∫ min(Demand, FairShare)`).
    allocated: f64,
    fair_share: f64,
}

/// The simulation's state between rounds.
struct Run<'a> {
    trace: &'a Trace,
    config: &'a SimulationConfig,
    table: &'a ThroughputTable,
    session: Session,
    jobs: Vec<JobProgress>,
    /// Session id → trace index, for active jobs.
    active: HashMap<JobId, usize>,
    now: f64,
    /// Busy GPU-seconds per worker type.
    busy: Vec<f64>,
    preemptions: u64,
    lease_renewals: u64,
    solves: u64,
    /// The last round granted nobody any time.
    last_round_idle: bool,
    /// The trace's tenants (one default tenant without), each trace job's, and the hourly record.
    tenants: Vec<Tenant>,
    tenant_of: Vec<usize>,
    periods: Periods,
    start_time: f64,
}

/// The throughput-matrix row of every trace job on the cluster's types; refuses a job that can
/// never be placed (no type where it has throughput and enough GPUs for its scale factor).
pub(crate) fn throughput_rows(
    trace: &Trace,
    table: &ThroughputTable,
    config: &SimulationConfig,
) -> Result<Vec<Vec<f64>>> {
    let names: Vec<String> = config.cluster.iter().map(|w| w.name.clone()).collect();
    let mut cache: HashMap<(&str, u32), Vec<f64>> = HashMap::new();
    trace
        .jobs
        .iter()
        .enumerate()
        .map(|(i, job)| {
            let key = (job.job_type.as_str(), job.scale_factor);
            if let Some(row) = cache.get(&key) {
                return Ok(row.clone());
            }
            let row = table.row(&names, &job.job_type, job.scale_factor)?;
            let placeable =
                row.iter().zip(&config.cluster).any(|(&t, w)| t > 0.0 && w.count >= job.scale_factor as f64);
            if !placeable {
                let job_type = crate::error::quoted(&job.job_type);
                let measured = table.scale_factors(&job.job_type);
                let (field, message) = if measured.is_empty() {
                    ("job_type", format!("job type {job_type} is not in the throughput file"))
                } else if !measured.contains(&job.scale_factor) {
                    let list = measured.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
                    (
                        "scale_factor",
                        format!(
                            "job type {job_type} is not in the throughput file at scale factor {} (only at {list})",
                            job.scale_factor
                        ),
                    )
                } else {
                    (
                        "",
                        format!(
                            "job type {job_type} at scale factor {} has no throughput on any worker type of the \
                             cluster with {} GPUs",
                            job.scale_factor, job.scale_factor
                        ),
                    )
                };
                let at = trace.job_field(i);
                let field = if field.is_empty() { at } else { format!("{at}.{field}") };
                return Err(ArbiterError::at(ErrorCode::JobCannotRun, field, message));
            }
            cache.insert(key, row.clone());
            Ok(row)
        })
        .collect()
}

/// Runs the trace to the end of its measured jobs and reports.
pub fn run(
    trace: &Trace,
    table: &ThroughputTable,
    config: &SimulationConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<SimulationReport> {
    let started = Instant::now();
    config.validate(trace.jobs.len())?;
    if config.restart_seconds > 0.0 {
        return Err(ArbiterError::at(
            ErrorCode::Unsupported,
            "restart_seconds",
            "a restart overhead is charged by the pipeline's compositions (list policies); Gavel's mechanism \
             simulates none",
        ));
    }
    for (i, job) in trace.jobs.iter().enumerate() {
        crate::workload::trace::validate(i, job)?;
    }
    let rows = throughput_rows(trace, table, config)?;
    let believed = match config.profiled_types {
        Some(k) => super::estimated::believed_rows(trace, table, config, &rows, k)?,
        None => rows.clone(),
    };
    let mechanism = Config {
        round_seconds: config.round_seconds,
        min_solve_interval: config.min_solve_interval,
        work_conserving: config.work_conserving,
        mode: config.mode(),
        backend: config.backend,
        ..Config::default()
    };
    let tenancy = trace.tenancy();
    let mut session = match (&tenancy, config.policy) {
        // Hierarchical policies share among the tenants, as entities of their weights.
        (Some((tenants, _)), PolicyKind::Hierarchical) => {
            let mut base =
                crate::problem::Problem::empty(config.policy, config.heterogeneity_aware, config.cluster.clone());
            base.entities = tenants
                .iter()
                .map(|(name, weight)| crate::problem::Entity {
                    name: name.clone(),
                    weight: *weight,
                    sharing: crate::problem::Sharing::Fairness,
                    parent: None,
                })
                .collect();
            Session::from_problem(&base, mechanism)?
        }
        _ => Session::new(config.policy, config.heterogeneity_aware, config.cluster.clone(), mechanism)?,
    };
    session.set_realizable(config.realizable);
    session.set_tie_break(config.tie_break);
    let (tenants, tenant_of) = match tenancy {
        Some((tenants, of_job)) => (tenants.into_iter().map(|(n, w)| Tenant::new(n, w)).collect(), of_job),
        None => (vec![Tenant::new("default", 1.0)], vec![0; trace.jobs.len()]),
    };
    let mut order: Vec<usize> = (0..trace.jobs.len()).collect();
    order.sort_by(|&a, &b| trace.jobs[a].arrival_seconds.total_cmp(&trace.jobs[b].arrival_seconds).then(a.cmp(&b)));
    let start_time = order.first().map_or(0.0, |&i| trace.jobs[i].arrival_seconds);
    let mut run = Run {
        trace,
        config,
        session,
        jobs: rows
            .into_iter()
            .zip(believed)
            .zip(&trace.jobs)
            .map(|((throughput, believed), job)| JobProgress {
                throughput,
                believed,
                remaining: job.total_steps,
                start: None,
                finish: None,
                allocated: 0.0,
                fair_share: 0.0,
            })
            .collect(),
        active: HashMap::new(),
        now: start_time,
        busy: vec![0.0; config.cluster.len()],
        preemptions: 0,
        lease_renewals: 0,
        solves: 0,
        last_round_idle: false,
        table,
        tenants,
        tenant_of,
        periods: Periods::default(),
        start_time,
    };

    let measured_total = (0..trace.jobs.len()).filter(|&i| config.measures(i)).count();
    let mut measured_done = 0;
    let mut next = 0;
    let mut idle_rounds = 0;
    while measured_done < measured_total {
        while next < order.len() && trace.jobs[order[next]].arrival_seconds <= run.now {
            run.arrive(order[next])?;
            next += 1;
        }
        if run.active.is_empty() {
            // Nothing to run: jump to the next arrival (with none left, every job has finished).
            match order.get(next) {
                Some(&i) => run.now = trace.jobs[i].arrival_seconds,
                None => break,
            }
            continue;
        }
        if run.session.rounds() >= crate::scheduling::simulation::MAX_ROUNDS {
            return Err(crate::scheduling::simulation::too_many_rounds(run.now, run.active.len()));
        }
        let finished = run.round()?;
        if finished.is_empty() && run.last_round_idle {
            idle_rounds += 1;
            if idle_rounds >= MAX_IDLE_ROUNDS && next == order.len() {
                return Err(ArbiterError::new(
                    ErrorCode::Infeasible,
                    format!(
                        "no job could run for {MAX_IDLE_ROUNDS} rounds with {} jobs waiting: the policy gives them no \
                         placeable allocation",
                        run.active.len()
                    ),
                ));
            }
        } else {
            idle_rounds = 0;
        }
        for i in finished {
            run.session.remove_job(&i.to_string())?;
            run.active.remove(i.to_string().as_str());
            if config.measures(i) {
                measured_done += 1;
            }
        }
        progress(Progress {
            now_seconds: run.now - start_time,
            rounds: run.session.rounds(),
            measured_finished: measured_done,
            measured_total,
            active_jobs: run.active.len(),
        });
    }
    Ok(run.report(start_time, started.elapsed().as_secs_f64()))
}

impl Run<'_> {
    fn arrive(&mut self, i: usize) -> Result<()> {
        let t = &self.trace.jobs[i];
        let id = i.to_string();
        let job = Job {
            id: id.clone(),
            scale_factor: t.scale_factor,
            weight: t.weight,
            steps_remaining: Some(self.jobs[i].remaining),
            // It may have arrived during the last round: its time since arrival counts (Gavel's
            // `times_since_start`).
            time_elapsed: (self.now - t.arrival_seconds).max(0.0),
            isolated_time_elapsed: 0.0,
            slo_seconds: t.slo_seconds,
            entity: (self.config.policy == PolicyKind::Hierarchical && t.tenant.is_some())
                .then(|| self.tenants[self.tenant_of[i]].name.clone()),
            arrival: t.arrival_seconds,
        };
        self.session.add_job(job, &self.jobs[i].believed)?;
        if self.colocating() {
            self.offer_pairs(i)?;
        }
        self.active.insert(id.as_str().into(), i);
        Ok(())
    }

    /// Space sharing is on, or the policy packs jobs by itself (Gandiva).
    fn colocating(&self) -> bool {
        self.config.space_sharing || self.config.policy == PolicyKind::Gandiva
    }

    /// Offers the session every pair of the arriving job `i` with an active job of its scale
    /// factor, at the table's colocated throughputs (as Gavel's scheduler offers every pair).
    /// Pairs that can share no worker type are left out.
    fn offer_pairs(&mut self, i: usize) -> Result<()> {
        let t = &self.trace.jobs[i];
        let mut partners: Vec<usize> =
            self.active.values().copied().filter(|&o| self.trace.jobs[o].scale_factor == t.scale_factor).collect();
        partners.sort_unstable();
        for o in partners {
            let other = &self.trace.jobs[o];
            let throughput: Vec<[f64; 2]> = self
                .config
                .cluster
                .iter()
                .map(|w| {
                    self.table
                        .colocated(&w.name, (&t.job_type, t.scale_factor), (&other.job_type, other.scale_factor))
                        .filter(|pair| pair[0] > 0.0 && pair[1] > 0.0)
                        .unwrap_or([0.0, 0.0])
                })
                .collect();
            if throughput.iter().any(|pair| pair[0] > 0.0) {
                self.session.add_colocation(&i.to_string(), &o.to_string(), &throughput)?;
            }
        }
        Ok(())
    }

    /// Runs one round from `now`; returns the trace indices of jobs that finished in it and moves
    /// the clock to the round's end.
    fn round(&mut self) -> Result<Vec<usize>> {
        let round = self.session.next_round()?;
        if round.allocation_recomputed {
            self.solves += 1;
        }
        for j in &round.jobs {
            match j.lease {
                LeaseChange::Renewed => self.lease_renewals += 1,
                LeaseChange::Preempted => self.preemptions += 1,
                _ => {}
            }
        }
        let mut step = RoundStep { end: self.now, finished: Vec::new(), ran: HashMap::new() };
        if self.config.ideal {
            self.grant_ideal(&mut step)?;
        } else {
            for p in &round.placements {
                let w = p.worker_type;
                let mut tenants = self.session.placement_throughput(p);
                // Alone, a job runs at its true throughput, whatever the session believes.
                if let [(id, rate)] = &mut tenants[..] {
                    *rate = self.jobs[self.active[&*id]].throughput[w];
                }
                let mut steps = [0.0; 2];
                let mut longest = 0.0_f64;
                for (k, (id, rate)) in tenants.iter().enumerate().take(2) {
                    let i = self.active[id];
                    let (made, ran) = self.advance(i, *rate, &mut step);
                    steps[k] = made;
                    longest = longest.max(ran);
                }
                // A placement's GPUs are busy while any of its tenants runs.
                self.busy[w] += p.gpus.len() as f64 * longest;
                // Steps made, at the rates they were made at: the session smooths them into its rows.
                match &tenants[..] {
                    [(id, rate)] if *rate > 0.0 => self.session.report_progress(id, w, steps[0], *rate)?,
                    [(a, ra), (b, rb)] if *ra > 0.0 && *rb > 0.0 => {
                        self.session.report_colocated_progress(a, b, w, steps, [*ra, *rb])?
                    }
                    _ => {}
                }
            }
        }
        let RoundStep { end, mut finished, ran } = step;
        finished.sort_unstable();
        self.last_round_idle = end <= self.now;
        let next = if end > self.now { end } else { self.now + self.config.round_seconds };
        self.account_fairness(next - self.now, &ran);
        self.now = next;
        self.periods.observe(self.now - self.start_time, &self.tenants);
        Ok(finished)
    }

    /// Astraea's integrals over a round of `seconds` (`formulations/ltgf.md`): GPU time run, and
    /// fair GPU time owed to every job present (a job that finished: while it ran).
    fn account_fairness(&mut self, seconds: f64, ran: &HashMap<usize, f64>) {
        let mut present: Vec<usize> = self.active.values().copied().collect();
        present.sort_unstable();
        let presence: Vec<Presence> = present
            .iter()
            .map(|&i| {
                let t = &self.trace.jobs[i];
                let done = self.jobs[i].finish.is_some();
                Presence {
                    tenant: self.tenant_of[i],
                    weight: t.weight,
                    demand: t.scale_factor as f64,
                    seconds: if done { ran.get(&i).copied().unwrap_or(0.0).min(seconds) } else { seconds },
                }
            })
            .collect();
        let gpus: f64 = (0..self.config.cluster.len()).map(|w| self.session.cluster().healthy_count(w) as f64).sum();
        let owed = account_fair_shares(&mut self.tenants, gpus, seconds, &presence);
        for (&i, owed) in present.iter().zip(owed) {
            let gpu_seconds = ran.get(&i).copied().unwrap_or(0.0) * self.trace.jobs[i].scale_factor as f64;
            self.jobs[i].allocated += gpu_seconds;
            self.jobs[i].fair_share += owed;
            self.tenants[self.tenant_of[i]].allocated += gpu_seconds;
        }
    }

    /// Moves job `i` forward by up to a round at `rate` steps/s from `now`: returns the steps it
    /// made and the seconds it ran, and records its start and (if it got there) its finish.
    fn advance(&mut self, i: usize, rate: f64, step: &mut RoundStep) -> (f64, f64) {
        if rate <= 0.0 {
            return (0.0, 0.0);
        }
        let job = &mut self.jobs[i];
        let steps = job.remaining.min(rate * self.config.round_seconds);
        let ran = steps / rate;
        *step.ran.entry(i).or_insert(0.0) += ran;
        job.remaining -= steps;
        job.start.get_or_insert(self.now);
        let stop = self.now + ran;
        step.end = step.end.max(stop);
        if job.remaining <= DONE_TOLERANCE * self.trace.jobs[i].total_steps {
            job.remaining = 0.0;
            job.finish = Some(stop);
            step.finished.push(i);
        }
        (steps, ran)
    }

    /// Ideal mode: every job runs the round at its effective throughput under the allocation
    /// (alone and in pairs), and occupies its allocation's share of GPUs (half a pair's each).
    fn grant_ideal(&mut self, step: &mut RoundStep) -> Result<()> {
        let types = self.config.cluster.len();
        let mut shares: HashMap<usize, Vec<f64>> = HashMap::new();
        for pair in self.session.colocations() {
            let y = self.session.colocated_allocation(&pair[0], &pair[1])?;
            for id in pair {
                let share = shares.entry(self.active[id]).or_insert_with(|| vec![0.0; types]);
                share.iter_mut().zip(y).for_each(|(s, y)| *s += y / 2.0);
            }
        }
        let mut running: Vec<(usize, JobId)> = self.active.iter().map(|(id, &i)| (i, id.clone())).collect();
        running.sort_unstable_by_key(|r| r.0);
        for (i, id) in running {
            let rate = self.session.effective_throughput(&id)?;
            let x = self.session.allocation(&id)?.to_vec();
            let (made, ran) = self.advance(i, rate, step);
            if ran <= 0.0 {
                continue;
            }
            let sf = self.trace.jobs[i].scale_factor as f64;
            let paired = shares.get(&i);
            for w in 0..types {
                self.busy[w] += (x[w] + paired.map_or(0.0, |p| p[w])) * sf * ran;
            }
            // Steps made; reported on a type the job runs on, at its own throughput there, so the
            // estimate stays as it is.
            let row = &self.jobs[i].throughput;
            if let Some(w) = (0..types).find(|&w| row[w] > 0.0) {
                self.session.report_progress(&id, w, made, row[w])?;
            }
        }
        Ok(())
    }

    fn report(&self, start_time: f64, wall_seconds: f64) -> SimulationReport {
        let outcomes: Vec<report::JobOutcome> = self
            .jobs
            .iter()
            .map(|p| report::JobOutcome {
                throughput: &p.throughput,
                remaining: p.remaining,
                start: p.start,
                finish: p.finish,
                preemptions: None,
                restart_seconds: None,
                ltgf_rho: (p.fair_share > 0.0).then(|| p.allocated / p.fair_share),
            })
            .collect();
        let mut report = report::assemble(
            self.trace,
            self.config,
            &outcomes,
            report::Totals {
                composition: crate::scheduling::Composition::gavel(self.config.policy).name(),
                start_time,
                end: self.now,
                busy: self.busy.clone(),
                preemptions: self.preemptions,
                lease_renewals: self.lease_renewals,
                rounds: self.session.rounds(),
                allocation_solves: self.solves,
                wall_seconds,
                restart_seconds: 0.0,
            },
        );
        let job_rho: Vec<f64> = report
            .jobs
            .iter()
            .filter(|j| j.measured && j.finish_seconds.is_some())
            .filter_map(|j| j.ltgf_rho)
            .collect();
        report.ltgf = Some(self.periods.summarize(&self.tenants, &job_rho));
        report
    }
}
