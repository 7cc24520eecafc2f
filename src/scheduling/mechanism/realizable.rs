//! The realizability check (`solver::realizability`) on a session's current allocation: its
//! healthy GPUs, its jobs' scale factors and `X`, for the allocation view and `arbiter rounds`.

use super::session::Session;
use crate::problem::Matrix;
use crate::solver::realizability::{report_instance, Budget, Instance, RealizabilityReport};

/// How much of the session's allocation rounds on its healthy GPUs can deliver.
pub fn realizability(session: &Session) -> RealizabilityReport {
    let paired = session
        .colocations()
        .any(|[a, b]| session.colocated_allocation(a, b).is_ok_and(|y| y.iter().any(|&v| v > 0.0)));
    if paired {
        return RealizabilityReport::skipped(
            "colocated pairs (space sharing) are not covered by the check".to_string(),
        );
    }
    let cluster = session.cluster();
    let types = cluster.num_types();
    let ids: Vec<&str> = session.job_ids().map(|id| id.as_ref()).collect();
    let mut requested = Matrix::zeros(ids.len(), types);
    let mut scale_factors = Vec::with_capacity(ids.len());
    for (m, id) in ids.iter().enumerate() {
        let (Ok(job), Ok(x)) = (session.job(id), session.allocation(id)) else {
            return RealizabilityReport::skipped(format!("job {id} has no allocation"));
        };
        scale_factors.push(job.scale_factor);
        for (w, &v) in x.iter().enumerate().take(types) {
            requested.set(m, w, v);
        }
    }
    let instance =
        Instance { capacity: (0..types).map(|w| cluster.healthy_count(w)).collect(), scale_factors, requested };
    let names: Vec<&str> = (0..types).map(|w| cluster.type_name(w)).collect();
    report_instance(&instance, &ids, &names, &Budget::default(), session.config().backend)
}
