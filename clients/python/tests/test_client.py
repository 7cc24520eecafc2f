"""Every endpoint through the synchronous client, against a real ``arbiter serve``."""

import json
import unittest

import server_fixture
from server_fixture import REPO, Server

from arbiter_client import (
    ArbiterError,
    Client,
    ClusterSpec,
    CreateFitGppSession,
    CreateSession,
    EstimateRequest,
    IgnoredFieldsWarning,
    FitGppJob,
    FitGppNodeGroup,
    JobSpec,
    NotFound,
    OasisCluster,
    OasisJob,
    OasisPriceFunction,
    OasisPrices,
    OasisResources,
    PartialRow,
    Progress,
    Request,
    Response,
    Unprocessable,
    WorkerTypeSpec,
)

SERVER = None


def setUpModule():
    global SERVER
    SERVER = Server()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()


#: Every operation the client calls, as the OpenAPI document names it.
CLIENT_OPERATIONS = {
    ("POST", "/v1/allocations"): "solve",
    ("POST", "/v1/throughputs/estimate"): "estimate_throughputs",
    ("GET", "/v1/sessions"): "list_sessions",
    ("POST", "/v1/sessions"): "create_session",
    ("GET", "/v1/sessions/{id}"): "get_session",
    ("DELETE", "/v1/sessions/{id}"): "delete_session",
    ("POST", "/v1/sessions/{id}/jobs"): "add_job",
    ("DELETE", "/v1/sessions/{id}/jobs/{job}"): "remove_job",
    ("POST", "/v1/sessions/{id}/jobs/{job}/progress"): "report_progress",
    ("PUT", "/v1/sessions/{id}/throughputs"): "put_throughputs",
    ("POST", "/v1/sessions/{id}/workers/{worker}/fail"): "fail_worker",
    ("POST", "/v1/sessions/{id}/workers/{worker}/return"): "return_worker",
    ("GET", "/v1/sessions/{id}/allocation"): "get_allocation",
    ("POST", "/v1/sessions/{id}/allocation"): "recompute_allocation",
    ("POST", "/v1/sessions/{id}/rounds"): "next_round",
    ("POST", "/v1/sessions/{id}/k8s/filter"): "k8s_filter",
    ("POST", "/v1/sessions/{id}/k8s/prioritize"): "k8s_prioritize",
    ("POST", "/v1/sessions/{id}/k8s/bind"): "k8s_bind",
    ("POST", "/v1/sessions/{id}/k8s/preempt"): "k8s_preempt",
    ("GET", "/v1/sessions/{id}/k8s/evictions"): "k8s_evictions",
    ("GET", "/v1/sessions/{id}/k8s/bindings"): "k8s_bindings",
    ("DELETE", "/v1/sessions/{id}/k8s/bindings/{namespace}/{name}"): "k8s_forget_binding",
    ("GET", "/v1/fitgpp/sessions"): "list_fitgpp_sessions",
    ("POST", "/v1/fitgpp/sessions"): "create_fitgpp_session",
    ("GET", "/v1/fitgpp/sessions/{id}"): "get_fitgpp_session",
    ("DELETE", "/v1/fitgpp/sessions/{id}"): "delete_fitgpp_session",
    ("POST", "/v1/fitgpp/sessions/{id}/jobs"): "submit_fitgpp_job",
    ("POST", "/v1/fitgpp/sessions/{id}/advance"): "advance_fitgpp_session",
    ("GET", "/v1/oasis/sessions"): "list_oasis_sessions",
    ("POST", "/v1/oasis/sessions"): "create_oasis_session",
    ("GET", "/v1/oasis/sessions/{id}"): "get_oasis_session",
    ("DELETE", "/v1/oasis/sessions/{id}"): "delete_oasis_session",
    ("POST", "/v1/oasis/sessions/{id}/jobs"): "submit_oasis_job",
    ("GET", "/"): "index",
    ("GET", "/healthz"): "healthz",
    ("GET", "/metrics"): "metrics",
    ("GET", "/openapi.json"): "openapi",
    ("GET", "/v1/admin/backup"): "backup",
}


def demo_session_spec(**knobs) -> CreateSession:
    demo = Request.from_dict(server_fixture.demo_request())
    return CreateSession(cluster=demo.cluster, policy=demo.policy, jobs=demo.jobs, **knobs)


class Operations(unittest.TestCase):
    def setUp(self):
        self.client = Client(SERVER.url)

    def test_the_client_covers_every_operation_of_the_served_document(self):
        document = self.client.openapi()
        self.assertTrue(document["openapi"].startswith("3.1"))
        served = {
            (method.upper(), path)
            for path, item in document["paths"].items()
            for method in item
            if method in ("get", "post", "put", "delete", "patch")
        }
        self.assertEqual(served - set(CLIENT_OPERATIONS), set(), "endpoints the client has no method for")
        self.assertEqual(set(CLIENT_OPERATIONS) - served, set(), "client methods for endpoints the server lacks")
        for name in CLIENT_OPERATIONS.values():
            self.assertTrue(callable(getattr(Client, name)), name)
        checked_in = json.loads((REPO / "openapi" / "openapi.json").read_text())
        self.assertEqual(set(document["paths"]), set(checked_in["paths"]), "the binary and openapi/openapi.json differ")

    def test_index_maps_the_api(self):
        landing = self.client.index()
        self.assertEqual(landing["service"], "arbiter")
        self.assertEqual(landing["endpoints"]["solve"], "POST /v1/allocations")

    def test_healthz_and_metrics(self):
        health = self.client.healthz()
        self.assertEqual(health.status, "ok")
        self.assertRegex(health.version, r"^\d+\.\d+\.\d+")
        self.assertGreaterEqual(health.max_concurrent_solves, 1)
        self.assertGreaterEqual(health.uptime_seconds, 0.0)
        text = self.client.metrics()
        self.assertIn("# TYPE arbiter_http_requests_total counter", text)
        self.assertRegex(text, r'arbiter_http_requests_total\{[^}]*route="/healthz"[^}]*\} [1-9]')

    def test_solve_the_demo_as_a_dict_and_as_a_model(self):
        demo = server_fixture.demo_request()
        from_dict = self.client.solve(demo)
        self.assertIsInstance(from_dict, Response)
        self.assertEqual(set(from_dict.allocation), {job["id"] for job in demo["jobs"]})
        for job, row in from_dict.allocation.items():
            self.assertEqual(set(row), {"v100", "p100", "k80"}, job)
            self.assertTrue(all(0.0 <= x <= 1.0 + 1e-9 for x in row.values()), row)
            self.assertLessEqual(sum(row.values()), 1.0 + 1e-6)
        self.assertEqual(from_dict.allocation["bert-x2"]["k80"], 0.0)  # it cannot run on a K80
        self.assertGreater(from_dict.objective, 0.0)
        self.assertEqual(from_dict.stats.backend, "highs")
        from_model = self.client.solve(Request.from_dict(demo))
        self.assertAlmostEqual(from_model.objective, from_dict.objective, places=9)
        raw = self.client.request("POST", "/v1/allocations", demo).json()
        self.assertEqual(Response.from_dict(raw).allocation, from_dict.allocation)

    def test_fields_the_server_does_not_know_are_named_in_the_answer(self):
        demo = server_fixture.demo_request()
        self.assertIsNone(self.client.solve(demo).ignored_fields)
        demo["jobs"][2]["wieght"] = 2
        with self.assertWarnsRegex(IgnoredFieldsWarning, r"ignored fields it does not know: jobs\[2\]\.wieght") as said:
            self.assertEqual(self.client.solve(demo).ignored_fields, ["jobs[2].wieght"])
        self.assertEqual(said.filename, __file__)

    def test_estimate_completes_a_row_against_a_posted_reference(self):
        request = EstimateRequest(jobs=[PartialRow(id="x", throughput={"a": 2.0, "c": 3.0})],
                                  reference=server_fixture.synthetic_reference(), pairs=False)
        answer = self.client.estimate_throughputs(request)
        row = answer.jobs[0]
        self.assertEqual(row.id, "x")
        self.assertEqual(set(row.throughput), set("abcdef"))
        self.assertFalse(row.throughput["a"].estimated)
        self.assertEqual(row.throughput["a"].steps_per_second, 2.0)
        self.assertTrue(row.throughput["b"].estimated)
        self.assertGreater(row.throughput["b"].steps_per_second, 0.0)
        self.assertTrue(row.fingerprint.job_type.startswith("job"))

    def test_a_session_through_its_life(self):
        c = self.client
        created = c.create_session(demo_session_spec(round_seconds=120))
        sid = created.id
        self.assertEqual(created.round_seconds, 120.0)
        self.assertEqual(len(created.jobs), 8)
        self.assertEqual(created.cluster.worker_types["k80"].servers, 2)
        self.assertIn(sid, [s.id for s in c.list_sessions()])

        gpt2 = JobSpec(id="gpt2", throughput={"v100": 3.2, "p100": 1.9, "k80": 0.4}, steps_remaining=50000)
        added = c.add_job(sid, gpt2)
        self.assertEqual((added.id, added.steps_remaining, added.arrival), ("gpt2", 50000.0, 0.0))
        self.assertTrue(c.get_allocation(sid).stale)

        first = c.next_round(sid)
        self.assertEqual((first.session, first.index, first.seconds), (sid, 0, 120.0))
        self.assertTrue(first.allocation_recomputed)
        placed = {job for p in first.placements for job in p.jobs}
        self.assertEqual(set(first.started), placed)
        for job_id in placed:
            self.assertEqual(first.jobs[job_id].lease, "started")
            placement = first.placement_of(job_id)
            self.assertTrue(all(g.startswith(placement.worker_type + "/") for g in placement.gpus))
        gpus = [g for p in first.placements for g in p.gpus]
        self.assertEqual(len(gpus), len(set(gpus)), "no GPU is given twice")
        self.assertLessEqual(len(gpus), 16)

        progressed = c.report_progress(sid, "gpt2", Progress(worker_type="v100", steps=1200, throughput=3.4,
                                                             metrics={"loss": 2.1}))
        self.assertEqual(progressed.steps_remaining, 48800.0)
        self.assertEqual(progressed.metrics, {"loss": 2.1})
        self.assertGreater(progressed.throughput["v100"], 3.2)  # the measurement is smoothed in
        # A numbered report sent twice (a retry after a lost answer) counts once.
        numbered = Progress(worker_type="v100", steps=800, throughput=3.4, sequence=1)
        self.assertEqual(c.report_progress(sid, "gpt2", numbered).steps_remaining, 48000.0)
        retried = c.report_progress(sid, "gpt2", numbered)
        self.assertEqual((retried.steps_remaining, retried.progress_sequence), (48000.0, 1))

        rows = {j.id: dict(j.throughput) for j in c.get_session(sid).jobs}
        rows["a3c"]["k80"] = 1.5
        jobs = c.put_throughputs(sid, rows)
        self.assertEqual({j.id for j in jobs}, set(rows))
        self.assertEqual(next(j for j in jobs if j.id == "a3c").throughput["k80"], 1.5)

        failed = c.fail_worker(sid, "v100/0/1")
        self.assertEqual(failed.failed_gpus, ["v100/0/1"])
        self.assertEqual(failed.worker_types["v100"].healthy, 3)
        self.assertEqual(c.get_session(sid).cluster.failed_gpus, ["v100/0/1"])
        second = c.next_round(sid)
        self.assertNotIn("v100/0/1", [g for p in second.placements for g in p.gpus])
        server_down = c.fail_worker(sid, "k80/1")
        self.assertEqual(server_down.worker_types["k80"].healthy, 4)
        returned = c.return_worker(sid, "v100/0/1")
        self.assertEqual(returned.worker_types["v100"].healthy, 4)
        self.assertEqual(c.return_worker(sid, "k80/1").failed_gpus, [])

        recomputed = c.recompute_allocation(sid)
        self.assertFalse(recomputed.stale)
        self.assertEqual(recomputed.session, sid)
        self.assertEqual(set(recomputed.allocation), set(rows))
        self.assertEqual(c.get_allocation(sid).allocation, recomputed.allocation)
        within = c.recompute_allocation(sid, max_solve_seconds=30)
        self.assertEqual(set(within.allocation), set(rows))
        with self.assertRaises(ArbiterError) as bad:
            c.recompute_allocation(sid, max_solve_seconds=0)
        self.assertEqual((bad.exception.status, bad.exception.field), (400, "max_solve_seconds"))
        with self.assertRaises(ValueError):
            c.next_round(sid, max_solve_seconds="soon")

        c.remove_job(sid, "gpt2")
        view = c.get_session(sid)
        self.assertNotIn("gpt2", [j.id for j in view.jobs])
        self.assertEqual(view.metrics.completed_jobs, 1)
        self.assertEqual(view.rounds, 2)
        self.assertEqual(view.time, 240.0)

        c.delete_session(sid)
        with self.assertRaises(NotFound) as caught:
            c.get_session(sid)
        self.assertEqual(caught.exception.code, "unknown_session")
        self.assertNotIn(sid, [s.id for s in c.list_sessions()])

    def test_names_with_slashes_and_spaces_reach_the_server_whole(self):
        c = self.client
        sid = c.create_session(demo_session_spec()).id
        job_id = "team a/run 7?x=1#frag"
        self.assertEqual(c.add_job(sid, {"id": job_id, "throughput": {"v100": 1.0}}).id, job_id)
        progress = {"worker_type": "v100", "steps": 5, "throughput": 1.0}
        self.assertEqual(c.report_progress(sid, job_id, progress).id, job_id)
        c.remove_job(sid, job_id)
        self.assertNotIn(job_id, [j.id for j in c.get_session(sid).jobs])
        c.delete_session(sid)

    def test_a_composed_session_has_pipeline_views_and_no_lp_allocation(self):
        c = self.client
        spec = CreateSession(
            cluster=ClusterSpec({"v100": WorkerTypeSpec(count=4, gpus_per_server=4)}),
            composition={"scheduling": "tiresias"},
        )
        created = c.create_session(spec)
        self.assertEqual(created.composition, "accept_all+tiresias+consolidated+lease")
        c.add_job(created.id, JobSpec(id="a", throughput={"v100": 1.0}, scale_factor=2))
        rnd = c.next_round(created.id)
        self.assertEqual(rnd.placement_of("a").gpus, ["v100/0/0", "v100/0/1"])
        job = c.get_session(created.id).job("a")
        self.assertTrue(job.pipeline.admitted)
        self.assertEqual(job.pipeline.attained_service_gpu_seconds, 720.0)
        self.assertIsNotNone(c.get_session(created.id).tenants)
        with self.assertRaises(Unprocessable) as caught:
            c.recompute_allocation(created.id)
        self.assertEqual(caught.exception.code, "unsupported")
        c.delete_session(created.id)

    def test_a_fitgpp_session_preempts_a_best_effort_job_for_a_te_job(self):
        c = self.client
        nodes = [FitGppNodeGroup(cpus=32, memory_gb=256, gpus=8, count=2)]
        view = c.create_fitgpp_session(CreateFitGppSession(nodes=nodes, preemption="fitgpp", lambda_=1.0))
        fid = view.id
        self.assertEqual((len(view.nodes), view.now, view.preemption), (2, 0.0, "fitgpp"))
        for name in ("be1", "be2"):
            started = c.submit_fitgpp_job(fid, FitGppJob(id=name, kind="be", cpus=32, memory_gb=256, gpus=8,
                                                         duration_seconds=3600, grace_period_seconds=120))
            self.assertEqual([s.job for s in started.started], [name])
        te = c.submit_fitgpp_job(fid, FitGppJob(id="te1", kind="te", cpus=16, memory_gb=128, gpus=2,
                                                duration_seconds=600, grace_period_seconds=60, at=10))
        self.assertEqual(te.now, 10.0)
        self.assertEqual(len(te.preemptions), 1)
        victim = te.preemptions[0]
        self.assertEqual((victim.for_job, victim.at, victim.grace_deadline), ("te1", 10.0, 130.0))
        self.assertEqual([(r.job, r.starts_at) for r in te.reserved], [("te1", 130.0)])
        waiting = c.advance_fitgpp_session(fid, 100)
        self.assertEqual((waiting.now, waiting.started), (100.0, []))
        later = c.advance_fitgpp_session(fid, 200)
        self.assertIn("te1", [s.job for s in later.started])
        self.assertIn((fid, 3), [(s.id, s.jobs) for s in c.list_fitgpp_sessions().sessions])
        phases = {j.id: j.phase for j in c.get_fitgpp_session(fid).jobs}
        self.assertEqual(phases["te1"], "running")
        self.assertIn(victim.job, c.get_fitgpp_session(fid).queue)
        c.delete_fitgpp_session(fid)
        with self.assertRaises(NotFound):
            c.get_fitgpp_session(fid)

    def test_an_oasis_session_admits_by_price_and_says_why(self):
        c = self.client
        prices = OasisPriceFunction(lower=[2.0] * 4, upper=[4.0] * 4, eta=1.0)
        cluster = OasisCluster(slot_seconds=100, slots=2, worker_servers=[OasisResources(2, 0, 0, 2)],
                               ps_servers=[OasisResources(0, 2, 0, 4)])
        view = c.create_oasis_session({"cluster": cluster.to_dict(),
                                       "prices": OasisPrices(workers=prices, parameter_servers=prices).to_dict()})
        oid = view.id
        self.assertEqual((view.slots, view.admitted), (2, 0))

        def job(name, epochs, utility):
            return OasisJob(id=name, arrival_slot=0, epochs=epochs, chunks=5, minibatches_per_chunk=10,
                            minibatch_seconds=1.0, gradient_mb=0.0625, worker=OasisResources(1, 0, 0, 1),
                            parameter_server=OasisResources(0, 1, 0, 2), utility=utility)

        a = c.submit_oasis_job(oid, job("A", 2, {"kind": "constant", "value": 20}))
        self.assertTrue(a.admitted)
        self.assertAlmostEqual(a.payoff, 13.0)
        self.assertEqual([(p.server, p.count, p.unit_price) for p in a.schedule.slots[0].workers], [(0, 2, 2.0)])
        b = c.submit_oasis_job(oid, job("B", 2, {"kind": "sigmoid", "priority": 24, "decay": 1.0986122886681098,
                                                 "target": 1}))
        self.assertFalse(b.admitted)
        self.assertTrue(b.explanation.startswith("rejected"))
        self.assertEqual(c.get_oasis_session(oid).total_utility, 20.0)
        self.assertIn((oid, 2), [(s.id, s.jobs) for s in c.list_oasis_sessions().sessions])
        c.delete_oasis_session(oid)
        with self.assertRaises(NotFound):
            c.get_oasis_session(oid)

    def test_requests_by_path(self):
        answer = self.client.request("GET", "/v1/sessions")
        self.assertEqual(answer.status, 200)
        self.assertIn("x-request-id", answer.headers)
        created = self.client.request("POST", "/v1/sessions", demo_session_spec())
        self.assertEqual(created.status, 201)
        self.assertEqual(created.headers["location"], f"/v1/sessions/{created.json()['id']}")
        self.client.delete_session(created.json()["id"])


if __name__ == "__main__":
    unittest.main()
