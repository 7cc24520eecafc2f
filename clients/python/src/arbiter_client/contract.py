"""The allocation contract: a request (cluster, jobs, policy) and its response.

The same shapes as ``POST /v1/allocations`` and ``arbiter solve`` (the OpenAPI document's
``Request``, ``Response`` and the schemas they hold). Fields are the wire names; a field that
the contract lets a client leave out defaults to ``None`` and is then not sent.
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .wire import WireModel


@dataclass
class WorkerTypeSpec(WireModel):
    """One accelerator type of the cluster: how many GPUs, how they sit on servers, their price."""

    SCHEMA = "WorkerTypeSpec"
    count: float
    gpus_per_server: Optional[float] = None
    cost_per_hour: Optional[float] = None


@dataclass
class ClusterSpec(WireModel):
    """The cluster: its worker types by name (``v100``, ``k80``...)."""

    SCHEMA = "ClusterSpec"
    worker_types: Dict[str, WorkerTypeSpec]


@dataclass
class JobSpec(WireModel):
    """A training job: its throughput (steps/s) on each worker type and what the policies read.

    ``scale_factor`` is a whole number of GPUs (1 or more; ``2.0`` is read as 2, ``2.5`` refused).
    ``estimated_throughput`` and ``profile`` are read by sessions only (``POST /v1/sessions`` and
    ``POST /v1/sessions/{id}/jobs``, ``docs/estimator.md``; ``POST /v1/allocations`` ignores
    them): the throughputs the client itself estimated, and whether the job runs once on each
    estimated type first.
    """

    SCHEMA = "JobSpec"
    id: str
    throughput: Optional[Dict[str, Optional[float]]] = None
    scale_factor: Optional[float] = None
    weight: Optional[float] = None
    steps_remaining: Optional[float] = None
    time_elapsed: Optional[float] = None
    isolated_time_elapsed: Optional[float] = None
    slo_seconds: Optional[float] = None
    entity: Optional[str] = None
    arrival: Optional[float] = None
    unconsolidated_throughput: Optional[Dict[str, Optional[float]]] = None
    estimated_throughput: Optional[Dict[str, float]] = None
    profile: Optional[bool] = None


@dataclass
class ColocationSpec(WireModel):
    """Two jobs that may share a GPU, with each one's throughput while paired, by worker type."""

    SCHEMA = "ColocationSpec"
    jobs: List[str]
    throughput: Optional[Dict[str, List[float]]] = None


@dataclass
class EntitySpec(WireModel):
    """An entity of ``hierarchical``: its weight, its intra-entity policy, its parent."""

    SCHEMA = "EntitySpec"
    weight: Optional[float] = None
    policy: Optional[str] = None
    parent: Optional[str] = None


@dataclass
class Request(WireModel):
    """The contract's request (``POST /v1/allocations``)."""

    SCHEMA = "Request"
    policy: str
    cluster: ClusterSpec
    jobs: List[JobSpec]
    heterogeneity_aware: Optional[bool] = None
    space_sharing: Optional[bool] = None
    colocations: Optional[List[ColocationSpec]] = None
    entities: Optional[Dict[str, EntitySpec]] = None
    max_solve_seconds: Optional[float] = None
    colocation_threshold: Optional[float] = None
    partitions: Optional[float] = None
    estimate_missing: Optional[bool] = None
    tie_break: Optional[str] = None
    realizable: Optional[bool] = None
    method: Optional[str] = None


@dataclass
class ColocatedAllocation(WireModel):
    """A colocated pair's fraction of time on each worker type."""

    SCHEMA = "ColocatedAllocation"
    jobs: List[str]
    allocation: Dict[str, float]


@dataclass
class JobLevel(WireModel):
    """Water-filling: a job's normalized throughput and the level it froze at."""

    SCHEMA = "JobLevel"
    normalized_throughput: float
    level: float
    iteration: int


@dataclass
class EstimatedColocation(WireModel):
    """A colocated throughput the estimator filled in."""

    SCHEMA = "EstimatedColocation"
    jobs: List[str]
    throughput: Dict[str, List[float]]


@dataclass
class PairStats(WireModel):
    """Space sharing: colocations offered, kept, used, and the threshold applied."""

    SCHEMA = "PairStats"
    offered: int
    kept: int
    used: int
    threshold: float


@dataclass
class Partitioning(WireModel):
    """How a partitioned (POP) solve split the problem."""

    SCHEMA = "Partitioning"
    partitions: int
    chosen: str
    jobs: List[int]
    slowest_seconds: float


@dataclass
class MethodReport(WireModel):
    """Which method solved a bottleneck policy, and why the decomposition fell back if it did."""

    SCHEMA = "MethodReport"
    method: str
    fallback: Optional[str] = None
    rounds: Optional[int] = None
    ambiguous_jobs: Optional[int] = None


@dataclass
class Shortfall(WireModel):
    """A (job, worker type) entry that rounds on whole GPUs cannot deliver in full; with
    ``colocated_with``, a colocated pair's time together (the job sharing the GPUs with ``job``)."""

    SCHEMA = "Shortfall"
    job: str
    worker_type: str
    requested: float
    deliverable: float
    colocated_with: Optional[str] = None


@dataclass
class RealizabilityReport(WireModel):
    """Whether rounds on whole GPUs can deliver the allocation, and how much of it."""

    SCHEMA = "RealizabilityReport"
    checked: bool
    certified: bool
    configurations: int
    lp_solves: int
    seconds: float
    reason: Optional[str] = None
    fraction: Optional[float] = None
    fraction_upper_bound: Optional[float] = None
    shortfall: Optional[List[Shortfall]] = None


@dataclass
class RealizableReport(WireModel):
    """With ``realizable``: whether the allocation is the policy's optimum over round
    configurations, and how far it is from the fractional optimum."""

    SCHEMA = "RealizableReport"
    applied: bool
    certified: bool
    fractional_was_realizable: bool
    configurations: int
    lp_solves: int
    seconds: float
    reason: Optional[str] = None
    fractional_objective: Optional[float] = None
    objective: Optional[float] = None
    relative_gap: Optional[float] = None
    tie_break_certified: Optional[bool] = None
    unplaceable: Optional[List[str]] = None


@dataclass
class Stats(WireModel):
    """How the response was computed: backend, time, LP solves and the methods used."""

    SCHEMA = "Stats"
    backend: str
    solve_seconds: float
    lp_solves: int
    tie_break: str
    iterations: Optional[int] = None
    pairs: Optional[PairStats] = None
    partitioning: Optional[Partitioning] = None
    method: Optional[MethodReport] = None
    tie_break_method: Optional[MethodReport] = None
    tie_break_skipped: Optional[str] = None
    realizable: Optional[RealizabilityReport] = None
    realizable_solve: Optional[RealizableReport] = None


@dataclass
class Response(WireModel):
    """The contract's response: ``allocation[job][worker type]`` and what follows from it."""

    SCHEMA = "Response"
    policy: str
    allocation: Dict[str, Dict[str, float]]
    colocated_allocation: List[ColocatedAllocation]
    effective_throughput: Dict[str, float]
    utilization: Dict[str, float]
    stats: Stats
    unconsolidated_allocation: Optional[Dict[str, Dict[str, float]]] = None
    objective: Optional[float] = None
    levels: Optional[Dict[str, JobLevel]] = None
    estimated_throughput: Optional[Dict[str, Dict[str, Any]]] = None
    estimated_colocations: Optional[List[EstimatedColocation]] = None
    #: Fields of the request the contract does not know, which were ignored (``jobs[0].wieght``).
    ignored_fields: Optional[List[str]] = None
