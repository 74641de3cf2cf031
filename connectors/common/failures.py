"""Which connector error a client library's failure is, told by the exception's type.

The connectors that call a client library (Qdrant, Chroma, LanceDB, a LangGraph store)
get that library's own exceptions, and libraries wrap the transport's: qdrant_client
raises ``ResponseHandlingException`` caused by ``httpx.ConnectError`` caused by
``ConnectionRefusedError``; chromadb raises a ``ValueError`` from the same httpx error.
So the error and every cause under it (``__cause__``, ``__context__``) are looked at,
and the first whose type says what happened decides:

    StoreTimeout       TimeoutError (socket.timeout is it), httpx.TimeoutException,
                       requests' Timeout, psycopg's QueryCanceled (a statement
                       timeout), an OSError with errno ETIMEDOUT
    StoreUnavailable   ConnectionError (refused, reset, aborted), httpx.NetworkError
                       (ConnectError, ReadError, ...), requests' ConnectionError,
                       psycopg.OperationalError, socket.gaierror (DNS), an OSError
                       with a network errno (ECONNREFUSED, EHOSTUNREACH, ...)

Anything else is the store answering with something memlens cannot use: BadResponse.
The message text of a library's exception is never what decides.
"""

from __future__ import annotations

import copy
import errno
import importlib
import socket
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import httpx

from connectors.base import BadResponse, ConnectorError, StoreTimeout, StoreUnavailable
from connectors.common.redaction import redact_text, shorten, terminal_line

T = TypeVar("T")

NETWORK_ERRNOS = {
    errno.ECONNREFUSED,
    errno.ECONNRESET,
    errno.ECONNABORTED,
    errno.EHOSTUNREACH,
    errno.ENETUNREACH,
    errno.ENETDOWN,
    errno.EHOSTDOWN,
    errno.EPIPE,
}


def _optional(module: str, *names: str) -> tuple[type[BaseException], ...]:
    """Exception types of a library that may not be installed (an optional extra)."""
    try:
        loaded = importlib.import_module(module)
    except ImportError:
        return ()
    return tuple(getattr(loaded, name) for name in names if isinstance(getattr(loaded, name, None), type))


def _timeout_types() -> tuple[type[BaseException], ...]:
    return (
        TimeoutError,
        httpx.TimeoutException,
        *_optional("requests.exceptions", "Timeout"),
        *_optional("psycopg.errors", "QueryCanceled"),  # a statement timeout; an OperationalError too
    )


def _unreachable_types() -> tuple[type[BaseException], ...]:
    return (
        ConnectionError,
        socket.gaierror,
        httpx.NetworkError,
        *_optional("requests.exceptions", "ConnectionError"),
        *_optional("psycopg", "OperationalError"),
    )


def causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then what caused it, and so on (each once)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def failure_kind(exc: BaseException) -> type[ConnectorError] | None:
    """StoreTimeout or StoreUnavailable when the type of `exc` or of one of its causes
    says the store timed out or could not be reached; None otherwise."""
    timeouts, unreachable = _timeout_types(), _unreachable_types()
    for cause in causes(exc):
        # A timeout first: requests' ConnectTimeout is both a Timeout and a ConnectionError.
        if isinstance(cause, timeouts) or (isinstance(cause, OSError) and cause.errno == errno.ETIMEDOUT):
            return StoreTimeout
        if isinstance(cause, unreachable) or (isinstance(cause, OSError) and cause.errno in NETWORK_ERRNOS):
            return StoreUnavailable
    return None


def library_error(exc: Exception, *, store: str, what: str, location: str | None = None) -> ConnectorError:
    """The error a page shows for a failed library call: `store` names the store
    ("Qdrant"), `what` the operation ("search on 'memories'"), `location` where it
    is (a URL or folder), when there is one."""
    own = next((cause for cause in causes(exc) if isinstance(cause, ConnectorError)), None)
    if own is not None:
        # memlens's outbound boundary said what happened inside the library's call
        # (qdrant_client wraps it in ResponseHandlingException): its message, as it is
        return copy.copy(own)
    kind, name = failure_kind(exc), type(exc).__name__
    if kind is StoreTimeout:
        return StoreTimeout(f"{store} {what}: timed out")
    if kind is StoreUnavailable:
        if location:
            return StoreUnavailable(f"{store} at {location} is unreachable ({name})")
        return StoreUnavailable(f"{store} {what}: unreachable ({name})")
    # redacted before the cut (a key straddling it would survive), then one terminal line:
    # a library quotes the server's answer, and a 401 may echo the key
    return BadResponse(f"{store} {what} failed: {name}: {terminal_line(shorten(redact_text(str(exc)), 300))}")


def call_library(store: str, what: str, location: str | None, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, one call of a client library, its failure turned into
    the connector error ``library_error`` names. A ConnectorError raised inside (a
    check of memlens's own) passes through unchanged."""
    try:
        return fn(*args, **kwargs)
    except ConnectorError:
        raise
    except Exception as exc:
        raise library_error(exc, store=store, what=what, location=location) from exc
