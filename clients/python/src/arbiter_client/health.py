"""``GET /healthz``: liveness and load, from the server's counters."""

from dataclasses import dataclass

from .wire import WireModel


@dataclass
class Health(WireModel):
    """The server's version, uptime, sessions held and solves running and queued."""

    SCHEMA = "Health"
    status: str
    version: str
    uptime_seconds: float
    sessions: int
    fitgpp_sessions: int
    oasis_sessions: int
    solves_running: int
    solves_queued: int
    max_concurrent_solves: int
