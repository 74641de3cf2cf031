"""Reading a retrieval-log file with DuckDB, columnar, checking every row in SQL. Pure.

For a clean JSONL, CSV or Parquet file this is the fast path: DuckDB parses the
file (``read_json`` / ``read_csv`` / ``read_parquet``) and the rules the validating
reader applies to every row (``retrieval_log``: ids present and non-empty, rank a
whole number from 1, score finite, timestamp ISO 8601, each JSON field of its JSON
type; an empty-turn row allowed) are one more column of the same scan, ``bad``.
Nothing here names a bad row: a file with any bad row, or one DuckDB will not
parse, is read again by the validating reader, which names every one by file,
line and field. So a clean file costs one DuckDB scan, and a broken one costs that
scan plus the validating read it would have had anyway.

Used by ``retrieval_log.read_log`` (the Label page, `memlens logs check`) and by the
monitor's relation (dashboard.monitoring.relation), which keeps the scan in DuckDB.
"""

from __future__ import annotations

import itertools
import os
import tempfile

import duckdb

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
# A source SELECT gives: message_id, memory_id, rank, score, ts, user_id, store, source, bad, query


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


def file_kind(path: str) -> str:
    """jsonl, csv or parquet for DuckDB; "validate" for what only memlens reads."""
    kind = detect_format(path)
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


def _checks(message_id: str, memory_id: str, rank: str, score: str, ts_text: str, ts: str, extra_bad: str = "false") -> str:
    """The `bad` column: the row-level rules of retrieval_log, in SQL."""
    empty_turn = f"({memory_id} IS NULL AND {rank} IS NULL AND {score} IS NULL)"
    # NULL (e.g. trim of a missing memory_id) is not a finding: coalesce to false
    return f"""coalesce((
        {message_id} IS NULL OR {_blank(message_id)}
        OR ({memory_id} IS NULL AND NOT {empty_turn}) OR {_blank(memory_id)}
        OR (NOT {empty_turn} AND ({rank} IS NULL OR {rank} <> floor({rank}) OR {rank} < 1 OR {rank} > {MAX_RANK}))
        OR (NOT {empty_turn} AND ({score} IS NULL OR NOT isfinite({score})))
        OR ({ts_text} IS NOT NULL AND {ts} IS NULL)
        OR {extra_bad}
    ), false)"""


def _json_source(path: str, index: int) -> str:
    """read_json with every field as DuckDB's JSON text (strings keep their quotes),
    so a field of the wrong JSON type is seen: a string starts with a quote, a number
    does not. Comparing first characters is several times cheaper than json_type()
    on every field. (Typed columns, as in a plain read_json, would be cheaper still,
    but DuckDB casts silently there: "2" to 2, 9 to "9", 1.5 to a rank of 2.)"""
    names = ("message_id", "memory_id", "rank", "score", "user_id", "query", "timestamp", "store")
    columns = ", ".join(f"'{c}': 'JSON'" for c in names)

    def is_text(column: str) -> str:
        return f"({column} IS NULL OR starts_with({column}, chr(34)))"

    def text(column: str) -> str:
        # the string's value, escapes decoded. A value of another JSON type gives its
        # JSON text here, but its row is bad (wrong_type below) and never used. The
        # JSON path is cheaper than taking the quotes off with substr (measured)
        return f"({column} ->> '$')"

    def number(column: str) -> str:
        # the JSON text of a string ('"2"') does not cast: a number given as text is NULL
        return f"TRY_CAST(CAST({column} AS VARCHAR) AS DOUBLE)"

    # a field of the wrong JSON type (a number for an id, text for a score) is bad,
    # as the validating reader says; its value above is then NULL
    wrong_type = " OR ".join(
        [f"NOT {is_text(c)}" for c in ("message_id", "memory_id", "user_id", "query", "timestamp", "store")]
        + [f"({c} IS NOT NULL AND {number(c)} IS NULL)" for c in ("rank", "score")]
    )
    return f"""
        SELECT message_id, memory_id, rank, score, ts, user_id, store, {index} AS source,
               {_checks("message_id", "memory_id", "rank", "score", "ts_text", "ts", "wrong_type")} AS bad, query
        FROM (
            SELECT {text("message_id")} AS message_id, {text("memory_id")} AS memory_id,
                   {number("rank")} AS rank, {number("score")} AS score,
                   {text("timestamp")} AS ts_text, TRY_CAST({text("timestamp")} AS TIMESTAMPTZ) AS ts,
                   {text("user_id")} AS user_id, {text("store")} AS store, {text("query")} AS query, ({wrong_type}) AS wrong_type
            FROM read_json({_quote(path)}, columns = {{{columns}}}, format = 'newline_delimited')
        )"""


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
               {_checks("message_id", "memory_id", "rank", "score", "ts_text", "ts", "unparsed")} AS bad, query
        FROM (
            SELECT {text("message_id")} AS message_id, {text("memory_id")} AS memory_id,
                   {number("rank")} AS rank, {number("score")} AS score, {ts_text} AS ts_text, {ts} AS ts,
                   {text("user_id")} AS user_id, {text("store")} AS store, {text("query")} AS query, ({unparsed}) AS unparsed,
                   {index} AS source
            FROM {reader}
        )"""


def fast_source(con: duckdb.DuckDBPyConnection, path: str, kind: str, index: int) -> str | None:
    """The SELECT reading `path` with DuckDB, or None when the validating reader must
    (a required column missing: it says which, in memlens's words)."""
    if kind == "jsonl":
        return _json_source(path, index)
    if kind == "csv":
        reader = f"read_csv({_quote(path)}, header = true, all_varchar = true)"
    else:
        reader = f"read_parquet({_quote(path)})"
    try:
        types = {row[0]: str(row[1]) for row in con.execute(f"DESCRIBE SELECT * FROM {reader}").fetchall()}
    except duckdb.Error:
        return None
    if not {"message_id", "memory_id", "rank", "score"} <= set(types):
        return None
    return _table_source(reader, types, index, csv=kind == "csv")


def parquet_sources(con: duckdb.DuckDBPyConnection, paths: dict[int, str]) -> list[str]:
    """Parquet files (by source index) as few SELECTs as there are schemas: one
    ``read_parquet`` over every file of a schema, each row's ``source`` from its
    file. DuckDB splits a Parquet scan by row group, and a day's file often holds
    one: a SELECT per file read a month of daily files on one core, a list of files
    is read on all of them."""
    groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for index, path in paths.items():
        types = con.execute(f"DESCRIBE SELECT * FROM read_parquet({_quote(path)})").fetchall()
        groups.setdefault(tuple((str(row[0]), str(row[1])) for row in types), []).append(index)
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
        con.execute(f"SELECT count(*) FROM ({source})").fetchone()
    except duckdb.Error:
        return False
    return True
