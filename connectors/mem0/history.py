"""What Mem0 did to a memory on its way into the store: its write history.

Mem0 records every write in a SQLite history table (``history_db_path`` in its
config): ADD with the new text, UPDATE with the old and the new text (with
``infer=True`` this is how "Likes cheese pizza" becomes "Loves cheese pizza"),
DELETE with the old text. ``Memory.history(memory_id)`` returns one memory's
events; to find what happened to a memory the reviewer expected but cannot find,
``events_of_kinds`` reads the UPDATE and DELETE events of every memory, from a
read-only connection to the same file. The history table holds no user id, so
those events are not limited to one user.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from connectors.base import HistoryEvent, StoreUnavailable, as_datetime

HISTORY_SCAN_LIMIT = 50_000


def event_from_row(row: dict[str, Any]) -> HistoryEvent:
    stamp = row.get("updated_at") or row.get("created_at")
    return HistoryEvent(
        memory_id=str(row.get("memory_id")),
        event=str(row.get("event") or "").upper(),
        old_text=row.get("old_memory"),
        new_text=row.get("new_memory"),
        at=as_datetime(stamp) if isinstance(stamp, str) else None,
    )


def memory_history(memory: Any, memory_id: str) -> list[HistoryEvent]:
    """One memory's events, oldest first, through Mem0's own ``Memory.history``."""
    try:
        rows = memory.history(memory_id)
    except Exception as exc:
        raise StoreUnavailable(f"Mem0 history failed: {type(exc).__name__}: {exc}") from exc
    return [event_from_row(row) for row in rows or []]


def history_path(memory: Any) -> str | None:
    path = getattr(getattr(memory, "config", None), "history_db_path", None)
    return None if not path or path == ":memory:" else str(path)


def events_of_kinds(memory: Any, kinds: tuple[str, ...] = ("UPDATE", "DELETE"), limit: int = HISTORY_SCAN_LIMIT) -> list[HistoryEvent]:
    """Every event of these kinds, newest first, read from Mem0's history file
    without writing to it (SQLite opened read-only)."""
    path = history_path(memory)
    if path is None or not Path(path).exists():
        raise StoreUnavailable("Mem0 keeps no history file for this config (history_db_path), so its writes cannot be read")
    placeholders = ",".join("?" for _ in kinds)
    try:
        connection = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
        try:
            cursor = connection.execute(
                "SELECT memory_id, event, old_memory, new_memory, created_at, updated_at FROM history "
                f"WHERE upper(event) IN ({placeholders}) ORDER BY COALESCE(updated_at, created_at) DESC LIMIT ?",
                (*[k.upper() for k in kinds], int(limit)),
            )
            names = [d[0] for d in cursor.description]
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"Cannot read Mem0's history file {path}: {exc}") from exc
    return [event_from_row(row) for row in rows]
