"""Labelling sessions: a named sample of log rows to label, who labels which turn,
and the rows a reviewer skipped.

A session's tables live in the label database beside the labels
(``session_items``, ``session_assignments``, ``session_skips``). A skip is not a
label: it never reaches an export or the agreement figures.

A session remembers the fingerprint of the store it was drawn on
(``label_sessions.drawn_store``): its rows' memory ids belong to that store, and the
Label page offers no labels while another store is configured. Databases created
before that column existed get it when they are opened (``ADDED_COLUMNS``); their
sessions have no recorded store.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields
from typing import Any

from dashboard.database.model import LABEL_COLUMNS, Label, utc_now

SESSION_TABLES = """
CREATE TABLE IF NOT EXISTS label_sessions (
    name TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    method TEXT NOT NULL,
    seed BIGINT,
    size INTEGER NOT NULL,
    overlap {real} NOT NULL DEFAULT 0,
    reviewers TEXT NOT NULL DEFAULT '[]',
    source TEXT,
    store TEXT,
    keep_text INTEGER NOT NULL DEFAULT 0,
    params TEXT NOT NULL DEFAULT '{{}}',
    drawn_store TEXT
);
CREATE TABLE IF NOT EXISTS session_items (
    session TEXT NOT NULL,
    position INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    rank INTEGER,
    score {real},
    user_id TEXT,
    store TEXT,
    query_text TEXT,
    PRIMARY KEY (session, message_id, memory_id)
);
CREATE TABLE IF NOT EXISTS session_assignments (
    session TEXT NOT NULL,
    message_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    PRIMARY KEY (session, message_id, reviewer)
);
CREATE TABLE IF NOT EXISTS session_skips (
    session TEXT NOT NULL,
    message_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    skipped_at TEXT NOT NULL,
    PRIMARY KEY (session, message_id, memory_id, reviewer)
);
"""

# Columns added after their table first shipped, as (table, column, SQL type): a
# label database an older memlens created gets them when it is opened, NULL in the
# rows it already holds.
# (judge_labels.store: the store a judge's grade was for, recorded since the judges came.)
# (label_sessions.archived_at: when a lead archived the session, NULL while it is open.)
ADDED_COLUMNS = (
    ("label_sessions", "drawn_store", "TEXT"),
    ("judge_labels", "store", "TEXT"),
    ("label_sessions", "archived_at", "TEXT"),
)


class SessionExists(ValueError):
    pass


@dataclass
class LabelSession:
    """A named sample of log rows to label, and how it was drawn."""

    name: str
    method: str  # "uniform" | "stratified" | "turns"
    size: int  # rows in the session
    seed: int | None = None
    overlap: float = 0.0  # share of turns assigned to two reviewers
    reviewers: list[str] = field(default_factory=list)  # empty: everyone labels every turn
    source: str | None = None  # the log it was drawn from
    store: str | None = None  # the store fingerprint the log names, if one
    drawn_store: str | None = None  # the fingerprint of the store configured when it was drawn (None: not recorded)
    keep_text: bool = False  # the message text from the log is kept with the items
    params: dict[str, Any] = field(default_factory=dict)  # e.g. score bands
    created_at: str = ""
    archived_at: str | None = None  # set when a lead archived it: kept and counted, not offered for labelling

    def drawn_on_another_store(self, fingerprint: str) -> bool:
        """True when the session records the store it was drawn on and it is not
        `fingerprint`: its memory ids would be looked up in the wrong store."""
        return self.drawn_store is not None and self.drawn_store != fingerprint


@dataclass
class SessionItem:
    """One log row in a session: ids and numbers, the message text only if kept."""

    position: int
    message_id: str
    memory_id: str
    rank: int | None
    score: float | None
    user_id: str | None = None
    store: str | None = None
    query_text: str | None = None


ITEM_COLUMNS = [f.name for f in fields(SessionItem)]


class SessionMethods:
    """The session half of ``LabelStore``: written once over the store's own
    ``_run`` / ``_transaction`` / ``_reading`` hooks, so both backends share it."""

    # The hooks, declared for the type checker; ``LabelStore`` defines them.
    _run: Callable[..., list[tuple]]
    _run_many: Callable[..., None]
    _transaction: Callable[..., AbstractContextManager[None]]
    _reading: Callable[[], AbstractContextManager[None]]
    dialect: str

    def _add_missing_columns(self) -> None:
        """ADDED_COLUMNS a database created by an older memlens lacks (run inside the
        schema transaction, so two processes opening one old file add them once)."""
        for table, column, kind in ADDED_COLUMNS:
            if self.dialect == "sqlite":
                if column not in {row[1] for row in self._run(f"PRAGMA table_info({table})")}:
                    self._run(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            else:
                self._run(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {kind}")

    def create_session(
        self,
        session: LabelSession,
        items: list[SessionItem],
        assignments: dict[str, list[str]] | None = None,
    ) -> LabelSession:
        """Save a session with its rows and turn assignments in one transaction;
        a name already taken raises ``SessionExists``."""
        if not session.name or not session.name.strip():
            raise ValueError("a session needs a name")
        session.created_at = session.created_at or utc_now()
        with self._transaction(lock_key="session\x1f" + session.name):
            if self._run("SELECT 1 FROM label_sessions WHERE name=?", (session.name,)):
                raise SessionExists(f"a session named {session.name!r} already exists")
            self._run(
                "INSERT INTO label_sessions (name, created_at, method, seed, size, overlap, reviewers, source,"
                " store, keep_text, params, drawn_store) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session.name,
                    session.created_at,
                    session.method,
                    session.seed,
                    session.size,
                    session.overlap,
                    json.dumps(session.reviewers),
                    session.source,
                    session.store,
                    int(session.keep_text),
                    json.dumps(session.params),
                    session.drawn_store,
                ),
            )
            self._run_many(
                f"INSERT INTO session_items (session, {', '.join(ITEM_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (session.name, *(getattr(item, c) for c in ITEM_COLUMNS[:-1]), item.query_text if session.keep_text else None)
                    for item in items
                ],
            )
            self._run_many(
                "INSERT INTO session_assignments (session, message_id, reviewer) VALUES (?, ?, ?)",
                [(session.name, msg, reviewer) for msg, reviewers in (assignments or {}).items() for reviewer in reviewers],
            )
        return session

    def sessions(self) -> list[LabelSession]:
        with self._reading():
            rows = self._run(
                "SELECT name, method, size, seed, overlap, reviewers, source, store, keep_text, params, created_at,"
                " drawn_store, archived_at FROM label_sessions ORDER BY created_at DESC, name"
            )
        return [
            LabelSession(
                name=r[0],
                method=r[1],
                size=r[2],
                seed=r[3],
                overlap=r[4],
                reviewers=json.loads(r[5]),
                source=r[6],
                store=r[7],
                keep_text=bool(r[8]),
                params=json.loads(r[9]),
                created_at=r[10],
                drawn_store=r[11],
                archived_at=r[12],
            )
            for r in rows
        ]

    def session(self, name: str) -> LabelSession | None:
        return next((s for s in self.sessions() if s.name == name), None)

    def session_items(self, name: str) -> list[SessionItem]:
        with self._reading():
            rows = self._run(
                f"SELECT {', '.join(ITEM_COLUMNS)} FROM session_items WHERE session=? ORDER BY position", (name,)
            )
        return [SessionItem(*row) for row in rows]

    def session_assignments(self, name: str) -> dict[str, list[str]]:
        """message_id -> the reviewers assigned to that turn (empty: no assignment)."""
        with self._reading():
            rows = self._run(
                "SELECT message_id, reviewer FROM session_assignments WHERE session=? ORDER BY message_id, reviewer",
                (name,),
            )
        assigned: dict[str, list[str]] = {}
        for message, reviewer in rows:
            assigned.setdefault(message, []).append(reviewer)
        return assigned

    def session_labels(self, name: str, *, reviewer: str | None = None) -> list[Label]:
        """Every label on a row of the session (any reviewer unless given), in
        session order: the export of a session."""
        columns = ", ".join(f"l.{c}" for c in LABEL_COLUMNS)
        sql = (
            f"SELECT {columns} FROM labels l JOIN session_items i "
            "ON i.message_id = l.message_id AND i.memory_id = l.memory_id WHERE i.session = ?"
        )
        args: list[Any] = [name]
        if reviewer is not None:
            sql += " AND l.reviewer = ?"
            args.append(reviewer)
        sql += " ORDER BY i.position, l.reviewer"
        with self._reading():
            return [Label(*row) for row in self._run(sql, args)]

    def skip(self, session: str, message_id: str, memory_id: str, reviewer: str) -> None:
        with self._transaction():
            self._run(
                "INSERT INTO session_skips VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (session, message_id, memory_id, reviewer) DO NOTHING",
                (session, message_id, memory_id, reviewer, utc_now()),
            )

    def unskip(self, session: str, message_id: str, memory_id: str, reviewer: str) -> bool:
        with self._transaction():
            found = self._run(
                "SELECT 1 FROM session_skips WHERE session=? AND message_id=? AND memory_id=? AND reviewer=?",
                (session, message_id, memory_id, reviewer),
            )
            self._run(
                "DELETE FROM session_skips WHERE session=? AND message_id=? AND memory_id=? AND reviewer=?",
                (session, message_id, memory_id, reviewer),
            )
        return bool(found)

    def skips(self, session: str, *, reviewer: str | None = None) -> set[tuple[str, str, str]]:
        """(message_id, memory_id, reviewer) of every skipped row of a session."""
        sql = "SELECT message_id, memory_id, reviewer FROM session_skips WHERE session=?"
        args: list[Any] = [session]
        if reviewer is not None:
            sql += " AND reviewer=?"
            args.append(reviewer)
        with self._reading():
            return {(row[0], row[1], row[2]) for row in self._run(sql, args)}
