"""The asyncio client against a real ``arbiter serve``: the same endpoints, concurrent calls."""

import asyncio
import unittest

import server_fixture
from server_fixture import Server

from arbiter_client import AsyncClient, BadRequest, FitGppJob, JobSpec, NotFound, Progress, Request

SERVER = None


def setUpModule():
    global SERVER
    SERVER = Server()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()


class AsyncOperations(unittest.TestCase):
    def run_async(self, coroutine):
        return asyncio.run(coroutine)

    def test_a_session_and_a_fitgpp_session_through_the_async_client(self):
        async def scenario():
            async with AsyncClient(SERVER.url) as c:
                demo = Request.from_dict(server_fixture.demo_request())
                created = await c.create_session({"policy": demo.policy, "cluster": demo.cluster.to_dict(),
                                                  "jobs": [j.to_dict() for j in demo.jobs]})
                sid = created.id
                self.assertIn(sid, [s.id for s in await c.list_sessions()])
                await c.add_job(sid, JobSpec(id="gpt2", throughput={"v100": 3.2, "k80": 0.4}, steps_remaining=500))
                rounds = [await c.next_round(sid) for _ in range(2)]
                self.assertEqual([r.index for r in rounds], [0, 1])
                job = await c.report_progress(sid, "a3c", Progress(worker_type="k80", steps=100, throughput=1.0))
                self.assertEqual(job.steps_remaining, 19900.0)
                jobs = await c.put_throughputs(sid, {"a3c": {"v100": 2.0, "p100": 1.7, "k80": 1.1}})
                self.assertEqual(jobs[0].throughput["k80"], 1.1)
                self.assertEqual((await c.fail_worker(sid, "p100/0")).worker_types["p100"].healthy, 0)
                self.assertEqual((await c.return_worker(sid, "p100/0")).worker_types["p100"].healthy, 4)
                self.assertTrue((await c.get_allocation(sid)).stale)
                self.assertFalse((await c.recompute_allocation(sid)).stale)
                await c.remove_job(sid, "gpt2")
                self.assertEqual((await c.get_session(sid)).metrics.completed_jobs, 1)
                await c.delete_session(sid)
                with self.assertRaises(NotFound):
                    await c.get_session(sid)

                fit = await c.create_fitgpp_session({"nodes": [{"count": 1, "cpus": 8, "memory_gb": 64, "gpus": 4}]})
                answer = await c.submit_fitgpp_job(fit.id, FitGppJob(id="j", kind="be", cpus=8, memory_gb=64, gpus=4,
                                                                     duration_seconds=50))
                self.assertEqual([s.job for s in answer.started], ["j"])
                self.assertEqual((await c.advance_fitgpp_session(fit.id, 60)).now, 60.0)
                self.assertEqual((await c.get_fitgpp_session(fit.id)).jobs[0].phase, "finished")
                await c.delete_fitgpp_session(fit.id)

                reference = server_fixture.synthetic_reference()
                row = {"id": "x", "throughput": {"a": 1.0, "b": 1.5}}
                estimate = await c.estimate_throughputs({"reference": reference, "pairs": False, "jobs": [row]})
                estimated = [e.estimated for e in estimate.jobs[0].throughput.values()]
                self.assertEqual(estimated, [False, False] + [True] * 4)
                self.assertEqual((await c.healthz()).status, "ok")
                self.assertIn("arbiter_uptime_seconds", await c.metrics())
                self.assertIn("/v1/sessions", (await c.openapi())["paths"])
                self.assertEqual((await c.request("GET", "/v1/sessions")).status, 200)

        self.run_async(scenario())

    def test_concurrent_solves_all_answer(self):
        async def scenario():
            c = AsyncClient(SERVER.url)
            demo = server_fixture.demo_request()
            policies = ["max_min_fairness", "max_sum_throughput", "min_makespan", "fifo", "finish_time_fairness",
                        "isolated"]
            answers = await asyncio.gather(*(c.solve(dict(demo, policy=p)) for p in policies))
            self.assertEqual([a.policy for a in answers], policies)
            for answer in answers:
                self.assertEqual(len(answer.allocation), 8)
            bad = await asyncio.gather(c.solve(dict(demo, policy="best")), c.healthz(), return_exceptions=True)
            self.assertIsInstance(bad[0], BadRequest)
            self.assertEqual(bad[1].status, "ok")
            await c.close()

        self.run_async(scenario())


if __name__ == "__main__":
    unittest.main()
