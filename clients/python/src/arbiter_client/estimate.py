"""The throughput estimator's request and answer (``POST /v1/throughputs/estimate``)."""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .wire import WireModel


@dataclass
class PartialRow(WireModel):
    """A job's measured throughputs: alone by worker type, and beside reference jobs.

    ``scale_factor`` is a whole number of GPUs (1 or more; ``2.0`` is read as 2, ``2.5`` refused).
    """

    SCHEMA = "PartialRow"
    id: str
    scale_factor: Optional[float] = None
    throughput: Optional[Dict[str, float]] = None
    colocated: Optional[Dict[str, Dict[str, float]]] = None


@dataclass
class EstimateRequest(WireModel):
    """Partial rows and, optionally, the reference table in Gavel's format.

    ``reference`` maps a worker type to ``"('<model>', <scale factor>)"`` to
    ``{"null": steps/s alone, "<other>": [this, other]}``; without it the server's
    ``--reference-throughputs`` file is used.
    """

    SCHEMA = "EstimateRequest"
    jobs: List[PartialRow]
    reference: Optional[Dict[str, Any]] = None
    worker_types: Optional[List[str]] = None
    pairs: Optional[bool] = None
    rank: Optional[int] = None
    regularization: Optional[float] = None


@dataclass
class Entry(WireModel):
    """One completed throughput: the value, whether it was estimated, the expected error."""

    SCHEMA = "Entry"
    steps_per_second: float
    estimated: bool
    expected_relative_error: Optional[float] = None


@dataclass
class Fingerprint(WireModel):
    """The reference job type nearest to a row on its measured entries."""

    SCHEMA = "Fingerprint"
    job_type: str
    distance: float


@dataclass
class CompletedRow(WireModel):
    """A job's row with every entry filled in."""

    SCHEMA = "CompletedRow"
    id: str
    scale_factor: int
    throughput: Dict[str, Entry]
    colocated: Dict[str, Dict[str, Entry]]
    fingerprint: Fingerprint
    rank: int


@dataclass
class EstimateResponse(WireModel):
    """The completed rows, in the order posted."""

    SCHEMA = "EstimateResponse"
    jobs: List[CompletedRow]
