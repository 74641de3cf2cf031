"""Retrieval logs: one row per memory a store returned for a message. Pure.

A log holds ids and scores (docs/domain.md, "Floors come from labels"), so a team can keep it without keeping
user content:

    message_id   required  the turn (one agent message) the memory was returned for
    memory_id    required  the store's own id of the returned memory
    rank         required  1-based position in the store's answer
    score        required  the store's score, higher is better; null for a memory returned with no score
    user_id      optional  the end user, passed to the store's ``get`` when labelling
    query        optional  the message text, present only where a team allows it
    timestamp    optional  ISO 8601 date-time of the retrieval
    store        optional  which store answered (connector name + config hash)
    floor        optional  the floor the agent applied to the turn, at full precision
    floor_segment optional where that floor came from: ``global``, ``user=sam``, ...

JSONL, CSV (with a header line) and Parquet are read (``log_files.py``: each format
into one frame, bad JSON lines named on the way), and OpenTelemetry traces in OTLP
JSON (``otlp.py``: one retriever span is one turn). Validation is done once,
where the frame is built, and on whole columns at a time: a 1,000,000-row log is
checked without a Python loop per row. Every bad row is reported with the file, its
line (the row number for Parquet, the record number for CSV) and the field, and
every good row is imported. Rows repeating a (message_id, memory_id) pair are
merged into the first one and counted; a repeat that disagrees on rank or score is
reported as a conflict.

A turn the store returned nothing for is one row with its ``message_id`` and no
``memory_id``, ``rank`` or ``score`` (null, absent, or an empty CSV cell; an OTLP
retriever span with no documents; a read-log line with ``candidate_count`` 0). Such
a row is an *empty turn* (docs/monitoring.md, "Turns with no memory"): without it a
per-memory log loses the turns left with no memory and understates their share. A
row with no ``memory_id`` but a rank or a score is still a bad row. Empty turns are
kept apart from the rows (``LogImport.empty_turns``), so what samples and labels
memories never sees a row without one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from connectors.common import inbound
from connectors.common.lines import LineIssue
from dashboard.logs.log_files import LogFormatError, detect_format, read_csv, read_jsonl, read_parquet
from dashboard.logs.log_import import LogImport, checked, merged
from dashboard.logs.own_files import refuse_own_file

FAST_MIN_BYTES = 1 << 20  # below this an upload is read in memory: a temporary file would cost more


# ------------------------------------------------------------------ entry points


def read_log(path: str | Path, *, format: str | None = None, include_query: bool = False) -> LogImport:
    """Read a log file; the format comes from the extension unless given.

    A JSONL, CSV or Parquet file is read by DuckDB (``fast_path``: one scan, every
    row checked in SQL, the bad rows named by looking at their lines alone, repeated
    pairs merged); a file DuckDB will not parse, and every other format, by the
    validating reader below, which names each bad row."""
    path = Path(path)
    try:
        inbound.regular_file(path, "log")
    except inbound.InboundError as exc:
        raise LogFormatError(str(exc)) from None
    refuse_own_file(path)  # a memories file, judged set, export or floor file: named, not read as rows
    from dashboard.logs.fast_path import read_fast

    fast = read_fast(path, str(path), format)
    if fast is not None:
        return fast
    try:
        kind = format or detect_format(str(path))
    except LogFormatError:
        kind = None
    if kind in ("jsonl", "csv"):
        from dashboard.logs.streamed import read_streamed

        # DuckDB stopped at a line it cannot parse: read in parts, each bad row named
        streamed = read_streamed(path, str(path), kind)
        if streamed is not None:
            return streamed
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LogFormatError(f"{path}: cannot read the file ({exc.strerror or exc})") from exc
    return read_log_bytes(data, str(path), format=format, include_query=include_query)


def read_log_bytes(data: bytes, name: str, *, format: str | None = None, include_query: bool = False) -> LogImport:
    """Read a log held in memory (an upload); `name` is what issues call the file.

    A JSON file whose first object is an OTLP trace request (what an OpenTelemetry
    Collector's file exporter writes) is read as traces (dashboard.logs.otlp); its
    query text is kept only with `include_query`."""
    from dashboard.logs import otlp, read_log
    from dashboard.logs.fast_path import read_fast_bytes

    kind = format or detect_format(name)
    refuse_own_file(name, data)
    if len(data) >= FAST_MIN_BYTES and kind in ("jsonl", "csv", "parquet"):
        fast = read_fast_bytes(data, name, kind)
        if fast is not None:
            return fast
    if kind == "otlp" or (kind == "jsonl" and otlp.looks_like_otlp(data)):
        frame, lines, span_issues, documents = otlp.read_otlp(data, name, include_query=include_query)
        result = _validate(frame, lines, [], name)
        # one line holds many spans: count bad rows, not lines
        good = len(result.rows) + len(result.empty_turns)
        result.bad_row_count = len(frame) - good - result.duplicates + len(span_issues)
        result.issues = sorted(result.issues + span_issues, key=lambda issue: (issue.line, issue.field))
        result.rows_read = documents
        return result
    if kind == "jsonl" and read_log.looks_like_read_log(data):
        frame, lines, issues = read_log.read_log_rows(data, name)
    elif kind == "jsonl":
        frame, lines, issues = read_jsonl(data, name)
    elif kind == "csv":
        frame, lines, issues = read_csv(data, name)
    elif kind == "parquet":
        frame, lines, issues = read_parquet(data, name)
    else:
        raise LogFormatError(f"{name}: unknown log format {kind!r}; use jsonl, csv, parquet or otlp")
    return _validate(frame, lines, issues, name)


# ------------------------------------------------------------------ validation


def _validate(frame: pd.DataFrame, lines: np.ndarray, issues: list[LineIssue], name: str) -> LogImport:
    """Check every column of every row at once, drop the bad rows, merge repeats."""
    return merged([checked(frame, lines, issues, name)], name)


def turns(rows: pd.DataFrame) -> list[str]:
    """The message ids of a log in the order they first appear."""
    return rows["message_id"].drop_duplicates().tolist()


_LOG_ROW = {"message_id": "t1", "memory_id": "m1", "rank": 1, "score": 0.5, "timestamp": "2026-01-01T10:00:00Z"}
for _suffix in (".jsonl", ".parquet"):
    inbound.register_reader(
        inbound.Reader(f"retrieval log ({_suffix[1:]})", read_log, (LogFormatError,), _suffix, _LOG_ROW, qualname=f"{__name__}.read_log")
    )
