//! What one simulation runs: the cluster, the policy and how the mechanism grants time, and which
//! jobs are measured. Parsing of the command line's `--cluster v100=8,p100=16,k80=24` lives here.

use crate::error::{ArbiterError, ErrorCode, Result};
use crate::lp::Backend;
use crate::policies::PolicyKind;
use crate::problem::WorkerType;
use crate::solver::realizable::Realizable;
use crate::solver::tie_break::TieBreak;

/// One simulation's settings.
#[derive(Debug, Clone)]
pub struct SimulationConfig {
    /// Worker types with their GPU counts, servers and (optionally) prices, in this order.
    pub cluster: Vec<WorkerType>,
    pub policy: PolicyKind,
    /// `false`: the policy sees every throughput as 1 (the classic, type-blind policy).
    pub heterogeneity_aware: bool,
    /// Jobs of equal scale factor may share GPUs, at the colocated throughputs of the table.
    pub space_sharing: bool,
    /// Length of a round, in seconds (Gavel: 360).
    pub round_seconds: f64,
    /// Grant every job exactly its allocation each round (the mechanism's `Mode::Ideal`).
    pub ideal: bool,
    /// Whether the policy is solved over round configurations (`Problem::realizable`): by default
    /// unless space sharing's pairs are in the solve; off for Gavel's fractional allocations
    /// (`SimulationConfig::gavel`).
    pub realizable: Realizable,
    /// What follows a bottleneck policy's optimum (`Problem::tie_break`): `throughput` by default,
    /// `none` (the bare LP's vertex) for Gavel's fractional allocations (`SimulationConfig::gavel`).
    pub tie_break: TieBreak,
    /// Rounds follow the allocation's decomposition (the mechanism's `Mode::Configurations`).
    pub configurations: bool,
    /// Measured jobs: trace positions `first..last` (Gavel's `--window-start/--window-end`);
    /// `None`: every job. The simulation ends when every measured job has finished.
    pub window: Option<(usize, usize)>,
    /// The allocation is recomputed on arrivals and completions, at most this often (seconds).
    pub min_solve_interval: f64,
    /// GPUs the allocation leaves idle go to jobs ahead of their allocation (as Gavel's mechanism
    /// fills every GPU it can).
    pub work_conserving: bool,
    /// Recorded in the report. A simulation makes no random choice of its own (ties break by job
    /// order, `gandiva` pairs by a hash of job ids); `sweep` seeds its generated traces with it.
    pub seed: u64,
    pub backend: Backend,
    /// `Some(K)`: the policy sees each job's throughputs estimated from K measured worker types
    /// (`estimated.rs`), while jobs progress at their true throughputs.
    pub profiled_types: Option<usize>,
    /// Seconds a suspended job loses when it resumes (a cold start: restoring its checkpoint),
    /// charged by pipeline compositions under any preemption stage; Gavel's mechanism models none.
    pub restart_seconds: f64,
}

impl SimulationConfig {
    /// How the session's rounds grant time: `ideal` over `configurations` over priority rounds.
    pub fn mode(&self) -> crate::mechanism::Mode {
        use crate::mechanism::Mode;
        match (self.ideal, self.configurations) {
            (true, _) => Mode::Ideal,
            (_, true) => Mode::Configurations,
            _ => Mode::Rounds,
        }
    }

    /// A policy on a cluster with Gavel's mechanism: 6-minute rounds, recomputation on every
    /// arrival and completion, work-conserving rounds, every job measured; the LP policies solve
    /// over round configurations (`realizable`), so rounds can deliver what they allocate.
    pub fn new(cluster: Vec<WorkerType>, policy: PolicyKind) -> SimulationConfig {
        let realizable = Realizable::UnlessPaired;
        let tie_break = SimulationConfig::default_tie_break(realizable);
        SimulationConfig { realizable, tie_break, ..SimulationConfig::gavel(cluster, policy) }
    }

    /// Gavel's settings exactly, as its paper's numbers need: `new` with the fractional
    /// allocations of Gavel's LPs (`Realizable::Off`), their bare vertices (`TieBreak::None`).
    pub fn gavel(cluster: Vec<WorkerType>, policy: PolicyKind) -> SimulationConfig {
        SimulationConfig {
            cluster,
            policy,
            heterogeneity_aware: true,
            space_sharing: false,
            round_seconds: 360.0,
            ideal: false,
            realizable: Realizable::Off,
            tie_break: SimulationConfig::default_tie_break(Realizable::Off),
            configurations: false,
            window: None,
            min_solve_interval: 0.0,
            work_conserving: true,
            seed: 0,
            backend: Backend::default(),
            profiled_types: None,
            restart_seconds: 0.0,
        }
    }

    /// The tie-break a simulation runs unless told: Gavel's bare vertices with its fractional
    /// allocations (`realizable` off), as reproducing its numbers needs; `throughput` otherwise.
    pub fn default_tie_break(realizable: Realizable) -> TieBreak {
        match realizable {
            Realizable::Off => TieBreak::None,
            _ => TieBreak::Throughput,
        }
    }

    /// Refuses settings no simulation can run with, naming the field.
    pub fn validate(&self, num_jobs: usize) -> Result<()> {
        let invalid = |field: &str, message: String| Err(ArbiterError::at(ErrorCode::InvalidNumber, field, message));
        if self.cluster.is_empty() || self.cluster.iter().all(|w| w.count <= 0.0) {
            return Err(ArbiterError::at(ErrorCode::MissingField, "cluster", "the cluster needs at least one GPU"));
        }
        if let Some(why) = crate::mechanism::round_seconds_refusal(self.round_seconds) {
            return invalid("round_seconds", why);
        }
        // Named as the flag that sets it, `--min-solve-seconds`, as the other refusals here are.
        if let Some(why) = crate::problem::refusal(self.min_solve_interval, 0.0, "min_solve_seconds") {
            return invalid("min_solve_seconds", why);
        }
        if let Some(why) = crate::problem::refusal(self.restart_seconds, 0.0, "restart_seconds") {
            return invalid("restart_seconds", why);
        }
        if matches!(self.policy, PolicyKind::MinCost | PolicyKind::MinCostSlo) {
            if let Some(w) = self.cluster.iter().find(|w| w.cost_per_hour.is_none()) {
                return Err(ArbiterError::at(
                    ErrorCode::MissingField,
                    "prices",
                    format!(
                        "{} needs a price for every worker type (--prices); {} has none",
                        self.policy.name(),
                        w.name
                    ),
                ));
            }
        }
        if let Some(k) = self.profiled_types {
            if k == 0 {
                return invalid("profiled_types", "a job is profiled on at least one worker type".to_string());
            }
            if k > self.cluster.len() {
                return invalid(
                    "profiled_types",
                    format!(
                        "a job can be profiled on at most the cluster's {} worker types, got {k}",
                        self.cluster.len()
                    ),
                );
            }
            if self.space_sharing || self.ideal || self.policy == PolicyKind::Gandiva {
                return Err(ArbiterError::at(
                    ErrorCode::Unsupported,
                    "profiled_types",
                    "estimated throughputs are simulated for jobs running alone in rounds (no space sharing, gandiva or --ideal)",
                ));
            }
        }
        if let Some(refused) = crate::solver::tie_break::refusal(self.tie_break, self.policy) {
            return Err(refused);
        }
        if let Some((first, last)) = self.window {
            if first >= last {
                return invalid("window", format!("the window {first}:{last} must have first < last"));
            }
            if last > num_jobs {
                return invalid(
                    "window",
                    format!("the window {first}:{last} must end at or before the trace's {num_jobs} jobs"),
                );
            }
        }
        Ok(())
    }

    /// Whether trace job `i` is measured.
    pub fn measures(&self, i: usize) -> bool {
        self.window.is_none_or(|(first, last)| (first..last).contains(&i))
    }
}

/// Parses `v100=8,p100=16,k80=24` into worker types with `gpus_per_server` GPUs per server.
/// `prices` (`v100=2.48,...`, dollars per GPU-hour) may name any of them.
pub fn parse_cluster(spec: &str, gpus_per_server: u32, prices: Option<&str>) -> Result<Vec<WorkerType>> {
    if gpus_per_server == 0 {
        return Err(ArbiterError::at(
            ErrorCode::InvalidNumber,
            "gpus_per_server",
            "gpus_per_server must be at least 1",
        ));
    }
    let mut types: Vec<WorkerType> = Vec::new();
    for (name, count) in pairs(spec, "cluster")? {
        if count.fract() != 0.0 || count < 0.0 || count > u32::MAX as f64 {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                format!("cluster.{name}"),
                format!(
                    "a GPU count must be a whole number from 0 to {}, got {}",
                    u32::MAX,
                    crate::problem::shown(count)
                ),
            ));
        }
        if types.iter().any(|w| w.name == name) {
            return Err(ArbiterError::at(
                ErrorCode::MalformedRequest,
                format!("cluster.{name}"),
                format!("worker type {name:?} is listed twice"),
            ));
        }
        types.push(WorkerType { name, count, gpus_per_server, cost_per_hour: None });
    }
    if let Some(prices) = prices {
        for (name, price) in pairs(prices, "prices")? {
            let w = types.iter_mut().find(|w| w.name == name).ok_or_else(|| {
                ArbiterError::at(
                    ErrorCode::UnknownWorkerType,
                    format!("prices.{name}"),
                    format!("worker type {name:?} is not in the cluster"),
                )
            })?;
            if let Some(why) = crate::problem::refusal(price, 0.0, "a price") {
                return Err(ArbiterError::at(ErrorCode::InvalidNumber, format!("prices.{name}"), why));
            }
            w.cost_per_hour = Some(price);
        }
        // The report's cost needs every type's price; a partial list would leave it empty.
        if let Some(w) = types.iter().find(|w| w.cost_per_hour.is_none()) {
            return Err(ArbiterError::at(
                ErrorCode::MissingField,
                format!("prices.{}", w.name),
                format!("--prices gives no price for {}: give every worker type's, or none", w.name),
            ));
        }
    }
    Ok(types)
}

/// `name=value,name=value`, values finite numbers.
fn pairs(spec: &str, what: &str) -> Result<Vec<(String, f64)>> {
    let malformed = |message: String| ArbiterError::at(ErrorCode::MalformedRequest, what, message);
    if spec.trim().is_empty() {
        return Err(malformed(format!("{what} must be like v100=8,p100=16,k80=24, got an empty string")));
    }
    spec.split(',')
        .map(|part| {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| malformed(format!("{what} entries must be NAME=NUMBER, got {part:?}")))?;
            let name = name.trim();
            let value: f64 = value
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| malformed(format!("{what} entries must be NAME=NUMBER, got {part:?}")))?;
            if name.is_empty() {
                return Err(malformed(format!("{what} entries need a worker type name, got {part:?}")));
            }
            Ok((name.to_string(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_papers_cluster() {
        let c = parse_cluster("v100=8,p100=16,k80=24", 4, Some("v100=2.48,p100=1.46,k80=0.45")).unwrap();
        let names: Vec<&str> = c.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["v100", "p100", "k80"]);
        assert_eq!(c[1].count, 16.0);
        assert_eq!(c[2].gpus_per_server, 4);
        assert_eq!((c[0].cost_per_hour, c[1].cost_per_hour), (Some(2.48), Some(1.46)));
        // Prices for some types only would leave the report's cost empty: refused.
        let partial = parse_cluster("v100=8,p100=16,k80=24", 4, Some("v100=2.48,k80=0.45")).unwrap_err();
        assert_eq!((partial.code, partial.field.as_deref()), (ErrorCode::MissingField, Some("prices.p100")));
    }

    #[test]
    fn refuses_bad_clusters() {
        let code = |r: Result<Vec<WorkerType>>| r.unwrap_err().code;
        assert_eq!(code(parse_cluster("v100", 4, None)), ErrorCode::MalformedRequest);
        assert_eq!(code(parse_cluster("v100=1.5", 4, None)), ErrorCode::InvalidNumber);
        assert_eq!(code(parse_cluster("v100=1,v100=2", 4, None)), ErrorCode::MalformedRequest);
        assert_eq!(code(parse_cluster("v100=1", 0, None)), ErrorCode::InvalidNumber);
        assert_eq!(code(parse_cluster("v100=1", 4, Some("a100=3"))), ErrorCode::UnknownWorkerType);
    }
}
