"""How the app database is reached: a small pool of connections to a SQLite file
(this module) or to PostgreSQL (postgres.py), and the four operations every
repository is written in: ``run``, ``run_many``, ``transaction`` and ``reading``.

Each repository (labels.py, sessions.py, judge_labels.py, adjudications.py,
judged_sets.py, runs.py) holds the one connection of its ``AppDatabase`` and writes
its SQL once, in the dialect both databases accept (``?`` placeholders, ``ON
CONFLICT`` upserts); the connection alone knows which database it talks to.
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
from dashboard.database.model import LabelStoreError
from dashboard.database.schema import SCHEMA, add_missing_columns

LABELS_URL_ENV = "MEMLENS_LABELS_URL"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# How long a label read or write waits for a lock or an answer before the page
# says so: a reviewer waiting longer assumes the click was lost.
DEFAULT_TIMEOUT_S = 3.0


class Connection:
    """A pool of database connections, checked out one use at a time.

    Each use checks a connection out of a small pool and puts it back, so no lock is
    held while the database is waited on: a reviewer whose write waits for another
    process's lock delays nobody else. Waits are short (``timeout`` seconds, a few),
    and every database error leaves as a ``LabelStoreError`` naming the database.

    This class is the SQLite file (WAL, so readers never block the writer);
    ``PostgresConnection`` overrides the backend hooks below."""

    dialect = "sqlite"
    history_order = "rowid"  # the column that orders label_history by insertion
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
        with self._using() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(SCHEMA)
            with self.transaction():
                add_missing_columns(self)

    def _connect(self) -> Any:
        assert self.path is not None  # the SQLite database always has its file
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=self.timeout, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
        conn.execute("PRAGMA synchronous=FULL")  # an acknowledged label survives a crash
        return conn

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

    # ------------------------------------------------------------ what repositories use

    def run(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        """One statement on this thread's connection (inside ``transaction`` or ``reading``)."""
        return self._local.conn.execute(sql, tuple(args)).fetchall()

    def run_many(self, sql: str, rows: list[Sequence[Any]]) -> None:
        self._local.conn.executemany(sql, rows)

    @contextmanager
    def transaction(self, lock_key: str | None = None) -> Iterator[None]:
        """One write transaction. SQLite's IMMEDIATE takes the file's write lock at
        once, so the old value read inside is the one the write replaces."""
        with self._using() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._using():
            yield

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for conn in pool:
            self._discard(conn)
