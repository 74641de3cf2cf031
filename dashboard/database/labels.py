"""People's relevance labels, by id: ``db.labels``.

A label is one reviewer's judgment of one memory returned for one message. Rows
hold ids and the score the reviewer saw, never memory or query text unless the
user opted in (``query_text`` / ``memory_text`` stay NULL otherwise). Writes are
last-write-wins upserts committed at once; the value a relabel replaces is kept in
``label_history``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dashboard.database.model import LABEL_COLUMNS, Label, check_label, distinct_reviewers, of_reviewer, utc_now

if TYPE_CHECKING:
    from dashboard.database.model import SqlConnection

LABEL_TABLES = """
CREATE TABLE IF NOT EXISTS labels (
    message_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    rank INTEGER,
    score {real},
    label TEXT NOT NULL CHECK (label IN ('relevant', 'not_relevant')),
    store TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    query_text TEXT,
    memory_text TEXT,
    PRIMARY KEY (message_id, memory_id, reviewer)
);
CREATE TABLE IF NOT EXISTS label_history (
    {history_id}message_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    old_label TEXT,
    new_label TEXT,
    changed_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS labels_store ON labels(store, reviewer, updated_at);
"""

_RECORD_CHANGE = (
    "INSERT INTO label_history (message_id, memory_id, reviewer, old_label, new_label, changed_at) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_CHANGE_FIELDS = ("message_id", "memory_id", "reviewer", "old_label", "new_label", "changed_at")


class LabelRepository:
    """The ``labels`` and ``label_history`` tables."""

    def __init__(self, conn: SqlConnection):
        self.conn = conn

    def save(
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
        """Save one reviewer's label of one pair (last write wins); a changed label's
        old value goes to the history."""
        check_label(label)
        if not reviewer or not reviewer.strip():
            raise ValueError("reviewer is required")
        now = utc_now()
        key = (message_id, memory_id, reviewer)
        with self.conn.transaction(lock_key="\x1f".join(key)):
            old = self.conn.run("SELECT label FROM labels WHERE message_id=? AND memory_id=? AND reviewer=?", key)
            self.conn.run(
                """INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (message_id, memory_id, reviewer) DO UPDATE SET
                     rank=excluded.rank, score=excluded.score, label=excluded.label,
                     store=excluded.store, updated_at=excluded.updated_at,
                     query_text=excluded.query_text, memory_text=excluded.memory_text""",
                (message_id, memory_id, reviewer, rank, score, label, store, now, now, query_text, memory_text),
            )
            if old and old[0][0] != label:
                self.conn.run(_RECORD_CHANGE, (*key, old[0][0], label, now))
        saved = self.get(message_id, memory_id, reviewer)
        assert saved is not None  # the row written above
        return saved

    def delete(self, message_id: str, memory_id: str, reviewer: str) -> bool:
        """Remove one label (undo); the removal is recorded in the history."""
        key = (message_id, memory_id, reviewer)
        with self.conn.transaction(lock_key="\x1f".join(key)):
            old = self.conn.run("SELECT label FROM labels WHERE message_id=? AND memory_id=? AND reviewer=?", key)
            if old:
                self.conn.run("DELETE FROM labels WHERE message_id=? AND memory_id=? AND reviewer=?", key)
                self.conn.run(_RECORD_CHANGE, (*key, old[0][0], None, utc_now()))
        return bool(old)

    def get(self, message_id: str, memory_id: str, reviewer: str) -> Label | None:
        """The reviewer's label of the pair: the row under the name as typed, else
        their latest under another spelling of it (reviewer_key)."""
        rows = self.find(message_id=message_id, memory_id=memory_id, reviewer=reviewer)
        return max(rows, key=lambda row: (row.reviewer == reviewer, row.updated_at), default=None)

    def find(
        self,
        *,
        store: str | None = None,
        reviewer: str | None = None,
        message_id: str | None = None,
        memory_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> list[Label]:
        """The labels matching every filter given (all of them when none is); a
        reviewer's under any spelling of the name (reviewer_key)."""
        where, args = [], []
        for column, value in (
            ("store", store),
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
        sql = f"SELECT {', '.join(LABEL_COLUMNS)} FROM labels"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at, message_id, memory_id, reviewer"
        with self.conn.reading():
            rows = [Label(*row) for row in self.conn.run(sql, args)]
        return of_reviewer(rows, reviewer)

    def history(self, message_id: str, memory_id: str) -> list[dict[str, Any]]:
        """The changes of one pair's labels, oldest first."""
        with self.conn.reading():
            rows = self.conn.run(
                "SELECT reviewer, old_label, new_label, changed_at FROM label_history "
                f"WHERE message_id=? AND memory_id=? ORDER BY {self.conn.history_order}",
                (message_id, memory_id),
            )
        return [dict(zip(("reviewer", "old_label", "new_label", "changed_at"), r, strict=True)) for r in rows]

    def changes(self, *, limit: int | None = None) -> list[dict[str, str | None]]:
        """Every recorded change, oldest first: who changed which pair's label from what to what, when."""
        with self.conn.reading():
            rows = self.conn.run(f"SELECT {', '.join(_CHANGE_FIELDS)} FROM label_history ORDER BY changed_at")
        found = [dict(zip(_CHANGE_FIELDS, row, strict=True)) for row in rows]
        return found[-limit:] if limit else found

    def stores(self) -> list[str]:
        with self.conn.reading():
            return [r[0] for r in self.conn.run("SELECT DISTINCT store FROM labels ORDER BY store")]

    def reviewers(self) -> list[str]:
        """Each reviewer once (the pages' reviewer choices), however the name was typed:
        the first spelling in order stands for the rest (compared as reviewer_key does)."""
        with self.conn.reading():
            return distinct_reviewers(r[0] for r in self.conn.run("SELECT DISTINCT reviewer FROM labels ORDER BY reviewer"))
