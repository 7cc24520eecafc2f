#!/usr/bin/env python3
"""Gavel's published policies against `arbiter solve`, on the same instances, in the same run.

Gavel's own code (github.com/stanford-futuredata/gavel, `scheduler/policies/`, cvxpy with ECOS as
Gavel configures it, and GLPK_MI for water-filling's MILPs) is imported from a checkout; nothing of it is copied here. Instances follow
Gavel's job mix: job types drawn from the checkout's `scheduler/simulation_throughputs.json`, scale
factors 1/2/4/8 with probability 70/10/15/5%, weight 5 for one job in five, `steps_remaining =
10^U(3,6)`, n/4 GPUs of each of v100, p100 and k80 (4 per server); every throughput is multiplied by
its own lognormal factor exp(0.1·N(0,1)), so no two jobs share a row.

Gavel is timed in-process (its `get_allocation`: building the cvxpy problem and solving it);
Arbiter as the whole `arbiter solve --input FILE` process (reading the request, solving, the
realizability check, writing the response), so the comparison errs on Gavel's side. Arbiter runs
three times in a row: the first run, right after Gavel's, starts cold (its binary's pages and the
caches evicted by Gavel's run); the best of the three is what a warm embedding sees. The table
gives both, and a speedup for each. Both
allocations are scored by the same function below (the contract's objective, with Gavel's own
equal-share and isolated throughputs), so "objective" compares like with like.

Usage: compare_gavel.py GAVEL_DIR ARBITER_BIN POLICY:JOBS[,POLICY:JOBS...]
   policies: max_min_fairness, max_min_fairness_water_filling, min_makespan, finish_time_fairness
Prints a markdown table.
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import time

import numpy as np

TYPES = ["k80", "p100", "v100"]


def jobs_for(gavel_dir, n, seed):
    with open(os.path.join(gavel_dir, "scheduler", "simulation_throughputs.json")) as f:
        measured = json.load(f)
    by_sf = {}
    for key in measured["v100"]:
        model, sf = key.rsplit(",", 1)
        sf = int(sf.strip(" )"))
        if all(key in measured[w] for w in TYPES):
            by_sf.setdefault(sf, []).append(key)
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    jobs = []
    for m in range(n):
        r = rng.random()
        sf = 1 if r < 0.7 else 2 if r < 0.8 else 4 if r < 0.95 else 8
        key = rng.choice(sorted(by_sf[sf]))
        thr = {w: measured[w][key]["null"] * float(np.exp(0.1 * noise.standard_normal())) for w in TYPES}
        jobs.append(
            {
                "id": f"j{m}",
                "throughput": thr,
                "scale_factor": sf,
                "weight": 5.0 if rng.random() < 0.2 else 1.0,
                "steps_remaining": 10 ** rng.uniform(3, 6),
            }
        )
    return jobs


def request(policy, jobs):
    count = len(jobs) // 4
    cluster = {"worker_types": {w: {"count": count, "gpus_per_server": 4} for w in TYPES}}
    return {"policy": policy, "cluster": cluster, "jobs": jobs}


def gavel_allocation(gavel_dir, policy, jobs):
    """Gavel's policy on the jobs: the allocation as an n×k array (rows in job order), and seconds."""
    sys.path.insert(0, os.path.join(gavel_dir, "scheduler"))
    sys.path.insert(0, os.path.join(gavel_dir, "scheduler", "policies"))
    from job_id_pair import JobIdPair

    ids = [JobIdPair(m, None) for m in range(len(jobs))]
    throughputs = {ids[m]: {w: job["throughput"][w] for w in TYPES} for m, job in enumerate(jobs)}
    scale_factors = {ids[m]: job["scale_factor"] for m, job in enumerate(jobs)}
    weights = {ids[m]: job["weight"] for m, job in enumerate(jobs)}
    steps = {ids[m]: job["steps_remaining"] for m, job in enumerate(jobs)}
    cluster = {w: len(jobs) // 4 for w in TYPES}
    start = time.perf_counter()
    if policy == "max_min_fairness":
        from max_min_fairness import MaxMinFairnessPolicyWithPerf

        alloc = MaxMinFairnessPolicyWithPerf("ECOS").get_allocation(throughputs, scale_factors, weights, cluster)
    elif policy == "max_min_fairness_water_filling":
        from max_min_fairness_water_filling import MaxMinFairnessWaterFillingPolicyWithPerf

        alloc = MaxMinFairnessWaterFillingPolicyWithPerf().get_allocation(throughputs, scale_factors, weights, cluster)
    elif policy == "min_makespan":
        from min_total_duration import MinTotalDurationPolicyWithPerf

        alloc = MinTotalDurationPolicyWithPerf("ECOS").get_allocation(throughputs, scale_factors, steps, cluster)
    elif policy == "finish_time_fairness":
        from finish_time_fairness import FinishTimeFairnessPolicyWithPerf

        since = {i: 0.0 for i in ids}
        alloc = FinishTimeFairnessPolicyWithPerf("ECOS").get_allocation(
            throughputs, scale_factors, weights, since, steps, cluster
        )
    else:
        raise SystemExit(f"unknown policy {policy}")
    seconds = time.perf_counter() - start
    x = np.array([[alloc[ids[m]][w] for w in TYPES] for m in range(len(jobs))])
    return x, seconds


def arbiter_allocation(binary, policy, jobs, runs=3):
    """`arbiter solve` on the request, `runs` times: the allocation, the method, the first run's
    seconds and the best run's."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(request(policy, jobs), f)
        path = f.name
    seconds = []
    try:
        for _ in range(runs):
            start = time.perf_counter()
            out = subprocess.run([binary, "solve", "--input", path], capture_output=True, text=True, check=True)
            seconds.append(time.perf_counter() - start)
    finally:
        os.unlink(path)
    response = json.loads(out.stdout)
    x = np.array([[response["allocation"][job["id"]].get(w, 0.0) for w in TYPES] for job in jobs])
    method = (response.get("stats", {}).get("method") or {}).get("method", "—")
    return x, method, seconds[0], min(seconds)


def levels(gavel_dir, jobs, x):
    """Every job's weighted normalized throughput `(sf/w)·thr/thr_equal` under allocation x, with
    Gavel's equal-share throughputs."""
    sys.path.insert(0, os.path.join(gavel_dir, "scheduler", "policies"))
    from proportional import ProportionalPolicy

    T = np.array([[job["throughput"][w] for w in TYPES] for job in jobs])
    sf = np.array([job["scale_factor"] for job in jobs], dtype=float)
    w = np.array([job["weight"] for job in jobs])
    n = len(jobs)
    equal = ProportionalPolicy().get_throughputs(T, (list(range(n)), TYPES), {t: n // 4 for t in TYPES}).reshape(n)
    return sf / w * (T * x).sum(axis=1) / equal


def score(gavel_dir, policy, jobs, x):
    """The policy's objective for allocation x (larger is better for the max-min policies, where
    it is the lowest level; smaller for the others), with Gavel's equal-share and isolated
    throughputs."""
    sys.path.insert(0, os.path.join(gavel_dir, "scheduler", "policies"))
    T = np.array([[job["throughput"][w] for w in TYPES] for job in jobs])
    sf = np.array([job["scale_factor"] for job in jobs], dtype=float)
    thr = (T * x).sum(axis=1)
    n = len(jobs)
    cluster = {w: n // 4 for w in TYPES}
    index = (list(range(n)), TYPES)
    if policy.startswith("max_min_fairness"):
        return float(np.min(levels(gavel_dir, jobs, x)))
    steps = np.array([job["steps_remaining"] for job in jobs])
    if policy == "min_makespan":
        return float(np.max(steps / np.maximum(thr, 1e-300)))
    from isolated import IsolatedPolicy

    iso = IsolatedPolicy().get_throughputs(T, index, {m: int(sf[m]) for m in range(n)}, cluster).reshape(n)
    return float(np.max(iso / np.maximum(thr, 1e-300)))


def main():
    gavel_dir, binary, cases = sys.argv[1], sys.argv[2], sys.argv[3]
    print(
        "| policy | jobs | Gavel (cvxpy + ECOS) | Arbiter, first run | Arbiter, best of 3 | speedup (first / best) "
        "| Gavel's objective | Arbiter's objective | Arbiter better by | Arbiter's method | levels differ by at most |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for case in cases.split(","):
        policy, n = case.split(":")
        n = int(n)
        jobs = jobs_for(gavel_dir, n, seed=n)
        xg, tg = gavel_allocation(gavel_dir, policy, jobs)
        xa, method, first, best = arbiter_allocation(binary, policy, jobs)
        og, oa = score(gavel_dir, policy, jobs, xg), score(gavel_dir, policy, jobs, xa)
        better = (oa - og) / abs(og) if policy.startswith("max_min_fairness") else (og - oa) / abs(og)
        # Water-filling fixes every job's level, not only the lowest: how far apart they are.
        differ = "—"
        if policy == "max_min_fairness_water_filling":
            lg, la = levels(gavel_dir, jobs, xg), levels(gavel_dir, jobs, xa)
            differ = f"{100 * float(np.max(np.abs(la - lg) / np.maximum(lg, 1e-12))):.3f}%"
        print(
            f"| {policy} | {n} | {tg:.3f} s | {first:.3f} s | {best:.3f} s | {tg / first:.1f}× / {tg / best:.1f}× "
            f"| {og:.6g} | {oa:.6g} | "
            f"{100 * better:+.4f}% | {method} | {differ} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
