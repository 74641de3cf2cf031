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

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from connectors.common.paths import DATA_DIR_ENV
from connectors.common.redaction import redact_text
from dashboard.database.adjudications import ADJUDICATION_TABLES, AdjudicationMethods
from dashboard.database.judge_labels import JUDGE_TABLES, JudgeLabelMethods
from dashboard.database.model import LABEL_COLUMNS, LABEL_VALUES, Label, LabelStoreError, utc_now
from dashboard.database.schema import EVAL_TABLES
from dashboard.database.session_admin import SessionAdminMethods
from dashboard.database.sessions import SESSION_TABLES, SessionMethods

LABELS_URL_ENV = "MEMLENS_LABELS_URL"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# How long a label read or write waits for a lock or an answer before the page
# says so: a reviewer waiting longer assumes the click was lost.
DEFAULT_TIMEOUT_S = 3.0

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

SCHEMA = (
    _LABEL_TABLES.format(real="REAL", history_id="")
    + SESSION_TABLES.format(real="REAL")
    + EVAL_TABLES.format(real="REAL")  # judged sets and runs (dashboard/evaluation)
    + JUDGE_TABLES.format(real="REAL")  # judge labels, apart from people's (judge_labels.py)
    + ADJUDICATION_TABLES  # a lead's final label of a disputed pair (adjudications.py)
)
POSTGRES_SCHEMA = (
    _LABEL_TABLES.format(real="DOUBLE PRECISION", history_id="id BIGSERIAL PRIMARY KEY,\n    ")
    + SESSION_TABLES.format(real="DOUBLE PRECISION")
    + EVAL_TABLES.format(real="DOUBLE PRECISION")
    + JUDGE_TABLES.format(real="DOUBLE PRECISION")
    + ADJUDICATION_TABLES
)


class LabelStore(SessionMethods, SessionAdminMethods, JudgeLabelMethods, AdjudicationMethods):
    """Labels and sessions in one SQLite file (WAL, so readers never block the writer).

    ``PostgresLabelStore`` is the same class on a PostgreSQL connection; every
    method below is written once, in SQL both databases accept.

    Each use checks a connection out of a small pool and puts it back, so no lock is
    held while the database is waited on: a reviewer whose write waits for another
    process's lock delays nobody else. Waits are short (``timeout`` seconds, a few),
    and every database error leaves as a ``LabelStoreError`` naming the store."""

    dialect = "sqlite"
    _history_order = "rowid"
    _pool_size = 4

    def __init__(self, path: str | Path | None, *, timeout: float = DEFAULT_TIMEOUT_S, target: str | None = None):
        self.path: Path | None = Path(path) if path is not None else None
        self.target = target if target is not None else str(self.path)
        self.timeout = float(timeout)
        self._pool: list[Any] = []
        self._pool_lock = threading.Lock()  # guards the list only, never held across I/O
        self._local = threading.local()  # the connection this thread has checked out
        self._create_schema()

    # ------------------------------------------------------------ backend hooks

    def _create_schema(self) -> None:
        assert self.path is not None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LabelStoreError(
                f"Cannot create the folder for the label file {self.target}: {exc.strerror or exc}. "
                f"Set {DATA_DIR_ENV} (or {LABELS_URL_ENV}) to a folder this server can write."
            ) from None
        with self._using() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            with self._transaction():
                self._add_missing_columns()

    def _connect(self) -> Any:
        assert self.path is not None  # the SQLite store always has its file
        db = sqlite3.connect(self.path, check_same_thread=False, timeout=self.timeout, isolation_level=None)
        db.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
        db.execute("PRAGMA synchronous=FULL")  # an acknowledged label survives a crash
        return db

    def _usable(self, conn: Any) -> bool:
        return True

    def _discard(self, conn: Any) -> None:
        try:
            conn.close()
        except Exception:  # already broken: nothing more to release
            pass

    def _translate(self, exc: BaseException) -> LabelStoreError | None:
        """The LabelStoreError for a database error, or None for anything else."""
        if not isinstance(exc, sqlite3.Error):
            return None
        text = str(exc)
        if "locked" in text or "busy" in text:
            return LabelStoreError(
                f"The label file {self.target} is locked by another process (waited {self.timeout:g} s); "
                "this change was not saved. Try again in a moment."
            )
        if "readonly" in text or "unable to open" in text or "read-only" in text:
            return LabelStoreError(
                f"The label file {self.target} cannot be written ({text}). "
                f"Set {DATA_DIR_ENV} (or {LABELS_URL_ENV}) to a folder this server can write."
            )
        return LabelStoreError(f"The label file {self.target} failed: {redact_text(text)}")

    @contextmanager
    def _using(self) -> Iterator[Any]:
        """A connection for this thread: the one already checked out, else one from the pool."""
        current = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        with self._pool_lock:
            conn = self._pool.pop() if self._pool else None
        try:
            if conn is None:
                conn = self._connect()
            self._local.conn = conn
            yield conn
        except BaseException as exc:
            self._local.conn = None
            if conn is not None:
                self._discard(conn)  # its state is unknown after a failure
            translated = self._translate(exc)
            if translated is not None:
                raise translated from None
            raise
        self._local.conn = None
        if self._usable(conn):
            with self._pool_lock:
                if len(self._pool) < self._pool_size:
                    self._pool.append(conn)
                    return
        self._discard(conn)

    def _run(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        return self._local.conn.execute(sql, tuple(args)).fetchall()

    def _run_many(self, sql: str, rows: list[Sequence[Any]]) -> None:
        self._local.conn.executemany(sql, rows)

    @contextmanager
    def _transaction(self, lock_key: str | None = None) -> Iterator[None]:
        """One write transaction. SQLite's IMMEDIATE takes the file's write lock at
        once, so the old value read inside is the one the write replaces."""
        with self._using() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    @contextmanager
    def _reading(self) -> Iterator[None]:
        with self._using():
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
        now = utc_now()
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
        saved = self.get(message_id, memory_id, reviewer)
        assert saved is not None  # the row written above
        return saved

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
                    (*key, old[0][0], None, utc_now()),
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
        sql = f"SELECT {', '.join(LABEL_COLUMNS)} FROM labels"
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
        return [dict(zip(("reviewer", "old_label", "new_label", "changed_at"), r, strict=True)) for r in rows]

    def stores(self) -> list[str]:
        with self._reading():
            return [r[0] for r in self._run("SELECT DISTINCT store FROM labels ORDER BY store")]

    def reviewers(self) -> list[str]:
        with self._reading():
            return [r[0] for r in self._run("SELECT DISTINCT reviewer FROM labels ORDER BY reviewer")]

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for conn in pool:
            self._discard(conn)
