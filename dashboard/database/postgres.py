"""The app database on PostgreSQL, for a team whose app servers share one database."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from connectors.common.redaction import exception_text, redact_text, shorten
from dashboard.database.connection import DEFAULT_TIMEOUT_S, POSTGRES_SCHEMES, Connection
from dashboard.database.model import LabelStoreError
from dashboard.database.schema import POSTGRES_SCHEMA, add_missing_columns


class LabelDatabaseGone(LabelStoreError):
    """The server did not answer or could not be reached (not: it refused a statement)."""


class PostgresConnection(Connection):
    """The app database on PostgreSQL: every app server behind one address shares it.

    Connections come from the small pool ``Connection`` keeps (one per use, put
    back afterwards), so no lock is held across network I/O. Each upsert takes a
    transaction-scoped advisory lock on its (message, memory, reviewer) key, so the
    old value it records in the history is the one it replaced even when two servers
    write the same key at once.

    Nothing waits long: connecting, each statement (``statement_timeout`` on the
    server) and the socket itself are bounded by ``timeout`` seconds. A server that
    stops answering altogether (frozen, or behind a network partition) cannot
    enforce its own statement timeout, so a watchdog shuts the socket down when a
    use overruns; the blocked call then fails and the page says so.

    A click must get its answer within ``timeout`` seconds, not once per read the
    page makes after it: when a use finds the server gone (the watchdog fired, or
    it could not connect), every use in the next ``timeout`` seconds fails at once
    with the same message instead of waiting again (the page's rerun after the
    click makes several reads). After that the next use tries the server again, so
    a page recovers by itself once the server answers.

    The URL may hold a password: it is never shown, logged or put in a message."""

    dialect = "postgresql"
    history_order = "id"

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT_S):
        try:
            import psycopg
        except ImportError:
            raise LabelStoreError(
                "A PostgreSQL label store needs psycopg: pip install 'memlens[postgres]'"
            ) from None
        self._psycopg = psycopg
        self.url = url
        self._down_until = 0.0  # monotonic time until which the server counts as gone
        self._down_message = ""
        super().__init__(None, timeout=timeout, target=redact_text(url))

    # ------------------------------------------------------------ backend hooks

    def _create_schema(self) -> None:
        with self.transaction(lock_key="memlens schema"):
            for statement in POSTGRES_SCHEMA.split(";"):
                if statement.strip():
                    self.run(statement)
            add_missing_columns(self)

    def _connect(self) -> Any:
        timeout_ms = int(self.timeout * 1000)
        return self._psycopg.connect(
            self.url,
            autocommit=True,
            connect_timeout=max(1, round(self.timeout)),
            options=f"-c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms}",
            # A dead peer is noticed by the kernel too, not only by the watchdog.
            keepalives=1,
            keepalives_idle=max(1, round(self.timeout)),
            keepalives_interval=1,
            keepalives_count=2,
            tcp_user_timeout=timeout_ms,
        )

    def _usable(self, conn: Any) -> bool:
        return not (conn.closed or conn.broken)

    def _translate(self, exc: BaseException) -> LabelStoreError | None:
        if not isinstance(exc, self._psycopg.Error):
            return None
        if isinstance(exc, self._psycopg.errors.QueryCanceled):
            what = "timed out"
        elif isinstance(exc, self._psycopg.OperationalError):
            what = "cannot be reached"
        else:
            what = "refused the request"
        # Redacted first, then cut: a password straddling the cut would survive it.
        detail = shorten(exception_text(exc, [self.url]), 300)
        error = LabelDatabaseGone if what == "cannot be reached" else LabelStoreError
        return error(f"The label database at {self.target} {what}: {detail}")

    @contextmanager
    def _using(self) -> Iterator[Any]:
        if getattr(self._local, "conn", None) is not None:
            with super()._using() as conn:
                yield conn
            return
        if time.monotonic() < self._down_until:
            raise LabelStoreError(
                f"{self._down_message} (It stopped answering less than {self.timeout:g} s ago; "
                "memlens asks it again after that.)"
            )
        try:
            with self._watched() as conn:
                yield conn
        except LabelDatabaseGone as exc:
            self._down_message = str(exc)
            self._down_until = time.monotonic() + self.timeout
            raise

    @contextmanager
    def _watched(self) -> Iterator[Any]:
        watchdog = _Watchdog(self.timeout)
        try:
            with super()._using() as conn:
                watchdog.watch(conn)
                self._local.watchdog = watchdog
                try:
                    yield conn
                finally:
                    self._local.watchdog = None
                    watchdog.stop()
                if watchdog.fired:
                    # The allowance ran out just as the statement answered: the socket is
                    # shut down, so this connection must not go back to the pool.
                    conn.close()
        except (LabelStoreError, OSError) as exc:
            if watchdog.fired:
                raise LabelDatabaseGone(
                    f"The label database at {self.target} did not answer within {self.timeout:g} s; "
                    "this change was not saved. Try again."
                ) from None
            if isinstance(exc, LabelStoreError):
                raise
            # a socket closed under psycopg can surface as a plain OSError
            raise LabelDatabaseGone(
                f"The label database at {self.target} cannot be reached: {redact_text(str(exc), [self.url])}"
            ) from None

    def _rearm(self, rows: int = 1) -> None:
        """A fresh allowance for the next statement: a big session insert is many
        rows, not a frozen server."""
        watchdog = getattr(self._local, "watchdog", None)
        if watchdog is not None:
            watchdog.arm(self.timeout * max(1.0, rows / 1000))

    def run(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        self._rearm()
        cursor = self._local.conn.execute(sql.replace("?", "%s"), tuple(args))
        rows = cursor.fetchall() if cursor.description else []
        self._rearm()  # the commit that follows gets its own allowance
        return rows

    def run_many(self, sql: str, rows: list[Sequence[Any]]) -> None:
        if rows:
            self._rearm(len(rows))
            with self._local.conn.cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), rows)
            self._rearm()

    @contextmanager
    def transaction(self, lock_key: str | None = None) -> Iterator[None]:
        with self._using() as conn:
            with conn.transaction():
                if lock_key is not None:
                    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_key,))
                yield


class _Watchdog:
    """Shuts a connection's socket down when the current statement overruns its
    allowance, so a call blocked on a server that answers nothing returns."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.fired = False
        self._conn: Any = None
        self._timer: threading.Timer | None = None
        # Each arm() or stop() starts a new generation. A timer of an older one may
        # already be running when it is cancelled (cancel() cannot stop a started
        # timer), and must then do nothing: otherwise it shut down the socket of a
        # connection whose statement had answered, and that connection went back to
        # the pool dead ("server closed the connection unexpectedly" on its next use).
        self._generation = 0
        self._lock = threading.Lock()

    def watch(self, conn: Any) -> None:
        self._conn = conn
        self.arm(self.seconds)

    def arm(self, seconds: float) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._generation += 1
            self._timer = threading.Timer(seconds, self._sever, args=(self._generation,))
            self._timer.daemon = True
            self._timer.start()

    def stop(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._generation += 1

    def _sever(self, generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            self.fired = True
            try:
                sock = socket.socket(fileno=socket.dup(self._conn.pgconn.socket))
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                finally:
                    sock.close()
            except Exception:  # already closed: the blocked call has returned anyway
                pass


def is_postgres_url(target: str) -> bool:
    return target.startswith(POSTGRES_SCHEMES)


# libpq's key=value form: `host=db port=5432 dbname=labels password='a b'`, with
# single-quoted values (backslash escapes) or values without blanks.
_CONNINFO = re.compile(r"^\s*(?:[A-Za-z_]+\s*=\s*(?:'(?:[^'\\]|\\.)*'|[^\s']+)\s*)+$")
_CONNINFO_KEYS = {"host", "hostaddr", "port", "dbname", "user", "password", "service", "sslmode", "passfile"}


def is_postgres_conninfo(target: str) -> bool:
    """A libpq key=value connection string naming at least one connection setting."""
    if not _CONNINFO.match(target):
        return False
    keys = {part.split("=", 1)[0].strip().lower() for part in re.findall(r"[A-Za-z_]+\s*=", target)}
    return bool(keys & _CONNINFO_KEYS)
