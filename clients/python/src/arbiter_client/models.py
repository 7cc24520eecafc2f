"""Every model of the API in one namespace: the contract, the estimator, sessions, FitGpp, OASiS,
the Kubernetes extender, the audit, health.

Each is a dataclass with ``from_dict`` and ``to_dict`` (see :mod:`.wire`) following the OpenAPI
schema named by its ``SCHEMA``.
"""

from .audit import AuditEvent, AuditView
from .contract import (
    ClusterSpec,
    ColocatedAllocation,
    ColocationSpec,
    EntitySpec,
    EstimatedColocation,
    JobLevel,
    JobSpec,
    MethodReport,
    PairStats,
    Partitioning,
    RealizabilityReport,
    RealizableReport,
    Request,
    Response,
    Shortfall,
    Stats,
    WorkerTypeSpec,
)
from .estimate import CompletedRow, Entry, EstimateRequest, EstimateResponse, Fingerprint, PartialRow
from .fitgpp import (
    CreateFitGppSession,
    FitGppAdvance,
    FitGppJob,
    FitGppJobView,
    FitGppNodeGroup,
    FitGppNodeView,
    FitGppPass,
    FitGppPreemption,
    FitGppReserved,
    FitGppResources,
    FitGppStarted,
    FitGppView,
)
from .health import Health
from .oasis import (
    CreateOasisSession,
    OasisCluster,
    OasisDecision,
    OasisJob,
    OasisPlacement,
    OasisPriceFunction,
    OasisPrices,
    OasisResources,
    OasisSchedule,
    OasisSlot,
    OasisSlotUsage,
    OasisView,
    SessionEntries,
    SessionEntry,
)
from .k8s import (
    BindingList,
    Eviction,
    EvictionList,
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
    MetaPod,
    MetaVictims,
    PodBinding,
    Victims,
)
from .sessions import (
    AllocationView,
    ClusterView,
    CompositionRequest,
    CreateSession,
    JobList,
    JobRoundView,
    JobView,
    LeaseView,
    MetricsView,
    PercentilesView,
    PipelineJobView,
    PlacementView,
    Progress,
    RoundView,
    SessionList,
    SessionSummary,
    SessionView,
    Stage,
    TenantView,
    WorkerTypeView,
)
from .wire import WireFormatError, WireModel

#: Every model class, for code that walks them (the tests compare them with the OpenAPI schemas).
ALL_MODELS = [
    value
    for value in list(globals().values())
    if isinstance(value, type) and issubclass(value, WireModel) and value is not WireModel
]

__all__ = sorted(name for name, value in list(globals().items()) if value in ALL_MODELS) + [
    "ALL_MODELS",
    "Stage",
    "WireFormatError",
    "WireModel",
]
