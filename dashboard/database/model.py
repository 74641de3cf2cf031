"""What a label is: one reviewer's judgment of one memory returned for one message, by id.

Rows hold ids and the score the reviewer saw, never memory or query text unless the
user opted in (``query_text`` / ``memory_text`` stay NULL otherwise).
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, Protocol

from connectors.common.errors import MemlensError

RELEVANT, NOT_RELEVANT = "relevant", "not_relevant"
LABEL_VALUES = (RELEVANT, NOT_RELEVANT)  # the only labels a reviewer gives


def check_label(label: str) -> None:
    """ValueError unless `label` is one a reviewer or an adjudicator may give."""
    if label not in LABEL_VALUES:
        raise ValueError(f"label must be one of {', '.join(LABEL_VALUES)}, got {label!r}")

EXPORT_FIELDS = (
    "message_id",
    "memory_id",
    "rank",
    "score",
    "label",
    "reviewer",
    "store",
    "created_at",
    "updated_at",
)
TEXT_FIELDS = ("query_text", "memory_text")


class SqlConnection(Protocol):
    """What the repositories and the schema write their SQL on: the four operations of
    connection.py's pool (SQLite, or PostgreSQL in postgres.py). Named here, not
    imported from connection.py, because the pool creates the schema and the schema
    gathers the repositories' tables: importing the pool back would close a circle."""

    dialect: str  # "sqlite" or "postgresql"
    history_order: str  # the column that orders label_history by insertion

    def run(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]: ...

    def run_many(self, sql: str, rows: list[Sequence[Any]]) -> None: ...

    def transaction(self, lock_key: str | None = None) -> AbstractContextManager[None]: ...

    def reading(self) -> AbstractContextManager[None]: ...


class LabelStoreError(MemlensError):
    """The label database cannot be reached or refused a write; the page shows it."""

    names_command = False  # every command opens the app database alike: `memlens: ...`


def reviewer_key(name: str | None) -> str:
    """How two spellings of one reviewer compare, everywhere names are compared or
    counted: Unicode NFKC (a precomposed é and e + a combining accent are one letter,
    a full-width letter its plain one), spacing trimmed, case folded. Here, beside
    what a label is, so the app database's own look-ups by reviewer use it too."""
    folded = unicodedata.normalize("NFKC", " ".join(unicodedata.normalize("NFKC", name or "").split())).casefold()
    return unicodedata.normalize("NFKC", folded)  # folding can leave a sequence NFKC composes


def distinct_reviewers(names: Iterable[str]) -> list[str]:
    """Each reviewer once, in the order first met, however the name was typed: the
    first spelling stands for the rest (compared as ``reviewer_key`` compares)."""
    first: dict[str, str] = {}
    for name in names:
        first.setdefault(reviewer_key(name), name)
    return list(first.values())


def of_reviewer(labels: list[Label], reviewer: str | None) -> list[Label]:
    """The labels of `reviewer` under any spelling of the name (all when None). Names
    are stored as typed and compared here, after the query: NFKC and case folding are
    not something SQLite and PostgreSQL compute alike, so an SQL `=` would split one
    person in two."""
    if reviewer is None:
        return labels
    key = reviewer_key(reviewer)
    return [label for label in labels if reviewer_key(label.reviewer) == key]


@dataclass
class Label:
    message_id: str
    memory_id: str
    rank: int | None
    score: float | None
    label: str
    reviewer: str
    store: str
    created_at: str
    updated_at: str
    query_text: str | None = None
    memory_text: str | None = None

    def export_row(self, include_text: bool = False) -> dict[str, Any]:
        row = {name: getattr(self, name) for name in EXPORT_FIELDS}
        if include_text:
            row.update({name: getattr(self, name) for name in TEXT_FIELDS})
        return row


def message_id(query: str, user_id: str | None, store: str) -> str:
    """A stable id for a live query: the same text, user and store give the same id,
    so relabelling a re-run query updates instead of duplicating."""
    blob = "\x1f".join([store, user_id or "", " ".join(query.split())])
    return "live-" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


LABEL_COLUMNS = [f.name for f in fields(Label)]
