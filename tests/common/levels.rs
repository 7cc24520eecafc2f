//! What a water-filling response (`max_min_fairness_water_filling` or `hierarchical`) reports about
//! each job in `levels`, and the checks of it against hand-derived answers.

use super::{equal_share_throughput, solve_value, throughputs};
use arbiter::{Problem, Response};
use serde_json::Value;

/// `levels` of a water-filling response, in the problem's job order.
#[derive(Debug, Clone)]
pub struct Filled {
    pub nt: Vec<f64>,
    pub level: Vec<f64>,
    pub iteration: Vec<usize>,
}

pub fn reported(p: &Problem, r: &Response) -> Filled {
    let levels = r.levels.as_ref().expect("a water-filling response reports levels");
    assert_eq!(levels.len(), p.num_jobs(), "one level per job");
    let mut out = Filled { nt: Vec::new(), level: Vec::new(), iteration: Vec::new() };
    for job in &p.jobs {
        let l = levels.get(&job.id).unwrap_or_else(|| panic!("no level for {}", job.id));
        out.nt.push(l.normalized_throughput);
        out.level.push(l.level);
        out.iteration.push(l.iteration);
    }
    let iterations = r.stats.iterations.expect("a water-filling response reports its iterations");
    assert_eq!(iterations, out.iteration.iter().max().unwrap() + 1, "stats.iterations vs the last freeze");
    assert!(r.stats.lp_solves >= iterations, "at least one LP per level");
    out
}

/// Relative closeness, with values below 1e-2 compared on an absolute 1e-2 scale.
pub fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs().max(1e-2)
}

/// What a hand-derived answer says about a job: its nt (its time share, on one type), the level it
/// froze at and the iteration it froze in.
pub type ByHand<'a> = (&'a str, f64, f64, usize);

/// Checks every job's nt — recomputed from the allocation and as reported — and its effective
/// throughput `T·X` against a hand-derived answer.
pub fn assert_allocation_by_hand(request: &Value, want: &[ByHand]) -> Response {
    let (p, r, x) = solve_value(request);
    let got = reported(&p, &r);
    let eq = equal_share_throughput(&p);
    let thr = throughputs(&p, &x);
    assert_eq!(want.len(), p.num_jobs());
    for &(id, nt, _, _) in want {
        let m = p.jobs.iter().position(|j| j.id == id).unwrap();
        let from_x = thr[m] / eq[m];
        assert!(close(from_x, nt, 1e-6), "{id}: nt {from_x} from the allocation, want {nt}; {got:?}");
        assert!(close(got.nt[m], nt, 1e-6), "{id}: reported nt {}, want {nt}", got.nt[m]);
        let effective = r.effective_throughput[id];
        let want_thr = p.measured.get(m, 0) * nt;
        assert!(close(effective, want_thr, 1e-6), "{id}: effective throughput {effective}, want {want_thr}");
    }
    r
}

/// Checks every job's reported level and freeze iteration, and `stats.iterations`, against a
/// hand-derived answer.
pub fn assert_freezes_by_hand(request: &Value, want: &[ByHand]) {
    let (p, r, _) = solve_value(request);
    let got = reported(&p, &r);
    assert_eq!(want.len(), p.num_jobs());
    for &(id, _, level, iteration) in want {
        let m = p.jobs.iter().position(|j| j.id == id).unwrap();
        assert!(close(got.level[m], level, 1e-6), "{id}: level {}, want {level}; {got:?}", got.level[m]);
        assert_eq!(got.iteration[m], iteration, "{id}: froze in iteration {}; {got:?}", got.iteration[m]);
    }
    let levels = want.iter().map(|w| w.3).max().unwrap() + 1;
    assert_eq!(r.stats.iterations, Some(levels), "levels raised; {got:?}");
}

pub fn assert_by_hand(request: &Value, want: &[ByHand]) -> Response {
    assert_freezes_by_hand(request, want);
    assert_allocation_by_hand(request, want)
}
