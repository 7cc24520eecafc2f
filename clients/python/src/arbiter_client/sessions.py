"""Sessions: a cluster run by a policy under the round-based mechanism (``/v1/sessions``).

The creation body (:class:`CreateSession`), what the server shows of a session, its jobs, its
installed allocation and each round's placements and leases, and the bodies of progress reports.
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Union

from .audit import AuditView
from .contract import ClusterSpec, EntitySpec, JobSpec, RealizabilityReport, RealizableReport
from .wire import WireModel

#: A pipeline stage: a name (``"las"``) or a one-entry object with its parameter
#: (``{"accept_x": 1.2}``).
Stage = Union[str, Dict[str, float]]


@dataclass
class CompositionRequest(WireModel):
    """A session's stages by name instead of an LP policy (``docs/pipeline.md``)."""

    SCHEMA = "CompositionRequest"
    admission: Optional[Stage] = None
    scheduling: Optional[Stage] = None
    placement: Optional[Stage] = None
    preemption: Optional[Stage] = None


@dataclass
class CreateSession(WireModel):
    """``POST /v1/sessions``: the cluster, a policy or a composition, jobs, the mechanism's knobs."""

    SCHEMA = "CreateSession"
    cluster: ClusterSpec
    policy: Optional[str] = None
    composition: Optional[CompositionRequest] = None
    heterogeneity_aware: Optional[bool] = None
    jobs: Optional[List[JobSpec]] = None
    entities: Optional[Dict[str, EntitySpec]] = None
    round_seconds: Optional[float] = None
    mode: Optional[str] = None
    work_conserving: Optional[bool] = None
    realizable: Optional[bool] = None
    tie_break: Optional[str] = None
    throughput_smoothing: Optional[float] = None
    resolve_threshold: Optional[float] = None
    max_deficit_rounds: Optional[float] = None
    max_solve_seconds: Optional[float] = None
    estimate_missing: Optional[bool] = None


@dataclass
class Progress(WireModel):
    """A job's progress report: steps done on a type since the last report, the measured steps/s,
    reported metrics, and optionally the report's number among the job's reports (``sequence``,
    increasing): a report numbered at or below the job's highest number so far is a retry and
    counts nothing, so a report whose answer was lost can be sent again with the same number."""

    SCHEMA = "Progress"
    worker_type: str
    steps: float
    throughput: float
    metrics: Optional[Dict[str, float]] = None
    sequence: Optional[int] = None


@dataclass
class WorkerTypeView(WireModel):
    """A worker type of a session's cluster: GPUs, healthy GPUs, servers."""

    SCHEMA = "WorkerTypeView"
    count: int
    healthy: int
    servers: int
    gpus_per_server: int


@dataclass
class ClusterView(WireModel):
    """A session's cluster, with the GPUs that failed (``v100/0/1``)."""

    SCHEMA = "ClusterView"
    worker_types: Dict[str, WorkerTypeView]
    failed_gpus: List[str]


@dataclass
class LeaseView(WireModel):
    """The GPUs a job holds this round."""

    SCHEMA = "LeaseView"
    worker_type: str
    gpus: List[str]


@dataclass
class PipelineJobView(WireModel):
    """A composed session's view of a job: admission, service attained, queueing, fair share."""

    SCHEMA = "PipelineJobView"
    admitted: bool
    attained_service_gpu_seconds: float
    queueing_seconds: float
    fair_share_gpu_seconds: float
    rho: float


@dataclass
class JobView(WireModel):
    """A job of a session: its allocation, the time it received and owes, its lease."""

    SCHEMA = "JobView"
    id: str
    scale_factor: int
    weight: float
    time_elapsed: float
    arrival: float
    throughput: Dict[str, float]
    allocation: Dict[str, float]
    received_seconds: Dict[str, float]
    total_received_seconds: Dict[str, float]
    received_fraction: Dict[str, float]
    deficit_seconds: Dict[str, float]
    unplaceable: List[str]
    preemptions: int
    steps_remaining: Optional[float] = None
    slo_seconds: Optional[float] = None
    entity: Optional[str] = None
    lease: Optional[LeaseView] = None
    estimated_throughput: Optional[Dict[str, float]] = None
    still_estimated: Optional[List[str]] = None
    profiling: Optional[List[str]] = None
    first_run: Optional[float] = None
    metrics: Optional[Dict[str, float]] = None
    progress_sequence: Optional[int] = None
    pipeline: Optional[PipelineJobView] = None
    #: In the answer to adding the job or reporting its progress only: fields the server ignored.
    ignored_fields: Optional[List[str]] = None


@dataclass
class JobList(WireModel):
    """Jobs, as ``PUT /v1/sessions/{id}/throughputs`` answers."""

    SCHEMA = "JobList"
    jobs: List[JobView]


@dataclass
class PercentilesView(WireModel):
    """Job completion time percentiles, in seconds."""

    SCHEMA = "PercentilesView"
    p50: float
    p95: float
    p99: float


@dataclass
class MetricsView(WireModel):
    """What a session achieved so far: JCT over removed jobs, responsiveness, preemptions."""

    SCHEMA = "MetricsView"
    completed_jobs: int
    average_jct_seconds: Optional[float] = None
    jct_percentiles_seconds: Optional[PercentilesView] = None
    average_responsiveness_seconds: Optional[float] = None
    preemptions_per_job: Optional[float] = None
    utilization: Optional[float] = None


@dataclass
class TenantView(WireModel):
    """A composed session's tenant and its long-term GPU-time fairness."""

    SCHEMA = "TenantView"
    name: str
    weight: float
    allocated_gpu_seconds: float
    fair_share_gpu_seconds: float
    rho: float
    rho_quota: float
    rho_over_time: List[List[float]]
    hours: int
    hours_below_share: int


@dataclass
class SessionView(WireModel):
    """A session: its settings, time, cluster, active jobs and metrics (and, when asked for with
    ``audit``, its owner and last events)."""

    SCHEMA = "SessionView"
    id: str
    policy: str
    heterogeneity_aware: bool
    mode: str
    round_seconds: float
    work_conserving: bool
    created_at: float
    time: float
    rounds: int
    stale: bool
    cluster: ClusterView
    jobs: List[JobView]
    metrics: MetricsView
    composition: Optional[str] = None
    tenants: Optional[List[TenantView]] = None
    audit: Optional[AuditView] = None
    #: In the answer to the creation only: fields of its body the server does not know, ignored.
    ignored_fields: Optional[List[str]] = None

    def job(self, job_id: str) -> JobView:
        """The active job with this id (``KeyError`` if there is none)."""
        for j in self.jobs:
            if j.id == job_id:
                return j
        raise KeyError(job_id)


@dataclass
class SessionSummary(WireModel):
    """A line of ``GET /v1/sessions``."""

    SCHEMA = "SessionSummary"
    id: str
    policy: str
    jobs: int
    rounds: int
    time: float
    created_at: float
    composition: Optional[str] = None


@dataclass
class SessionList(WireModel):
    """``GET /v1/sessions``: the sessions, oldest first."""

    SCHEMA = "SessionList"
    sessions: List[SessionSummary]


@dataclass
class AllocationView(WireModel):
    """A session's installed allocation, whether it is stale, and what each job received."""

    SCHEMA = "AllocationView"
    session: str
    policy: str
    stale: bool
    time: float
    rounds: int
    allocation: Dict[str, Dict[str, float]]
    effective_throughput: Dict[str, float]
    received_fraction: Dict[str, Dict[str, float]]
    realizable: RealizabilityReport
    realizable_solve: Optional[RealizableReport] = None
    tie_break: Optional[str] = None
    decomposition_skipped: Optional[str] = None


@dataclass
class PlacementView(WireModel):
    """Jobs placed together on GPUs of one type for a round."""

    SCHEMA = "PlacementView"
    jobs: List[str]
    worker_type: str
    gpus: List[str]


@dataclass
class JobRoundView(WireModel):
    """A job's part in a round: its lease change and the placement it runs in."""

    SCHEMA = "JobRoundView"
    lease: str
    placement: Optional[int] = None
    unplaceable: Optional[bool] = None


@dataclass
class RoundView(WireModel):
    """A round: its placements and every active job's lease (``started``, ``renewed``...)."""

    SCHEMA = "RoundView"
    session: str
    index: int
    start: float
    seconds: float
    allocation_recomputed: bool
    placements: List[PlacementView]
    jobs: Dict[str, JobRoundView]
    started: List[str]
    moved: List[str]
    preempted: List[str]

    def placement_of(self, job_id: str) -> Optional[PlacementView]:
        """The placement the job runs in this round, or ``None`` when it does not run."""
        job = self.jobs.get(job_id)
        if job is None or job.placement is None:
            return None
        return self.placements[job.placement]
