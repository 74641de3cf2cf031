"""Labelling sessions: a named sample of log rows to label, who labels which turn,
and the rows a reviewer skipped: ``db.sessions``.

A session's tables live in the app database beside the labels
(``session_items``, ``session_assignments``, ``session_skips``). A skip is not a
label: it never reaches an export or the agreement figures.

A session remembers the fingerprint of the store it was drawn on
(``label_sessions.drawn_store``): its rows' memory ids belong to that store, and the
Label page offers no labels while another store is configured. Databases created
before that column existed get it when they are opened (``ADDED_COLUMNS``); their
sessions have no recorded store.

What a lead changes after a session was drawn (its reviewers and overlap, who is
assigned which turn, archiving, deleting) is here too; the rules (which turns may
move) are dashboard/labels/session_admin.py. Deleting a session removes its rows,
assignments and skips, never a label: labels are keyed by (message, memory,
reviewer), not by session, so they stay in the database (and in every store-wide
figure) after their session is gone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from connectors.common.errors import MemlensError
from dashboard.database.model import LABEL_COLUMNS, Label, of_reviewer, reviewer_key, utc_now

if TYPE_CHECKING:
    from dashboard.database.model import SqlConnection

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


class SessionExists(MemlensError, ValueError):
    pass


class NoSuchSession(MemlensError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


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


class SessionRepository:
    """The session tables: ``label_sessions``, ``session_items``,
    ``session_assignments`` and ``session_skips``."""

    def __init__(self, conn: SqlConnection):
        self.conn = conn

    def create(
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
        with self.conn.transaction(lock_key="session\x1f" + session.name):
            if self.conn.run("SELECT 1 FROM label_sessions WHERE name=?", (session.name,)):
                raise SessionExists(f"a session named {session.name!r} already exists")
            self.conn.run(
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
            self.conn.run_many(
                f"INSERT INTO session_items (session, {', '.join(ITEM_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (session.name, *(getattr(item, c) for c in ITEM_COLUMNS[:-1]), item.query_text if session.keep_text else None)
                    for item in items
                ],
            )
            self.conn.run_many(
                "INSERT INTO session_assignments (session, message_id, reviewer) VALUES (?, ?, ?)",
                [(session.name, msg, reviewer) for msg, reviewers in (assignments or {}).items() for reviewer in reviewers],
            )
        return session

    def all(self) -> list[LabelSession]:
        with self.conn.reading():
            rows = self.conn.run(
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

    def get(self, name: str) -> LabelSession | None:
        return next((s for s in self.all() if s.name == name), None)

    def items(self, name: str) -> list[SessionItem]:
        with self.conn.reading():
            rows = self.conn.run(
                f"SELECT {', '.join(ITEM_COLUMNS)} FROM session_items WHERE session=? ORDER BY position", (name,)
            )
        return [SessionItem(*row) for row in rows]

    def assignments(self, name: str) -> dict[str, list[str]]:
        """message_id -> the reviewers assigned to that turn (empty: no assignment)."""
        with self.conn.reading():
            rows = self.conn.run(
                "SELECT message_id, reviewer FROM session_assignments WHERE session=? ORDER BY message_id, reviewer",
                (name,),
            )
        assigned: dict[str, list[str]] = {}
        for message, reviewer in rows:
            assigned.setdefault(message, []).append(reviewer)
        return assigned

    def labels(self, name: str, *, reviewer: str | None = None) -> list[Label]:
        """Every label on a row of the session (any reviewer unless given, under any
        spelling of the name), in session order: the export of a session."""
        columns = ", ".join(f"l.{c}" for c in LABEL_COLUMNS)
        sql = (
            f"SELECT {columns} FROM labels l JOIN session_items i "
            "ON i.message_id = l.message_id AND i.memory_id = l.memory_id WHERE i.session = ?"
        )
        sql += " ORDER BY i.position, l.reviewer"
        with self.conn.reading():
            return of_reviewer([Label(*row) for row in self.conn.run(sql, (name,))], reviewer)

    def skip(self, session: str, message_id: str, memory_id: str, reviewer: str) -> None:
        with self.conn.transaction():
            self.conn.run(
                "INSERT INTO session_skips VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (session, message_id, memory_id, reviewer) DO NOTHING",
                (session, message_id, memory_id, reviewer, utc_now()),
            )

    def unskip(self, session: str, message_id: str, memory_id: str, reviewer: str) -> bool:
        """Take back the reviewer's skip of the row, under any spelling of the name."""
        with self.conn.transaction():
            stored = self.conn.run(
                "SELECT reviewer FROM session_skips WHERE session=? AND message_id=? AND memory_id=?",
                (session, message_id, memory_id),
            )
            found = [row[0] for row in stored if reviewer_key(row[0]) == reviewer_key(reviewer)]
            for spelling in found:
                self.conn.run(
                    "DELETE FROM session_skips WHERE session=? AND message_id=? AND memory_id=? AND reviewer=?",
                    (session, message_id, memory_id, spelling),
                )
        return bool(found)

    def skips(self, session: str, *, reviewer: str | None = None) -> set[tuple[str, str, str]]:
        """(message_id, memory_id, reviewer) of every skipped row of a session (the
        reviewer's only when given, under any spelling of the name, as stored)."""
        with self.conn.reading():
            rows = self.conn.run("SELECT message_id, memory_id, reviewer FROM session_skips WHERE session=?", (session,))
        key = reviewer_key(reviewer) if reviewer is not None else None
        return {(row[0], row[1], row[2]) for row in rows if key is None or reviewer_key(row[2]) == key}

    def _require_session(self, name: str) -> None:
        if not self.conn.run("SELECT 1 FROM label_sessions WHERE name=?", (name,)):
            raise NoSuchSession(f"no labelling session named {name!r}")

    def update(
        self, name: str, *, reviewers: list[str], overlap: float, assignments: dict[str, list[str]]
    ) -> None:
        """New reviewers and overlap, and the assignments of the turns in
        `assignments` replaced (other turns keep theirs), in one transaction."""
        with self.conn.transaction(lock_key="session\x1f" + name):
            self._require_session(name)
            self.conn.run(
                "UPDATE label_sessions SET reviewers=?, overlap=? WHERE name=?", (json.dumps(reviewers), overlap, name)
            )
            self._replace_assignments(name, assignments)

    def replace_assignments(self, name: str, assignments: dict[str, list[str]]) -> None:
        with self.conn.transaction(lock_key="session\x1f" + name):
            self._require_session(name)
            self._replace_assignments(name, assignments)

    def _replace_assignments(self, name: str, assignments: dict[str, list[str]]) -> None:
        self.conn.run_many(
            "DELETE FROM session_assignments WHERE session=? AND message_id=?", [(name, msg) for msg in assignments]
        )
        self.conn.run_many(
            "INSERT INTO session_assignments (session, message_id, reviewer) VALUES (?, ?, ?)",
            [(name, msg, reviewer) for msg, reviewers in assignments.items() for reviewer in reviewers],
        )

    def archive(self, name: str, archived: bool = True) -> None:
        with self.conn.transaction(lock_key="session\x1f" + name):
            self._require_session(name)
            self.conn.run("UPDATE label_sessions SET archived_at=? WHERE name=?", (utc_now() if archived else None, name))

    def delete(self, name: str) -> None:
        """The session, its rows, assignments and skips; its labels stay."""
        with self.conn.transaction(lock_key="session\x1f" + name):
            self._require_session(name)
            for table in ("session_skips", "session_assignments", "session_items"):
                self.conn.run(f"DELETE FROM {table} WHERE session=?", (name,))
            self.conn.run("DELETE FROM label_sessions WHERE name=?", (name,))
