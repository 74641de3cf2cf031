"""Reading a retrieval-log file with DuckDB, columnar, checking every row in SQL. Pure.

For a clean JSONL, CSV or Parquet file this is the fast path: DuckDB parses the
file (``read_json`` / ``read_csv`` / ``read_parquet``) and the rules the validating
reader applies to every row (``retrieval_log``: ids present and non-empty, rank a
whole number from 1, score finite or none, timestamp ISO 8601, each JSON field of its JSON
type; an empty-turn row allowed) are one more column of the same scan, ``bad``.
Nothing here names a bad row: a file with any bad row, or one DuckDB will not
parse, is read again by the validating reader, which names every one by file,
line and field. So a clean file costs one DuckDB scan, and a broken one costs that
scan plus the validating read it would have had anyway.

Used by ``retrieval_log.read_log`` (the Label page, `memlens logs check`) and by the
monitor's relation (dashboard.monitoring.relation), which keeps the scan in DuckDB.
read_log takes a JSONL file into memory by ``read_jsonl_rows`` instead, which checks
the text rules on whole Arrow columns after the scan (docs/monitoring.md, "Reading at
scale", says why a text field is read as VARCHAR and when it is read again).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import tempfile
import threading

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connectors.common.inbound import EARLIEST, LATEST
from connectors.common.lines import MAX_RANK
from dashboard.logs.log_files import detect_format

SNIFF_BYTES = 4096
# DuckDB's own memory. Past it, grouping the rows by (turn, memory) spills to a
# temporary folder instead of growing (DuckDB's default is 80% of the RAM): a month
# of 10,000,000 rows fits under it (about 1.3 GiB for the whole command), a longer
# one spills. A lower cap made that month spill too, a third slower
# (benchmarks/monitor.py).
MEMORY_LIMIT = "1.5GB"
_CONNECTIONS = itertools.count()
# A source SELECT gives: message_id, memory_id, rank, score, ts, user_id, store, source, bad, query,
# floor, floor_segment, rule, kept, shadow_rule, shadow_kept. The floor the agent applied to the turn is read leniently: a
# value that is not a finite number is NULL (no floor logged), never a bad row, as
# the validating reader takes it (retrieval_log.checked), so the two agree.
LOGGED_FLOOR = "CASE WHEN isfinite({0}) THEN {0} END"
# What decided each row (rule, kept, shadow_rule, shadow_kept: dashboard/logs/writer.py),
# read as leniently: a decision is true or false, anything else (a number, the text
# "true") none, as the validating reader takes it (log_files.DECISION_COLUMNS). {0} is
# the value as text: JSON text, a CSV cell, or a Parquet column cast to VARCHAR.
LOGGED_DECISION = "CASE lower({0}) WHEN 'true' THEN true WHEN 'false' THEN false END"
DECISIONS = "rule, kept, shadow_rule, shadow_kept"


def connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    # naive timestamps in a Parquet file are UTC, as the validating reader takes them
    con.execute("SET GLOBAL TimeZone = 'UTC'")  # GLOBAL: cursors of this database too
    # no progress bar: a long scan would otherwise draw one into the command's output
    con.execute("SET enable_progress_bar = false")
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    # a spill goes to the system's temporary folder (DuckDB's default, .tmp in the
    # working directory, may be read-only under cron), one folder per connection: the
    # page's sessions each hold one, and two databases must not share spill files.
    # DuckDB makes the folder only when it spills, and removes it when closed.
    spill = os.path.join(tempfile.gettempdir(), f"memlens-duckdb-{os.getpid()}-{next(_CONNECTIONS)}")
    con.execute(f"SET temp_directory = {_quote(spill)}")
    return con


# One in-memory database per process for reads that end within a call (read_log's
# scan): a read on a database opened for it took 30-90 ms longer than on an open one,
# as much as all the work after a million-row scan, and a cursor of an open database
# costs nothing (benchmarks/log_import.py times both).
_SHARED: duckdb.DuckDBPyConnection | None = None
_SHARED_LOCK = threading.Lock()


def cursor() -> duckdb.DuckDBPyConnection:
    """A connection of its own (close it when done) to this process's shared
    database, set up as ``connect`` sets one up. Cursors may run at once in several
    threads."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = connect()
            # text as Arrow's large_string, the layout pandas keeps text in: the four text
            # columns of a million rows became pandas in 1.3 ms instead of 15 ms (no cast)
            _SHARED.execute("SET arrow_large_buffer_size = true")
        return _SHARED.cursor()


def file_kind(path: str) -> str:
    """jsonl, csv or parquet for DuckDB; "validate" for what only memlens reads.
    Raises OwnFileError for one of memlens's own files that is no log (own_files.py)."""
    kind = detect_format(path)
    if kind != "parquet":
        from dashboard.logs.own_files import refuse_own_file

        refuse_own_file(path)
    if kind != "jsonl":
        return kind
    from dashboard.logs import otlp, read_log  # (and pandas) only for JSON: Parquet and CSV never need them

    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if otlp.looks_like_otlp(head) or read_log.looks_like_read_log(head):
        return "validate"
    return kind


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# Blank is what the validating reader calls blank: empty after Python's str.strip(),
# whose whitespace (tabs, \x1c-\x1f, U+3000, ...) is more than DuckDB's trim() strips.
_WHITESPACE = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())


def _blank(column: str) -> str:
    # An id that starts with a character no whitespace is (nearly every id) is not
    # blank: decided on its first character, which is cheaper than trimming every id.
    return (
        f"(CASE WHEN unicode({column}) BETWEEN 33 AND 132 OR unicode({column}) BETWEEN 161 AND 5759 THEN false "
        f"ELSE trim({column}, {_quote(_WHITESPACE)}) = '' END)"
    )


def _number_rules(memory_id: str, rank: str, score: str) -> str:
    """The rules on a row's memory, rank and score, in SQL: a turn with no memory has
    neither (an empty turn); a hit has a memory, a whole rank from 1 to MAX_RANK and a
    finite score or none (a memory returned with no score, as the agent's log writes
    a NaN or infinite one). Shared by _checks and read_jsonl_rows. Never NULL."""
    return f"""(CASE WHEN {memory_id} IS NULL THEN ({rank} IS NOT NULL OR {score} IS NOT NULL)
        ELSE ({rank} IS NULL OR NOT isfinite({rank}) OR {rank} <> floor({rank}) OR {rank} < 1 OR {rank} > {MAX_RANK}
              OR ({score} IS NOT NULL AND NOT isfinite({score}))) END)"""


def _out_of_range(ts: str) -> str:
    """A time outside the inbound boundary's range (year 9999): a bad row."""
    return f"({ts} IS NOT NULL AND ({ts} < TIMESTAMPTZ '{EARLIEST.isoformat()}' OR {ts} >= TIMESTAMPTZ '{LATEST.isoformat()}'))"


def _checks(message_id: str, memory_id: str, rank: str, score: str, ts_text: str, ts: str, extra_bad: str = "false") -> str:
    """The `bad` column: the row-level rules of retrieval_log, in SQL."""
    # NULL (e.g. trim of a missing memory_id) is not a finding: coalesce to false
    return f"""coalesce((
        {message_id} IS NULL OR {_blank(message_id)} OR {_blank(memory_id)}
        OR {_number_rules(memory_id, rank, score)}
        OR ({ts_text} IS NOT NULL AND {ts} IS NULL)
        OR {_out_of_range(ts)}
        OR {extra_bad}
    ), false)"""


# The JSON fields that hold text. Each is read one of two ways (``_json_source``):
# as VARCHAR, which costs least, or as JSON text, which shows its JSON type.
TEXT_FIELDS = ("message_id", "memory_id", "user_id", "query", "timestamp", "store")
SAMPLE_BYTES = 1 << 14  # about 200 lines of a typical log: enough to see numeric ids


def _unsure(column: str) -> str:
    """True where a VARCHAR read of a JSON field may hold what was not a string.
    DuckDB turns a number, true/false, an object or an array into text (9 into '9',
    NaN into 'NaN'), which cannot be told from the string '9' once read; every such
    text casts to a double, is true/false, or starts with a bracket. Only the first
    character is looked at for nearly every id: a cast is tried only on text that
    starts like a number (a digit, a sign, a dot, n/N/i/I for NaN and Infinity)."""
    first = f"unicode({column})"
    maybe_number = f"({first} BETWEEN 48 AND 57 OR {first} IN (43, 45, 46, 73, 78, 105, 110))"
    return (
        f"({column} IS NOT NULL AND CASE WHEN {maybe_number} THEN TRY_CAST({column} AS DOUBLE) IS NOT NULL"
        f" WHEN {first} IN (91, 123) THEN true WHEN {first} IN (102, 116) THEN {column} IN ('true', 'false') ELSE false END)"
    )


def looks_like_other_json(value: str) -> bool:
    """The Python side of ``_unsure``: a string a non-string JSON value could have been read as."""
    return re.match(OTHER_JSON, value) is not None


def exact_text_fields(path: str) -> frozenset[str]:
    """The text fields to read as JSON text from the start: those whose values in the
    file's first lines include a non-string, or a string a non-string could be read as
    (numeric ids such as "12345"). A log like that would otherwise find it out at the
    end of a VARCHAR scan and be read a second time."""
    with open(path, "rb") as handle:
        head = handle.read(SAMPLE_BYTES)
    lines = head.split(b"\n")
    if len(head) == SAMPLE_BYTES:
        lines = lines[:-1]  # the last one may be cut short
    exact = set()
    for line in lines:
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):  # broken, or nested past Python's limit
            continue  # the scan finds it
        if not isinstance(row, dict):
            continue
        for name in TEXT_FIELDS:
            value = row.get(name)
            if value is not None and (not isinstance(value, str) or looks_like_other_json(value)):
                exact.add(name)
    return frozenset(exact)


def _json_source(path: str, index: int, exact: frozenset[str] | set[str] = frozenset(TEXT_FIELDS)) -> str:
    """read_json with rank and score as DuckDB's JSON text, and each text field as
    VARCHAR or, when in `exact`, as JSON text too (strings keep their quotes).

    JSON text shows a field of the wrong JSON type: a string starts with a quote, a
    number does not. Typed columns alone would not: DuckDB casts silently there ("2"
    to 2, 9 to "9", 1.5 to a rank of 2). But JSON text costs a second parse of every
    value to get a string's value out, so a text field is read as VARCHAR unless it is
    in `exact`; a VARCHAR value a non-string could have become (``_unsure``) makes its
    row bad here, and the validating reader, by way of read_log (which reads the file
    again with every text field exact), says whether it is."""
    columns = ", ".join(f"'{c}': '{'JSON' if c in exact or c not in TEXT_FIELDS else 'VARCHAR'}'" for c in (*TEXT_FIELDS, "rank", "score"))
    columns += ", 'floor': 'JSON', 'floor_segment': 'VARCHAR', " + _JSON_DECISION_TYPES

    def is_text(column: str) -> str:
        return f"({column} IS NULL OR starts_with({column}, chr(34)))"

    def text(column: str) -> str:
        # the string's value, escapes decoded. A value of another JSON type gives its
        # JSON text here, but its row is bad (wrong_type below) and never used. The
        # JSON path is cheaper than taking the quotes off with substr (measured)
        return f"({column} ->> '$')" if column in exact else column

    def number(column: str) -> str:
        # the JSON text of a string ('"2"') does not cast: a number given as text is NULL
        return f"TRY_CAST(CAST({column} AS VARCHAR) AS DOUBLE)"

    # a field of the wrong JSON type (a number for an id, text for a score) is bad,
    # as the validating reader says; its value above is then NULL
    wrong_type = " OR ".join(
        [f"NOT {is_text(c)}" for c in TEXT_FIELDS if c in exact]
        + [f"({c} IS NOT NULL AND {number(c)} IS NULL)" for c in ("rank", "score")]
    )
    unsure = " OR ".join(_unsure(c) for c in TEXT_FIELDS if c not in exact) or "false"
    return f"""
        SELECT message_id, memory_id, rank, score, ts, user_id, store, {index} AS source,
               {_checks("message_id", "memory_id", "rank", "score", "ts_text", "ts", "wrong_type OR unsure")} AS bad, query,
               {LOGGED_FLOOR.format("floor")} AS floor, floor_segment, {DECISIONS}
        FROM (
            SELECT {text("message_id")} AS message_id, {text("memory_id")} AS memory_id,
                   {number("rank")} AS rank, {number("score")} AS score,
                   {text("timestamp")} AS ts_text, TRY_CAST({text("timestamp")} AS TIMESTAMPTZ) AS ts,
                   {text("user_id")} AS user_id, {text("store")} AS store, {text("query")} AS query,
                   ({wrong_type}) AS wrong_type, ({unsure}) AS unsure,
                   {number("floor")} AS floor, floor_segment, {_JSON_DECISIONS}
            FROM read_json({_quote(path)}, columns = {{{columns}}}, format = 'newline_delimited')
        )"""


# the decision fields of a JSONL file: the names as text, the decisions as JSON text
# (a JSON true is the text true; the string "true" keeps its quotes, so it is none)
_JSON_DECISION_TYPES = "'rule': 'VARCHAR', 'kept': 'JSON', 'shadow_rule': 'VARCHAR', 'shadow_kept': 'JSON'"
_JSON_DECISIONS = (
    f"rule, {LOGGED_DECISION.format('CAST(kept AS VARCHAR)')} AS kept, "
    f"shadow_rule, {LOGGED_DECISION.format('CAST(shadow_kept AS VARCHAR)')} AS shadow_kept"
)


# ------------------------------------------------------------------ a JSONL file read into memory
# What retrieval_log.read_log takes for a JSONL file: one scan at nearly the cost of
# a plain typed read_json, the number rules in it, and the text rules checked after it
# on whole Arrow columns (the range of each field's first bytes) instead of an SQL
# expression per value, which cost as much again as the scan (benchmarks/log_import.py).
# The monitor's relation keeps the per-row SQL of _json_source: it never holds the
# rows in memory.

# First characters of what DuckDB makes of a non-string JSON value read as VARCHAR:
# a number (a digit, a sign; n/N/i/I for NaN and Infinity), true, false, [, {.
# Values whose first bytes all lie between two of these, as most ids' do ("msg-",
# "mem-", "user-"), cannot be one; otherwise each value is matched with OTHER_JSON.
_UNSURE_FIRST = np.array(sorted(b"+-.0123456789INfint[{"), dtype=np.uint8)
OTHER_JSON = r"^(?:[\[{]|(?:true|false|-?(?i:nan|inf|infinity)|-?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)$)"


def _first_byte_range(column: pa.ChunkedArray) -> tuple[int, int, bool]:
    """The lowest and highest first byte of the non-empty values (256, -1 when there
    are none), and whether a value is "" (nulls are neither). Read off the Arrow
    buffers: cheaper than a string minimum and maximum, which compare whole values."""
    low, high, any_empty = 256, -1, False
    for chunk in column.chunks:
        if chunk.null_count == len(chunk):
            continue  # only nulls (a field the log leaves out): no value, so none empty
        if chunk.type not in (pa.string(), pa.large_string()):
            chunk = chunk.cast(pa.large_string())  # one of the two layouts read here
        _, offsets_buffer, data_buffer = chunk.buffers()
        width = np.int32 if chunk.type == pa.string() else np.int64
        # the offsets as they are (no widening copy): numpy indexes with either width
        offsets: np.ndarray = np.frombuffer(offsets_buffer, width)[chunk.offset : chunk.offset + len(chunk) + 1]
        if data_buffer is None or not len(chunk):
            any_empty = any_empty or len(chunk) > chunk.null_count
            continue
        data = np.frombuffer(data_buffer, np.uint8)
        starts = offsets[:-1]
        filled = offsets[1:] > starts
        if chunk.null_count:
            valid = chunk.is_valid().to_numpy(zero_copy_only=False)
            any_empty = any_empty or bool(np.any(valid & ~filled))
            starts = starts[filled & valid]
        elif not filled.all():
            any_empty = True
            starts = starts[filled]
        firsts = data[starts]  # with no value empty, every start is a value's first byte
        if len(firsts):
            low, high = min(low, int(firsts.min())), max(high, int(firsts.max()))
    return low, high, any_empty


def _may_be_other_json(column: pa.ChunkedArray, low: int, high: int) -> bool:
    # no unsure first character from the lowest first byte to the highest: none can be
    if low > high or not np.any((_UNSURE_FIRST >= low) & (_UNSURE_FIRST <= high)):
        return False
    return bool(pc.any(pc.match_substring_regex(column, OTHER_JSON)).as_py())


def _any_blank(column: pa.ChunkedArray, low: int, high: int, any_empty: bool) -> bool:
    """An id that is blank as Python's str.strip() sees it (see _blank)."""
    if any_empty:
        return True
    if low > high or (low >= 0x21 and high <= 0x7E):
        return False  # every id starts with a printable ASCII character
    return bool(pc.any(pc.equal(pc.utf8_trim(column, _WHITESPACE), "")).as_py())


# The `pair` column of a read into memory: what finds repeated (message_id, memory_id)
# pairs (fast_path._sharing_a_hash). NULL for an empty turn, which has no pair.
PAIR_HASH = "CASE WHEN memory_id IS NOT NULL THEN hash(message_id, memory_id) END"


def read_jsonl_rows(con: duckdb.DuckDBPyConnection, path: str) -> pa.Table:
    """The rows of a JSONL file, each with its `bad` column (the number, time and id
    rules) and `pair` (the hash of message_id and memory_id, NULL for an empty turn):
    message_id, memory_id, rank, score (doubles), user_id, query, timestamp, store.

    The text fields are read as VARCHAR, which cannot tell a string from what a
    number, true/false, an object or an array becomes, and `bad` does not look at
    blank ids: use the rows only when ``text_is_certain`` says so. Otherwise read the
    file with _json_source and every text field exact, which marks each such row."""
    # A timestamp typed in read_json is strict, unlike the other types: a number, true
    # or a string that is not a date-time stops the scan (a DuckDB error, so the
    # validating reader names the row), and it is parsed in the scan.
    columns = ", ".join(f"'{c}': 'VARCHAR'" for c in TEXT_FIELDS if c != "timestamp")
    columns += ", 'timestamp': 'TIMESTAMPTZ', 'rank': 'JSON', 'score': 'JSON', 'floor': 'JSON', 'floor_segment': 'VARCHAR', "
    columns += _JSON_DECISION_TYPES
    # the number rules are cheap in SQL, and run on both cores there; the JSON text
    # of anything but a number (a quoted "2", true, an object) does not cast
    return con.sql(
        f"""SELECT message_id, memory_id, rank, score, user_id, query, timestamp, store,
                   coalesce(message_id IS NULL
                       OR (rank_json IS NOT NULL AND rank IS NULL) OR (score_json IS NOT NULL AND score IS NULL)
                       OR {_out_of_range("timestamp")}
                       OR {_number_rules("memory_id", "rank", "score")}, false) AS bad,
                   {PAIR_HASH} AS pair, {LOGGED_FLOOR.format("floor")} AS floor, floor_segment, {DECISIONS}
            FROM (SELECT message_id, memory_id, user_id, query, store, timestamp, rank AS rank_json, score AS score_json,
                         TRY_CAST(CAST(rank AS VARCHAR) AS DOUBLE) AS rank, TRY_CAST(CAST(score AS VARCHAR) AS DOUBLE) AS score,
                         TRY_CAST(CAST(floor AS VARCHAR) AS DOUBLE) AS floor, floor_segment, {_JSON_DECISIONS}
                  FROM read_json({_quote(path)}, columns = {{{columns}}}, format = 'newline_delimited'))"""
    ).to_arrow_table()


def text_is_certain(table: pa.Table) -> bool:
    """True when no text field of ``read_jsonl_rows``'s rows can be a blank id or
    another JSON type than a string. Numpy on the Arrow buffers: run it beside other
    work (it lets go of the GIL for nearly all of it)."""
    # the first bytes of each text field say for most ids that none can be blank or
    # another JSON type; only the rest are looked into, value by value
    ranges = {name: _first_byte_range(table.column(name)) for name in TEXT_FIELDS if name != "timestamp"}
    if any(_any_blank(table.column(name), *ranges[name]) for name in ("message_id", "memory_id")):
        return False  # which row is blank: the exact read's per-row rules say
    return not any(_may_be_other_json(table.column(n), *ranges[n][:2]) for n in ranges)


_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL")


def _table_source(reader: str, types: dict[str, str], index: int | str, *, csv: bool) -> str:
    """CSV (every column text) and Parquet (any column types): cast, then check. A
    column already of the right type is used as it is: turning ten million numbers
    or timestamps into text and back would cost more than the rest of the scan."""

    def text(name: str) -> str:
        if name not in types:
            return "CAST(NULL AS VARCHAR)"
        if types[name] == "VARCHAR":
            # an empty CSV cell is missing, as the validating reader takes it
            return f"NULLIF({name}, '')" if csv else name
        return f"CAST({name} AS VARCHAR)"

    def numeric(name: str) -> bool:
        return types.get(name, "").split("(")[0] in _NUMERIC

    def number(name: str) -> str:
        return f"CAST({name} AS DOUBLE)" if numeric(name) else f"TRY_CAST({text(name)} AS DOUBLE)"

    def decision(name: str) -> str:
        if types.get(name) == "BOOLEAN":
            return name
        return LOGGED_DECISION.format(text(name)) if name in types else "CAST(NULL AS BOOLEAN)"

    unparsed = " OR ".join(
        [f"({text(c)} IS NOT NULL AND {number(c)} IS NULL)" for c in ("rank", "score") if c in types and not numeric(c)]
    ) or "false"
    stamp = types.get("timestamp", "")
    if not stamp:
        ts_text, ts = "CAST(NULL AS VARCHAR)", "CAST(NULL AS TIMESTAMPTZ)"
    elif stamp.startswith("TIMESTAMP") or stamp == "DATE":
        ts_text, ts = "NULL", "CAST(timestamp AS TIMESTAMPTZ)"  # typed: nothing to parse
    else:
        ts_text, ts = text("timestamp"), f"TRY_CAST({text('timestamp')} AS TIMESTAMPTZ)"
    return f"""
        SELECT message_id, memory_id, rank, score, ts, user_id, store, source,
               {_checks("message_id", "memory_id", "rank", "score", "ts_text", "ts", "unparsed")} AS bad, query,
               {LOGGED_FLOOR.format("floor")} AS floor, floor_segment, {DECISIONS}
        FROM (
            SELECT {text("message_id")} AS message_id, {text("memory_id")} AS memory_id,
                   {number("rank")} AS rank, {number("score")} AS score, {ts_text} AS ts_text, {ts} AS ts,
                   {text("user_id")} AS user_id, {text("store")} AS store, {text("query")} AS query, ({unparsed}) AS unparsed,
                   {index} AS source, {number("floor")} AS floor, {text("floor_segment")} AS floor_segment,
                   {text("rule")} AS rule, {decision("kept")} AS kept,
                   {text("shadow_rule")} AS shadow_rule, {decision("shadow_kept")} AS shadow_kept
            FROM {reader}
        )"""


def fast_source(con: duckdb.DuckDBPyConnection, path: str, kind: str, index: int, *, exact: bool = False) -> str | None:
    """The SELECT reading `path` with DuckDB, or None when the validating reader must
    (a required column missing: it says which, in memlens's words). `exact` reads
    every JSON text field as JSON text: the second read of a file whose VARCHAR read
    had unsure rows."""
    if kind == "jsonl":
        return _json_source(path, index, frozenset(TEXT_FIELDS) if exact else exact_text_fields(path))
    reader = table_reader(path, kind)
    try:
        types = column_types(con, reader)
    except duckdb.Error:
        return None
    if not {"message_id", "memory_id", "rank", "score"} <= set(types):
        return None
    return _table_source(reader, types, index, csv=kind == "csv")


def table_reader(path: str, kind: str) -> str:
    """How DuckDB reads a CSV (every field as text, as the file reader does) or Parquet log file."""
    if kind == "csv":
        return f"read_csv({_quote(path)}, header = true, all_varchar = true)"
    return f"read_parquet({_quote(path)})"


def column_types(con: duckdb.DuckDBPyConnection, reader: str) -> dict[str, str]:
    """A table reader's columns and their DuckDB types, in the file's order."""
    return {str(row[0]): str(row[1]) for row in con.execute(f"DESCRIBE SELECT * FROM {reader}").fetchall()}


def parquet_sources(con: duckdb.DuckDBPyConnection, paths: dict[int, str]) -> list[str]:
    """Parquet files (by source index) as few SELECTs as there are schemas: one
    ``read_parquet`` over every file of a schema, each row's ``source`` from its
    file. DuckDB splits a Parquet scan by row group, and a day's file often holds
    one: a SELECT per file read a month of daily files on one core, a list of files
    is read on all of them."""
    groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for index, path in paths.items():
        groups.setdefault(tuple(column_types(con, table_reader(path, "parquet")).items()), []).append(index)
    selects = []
    for schema, indexes in groups.items():
        files = ", ".join(_quote(paths[index]) for index in indexes)
        # file_index counts the files of this list from 0: map it to the source index
        source = f"[{', '.join(str(index) for index in indexes)}][CAST(file_index AS BIGINT) + 1]"
        selects.append(_table_source(f"read_parquet([{files}])", dict(schema), source, csv=False))
    return selects


def probe(con: duckdb.DuckDBPyConnection, source: str) -> bool:
    """True when DuckDB reads the whole source without an error."""
    try:
        # count(bad), not count(*): a bare count may skip parsing the fields, and a line
        # that is a JSON array only fails when its fields are read
        con.execute(f"SELECT count(bad) FROM ({source})").fetchone()
    except duckdb.Error:
        return False
    return True
