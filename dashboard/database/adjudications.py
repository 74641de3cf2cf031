"""Adjudications: a lead's final label for a pair the reviewers disagree on: ``db.adjudications``.

An adjudication is its own row (``adjudications``), apart from the reviewers'
labels, which it never changes: who decided, when, the label and a note. A pair has
one adjudication; deciding it again replaces it, and the replaced one is kept in
``label_history`` (reviewer ``adjudicator:<name>``), so who changed what and when
stays readable. How it is used: dashboard/labels/resolution.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dashboard.database.model import check_label, utc_now

if TYPE_CHECKING:
    from dashboard.database.model import SqlConnection

ADJUDICATION_TABLES = """
CREATE TABLE IF NOT EXISTS adjudications (
    message_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    label TEXT NOT NULL CHECK (label IN ('relevant', 'not_relevant')),
    adjudicator TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    session TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (message_id, memory_id)
);
"""
HISTORY_PREFIX = "adjudicator:"  # how an adjudication's change reads in label_history


@dataclass(frozen=True)
class Adjudication:
    message_id: str
    memory_id: str
    label: str
    adjudicator: str
    note: str
    session: str | None
    created_at: str


_COLUMNS = "message_id, memory_id, label, adjudicator, note, session, created_at"


class AdjudicationRepository:
    """``db.adjudications``: the ``adjudications`` table (the change it makes is
    recorded in ``label_history``, read through ``db.labels.changes``)."""

    def __init__(self, conn: SqlConnection):
        self.conn = conn

    def save(
        self,
        *,
        message_id: str,
        memory_id: str,
        label: str,
        adjudicator: str,
        note: str = "",
        session: str | None = None,
    ) -> Adjudication:
        """Set the pair's final label. A note is required: the next reader needs the reason."""
        check_label(label)
        if not (adjudicator or "").strip():
            raise ValueError("an adjudication needs the adjudicator's name")
        if not (note or "").strip():
            raise ValueError("an adjudication needs a note saying why")
        now = utc_now()
        key = (message_id, memory_id)
        with self.conn.transaction(lock_key="adjudication\x1f" + "\x1f".join(key)):
            old = self.conn.run("SELECT label FROM adjudications WHERE message_id=? AND memory_id=?", key)
            self.conn.run("DELETE FROM adjudications WHERE message_id=? AND memory_id=?", key)
            self.conn.run(
                f"INSERT INTO adjudications ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*key, label, adjudicator.strip(), note.strip(), session, now),
            )
            self.conn.run(
                "INSERT INTO label_history (message_id, memory_id, reviewer, old_label, new_label, changed_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (*key, HISTORY_PREFIX + adjudicator.strip(), old[0][0] if old else None, label, now),
            )
        return Adjudication(*key, label, adjudicator.strip(), note.strip(), session, now)

    def find(self, pairs: Iterable[tuple[str, str]] | None = None) -> list[Adjudication]:
        """Every adjudication, or those of `pairs` ((message_id, memory_id))."""
        with self.conn.reading():
            rows = [Adjudication(*row) for row in self.conn.run(f"SELECT {_COLUMNS} FROM adjudications ORDER BY created_at")]
        if pairs is None:
            return rows
        wanted = set(pairs)
        return [row for row in rows if (row.message_id, row.memory_id) in wanted]
