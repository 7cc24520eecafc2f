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
        let Tenants::Single(job) = &placement.jobs else {
            panic!("no pairs without space sharing");
        };
        assert!(runs.insert(job.to_string(), p).is_none(), "job {job} runs twice in one round");
        let spec = session.job(job).expect("placed jobs are active");
        let w = placement.worker_type;
        assert_eq!(placement.gpus.len(), spec.scale_factor as usize, "job {job} gets exactly its scale factor");
        assert!(session.allocation(job).unwrap()[w] > 0.0, "{job} runs only where allocated");
        assert!(session.throughput(job).unwrap()[w] > 0.0, "{job} runs only where it can");
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
    for (m, jr) in round.jobs.iter().enumerate() {
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
            if old.worker_type == new.worker_type && old.gpus.iter().all(|&g| cluster.is_healthy(g)) {
                assert_eq!(jr.lease, LeaseChange::Renewed, "{id} stays on its type: keeps its GPUs");
            }
        }
        if let Some(p) = now {
            if jr.lease == LeaseChange::Renewed {
                renewed_gpus.extend(p.gpus.iter().copied());
            } else {
                let sf = p.gpus.len() as u32;
                fresh.push((p.worker_type, sf, m, &p.gpus));
            }
        }
    }
    // Fresh placements go in decreasing scale factor (session order among equals), each on the
    // fewest servers the GPUs still free at its turn allow.
    fresh.sort_by_key(|&(w, sf, m, _)| (w, std::cmp::Reverse(sf), m));
    let mut taken = renewed_gpus;
    for (w, sf, m, gpus) in fresh {
        let servers: Vec<_> = cluster.servers_of_type(w).collect();
        let free: Vec<u32> = servers
            .iter()
            .map(|&s| cluster.server_gpus(s).filter(|g| cluster.is_healthy(*g) && !taken.contains(g)).count() as u32)
            .collect();
        let spanned: BTreeSet<_> = gpus.iter().map(|&g| cluster.gpu_server(g)).collect();
        assert_eq!(
            spanned.len(),
            fewest_servers(&free, sf),
            "job {} ({sf} GPUs) is not consolidated: free per server {free:?}",
            round.jobs[m].job
        );
        for g in gpus {
            assert!(taken.insert(*g), "GPU given twice");
        }
    }
}

pub fn matrix(rows: &[&[f64]]) -> arbiter::problem::Matrix {
    let mut x = arbiter::problem::Matrix::zeros(rows.len(), rows.first().map_or(0, |r| r.len()));
    for (m, row) in rows.iter().enumerate() {
        x.row_mut(m).copy_from_slice(row);
    }
    x
}

/// Worker types whose allocation no schedule on whole GPUs can meet, with the reason: jobs at
/// `X = 1` run every round, leaving `C'` GPUs; any set of other jobs that pairwise cannot run
/// together in `C'` (two whose scale factors exceed `C'`, or one too big for `C'` at all) must
/// share one timeline, so its allocations cannot sum above 1. Checks the cliques made of one job
/// and every job bigger than `C'/2` it conflicts with. A necessary condition only: a type passing
/// it may still be unrealizable.
pub fn unrealizable_types(session: &Session) -> Vec<(usize, String)> {
    let cluster = session.cluster();
    let mut out = Vec::new();
    for w in 0..cluster.num_types() {
        let mut jobs: Vec<(String, u32, f64)> = Vec::new();
        for id in session.job_ids() {
            let x = session.allocation(id).unwrap()[w];
            let sf = session.job(id).unwrap().scale_factor;
            if x > 0.0 && !session.unplaceable_types(id).unwrap().contains(&w) {
                jobs.push((id.to_string(), sf, x));
            }
        }
        let always: u32 = jobs.iter().filter(|j| j.2 >= 1.0 - 1e-6).map(|j| j.1).sum();
        let left = cluster.healthy_count(w).saturating_sub(always);
        let rest: Vec<&(String, u32, f64)> = jobs.iter().filter(|j| j.2 < 1.0 - 1e-6).collect();
        for a in &rest {
            if a.1 > left {
                out.push((w, format!("job {} needs {} GPUs, the X = 1 jobs leave {left}", a.0, a.1)));
                break;
            }
            let clique: Vec<&&(String, u32, f64)> =
                rest.iter().filter(|b| b.0 == a.0 || (2 * b.1 > left && a.1 + b.1 > left)).collect();
            let sum: f64 = clique.iter().map(|b| b.2).sum();
            if sum > 1.0 + 1e-6 {
                let names: Vec<&str> = clique.iter().map(|b| b.0.as_str()).collect();
                out.push((
                    w,
                    format!("{names:?} can never run together in {left} GPUs, yet their allocations sum to {sum:.3}"),
                ));
                break;
            }
        }
    }
    out
}
