"""Relevance labels, by id, in SQLite (default) or PostgreSQL (a team's shared store).

A label is one reviewer's judgment of one memory returned for one message. Rows
hold ids and the score the reviewer saw, never memory or query text unless the
user opted in (``query_text`` / ``memory_text`` stay NULL otherwise). Writes are
last-write-wins upserts committed at once; the value a relabel replaces is kept in
``label_history``.

The same database holds labelling sessions: a named sample of log rows
(``session_items``), who is assigned which turn (``session_assignments``) and the
rows a reviewer skipped (``session_skips``). A skip is not a label: it never
reaches an export or the agreement figures.

Both backends are one class, ``LabelStore``, that differs only in how it connects,
its placeholders and how it serialises one upsert against another:

    open_label_store("/path/labels.sqlite")            SQLite file, WAL, synchronous=FULL
    open_label_store("postgresql://user@host/db")      PostgreSQL, for several app servers
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

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
LABELS_URL_ENV = "MEMLENS_LABELS_URL"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")

_LABEL_TABLES = """
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

_SESSION_TABLES = """
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
    params TEXT NOT NULL DEFAULT '{{}}'
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

# The SQLite schema as the foundation wrote it (label_history ordered by rowid).
SCHEMA = _LABEL_TABLES.format(real="REAL", history_id="") + _SESSION_TABLES.format(real="REAL")
POSTGRES_SCHEMA = _LABEL_TABLES.format(real="DOUBLE PRECISION", history_id="id BIGSERIAL PRIMARY KEY,\n    ") + (
    _SESSION_TABLES.format(real="DOUBLE PRECISION")
)


class LabelStoreError(Exception):
    """The label database cannot be reached or refused a write; the page shows it."""


class SessionExists(ValueError):
    pass


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
    keep_text: bool = False  # the message text from the log is kept with the items
    params: dict[str, Any] = field(default_factory=dict)  # e.g. score bands
    created_at: str = ""


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


def message_id(query: str, user_id: str | None, store: str) -> str:
    """A stable id for a live query: the same text, user and store give the same id,
    so relabelling a re-run query updates instead of duplicating."""
    blob = "\x1f".join([store, user_id or "", " ".join(query.split())])
    return "live-" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


_LABEL_COLUMNS = [f.name for f in fields(Label)]
_ITEM_COLUMNS = [f.name for f in fields(SessionItem)]


class LabelStore:
    """Labels and sessions in one SQLite file (WAL, so readers never block the writer).

    ``PostgresLabelStore`` is the same class on a PostgreSQL connection; every
    method below is written once, in SQL both databases accept."""

    dialect = "sqlite"
    _history_order = "rowid"

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.target = str(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60, isolation_level=None)
        self._db.execute("PRAGMA busy_timeout=60000")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # an acknowledged label survives a crash
        self._db.executescript(SCHEMA)

    # ------------------------------------------------------------ backend hooks

    def _run(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        return self._db.execute(sql, tuple(args)).fetchall()

    def _run_many(self, sql: str, rows: list[Sequence[Any]]) -> None:
        self._db.executemany(sql, rows)

    @contextmanager
    def _transaction(self, lock_key: str | None = None) -> Iterator[None]:
        """One write transaction. SQLite's IMMEDIATE takes the file's write lock at
        once, so the old value read inside is the one the write replaces."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def _reading(self) -> Iterator[None]:
        with self._lock:
            yield

    # ------------------------------------------------------------ labels

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
        key = (message_id, memory_id, reviewer)
        with self._transaction(lock_key="\x1f".join(key)):
            old = self._run("SELECT label FROM labels WHERE message_id=? AND memory_id=? AND reviewer=?", key)
            self._run(
                """INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (message_id, memory_id, reviewer) DO UPDATE SET
                     rank=excluded.rank, score=excluded.score, label=excluded.label,
                     store=excluded.store, updated_at=excluded.updated_at,
                     query_text=excluded.query_text, memory_text=excluded.memory_text""",
                (message_id, memory_id, reviewer, rank, score, label, store, now, now, query_text, memory_text),
            )
            if old and old[0][0] != label:
                self._run(
                    "INSERT INTO label_history (message_id, memory_id, reviewer, old_label, new_label, changed_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (*key, old[0][0], label, now),
                )
        return self.get(message_id, memory_id, reviewer)  # type: ignore[return-value]

    def delete(self, message_id: str, memory_id: str, reviewer: str) -> bool:
        """Remove one label (undo); the removal is recorded in the history."""
        key = (message_id, memory_id, reviewer)
        with self._transaction(lock_key="\x1f".join(key)):
            old = self._run("SELECT label FROM labels WHERE message_id=? AND memory_id=? AND reviewer=?", key)
            if old:
                self._run("DELETE FROM labels WHERE message_id=? AND memory_id=? AND reviewer=?", key)
                self._run(
                    "INSERT INTO label_history (message_id, memory_id, reviewer, old_label, new_label, changed_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (*key, old[0][0], None, _now()),
                )
        return bool(old)

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
        sql = f"SELECT {', '.join(_LABEL_COLUMNS)} FROM labels"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at, message_id, memory_id, reviewer"
        with self._reading():
            return [Label(*row) for row in self._run(sql, args)]

    def history(self, message_id: str, memory_id: str) -> list[dict[str, Any]]:
        with self._reading():
            rows = self._run(
                "SELECT reviewer, old_label, new_label, changed_at FROM label_history "
                f"WHERE message_id=? AND memory_id=? ORDER BY {self._history_order}",
                (message_id, memory_id),
            )
        return [dict(zip(("reviewer", "old_label", "new_label", "changed_at"), r)) for r in rows]

    def stores(self) -> list[str]:
        with self._reading():
            return [r[0] for r in self._run("SELECT DISTINCT store FROM labels ORDER BY store")]

    def reviewers(self) -> list[str]:
        with self._reading():
            return [r[0] for r in self._run("SELECT DISTINCT reviewer FROM labels ORDER BY reviewer")]

    # ------------------------------------------------------------ sessions

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
        session.created_at = session.created_at or _now()
        with self._transaction(lock_key="session\x1f" + session.name):
            if self._run("SELECT 1 FROM label_sessions WHERE name=?", (session.name,)):
                raise SessionExists(f"a session named {session.name!r} already exists")
            self._run(
                "INSERT INTO label_sessions (name, created_at, method, seed, size, overlap, reviewers, source,"
                " store, keep_text, params) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                ),
            )
            self._run_many(
                f"INSERT INTO session_items (session, {', '.join(_ITEM_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (session.name, *(getattr(item, c) for c in _ITEM_COLUMNS[:-1]), item.query_text if session.keep_text else None)
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
                "SELECT name, method, size, seed, overlap, reviewers, source, store, keep_text, params, created_at "
                "FROM label_sessions ORDER BY created_at DESC, name"
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
            )
            for r in rows
        ]

    def session(self, name: str) -> LabelSession | None:
        return next((s for s in self.sessions() if s.name == name), None)

    def session_items(self, name: str) -> list[SessionItem]:
        with self._reading():
            rows = self._run(
                f"SELECT {', '.join(_ITEM_COLUMNS)} FROM session_items WHERE session=? ORDER BY position", (name,)
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
        columns = ", ".join(f"l.{c}" for c in _LABEL_COLUMNS)
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
                (session, message_id, memory_id, reviewer, _now()),
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
            return {tuple(row) for row in self._run(sql, args)}  # type: ignore[misc]

    def close(self) -> None:
        self._db.close()


class PostgresLabelStore(LabelStore):
    """The label store on PostgreSQL: every app server behind one address shares it.

    One connection per store object, used under a lock (Streamlit serves sessions
    from threads). Each upsert takes a transaction-scoped advisory lock on its
    (message, memory, reviewer) key, so the old value it records in the history is
    the one it replaced even when two servers write the same key at once. The URL
    may hold a password: it is never shown, logged or put in an error message."""

    dialect = "postgresql"
    _history_order = "id"

    def __init__(self, url: str, *, connect_timeout: float = 10):
        try:
            import psycopg
        except ImportError:
            raise LabelStoreError(
                "A PostgreSQL label store needs psycopg: pip install 'memlens[postgres]'"
            ) from None

        self._psycopg = psycopg
        self.url = url
        self.path = None  # type: ignore[assignment]
        self.target = _redact(url)
        self._lock = threading.RLock()
        self._connect_timeout = connect_timeout
        self._conn = None
        with self._transaction(lock_key="memlens schema"):
            for statement in POSTGRES_SCHEMA.split(";"):
                if statement.strip():
                    self._conn.execute(statement)

    def _connection(self):
        if self._conn is None or self._conn.closed or self._conn.broken:
            try:
                self._conn = self._psycopg.connect(self.url, autocommit=True, connect_timeout=self._connect_timeout)
            except self._psycopg.Error as exc:
                raise LabelStoreError(f"Cannot reach the label database at {self.target}: {type(exc).__name__}") from None
        return self._conn

    def _run(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        cursor = self._conn.execute(sql.replace("?", "%s"), tuple(args))
        return cursor.fetchall() if cursor.description else []

    def _run_many(self, sql: str, rows: list[Sequence[Any]]) -> None:
        if rows:
            with self._conn.cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), rows)

    @contextmanager
    def _transaction(self, lock_key: str | None = None) -> Iterator[None]:
        with self._lock:
            conn = self._connection()
            try:
                with conn.transaction():
                    if lock_key is not None:
                        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_key,))
                    yield
            except self._psycopg.OperationalError as exc:
                raise LabelStoreError(f"The label database at {self.target} failed: {type(exc).__name__}") from None

    @contextmanager
    def _reading(self) -> Iterator[None]:
        with self._lock:
            self._connection()
            try:
                yield
            except self._psycopg.OperationalError as exc:
                raise LabelStoreError(f"The label database at {self.target} failed: {type(exc).__name__}") from None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def is_postgres_url(target: str) -> bool:
    return target.startswith(POSTGRES_SCHEMES)


def open_label_store(target: str | Path) -> LabelStore:
    """A PostgreSQL URL opens the shared store; anything else is a SQLite file path."""
    text = str(target)
    if is_postgres_url(text):
        return PostgresLabelStore(text)
    return LabelStore(text)


def label_store_target(environ: dict[str, str], data_directory: Path) -> str:
    """Where labels live: $MEMLENS_LABELS_URL (a PostgreSQL URL or a SQLite path),
    else labels.sqlite in the data directory."""
    return environ.get(LABELS_URL_ENV) or str(Path(data_directory) / "labels.sqlite")


def label_dicts(labels: list[Label]) -> list[dict[str, Any]]:
    return [asdict(label) for label in labels]
