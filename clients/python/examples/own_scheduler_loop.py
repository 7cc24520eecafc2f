"""My own scheduler loop: Arbiter decides, this loop runs the jobs and reports back.

    python3 own_scheduler_loop.py [BASE_URL]      (or ARBITER_URL; default http://127.0.0.1:8080)
"""

import os
import sys

from arbiter_client import Client, ClusterSpec, CreateSession, JobSpec, Progress, WorkerTypeSpec

url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ARBITER_URL", "http://127.0.0.1:8080")
client = Client(url, token=os.environ.get("ARBITER_TOKEN"))

cluster = ClusterSpec({"v100": WorkerTypeSpec(4, gpus_per_server=4), "k80": WorkerTypeSpec(4, gpus_per_server=4)})
jobs = [
    JobSpec("resnet50", throughput={"v100": 10.0, "k80": 1.0}, steps_remaining=9000),
    JobSpec("a3c", throughput={"v100": 2.0, "k80": 1.0}, steps_remaining=600),
    JobSpec("transformer", throughput={"v100": 6.0, "k80": 1.2}, steps_remaining=6000, weight=2),
]
session = client.create_session(CreateSession(cluster, policy="max_min_fairness", jobs=jobs, round_seconds=360))
print(f"session {session.id}: {len(session.jobs)} jobs under {session.policy}")
client.add_job(session.id, JobSpec("bert-x2", throughput={"v100": 9.0}, scale_factor=2, steps_remaining=20000))
print("added bert-x2")

left = {job.id: job.steps_remaining for job in client.get_session(session.id).jobs}
for _ in range(3):
    round_ = client.next_round(session.id)
    print(f"round {round_.index}: " + ", ".join(f"{'+'.join(p.jobs)} on {'+'.join(p.gpus)}" for p in round_.placements))
    view = client.get_session(session.id)
    for placement in round_.placements:
        for job_id in placement.jobs:
            rate = view.job(job_id).throughput[placement.worker_type]
            steps = min(left[job_id], rate * round_.seconds)  # "ran" the round at the expected rate
            left[job_id] -= steps
            client.report_progress(session.id, job_id, Progress(placement.worker_type, steps, rate))
            if left[job_id] <= 0:
                client.remove_job(session.id, job_id)
                print(f"  {job_id} finished and was removed")

final = client.get_session(session.id)
print(f"after {final.rounds} rounds: {len(final.jobs)} jobs active, {final.metrics.completed_jobs} completed")
for job in final.jobs:
    print(f"  {job.id}: {job.steps_remaining:.0f} steps left, lease {job.lease.gpus if job.lease else 'none'}")
