"""The Kubernetes extender endpoints through both clients, against a real ``arbiter serve``, with
the scheduler's bodies from ``fixtures/k8s`` (a Pod and a NodeList)."""

import asyncio
import copy
import json
import unittest

from server_fixture import REPO, Server

from arbiter_client import (
    AsyncClient,
    Client,
    CreateSession,
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    JobSpec,
    MetaPod,
    MetaVictims,
    NotFound,
)

SERVER = None
FIXTURES = REPO / "fixtures" / "k8s"
NODE_OF = {"v100/0": "gpu-v100-a", "v100/1": "gpu-v100-b", "k80/0": "gpu-k80-a", "k80/1": "gpu-k80-b"}


def setUpModule():
    global SERVER
    SERVER = Server()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()


def pod(job, name, uid):
    value = json.loads((FIXTURES / "pod.json").read_text())
    value["metadata"].update(name=name, uid=uid)
    if job is None:
        value["metadata"]["labels"].pop("arbiter.dev/job")
    else:
        value["metadata"]["labels"]["arbiter.dev/job"] = job
    return value


def nodes():
    return json.loads((FIXTURES / "nodes.json").read_text())


def session(client):
    spec = CreateSession.from_dict({
        "policy": "max_min_fairness",
        "cluster": {"worker_types": {"v100": {"count": 8, "gpus_per_server": 4},
                                     "k80": {"count": 8, "gpus_per_server": 4}}},
    })
    spec.jobs = [JobSpec(id="resnet50", scale_factor=4, throughput={"v100": 40.0, "k80": 4.0}),
                 JobSpec(id="a3c", scale_factor=4, throughput={"v100": 8.0, "k80": 4.0})]
    sid = client.create_session(spec).id
    placed = {}
    for p in client.next_round(sid).placements:
        for job in p.jobs:
            placed[job] = NODE_OF[p.gpus[0].rsplit("/", 1)[0]]
    return sid, placed


class Extender(unittest.TestCase):
    def test_the_wire_keys_are_the_schedulers(self):
        args = ExtenderArgs(pod={"metadata": {"name": "p"}}, node_names=["n1"])
        self.assertEqual(args.to_dict(), {"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["n1"]})
        result = ExtenderFilterResult.from_dict(
            {"Nodes": None, "NodeNames": ["n1"], "FailedNodes": {}, "FailedAndUnresolvableNodes": {"n2": "why"},
             "Error": ""})
        self.assertEqual(result.passing(), ["n1"])
        self.assertEqual(result.failed_and_unresolvable_nodes, {"n2": "why"})
        victims = ExtenderPreemptionArgs(node_name_to_meta_victims={"n1": MetaVictims(pods=[MetaPod(uid="u")])})
        self.assertEqual(victims.to_dict(), {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u"}]}}})

    def test_filter_prioritize_bind_and_a_removed_job(self):
        c = Client(SERVER.url)
        sid, placed = session(c)
        resnet = pod("resnet50", "resnet50-worker-0", "0f6e2b8c-3a1d-4c7e-9b5f-1d2a4c6e8f00")
        filtered = c.k8s_filter(sid, ExtenderArgs(pod=resnet, nodes=nodes()))
        self.assertEqual(filtered.error, "")
        self.assertEqual(filtered.passing(), [placed["resnet50"]])
        self.assertIn("no arbiter.dev/worker-type label", filtered.failed_and_unresolvable_nodes["cpu-general-a"])
        scores = {h.host: h.score for h in c.k8s_prioritize(sid, {"Pod": resnet, "Nodes": nodes()})}
        self.assertEqual(scores[placed["resnet50"]], 10)
        self.assertEqual(sum(scores.values()), 10)

        bind = ExtenderBindingArgs(pod_name="resnet50-worker-0", pod_namespace="ml-research",
                                   pod_uid="0f6e2b8c-3a1d-4c7e-9b5f-1d2a4c6e8f00", node=placed["resnet50"])
        self.assertEqual(c.k8s_bind(sid, bind).error, "")
        [bound] = c.k8s_bindings(sid).bindings
        self.assertEqual((bound.job, bound.node, bound.round), ("resnet50", placed["resnet50"], 0))
        self.assertEqual(c.k8s_evictions(sid).evictions, [])

        # The job is withdrawn and comes back: nothing placed this round, so its pod is evicted.
        c.remove_job(sid, "resnet50")
        self.assertEqual(c.k8s_bindings(sid).bindings, [], "a removed job's bindings are forgotten")
        c.add_job(sid, JobSpec(id="resnet50", scale_factor=4, throughput={"v100": 40.0, "k80": 4.0}))
        self.assertTrue(c.k8s_bind(sid, bind).error.startswith("arbiter: job resnet50 waits"))
        c.k8s_filter(sid, ExtenderArgs(pod=resnet, nodes=nodes()))
        wrong = copy.copy(bind)
        wrong.node = placed["a3c"]
        self.assertIn("waits", c.k8s_bind(sid, wrong).error)

    def test_preempt_and_a_bound_pod_the_next_rounds_move(self):
        c = Client(SERVER.url)
        sid, placed = session(c)
        a3c = pod("a3c", "a3c-worker-0", "7c9e1a3b-5d7f-4b9d-8f1b-3d5f7b9d1f3b")
        c.k8s_filter(sid, {"Pod": a3c, "Nodes": nodes()})
        bind = {"PodName": "a3c-worker-0", "PodNamespace": "ml-research",
                "PodUID": "7c9e1a3b-5d7f-4b9d-8f1b-3d5f7b9d1f3b", "Node": placed["a3c"]}
        self.assertEqual(c.k8s_bind(sid, bind).error, "")
        second = pod("a3c", "a3c-worker-1", "9e1b3d5f-7a9c-4e1b-8d5f-7a9c1e3b5d7f")
        protected = c.k8s_preempt(sid, ExtenderPreemptionArgs(pod=second, node_name_to_meta_victims={
            placed["a3c"]: MetaVictims(pods=[MetaPod(uid="7c9e1a3b-5d7f-4b9d-8f1b-3d5f7b9d1f3b")],
                                       num_pdb_violations=0)}))
        self.assertEqual(protected.node_name_to_meta_victims, {})

        # Jobs with four times the weight take every server for a while: a3c's pod is to be evicted.
        for job in ("bert", "gpt2", "vit", "t5"):
            c.add_job(sid, JobSpec(id=job, scale_factor=4, weight=4.0, throughput={"v100": 20.0, "k80": 5.0}))
        evictions = []
        for _ in range(6):
            c.next_round(sid)
            evictions = c.k8s_evictions(sid).evictions
            if evictions:
                break
        self.assertEqual([(e.name, e.job) for e in evictions], [("a3c-worker-0", "a3c")])
        self.assertTrue(evictions[0].reason.startswith("arbiter: job a3c"), evictions[0].reason)
        c.k8s_forget_binding(sid, "ml-research", "a3c-worker-0")
        self.assertEqual(c.k8s_evictions(sid).evictions, [])
        c.k8s_forget_binding(sid, "ml-research", "a3c-worker-0")  # forgetting twice changes nothing
        with self.assertRaises(NotFound):
            c.k8s_evictions("no-such-session")

    def test_the_async_client_has_the_same_endpoints(self):
        async def scenario():
            async with AsyncClient(SERVER.url) as c:
                sid, placed = await asyncio.to_thread(session, Client(SERVER.url))
                other = pod(None, "etl-7f9c", "5c3e1a9b-2d4f-4e6a-8b0c-7d9e1f3a5b71")
                filtered = await c.k8s_filter(sid, ExtenderArgs(pod=other, nodes=nodes()))
                self.assertEqual(len(filtered.passing()), len(nodes()["items"]))
                scores = await c.k8s_prioritize(sid, ExtenderArgs(pod=other, node_names=["gpu-v100-a"]))
                self.assertEqual([(h.host, h.score) for h in scores], [("gpu-v100-a", 0)])
                bound = await c.k8s_bind(sid, ExtenderBindingArgs(pod_name="etl-7f9c", pod_namespace="ml-research",
                                                                  pod_uid="5c3e1a9b-2d4f-4e6a-8b0c-7d9e1f3a5b71",
                                                                  node="cpu-general-a"))
                self.assertEqual(bound.error, "")
                self.assertEqual((await c.k8s_bindings(sid)).bindings, [])
                preempted = await c.k8s_preempt(sid, {"Pod": other, "NodeNameToMetaVictims": {}})
                self.assertEqual(preempted.node_name_to_meta_victims, {})
                self.assertEqual((await c.k8s_evictions(sid)).rounds, 1)
                await c.k8s_forget_binding(sid, "ml-research", "etl-7f9c")

        asyncio.run(scenario())


if __name__ == "__main__":
    unittest.main()
