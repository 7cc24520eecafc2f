"""One HTTP exchange with the server, over ``http.client``.

Each request opens its own connection and closes it after the answer, so a :class:`Transport`
holds no connection state and may be used from several threads at once. HTTP proxies named in
the environment are not used: the client talks to the server directly.
"""

import http.client
import json
import socket
import ssl
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional

from .errors import ArbiterConnectionError, ArbiterProtocolError, ArbiterTimeout, error_from_answer
from .version import VERSION


@dataclass
class Answer:
    """A 2xx answer: its status, headers (lower-case names) and body."""

    status: int
    headers: Dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body decoded as JSON (:class:`ArbiterProtocolError` if it is not JSON)."""
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ArbiterProtocolError(f"the answer (HTTP {self.status}) is not JSON: {e}") from None

    def text(self) -> str:
        """The body as text."""
        return self.body.decode("utf-8", errors="replace")


class Transport:
    """Sends requests to ``base_url`` (``http://host:port`` or ``https://...``, with an optional
    path prefix), with ``Authorization: Bearer <token>`` when a token is given."""

    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        timeout: Optional[float] = 60.0,
        headers: Optional[Mapping[str, str]] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"base_url must be http://HOST[:PORT] or https://..., got {base_url!r}")
        if parsed.query or parsed.fragment:
            raise ValueError(f"base_url takes no query or fragment, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port
        self._prefix = parsed.path.rstrip("/")
        self._timeout = timeout
        self._ssl_context = ssl_context
        self._headers = {"Accept": "application/json", "User-Agent": f"arbiter-client-python/{VERSION}"}
        if token is not None:
            if not token or any(c in token for c in "\r\n"):
                raise ValueError("token must be a non-empty string without line breaks")
            self._headers["Authorization"] = f"Bearer {token}"
        if headers:
            self._headers.update(headers)

    def request(
        self,
        method: str,
        path: str,
        body: Optional[Any] = None,
        accept: Optional[str] = None,
        sink: Optional[Callable[[bytes], Any]] = None,
    ) -> Answer:
        """Sends ``method path`` with ``body`` as JSON; returns a 2xx answer or raises.

        ``accept`` replaces the ``Accept`` header (``application/json``). With ``sink``, a 2xx
        body is not kept: it is passed to ``sink`` piece by piece as it arrives (the answer's
        ``body`` is then empty), and a body shorter than its ``Content-Length`` raises
        :class:`ArbiterConnectionError`; an exception raised by ``sink`` propagates as it is.
        Other answers are read whole, as without ``sink``.

        Raises :class:`ArbiterError` (a subclass per status) for any other status,
        :class:`ArbiterConnectionError` when the server cannot be reached or the connection fails,
        :class:`ArbiterTimeout` when no answer comes within the timeout, and ``ValueError`` for a
        body JSON cannot carry (``NaN``, ``Infinity``).
        """
        headers = dict(self._headers)
        if accept is not None:
            headers["Accept"] = accept
        data = None
        if body is not None:
            try:
                data = json.dumps(body, allow_nan=False, separators=(",", ":")).encode("utf-8")
            except ValueError as e:
                raise ValueError(f"{method} {path}: the body cannot be sent as JSON: {e}") from None
            headers["Content-Type"] = "application/json"
        connection = self._connect()
        target = f"{self.base_url}{path}"
        try:
            try:
                connection.request(method, self._prefix + path, body=data, headers=headers)
            except (BrokenPipeError, ConnectionResetError) as e:
                # The server may answer (413, 429) and close before reading a large body: read
                # that answer if it arrived, else report the failed send.
                response = _early_answer(connection)
                if response is None:
                    raise e
            else:
                response = connection.getresponse()
            if sink is not None and 200 <= response.status < 300:
                payload = b""
                _drain(response, sink)
            else:
                payload = response.read()
        except _SinkFailed as e:
            raise e.error from None
        except socket.timeout:
            raise ArbiterTimeout(f"{method} {target}: no answer within {self._timeout} s") from None
        except (OSError, http.client.HTTPException) as e:
            raise ArbiterConnectionError(f"{method} {target}: {_describe(e)}") from e
        finally:
            connection.close()
        answer_headers = {k.lower(): v for k, v in response.getheaders()}
        if not 200 <= response.status < 300:
            raise error_from_answer(response.status, response.reason, payload, answer_headers)
        return Answer(response.status, answer_headers, payload)

    def _connect(self) -> http.client.HTTPConnection:
        if self._https:
            context = self._ssl_context or ssl.create_default_context()
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout, context=context)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)


#: Bytes read at a time from a body passed to a sink.
_CHUNK = 1 << 16


class _SinkFailed(Exception):
    """Carries an exception raised by a sink past the handlers of the connection's errors."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _drain(response: http.client.HTTPResponse, sink: Callable[[bytes], Any]) -> None:
    expected = response.getheader("Content-Length")
    received = 0
    while True:
        chunk = response.read(_CHUNK)
        if not chunk:
            break
        received += len(chunk)
        try:
            sink(chunk)
        except BaseException as e:  # noqa: B902  (a disk full while writing, an interrupt...)
            raise _SinkFailed(e) from e
    if expected is not None and expected.strip().isdigit() and received != int(expected):
        raise http.client.IncompleteRead(b"", int(expected) - received)


def _early_answer(connection: http.client.HTTPConnection) -> Optional[http.client.HTTPResponse]:
    try:
        response = connection.getresponse()
    except (OSError, http.client.HTTPException):
        return None
    return None if 200 <= response.status < 300 else response


def _describe(e: BaseException) -> str:
    if isinstance(e, ConnectionRefusedError):
        return "connection refused (is the server running at this address?)"
    if isinstance(e, socket.gaierror):
        return f"cannot resolve the host name ({e})"
    if isinstance(e, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    return f"{type(e).__name__}: {e}"
