"""The client's HTTP handling against a scripted stand-in server (no arbiter needed): headers,
tokens, path encoding, error bodies that are and are not the error object, Retry-After,
connection failures and timeouts."""

import asyncio
import email.utils
import json
import tempfile
import socket
import threading
import time
import unittest
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import server_fixture  # noqa: F401  (puts the client's source on the path)

from arbiter_client import (
    ArbiterClientError,
    ArbiterConnectionError,
    ArbiterError,
    ArbiterProtocolError,
    ArbiterTimeout,
    AsyncClient,
    BadRequest,
    Client,
    Conflict,
    Forbidden,
    NotFound,
    QuotaExceeded,
    RateLimited,
    ServerError,
    StorageFull,
    Unauthorized,
    Unavailable,
)
from arbiter_client.client import SQLITE_HEADER
from arbiter_client.errors import parse_retry_after


class Scripted(BaseHTTPRequestHandler):
    """Answers ``ROUTES[path]`` = (status, headers, body) and records every request."""

    ROUTES: dict = {}
    SEEN: list = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        Scripted.SEEN.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body})
        if self.path.startswith("/slow"):
            time.sleep(1.5)
        status, headers, payload = Scripted.ROUTES.get(self.path, (200, {}, b'{"echo": true}'))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if "Content-Length" not in headers:  # a route may declare a length its body lacks
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, *args) -> None:
        pass


def error_body(code, message, **more) -> bytes:
    return json.dumps({"error": dict({"code": code, "message": message}, **more)}).encode()


class AgainstAStandIn(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
        cls.thread = threading.Thread(target=cls.httpd.serve_forever, daemon=True)
        cls.thread.start()
        cls.url = f"http://127.0.0.1:{cls.httpd.server_address[1]}"

    @classmethod
    def tearDownClass(cls) -> None:
        cls.httpd.shutdown()
        cls.httpd.server_close()

    def setUp(self) -> None:
        Scripted.ROUTES = {}
        Scripted.SEEN = []

    def route(self, path, status, body=b"", **headers) -> None:
        Scripted.ROUTES[path] = (status, headers, body)

    def test_a_token_is_sent_as_a_bearer_header_and_none_without_it(self):
        self.route("/metrics", 200, b"# metrics\n", **{"Content-Type": "text/plain"})
        self.assertEqual(Client(self.url, token="s3cret-token").metrics(), "# metrics\n")
        self.assertEqual(Scripted.SEEN[-1]["headers"].get("Authorization"), "Bearer s3cret-token")
        Client(self.url).metrics()
        self.assertNotIn("Authorization", Scripted.SEEN[-1]["headers"])
        with self.assertRaises(ValueError):
            Client(self.url, token="bad\r\nX-Injected: 1")

    def test_bodies_are_json_with_their_content_type_and_names_are_encoded_whole(self):
        client = Client(self.url + "/prefix/", headers={"X-Team": "ml"})
        self.route("/prefix/v1/sessions/s%201/workers/v100%2F0%2F1/fail", 200,
                   b'{"worker_types": {}, "failed_gpus": ["v100/0/1"]}')
        view = client.fail_worker("s 1", "v100/0/1")
        self.assertEqual(view.failed_gpus, ["v100/0/1"])
        seen = Scripted.SEEN[-1]
        self.assertEqual(seen["method"], "POST")
        self.assertEqual(seen["path"], "/prefix/v1/sessions/s%201/workers/v100%2F0%2F1/fail")
        self.assertEqual(seen["headers"]["X-Team"], "ml")
        self.assertEqual(seen["headers"].get("Content-Length"), "0")
        client.request("POST", "/v1/x", {"a": [1, 2.5], "b": None})
        seen = Scripted.SEEN[-1]
        self.assertEqual(seen["headers"]["Content-Type"], "application/json")
        self.assertEqual(json.loads(seen["body"]), {"a": [1, 2.5], "b": None})
        self.assertEqual(seen["path"], "/prefix/v1/x")
        with self.assertRaises(ValueError):
            client.get_session("")

    def test_nan_is_refused_before_sending(self):
        with self.assertRaises(ValueError) as caught:
            Client(self.url).solve({"policy": "fifo", "cluster": {}, "jobs": [{"id": "a", "weight": float("nan")}]})
        self.assertIn("JSON", str(caught.exception))
        self.assertEqual(Scripted.SEEN, [])

    def test_the_error_object_becomes_the_exception_for_its_status(self):
        cases = [
            (400, BadRequest, "invalid_number", "jobs[0].weight"),
            (401, Unauthorized, "unauthorized", None),
            (403, Forbidden, "forbidden", None),
            (403, QuotaExceeded, "quota_exceeded", None),
            (503, StorageFull, "storage_full", None),
            (503, Unavailable, "shutting_down", None),
            (500, ServerError, "storage_full", None),
            (404, NotFound, "unknown_session", None),
            (409, Conflict, "conflict", "id"),
            (500, ServerError, "storage_failed", None),
            (502, ServerError, "bad_gateway", None),
            (418, ArbiterError, "teapot", None),
        ]
        for status, cls, code, field in cases:
            with self.subTest(status=status):
                extra = {"field": field} if field else {}
                self.route("/v1/sessions/x", status, error_body(code, f"message {status}", **extra),
                           **{"x-request-id": "42"})
                with self.assertRaises(cls) as caught:
                    Client(self.url).get_session("x")
                e = caught.exception
                self.assertIs(type(e), cls)
                self.assertEqual((e.status, e.code, e.message, e.field), (status, code, f"message {status}", field))
                self.assertEqual(e.request_id, "42")
                self.assertIn(f"HTTP {status} {code}: message {status}", str(e))

    def test_an_error_body_that_is_not_the_error_object_still_raises_with_its_text(self):
        self.route("/healthz", 502, b"<html>upstream down</html>", **{"Content-Type": "text/html"})
        with self.assertRaises(ServerError) as caught:
            Client(self.url).healthz()
        e = caught.exception
        self.assertEqual((e.status, e.code, e.field), (502, None, None))
        self.assertEqual(e.message, "<html>upstream down</html>")
        self.route("/healthz", 404, b'{"detail": "nope"}')
        with self.assertRaises(NotFound) as caught:
            Client(self.url).healthz()
        self.assertEqual(caught.exception.message, '{"detail": "nope"}')
        self.route("/healthz", 500, b"")
        with self.assertRaises(ServerError) as caught:
            Client(self.url).healthz()
        self.assertEqual(caught.exception.message, "Internal Server Error")

    def test_retry_after_in_seconds_or_as_a_date(self):
        self.route("/v1/allocations", 429, error_body("overloaded", "busy"), **{"Retry-After": "3"})
        with self.assertRaises(RateLimited) as caught:
            Client(self.url).solve({"policy": "fifo"})
        self.assertEqual(caught.exception.retry_after, 3.0)
        when = email.utils.formatdate(time.time() + 120, usegmt=True)
        self.route("/v1/sessions", 503, error_body("storage_full", "disk full"), **{"Retry-After": when})
        with self.assertRaises(Unavailable) as caught:
            Client(self.url).list_sessions()
        self.assertEqual(caught.exception.code, "storage_full")
        self.assertTrue(100 < caught.exception.retry_after <= 121, caught.exception.retry_after)
        self.assertIsNone(parse_retry_after(None))
        self.assertIsNone(parse_retry_after("soon"))
        self.assertEqual(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0.0)

    def test_infeasible_names_its_jobs(self):
        self.route("/v1/allocations", 422, error_body("infeasible", "SLOs", jobs=["a", "b"]))
        with self.assertRaises(ArbiterError) as caught:
            Client(self.url).solve({"policy": "min_cost_slo"})
        self.assertEqual(caught.exception.jobs, ["a", "b"])
        self.assertIn("(jobs a, b)", str(caught.exception))

    def test_a_success_that_is_not_the_documented_json_is_a_protocol_error(self):
        self.route("/healthz", 200, b"ok")
        with self.assertRaises(ArbiterProtocolError):
            Client(self.url).healthz()
        self.route("/healthz", 200, b'{"status": "ok"}')
        with self.assertRaises(ArbiterProtocolError) as caught:
            Client(self.url).healthz()
        self.assertIn("missing field 'version'", str(caught.exception))
        self.route("/openapi.json", 200, b"[1]")
        with self.assertRaises(ArbiterProtocolError):
            Client(self.url).openapi()

    def test_no_answer_within_the_timeout(self):
        started = time.monotonic()
        with self.assertRaises(ArbiterTimeout) as caught:
            Client(self.url, timeout=0.3).request("GET", "/slow")
        self.assertLess(time.monotonic() - started, 1.4)
        self.assertIsInstance(caught.exception, ArbiterConnectionError)
        self.assertIsInstance(caught.exception, TimeoutError)

    def test_the_async_client_raises_the_same_errors(self):
        import asyncio

        self.route("/v1/sessions/x", 404, error_body("unknown_session", "gone"))

        async def run():
            async with AsyncClient(self.url, token="t") as client:
                with self.assertRaises(NotFound):
                    await client.get_session("x")
                return await client.metrics()

        self.assertEqual(asyncio.run(run()), '{"echo": true}')
        self.assertEqual(Scripted.SEEN[-1]["headers"].get("Authorization"), "Bearer t")


    def test_a_backup_is_streamed_checked_and_written_whole_or_not_at_all(self):
        database = SQLITE_HEADER + bytes(range(256)) * 600  # several chunks
        self.route("/v1/admin/backup", 200, database, **{"Content-Type": "application/vnd.sqlite3"})
        client = Client(self.url, token="t")
        self.assertEqual(client.backup(), database)
        self.assertIn("application/vnd.sqlite3", Scripted.SEEN[-1]["headers"]["Accept"])
        with tempfile.TemporaryDirectory() as work:
            target = Path(work) / "b.db"
            self.assertEqual(client.backup_to(target), len(database))
            self.assertEqual(target.read_bytes(), database)
            self.assertEqual(asyncio.run(AsyncClient(self.url).backup()), database)
            # Cut short of its Content-Length: a connection error, and the file stays as it was.
            self.route("/v1/admin/backup", 200, database[:1000], **{"Content-Length": str(len(database))})
            with self.assertRaises(ArbiterConnectionError):
                client.backup_to(target)
            with self.assertRaises(ArbiterConnectionError):
                client.backup()
            self.assertEqual(target.read_bytes(), database)
            # A 200 that is not an SQLite database (a proxy's page): a protocol error.
            self.route("/v1/admin/backup", 200, b"<html>log in</html>", **{"Content-Type": "text/html"})
            with self.assertRaises(ArbiterProtocolError):
                client.backup_to(target)
            with self.assertRaises(ArbiterProtocolError):
                client.backup()
            self.assertEqual(target.read_bytes(), database)
            self.assertEqual([p.name for p in Path(work).iterdir()], ["b.db"], "a temporary file was left")

    def test_a_sink_that_fails_raises_its_own_error(self):
        self.route("/v1/admin/backup", 200, SQLITE_HEADER + b"x" * 100)

        def full(chunk):
            raise OSError(28, "No space left on device")

        with self.assertRaises(OSError) as caught:
            Client(self.url)._transport.request("GET", "/v1/admin/backup", sink=full)
        self.assertNotIsInstance(caught.exception, ArbiterClientError)
        self.assertEqual(caught.exception.errno, 28)

    def test_the_audit_is_asked_for_in_the_query(self):
        calls = [
            lambda: Client(self.url).get_session("s 1", audit=7),
            lambda: Client(self.url).get_fitgpp_session("f", audit=0),
            lambda: Client(self.url).get_session("s"),
        ]
        for call in calls:  # the stand-in's answer is no session: only the paths matter here
            with self.assertRaises(ArbiterProtocolError):
                call()
        self.assertEqual([r["path"] for r in Scripted.SEEN][-3:],
                         ["/v1/sessions/s%201?audit=7", "/v1/fitgpp/sessions/f?audit=0", "/v1/sessions/s"])
        for bad in (True, 1.5, "3"):
            with self.subTest(audit=bad), self.assertRaises(ValueError):
                Client(self.url).get_session("s", audit=bad)


class WithoutAServer(unittest.TestCase):
    def test_connection_refused_is_a_connection_error(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with self.assertRaises(ArbiterConnectionError) as caught:
            Client(f"http://127.0.0.1:{port}", timeout=5).healthz()
        self.assertIn("connection refused", str(caught.exception))
        self.assertIn(f"127.0.0.1:{port}/healthz", str(caught.exception))
        self.assertIsInstance(caught.exception, ArbiterClientError)
        self.assertNotIsInstance(caught.exception, ArbiterError)

    def test_a_server_that_closes_without_answering(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)

        def close_at_once():
            conn, _ = listener.accept()
            conn.recv(65536)
            conn.close()

        threading.Thread(target=close_at_once, daemon=True).start()
        try:
            with self.assertRaises(ArbiterConnectionError) as caught:
                Client(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=5).healthz()
            self.assertIn("closed the connection", str(caught.exception))
        finally:
            listener.close()

    def test_a_base_url_must_be_http(self):
        for bad in ["127.0.0.1:8080", "ftp://host", "http://", "http://host/?q=1"]:
            with self.subTest(url=bad), self.assertRaises(ValueError):
                Client(bad)


if __name__ == "__main__":
    unittest.main()
