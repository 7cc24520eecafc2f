"""A client for the Arbiter allocation service (``arbiter serve``).

>>> from arbiter_client import Client
>>> client = Client("http://127.0.0.1:8080")          # doctest: +SKIP
>>> client.next_round("demo").placements               # doctest: +SKIP

:class:`Client` is synchronous, :class:`AsyncClient` its asyncio counterpart; the models are in
:mod:`arbiter_client.models` (also importable from here); errors in :mod:`arbiter_client.errors`.
Standard library only.
"""

from .aio import AsyncClient
from .client import Client, segment
from .errors import (
    ArbiterClientError,
    ArbiterConnectionError,
    ArbiterError,
    ArbiterProtocolError,
    ArbiterTimeout,
    BadRequest,
    Conflict,
    Forbidden,
    IgnoredFieldsWarning,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    QuotaExceeded,
    RateLimited,
    ServerError,
    SolveTimeout,
    StorageFull,
    Unauthorized,
    Unavailable,
    Unprocessable,
)
from .models import *  # noqa: F401,F403  (the models, listed in models.__all__)
from .models import __all__ as _model_names
from .transport import Answer
from .version import VERSION

__version__ = VERSION

__all__ = [
    "Answer",
    "ArbiterClientError",
    "ArbiterConnectionError",
    "ArbiterError",
    "ArbiterProtocolError",
    "ArbiterTimeout",
    "AsyncClient",
    "BadRequest",
    "Client",
    "Conflict",
    "Forbidden",
    "IgnoredFieldsWarning",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "QuotaExceeded",
    "RateLimited",
    "ServerError",
    "SolveTimeout",
    "StorageFull",
    "Unauthorized",
    "Unavailable",
    "Unprocessable",
    "segment",
    *_model_names,
]
