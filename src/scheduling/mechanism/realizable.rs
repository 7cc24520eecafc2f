//! The realizability check (`solver::realizability`) on a session's current allocation: its
//! healthy GPUs, its jobs' scale factors and `X`, for the allocation view and `arbiter rounds`.

use super::session::Session;
use super::{JobId, Mode};
use crate::problem::Matrix;
use crate::solver::realizability::{check_reported, Budget, Instance, PairTime, Realizability, RealizabilityReport};

/// How much of the session's allocation rounds on its healthy GPUs can deliver. With rounds that
/// follow the decomposition (`Mode::Configurations`), the check that made the one they follow.
pub fn realizability(session: &Session) -> RealizabilityReport {
    if let Some(schedule) = session.schedule.as_ref().filter(|s| s.is_current(session)) {
        return schedule.report.clone();
    }
    let budget = match session.config().mode {
        Mode::Configurations => super::configurations::budget(),
        _ => Budget::default(),
    };
    checked(session, &budget).1
}

/// The check on the session's allocation with `budget`, or why it does not cover it, and its
/// report with the session's job and type names.
pub(super) fn checked(session: &Session, budget: &Budget) -> (Result<Realizability, String>, RealizabilityReport) {
    match instance(session) {
        Ok((instance, ids)) => {
            let (ids, types) = names(session, &ids);
            check_reported(&instance, &ids, &types, budget, session.config().backend)
        }
        Err(reason) => (Err(reason.clone()), RealizabilityReport::skipped(reason)),
    }
}

/// `ids` and the session's worker type names, as reports name entries.
pub(super) fn names<'a>(session: &'a Session, ids: &'a [JobId]) -> (Vec<&'a str>, Vec<&'a str>) {
    let cluster = session.cluster();
    (ids.iter().map(|id| id.as_ref()).collect(), (0..cluster.num_types()).map(|w| cluster.type_name(w)).collect())
}

/// The session's healthy GPUs, its jobs' scale factors, `X` and its colocated pairs' time, with
/// the jobs in the session's order; the reason when the check does not cover the allocation (a
/// composed session's, or colocated pairs with time when rounds follow the decomposition).
/// Time on a type where the job cannot run at all (throughput 0, as a type-blind policy may
/// allocate) is left out: the session reports it as unplaceable, and no round can give it.
pub(super) fn instance(session: &Session) -> Result<(Instance, Vec<JobId>), String> {
    if session.composed.is_some() {
        return Err("a composed session's allocation is its current round's placements".to_string());
    }
    let types = session.cluster().num_types();
    let ids: Vec<JobId> = session.job_ids().cloned().collect();
    let position: std::collections::HashMap<&str, u32> =
        ids.iter().enumerate().map(|(m, id)| (id.as_ref(), m as u32)).collect();
    let mut pairs = Vec::new();
    for [a, b] in session.colocations() {
        let Ok(y) = session.colocated_allocation(a, b) else { continue };
        if !y.iter().any(|&v| v > 0.0) {
            continue;
        }
        if session.config().mode == Mode::Configurations {
            return Err("rounds that follow the decomposition do not run colocated pairs (space sharing)".to_string());
        }
        let (Some(&a), Some(&b)) = (position.get(a.as_ref()), position.get(b.as_ref())) else {
            return Err(format!("colocated jobs {a} and {b} are not both in the session"));
        };
        pairs.push(PairTime { jobs: [a, b], requested: y.iter().copied().take(types).collect() });
    }
    let mut requested = Matrix::zeros(ids.len(), types);
    let mut scale_factors = Vec::with_capacity(ids.len());
    for (m, id) in ids.iter().enumerate() {
        let (Ok(job), Ok(x), Ok(throughput)) = (session.job(id), session.allocation(id), session.throughput(id)) else {
            return Err(format!("job {id} has no allocation"));
        };
        scale_factors.push(job.scale_factor);
        for (w, (&v, &t)) in x.iter().zip(throughput).enumerate().take(types) {
            if t > 0.0 {
                requested.set(m, w, v);
            }
        }
    }
    Ok((Instance { capacity: session.capacity(), scale_factors, requested, pairs }, ids))
}
