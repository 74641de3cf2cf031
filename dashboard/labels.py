"""Relevance labels, by id, in a SQLite file.

A label is one reviewer's judgment of one memory returned for one message. Rows
hold ids and the score the reviewer saw, never memory or query text unless the
user opted in (``query_text`` / ``memory_text`` stay NULL otherwise). Writes are
last-write-wins upserts committed at once; the value a relabel replaces is kept in
``label_history``.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

LABEL_VALUES = ("relevant", "not_relevant")
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

SCHEMA = """
CREATE TABLE IF NOT EXISTS labels (
    message_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    rank INTEGER,
    score REAL,
    label TEXT NOT NULL CHECK (label IN ('relevant', 'not_relevant')),
    store TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    query_text TEXT,
    memory_text TEXT,
    PRIMARY KEY (message_id, memory_id, reviewer)
);
CREATE TABLE IF NOT EXISTS label_history (
    message_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    old_label TEXT,
    new_label TEXT,
    changed_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS labels_store ON labels(store, reviewer, updated_at);
"""


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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class LabelStore:
    """Labels in one SQLite file (WAL, so readers never block the writer)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # an acknowledged label survives a crash
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()

    def upsert(
        self,
        *,
        message_id: str,
        memory_id: str,
        label: str,
        reviewer: str,
        store: str,
        rank: int | None = None,
        score: float | None = None,
        query_text: str | None = None,
        memory_text: str | None = None,
    ) -> Label:
        if label not in LABEL_VALUES:
            raise ValueError(f"label must be one of {', '.join(LABEL_VALUES)}, got {label!r}")
        if not reviewer or not reviewer.strip():
            raise ValueError("reviewer is required")
        now = _now()
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                old = self._db.execute(
                    "SELECT label FROM labels WHERE message_id=? AND memory_id=? AND reviewer=?",
                    (message_id, memory_id, reviewer),
                ).fetchone()
                self._db.execute(
                    """INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                       ON CONFLICT (message_id, memory_id, reviewer) DO UPDATE SET
                         rank=excluded.rank, score=excluded.score, label=excluded.label,
                         store=excluded.store, updated_at=excluded.updated_at,
                         query_text=excluded.query_text, memory_text=excluded.memory_text""",
                    (message_id, memory_id, reviewer, rank, score, label, store, now, now, query_text, memory_text),
                )
                if old is not None and old[0] != label:
                    self._db.execute(
                        "INSERT INTO label_history VALUES (?, ?, ?, ?, ?, ?)",
                        (message_id, memory_id, reviewer, old[0], label, now),
                    )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return self.get(message_id, memory_id, reviewer)  # type: ignore[return-value]

    def delete(self, message_id: str, memory_id: str, reviewer: str) -> bool:
        """Remove one label (undo); the removal is recorded in the history."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            old = self._db.execute(
                "SELECT label FROM labels WHERE message_id=? AND memory_id=? AND reviewer=?",
                (message_id, memory_id, reviewer),
            ).fetchone()
            if old is not None:
                self._db.execute(
                    "DELETE FROM labels WHERE message_id=? AND memory_id=? AND reviewer=?",
                    (message_id, memory_id, reviewer),
                )
                self._db.execute(
                    "INSERT INTO label_history VALUES (?, ?, ?, ?, ?, ?)",
                    (message_id, memory_id, reviewer, old[0], None, _now()),
                )
            self._db.execute("COMMIT")
        return old is not None

    def get(self, message_id: str, memory_id: str, reviewer: str) -> Label | None:
        rows = self.labels(message_id=message_id, memory_id=memory_id, reviewer=reviewer)
        return rows[0] if rows else None

    def labels(
        self,
        *,
        store: str | None = None,
        reviewer: str | None = None,
        message_id: str | None = None,
        memory_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> list[Label]:
        where, args = [], []
        for column, value in (
            ("store", store),
            ("reviewer", reviewer),
            ("message_id", message_id),
            ("memory_id", memory_id),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if since:
            where.append("updated_at >= ?")
            args.append(since)
        if until:
            where.append("updated_at <= ?")
            args.append(until)
        names = [f.name for f in fields(Label)]
        sql = f"SELECT {', '.join(names)} FROM labels"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at, message_id, memory_id"
        with self._lock:
            return [Label(*row) for row in self._db.execute(sql, args).fetchall()]

    def history(self, message_id: str, memory_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT reviewer, old_label, new_label, changed_at FROM label_history "
                "WHERE message_id=? AND memory_id=? ORDER BY rowid",
                (message_id, memory_id),
            ).fetchall()
        return [dict(zip(("reviewer", "old_label", "new_label", "changed_at"), r)) for r in rows]

    def stores(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT DISTINCT store FROM labels ORDER BY store")]

    def reviewers(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT DISTINCT reviewer FROM labels ORDER BY reviewer")]

    def close(self) -> None:
        self._db.close()


def label_dicts(labels: list[Label]) -> list[dict[str, Any]]:
    return [asdict(label) for label in labels]
