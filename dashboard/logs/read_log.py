"""The read log: one JSON line per store query the app makes, ids and numbers only.

Every page that queries a store goes through ``logged_query``, so a debugging
session can be downloaded and attached to a bug report. A line holds:

    at               when the read finished (UTC, ISO 8601)
    source           which page read ("inspect", "quality", ...)
    store            the store fingerprint (connector name + hash of its non-secret settings)
    query_hash       sha256 of the whitespace-normalised query (first 16 hex digits)
    user_hash        the same for the end-user id, or null
    k                how many results were asked for
    candidate_count  how many came back
    top_k            [{memory_id, rank, score}] for what came back
    latency_ms       wall time of the call, measured here
    error            the error type when the store failed, else null

No query, memory or user text is written. Writing the log never fails a read: a
write error becomes a note on the result, which the page shows.

Read back as a retrieval log (``read_log_rows``: `memlens logs check`, the Label page,
`memlens monitor`), each read is one turn: its ``top_k`` are the rows, a read with
``candidate_count`` 0 is a turn with no memory, and a failed read (``error`` set) is
left out (the store failed; it did not answer "nothing"). The turn's ``message_id``
is the span id the OTLP export gives the same read, so both files name the same turns.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from connectors.base import MemoryStore, QueryResult
from connectors.common import inbound
from connectors.common.lines import LineIssue, json_objects
from connectors.common.paths import data_dir

READ_LOG_NAME = "reads.jsonl"
_write_lock = threading.Lock()


def read_log_path(directory: str | Path | None = None) -> Path:
    return Path(directory or data_dir()) / READ_LOG_NAME


def text_hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


def read_record(
    *,
    query: str,
    user_id: str | None,
    k: int,
    store: str,
    source: str,
    latency_ms: float,
    result: QueryResult | None,
    error: BaseException | None = None,
    at: datetime | None = None,
) -> dict[str, Any]:
    hits = result.hits if result is not None else []
    return {
        "at": (at or datetime.now(UTC)).isoformat(timespec="milliseconds"),
        "source": source,
        "store": store,
        "query_hash": text_hash(query),
        "user_hash": text_hash(user_id) if user_id else None,
        "k": k,
        "candidate_count": len(hits),
        "top_k": [{"memory_id": h.memory_id, "rank": h.rank, "score": h.score} for h in hits[:k]],
        "latency_ms": round(latency_ms, 3),
        "error": type(error).__name__ if error is not None else None,
    }


def append_record(path: str | Path, record: dict[str, Any]) -> None:
    path = Path(path)
    line = json.dumps(record, allow_nan=False, default=str) + "\n"
    with _write_lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        # One write of one whole line: concurrent sessions never interleave halves.
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line)


def logged_query(
    store: MemoryStore,
    query: str,
    *,
    user_id: str | None,
    k: int,
    store_fingerprint: str,
    source: str,
    log_path: str | Path | None = None,
) -> QueryResult:
    """`store.query(...)`, with one line appended to the read log whether it
    succeeds or raises (the exception is re-raised unchanged)."""
    path = Path(log_path) if log_path is not None else read_log_path()
    started = time.perf_counter()
    try:
        result = store.query(query, user_id=user_id, k=k)
    except Exception as exc:
        record = read_record(
            query=query,
            user_id=user_id,
            k=k,
            store=store_fingerprint,
            source=source,
            latency_ms=(time.perf_counter() - started) * 1000,
            result=None,
            error=exc,
        )
        _append_quietly(path, record)
        raise
    record = read_record(
        query=query,
        user_id=user_id,
        k=k,
        store=store_fingerprint,
        source=source,
        latency_ms=(time.perf_counter() - started) * 1000,
        result=result,
    )
    problem = _append_quietly(path, record)
    if problem:
        result.notes.append(problem)
    return result


class LoggedStore:
    """`store` with every ``query`` going through ``logged_query``; any other
    attribute (``get``, ``max_k``, ``feedback`` ...) is the store's own. For code
    that takes a store and queries it itself, such as the rank lookup."""

    def __init__(self, store: MemoryStore, *, store_fingerprint: str, source: str, log_path: str | Path | None = None):
        self._store = store
        self._fingerprint = store_fingerprint
        self._source = source
        self._log_path = log_path

    def query(self, text: str, *, user_id: str | None, k: int) -> QueryResult:
        return logged_query(
            self._store,
            text,
            user_id=user_id,
            k=k,
            store_fingerprint=self._fingerprint,
            source=self._source,
            log_path=self._log_path,
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _append_quietly(path: Path, record: dict[str, Any]) -> str | None:
    try:
        append_record(path, record)
    except (OSError, ValueError) as exc:
        return f"This read was not written to the read log at {path}: {exc}"
    return None


def read_records(path: str | Path | None = None) -> tuple[list[dict[str, Any]], int]:
    """(the records, the number of lines that were not valid JSON objects)."""
    path = Path(path) if path is not None else read_log_path()
    if not path.exists():
        return [], 0
    inbound.regular_file(path, "read log")  # the app's own file; a FIFO put there must not hang a page
    issues: list[LineIssue] = []
    text = path.read_text(encoding="utf-8", errors="replace")
    records = [record for _, record in json_objects(text, path.name, issues)]
    broken = len(issues)
    return records, broken


READ_LOG_KEYS = (b'"top_k"', b'"candidate_count"')


def looks_like_read_log(data: bytes, sniff: int = 4096) -> bool:
    """True when the first line of `data` is a read-log record (this module's format)."""
    head = data[:sniff].lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    return head.startswith(b"{") and all(key in head for key in READ_LOG_KEYS)


def read_log_rows(data: bytes, name: str) -> tuple[Any, Any, list[LineIssue]]:
    """The read log as retrieval-log rows: (frame of the log columns, line of each
    row, issues), as the other log readers give them for ``retrieval_log`` to check."""
    import numpy as np
    import pandas as pd

    from dashboard.logs.log_files import COLUMNS
    from dashboard.logs.otlp import record_span

    issues: list[LineIssue] = []
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    text = data.decode("utf-8", errors="replace")
    for position, (number, record) in enumerate(json_objects(text, name, issues)):
        if record.get("error"):
            continue
        # the span id `memlens logs export --otlp` gives this read (same position, same record)
        turn = record_span(record, position)["spanId"]
        base = {"message_id": turn, "user_id": None, "query": None, "timestamp": record.get("at"), "store": record.get("store")}
        hits = record.get("top_k")
        if not isinstance(hits, list):
            issues.append(LineIssue(name, number, "top_k", "not a list of {memory_id, rank, score}"))
            continue
        if not hits:
            if record.get("candidate_count") == 0:
                rows.append({**base, "memory_id": None, "rank": None, "score": None})
                lines.append(number)
            else:
                issues.append(LineIssue(name, number, "top_k", "empty, but candidate_count is not 0"))
            continue
        for index, hit in enumerate(hits):
            if not isinstance(hit, dict):
                issues.append(LineIssue(name, number, f"top_k[{index}]", "not an object"))
                continue
            rows.append({**base, "memory_id": hit.get("memory_id"), "rank": hit.get("rank"), "score": hit.get("score")})
            lines.append(number)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in ("rank", "score"):
        frame[column] = frame[column].astype(object)
    return frame, np.array(lines, dtype=np.int64), issues


def log_bytes(path: str | Path | None = None) -> bytes:
    path = Path(path) if path is not None else read_log_path()
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""

