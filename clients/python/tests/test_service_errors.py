"""The errors docs/service.md documents, as a real ``arbiter serve`` gives them, through the client."""

import random
import threading
import time
import unittest

import server_fixture
from server_fixture import Server

from arbiter_client import (
    ArbiterError,
    BadRequest,
    Client,
    JobSpec,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    Progress,
    RateLimited,
    SolveTimeout,
    Unprocessable,
)

SERVER = None


def setUpModule():
    global SERVER
    SERVER = Server()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()


def big_request(jobs: int, policy: str, seed: int = 1) -> dict:
    rnd = random.Random(seed)
    rows = [
        {"id": f"j{i}", "steps_remaining": 10000,
         "throughput": {"v100": rnd.uniform(1, 10), "p100": rnd.uniform(1, 6), "k80": rnd.uniform(0.5, 2)}}
        for i in range(jobs)
    ]
    count = jobs // 4 + 1
    types = {"v100": {"count": count}, "p100": {"count": count}, "k80": {"count": count}}
    return {"policy": policy, "cluster": {"worker_types": types}, "jobs": rows}


class Refusals(unittest.TestCase):
    def setUp(self):
        self.client = Client(SERVER.url)
        self.sid = self.client.create_session(
            {"policy": "max_min_fairness", "cluster": server_fixture.demo_request()["cluster"],
             "jobs": [{"id": "a", "throughput": {"v100": 2.0, "k80": 1.0}}]}
        ).id

    def tearDown(self):
        self.client.delete_session(self.sid)

    def assertRefused(self, cls, status, code, field, call, *args):
        with self.assertRaises(cls) as caught:
            call(*args)
        e = caught.exception
        self.assertEqual((e.status, e.code, e.field), (status, code, field), str(e))
        self.assertTrue(e.message)
        self.assertTrue(e.request_id)
        return e

    def test_400_names_the_field(self):
        demo = server_fixture.demo_request()
        self.assertRefused(BadRequest, 400, "malformed_request", "policy", self.client.solve, dict(demo, policy=1))
        bad = server_fixture.demo_request()
        bad["jobs"][3]["throughput"]["v100"] = -1
        self.assertRefused(BadRequest, 400, "invalid_number", "jobs[3].throughput.v100", self.client.solve, bad)
        best = dict(demo, policy="best")
        e = self.assertRefused(BadRequest, 400, "unknown_policy", "policy", self.client.solve, best)
        self.assertIn("max_min_fairness", e.message)
        self.assertRefused(BadRequest, 400, "duplicate_job_id", "id", self.client.add_job, self.sid,
                           JobSpec(id="a", throughput={"v100": 1.0}))
        self.assertRefused(BadRequest, 400, "unknown_worker_type", "worker_type", self.client.report_progress,
                           self.sid, "a", Progress(worker_type="tpu", steps=1, throughput=1))
        self.assertRefused(BadRequest, 400, "unknown_worker_type", "worker", self.client.fail_worker, self.sid, "tpu/0")
        self.assertRefused(BadRequest, 400, "missing_field", "nodes", self.client.create_fitgpp_session, {"nodes": []})

    def test_404_for_unknown_sessions_jobs_workers_and_routes(self):
        c = self.client
        for call, args in [
            (c.get_session, ("nope",)),
            (c.delete_session, ("nope",)),
            (c.next_round, ("nope",)),
            (c.get_allocation, ("nope",)),
            (c.add_job, ("nope", {"id": "x"})),
            (c.get_fitgpp_session, ("nope",)),
            (c.advance_fitgpp_session, ("nope", 10)),
        ]:
            with self.subTest(call=call.__name__):
                self.assertRefused(NotFound, 404, "unknown_session", None, call, *args)
        self.assertRefused(NotFound, 404, "unknown_job", "job", c.remove_job, self.sid, "nope")
        self.assertRefused(NotFound, 404, "unknown_job", "job", c.report_progress, self.sid, "nope",
                           {"worker_type": "v100", "steps": 1, "throughput": 1})
        self.assertRefused(NotFound, 404, "unknown_worker", "worker", c.fail_worker, self.sid, "v100/9")
        self.assertRefused(NotFound, 404, "not_found", None, c.request, "GET", "/v1/nothing")

    def test_405_for_a_method_the_route_does_not_take(self):
        e = self.assertRefused(MethodNotAllowed, 405, "method_not_allowed", None,
                               self.client.request, "PUT", "/v1/sessions")
        self.assertIn("PUT", e.message)
        self.assertRefused(MethodNotAllowed, 405, "method_not_allowed", None, self.client.request, "POST", "/healthz")

    def test_422_infeasible_names_the_jobs_in_a_solve_and_in_a_round(self):
        slo = {"policy": "min_cost_slo", "cluster": {"worker_types": {"v100": {"count": 1, "cost_per_hour": 2}}},
               "jobs": [{"id": "late", "throughput": {"v100": 1}, "steps_remaining": 100000, "slo_seconds": 10},
                        {"id": "fine", "throughput": {"v100": 1}, "steps_remaining": 1, "slo_seconds": 1000}]}
        e = self.assertRefused(Unprocessable, 422, "infeasible", None, self.client.solve, slo)
        self.assertEqual(e.jobs, ["late"])
        session = self.client.create_session(slo)
        try:
            self.assertRefused(Unprocessable, 422, "infeasible", None, self.client.next_round, session.id)
            self.assertEqual(self.client.get_session(session.id).rounds, 0, "a refused event changes nothing")
        finally:
            self.client.delete_session(session.id)

    def test_504_when_the_requests_budget_runs_out(self):
        request = dict(big_request(64, "max_min_fairness"), max_solve_seconds=1e-6)
        self.assertRefused(SolveTimeout, 504, "timeout", None, self.client.solve, request)
        self.assertEqual(self.client.healthz().status, "ok")


class BodyLimit(unittest.TestCase):
    def test_413_above_max_body_bytes(self):
        server = Server("--max-body-bytes", "512")
        try:
            client = Client(server.url)
            with self.assertRaises(PayloadTooLarge) as caught:
                client.solve(server_fixture.demo_request())
            self.assertEqual((caught.exception.status, caught.exception.code), (413, "payload_too_large"))
            self.assertIn("512", caught.exception.message)
            # A body far larger than the limit: the server answers and closes before reading it
            # all, and the client still reports the answer, not the broken pipe.
            with self.assertRaises(PayloadTooLarge):
                client.solve({"policy": "fifo", "padding": "x" * 8_000_000})
            small = {"policy": "fifo", "cluster": {"worker_types": {"v100": {"count": 1}}},
                     "jobs": [{"id": "a", "throughput": {"v100": 1}}]}
            self.assertEqual(client.solve(small).allocation["a"]["v100"], 1.0)
        finally:
            server.stop()


class Overload(unittest.TestCase):
    def test_429_with_retry_after_when_the_only_solver_is_busy_and_no_queue(self):
        server = Server("--max-concurrent-solves", "1", "--max-queued-solves", "0")
        try:
            client = Client(server.url)
            small = {"policy": "fifo", "cluster": {"worker_types": {"v100": {"count": 1}}},
                     "jobs": [{"id": "a", "throughput": {"v100": 1}}]}
            refused = None
            for attempt in range(5):
                big = big_request(2048 * (attempt + 1), "finish_time_fairness", seed=attempt)
                outcome = {}
                worker = threading.Thread(target=lambda: outcome.setdefault("answer", self._solve(client, big)))
                worker.start()
                deadline = time.monotonic() + 20
                while client.healthz().solves_running == 0 and worker.is_alive() and time.monotonic() < deadline:
                    time.sleep(0.002)
                try:
                    client.solve(small)
                except RateLimited as e:
                    refused = e
                worker.join()
                if refused is not None:
                    break
            self.assertIsNotNone(refused, "no 429 in five tries")
            self.assertEqual((refused.status, refused.code, refused.retry_after), (429, "overloaded", 1.0))
            self.assertIsInstance(refused, ArbiterError)
            self.assertEqual(client.solve(small).allocation["a"]["v100"], 1.0)
        finally:
            server.stop()

    @staticmethod
    def _solve(client, request):
        try:
            return client.solve(request)
        except ArbiterError as e:
            return e


if __name__ == "__main__":
    unittest.main()
