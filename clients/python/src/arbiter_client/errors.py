"""What the client raises.

Every answer outside 2xx raises :class:`ArbiterError` (or its subclass for the status), carrying
the error object's ``code``, ``message``, ``field`` and ``jobs``; an error body that is not the
error object (a proxy's HTML page, say) still raises, with its text as the message. A server
that cannot be reached raises :class:`ArbiterConnectionError`.
"""

import email.utils
import json
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple, Type

#: Longest error body text kept as the message when the body is not the error object.
_MAX_TEXT = 2000


class ArbiterClientError(Exception):
    """Base of every error the client raises."""


class ArbiterConnectionError(ArbiterClientError, ConnectionError):
    """The server could not be reached, or the connection failed before a full answer."""


class ArbiterTimeout(ArbiterConnectionError, TimeoutError):
    """No answer within the client's ``timeout``."""


class ArbiterProtocolError(ArbiterClientError):
    """A 2xx answer whose body is not what the endpoint documents (not JSON, wrong shape)."""


class IgnoredFieldsWarning(UserWarning):
    """The server ignored fields of a body that it does not know (a misspelt key of a dict body,
    say); the answer's ``ignored_fields`` names them. A warning, not an error: the contract lets
    fields be added, so an older server ignores a newer client's fields."""


class ArbiterError(ArbiterClientError):
    """An answer outside 2xx, with the error object of the contract.

    ``status`` is the HTTP status; ``code``, ``message``, ``field`` and ``jobs`` come from
    ``{"error": {...}}`` (``code`` and ``field`` are ``None`` when the body had none);
    ``retry_after`` is the ``Retry-After`` header in seconds, if any; ``request_id`` the
    ``x-request-id`` the server logged the request under; ``body`` the raw text; ``headers`` the
    answer's headers, by lower-case name (``www-authenticate`` on a 401, say).
    """

    def __init__(
        self,
        status: int,
        code: Optional[str],
        message: str,
        field: Optional[str] = None,
        jobs: Optional[List[str]] = None,
        retry_after: Optional[float] = None,
        request_id: Optional[str] = None,
        body: str = "",
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.jobs = jobs or []
        self.retry_after = retry_after
        self.request_id = request_id
        self.body = body
        self.headers: Dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"HTTP {self.status}"
        if self.code:
            text += f" {self.code}"
        text += f": {self.message}"
        if self.field:
            text += f" (field {self.field})"
        if self.jobs:
            text += f" (jobs {', '.join(self.jobs)})"
        return text


class BadRequest(ArbiterError):
    """400: malformed or invalid input; ``field`` names the JSON path when the server knows it."""


class Unauthorized(ArbiterError):
    """401 ``unauthorized``: no token, or one the server does not know or has revoked (its
    ``WWW-Authenticate`` header is in ``headers``)."""


class Forbidden(ArbiterError):
    """403 ``forbidden``: the token is valid but lacks the scope the operation needs."""


class QuotaExceeded(Forbidden):
    """403 ``quota_exceeded``: the tenant owns as many sessions, or the session holds as many
    jobs, as its quota allows; delete or remove some first."""


class NotFound(ArbiterError):
    """404: unknown session, job or worker, or no such route (``not_found``)."""


class MethodNotAllowed(ArbiterError):
    """405: the route exists but does not take this method."""


class Conflict(ArbiterError):
    """409: the request conflicts with the resource's state."""


class PayloadTooLarge(ArbiterError):
    """413: the body is above the server's ``--max-body-bytes``."""


class Unprocessable(ArbiterError):
    """422: ``infeasible`` (``jobs`` names the jobs) or ``unsupported``."""


class RateLimited(ArbiterError):
    """429: every solver busy and the queue full (``overloaded``), or the tenant's requests per
    second or concurrent solves used up (``rate_limited``); wait ``retry_after`` seconds and retry."""


class ServerError(ArbiterError):
    """5xx: the server failed (``solver_failed``, ``storage_failed``, ``internal``...)."""


class Unavailable(ServerError):
    """503: the server cannot take the request now; ``retry_after`` when it says."""


class StorageFull(Unavailable):
    """503 ``storage_full``: the server's database is full (its disk, or ``--db-max-bytes``);
    nothing was changed. Reads still work; retry the write after ``retry_after`` seconds, once
    room has been made."""


class SolveTimeout(ServerError):
    """504 ``timeout``: the solve budget ran out; the server keeps serving."""


_BY_STATUS: Dict[int, Type[ArbiterError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: PayloadTooLarge,
    422: Unprocessable,
    429: RateLimited,
    503: Unavailable,
    504: SolveTimeout,
}


#: Codes with a class narrower than their status's.
_BY_CODE: Dict[Tuple[int, str], Type[ArbiterError]] = {
    (403, "quota_exceeded"): QuotaExceeded,
    (503, "storage_full"): StorageFull,
}


def error_class(status: int, code: Optional[str] = None) -> Type[ArbiterError]:
    """The exception class for an HTTP status outside 2xx and the error object's ``code``."""
    if code is not None and (status, code) in _BY_CODE:
        return _BY_CODE[(status, code)]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return ArbiterError


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """``Retry-After`` in seconds: a number of seconds or an HTTP date; ``None`` if unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def error_from_answer(status: int, reason: str, body: bytes, headers: Mapping[str, str]) -> ArbiterError:
    """The exception for an answer outside 2xx, from its status, body and headers."""
    text = body.decode("utf-8", errors="replace")
    code: Optional[str] = None
    field: Optional[str] = None
    jobs: List[str] = []
    message = text.strip()[:_MAX_TEXT] or reason or "no body"
    obj = _error_object(text)
    if obj is not None:
        code = obj.get("code") if isinstance(obj.get("code"), str) else None
        if isinstance(obj.get("message"), str):
            message = obj["message"]
        field = obj.get("field") if isinstance(obj.get("field"), str) else None
        if isinstance(obj.get("jobs"), list):
            jobs = [str(j) for j in obj["jobs"]]
    lowered = {k.lower(): v for k, v in headers.items()}
    return error_class(status, code)(
        status,
        code,
        message,
        field=field,
        jobs=jobs,
        retry_after=parse_retry_after(lowered.get("retry-after")),
        request_id=lowered.get("x-request-id"),
        body=text,
        headers=lowered,
    )


def _error_object(text: str) -> Optional[Dict[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        return data["error"]
    return None
