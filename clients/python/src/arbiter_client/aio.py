"""The asynchronous client: the same methods as :class:`~.client.Client`, awaitable."""

import asyncio
import functools
import os
import ssl
from typing import Any, Callable, Dict, List, Mapping, Optional, TypeVar, Union

from .client import DEFAULT_URL, Body, Client
from .contract import JobSpec, Request, Response
from .estimate import EstimateRequest, EstimateResponse
from .fitgpp import CreateFitGppSession, FitGppJob, FitGppPass, FitGppView
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
    JobView,
    Progress,
    RoundView,
    SessionSummary,
    SessionView,
)
from .transport import Answer

R = TypeVar("R")


class AsyncClient:
    """An asyncio client of ``arbiter serve``, with the methods of :class:`Client`.

    It runs the synchronous client's blocking calls in a thread (``asyncio.to_thread``, the
    default executor), one request per thread at a time: many requests can be in flight at
    once, each on its own connection, bounded by the executor's threads. Cancelling an awaiting
    call stops the wait, not the request already sent, which the server still completes.
    Arguments and errors are those of :class:`Client`.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        token: Optional[str] = None,
        timeout: Optional[float] = 75.0,
        headers: Optional[Mapping[str, str]] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        self.sync = Client(base_url, token=token, timeout=timeout, headers=headers, ssl_context=ssl_context)
        self.base_url = self.sync.base_url

    def __repr__(self) -> str:
        return f"AsyncClient({self.base_url!r})"

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Nothing to release (each request has its own connection); kept for ``async with``."""

    async def _run(self, call: Callable[..., R], *args: Any) -> R:
        return await asyncio.to_thread(functools.partial(call, *args))

    async def request(self, method: str, path: str, body: Optional[Body] = None) -> Answer:
        """Any endpoint, as :meth:`Client.request`."""
        return await self._run(self.sync.request, method, path, body)

    async def solve(self, request: Union[Request, Mapping[str, Any]]) -> Response:
        """``POST /v1/allocations``."""
        return await self._run(self.sync.solve, request)

    async def estimate_throughputs(self, request: Union[EstimateRequest, Mapping[str, Any]]) -> EstimateResponse:
        """``POST /v1/throughputs/estimate``."""
        return await self._run(self.sync.estimate_throughputs, request)

    async def list_sessions(self) -> List[SessionSummary]:
        """``GET /v1/sessions``."""
        return await self._run(self.sync.list_sessions)

    async def create_session(self, spec: Union[CreateSession, Mapping[str, Any]]) -> SessionView:
        """``POST /v1/sessions``."""
        return await self._run(self.sync.create_session, spec)

    async def get_session(self, session_id: str, audit: Optional[int] = None) -> SessionView:
        """``GET /v1/sessions/{id}`` (``?audit=N`` with ``audit``)."""
        return await self._run(self.sync.get_session, session_id, audit)

    async def delete_session(self, session_id: str) -> None:
        """``DELETE /v1/sessions/{id}``."""
        await self._run(self.sync.delete_session, session_id)

    async def add_job(self, session_id: str, job: Union[JobSpec, Mapping[str, Any]]) -> JobView:
        """``POST /v1/sessions/{id}/jobs``."""
        return await self._run(self.sync.add_job, session_id, job)

    async def remove_job(self, session_id: str, job_id: str) -> None:
        """``DELETE /v1/sessions/{id}/jobs/{job}``."""
        await self._run(self.sync.remove_job, session_id, job_id)

    async def report_progress(
        self, session_id: str, job_id: str, progress: Union[Progress, Mapping[str, Any]]
    ) -> JobView:
        """``POST /v1/sessions/{id}/jobs/{job}/progress``."""
        return await self._run(self.sync.report_progress, session_id, job_id, progress)

    async def put_throughputs(
        self, session_id: str, throughputs: Mapping[str, Mapping[str, Optional[float]]]
    ) -> List[JobView]:
        """``PUT /v1/sessions/{id}/throughputs``."""
        return await self._run(self.sync.put_throughputs, session_id, throughputs)

    async def fail_worker(self, session_id: str, worker: str) -> ClusterView:
        """``POST /v1/sessions/{id}/workers/{worker}/fail``."""
        return await self._run(self.sync.fail_worker, session_id, worker)

    async def return_worker(self, session_id: str, worker: str) -> ClusterView:
        """``POST /v1/sessions/{id}/workers/{worker}/return``."""
        return await self._run(self.sync.return_worker, session_id, worker)

    async def get_allocation(self, session_id: str) -> AllocationView:
        """``GET /v1/sessions/{id}/allocation``."""
        return await self._run(self.sync.get_allocation, session_id)

    async def recompute_allocation(self, session_id: str, max_solve_seconds: Optional[float] = None) -> AllocationView:
        """``POST /v1/sessions/{id}/allocation``."""
        return await self._run(self.sync.recompute_allocation, session_id, max_solve_seconds)

    async def next_round(self, session_id: str, max_solve_seconds: Optional[float] = None) -> RoundView:
        """``POST /v1/sessions/{id}/rounds``."""
        return await self._run(self.sync.next_round, session_id, max_solve_seconds)

    async def k8s_filter(self, session_id: str, args: Union[ExtenderArgs, Mapping[str, Any]]) -> ExtenderFilterResult:
        """``POST /v1/sessions/{id}/k8s/filter``."""
        return await self._run(self.sync.k8s_filter, session_id, args)

    async def k8s_prioritize(
        self, session_id: str, args: Union[ExtenderArgs, Mapping[str, Any]]
    ) -> List[HostPriority]:
        """``POST /v1/sessions/{id}/k8s/prioritize``."""
        return await self._run(self.sync.k8s_prioritize, session_id, args)

    async def k8s_bind(
        self, session_id: str, args: Union[ExtenderBindingArgs, Mapping[str, Any]]
    ) -> ExtenderBindingResult:
        """``POST /v1/sessions/{id}/k8s/bind``."""
        return await self._run(self.sync.k8s_bind, session_id, args)

    async def k8s_preempt(
        self, session_id: str, args: Union[ExtenderPreemptionArgs, Mapping[str, Any]]
    ) -> ExtenderPreemptionResult:
        """``POST /v1/sessions/{id}/k8s/preempt``."""
        return await self._run(self.sync.k8s_preempt, session_id, args)

    async def k8s_evictions(self, session_id: str) -> EvictionList:
        """``GET /v1/sessions/{id}/k8s/evictions``."""
        return await self._run(self.sync.k8s_evictions, session_id)

    async def k8s_bindings(self, session_id: str) -> BindingList:
        """``GET /v1/sessions/{id}/k8s/bindings``."""
        return await self._run(self.sync.k8s_bindings, session_id)

    async def k8s_forget_binding(self, session_id: str, namespace: str, name: str) -> None:
        """``DELETE /v1/sessions/{id}/k8s/bindings/{namespace}/{name}``."""
        await self._run(self.sync.k8s_forget_binding, session_id, namespace, name)

    async def list_fitgpp_sessions(self) -> SessionEntries:
        """``GET /v1/fitgpp/sessions``."""
        return await self._run(self.sync.list_fitgpp_sessions)

    async def create_fitgpp_session(self, spec: Union[CreateFitGppSession, Mapping[str, Any]]) -> FitGppView:
        """``POST /v1/fitgpp/sessions``."""
        return await self._run(self.sync.create_fitgpp_session, spec)

    async def get_fitgpp_session(self, session_id: str, audit: Optional[int] = None) -> FitGppView:
        """``GET /v1/fitgpp/sessions/{id}`` (``?audit=N`` with ``audit``)."""
        return await self._run(self.sync.get_fitgpp_session, session_id, audit)

    async def delete_fitgpp_session(self, session_id: str) -> None:
        """``DELETE /v1/fitgpp/sessions/{id}``."""
        await self._run(self.sync.delete_fitgpp_session, session_id)

    async def submit_fitgpp_job(self, session_id: str, job: Union[FitGppJob, Mapping[str, Any]]) -> FitGppPass:
        """``POST /v1/fitgpp/sessions/{id}/jobs``."""
        return await self._run(self.sync.submit_fitgpp_job, session_id, job)

    async def advance_fitgpp_session(self, session_id: str, to: float) -> FitGppPass:
        """``POST /v1/fitgpp/sessions/{id}/advance``."""
        return await self._run(self.sync.advance_fitgpp_session, session_id, to)

    async def list_oasis_sessions(self) -> SessionEntries:
        """``GET /v1/oasis/sessions``."""
        return await self._run(self.sync.list_oasis_sessions)

    async def create_oasis_session(self, spec: Union[CreateOasisSession, Mapping[str, Any]]) -> OasisView:
        """``POST /v1/oasis/sessions``."""
        return await self._run(self.sync.create_oasis_session, spec)

    async def get_oasis_session(self, session_id: str, audit: Optional[int] = None) -> OasisView:
        """``GET /v1/oasis/sessions/{id}`` (``?audit=N`` with ``audit``)."""
        return await self._run(self.sync.get_oasis_session, session_id, audit)

    async def delete_oasis_session(self, session_id: str) -> None:
        """``DELETE /v1/oasis/sessions/{id}``."""
        await self._run(self.sync.delete_oasis_session, session_id)

    async def submit_oasis_job(self, session_id: str, job: Union[OasisJob, Mapping[str, Any]]) -> OasisDecision:
        """``POST /v1/oasis/sessions/{id}/jobs``."""
        return await self._run(self.sync.submit_oasis_job, session_id, job)

    async def index(self) -> Dict[str, Any]:
        """``GET /``."""
        return await self._run(self.sync.index)

    async def healthz(self) -> Health:
        """``GET /healthz``."""
        return await self._run(self.sync.healthz)

    async def metrics(self) -> str:
        """``GET /metrics``."""
        return await self._run(self.sync.metrics)

    async def backup(self) -> bytes:
        """``GET /v1/admin/backup``: the database, in memory."""
        return await self._run(self.sync.backup)

    async def backup_to(self, path: Union[str, "os.PathLike[str]"]) -> int:
        """``GET /v1/admin/backup`` streamed to the file ``path``; its size in bytes."""
        return await self._run(self.sync.backup_to, path)

    async def openapi(self) -> Dict[str, Any]:
        """``GET /openapi.json``."""
        return await self._run(self.sync.openapi)
