"""A store opened at an address a page's visitor typed: every failure is one message.

A failure's wording tells what listens at an address: "refused" for a closed port,
an HTTP status for a web server, a disconnect for something else. Offered to any
visitor, a URL field would map the server's network port by port. So when the
visitor's URL is not where the operator's settings point, each failure of the store
(opening it, querying it, any other call) becomes ``TYPED_ADDRESS_FAILED`` and the
details go to the server log only. The HTTP connectors do this in their own request
path (connectors/http/base.py); ``guarded_store`` does it around the stores that talk
through a client library (Qdrant, Chroma).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from connectors.base import TYPED_ADDRESS_FAILED, ConnectorError, MemoryStore, StoreUnavailable

log = logging.getLogger(__name__)


def _one_message(title: str, exc: ConnectorError) -> StoreUnavailable:
    log.warning("%s at a typed address: %s", title, exc)
    return StoreUnavailable(f"{title}: {TYPED_ADDRESS_FAILED}")


class TypedAddressStore:
    """The store, with each of its failures turned into the one message. Attributes
    are looked up on the store itself, so the optional capabilities (users, ...)
    are there exactly when the store has them."""

    def __init__(self, title: str, store: MemoryStore):
        self._title = title
        self._store = store

    def __getattr__(self, name: str) -> Any:
        try:
            value = getattr(self._store, name)  # a property may call the store
        except ConnectorError as exc:
            raise _one_message(self._title, exc) from None
        if not callable(value):
            return value

        @functools.wraps(value)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return value(*args, **kwargs)
            except ConnectorError as exc:
                raise _one_message(self._title, exc) from None

        return guarded


def guarded_store(title: str, open_store: Callable[[], MemoryStore]) -> MemoryStore:
    """``open_store()`` behind the one message, for an address a visitor typed."""
    try:
        store = open_store()
    except ConnectorError as exc:
        raise _one_message(title, exc) from None
    return TypedAddressStore(title, store)
