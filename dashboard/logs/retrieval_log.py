"""Retrieval logs: one row per memory a store returned for a message. Pure.

A log holds ids and scores (DOMAIN.md §2), so a team can keep it without keeping
user content:

    message_id   required  the turn (one agent message) the memory was returned for
    memory_id    required  the store's own id of the returned memory
    rank         required  1-based position in the store's answer
    score        required  the store's score, higher is better
    user_id      optional  the end user, passed to the store's ``get`` when labelling
    query        optional  the message text, present only where a team allows it
    timestamp    optional  ISO 8601 date-time of the retrieval
    store        optional  which store answered (connector name + config hash)

JSONL, CSV (with a header line), Parquet and OpenTelemetry traces in OTLP JSON
(dashboard.logs.otlp: one retriever span is one turn) are read. Validation is done once,
where the frame is built, and on whole columns at a time: a 1,000,000-row log is
checked without a Python loop per row. Every bad row is reported with the file, its
line (the row number for Parquet, the record number for CSV) and the field, and
every good row is imported. Rows repeating a (message_id, memory_id) pair are
merged into the first one and counted; a repeat that disagrees on rank or score is
reported as a conflict.
"""

from __future__ import annotations

import io
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

REQUIRED_COLUMNS = ("message_id", "memory_id", "rank", "score")
OPTIONAL_COLUMNS = ("user_id", "query", "timestamp", "store")
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
ID_COLUMNS = ("message_id", "memory_id")
TEXT_COLUMNS = ("message_id", "memory_id", "user_id", "query", "timestamp", "store")
FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}

# What JSON must hold in each field; the arrow schema the fast parser enforces.
_JSON_SCHEMA = pa.schema(
    [
        ("message_id", pa.string()),
        ("memory_id", pa.string()),
        ("rank", pa.float64()),  # whole-ness is checked with the other columns
        ("score", pa.float64()),
        ("user_id", pa.string()),
        ("query", pa.string()),
        ("timestamp", pa.string()),
        ("store", pa.string()),
    ]
)


class LogFormatError(ValueError):
    """The file as a whole cannot be read: unknown format, not a table, a required
    column missing. Bad rows never raise this; they are reported one by one."""


@dataclass(frozen=True)
class LogIssue:
    source: str
    line: int
    field: str  # a column name, or "(line)" when the row itself is unreadable
    message: str

    def __str__(self) -> str:
        return f"{self.source}: line {self.line}, field {self.field!r}: {self.message}"


@dataclass
class LogImport:
    """What reading one log gave: the good rows, and what was wrong with the rest."""

    source: str
    rows: pd.DataFrame  # COLUMNS + "line", one row per (message_id, memory_id)
    issues: list[LogIssue] = field(default_factory=list)  # bad rows, not imported
    duplicates: int = 0  # rows merged into an earlier row with the same pair
    conflicts: list[LogIssue] = field(default_factory=list)  # merged repeats that disagreed
    rows_read: int = 0  # data rows seen, good and bad, blank lines not counted
    bad_row_count: int | None = None  # set where one line holds many rows (OTLP)

    @property
    def bad_rows(self) -> int:
        if self.bad_row_count is not None:
            return self.bad_row_count
        return len({issue.line for issue in self.issues})

    @property
    def turns(self) -> int:
        return int(self.rows["message_id"].nunique()) if len(self.rows) else 0

    def summary(self) -> str:
        text = (
            f"{self.source}: imported {len(self.rows):,} rows in {self.turns:,} turns"
            f" from {self.rows_read:,} read; {self.bad_rows:,} bad row(s) skipped;"
            f" {self.duplicates:,} duplicate row(s) merged"
        )
        if self.conflicts:
            text += f" ({len(self.conflicts):,} with a different rank or score: the first is kept)"
        return text

    def issue_lines(self, limit: int | None = None) -> list[str]:
        shown = self.issues if limit is None else self.issues[:limit]
        return [str(issue) for issue in shown]


# ------------------------------------------------------------------ entry points


def detect_format(name: str) -> str:
    suffix = Path(name).suffix.lower()
    try:
        return FORMATS[suffix]
    except KeyError:
        raise LogFormatError(
            f"{name}: cannot tell the log format from {suffix or 'no extension'!r}; "
            "use .jsonl, .csv or .parquet"
        ) from None


def read_log(path: str | Path, *, format: str | None = None, include_query: bool = False) -> LogImport:
    """Read a log file; the format comes from the extension unless given."""
    path = Path(path)
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
    from dashboard.logs import otlp

    kind = format or detect_format(name)
    if kind == "otlp" or (kind == "jsonl" and otlp.looks_like_otlp(data)):
        frame, lines, span_issues, documents = otlp.read_otlp(data, name, include_query=include_query)
        result = _validate(frame, lines, [], name)
        # one line holds many spans: count bad rows, not lines
        result.bad_row_count = len(frame) - len(result.rows) - result.duplicates + len(span_issues)
        result.issues = sorted(result.issues + span_issues, key=lambda issue: (issue.line, issue.field))
        result.rows_read = documents
        return result
    if kind == "jsonl":
        frame, lines, issues = _read_jsonl(data, name)
    elif kind == "csv":
        frame, lines, issues = _read_csv(data, name)
    elif kind == "parquet":
        frame, lines, issues = _read_parquet(data, name)
    else:
        raise LogFormatError(f"{name}: unknown log format {kind!r}; use jsonl, csv, parquet or otlp")
    return _validate(frame, lines, issues, name)


# ------------------------------------------------------------------ JSONL


def _parse_json_block(block, *, single_block: bool = False) -> pa.Table:
    """Arrow's JSON reader on a buffer. `single_block` reads it as one block on one
    thread, so an error's "in row N" counts rows from the start of the buffer."""
    from pyarrow import json as pa_json

    options = pa_json.ParseOptions(explicit_schema=_JSON_SCHEMA, unexpected_field_behavior="ignore")
    read_options = (
        pa_json.ReadOptions(use_threads=False, block_size=max(len(block), 1 << 16))
        if single_block
        else pa_json.ReadOptions()
    )
    return pa_json.read_json(pa.BufferReader(block), read_options=read_options, parse_options=options)


_ROW_IN_ERROR = re.compile(r" in row (\d+)")
# A line that does not start a JSON object ("null", a number, a list) never reaches
# arrow: a bare `null` before any object makes arrow's reader crash the process with
# a segmentation fault (apache/arrow#47409), which would take the whole app down.
_NOT_AN_OBJECT = re.compile(rb"^[ \t\r]*[^{ \t\r\n]", re.MULTILINE)
_BLANK_LINE = re.compile(rb"^[ \t\r]*$", re.MULTILINE)


def _every_line_opens_an_object(data: bytes) -> bool:
    """True when the first byte of every line is "{", so no line is blank or a bare
    value. One vectorised pass over the bytes; the regular expressions above walk
    every line start in Python's regex engine, a second or more on a million lines,
    so they only run when this says a line needs a closer look."""
    if not data:
        return False
    raw = np.frombuffer(data, dtype=np.uint8)
    starts = np.flatnonzero(raw == ord("\n")) + 1
    starts = starts[starts < len(raw)]  # a final line feed starts no line
    return bool(raw[0] == ord("{") and np.all(raw[starts] == ord("{")))


def _set_aside_non_objects(data: bytes, name: str) -> tuple[bytes, list[LogIssue]]:
    """The data with every line that is not an object blanked (same length, so byte
    offsets hold), and an issue for each; a leading UTF-8 BOM is blanked too."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = b"   " + data[3:]
    if _every_line_opens_an_object(data) or not _NOT_AN_OBJECT.search(data):
        return data, []
    blanked, issues = bytearray(data), []
    number, counted_to = 1, 0
    for match in _NOT_AN_OBJECT.finditer(data):
        start = match.start()
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        number += data.count(b"\n", counted_to, start)
        counted_to = start
        issues.extend(_diagnose_json_line(data[start:end], number, name)[1])
        blanked[start:end] = b" " * (end - start)
    return bytes(blanked), issues


_MAX_SINGLE_BLOCK = 2**31 - 1  # arrow's block size is a 32-bit int


def _read_jsonl(data: bytes, name: str) -> tuple[pd.DataFrame, np.ndarray, list[LogIssue]]:
    """Parse with arrow's JSON reader, which takes a whole buffer at once.

    A clean file is one parse. When a parse fails, arrow names the row it stopped
    at: the rows before it are parsed as one block, that one line is looked at on
    its own (for a message naming its field), and parsing resumes after it. So a
    log with a few bad rows costs about two parses, not a Python loop per row. An
    error that names no row falls back to halving the block until the failing
    lines stand alone."""
    data, set_aside = _set_aside_non_objects(data, name)
    line_count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    try:
        table = _parse_json_block(data) if data and not data.isspace() else None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        table = None
    # One row per line only when no line is blank: a line holding two objects gives
    # two rows, which a blank line elsewhere would otherwise even out.
    last = len(data) - 1 if data.endswith(b"\n") else len(data)
    if (
        table is not None
        and table.num_rows == line_count
        and (_every_line_opens_an_object(data) or not _BLANK_LINE.search(data, 0, last))
    ):
        return _json_frame(table), np.arange(1, line_count + 1), []

    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    # byte offset where each line starts, and the line index of each non-blank row
    starts = np.concatenate([[0], np.cumsum([len(line) + 1 for line in lines])])
    row_lines = np.flatnonzero([bool(line.strip()) for line in lines])
    buffer = pa.py_buffer(data)
    tables: list[pa.Table] = []
    line_numbers: list[np.ndarray] = []
    issues: list[LogIssue] = list(set_aside)
    single_rows: list[tuple[int, dict]] = []

    def diagnose(index: int) -> None:
        row, problems = _diagnose_json_line(lines[index], index + 1, name)
        issues.extend(problems)
        if row is not None:
            single_rows.append((index + 1, row))

    def keep(table: pa.Table, line_indexes: np.ndarray) -> None:
        tables.append(table)
        line_numbers.append(line_indexes + 1)

    def rows_between(start: int, stop: int) -> np.ndarray:
        return row_lines[np.searchsorted(row_lines, start) : np.searchsorted(row_lines, stop)]

    def halve(start: int, stop: int) -> None:
        """Lines [start, stop): parse, or split in two until the bad lines stand alone."""
        if not rows_between(start, stop).size:
            return
        try:
            table = _parse_json_block(buffer.slice(starts[start], min(starts[stop], len(data)) - starts[start]))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            table = None
        # more rows than lines: a line held two objects, which is as bad as broken JSON
        if table is not None and table.num_rows == rows_between(start, stop).size:
            keep(table, rows_between(start, stop))
            return
        if stop - start == 1:
            diagnose(start)
            return
        middle = (start + stop) // 2
        halve(start, middle)
        halve(middle, stop)

    end = len(lines)
    row = 0
    while row < len(row_lines):
        first_line = row_lines[row]
        rest = buffer.slice(starts[first_line], min(starts[end], len(data)) - starts[first_line])
        if rest.size > _MAX_SINGLE_BLOCK:
            halve(first_line, end)
            break
        try:
            table = _parse_json_block(rest, single_block=True)
            if table.num_rows == len(row_lines) - row:
                keep(table, row_lines[row:])
            else:  # some line held more than one object: find it
                halve(first_line, end)
            break
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            found = _ROW_IN_ERROR.search(str(exc))
            bad = row + int(found.group(1)) if found else None
            if bad is None or bad >= len(row_lines):
                halve(first_line, end)
                break
            if bad > row:
                halve(first_line, row_lines[bad])  # one parse when arrow was right
            diagnose(row_lines[bad])
            row = bad + 1
    if single_rows:
        tables.append(pa.Table.from_pylist([row for _, row in single_rows], schema=_JSON_SCHEMA))
        line_numbers.append(np.array([number for number, _ in single_rows]))
    table = pa.concat_tables(tables) if tables else _JSON_SCHEMA.empty_table()
    numbers = np.concatenate(line_numbers) if line_numbers else np.empty(0, dtype=np.int64)
    frame = _json_frame(table)
    if np.all(numbers[1:] > numbers[:-1]):
        return frame, numbers, issues
    order = np.argsort(numbers, kind="stable")  # lines looked at alone came last
    return frame.iloc[order].reset_index(drop=True), numbers[order], issues


def _json_frame(table: pa.Table) -> pd.DataFrame:
    # arrow-backed floats keep a JSON null (missing) apart from a NaN (not finite)
    return table.to_pandas(types_mapper={pa.float64(): pd.ArrowDtype(pa.float64())}.get)


def _diagnose_json_line(raw: bytes, number: int, name: str) -> tuple[dict | None, list[LogIssue]]:
    """Why arrow refused one line, in the user's terms; the row if it is fine after all."""

    def issue(field_name: str, message: str) -> LogIssue:
        return LogIssue(name, number, field_name, message)

    if not raw.strip():
        return None, []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [issue("(line)", f"not valid UTF-8 at byte {exc.start + 1}")]
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, [issue("(line)", f"not valid JSON: {exc.msg} at column {exc.colno}")]
    if not isinstance(obj, dict):
        return None, [issue("(line)", f"expected a JSON object, got {type(obj).__name__}")]
    # A field of the wrong type is reported here and left empty, so the rest of the
    # row still goes through the column checks and every bad field is named.
    problems = []
    row: dict = {}
    for column in COLUMNS:
        value = obj.get(column)
        row[column] = None
        if value is None:
            continue
        if column == "rank":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
                problems.append(issue(column, f"{_short(value)} is not a whole number"))
            elif not -(2**63) <= value < 2**63:
                problems.append(issue(column, f"{_short(value)} is out of range"))
            else:
                row[column] = int(value)
        elif column == "score":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                problems.append(issue(column, f"{_short(value)} is not a number"))
            else:
                row[column] = float(value)
        elif not isinstance(value, str):
            expected = "an ISO 8601 date-time string" if column == "timestamp" else "a string"
            problems.append(issue(column, f"{_short(value)} is not {expected}"))
        else:
            row[column] = value
    return row, problems


def _short(value: object, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------ CSV and Parquet


def _read_csv(data: bytes, name: str) -> tuple[pd.DataFrame, np.ndarray, list[LogIssue]]:
    from pyarrow import csv as pa_csv

    issues: list[LogIssue] = []
    header = data.split(b"\n", 1)[0].decode("utf-8", "replace").strip().lstrip("\ufeff")
    columns = [c.strip().strip('"') for c in header.split(",")] if header else []
    _require_columns(columns, name)

    def bad_row(row) -> str:
        if row.text.strip():
            issues.append(
                LogIssue(
                    name,
                    row.number,
                    "(line)",
                    f"{row.actual_columns} field(s) where the header has {row.expected_columns}",
                )
            )
        return "skip"

    try:
        table = pa_csv.read_csv(
            io.BytesIO(data),
            # single-threaded so arrow can say which record a bad row was
            read_options=pa_csv.ReadOptions(use_threads=False),
            parse_options=pa_csv.ParseOptions(
                invalid_row_handler=bad_row, newlines_in_values=True, ignore_empty_lines=False
            ),
            # every column as text: types are checked below, row by row, in one pass
            convert_options=pa_csv.ConvertOptions(
                column_types={c: pa.string() for c in columns}, strings_can_be_null=False
            ),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise LogFormatError(f"{name}: not a readable CSV file ({exc})") from exc
    frame = table.to_pandas()
    # Record numbers: header is 1; arrow skipped the bad records, which we know.
    total = len(frame) + len(issues)
    skipped = np.array(sorted({issue.line for issue in issues}), dtype=np.int64)
    numbers = np.setdiff1d(np.arange(2, total + 2), skipped)[: len(frame)]
    frame = frame.replace("", None)
    blank = frame.isna().all(axis=1).to_numpy()
    return frame[~blank].reset_index(drop=True), numbers[~blank], issues


def _read_parquet(data: bytes, name: str) -> tuple[pd.DataFrame, np.ndarray, list[LogIssue]]:
    from pyarrow import parquet as pa_parquet

    try:
        table = pa_parquet.read_table(io.BytesIO(data))
    except (pa.ArrowInvalid, OSError) as exc:
        raise LogFormatError(f"{name}: not a readable Parquet file ({exc})") from exc
    _require_columns(table.column_names, name)
    frame = table.select([c for c in COLUMNS if c in table.column_names]).to_pandas()
    return frame, np.arange(1, len(frame) + 1), []


def _require_columns(columns: list[str], name: str) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise LogFormatError(
            f"{name}: missing column(s) {', '.join(missing)}; a log needs "
            f"{', '.join(REQUIRED_COLUMNS)} and may have {', '.join(OPTIONAL_COLUMNS)}"
            f" (found: {', '.join(columns) or 'none'})"
        )


# ------------------------------------------------------------------ validation


def _validate(frame: pd.DataFrame, lines: np.ndarray, issues: list[LogIssue], name: str) -> LogImport:
    """Check every column of every row at once, drop the bad rows, merge repeats."""
    issue_lines = np.unique(np.array([issue.line for issue in issues], dtype=np.int64))
    # every row once: the rows read whole, plus bad lines that never became a row
    rows_read = len(frame) + int((~_contains(issue_lines, lines)).sum())
    for column in COLUMNS:
        if column not in frame.columns:
            frame[column] = None
    frame = frame[list(COLUMNS)].copy()
    # rows a reader already found wrong stay out, whatever the column checks say
    bad = _contains(lines, issue_lines)
    found: list[tuple[np.ndarray, str, str]] = []

    def flag(mask: np.ndarray, column: str, message: str) -> None:
        nonlocal bad
        mask = np.asarray(mask, dtype=bool)
        if mask.any():
            found.append((lines[mask], column, message))
            bad |= mask

    for column in TEXT_COLUMNS:
        if column != "timestamp":
            # one text dtype (missing stays missing), also for e.g. integer ids in Parquet
            frame[column] = frame[column].astype("str")
    for column in ID_COLUMNS:
        values = frame[column]
        missing = values.isna().to_numpy()
        flag(missing, column, "required, missing")
        flag(~missing & (values.fillna("").str.strip() == "").to_numpy(), column, "required, a non-empty string")

    rank = pd.to_numeric(frame["rank"], errors="coerce")
    raw_rank = frame["rank"]
    flag(raw_rank.isna().to_numpy(), "rank", "required, missing")
    rank_values = rank.to_numpy(dtype=float, na_value=np.nan)
    not_number = rank.isna().to_numpy() & raw_rank.notna().to_numpy()
    flag(not_number, "rank", "not a whole number")
    with np.errstate(invalid="ignore"):
        fractional = ~np.isnan(rank_values) & (np.floor(rank_values) != rank_values)
        below_one = ~np.isnan(rank_values) & ~fractional & (rank_values < 1)
    flag(fractional, "rank", "not a whole number")
    flag(below_one, "rank", "must be 1 or more (ranks are 1-based)")

    score = pd.to_numeric(frame["score"], errors="coerce")
    raw_score = frame["score"]
    score_values = score.to_numpy(dtype=float, na_value=np.nan)
    score_missing = raw_score.isna().to_numpy()
    flag(score_missing, "score", "required, missing")
    # to_numeric turns unparseable text into NaN; a literal NaN / inf is also refused
    flag(~score_missing & ~np.isfinite(score_values), "score", "not a finite number")

    stamps = frame["timestamp"]
    if pd.api.types.is_datetime64_any_dtype(stamps.dtype):
        parsed = stamps.dt.tz_localize("UTC") if stamps.dt.tz is None else stamps.dt.tz_convert("UTC")
    else:
        parsed = pd.to_datetime(stamps, utc=True, errors="coerce", format="ISO8601")
        flag((parsed.isna() & stamps.notna()).to_numpy(), "timestamp", "not an ISO 8601 date-time")
    frame["timestamp"] = parsed
    frame["rank"] = np.where(bad, 0, np.nan_to_num(rank_values, nan=0)).astype(np.int64)
    frame["score"] = score_values
    frame["line"] = lines.astype(np.int64)

    issues = _issue_list(issues, found, name)
    good = frame[~bad].reset_index(drop=True)
    duplicated = good.duplicated(list(ID_COLUMNS), keep="first").to_numpy()
    conflicts: list[LogIssue] = []
    if duplicated.any():
        first = good.groupby(list(ID_COLUMNS), sort=False)[["rank", "score", "line"]].transform("first")
        for column in ("rank", "score"):
            differs = duplicated & (good[column].to_numpy() != first[column].to_numpy())
            for line, value, kept, kept_line in zip(
                good["line"].to_numpy()[differs],
                good[column].to_numpy()[differs],
                first[column].to_numpy()[differs],
                first["line"].to_numpy()[differs],
                strict=True,
            ):
                conflicts.append(
                    LogIssue(name, int(line), column, f"repeats line {kept_line} with {column} {value} instead of {kept}; line {kept_line} is kept")
                )
        conflicts.sort(key=lambda issue: (issue.line, issue.field))
        good = good[~duplicated].reset_index(drop=True)
    return LogImport(
        source=name,
        rows=good,
        issues=issues,
        duplicates=int(duplicated.sum()),
        conflicts=conflicts,
        rows_read=rows_read,
    )


def _contains(values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """np.isin for line numbers; the lookup-table method is linear, where the
    default sorts a million lines."""
    if not len(values) or not len(wanted):
        return np.zeros(len(values), dtype=bool)
    return np.isin(values, wanted, kind="table")


def _issue_list(
    read_issues: list[LogIssue], found: list[tuple[np.ndarray, str, str]], name: str
) -> list[LogIssue]:
    """Issues in file order; each (line, field) once, the first reason found (a
    reader's own finding first: it saw the value before it was emptied)."""
    seen = {(issue.line, issue.field) for issue in read_issues}
    issues = list(read_issues)
    for line_numbers, column, message in found:
        for line in line_numbers.tolist():
            if (line, column) not in seen:
                seen.add((line, column))
                issues.append(LogIssue(name, int(line), column, message))
    return sorted(issues, key=lambda issue: (issue.line, issue.field))


def turns(rows: pd.DataFrame) -> list[str]:
    """The message ids of a log in the order they first appear."""
    return rows["message_id"].drop_duplicates().tolist()
