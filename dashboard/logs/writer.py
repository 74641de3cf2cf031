"""Writing a retrieval log from an agent: the rows ``memlens logs check``, the Label
page and ``memlens monitor`` read (dashboard/logs/retrieval_log.py has the format).

One row per returned memory (``message_id``, ``memory_id``, ``rank``, ``score``,
``user_id``, ``timestamp``, ``store``, and the ``floor`` applied to the turn with the
``floor_segment`` it came from), and one *empty-turn* row (a ``message_id`` and no
memory, rank or score) for a turn the store returned nothing for: without it the
monitor understates the share of turns left with no memory. The agent side adds
what decided each row: ``rule`` (``floor``, or the floor file's rule: ``learned``,
``largest-gap``, ``top-ratio``) and ``kept`` (true or false; null on an empty-turn
row), and with a shadow config ``shadow_rule`` and ``shadow_kept``, what the
candidate would have done. Ids and scores only;
the message text goes in ``query`` only when the log is opened with
``include_query=True``.

What goes in is normalised once (``normal_hits``, shared with dashboard/runtime.py):
ids are text, a score is a float or none (missing, NaN, +inf and -inf are none: a
memory returned with no score, which the floor drops), a rank is the position in
the store's order, from 1. So every row written is one its reader imports.

The log never breaks the agent's turn. ``RetrievalLog(path)`` refuses a path it
cannot write at once (RetrievalLogError); after that, a write that fails (a full
disk, a folder removed) raises nothing: the rows stay buffered and are tried again
at the next flush, a warning goes to ``logging`` once per kind of failure, and rows
given up are counted on ``lost_rows``. Rows are buffered and written every
``flush_every`` rows, on ``flush()`` and on ``close()`` (also at interpreter exit),
under one lock, so many agent threads may share one log; rows are written in the
order their turns were logged. JSONL is appended to, each flush in one write of whole
lines (never a torn or merged line); a Parquet file is written one row group per
flush and is readable once closed. Imports nothing heavy: pyarrow is imported only
when a Parquet log is opened.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import logging
import math
import numbers
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from connectors.base import Hit
from connectors.common.errors import MemlensError

try:  # a lock on the file between processes that share a log (not on Windows)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
FLUSH_EVERY = 256
# Rows held while writes fail (a full disk): about 5 MB. Past it the oldest turns are
# given up whole and counted on lost_rows: the newest say most about the agent now,
# and a turn is written or lost whole, never half of its memories.
MAX_PENDING = 10_000
TAIL_BYTES = 1 << 16  # how far back a torn last line is looked for
_APPEND = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)

logger = logging.getLogger(__name__)


class RetrievalLogError(MemlensError, ValueError):
    """The log cannot be written; the message names the file."""


# ------------------------------------------------------------------ one normalisation on the way in


def as_score(value: object) -> float | None:
    """`value` as a float score, or None when there is none: missing, NaN, +inf or
    -inf (none is a score a floor can compare with). NumPy's scalars (FAISS gives
    float32), Decimal and Fraction are numbers; numpy is never imported, only
    ``float()`` asked. Raises TypeError for what is not a number at all (text, a bool)."""
    if value is None:
        return None
    if type(value) is not float:
        if isinstance(value, bool) or not (isinstance(value, numbers.Real) or hasattr(type(value), "__float__")):
            raise TypeError(f"{value!r} is not a number")
        try:
            value = float(value)  # type: ignore[arg-type]
        except (OverflowError, ValueError):  # an int past a float's range; Decimal's signalling NaN
            return None
    return value if math.isfinite(value) else None


def as_text(value: object) -> str | None:
    """An id as text (an integer user id, a numpy id); None stays None."""
    return value if value is None or type(value) is str else str(value)


class _NormalHits(list[Hit]):
    """A list normal_hits made: given to it again, passed through as it is
    (memory_for_prompt normalises a turn's hits once, for the floor and the log)."""


def normal_hits(hits: Iterable[Hit]) -> list[Hit]:
    """The hits as the floor and the log take them, in the store's order: ids as
    text, each score a float or None (see ``as_score``; a store's score that is not a
    number is none too), each rank its position from 1. A hit already so is passed
    through as it is (the common case costs no copy)."""
    if type(hits) is _NormalHits:
        return hits
    normal = _NormalHits()
    for rank, hit in enumerate(hits, start=1):
        score = hit.score
        if type(hit.memory_id) is str and (score is None or (type(score) is float and math.isfinite(score))) and type(hit.rank) is int and hit.rank == rank:
            normal.append(hit)  # already so, as a memlens connector returns it: no copy
            continue
        try:
            score = as_score(score)
        except TypeError:
            score = None
        # a hit with no id keeps None: the writer counts its row lost rather than write one unreadable
        normal.append(dataclasses.replace(hit, memory_id=as_text(hit.memory_id), rank=rank, score=score))  # type: ignore[arg-type]
    return normal


def _blank(text: str | None) -> bool:
    return not text or text.isspace()


# ------------------------------------------------------------------ the log file


class RetrievalLog:
    """A retrieval log file an agent writes, ``.jsonl`` or ``.parquet``."""

    def __init__(self, path: str | Path, *, include_query: bool = False, flush_every: int = FLUSH_EVERY):
        self.path = Path(path).expanduser()
        self.format = FORMATS.get(self.path.suffix.lower())
        if self.format is None:
            raise RetrievalLogError(f"{self.path}: a retrieval log is .jsonl or .parquet, got {self.path.suffix or 'no suffix'!r}")
        if flush_every < 1:
            raise RetrievalLogError(f"{self.path}: flush_every must be at least 1, got {flush_every}")
        self.include_query = include_query
        self.flush_every = flush_every
        self.max_pending = max(MAX_PENDING, flush_every)
        self.rows_written = 0
        self.lost_rows = 0  # rows given up: unwritable values, a buffer past max_pending, left at close
        # each turn's rows as one item: encoded JSONL lines (bytes), or row dicts for Parquet
        self._pending: deque[tuple[Any, int]] = deque()
        self._pending_rows = 0
        self._since_try = 0  # rows logged since the last write was tried
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        self._writer: Any = None  # the open pyarrow ParquetWriter
        self._closed = False
        self._check_path()
        if self.format == "parquet":
            self._open_parquet()
        else:
            self._open_jsonl()
        atexit.register(self._close_at_exit)

    def _check_path(self) -> None:
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise RetrievalLogError(f"{self.path}: cannot write the log here ({exc.strerror or exc})") from exc
        if mode is not None and not stat.S_ISREG(mode):
            # a folder, or a FIFO, whose open would wait for a reader for ever
            kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
            raise RetrievalLogError(f"{self.path}: {kind}; name a file for the log")
        if mode is not None and self.format == "parquet":
            # A Parquet file cannot be appended to: writing would replace the rows already logged.
            raise RetrievalLogError(
                f"{self.path}: exists, and a Parquet file cannot be appended to; name a new file per run "
                "(e.g. retrievals-2026-01-05.parquet) or log to .jsonl"
            )

    def _open_jsonl(self) -> None:
        # opened (and made, empty, when new) now: a path that cannot be written is
        # refused here, not at the first flush inside an agent's turn. A missing
        # folder is not made: a typo in the path is an error, not a new folder.
        try:
            os.close(os.open(self.path, _APPEND, 0o644))
        except OSError as exc:
            raise RetrievalLogError(f"{self.path}: cannot write the log here ({exc.strerror or exc})") from exc

    def _open_parquet(self) -> None:
        import pyarrow as pa  # only for a Parquet log: a JSONL log imports nothing heavy
        from pyarrow import parquet as pa_parquet

        self._schema = pa.schema(
            [
                ("message_id", pa.string()),
                ("memory_id", pa.string()),
                ("rank", pa.int64()),
                ("score", pa.float64()),
                ("user_id", pa.string()),
                ("timestamp", pa.string()),
                ("store", pa.string()),
                ("floor", pa.float64()),
                ("floor_segment", pa.string()),
                ("rule", pa.string()),
                ("kept", pa.bool_()),
                ("shadow_rule", pa.string()),
                ("shadow_kept", pa.bool_()),
                *([("query", pa.string())] if self.include_query else []),
            ]
        )
        try:
            self._writer = pa_parquet.ParquetWriter(str(self.path), self._schema)
        except (OSError, pa.ArrowException) as exc:
            raise RetrievalLogError(f"{self.path}: cannot write the log here ({getattr(exc, 'strerror', None) or exc})") from exc

    # ------------------------------------------------------------------ writing

    def write_turn(
        self,
        message_id: object,
        hits: Iterable[Hit],
        *,
        user_id: object | None = None,
        store: str | None = None,
        query: str | None = None,
        timestamp: datetime | None = None,
        floor: float | None = None,
        floor_segment: str | None = None,
        rule: str | None = None,
        kept: list[bool] | None = None,
        shadow_rule: str | None = None,
        shadow_kept: list[bool] | None = None,
    ) -> int:
        """Buffer the rows of one turn: one per hit, or one empty-turn row when
        `hits` is empty; `floor` and `floor_segment` say what the turn was filtered
        at, `rule` what decided it and `kept` the decision per hit (in `hits`' order),
        `shadow_rule` / `shadow_kept` a shadow config's. Returns the number of rows the
        turn gave (written, or counted lost). Never raises once the log is open."""
        hits = normal_hits(hits)
        try:
            floor_value = as_score(floor)
        except TypeError:
            floor_value = None
        turn_id = as_text(message_id)
        shared: dict[str, Any] = {
            "message_id": turn_id, "user_id": as_text(user_id), "timestamp": _stamp(timestamp), "store": as_text(store),
            "floor": floor_value, "floor_segment": as_text(floor_segment),
        }  # fmt: skip
        if self.include_query:
            shared["query"] = as_text(query)
        if rule is not None or shadow_rule is not None:
            shared["rule"] = as_text(rule)
            if shadow_rule is not None:
                shared["shadow_rule"] = as_text(shadow_rule)
        produced = len(hits) or 1
        # a row its reader would refuse (a blank turn or memory id) is counted, not written
        owns = [] if _blank(turn_id) else _own_parts(hits, rule is not None or shadow_rule is not None, kept, shadow_rule is not None, shadow_kept)
        unusable = produced - len(owns)
        if self.format == "jsonl":
            # encoded here, outside the lock, so threads do not wait on each other's JSON
            payload: Any = _jsonl_lines(shared, owns)
        else:
            payload = [{**shared, **_own_fields(*own)} for own in owns]
        with self._lock:
            if unusable:
                self._lose(unusable, "unusable", "a row with a blank turn or memory id cannot be read back")
            rows = len(owns)
            if not rows:
                return produced
            if self._closed:
                self._lose(rows, "closed", "a turn was logged after close()")
                return produced
            self._pending.append((payload, rows))
            self._pending_rows += rows
            self._since_try += rows
            while self._pending_rows > self.max_pending and len(self._pending) > 1:
                _, count = self._pending.popleft()
                self._pending_rows -= count
                self._lose(count, "full", f"more than {self.max_pending:,} rows waited to be written; the oldest turns are given up")
            # after a failed write, the next try waits for flush_every more rows: a
            # full disk costs one failed write per flush_every rows, not one per turn
            if self._since_try >= self.flush_every:
                self._write_pending()
        return produced

    @property
    def rows_pending(self) -> int:
        """Rows buffered, not written yet (also those waiting for a failed write's retry)."""
        return self._pending_rows

    def flush(self) -> None:
        """Try to write what is buffered now; a failure is logged, not raised, and the rows are kept."""
        with self._lock:
            self._write_pending()

    def close(self) -> None:
        """Write what is buffered and finish the file (a Parquet file is readable from
        here on). Raises RetrievalLogError, and nothing else, when rows could not be
        written: they are counted on ``lost_rows`` first."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._write_pending()
            left = self._pending_rows
            reason = self._last_problem if left else None
            if left:
                self._pending.clear()
                self._pending_rows = 0
                self.lost_rows += left
            if self._writer is not None:
                try:
                    self._writer.close()
                except Exception as exc:  # pyarrow's errors are OSError and ArrowException, among others
                    reason = reason or str(exc)
                    left = left or 1
                self._writer = None
        atexit.unregister(self._close_at_exit)
        if left:
            raise RetrievalLogError(f"{self.path}: the log could not be finished: {left:,} row(s) not written ({reason}); lost_rows is {self.lost_rows:,}")

    def _close_at_exit(self) -> None:
        try:
            self.close()
        except RetrievalLogError as exc:
            logger.warning("%s", exc)

    def __enter__(self) -> RetrievalLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the writes (the caller holds the lock)

    _last_problem: str | None = None

    def _lose(self, count: int, kind: str, why: str) -> None:
        self.lost_rows += count
        self._warn_once(kind, f"{why}; rows lost so far: {self.lost_rows:,} (RetrievalLog.lost_rows)")

    def _warn_once(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            logger.warning("memlens retrieval log %s: %s", self.path, message)

    def _write_pending(self) -> None:
        """Write the buffered turns, oldest first. What was written leaves the buffer;
        on a failure the rest stays for the next try and the failure is logged once
        per kind (errno, or exception type)."""
        self._since_try = 0
        if not self._pending:
            return
        problem: Exception | None = None
        try:
            written_turns = self._write_jsonl() if self.format == "jsonl" else self._write_parquet()
        except Exception as exc:  # whatever the file system or pyarrow raised: never out of a turn
            written_turns, problem = 0, exc
        for _ in range(written_turns):
            _, count = self._pending.popleft()
            self._pending_rows -= count
            self.rows_written += count
        if problem is not None:
            kind = f"errno:{problem.errno}" if isinstance(problem, OSError) and problem.errno else type(problem).__name__
            self._last_problem = f"{problem.strerror or problem}" if isinstance(problem, OSError) else f"{type(problem).__name__}: {problem}"
            self._warn_once(
                kind,
                f"a write failed ({self._last_problem}); {self._pending_rows:,} row(s) kept and tried again at the next flush",
            )

    def _write_jsonl(self) -> int:
        """Append the buffered turns in one write; returns how many turns are in the
        file. A write cut short (a full disk) keeps the whole turns it holds and
        truncates the rest, so the file never ends in half a line; raises the error
        when nothing could be written."""
        chunks = [payload for payload, _ in self._pending]
        fd = os.open(self.path, _APPEND, 0o644)  # opened per flush: a rotated log is followed
        try:
            if fcntl is not None:
                # memlens writers of this file in other processes wait here: the tail is
                # looked at and mended, and a failed write cut back, with no write between
                fcntl.flock(fd, fcntl.LOCK_EX)
            start, prefix = self._mend_tail(fd)
            data = prefix + b"".join(chunks)
            done, failure = 0, None
            try:
                while done < len(data):
                    count = os.write(fd, data[done:])
                    if count <= 0:
                        break
                    done += count
            except OSError as exc:  # ENOSPC, EFBIG, EIO: after a short write, or at once
                failure = exc
            if done == len(data):
                return len(chunks)
            # cut short: keep the turns written whole, cut the rest away
            end, turns = len(prefix), 0
            for chunk in chunks:
                if end + len(chunk) > done:
                    break
                end, turns = end + len(chunk), turns + 1
            _cut(fd, start + end if turns else start)
            if turns == 0:
                raise failure or OSError(f"a write was cut short after {done:,} of {len(data):,} bytes")
            return turns
        finally:
            os.close(fd)

    def _mend_tail(self, fd: int) -> tuple[int, bytes]:
        """(the file's size, what to write before the rows). A file that does not end
        in a line feed was left by a writer that stopped mid-row (killed), or made by
        hand without a final line feed. A last line that is whole JSON gets its line
        feed, so the next row starts its own line; one that is not (a torn row, never
        whole, so never counted as written) is cut away, so every line of the file is
        whole JSON and `memlens logs check` reads it with no bad row. A torn tail
        longer than TAIL_BYTES is not looked for: it is ended with a line feed and the
        reader names it as one bad line."""
        size = os.fstat(fd).st_size
        if not hasattr(os, "pread"):  # Windows: no positioned read, and no other writer's torn row to mend
            return size, b""
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return size, b""
        look = min(size, TAIL_BYTES)
        tail = os.pread(fd, look, size - look)
        cut = tail.rfind(b"\n")
        last = tail[cut + 1 :]
        if (cut >= 0 or look == size) and not _whole_json(last):
            os.ftruncate(fd, size - len(last))
            self._warn_once("torn", f"cut a torn last line of {len(last):,} bytes that a stopped writer left")
            return size - len(last), b""
        return size, b"\n"

    def _write_parquet(self) -> int:
        import pyarrow as pa

        refused = (pa.ArrowException, TypeError, ValueError, OverflowError)
        try:
            table = pa.Table.from_pylist([row for payload, _ in self._pending for row in payload], schema=self._schema)
        except refused:
            # a value pyarrow refuses even after normalising: only its row is lost,
            # and it leaves the buffer, so a failed write's retry does not count it again
            kept: deque[tuple[Any, int]] = deque()
            for payload, _ in self._pending:
                good = []
                for row in payload:
                    try:
                        pa.Table.from_pylist([row], schema=self._schema)
                    except refused as exc:
                        self._pending_rows -= 1
                        self._lose(1, f"parquet:{type(exc).__name__}", f"a row pyarrow refused ({exc})")
                    else:
                        good.append(row)
                kept.append((good, len(good)))
            self._pending = kept
            table = pa.Table.from_pylist([row for payload, _ in kept for row in payload], schema=self._schema)
        self._writer.write_table(table)
        return len(self._pending)


def _decision(values: list[bool] | None, index: int) -> bool | None:
    return bool(values[index]) if values is not None and index < len(values) else None


# A row's own part, after the turn's shared fields: (the hit, or None for the
# empty-turn row; its decision; the shadow's), a decision the row does not carry (no
# rule, no shadow) as _ABSENT.
_ABSENT = object()
_Own = tuple[Hit | None, object, object]


def _own_parts(hits: list[Hit], decided: bool, kept: list[bool] | None, shadowed: bool, shadow_kept: list[bool] | None) -> list[_Own]:
    """One per hit with an id (a hit with a blank id cannot be read back: its row is
    counted lost), with its decision (and the shadow's) when the turn was decided by a
    rule; or the empty-turn row's when nothing came back."""
    if not hits:
        return [(None, None if decided else _ABSENT, None if shadowed else _ABSENT)]
    return [
        (hit, _decision(kept, index) if decided else _ABSENT, _decision(shadow_kept, index) if shadowed else _ABSENT)
        for index, hit in enumerate(hits)
        if not _blank(hit.memory_id)
    ]


def _own_fields(hit: Hit | None, keep: object, shadow_keep: object) -> dict[str, Any]:
    """A row's own part as fields (a Parquet row's)."""
    own: dict[str, Any] = (
        {"memory_id": None, "rank": None, "score": None} if hit is None else {"memory_id": hit.memory_id, "rank": hit.rank, "score": hit.score}
    )
    if keep is not _ABSENT:
        own["kept"] = keep
    if shadow_keep is not _ABSENT:
        own["shadow_kept"] = shadow_keep
    return own


# JSON text of a str as json.dumps(ensure_ascii=False) writes it: the function the
# encoder itself calls for a string (C), without the encoder's set-up
_text_json = json.encoder.encode_basestring
_LITERAL = {None: "null", True: "true", False: "false"}


def _value_json(value: str | float | None) -> str:
    """A shared field's value as JSON: text, a finite float, or none."""
    return "null" if value is None else _text_json(value) if type(value) is str else float.__repr__(value)


def _jsonl_lines(shared: dict[str, Any], owns: list[_Own]) -> bytes:
    """The turn's rows as JSONL, each line byte for byte the row as json.dumps writes
    it (tests/dashboard/logs hold it so), written out here rather than by the encoder:
    its set-up on each call was most of the log's cost on an agent turn. Every value
    is text, a whole number, a finite float (normal_hits, as_score), a boolean or none;
    a lone surrogate in an id becomes "?" (valid UTF-8, a whole line)."""
    prefix = "{" + ", ".join([f'"{key}": {_value_json(value)}' for key, value in shared.items()])
    lines = []
    for hit, keep, shadow_keep in owns:
        decisions = "" if keep is _ABSENT else f', "kept": {_LITERAL[keep]}'  # type: ignore[index]
        if shadow_keep is not _ABSENT:
            decisions += f', "shadow_kept": {_LITERAL[shadow_keep]}'  # type: ignore[index]
        if hit is None:
            lines.append(f'{prefix}, "memory_id": null, "rank": null, "score": null{decisions}}}\n')
        else:
            score = "null" if hit.score is None else float.__repr__(hit.score)
            lines.append(f'{prefix}, "memory_id": {_text_json(hit.memory_id)}, "rank": {int.__repr__(hit.rank)}, "score": {score}{decisions}}}\n')
    return "".join(lines).encode("utf-8", "replace")


def _stamp(timestamp: datetime | None) -> str:
    """The turn's time in UTC to the millisecond, as ``datetime.isoformat`` writes it.
    Now is read with time.time() and the text up to the second made once a second:
    formatting a datetime cost about 5 µs of every agent turn."""
    if timestamp is not None:
        return timestamp.isoformat(timespec="milliseconds")
    global _SECOND
    now = time.time()
    second = math.floor(now)
    made, text = _SECOND
    if made != second:
        text = datetime.fromtimestamp(second, UTC).isoformat()[: -len("+00:00")]
        _SECOND = (second, text)  # one tuple, swapped whole: threads may share it
    # zfill, not a format spec: ``:03d`` alone cost 2 µs on a turn after a query
    return f"{text}.{str(int((now - second) * 1000)).zfill(3)}+00:00"


_SECOND: tuple[float, str] = (math.nan, "")


def _whole_json(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _cut(fd: int, size: int) -> None:
    """Truncate back to `size`; a failure here leaves a torn tail, which the next
    flush's _mend_tail cuts."""
    try:
        os.ftruncate(fd, size)
    except OSError:
        pass


class RetrievalSpans:
    """The log as OpenTelemetry spans, for a team that traces: one OpenInference
    retriever span per turn on the team's own tracer (``openinference.span.kind`` =
    ``RETRIEVER``, ``retrieval.documents.N.document.id`` / ``.score`` in rank order,
    ``user.id``, ``memlens.store``, ``memlens.message_id``, and the floor applied,
    ``memlens.floor`` and ``memlens.floor_segment``; ``memlens.rule`` and each
    document's ``retrieval.documents.N.document.memlens.kept``, and with a shadow
    ``memlens.shadow_rule`` and ``...document.memlens.shadow_kept``), which memlens reads back from
    the collector's OTLP JSON (docs/formats.md); a turn that got nothing is a span
    with no documents. The message goes in ``input.value`` only with
    ``include_query=True``. In a trace the turn's id is the span's id."""

    def __init__(self, tracer: Any, *, include_query: bool = False, name: str = "memlens.retrieve"):
        self.tracer = tracer
        self.include_query = include_query
        self.name = name

    def write_turn(
        self,
        message_id: object,
        hits: Iterable[Hit],
        *,
        user_id: object | None = None,
        store: str | None = None,
        query: str | None = None,
        timestamp: datetime | None = None,
        floor: float | None = None,
        floor_segment: str | None = None,
        rule: str | None = None,
        kept: list[bool] | None = None,
        shadow_rule: str | None = None,
        shadow_kept: list[bool] | None = None,
    ) -> int:
        start = int(timestamp.timestamp() * 1e9) if timestamp is not None else None
        try:
            floor_value = as_score(floor)
        except TypeError:
            floor_value = None
        with self.tracer.start_as_current_span(self.name, start_time=start) as span:
            span.set_attribute("openinference.span.kind", "RETRIEVER")
            span.set_attribute("memlens.message_id", str(message_id))
            if user_id is not None:
                span.set_attribute("user.id", str(user_id))
            if store is not None:
                span.set_attribute("memlens.store", str(store))
            if floor_value is not None:
                span.set_attribute("memlens.floor", floor_value)
            if floor_segment is not None:
                span.set_attribute("memlens.floor_segment", str(floor_segment))
            if self.include_query and query:
                span.set_attribute("input.value", query)
            if rule is not None:
                span.set_attribute("memlens.rule", str(rule))
            if shadow_rule is not None:
                span.set_attribute("memlens.shadow_rule", str(shadow_rule))
            count = 0
            for index, hit in enumerate(normal_hits(hits)):  # in the store's order: the rank
                if _blank(hit.memory_id):
                    continue  # a document with no id cannot be read back or labelled
                prefix = f"retrieval.documents.{count}.document."
                span.set_attribute(prefix + "id", hit.memory_id)
                if hit.score is not None:
                    span.set_attribute(prefix + "score", hit.score)
                for key, values in (("memlens.kept", kept), ("memlens.shadow_kept", shadow_kept)):
                    decision = _decision(values, index)
                    if decision is not None:
                        span.set_attribute(prefix + key, decision)
                count += 1
        return count or 1
