"""A session's audit: who owns it, which token created it, and its last events with their tokens.

``GET /v1/sessions/{id}?audit=N`` and ``GET /v1/fitgpp/sessions/{id}?audit=N`` add it to the view
as ``audit``. Token ids only, never a secret; ``None`` where the server runs without tokens.
"""

from dataclasses import dataclass
from typing import List, Optional

from .wire import WireModel


@dataclass
class AuditEvent(WireModel):
    """One stored event: its number in the session, kind, time stored and the token that made it."""

    SCHEMA = "AuditEvent"
    seq: int
    kind: str
    at: float
    token_id: Optional[str] = None


@dataclass
class AuditView(WireModel):
    """The tenant owning a session, the token that created it, its last events, oldest first."""

    SCHEMA = "AuditView"
    events: List[AuditEvent]
    owner: Optional[str] = None
    created_by: Optional[str] = None
