//! The JSON shapes of FitGpp's nodes and jobs, shared by sessions (`service::fitgpp`) and
//! workload files (`simulator::fitgpp::trace`): groups of identical nodes, and a job with its
//! kind, resources, duration, grace period and arrival. Not for scheduling them.

use super::job::{JobKind, JobSpec};
use super::resources::Resources;
use crate::error::{ArbiterError, ErrorCode, Result};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Nodes at most, over all groups.
pub const MAX_NODES: usize = 100_000;

fn one() -> u32 {
    1
}

/// `count` nodes of the same capacity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FitGppNodeGroup {
    #[serde(default = "one")]
    pub count: u32,
    pub cpus: u32,
    pub memory_gb: u32,
    pub gpus: u32,
}

/// A job arriving at `at` (in a session, default: the session's time; in a workload file,
/// required).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FitGppJob {
    pub id: String,
    /// `te` (trial-and-error) or `be` (best-effort).
    #[schema(value_type = String)]
    pub kind: JobKind,
    pub cpus: u32,
    pub memory_gb: u32,
    pub gpus: u32,
    /// Seconds it runs alone.
    pub duration_seconds: f64,
    /// Seconds it needs to save its state once told to stop (default 0).
    #[serde(default)]
    pub grace_period_seconds: f64,
    /// Session seconds; not before the session's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<f64>,
}

impl FitGppJob {
    /// The job as the cluster takes it (validated there).
    pub fn spec(&self) -> JobSpec {
        JobSpec {
            id: self.id.clone(),
            kind: self.kind,
            demand: Resources::new(self.cpus, self.memory_gb, self.gpus),
            duration_seconds: self.duration_seconds,
            grace_period_seconds: self.grace_period_seconds,
        }
    }

    /// `spec` arriving at `at`.
    pub fn of(spec: &JobSpec, at: f64) -> FitGppJob {
        FitGppJob {
            id: spec.id.clone(),
            kind: spec.kind,
            cpus: spec.demand.cpus,
            memory_gb: spec.demand.memory_gb,
            gpus: spec.demand.gpus,
            duration_seconds: spec.duration_seconds,
            grace_period_seconds: spec.grace_period_seconds,
            at: Some(at),
        }
    }
}

/// Every node of the groups, in order; refuses a node with no resource and more than
/// [`MAX_NODES`] nodes (fields named under `field`, e.g. `nodes`).
pub fn capacities(groups: &[FitGppNodeGroup], field: &str) -> Result<Vec<Resources>> {
    let mut capacities = Vec::new();
    for (k, g) in groups.iter().enumerate() {
        if g.cpus == 0 && g.memory_gb == 0 && g.gpus == 0 {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                format!("{field}[{k}]"),
                "a node needs some resource",
            ));
        }
        if capacities.len() + g.count as usize > MAX_NODES {
            return Err(ArbiterError::at(
                ErrorCode::InvalidNumber,
                format!("{field}[{k}].count"),
                format!("at most {MAX_NODES} nodes"),
            ));
        }
        capacities.extend(std::iter::repeat_n(Resources::new(g.cpus, g.memory_gb, g.gpus), g.count as usize));
    }
    Ok(capacities)
}

/// Runs of equal capacities as groups (the inverse of [`capacities`]).
pub fn groups(capacities: &[Resources]) -> Vec<FitGppNodeGroup> {
    let mut out: Vec<FitGppNodeGroup> = Vec::new();
    for c in capacities {
        match out.last_mut() {
            Some(g) if (g.cpus, g.memory_gb, g.gpus) == (c.cpus, c.memory_gb, c.gpus) => g.count += 1,
            _ => out.push(FitGppNodeGroup { count: 1, cpus: c.cpus, memory_gb: c.memory_gb, gpus: c.gpus }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_capacities_are_inverse() {
        let caps = [Resources::new(32, 256, 8), Resources::new(32, 256, 8), Resources::new(8, 64, 0)];
        let g = groups(&caps);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].count, 2);
        assert_eq!(capacities(&g, "nodes").unwrap(), caps);
        let empty = [FitGppNodeGroup { count: 1, cpus: 0, memory_gb: 0, gpus: 0 }];
        assert_eq!(capacities(&empty, "trace.nodes").unwrap_err().field.as_deref(), Some("trace.nodes[0]"));
    }
}
