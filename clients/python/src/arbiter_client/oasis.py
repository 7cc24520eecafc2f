"""OASiS sessions: two pools of servers over a horizon of slots under OASiS's online admission.

``/v1/oasis/sessions`` (``docs/oasis.md``). Jobs arrive in slot order; each is admitted iff its
best schedule's utility exceeds the schedule's cost at prices that rise with use, and the answer
says why. A job's ``utility`` is a dict: ``{"kind": "constant", "value": ...}`` or
``{"kind": "sigmoid", "priority": ..., "decay": ..., "target": ...}``.
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .audit import AuditView
from .wire import WireModel


@dataclass
class OasisResources(WireModel):
    """GPUs, CPU cores, memory (GB) and NIC bandwidth (Mbit/s): a server's capacity or what one
    worker (parameter server) takes."""

    SCHEMA = "OasisResources"
    gpus: int
    cpus: int
    memory_gb: int
    bandwidth_mbps: int


@dataclass
class OasisCluster(WireModel):
    """The horizon (``slots`` of ``slot_seconds``) and the two pools' servers."""

    SCHEMA = "OasisCluster"
    slot_seconds: float
    slots: int
    worker_servers: List[OasisResources]
    ps_servers: List[OasisResources]


@dataclass
class OasisJob(WireModel):
    """A training job: ``epochs`` over ``chunks`` of ``minibatches_per_chunk`` mini-batches, what a
    worker and a parameter server take, and the utility of its completion time."""

    SCHEMA = "OasisJob"
    id: str
    arrival_slot: int
    epochs: int
    chunks: int
    minibatches_per_chunk: int
    minibatch_seconds: float
    gradient_mb: float
    worker: OasisResources
    parameter_server: OasisResources
    utility: Dict[str, Any]


@dataclass
class OasisPriceFunction(WireModel):
    """One pool's prices: ``lower`` (L) and ``upper`` (U) per GPU, core, GB and Mbit/s, and ``eta``."""

    SCHEMA = "OasisPriceFunction"
    lower: List[float]
    upper: List[float]
    eta: float


@dataclass
class OasisPrices(WireModel):
    """Both pools' price functions, as ``arbiter oasis`` prints them."""

    SCHEMA = "OasisPrices"
    workers: OasisPriceFunction
    parameter_servers: OasisPriceFunction
    # Which of the four resources jobs demand in each pool (only those count in the
    # competitive bound); all four when left out.
    demanded_by_workers: Optional[List[bool]] = None
    demanded_by_ps: Optional[List[bool]] = None


@dataclass
class CreateOasisSession(WireModel):
    """``POST /v1/oasis/sessions``: the cluster, and ``prices`` or ``expected_jobs`` to estimate
    them from (with ``lowest``, ``u``, ``l``)."""

    SCHEMA = "CreateOasisSession"
    cluster: OasisCluster
    prices: Optional[OasisPrices] = None
    expected_jobs: Optional[List[OasisJob]] = None
    lowest: Optional[str] = None
    u: Optional[float] = None
    l: Optional[float] = None  # noqa: E741  (the paper's name)


@dataclass
class OasisPlacement(WireModel):
    """``count`` workers (parameter servers) on ``server``, each at ``unit_price``."""

    SCHEMA = "OasisPlacement"
    server: int
    count: int
    unit_price: float


@dataclass
class OasisSlot(WireModel):
    """Where a schedule runs in one slot."""

    SCHEMA = "OasisSlot"
    slot: int
    workers: List[OasisPlacement]
    parameter_servers: List[OasisPlacement]


@dataclass
class OasisSchedule(WireModel):
    """A job's schedule: the slots with workers, the last one its completion."""

    SCHEMA = "OasisSchedule"
    completion_slot: int
    slots: List[OasisSlot]


@dataclass
class OasisDecision(WireModel):
    """OASiS's decision on a job and why (``payoff`` is None when nothing finishes in the horizon)."""

    SCHEMA = "OasisDecision"
    job: str
    arrival_slot: int
    admitted: bool
    utility: float
    cost: float
    explanation: str
    payoff: Optional[float] = None
    schedule: Optional[OasisSchedule] = None


@dataclass
class OasisSlotUsage(WireModel):
    """Each pool's committed resources, summed over its servers, in one slot."""

    SCHEMA = "OasisSlotUsage"
    slot: int
    workers: OasisResources
    parameter_servers: OasisResources


@dataclass
class SessionEntry(WireModel):
    """A FitGpp or OASiS session in a list: its id, creation time and jobs submitted."""

    SCHEMA = "SessionEntry"
    id: str
    created_at: float
    jobs: int


@dataclass
class SessionEntries(WireModel):
    """``GET /v1/fitgpp/sessions``, ``GET /v1/oasis/sessions``: the sessions the caller may see."""

    SCHEMA = "SessionEntries"
    sessions: List[SessionEntry]


@dataclass
class OasisView(WireModel):
    """An OASiS session as of its last acknowledged job (with ``audit`` when asked for)."""

    SCHEMA = "OasisView"
    id: str
    created_at: float
    slot: int
    slots: int
    prices: OasisPrices
    competitive_ratio_bound: float
    admitted: int
    rejected: int
    total_utility: float
    decisions: List[OasisDecision]
    usage: List[OasisSlotUsage]
    audit: Optional[AuditView] = None
