"""The models against the OpenAPI document, its examples and fixtures/demo.json (no server)."""

import dataclasses
import json
import typing
import unittest

import server_fixture
from server_fixture import REPO

from arbiter_client import models
from arbiter_client.models import (
    ALL_MODELS,
    CreateFitGppSession,
    CreateSession,
    JobSpec,
    Request,
    Response,
    RoundView,
    SessionView,
    WireFormatError,
)
from arbiter_client.wire import wire_name

OPENAPI = json.loads((REPO / "openapi" / "openapi.json").read_text())
SCHEMAS = OPENAPI["components"]["schemas"]

#: Schemas that are not objects the client models: enums, the error envelope (read by
#: errors.py), the throughputs body (a dict argument), a free-form map, a tagged union.
NOT_MODELLED = {
    "Code", "ErrorCode", "ServiceCode", "TieBreak", "ErrorObject", "ErrorResponse", "Throughputs", "IndexMap",
    "OasisUtility",  # a tagged union of two shapes: OasisJob.utility is a dict
}


def without_nulls(value):
    """The JSON value with every null-valued key removed (``to_dict`` leaves ``None`` out)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def schema_of(ref_holder):
    ref = ref_holder.get("$ref", "")
    return ref.rsplit("/", 1)[-1] if ref else None


def examples():
    """(where, schema name, example) for every request and answer example in the document."""
    found = []
    for path, item in OPENAPI["paths"].items():
        for method, op in item.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            if "example" in body and schema_of(body.get("schema", {})):
                found.append((f"{method.upper()} {path} request", schema_of(body["schema"]), body["example"]))
            for status, answer in op.get("responses", {}).items():
                content = answer.get("content", {}).get("application/json", {})
                if "example" in content and schema_of(content.get("schema", {})):
                    where = f"{method.upper()} {path} {status}"
                    found.append((where, schema_of(content["schema"]), content["example"]))
    return found


class ModelsFollowTheDocument(unittest.TestCase):
    def test_every_model_has_its_schema_fields_and_required_set(self):
        by_schema = {}
        for cls in ALL_MODELS:
            with self.subTest(model=cls.__name__):
                self.assertIn(cls.SCHEMA, SCHEMAS, f"{cls.__name__}.SCHEMA names no schema")
                self.assertNotIn(cls.SCHEMA, by_schema, "two models for one schema")
                by_schema[cls.SCHEMA] = cls
                schema = SCHEMAS[cls.SCHEMA]
                fields = dataclasses.fields(cls)
                wire = {wire_name(f) for f in fields}
                expected = set(schema.get("properties", {}))
                self.assertEqual(
                    wire,
                    expected,
                    f"{cls.__name__} differs from the OpenAPI schema {cls.SCHEMA}: add or remove fields in "
                    f"clients/python/src/arbiter_client (missing {sorted(expected - wire)}, "
                    f"unknown {sorted(wire - expected)})",
                )
                required = {
                    wire_name(f)
                    for f in fields
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                }
                self.assertEqual(required, set(schema.get("required", [])), f"{cls.__name__}: required fields")

    def test_every_object_schema_has_a_model(self):
        modelled = {cls.SCHEMA for cls in ALL_MODELS}
        missing = sorted(set(SCHEMAS) - modelled - NOT_MODELLED)
        self.assertEqual(missing, [], "schemas of the document without a model in arbiter_client")

    def test_model_field_types_follow_the_schema_types(self):
        checked = 0
        for cls in ALL_MODELS:
            hints = typing.get_type_hints(cls)
            props = SCHEMAS[cls.SCHEMA].get("properties", {})
            for f in dataclasses.fields(cls):
                prop = props.get(wire_name(f))
                if prop is None:
                    continue
                kind = prop.get("type")
                kinds = set(kind) if isinstance(kind, list) else {kind}
                hint = hints[f.name]
                args = [a for a in typing.get_args(hint) if a is not type(None)]
                base = args[0] if typing.get_origin(hint) is typing.Union and len(args) == 1 else hint
                with self.subTest(model=cls.__name__, field=f.name):
                    if kinds & {"number"}:
                        self.assertIs(base, float)
                    elif kinds & {"integer"}:
                        self.assertIs(base, int)
                    elif kinds & {"string"} and "enum" not in prop:
                        self.assertIs(base, str)
                    elif kinds & {"boolean"}:
                        self.assertIs(base, bool)
                    elif kinds & {"array"}:
                        self.assertIs(typing.get_origin(base), list)
                    checked += 1
        self.assertGreater(checked, 200)

    def test_every_example_of_the_document_parses_and_round_trips(self):
        found = examples()
        self.assertGreaterEqual(len(found), 15)
        by_schema = {cls.SCHEMA: cls for cls in ALL_MODELS}
        parsed = 0
        for where, schema, example in found:
            if schema not in by_schema:
                continue
            with self.subTest(example=where):
                model = by_schema[schema].from_dict(example)
                self.assertEqual(model.to_dict(), without_nulls(example))
                self.assertEqual(model.extra, {}, "every key of the example is a field")
                parsed += 1
        self.assertGreaterEqual(parsed, 12)


class RoundTrips(unittest.TestCase):
    def test_the_demo_request_round_trips_exactly(self):
        demo = server_fixture.demo_request()
        request = Request.from_dict(demo)
        self.assertEqual(request.policy, "max_min_fairness")
        self.assertEqual(request.cluster.worker_types["k80"].count, 8)
        self.assertEqual(request.jobs[6].scale_factor, 4.0)
        self.assertEqual(request.to_dict(), demo)
        self.assertEqual(json.loads(json.dumps(request.to_dict())), demo)

    def test_unknown_keys_are_kept_at_every_depth_and_sent_back(self):
        demo = server_fixture.demo_request()
        demo["future_knob"] = {"x": [1, 2]}
        demo["jobs"][0]["priority_class"] = "gold"
        demo["cluster"]["worker_types"]["v100"]["interconnect"] = "nvlink"
        request = Request.from_dict(demo)
        self.assertEqual(request.extra, {"future_knob": {"x": [1, 2]}})
        self.assertEqual(request.jobs[0].extra, {"priority_class": "gold"})
        self.assertEqual(request.cluster.worker_types["v100"].extra, {"interconnect": "nvlink"})
        self.assertEqual(request.to_dict(), demo)

    def test_extra_set_by_hand_is_sent_and_fields_win_over_it(self):
        job = JobSpec(id="a", throughput={"v100": 1.0})
        job.extra["profile_hint"] = True
        job.extra["id"] = "shadowed"
        self.assertEqual(job.to_dict(), {"id": "a", "throughput": {"v100": 1.0}, "profile_hint": True})

    def test_none_fields_are_left_out_and_ints_read_as_floats(self):
        job = JobSpec.from_dict({"id": "a", "throughput": {"v100": 3, "k80": None}, "weight": 2})
        self.assertIsInstance(job.weight, float)
        self.assertEqual(job.throughput, {"v100": 3.0, "k80": None})
        self.assertEqual(job.to_dict(), {"id": "a", "throughput": {"v100": 3.0, "k80": None}, "weight": 2.0})

    def test_a_python_keyword_field_keeps_its_wire_name(self):
        spec = CreateFitGppSession.from_dict({"nodes": [{"cpus": 4, "memory_gb": 8, "gpus": 1}], "lambda": 0.5})
        self.assertEqual(spec.lambda_, 0.5)
        self.assertEqual(spec.to_dict(), {"nodes": [{"cpus": 4, "memory_gb": 8, "gpus": 1}], "lambda": 0.5})

    def test_a_composition_stage_is_a_name_or_an_object(self):
        body = {
            "composition": {"admission": {"accept_x": 1.2}, "scheduling": "tiresias"},
            "cluster": {"worker_types": {"v100": {"count": 8, "gpus_per_server": 4}}},
        }
        spec = CreateSession.from_dict(body)
        self.assertEqual(spec.composition.scheduling, "tiresias")
        self.assertEqual(spec.composition.admission, {"accept_x": 1.2})
        self.assertEqual(spec.to_dict(), body)

    def test_models_compare_by_value(self):
        a = Request.from_dict(server_fixture.demo_request())
        b = Request.from_dict(server_fixture.demo_request())
        self.assertEqual(a, b)
        b.jobs[0].weight = 3.0
        self.assertNotEqual(a, b)


class WrongShapesAreRefused(unittest.TestCase):
    def test_a_missing_required_field_is_named(self):
        with self.assertRaises(WireFormatError) as caught:
            Request.from_dict({"policy": "fifo", "jobs": []})
        self.assertIn("'cluster'", str(caught.exception))

    def test_a_wrong_type_is_named_by_its_path(self):
        demo = server_fixture.demo_request()
        demo["jobs"][2]["throughput"]["k80"] = "fast"
        with self.assertRaises(WireFormatError) as caught:
            Request.from_dict(demo)
        self.assertEqual(caught.exception.path, "Request.jobs[2].throughput.k80")

    def test_booleans_are_not_numbers_and_numbers_not_booleans(self):
        with self.assertRaises(WireFormatError):
            JobSpec.from_dict({"id": "a", "weight": True})
        with self.assertRaises(WireFormatError):
            RoundView.from_dict({"session": "s", "index": 0, "start": 0, "seconds": 1, "allocation_recomputed": 1,
                                 "placements": [], "jobs": {}, "started": [], "moved": [], "preempted": []})

    def test_an_integer_field_takes_an_integral_float_only(self):
        view = models.WorkerTypeView.from_dict({"count": 4.0, "healthy": 4, "servers": 1, "gpus_per_server": 4})
        self.assertEqual(view.count, 4)
        self.assertIsInstance(view.count, int)
        with self.assertRaises(WireFormatError):
            models.WorkerTypeView.from_dict({"count": 4.5, "healthy": 4, "servers": 1, "gpus_per_server": 4})

    def test_not_an_object(self):
        with self.assertRaises(WireFormatError):
            Response.from_dict([1, 2])  # type: ignore[arg-type]


class Helpers(unittest.TestCase):
    def test_session_view_job_and_round_placement_of(self):
        session_example = next(e for w, s, e in examples() if s == "SessionView")
        view = SessionView.from_dict(session_example)
        first = view.jobs[0]
        self.assertIs(view.job(first.id), first)
        with self.assertRaises(KeyError):
            view.job("no such job")
        round_example = next(e for w, s, e in examples() if s == "RoundView")
        rnd = RoundView.from_dict(round_example)
        placed = [j for j, r in rnd.jobs.items() if r.placement is not None]
        self.assertTrue(placed)
        for job_id in placed:
            self.assertIn(job_id, rnd.placement_of(job_id).jobs)
        self.assertIsNone(rnd.placement_of("no such job"))


if __name__ == "__main__":
    unittest.main()
