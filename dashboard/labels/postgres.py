"""The label store on PostgreSQL, for a team whose app servers share one database."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from dashboard.labels.model import LabelStoreError
from dashboard.labels.store import POSTGRES_SCHEMA, POSTGRES_SCHEMES, LabelStore


class PostgresLabelStore(LabelStore):
    """The label store on PostgreSQL: every app server behind one address shares it.

    One connection per store object, used under a lock (Streamlit serves sessions
    from threads). Each upsert takes a transaction-scoped advisory lock on its
    (message, memory, reviewer) key, so the old value it records in the history is
    the one it replaced even when two servers write the same key at once. The URL
    may hold a password: it is never shown, logged or put in an error message."""

    dialect = "postgresql"
    _history_order = "id"
    _conn: Any = None  # a psycopg connection once _connection() has made one

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
