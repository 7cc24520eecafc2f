//! Shared helpers of the mechanism tests: fixtures, running rounds, and the invariant checker every
//! round of every test goes through.
#![allow(dead_code)]

use arbiter::mechanism::{Config, GpuId, Lease, LeaseChange, Mode, Round, Session, Tenants};
use arbiter::problem::{Job, WorkerType};
use arbiter::Problem;
use std::collections::{BTreeSet, HashMap};

pub fn fixture(name: &str) -> Problem {
    let path = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Problem::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn worker_type(name: &str, count: u32, gpus_per_server: u32) -> WorkerType {
    WorkerType { name: name.to_string(), count: count as f64, gpus_per_server, cost_per_hour: None }
}

pub fn job(id: &str, scale_factor: u32) -> Job {
    Job {
        id: id.to_string(),
        scale_factor,
        weight: 1.0,
        steps_remaining: Some(1e6),
        time_elapsed: 0.0,
        isolated_time_elapsed: 0.0,
        slo_seconds: None,
        entity: None,
        arrival: 0.0,
    }
}

/// Every job's lease, to compare the next round against.
pub fn leases(session: &Session) -> HashMap<String, Option<Lease>> {
    session.job_ids().map(|id| (id.to_string(), session.lease(id).unwrap().cloned())).collect()
}

/// Runs one round and checks it against every invariant.
pub fn round(session: &mut Session) -> Round {
    let before = leases(session);
    let round = session.next_round().expect("a round");
    check_round(session, &before, &round);
    round
}

pub fn run(session: &mut Session, rounds: usize) {
    for _ in 0..rounds {
        round(session);
    }
}

/// `(job, type, allocation, received fraction)` for every allocated type the job can be placed
/// on; unplaceable types are left out (the mechanism can never grant them).
pub fn gaps(session: &Session) -> Vec<(String, usize, f64, f64)> {
    let mut out = Vec::new();
    for id in session.job_ids() {
        let x = session.allocation(id).unwrap();
        let received = session.received_fraction(id).unwrap();
        let unplaceable = session.unplaceable_types(id).unwrap();
        for w in 0..x.len() {
            if !unplaceable.contains(&w) {
                out.push((id.to_string(), w, x[w], received[w]));
            }
        }
    }
    out
}

/// The largest |deliverable − received| over the (job, type) of `gaps`, where deliverable is the
/// allocation less the shortfall the session's realizability check names (with
/// `Mode::Configurations`, that of the decomposition the rounds follow).
pub fn decomposition_gap(session: &Session) -> f64 {
    let report = arbiter::mechanism::realizability(session);
    assert!(report.checked, "{:?}", report.reason);
    gaps(session)
        .into_iter()
        .map(|(id, w, x, received)| {
            let name = session.cluster().type_name(w);
            let deliverable =
                report.shortfall.iter().find(|s| s.job == id && s.worker_type == name).map_or(x, |s| s.deliverable);
            (deliverable - received).abs()
        })
        .fold(0.0, f64::max)
}

pub fn max_gap(session: &Session) -> f64 {
    gaps(session).iter().map(|(_, _, x, r)| (x - r).abs()).fold(0.0, f64::max)
}

pub fn mean_gap(session: &Session) -> f64 {
    let g = gaps(session);
    g.iter().map(|(_, _, x, r)| (x - r).abs()).sum::<f64>() / g.len().max(1) as f64
}

/// A session on a problem's cluster and jobs, solved and run `rounds` rounds.
pub fn run_problem(problem: &Problem, rounds: usize, config: Config) -> Session {
    let mut session = Session::from_problem(problem, config).expect("a valid session");
    run(&mut session, rounds);
    session
}

/// The fewest servers of `free` (free GPUs per server) that hold `need` GPUs.
pub fn fewest_servers(free: &[u32], need: u32) -> usize {
    let mut counts: Vec<u32> = free.to_vec();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let mut total = 0;
    for (k, c) in counts.iter().enumerate() {
        total += c;
        if total >= need {
            return k + 1;
        }
    }
    usize::MAX
}

/// The invariants of a round, given every job's lease before it.
pub fn check_round(session: &Session, before: &HashMap<String, Option<Lease>>, round: &Round) {
    let cluster = session.cluster();
    let ids: Vec<String> = session.job_ids().map(|j| j.to_string()).collect();
    let reported: Vec<String> = round.jobs.iter().map(|j| j.job.to_string()).collect();
    assert_eq!(reported, ids, "a round reports every active job, in order");
    assert_eq!(round.by_gpu.len(), cluster.num_gpus());
    if session.config().mode == Mode::Ideal {
        assert!(round.placements.is_empty() && round.by_gpu.iter().all(Option::is_none));
        assert!(round.jobs.iter().all(|j| j.lease == LeaseChange::Fractional));
        return;
    }

    let mut holder: Vec<Option<usize>> = vec![None; cluster.num_gpus()];
    let mut runs: HashMap<String, usize> = HashMap::new();
    let mut used = vec![0u32; cluster.num_types()];
    for (p, placement) in round.placements.iter().enumerate() {
        let w = placement.worker_type;
        for job in placement.jobs.as_slice() {
            assert!(runs.insert(job.to_string(), p).is_none(), "job {job} runs twice in one round");
            let spec = session.job(job).expect("placed jobs are active");
            assert_eq!(placement.gpus.len(), spec.scale_factor as usize, "job {job} gets exactly its scale factor");
        }
        let job = placement.jobs.as_slice().iter().map(|j| j.to_string()).collect::<Vec<_>>().join("+");
        match &placement.jobs {
            Tenants::Single(id) => {
                // Work-conserving rounds also fill GPUs with jobs on types their allocation leaves out.
                assert!(
                    session.allocation(id).unwrap()[w] > 0.0 || session.config().work_conserving,
                    "{job} runs only where allocated"
                );
                assert!(session.throughput(id).unwrap()[w] > 0.0, "{job} runs only where it can");
            }
            Tenants::Pair([a, b]) => {
                assert!(session.colocated_allocation(a, b).unwrap()[w] > 0.0, "pair {job} runs only where allocated");
                let t = session.colocated_throughput(a, b).unwrap()[w];
                assert!(t[0] > 0.0 && t[1] > 0.0, "pair {job} runs only where both progress");
                let speeds = session.placement_throughput(placement);
                assert_eq!(
                    speeds,
                    vec![(a.clone(), t[0]), (b.clone(), t[1])],
                    "pair {job} runs at its paired throughputs"
                );
            }
        }
        for &g in &placement.gpus {
            assert!((g.0 as usize) < cluster.num_gpus());
            assert_eq!(cluster.gpu_type(g), w, "{job}: all GPUs of one type");
            assert!(cluster.is_healthy(g), "{job} placed on failed GPU {}", cluster.gpu_name(g));
            assert!(holder[g.0 as usize].is_none(), "GPU {} holds two jobs", cluster.gpu_name(g));
            holder[g.0 as usize] = Some(p);
            assert_eq!(round.by_gpu[g.0 as usize], Some(p as u32));
        }
        used[w] += placement.gpus.len() as u32;
    }
    for (g, h) in holder.iter().enumerate() {
        assert_eq!(round.by_gpu[g].map(|p| p as usize), *h, "by_gpu agrees");
    }
    for (w, &used) in used.iter().enumerate() {
        assert!(used <= cluster.healthy_count(w), "type {w} over capacity");
    }

    let mut renewed_gpus = BTreeSet::new();
    let mut fresh: Vec<(usize, u32, usize, &Vec<GpuId>)> = Vec::new();
    for jr in &round.jobs {
        let id = jr.job.to_string();
        assert_eq!(jr.placement, runs.get(&id).copied(), "{id}: placement index");
        let prev = before.get(&id).cloned().flatten();
        let now = jr.placement.map(|p| &round.placements[p]);
        let expected = match (&prev, now) {
            (Some(old), Some(new)) if old.worker_type == new.worker_type && old.gpus == new.gpus => {
                LeaseChange::Renewed
            }
            (Some(_), Some(_)) => LeaseChange::Moved,
            (None, Some(_)) => LeaseChange::Started,
            (Some(_), None) => LeaseChange::Preempted,
            (None, None) => LeaseChange::Waiting,
        };
        assert_eq!(jr.lease, expected, "{id}: lease change");
        if let (Some(old), Some(new)) = (&prev, now) {
            // Space sharing: a job may give up its GPUs to the other tenant of the pair it ran in
            // (their leases were one), or join a partner on the partner's renewed GPUs.
            let shared_before = old.gpus.iter().any(|&g| {
                round.on_gpu(g).is_some_and(|p| {
                    p.jobs.as_slice().iter().any(|o| o.as_ref() != id && before.get(&o.to_string()) == Some(&prev))
                })
            });
            let joined = new.jobs.as_slice().iter().any(|o| {
                o.as_ref() != id && before.get(&o.to_string()).cloned().flatten().is_some_and(|l| l.gpus == new.gpus)
            });
            let kept_for_other = shared_before || joined;
            if old.worker_type == new.worker_type && old.gpus.iter().all(|&g| cluster.is_healthy(g)) && !kept_for_other
            {
                assert_eq!(jr.lease, LeaseChange::Renewed, "{id} stays on its type: keeps its GPUs");
            }
        }
        if let Some(p) = now {
            if jr.lease == LeaseChange::Renewed {
                renewed_gpus.extend(p.gpus.iter().copied());
            } else {
                let sf = p.gpus.len() as u32;
                fresh.push((p.worker_type, sf, jr.placement.unwrap(), &p.gpus));
            }
        }
    }
    // A pair's GPUs are renewed for both tenants when either keeps its lease.
    fresh.retain(|&(_, _, _, gpus)| !gpus.iter().any(|g| renewed_gpus.contains(g)));
    fresh.sort_by_key(|&(_, _, p, _)| p);
    fresh.dedup_by_key(|&mut (_, _, p, _)| p);
    // Fresh placements go in decreasing scale factor (combination order among equals: jobs alone
    // in session order, then pairs in colocation order), each on the fewest servers the GPUs
    // still free at its turn allow.
    let pairs: Vec<[String; 2]> = session.colocations().map(|[a, b]| [a.to_string(), b.to_string()]).collect();
    let combination = |p: usize| match &round.placements[p].jobs {
        Tenants::Single(id) => ids.iter().position(|j| j.as_str() == id.as_ref()).unwrap(),
        Tenants::Pair([a, b]) => {
            ids.len() + pairs.iter().position(|q| q[0] == a.as_ref() && q[1] == b.as_ref()).unwrap()
        }
    };
    fresh.sort_by_key(|&(w, sf, p, _)| (w, std::cmp::Reverse(sf), combination(p)));
    let mut taken = renewed_gpus;
    for (w, sf, p, gpus) in fresh {
        let servers: Vec<_> = cluster.servers_of_type(w).collect();
        let free: Vec<u32> = servers
            .iter()
            .map(|&s| cluster.server_gpus(s).filter(|g| cluster.is_healthy(*g) && !taken.contains(g)).count() as u32)
            .collect();
        let spanned: BTreeSet<_> = gpus.iter().map(|&g| cluster.gpu_server(g)).collect();
        assert_eq!(
            spanned.len(),
            fewest_servers(&free, sf),
            "{:?} ({sf} GPUs) is not consolidated: free per server {free:?}",
            round.placements[p].jobs
        );
        for g in gpus {
            assert!(taken.insert(*g), "GPU given twice");
        }
    }
}

pub fn matrix(rows: &[&[f64]]) -> arbiter::problem::Matrix {
    arbiter::problem::Matrix::from_rows(rows)
}

/// The smallest `g` such that a schedule on whole GPUs of type `w` exists, in the long run, giving
/// every job allocated there (and placeable there) a fraction `y` of rounds with `X − g ≤ y ≤ X`:
/// 0 exactly when the type's allocation is realizable (up to solver tolerance).
///
/// Exact for the type on its own. A round can run any set of jobs whose scale factors sum to at
/// most the type's GPUs (placement may span servers), so what matters per round is how many jobs
/// of each scale factor run: a count vector `n` with `Σ_s s·n_s ≤ cap`. Jobs of one scale factor
/// are interchangeable, and unit jobs time-share a number of slots varying as `n_s(t)` iff the `q`
/// largest fractions fit in `E[min(n_s, q)]` for every `q` (preemptive scheduling on a varying
/// number of machines). So: a distribution `λ` over count vectors with, for every scale factor
/// `s` and `q`, `top_q(y_s) ≤ Σ_v λ_v·min(n_s(v), q)`, `top_q` linearized as
/// `q·t + Σ_j max(0, y_j − t)`. Jobs with allocation on other types too are taken as they stand
/// here: across types (a job runs on one type per round) this is a necessary condition only.
pub fn best_gap(session: &Session, w: usize) -> f64 {
    use arbiter::lp::{Backend, LinearProgram, Row, Sense};
    let cap = session.cluster().healthy_count(w);
    let mut jobs: Vec<(u32, f64)> = Vec::new();
    for id in session.job_ids() {
        let x = session.allocation(id).unwrap()[w];
        if x > 0.0 && !session.unplaceable_types(id).unwrap().contains(&w) {
            jobs.push((session.job(id).unwrap().scale_factor, x));
        }
    }
    let mut sizes: Vec<u32> = jobs.iter().map(|j| j.0).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let members: Vec<Vec<f64>> =
        sizes.iter().map(|&s| jobs.iter().filter(|j| j.0 == s).map(|j| j.1).collect()).collect();
    // Every count vector that fits.
    let mut vectors: Vec<Vec<u32>> = Vec::new();
    fn extend(k: usize, left: u32, sizes: &[u32], members: &[Vec<f64>], v: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
        if k == sizes.len() {
            out.push(v.clone());
            return;
        }
        for n in 0..=(members[k].len() as u32).min(left / sizes[k]) {
            v.push(n);
            extend(k + 1, left - n * sizes[k], sizes, members, v, out);
            v.pop();
        }
    }
    extend(0, cap, &sizes, &members, &mut Vec::new(), &mut vectors);

    let mut lp = LinearProgram::new(Sense::Minimize);
    let gap = lp.add_col(1.0, 0.0, f64::INFINITY);
    let lambda: Vec<usize> = vectors.iter().map(|_| lp.add_col(0.0, 0.0, 1.0)).collect();
    lp.add_row(Row::equal(1.0, lambda.iter().map(|&c| (c, 1.0)).collect()));
    for (k, xs) in members.iter().enumerate() {
        let y: Vec<usize> = xs.iter().map(|&x| lp.add_col(0.0, 0.0, x)).collect();
        for (&yj, &x) in y.iter().zip(xs) {
            lp.add_row(Row::at_least(x, vec![(yj, 1.0), (gap, 1.0)]));
        }
        for q in 1..=xs.len() {
            let t = lp.add_col(0.0, f64::NEG_INFINITY, f64::INFINITY);
            let mut row = vec![(t, q as f64)];
            for &yj in &y {
                let u = lp.add_col(0.0, 0.0, f64::INFINITY);
                lp.add_row(Row::at_least(0.0, vec![(u, 1.0), (yj, -1.0), (t, 1.0)]));
                row.push((u, 1.0));
            }
            for (&c, v) in lambda.iter().zip(&vectors) {
                let slots = v[k].min(q as u32);
                if slots > 0 {
                    row.push((c, -(slots as f64)));
                }
            }
            lp.add_row(Row::at_most(0.0, row));
        }
    }
    Backend::default().solve(lp).expect("the gap LP is feasible (y = 0, g = max X)").objective.max(0.0)
}

/// Worker types whose allocation no schedule on whole GPUs can meet (`best_gap > 0`), with the
/// best any schedule can do. `Σ sf·X ≤ count` is not enough: on 4 GPUs, a 4-GPU job at 0.5 and
/// two 1-GPU jobs at 1.0 book exactly 4, yet the big job can run only in rounds neither small one
/// does.
pub fn unrealizable_types(session: &Session) -> Vec<(usize, String)> {
    (0..session.cluster().num_types())
        .filter_map(|w| {
            let g = best_gap(session, w);
            (g > 1e-6).then(|| {
                (w, format!("no schedule on whole GPUs meets it; the best leaves a job {g:.4} short of its allocation"))
            })
        })
        .collect()
}
