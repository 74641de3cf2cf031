"""What the vector-database connectors (Qdrant, Chroma, and any like them) share.

A vector database stores a memory as a point: the database's own id, a vector, and a
payload (Qdrant) or metadata (Chroma) of key/value pairs. Which payload keys hold the
memory's id, text, creation time and user differs from one collection to the next, so
it is configured, and the same four settings map a point to a memory everywhere:

    fields = PayloadFields.from_options(id_field="uid", text_field="body")
    fields.memory_id(point_id, payload)   # payload["uid"], else the database's own id
    fields.text(payload)                  # payload["body"] as text ("" when absent)
    fields.created_at(payload)            # parsed with as_datetime (ISO text or epoch)
    fields.user(payload)                  # payload["user_id"]

Also shared: ``call_store`` runs one call of the database's client library and turns
its failure into the connector error a page shows, and ``folder_or_url`` is the check a
registry factory makes on its path and URL settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from connectors.base import ConnectorError, NotFound, StoreUnavailable, as_datetime
from connectors.common.failures import failure_kind, library_error

T = TypeVar("T")


@dataclass(frozen=True)
class PayloadFields:
    """Which payload keys hold a memory's fields. ``id_field`` None: the database's
    own point id is the memory id; ``created_at_field`` None: no creation time."""

    id_field: str | None = None
    text_field: str = "text"
    created_at_field: str | None = "created_at"
    user_field: str = "user_id"

    @classmethod
    def from_options(
        cls,
        *,
        id_field: str | None = None,
        text_field: str | None = "text",
        created_at_field: str | None = "created_at",
        user_field: str | None = "user_id",
        default_text_field: str = "text",
    ) -> PayloadFields:
        """From a factory's settings, where an empty text box means "not set"."""
        return cls(
            id_field=id_field or None,
            text_field=text_field or default_text_field,
            created_at_field=created_at_field or None,
            user_field=user_field or "user_id",
        )

    def memory_id(self, point_id: Any, payload: Mapping[str, Any]) -> str:
        if self.id_field and payload.get(self.id_field) is not None:
            return str(payload[self.id_field])
        return str(point_id)

    def text(self, payload: Mapping[str, Any]) -> str:
        value = payload.get(self.text_field)
        return "" if value is None else str(value)

    def created_at(self, payload: Mapping[str, Any]) -> datetime | None:
        return as_datetime(payload.get(self.created_at_field)) if self.created_at_field else None

    def user(self, payload: Mapping[str, Any]) -> Any:
        """The payload's user value as stored (usually text; None when absent)."""
        return payload.get(self.user_field)


def call_store(title: str, collection: str, location: str, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, one call of a client library, with its failure turned
    into a ConnectorError naming the store (`title`), the `collection`, where it is
    (`location`: folder or URL) and the operation (`what`): a timeout is StoreTimeout
    and a refused connection StoreUnavailable, told by the exception's type
    (connectors/common/failures.py); a missing collection NotFound; anything else
    BadResponse. A ConnectorError raised inside passes through unchanged."""
    try:
        return fn(*args, **kwargs)
    except ConnectorError:
        raise
    except Exception as exc:
        text = str(exc).lower()
        if failure_kind(exc) is None and "not found" in text and "collection" in text:
            # Qdrant's local mode says so only in a ValueError's text
            raise NotFound(f"{title}: no collection {collection!r} at {location}") from exc
        raise library_error(exc, store=title, what=f"{what} on {collection!r}", location=location) from exc


def folder_or_url(
    title: str, path: str | None, url: str | None, *, marker: str, kind: str
) -> tuple[str | None, str | None]:
    """(path, url) for a store factory: a local folder wins over a URL when both are
    given. A folder that does not exist, or that lacks ``marker`` (the file the
    library keeps in every folder it made), is StoreUnavailable before the library
    sees it: opening a folder writes lock and metadata files into it, and memlens
    writes nothing into a folder that is not already such a store."""
    if path:
        folder = Path(path).expanduser()
        if not folder.exists():
            raise StoreUnavailable(f"No {title} folder at {path}")
        if not (folder / marker).is_file():
            raise StoreUnavailable(
                f"{path} is not a {title} {kind} (it has no {marker}); nothing was written into it"
            )
    return path or None, None if path else (url or None)
