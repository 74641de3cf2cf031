"""Writing a retrieval log from an agent: the rows ``memlens logs check``, the Label
page and ``memlens monitor`` read (dashboard/logs/retrieval_log.py has the format).

One row per returned memory (``message_id``, ``memory_id``, ``rank``, ``score``,
``user_id``, ``timestamp``, ``store``), and one *empty-turn* row (a ``message_id``
and no memory, rank or score) for a turn the store returned nothing for: without it
the monitor understates the share of turns left with no memory. Ids and scores
only; the message text goes in ``query`` only when the log is opened with
``include_query=True``.

Rows are buffered and written every ``flush_every`` rows, on ``flush()`` and on
``close()`` (also at interpreter exit), under one lock, so many agent threads may
share one log. JSONL is appended to; a Parquet file is written one row group per
flush and is readable once closed. Imports nothing heavy: pyarrow is imported
only when a Parquet log is opened.
"""

from __future__ import annotations

import atexit
import json
import math
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from connectors.base import Hit
from connectors.common.errors import MemlensError

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
FLUSH_EVERY = 256


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


class RetrievalLogError(MemlensError, ValueError):
    """The log cannot be written; the message names the file."""


class RetrievalLog:
    """A retrieval log file an agent writes, ``.jsonl`` or ``.parquet``."""

    def __init__(self, path: str | Path, *, include_query: bool = False, flush_every: int = FLUSH_EVERY):
        self.path = Path(path).expanduser()
        self.format = FORMATS.get(self.path.suffix.lower())
        if self.format is None:
            raise RetrievalLogError(f"{self.path}: a retrieval log is .jsonl or .parquet, got {self.path.suffix or 'no suffix'!r}")
        if flush_every < 1:
            raise RetrievalLogError(f"{self.path}: flush_every must be at least 1, got {flush_every}")
        if self.format == "parquet" and self.path.exists():
            # A Parquet file cannot be appended to: writing would replace the rows already logged.
            raise RetrievalLogError(
                f"{self.path}: exists, and a Parquet file cannot be appended to; name a new file per run "
                "(e.g. retrievals-2026-01-05.parquet) or log to .jsonl"
            )
        self.include_query = include_query
        self.flush_every = flush_every
        self.rows_written = 0
        self._buffer: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._writer: Any = None  # the open pyarrow ParquetWriter
        self._closed = False
        if self.format == "parquet":
            import pyarrow as pa  # only for a Parquet log: a JSONL log imports nothing heavy

            self._schema = pa.schema(
                [
                    ("message_id", pa.string()),
                    ("memory_id", pa.string()),
                    ("rank", pa.int64()),
                    ("score", pa.float64()),
                    ("user_id", pa.string()),
                    ("timestamp", pa.string()),
                    ("store", pa.string()),
                    *([("query", pa.string())] if include_query else []),
                ]
            )
        atexit.register(self.close)

    # ------------------------------------------------------------------ writing

    def write_turn(
        self,
        message_id: str,
        hits: Iterable[Hit],
        *,
        user_id: str | None = None,
        store: str | None = None,
        query: str | None = None,
        timestamp: datetime | None = None,
    ) -> int:
        """Buffer the rows of one turn: one per hit, or one empty-turn row when
        `hits` is empty. Returns the number of rows."""
        stamp = (timestamp or datetime.now(UTC)).isoformat(timespec="milliseconds")
        shared: dict[str, Any] = {"message_id": str(message_id), "user_id": user_id, "timestamp": stamp, "store": store}
        if self.include_query:
            shared["query"] = query
        # a score that is not a finite number is written as none: the reader reports that row
        rows = [
            {**shared, "memory_id": hit.memory_id, "rank": hit.rank, "score": _finite(hit.score)} for hit in hits
        ] or [{**shared, "memory_id": None, "rank": None, "score": None}]
        with self._lock:
            if self._closed:
                raise RetrievalLogError(f"{self.path}: the log is closed")
            self._buffer.extend(rows)
            if len(self._buffer) >= self.flush_every:
                self._write_buffer()
        return len(rows)

    def flush(self) -> None:
        with self._lock:
            self._write_buffer()

    def close(self) -> None:
        """Write what is buffered and finish the file (a Parquet file is readable from here on)."""
        with self._lock:
            if self._closed:
                return
            self._write_buffer()
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            self._closed = True
        atexit.unregister(self.close)

    def __enter__(self) -> RetrievalLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_buffer(self) -> None:
        """Write and empty the buffer; the caller holds the lock."""
        rows, self._buffer = self._buffer, []
        if not rows:
            return
        if self.format == "jsonl":
            text = "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(text)
        else:
            self._write_parquet(rows)
        self.rows_written += len(rows)

    def _write_parquet(self, rows: list[dict[str, Any]]) -> None:
        import pyarrow as pa
        from pyarrow import parquet as pa_parquet

        if self._writer is None:
            self._writer = pa_parquet.ParquetWriter(str(self.path), self._schema)
        self._writer.write_table(pa.Table.from_pylist(rows, schema=self._schema))


class RetrievalSpans:
    """The log as OpenTelemetry spans, for a team that traces: one OpenInference
    retriever span per turn on the team's own tracer (``openinference.span.kind`` =
    ``RETRIEVER``, ``retrieval.documents.N.document.id`` / ``.score`` in rank order,
    ``user.id``, ``memlens.store``, ``memlens.message_id``), which memlens reads back
    from the collector's OTLP JSON (docs/formats.md); a turn that got nothing is a
    span with no documents. The message goes in ``input.value`` only with
    ``include_query=True``. In a trace the turn's id is the span's id."""

    def __init__(self, tracer: Any, *, include_query: bool = False, name: str = "memlens.retrieve"):
        self.tracer = tracer
        self.include_query = include_query
        self.name = name

    def write_turn(
        self,
        message_id: str,
        hits: Iterable[Hit],
        *,
        user_id: str | None = None,
        store: str | None = None,
        query: str | None = None,
        timestamp: datetime | None = None,
    ) -> int:
        start = int(timestamp.timestamp() * 1e9) if timestamp is not None else None
        with self.tracer.start_as_current_span(self.name, start_time=start) as span:
            span.set_attribute("openinference.span.kind", "RETRIEVER")
            span.set_attribute("memlens.message_id", str(message_id))
            if user_id is not None:
                span.set_attribute("user.id", user_id)
            if store is not None:
                span.set_attribute("memlens.store", store)
            if self.include_query and query:
                span.set_attribute("input.value", query)
            count = 0
            for index, hit in enumerate(sorted(hits, key=lambda hit: hit.rank)):
                prefix = f"retrieval.documents.{index}.document."
                span.set_attribute(prefix + "id", hit.memory_id)
                score = _finite(hit.score)
                if score is not None:
                    span.set_attribute(prefix + "score", score)
                count += 1
        return count or 1
