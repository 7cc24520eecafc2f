"""FitGpp sessions: nodes with cores, memory and GPUs under a FIFO queue and a preemption policy.

``/v1/fitgpp/sessions`` (``docs/fitgpp.md``). Time is the client's clock, in session seconds.
"""

from dataclasses import dataclass, field
from typing import List, Optional

from .audit import AuditView
from .wire import WireModel


@dataclass
class FitGppNodeGroup(WireModel):
    """``count`` identical nodes (1 when left out)."""

    SCHEMA = "FitGppNodeGroup"
    cpus: int
    memory_gb: int
    gpus: int
    count: Optional[int] = None


@dataclass
class CreateFitGppSession(WireModel):
    """``POST /v1/fitgpp/sessions``: the node groups and the preemption policy's settings.

    ``lambda`` is a Python keyword: the field is ``lambda_`` and is sent as ``lambda``.
    """

    SCHEMA = "CreateFitGppSession"
    nodes: List[FitGppNodeGroup]
    preemption: Optional[str] = None
    lambda_: Optional[float] = field(default=None, metadata={"wire": "lambda"})
    max_preemptions: Optional[int] = None
    random_fallback: Optional[bool] = None
    seed: Optional[int] = None


@dataclass
class FitGppJob(WireModel):
    """A job arriving at ``at`` (default: the session's time): ``kind`` is ``te`` or ``be``."""

    SCHEMA = "FitGppJob"
    id: str
    kind: str
    cpus: int
    memory_gb: int
    gpus: int
    duration_seconds: float
    grace_period_seconds: Optional[float] = None
    at: Optional[float] = None


@dataclass
class FitGppAdvance(WireModel):
    """``POST /v1/fitgpp/sessions/{id}/advance``: move the session's clock to ``to``."""

    SCHEMA = "FitGppAdvance"
    to: float


@dataclass
class FitGppResources(WireModel):
    """Cores, memory (GB) and GPUs."""

    SCHEMA = "FitGppResources"
    cpus: int
    memory_gb: int
    gpus: int


@dataclass
class FitGppNodeView(WireModel):
    """A node's capacity and what is free on it."""

    SCHEMA = "FitGppNodeView"
    capacity: FitGppResources
    free: FitGppResources


@dataclass
class FitGppJobView(WireModel):
    """A job's phase (``queued``, ``running``, ``grace``, ``reserved``, ``finished``) and times."""

    SCHEMA = "FitGppJobView"
    id: str
    kind: str
    phase: str
    arrival: float
    preemptions: int
    node: Optional[int] = None
    first_start: Optional[float] = None
    finish: Optional[float] = None
    slowdown: Optional[float] = None


@dataclass
class FitGppView(WireModel):
    """A FitGpp session as of its last acknowledged event (with ``audit`` when asked for)."""

    SCHEMA = "FitGppView"
    id: str
    created_at: float
    now: float
    preemption: str
    nodes: List[FitGppNodeView]
    queue: List[str]
    te_waiting: List[str]
    jobs: List[FitGppJobView]
    audit: Optional[AuditView] = None


@dataclass
class FitGppStarted(WireModel):
    """A job that started, and on which node."""

    SCHEMA = "FitGppStarted"
    job: str
    node: int


@dataclass
class FitGppPreemption(WireModel):
    """A BE job told to stop for a TE job; its resources free up at ``grace_deadline``."""

    SCHEMA = "FitGppPreemption"
    job: str
    node: int
    at: float
    grace_deadline: float
    for_job: str


@dataclass
class FitGppReserved(WireModel):
    """A TE job waiting for its victims' grace periods, and when it starts."""

    SCHEMA = "FitGppReserved"
    job: str
    node: int
    starts_at: float


@dataclass
class FitGppPass(WireModel):
    """What a job's arrival or a move of the clock did: starts, preemptions, reservations."""

    SCHEMA = "FitGppPass"
    now: float
    started: List[FitGppStarted]
    preemptions: List[FitGppPreemption]
    reserved: List[FitGppReserved]
