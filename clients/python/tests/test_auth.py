"""Tokens, tenants, quotas, the audit, backups and a full store, through the client, against real
``arbiter serve --tokens`` servers whose tokens ``arbiter token create`` made."""

import asyncio
import sqlite3
import tempfile
import time
import unittest
from pathlib import Path

import server_fixture
from server_fixture import Server, TokenFile

from arbiter_client import (
    AsyncClient,
    BadRequest,
    Client,
    CreateFitGppSession,
    FitGppJob,
    FitGppNodeGroup,
    Forbidden,
    JobSpec,
    NotFound,
    QuotaExceeded,
    RateLimited,
    StorageFull,
    Unauthorized,
    Unavailable,
)
from arbiter_client.client import SQLITE_HEADER

READ_WRITE = ["solve", "sessions:read", "sessions:write"]


def small_session(jobs=1) -> dict:
    return {
        "policy": "max_min_fairness",
        "cluster": server_fixture.demo_request()["cluster"],
        "jobs": [{"id": f"j{i}", "throughput": {"v100": 2.0, "k80": 1.0}} for i in range(jobs)],
    }


def fitgpp_spec() -> CreateFitGppSession:
    return CreateFitGppSession(nodes=[FitGppNodeGroup(cpus=32, memory_gb=256, gpus=8, count=1)])


class TokensScopesTenantsAudit(unittest.TestCase):
    """One server with tokens for two tenants, a read-only token, a solve-only one and an admin."""

    @classmethod
    def setUpClass(cls):
        cls.tokens = TokenFile()
        cls.a = cls.tokens.create("team-a", READ_WRITE, "a-rw")
        cls.a_read = cls.tokens.create("team-a", ["sessions:read"], "a-ro")
        cls.a_solve = cls.tokens.create("team-a", ["solve"], "a-solve")
        cls.b = cls.tokens.create("team-b", READ_WRITE, "b-rw")
        cls.ops = cls.tokens.create("ops", ["admin"], "ops")
        cls.server = Server(tokens=cls.tokens)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.tokens.cleanup()

    def client(self, token=None) -> Client:
        return Client(self.server.url, token=token)

    def test_no_token_or_an_unknown_one_is_401_with_www_authenticate(self):
        with self.assertRaises(Unauthorized) as caught:
            self.client().list_sessions()
        e = caught.exception
        self.assertEqual((e.status, e.code), (401, "unauthorized"))
        self.assertTrue(e.headers["www-authenticate"].lower().startswith("bearer"), e.headers)
        self.assertNotIn("invalid_token", e.headers["www-authenticate"])
        for bad in ["arb_" + "A" * 43, "not-a-token"]:
            with self.subTest(token=bad), self.assertRaises(Unauthorized) as caught:
                self.client(bad).create_session(small_session())
            self.assertEqual(caught.exception.code, "unauthorized")
            self.assertIn('error="invalid_token"', caught.exception.headers["www-authenticate"])
        # A path with no endpoint needs a token before its 404.
        with self.assertRaises(Unauthorized):
            self.client().request("GET", "/v1/no-such-thing")
        # The open routes stay open.
        self.assertEqual(self.client().healthz().status, "ok")
        self.assertIn("paths", self.client().openapi())

    def test_a_missing_scope_is_403_forbidden(self):
        cases = [
            (self.a_read, lambda c: c.create_session(small_session()), "sessions:write"),
            (self.a_solve, lambda c: c.list_sessions(), "sessions:read"),
            (self.a_read, lambda c: c.solve(server_fixture.demo_request()), "solve"),
            (self.a, lambda c: c.metrics(), "metrics"),
            (self.a, lambda c: c.backup(), "admin"),
            (self.a_read, lambda c: c.create_fitgpp_session(fitgpp_spec()), "sessions:write"),
        ]
        for token, call, scope in cases:
            with self.subTest(scope=scope), self.assertRaises(Forbidden) as caught:
                call(self.client(token))
            e = caught.exception
            self.assertNotIsInstance(e, QuotaExceeded)
            self.assertEqual((e.status, e.code), (403, "forbidden"))
            self.assertIn(scope, e.message)
        # The admin token has every scope.
        self.assertIn("arbiter_http_requests_total", self.client(self.ops).metrics())

    def test_another_tenants_session_is_not_found(self):
        a, b, ops = self.client(self.a), self.client(self.b), self.client(self.ops)
        sid = a.create_session(small_session()).id
        fid = a.create_fitgpp_session(fitgpp_spec()).id
        try:
            calls = [
                lambda: b.get_session(sid),
                lambda: b.add_job(sid, JobSpec(id="x", throughput={"v100": 1.0})),
                lambda: b.next_round(sid),
                lambda: b.delete_session(sid),
                lambda: b.get_fitgpp_session(fid),
                lambda: b.advance_fitgpp_session(fid, 10.0),
            ]
            for call in calls:
                with self.assertRaises(NotFound) as caught:
                    call()
                self.assertEqual(caught.exception.code, "unknown_session")
            # The same answer as for a session that does not exist.
            with self.assertRaises(NotFound) as missing:
                b.get_session("0123456789abcdef")
            with self.assertRaises(NotFound) as hidden:
                b.get_session(sid)
            self.assertEqual(hidden.exception.message.replace(sid, "ID"), missing.exception.message.replace(
                "0123456789abcdef", "ID"))
            self.assertNotIn(sid, [s.id for s in b.list_sessions()])
            self.assertIn(sid, [s.id for s in a.list_sessions()])
            self.assertIn(sid, [s.id for s in ops.list_sessions()])
            self.assertEqual(ops.get_session(sid).id, sid)
            self.assertEqual(a.get_session(sid).job("j0").id, "j0")
        finally:
            a.delete_session(sid)
            a.delete_fitgpp_session(fid)

    def test_the_audit_shows_the_owner_and_each_events_token(self):
        a, ops = self.client(self.a), self.client(self.ops)
        sid = a.create_session(small_session()).id
        try:
            a.add_job(sid, JobSpec(id="late", throughput={"v100": 3.0}))
            ops.fail_worker(sid, "v100/0/1")
            a.next_round(sid)
            self.assertIsNone(a.get_session(sid).audit, "no audit unless asked for")
            audit = a.get_session(sid, audit=10).audit
            self.assertEqual((audit.owner, audit.created_by), ("team-a", "a-rw"))
            self.assertEqual(
                [(e.kind, e.token_id) for e in audit.events],
                [("add_job", "a-rw"), ("worker_failed", "ops"), ("round", "a-rw")],
            )
            seqs = [e.seq for e in audit.events]
            self.assertEqual(seqs, sorted(seqs))
            self.assertTrue(all(abs(e.at - time.time()) < 300 for e in audit.events), audit.events)
            last = self.client(self.a_read).get_session(sid, audit=1).audit
            self.assertEqual([(e.kind, e.token_id) for e in last.events], [("round", "a-rw")])
            self.assertEqual(a.get_session(sid, audit=0).audit.events, [])
            with self.assertRaises(BadRequest) as caught:
                a.get_session(sid, audit=10001)
            self.assertEqual(caught.exception.field, "audit")
            with self.assertRaises(ValueError):
                a.get_session(sid, audit=-1)

            async def from_async():
                async with AsyncClient(self.server.url, token=self.a) as client:
                    return await client.get_session(sid, audit=2)

            self.assertEqual([e.token_id for e in asyncio.run(from_async()).audit.events], ["ops", "a-rw"])
        finally:
            a.delete_session(sid)

    def test_a_fitgpp_sessions_audit(self):
        b = self.client(self.b)
        fid = b.create_fitgpp_session(fitgpp_spec()).id
        try:
            b.submit_fitgpp_job(fid, FitGppJob(id="be", kind="be", cpus=4, memory_gb=16, gpus=1, duration_seconds=60))
            b.advance_fitgpp_session(fid, 30.0)
            self.assertIsNone(b.get_fitgpp_session(fid).audit)
            audit = b.get_fitgpp_session(fid, audit=5).audit
            self.assertEqual((audit.owner, audit.created_by), ("team-b", "b-rw"))
            self.assertEqual(
                [(e.kind, e.token_id) for e in audit.events], [("fitgpp_submit", "b-rw"), ("fitgpp_advance", "b-rw")]
            )
        finally:
            b.delete_fitgpp_session(fid)

    def test_a_revoked_token_is_refused_within_seconds(self):
        token = self.tokens.create("team-c", READ_WRITE, "c-temporary")
        client = self.client(token)
        deadline = time.monotonic() + 10
        while True:  # the server reads the file again within about a second
            try:
                client.list_sessions()
                break
            except Unauthorized:
                self.assertLess(time.monotonic(), deadline, "a new token was never accepted")
                time.sleep(0.2)
        self.tokens.revoke("c-temporary")
        deadline = time.monotonic() + 10
        while True:
            try:
                client.list_sessions()
            except Unauthorized:
                break
            self.assertLess(time.monotonic(), deadline, "a revoked token was still accepted after 10 s")
            time.sleep(0.2)

    def test_a_backup_is_an_sqlite_file_another_server_serves_the_same_sessions_from(self):
        a, ops = self.client(self.a), self.client(self.ops)
        sid = a.create_session(small_session(jobs=2)).id
        work = tempfile.TemporaryDirectory(prefix="arbiter-client-backup-")
        try:
            a.next_round(sid)
            before = a.get_session(sid)
            data = ops.backup()
            self.assertTrue(data.startswith(SQLITE_HEADER), data[:32])
            streamed = Path(work.name) / "streamed.db"
            size = ops.backup_to(streamed)
            self.assertEqual(size, streamed.stat().st_size)
            self.assertEqual(streamed.read_bytes()[:16], SQLITE_HEADER)
            self.assertEqual(sorted(p.name for p in Path(work.name).iterdir()), ["streamed.db"], "no temporary left")
            with sqlite3.connect(streamed) as db:
                self.assertEqual(db.execute("PRAGMA quick_check").fetchone()[0], "ok")
                tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            self.assertTrue({"sessions", "events"} <= tables, tables)

            copy = Path(work.name) / "copy.db"
            copy.write_bytes(data)
            second = Server(tokens=self.tokens, db=copy)
            try:
                self.assertEqual(
                    sorted(s.id for s in Client(second.url, token=self.ops).list_sessions()),
                    sorted(s.id for s in ops.list_sessions()),
                )
                restored = Client(second.url, token=self.a).get_session(sid)
                self.assertEqual(restored.to_dict(), before.to_dict())
                with self.assertRaises(NotFound):
                    Client(second.url, token=self.b).get_session(sid)
            finally:
                second.stop()
        finally:
            a.delete_session(sid)
            work.cleanup()

    def test_backup_to_leaves_the_target_alone_when_refused(self):
        with tempfile.TemporaryDirectory() as work:
            target = Path(work) / "keep.db"
            target.write_bytes(b"an older copy")
            with self.assertRaises(Forbidden):
                self.client(self.a).backup_to(target)
            self.assertEqual(target.read_bytes(), b"an older copy")
            self.assertEqual([p.name for p in Path(work).iterdir()], ["keep.db"])


class Quotas(unittest.TestCase):
    def setUp(self):
        self.tokens = TokenFile()
        self.a = self.tokens.create("team-a", READ_WRITE, "a-rw")
        self.b = self.tokens.create("team-b", READ_WRITE, "b-rw")
        self.ops = self.tokens.create("ops", ["admin"], "ops")
        self.server = None

    def tearDown(self):
        if self.server is not None:
            self.server.stop()
        self.tokens.cleanup()

    def test_a_tenant_past_its_sessions_is_403_quota_exceeded(self):
        self.server = Server("--tenant-max-sessions", "1", "--tenant-max-jobs-per-session", "2", tokens=self.tokens)
        a = Client(self.server.url, token=self.a)
        sid = a.create_session(small_session()).id
        for call in (lambda: a.create_session(small_session()), lambda: a.create_fitgpp_session(fitgpp_spec())):
            with self.assertRaises(QuotaExceeded) as caught:
                call()
            e = caught.exception
            self.assertIsInstance(e, Forbidden)
            self.assertEqual((e.status, e.code), (403, "quota_exceeded"))
        # Jobs per session: the session holds one, a second fits, a third does not.
        a.add_job(sid, JobSpec(id="second", throughput={"v100": 1.0}))
        with self.assertRaises(QuotaExceeded):
            a.add_job(sid, JobSpec(id="third", throughput={"v100": 1.0}))
        # Other tenants and admin tokens are not bound by team-a's count.
        Client(self.server.url, token=self.b).create_session(small_session())
        Client(self.server.url, token=self.ops).create_session(small_session())
        # A deletion frees the place.
        a.delete_session(sid)
        a.create_session(small_session())

    def test_a_tenant_past_its_request_rate_is_429_rate_limited_with_retry_after(self):
        self.server = Server("--tenant-requests-per-second", "1", "--tenant-burst", "1", tokens=self.tokens)
        a = Client(self.server.url, token=self.a)
        a.list_sessions()
        with self.assertRaises(RateLimited) as caught:
            a.list_sessions()
        e = caught.exception
        self.assertEqual((e.status, e.code), (429, "rate_limited"))
        self.assertIsNotNone(e.retry_after)
        self.assertGreaterEqual(e.retry_after, 1)
        # Another tenant has its own bucket.
        Client(self.server.url, token=self.b).list_sessions()
        time.sleep(e.retry_after)
        self.assertEqual(a.list_sessions(), [])


class AFullStore(unittest.TestCase):
    def test_a_write_past_db_max_bytes_is_503_storage_full_and_changes_nothing(self):
        server = Server("--db-max-bytes", "65536")  # the smallest cap (docs/service.md)
        try:
            client = Client(server.url)
            sid = client.create_session(small_session()).id
            padding = {f"t{i:03d}": 1.0 for i in range(60)}  # unknown types: stored, then ignored
            added = []
            with self.assertRaises(StorageFull) as caught:
                for i in range(1000):
                    before = client.get_session(sid).to_dict()
                    job = JobSpec(id=f"job-{i:04d}-" + "x" * 400, throughput={"v100": 1.0})
                    job.extra["padding"] = padding
                    client.add_job(sid, job)
                    added.append(job.id)
            e = caught.exception
            self.assertIsInstance(e, Unavailable)
            self.assertEqual((e.status, e.code), (503, "storage_full"))
            self.assertEqual(e.retry_after, 30)
            self.assertTrue(added, "not one job fitted")
            # Nothing of the refused job was kept; reads go on.
            self.assertEqual(client.get_session(sid).to_dict(), before)
            self.assertEqual(client.healthz().status, "ok")
            # A deletion works on a full store and makes room for later writes at once.
            client.delete_session(sid)
            again = client.create_session(small_session()).id
            client.add_job(again, JobSpec(id="fits-again", throughput={"v100": 1.0}))
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()
