#!/usr/bin/env python3
"""Gavel's own water-filling method, written from the paper's description (OSDI 2020, §4.3 and
Appendix A.1), to time "Gavel's approach" on the instances of benches/water_filling.rs.

Not Gavel's code: a re-implementation of the method as the paper states it, in cvxpy with HiGHS.
Each iteration solves
  1. one LP over per-job allocation variables X[m][w]: maximize the level t by which every active
     (unfrozen, weight > 0) job's weighted normalized throughput rises, every job keeping the
     throughput it was guaranteed so far;
  2. one MILP that finds the bottlenecked jobs: with every job kept at its new floor, maximize the
     number of active jobs z_m ∈ {0, 1} that can rise by DELTA (in weighted normalized throughput)
     at once; jobs with z_m = 0 are bottlenecked and freeze.
Weights are re-derived after every freeze from the entity tree (`hierarchical`: `fairness` splits
an entity's weight over its live children in proportion to their weights, `fifo` gives it all to
the child holding the earliest unfrozen job) or are the jobs' own (`max_min_fairness_water_filling`),
as the contract defines them. Levels are raised incrementally from each job's floor, which is the
same as the paper's absolute level when weights do not change.

Both problems are rebuilt with cvxpy every iteration, as a direct implementation of the paper
would; the constraints are vectorized (one expression per constraint family, not one per job),
which is faster than a per-job formulation, so this baseline errs on Gavel's side.

Usage: gavel_water_filling_baseline.py INSTANCE.json   (written by the bench with
ARBITER_BENCH_EXPORT=DIR). Prints one CSV line:
  case,jobs,seconds,iterations,lp_solves,milp_solves,objective,arbiter_objective,
  objective_rel_diff,max_nt_abs_diff,fallbacks,cpu_seconds
(fallbacks: iterations where the MILP named no bottleneck and every active job was frozen;
cpu_seconds: the process's CPU time, which other load on the machine does not inflate.)
"""

import json
import sys
import time

import cvxpy as cp
import numpy as np

# The raise the MILP asks of a job to call it not bottlenecked, in weighted normalized throughput
# (levels here are O(1)). A job that can rise by less is taken as bottlenecked: the paper's method
# is exact only up to this.
DELTA = 1e-3
# Slack on every floor, in normalized throughput (rows are divided by rate_m or thr_equal_m): floors
# come from earlier solutions that meet them only to the solver's tolerance (1e-7), and without it
# later LPs are over-constrained (a level of 0 where jobs can still rise) or infeasible.
SLACK = 1e-6
SOLVER = cp.HIGHS


def load(path):
    with open(path) as f:
        data = json.load(f)
    req = data["request"]
    types = list(req["cluster"]["worker_types"])
    count = np.array([req["cluster"]["worker_types"][w]["count"] for w in types], dtype=float)
    jobs = req["jobs"]
    n = len(jobs)
    aware = req.get("heterogeneity_aware", True)
    T = np.zeros((n, len(types)))
    for m, job in enumerate(jobs):
        for w, name in enumerate(types):
            v = job["throughput"].get(name)
            T[m, w] = v or 0.0
    if not aware:
        T[:] = 1.0  # the contract's type-blind policy: every T[m][w] is 1
    sf = np.array([job.get("scale_factor", 1) for job in jobs], dtype=float)
    weight = np.array([job.get("weight", 1.0) for job in jobs], dtype=float)
    arrival = [(job.get("arrival", m), m) for m, job in enumerate(jobs)]
    rank = np.empty(n, dtype=int)
    for r, (_, m) in enumerate(sorted(arrival)):
        rank[m] = r
    return data, req, T, count, sf, weight, rank


class Tree:
    """The entity tree of `hierarchical`; `None` entities: every job keeps its own weight."""

    def __init__(self, req, weight, rank):
        self.weight, self.rank = weight, rank
        self.entities = req.get("entities")
        if not self.entities:
            return
        self.children = {e: [] for e in self.entities}
        self.roots = []
        for e, spec in self.entities.items():
            parent = spec.get("parent")
            (self.children[parent] if parent else self.roots).append(("entity", e))
        for m, job in enumerate(req["jobs"]):
            if job.get("entity"):
                self.children[job["entity"]].append(("job", m))

    def earliest_live(self, node, frozen):
        kind, key = node
        if kind == "job":
            return None if frozen[key] else self.rank[key]
        ranks = [r for r in (self.earliest_live(c, frozen) for c in self.children[key]) if r is not None]
        return min(ranks) if ranks else None

    def own(self, node):
        kind, key = node
        return self.weight[key] if kind == "job" else self.entities[key].get("weight", 1.0)

    def weights(self, frozen):
        if not self.entities:
            return self.weight.copy()
        out = np.zeros(len(frozen))
        stack = [(("entity", e), self.entities[e].get("weight", 1.0)) for _, e in self.roots]
        while stack:
            node, w = stack.pop()
            if node[0] == "job":
                out[node[1]] = w
                continue
            live = [(c, r) for c in self.children[node[1]] if (r := self.earliest_live(c, frozen)) is not None]
            if not live:
                continue
            if self.entities[node[1]].get("policy", "fairness") == "fifo":
                stack.append((min(live, key=lambda cr: cr[1])[0], w))
            else:
                total = sum(self.own(c) for c, _ in live)
                stack.extend((c, w * self.own(c) / total) for c, _ in live)
        return out


def base(T, count, sf):
    """Per-job allocation variables and the paper's base constraints."""
    X = cp.Variable(T.shape, nonneg=True)
    thr = cp.sum(cp.multiply(T, X), axis=1)
    return X, thr, [cp.sum(X, axis=1) <= 1, sf @ X <= count]


def water_fill(T, count, sf, tree):
    n = T.shape[0]
    thr_equal = T @ (count / count.sum())
    floor = np.zeros(n)
    frozen = np.zeros(n, dtype=bool)
    X_value = np.zeros_like(T)
    iterations = lp_solves = milp_solves = fallbacks = 0
    first_weights = None
    while not frozen.all():
        w = tree.weights(frozen)
        active = ~frozen & (w > 0)
        if not active.any():
            break
        if first_weights is None:
            first_weights = w.copy()
        rate = np.where(active, w * thr_equal / sf, 0.0)
        a, rest = np.flatnonzero(active), np.flatnonzero(~active)

        # 1. The level: max t s.t. (thr_m − floor_m)/rate_m ≥ t for active jobs (the weighted
        #    normalized throughput rises by t), thr_m ≥ floor_m for the others. Floors come from
        #    earlier solutions, met only to the solver's tolerance: SLACK gives that back.
        X, thr, cons = base(T, count, sf)
        t = cp.Variable()
        cons.append(cp.multiply(1 / rate[a], thr[a]) - (floor[a] / rate[a] - SLACK) >= t)
        if len(rest):
            cons.append(cp.multiply(1 / thr_equal[rest], thr[rest]) >= floor[rest] / thr_equal[rest] - SLACK)
        cp.Problem(cp.Maximize(t), cons).solve(solver=SOLVER)
        lp_solves += 1
        level = max(float(t.value) - SLACK, 0.0)
        floor[a] += level * rate[a]
        X_value = X.value

        # 2. The bottlenecks: the largest set of active jobs that can all rise by DELTA at once.
        X, thr, cons = base(T, count, sf)
        z = cp.Variable(len(a), boolean=True)
        cons.append(cp.multiply(1 / rate[a], thr[a]) >= floor[a] / rate[a] - SLACK + DELTA * z)
        if len(rest):
            cons.append(cp.multiply(1 / thr_equal[rest], thr[rest]) >= floor[rest] / thr_equal[rest] - SLACK)
        # HiGHS's MIP presolve wrongly declares some of these infeasible (their LP relaxation with
        # z = 0 is feasible, and so is the MILP without presolve).
        cp.Problem(cp.Maximize(cp.sum(z)), cons).solve(solver=SOLVER, presolve="off")
        milp_solves += 1
        if z.value is None:
            raise RuntimeError(f"iteration {iterations}: the bottleneck MILP has no solution")
        stuck = a[np.round(z.value) < 0.5]
        if len(stuck) == 0:
            # The LP's level is optimal, so some active job is stuck; if round-off hides every one,
            # stop them all (arbiter does the same), and count it.
            stuck = a
            fallbacks += 1
        frozen[stuck] = True
        iterations += 1
    nt = (T * X_value).sum(axis=1) / thr_equal
    objective = min(sf[m] / first_weights[m] * nt[m] for m in range(n) if first_weights[m] > 0)
    return nt, objective, iterations, lp_solves, milp_solves, fallbacks


def main():
    data, req, T, count, sf, weight, rank = load(sys.argv[1])
    tree = Tree(req, weight, rank)
    start, cpu_start = time.perf_counter(), time.process_time()
    nt, objective, iterations, lp_solves, milp_solves, fallbacks = water_fill(T, count, sf, tree)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    ours = data["arbiter"]
    theirs = np.array(ours["normalized_throughput"])
    # Normalized throughputs are O(1) and many are 0 (fifo jobs that never get a turn): absolute.
    nt_diff = float(np.max(np.abs(nt - theirs)))
    obj_diff = abs(objective - ours["objective"]) / abs(ours["objective"])
    print(
        f"{data['case']},{len(req['jobs'])},{seconds:.3f},{iterations},{lp_solves},{milp_solves},"
        f"{objective:.9f},{ours['objective']:.9f},{obj_diff:.2e},{nt_diff:.2e},{fallbacks},{cpu:.3f}"
    )


if __name__ == "__main__":
    main()
