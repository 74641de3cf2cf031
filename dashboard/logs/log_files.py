"""Reading a retrieval-log file into one frame: JSONL, CSV or Parquet. Pure.

Each reader returns (frame of the log's columns, the file line of each row, issues);
``retrieval_log.read_log_bytes`` picks the reader and validates the frame. The
JSONL reader hands the whole buffer to arrow and looks at a line on its own only
when arrow refuses it, so a large clean log is one parse, not a Python loop per row.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from connectors.common.errors import MemlensError
from connectors.common.lines import LINE, MAX_DEPTH, MAX_RANK, LineIssue, clip, parse_line

if TYPE_CHECKING:  # imported where used: `memlens monitor` over Parquet never needs pandas
    import pandas as pd

REQUIRED_COLUMNS = ("message_id", "memory_id", "rank", "score")
# floor and floor_segment: the floor the agent applied to the turn and where it came
# from (dashboard/logs/writer.py). Read leniently: a floor that is not a finite number
# is no floor logged, never a bad row (the DuckDB readers take it so too: columnar.py)
# rule, kept, shadow_rule, shadow_kept: what decided each row and a shadow config's
# decision (writer.py), read as leniently: a decision that is not true or false and a
# rule that is not text are none
DECISION_COLUMNS = ("rule", "kept", "shadow_rule", "shadow_kept")
DECISION_FLAGS = ("kept", "shadow_kept")
DECISION_NAMES = ("rule", "shadow_rule")
OPTIONAL_COLUMNS = ("user_id", "query", "timestamp", "store", "floor", "floor_segment", *DECISION_COLUMNS)
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
ID_COLUMNS = ("message_id", "memory_id")
TEXT_COLUMNS = ("message_id", "memory_id", "user_id", "query", "timestamp", "store", "floor_segment", *DECISION_NAMES)
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
        ("floor", pa.float64()),
        ("floor_segment", pa.string()),
        ("rule", pa.string()),
        ("kept", pa.bool_()),
        ("shadow_rule", pa.string()),
        ("shadow_kept", pa.bool_()),
    ]
)


class LogFormatError(MemlensError, ValueError):
    """The file as a whole cannot be read: unknown format, not a table, a required
    column missing. Bad rows never raise this; they are reported one by one."""


def detect_format(name: str) -> str:
    suffix = Path(name).suffix.lower()
    try:
        return FORMATS[suffix]
    except KeyError:
        raise LogFormatError(
            f"{name}: cannot tell the log format from {suffix or 'no extension'!r}; "
            "use .jsonl, .csv or .parquet (OTLP JSON traces: .json or .jsonl)"
        ) from None


# ------------------------------------------------------------------ JSONL


def _parse_json_block(block, *, single_block: bool = False) -> pa.Table:
    """Arrow's JSON reader on a buffer. `single_block` reads it as one block on one
    thread, so an error's "in row N" counts rows from the start of the buffer."""
    from pyarrow import json as pa_json

    options = pa_json.ParseOptions(explicit_schema=_JSON_SCHEMA, unexpected_field_behavior="ignore")
    # A buffer within one of arrow's blocks (1 MB) is parsed by one thread anyway: on this
    # thread, without waking the pool (the bad lines of a large log are named this way)
    one_thread = single_block or len(block) <= pa_json.ReadOptions().block_size
    read_options = (
        pa_json.ReadOptions(use_threads=False, block_size=max(len(block), 1 << 16))
        if one_thread
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


def _set_aside_non_objects(data: bytes, name: str) -> tuple[bytes, list[LineIssue]]:
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


def _set_aside_deep_lines(data: bytes, name: str) -> tuple[bytes, list[LineIssue]]:
    """The data with every line nested deeper than MAX_DEPTH (anywhere, an extra
    field included, which arrow would read and drop) blanked, and an issue for each.

    Counting brackets per line is one vectorised pass; only a line holding more than
    MAX_DEPTH of them can nest that deep, and only such a line is parsed in Python,
    by the bounded parser every reader uses (which also refuses over-long numbers)."""
    if data.count(b"{") + data.count(b"[") <= MAX_DEPTH:  # C-speed: no line can nest that deep
        return data, []
    raw = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(raw == ord("\n"))
    ends = newlines if data.endswith(b"\n") else np.append(newlines, len(raw))
    starts = np.concatenate([[0], newlines + 1])[: len(ends)]
    opens = raw == ord("{")
    opens |= raw == ord("[")
    # bracket positions (in order: a log row has one or two), counted per line
    brackets = np.flatnonzero(opens)
    per_line = np.searchsorted(brackets, ends) - np.searchsorted(brackets, starts)
    suspects = np.flatnonzero(per_line > MAX_DEPTH)
    if not len(suspects):
        return data, []
    blanked, issues = bytearray(data), []
    for index in suspects.tolist():
        start, end = int(starts[index]), int(ends[index])
        problem = parse_line(data[start:end].decode("utf-8", "replace"), index + 1, name)
        if isinstance(problem, LineIssue):
            issues.append(problem)
            blanked[start:end] = b" " * (end - start)
    return bytes(blanked), issues


_MAX_SINGLE_BLOCK = 2**31 - 1  # arrow's block size is a 32-bit int


def read_jsonl(data: bytes, name: str) -> tuple[pd.DataFrame, np.ndarray, list[LineIssue]]:
    """Parse with arrow's JSON reader, which takes a whole buffer at once.

    A clean file is one parse. When a parse fails, arrow names the row it stopped
    at: the rows before it are parsed as one block, that one line is looked at on
    its own (for a message naming its field), and parsing resumes after it. So a
    log with a few bad rows costs about two parses, not a Python loop per row. An
    error that names no row falls back to halving the block until the failing
    lines stand alone."""
    return _in_line_order(*_jsonl_parts(data, name))


_Parts = tuple[list[pa.Table], list[np.ndarray], list[tuple[int, dict]], list[LineIssue]]


def _jsonl_parts(data: bytes, name: str) -> _Parts:
    """read_jsonl's rows before they are one frame: the tables arrow parsed with the
    line number of each row, the rows of lines looked at alone, and the issues."""
    data, set_aside = _set_aside_non_objects(data, name)
    data, too_deep = _set_aside_deep_lines(data, name)
    set_aside = sorted(set_aside + too_deep, key=lambda issue: issue.line)
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
        return [table], [np.arange(1, line_count + 1)], [], []

    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    # byte offset where each line starts, and the line index of each non-blank row
    starts = np.concatenate([[0], np.cumsum([len(line) + 1 for line in lines])])
    row_lines = np.flatnonzero([bool(line.strip()) for line in lines])
    buffer = pa.py_buffer(data)
    tables: list[pa.Table] = []
    line_numbers: list[np.ndarray] = []
    issues: list[LineIssue] = list(set_aside)
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
    return tables, line_numbers, single_rows, issues


def _in_line_order(
    tables: list[pa.Table], line_numbers: list[np.ndarray], single_rows: list[tuple[int, dict]], issues: list[LineIssue]
) -> tuple[pd.DataFrame, np.ndarray, list[LineIssue]]:
    """The rows arrow parsed (`tables`, with their line numbers) and those looked at
    alone (`single_rows`) as one frame in line order."""
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


def read_jsonl_lines(lines: list[bytes], numbers: np.ndarray, name: str) -> tuple[pd.DataFrame, np.ndarray, list[LineIssue]]:
    """What ``read_jsonl`` gives for a few lines of a file taken out of it (the rows a
    DuckDB scan marked bad), with the file's line `numbers`, at the cost of one arrow
    parse. read_jsonl parses twice for each line arrow refuses, to find it and then
    the rows before it; a line with a field of another JSON type than the schema's
    (text for a score, a number for an id) is one arrow refuses, so it is looked at
    alone from the start, and the rest are one block."""
    single_rows: list[tuple[int, dict]] = []
    issues: list[LineIssue] = []
    block: list[int] = []
    for position, (raw, number) in enumerate(zip(lines, numbers.tolist(), strict=True)):
        obj = parse_line(raw.decode("utf-8", "replace"), number, name)
        if isinstance(obj, dict) and _arrow_refuses(obj):
            row, problems = _diagnose_json_line(raw, number, name)
            issues.extend(problems)
            if row is not None:
                single_rows.append((number, row))
        else:
            block.append(position)  # read_jsonl decides, as it would have
    tables: list[pa.Table] = []
    line_numbers: list[np.ndarray] = []
    if block:
        # read_jsonl's parts of these lines, their numbers (1 to len(block)) made the file's
        kept = np.asarray(numbers, dtype=np.int64)[block]
        tables, block_lines, block_rows, block_issues = _jsonl_parts(b"\n".join(lines[i] for i in block) + b"\n", name)
        line_numbers = [kept[part - 1] for part in block_lines]
        single_rows += [(int(kept[number - 1]), row) for number, row in block_rows]
        issues += [dataclasses.replace(issue, line=int(kept[issue.line - 1])) for issue in block_issues]
    issues.sort(key=lambda issue: issue.line)
    return _in_line_order(tables, line_numbers, single_rows, issues)


def _arrow_refuses(obj: dict) -> bool:
    """True when a field of the schema holds another JSON type than the schema's:
    arrow's reader stops at such a line ("changed from number to string")."""
    for column in COLUMNS:
        value = obj.get(column)
        if value is None:
            continue
        if column in DECISION_FLAGS:
            if not isinstance(value, bool):
                return True
        elif column in TEXT_COLUMNS:
            if not isinstance(value, str):
                return True
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            return True
    return False


def _json_frame(table: pa.Table) -> pd.DataFrame:
    import pandas as pd

    # arrow-backed floats keep a JSON null (missing) apart from a NaN (not finite)
    return table.to_pandas(types_mapper={pa.float64(): pd.ArrowDtype(pa.float64())}.get)


def _diagnose_json_line(raw: bytes, number: int, name: str) -> tuple[dict | None, list[LineIssue]]:
    """Why arrow refused one line, in the user's terms; the row if it is fine after all."""

    def issue(field_name: str, message: str) -> LineIssue:
        return LineIssue(name, number, field_name, message)

    if not raw.strip():
        return None, []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [issue(LINE, f"not valid UTF-8 at byte {exc.start + 1}")]
    obj = parse_line(text, number, name)
    if isinstance(obj, LineIssue):
        return None, [obj]
    # A field of the wrong type is reported here and left empty, so the rest of the
    # row still goes through the column checks and every bad field is named.
    problems = []
    row: dict = {}
    for column in COLUMNS:
        value = obj.get(column)
        row[column] = None
        if value is None:
            continue
        if column == "floor":  # lenient (see OPTIONAL_COLUMNS): a floor that is no number is none
            floor = None if isinstance(value, bool) or not isinstance(value, (int, float)) else float(value)
            row[column] = floor if floor is not None and math.isfinite(floor) else None
        elif column in ("floor_segment", *DECISION_NAMES):
            row[column] = value if isinstance(value, str) else None
        elif column in DECISION_FLAGS:
            row[column] = value if isinstance(value, bool) else None
        elif column == "rank":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
                problems.append(issue(column, f"{_short(value)} is not a whole number"))
            elif not -MAX_RANK <= value <= MAX_RANK:
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


def read_csv(data: bytes, name: str) -> tuple[pd.DataFrame, np.ndarray, list[LineIssue]]:
    from pyarrow import csv as pa_csv

    issues: list[LineIssue] = []
    header = data.split(b"\n", 1)[0].decode("utf-8", "replace").strip().lstrip("\ufeff")
    columns = [c.strip().strip('"') for c in header.split(",")] if header else []
    require_columns(columns, name)

    def bad_row(row) -> str:
        if row.text.strip():
            issues.append(
                LineIssue(
                    name,
                    row.number,
                    LINE,
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


def read_parquet(data: bytes, name: str) -> tuple[pd.DataFrame, np.ndarray, list[LineIssue]]:
    from pyarrow import parquet as pa_parquet

    try:
        table = pa_parquet.read_table(io.BytesIO(data))
    except (pa.ArrowInvalid, OSError) as exc:
        raise LogFormatError(f"{name}: not a readable Parquet file ({exc})") from exc
    require_columns(table.column_names, name)
    frame = nan_score_as_infinite(table.select([c for c in COLUMNS if c in table.column_names])).to_pandas()
    return frame, np.arange(1, len(frame) + 1), []


def nan_score_as_infinite(table: pa.Table) -> pa.Table:
    """The table with each NaN score (a value, not a missing one) made +inf. pandas
    takes NaN for missing, and a missing score is a memory returned with no score
    (imported); a NaN in the file is not a finite number (a bad row), as DuckDB's
    checks say: as +inf the row checks name it so."""
    import pyarrow.compute as pc

    if "score" not in table.column_names or not pa.types.is_floating(table.schema.field("score").type):
        return table
    score = table.column("score")
    nan = pc.is_nan(score)
    if not pc.any(nan).as_py():
        return table
    return table.set_column(table.column_names.index("score"), "score", pc.if_else(nan, pa.scalar(math.inf, score.type), score))


def require_columns(columns: list[str], name: str) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise LogFormatError(
            f"{name}: missing column(s) {', '.join(missing)}; a log needs "
            f"{', '.join(REQUIRED_COLUMNS)} and may have {', '.join(OPTIONAL_COLUMNS)}"
            f" (found: {clip(', '.join(columns)) or 'none'})"
        )
