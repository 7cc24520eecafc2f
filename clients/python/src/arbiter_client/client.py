"""The synchronous client: one method per endpoint of ``arbiter serve``.

Bodies may be given as models or as plain dicts (sent as they are, so a field this client does
not know yet can still be sent); answers come back as models. Errors: see :mod:`.errors`.
"""

import os
import ssl
import tempfile
import urllib.parse
import warnings
from typing import Any, Dict, List, Mapping, Optional, Type, TypeVar, Union

from .contract import JobSpec, Request, Response
from .errors import ArbiterProtocolError, IgnoredFieldsWarning
from .estimate import EstimateRequest, EstimateResponse
from .fitgpp import CreateFitGppSession, FitGppAdvance, FitGppJob, FitGppPass, FitGppView
from .oasis import CreateOasisSession, OasisDecision, OasisJob, OasisView, SessionEntries
from .health import Health
from .k8s import (
    BindingList,
    EvictionList,
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
)
from .sessions import (
    AllocationView,
    ClusterView,
    CreateSession,
    JobList,
    JobView,
    Progress,
    RoundView,
    SessionList,
    SessionSummary,
    SessionView,
)
from .transport import Answer, Transport
from .wire import WireFormatError, WireModel

M = TypeVar("M", bound=WireModel)

#: A body: a model, or a dict sent as it is.
Body = Union[WireModel, Mapping[str, Any]]

DEFAULT_URL = "http://127.0.0.1:8080"

BACKUP_PATH = "/v1/admin/backup"
#: The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"
_BACKUP_ACCEPT = "application/vnd.sqlite3, application/json"


def segment(value: str) -> str:
    """A path segment, percent-encoded whole: ``v100/0/1`` becomes ``v100%2F0%2F1``."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"a session, job or worker name must be a non-empty string, got {value!r}")
    return urllib.parse.quote(value, safe="")


def _body(value: Body) -> Dict[str, Any]:
    if isinstance(value, WireModel):
        return value.to_dict()
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"a request body is a model or a dict, got {type(value).__name__}")


def _audit_query(audit: Optional[int]) -> str:
    if audit is None:
        return ""
    if isinstance(audit, bool) or not isinstance(audit, int) or audit < 0:
        raise ValueError(f"audit is a number of events (an int, 0 or more), got {audit!r}")
    return f"?audit={audit}"


def _budget_query(max_solve_seconds: Optional[float]) -> str:
    if max_solve_seconds is None:
        return ""
    if isinstance(max_solve_seconds, bool) or not isinstance(max_solve_seconds, (int, float)):
        raise ValueError(f"max_solve_seconds is a number of seconds, got {max_solve_seconds!r}")
    return f"?max_solve_seconds={float(max_solve_seconds)!r}"


def _check_database(head: bytes) -> None:
    if head != SQLITE_HEADER:
        raise ArbiterProtocolError(f"the backup is not an SQLite database: it starts with {head!r}")


def _model(cls: Type[M], answer: Answer) -> M:
    try:
        model = cls.from_dict(answer.json())
    except WireFormatError as e:
        raise ArbiterProtocolError(f"the answer does not have the shape of {cls.__name__}: {e}") from None
    ignored = getattr(model, "ignored_fields", None)
    if ignored:
        # Raised at the caller of the client's method.
        warnings.warn(f"the server ignored fields it does not know: {', '.join(ignored)}", IgnoredFieldsWarning, 3)
    return model


class Client:
    """A client of ``arbiter serve`` at ``base_url``.

    ``token``, when given, is sent as ``Authorization: Bearer <token>``. ``timeout`` bounds
    connecting and each wait for data, in seconds (``None``: wait for ever); a solve can take
    as long as the server's budget (``--max-solve-seconds``, 60 by default), so keep it above
    that. ``headers`` are added to every request. Every request opens its own connection, so
    one client may be shared by threads.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        token: Optional[str] = None,
        timeout: Optional[float] = 75.0,
        headers: Optional[Mapping[str, str]] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        self._transport = Transport(base_url, token=token, timeout=timeout, headers=headers, ssl_context=ssl_context)
        self.base_url = self._transport.base_url

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release (each request has its own connection); kept for ``with``."""

    def request(self, method: str, path: str, body: Optional[Body] = None) -> Answer:
        """Any endpoint: ``path`` is below the base URL (``/v1/sessions``); ``body`` as JSON."""
        return self._transport.request(method, path, None if body is None else _body(body))

    # The contract and the estimator.

    def solve(self, request: Union[Request, Mapping[str, Any]]) -> Response:
        """``POST /v1/allocations``: the contract's request to its response, stateless."""
        return _model(Response, self.request("POST", "/v1/allocations", request))

    def estimate_throughputs(self, request: Union[EstimateRequest, Mapping[str, Any]]) -> EstimateResponse:
        """``POST /v1/throughputs/estimate``: partial throughput rows completed by the estimator."""
        return _model(EstimateResponse, self.request("POST", "/v1/throughputs/estimate", request))

    # Sessions.

    def list_sessions(self) -> List[SessionSummary]:
        """``GET /v1/sessions``: the sessions, oldest first (FitGpp sessions are not listed)."""
        return _model(SessionList, self.request("GET", "/v1/sessions")).sessions

    def create_session(self, spec: Union[CreateSession, Mapping[str, Any]]) -> SessionView:
        """``POST /v1/sessions``: a new session; its id is the answer's ``id``."""
        return _model(SessionView, self.request("POST", "/v1/sessions", spec))

    def get_session(self, session_id: str, audit: Optional[int] = None) -> SessionView:
        """``GET /v1/sessions/{id}``: cluster, jobs with allocation and leases, metrics.

        With ``audit=N`` (0 to 10,000) the view's ``audit`` has the owner, the token that created
        the session and its last N events, each with the id of the token that made it.
        """
        path = f"/v1/sessions/{segment(session_id)}{_audit_query(audit)}"
        return _model(SessionView, self.request("GET", path))

    def delete_session(self, session_id: str) -> None:
        """``DELETE /v1/sessions/{id}``: the session and its stored events."""
        self.request("DELETE", f"/v1/sessions/{segment(session_id)}")

    def add_job(self, session_id: str, job: Union[JobSpec, Mapping[str, Any]]) -> JobView:
        """``POST /v1/sessions/{id}/jobs``: a job arrives (at session time without ``arrival``)."""
        return _model(JobView, self.request("POST", f"/v1/sessions/{segment(session_id)}/jobs", job))

    def remove_job(self, session_id: str, job_id: str) -> None:
        """``DELETE /v1/sessions/{id}/jobs/{job}``: the job finished or was withdrawn."""
        self.request("DELETE", f"/v1/sessions/{segment(session_id)}/jobs/{segment(job_id)}")

    def report_progress(
        self, session_id: str, job_id: str, progress: Union[Progress, Mapping[str, Any]]
    ) -> JobView:
        """``POST /v1/sessions/{id}/jobs/{job}/progress``: steps done on a type, measured steps/s."""
        path = f"/v1/sessions/{segment(session_id)}/jobs/{segment(job_id)}/progress"
        return _model(JobView, self.request("POST", path, progress))

    def put_throughputs(
        self, session_id: str, throughputs: Mapping[str, Mapping[str, Optional[float]]]
    ) -> List[JobView]:
        """``PUT /v1/sessions/{id}/throughputs``: ``{job: {type: steps/s}}``, all rows or none."""
        path = f"/v1/sessions/{segment(session_id)}/throughputs"
        body = {"throughputs": {job: dict(row) for job, row in throughputs.items()}}
        return _model(JobList, self.request("PUT", path, body)).jobs

    def fail_worker(self, session_id: str, worker: str) -> ClusterView:
        """``POST .../workers/{worker}/fail``: a GPU (``v100/0/1``) or a server (``v100/0``) failed."""
        path = f"/v1/sessions/{segment(session_id)}/workers/{segment(worker)}/fail"
        return _model(ClusterView, self.request("POST", path))

    def return_worker(self, session_id: str, worker: str) -> ClusterView:
        """``POST .../workers/{worker}/return``: a failed GPU or server is back."""
        path = f"/v1/sessions/{segment(session_id)}/workers/{segment(worker)}/return"
        return _model(ClusterView, self.request("POST", path))

    def get_allocation(self, session_id: str) -> AllocationView:
        """``GET /v1/sessions/{id}/allocation``: the installed allocation (``stale`` if outdated)."""
        return _model(AllocationView, self.request("GET", f"/v1/sessions/{segment(session_id)}/allocation"))

    def recompute_allocation(self, session_id: str, max_solve_seconds: Optional[float] = None) -> AllocationView:
        """``POST /v1/sessions/{id}/allocation``: recompute now (deficits carry over).

        ``max_solve_seconds`` bounds this solve in place of the session's own budget (the
        server's ceiling still caps it)."""
        path = f"/v1/sessions/{segment(session_id)}/allocation{_budget_query(max_solve_seconds)}"
        return _model(AllocationView, self.request("POST", path))

    def next_round(self, session_id: str, max_solve_seconds: Optional[float] = None) -> RoundView:
        """``POST /v1/sessions/{id}/rounds``: the next round's placements and every job's lease.

        ``max_solve_seconds`` bounds a stale allocation's solve, as in :meth:`recompute_allocation`."""
        path = f"/v1/sessions/{segment(session_id)}/rounds{_budget_query(max_solve_seconds)}"
        return _model(RoundView, self.request("POST", path))

    # A session as Kubernetes' scheduler extender.

    def _k8s(self, session_id: str, rest: str) -> str:
        return f"/v1/sessions/{segment(session_id)}/k8s/{rest}"

    def k8s_filter(self, session_id: str, args: Union[ExtenderArgs, Mapping[str, Any]]) -> ExtenderFilterResult:
        """``POST .../k8s/filter``: the nodes of the servers the round placed the pod's job on."""
        return _model(ExtenderFilterResult, self.request("POST", self._k8s(session_id, "filter"), args))

    def k8s_prioritize(self, session_id: str, args: Union[ExtenderArgs, Mapping[str, Any]]) -> List[HostPriority]:
        """``POST .../k8s/prioritize``: every candidate node with a score from 0 to 10."""
        answer = self.request("POST", self._k8s(session_id, "prioritize"), args).json()
        if not isinstance(answer, list):
            raise ArbiterProtocolError(f"the answer of prioritize is not a HostPriorityList: {answer!r}")
        try:
            return [HostPriority.from_dict(h, f"HostPriorityList[{i}]") for i, h in enumerate(answer)]
        except WireFormatError as e:
            raise ArbiterProtocolError(f"the answer does not have the shape of HostPriorityList: {e}") from None

    def k8s_bind(
        self, session_id: str, args: Union[ExtenderBindingArgs, Mapping[str, Any]]
    ) -> ExtenderBindingResult:
        """``POST .../k8s/bind``: record the pod's binding (``error`` says why not)."""
        return _model(ExtenderBindingResult, self.request("POST", self._k8s(session_id, "bind"), args))

    def k8s_preempt(
        self, session_id: str, args: Union[ExtenderPreemptionArgs, Mapping[str, Any]]
    ) -> ExtenderPreemptionResult:
        """``POST .../k8s/preempt``: the nodes and victims consistent with the round."""
        return _model(ExtenderPreemptionResult, self.request("POST", self._k8s(session_id, "preempt"), args))

    def k8s_evictions(self, session_id: str) -> EvictionList:
        """``GET .../k8s/evictions``: bound pods the current round does not run where they are."""
        return _model(EvictionList, self.request("GET", self._k8s(session_id, "evictions")))

    def k8s_bindings(self, session_id: str) -> BindingList:
        """``GET .../k8s/bindings``: every pod recorded as bound."""
        return _model(BindingList, self.request("GET", self._k8s(session_id, "bindings")))

    def k8s_forget_binding(self, session_id: str, namespace: str, name: str) -> None:
        """``DELETE .../k8s/bindings/{namespace}/{name}``: the pod is gone (evicted or deleted)."""
        self.request("DELETE", self._k8s(session_id, f"bindings/{segment(namespace)}/{segment(name)}"))

    # FitGpp sessions.

    def list_fitgpp_sessions(self) -> SessionEntries:
        """``GET /v1/fitgpp/sessions``: the FitGpp sessions the caller may see, oldest first."""
        return _model(SessionEntries, self.request("GET", "/v1/fitgpp/sessions"))

    def create_fitgpp_session(self, spec: Union[CreateFitGppSession, Mapping[str, Any]]) -> FitGppView:
        """``POST /v1/fitgpp/sessions``: node groups and a preemption policy."""
        return _model(FitGppView, self.request("POST", "/v1/fitgpp/sessions", spec))

    def get_fitgpp_session(self, session_id: str, audit: Optional[int] = None) -> FitGppView:
        """``GET /v1/fitgpp/sessions/{id}``: time, nodes, queue, TE jobs waiting, every job;
        with ``audit=N``, the owner and last N events as :meth:`get_session` gives them."""
        path = f"/v1/fitgpp/sessions/{segment(session_id)}{_audit_query(audit)}"
        return _model(FitGppView, self.request("GET", path))

    def delete_fitgpp_session(self, session_id: str) -> None:
        """``DELETE /v1/fitgpp/sessions/{id}``: the session and its stored events."""
        self.request("DELETE", f"/v1/fitgpp/sessions/{segment(session_id)}")

    def submit_fitgpp_job(self, session_id: str, job: Union[FitGppJob, Mapping[str, Any]]) -> FitGppPass:
        """``POST /v1/fitgpp/sessions/{id}/jobs``: a job arrives and is scheduled."""
        return _model(FitGppPass, self.request("POST", f"/v1/fitgpp/sessions/{segment(session_id)}/jobs", job))

    def advance_fitgpp_session(self, session_id: str, to: float) -> FitGppPass:
        """``POST /v1/fitgpp/sessions/{id}/advance``: completions and grace ends up to ``to``."""
        path = f"/v1/fitgpp/sessions/{segment(session_id)}/advance"
        return _model(FitGppPass, self.request("POST", path, FitGppAdvance(to=to)))

    # OASiS sessions.

    def list_oasis_sessions(self) -> SessionEntries:
        """``GET /v1/oasis/sessions``: the OASiS sessions the caller may see, oldest first."""
        return _model(SessionEntries, self.request("GET", "/v1/oasis/sessions"))

    def create_oasis_session(self, spec: Union[CreateOasisSession, Mapping[str, Any]]) -> OasisView:
        """``POST /v1/oasis/sessions``: the cluster, and the prices given or estimated."""
        return _model(OasisView, self.request("POST", "/v1/oasis/sessions", spec))

    def get_oasis_session(self, session_id: str, audit: Optional[int] = None) -> OasisView:
        """``GET /v1/oasis/sessions/{id}``: prices, every decision, totals, committed use; with
        ``audit=N``, the owner and last N events as :meth:`get_session` gives them."""
        path = f"/v1/oasis/sessions/{segment(session_id)}{_audit_query(audit)}"
        return _model(OasisView, self.request("GET", path))

    def delete_oasis_session(self, session_id: str) -> None:
        """``DELETE /v1/oasis/sessions/{id}``: the session and its stored events."""
        self.request("DELETE", f"/v1/oasis/sessions/{segment(session_id)}")

    def submit_oasis_job(self, session_id: str, job: Union[OasisJob, Mapping[str, Any]]) -> OasisDecision:
        """``POST /v1/oasis/sessions/{id}/jobs``: the job is decided at once, with its reason."""
        path = f"/v1/oasis/sessions/{segment(session_id)}/jobs"
        return _model(OasisDecision, self.request("POST", path, job))

    # Operations.

    def index(self) -> Dict[str, Any]:
        """``GET /``: a map of the API (the service, its version, the routes to start with); no
        token needed."""
        landing = self.request("GET", "/").json()
        if not isinstance(landing, dict):
            raise ArbiterProtocolError("the map of the API is not a JSON object")
        return landing

    def healthz(self) -> Health:
        """``GET /healthz``: liveness and load."""
        return _model(Health, self.request("GET", "/healthz"))

    def metrics(self) -> str:
        """``GET /metrics``: the Prometheus text."""
        return self.request("GET", "/metrics").text()

    def backup(self) -> bytes:
        """``GET /v1/admin/backup`` (scope ``admin``): a consistent copy of the server's session
        database, an SQLite file, held in memory. :meth:`backup_to` writes it to a file instead."""
        chunks: List[bytes] = []
        self._transport.request("GET", BACKUP_PATH, accept=_BACKUP_ACCEPT, sink=chunks.append)
        data = b"".join(chunks)
        _check_database(data[: len(SQLITE_HEADER)])
        return data

    def backup_to(self, path: Union[str, "os.PathLike[str]"]) -> int:
        """``GET /v1/admin/backup`` streamed to the file ``path``; returns its size in bytes.

        The copy is written beside ``path`` under a temporary name, synced and then renamed to
        ``path``, so ``path`` is only ever a complete copy: after any failure it is left as it was.
        """
        target = os.fspath(path)
        directory, name = os.path.split(os.path.abspath(target))
        fd, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=directory)
        size = 0
        try:
            with os.fdopen(fd, "wb") as out:
                head = bytearray()

                def write(chunk: bytes) -> None:
                    nonlocal size
                    if len(head) < len(SQLITE_HEADER):
                        head.extend(chunk[: len(SQLITE_HEADER) - len(head)])
                        if len(head) == len(SQLITE_HEADER):
                            _check_database(bytes(head))
                    out.write(chunk)
                    size += len(chunk)

                self._transport.request("GET", BACKUP_PATH, accept=_BACKUP_ACCEPT, sink=write)
                _check_database(bytes(head))
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, target)
        except BaseException:
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass
            raise
        return size

    def openapi(self) -> Dict[str, Any]:
        """``GET /openapi.json``: the OpenAPI 3.1 document."""
        document = self.request("GET", "/openapi.json").json()
        if not isinstance(document, dict):
            raise ArbiterProtocolError("the OpenAPI document is not a JSON object")
        return document
