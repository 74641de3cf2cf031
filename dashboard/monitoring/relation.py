"""Retrieval logs as one DuckDB relation, and the turns built from it. Pure (no streamlit).

The relation ``retrievals`` holds every row of every log file with the log's columns
(docs/domain.md: ids and scores), typed once:

    message_id VARCHAR, memory_id VARCHAR, rank DOUBLE, score DOUBLE, ts TIMESTAMPTZ,
    user_id VARCHAR, store VARCHAR, source INTEGER (which file), bad BOOLEAN

A clean JSONL, CSV or Parquet file is read by DuckDB itself (``read_json``,
``read_csv``, ``read_parquet``): the file is a view, never a pandas frame, and the
checks memlens makes on every row (ids present, rank a whole number from 1, score
finite, timestamp ISO 8601, JSON fields of the right type) are a column of the same
scan, ``bad``. A file with any bad row, a file DuckDB cannot parse, and the formats
it does not read (OTLP traces, the app's read log) go through memlens's validating
reader (``retrieval_log.read_log``), which names every bad row by file, line and
field; its good rows join the relation as an Arrow table. So the usual clean case is
one pass over the files, and only a file with problems is read twice.

``turns`` aggregates the relation per message_id in SQL, with repeated
(message_id, memory_id) pairs merged: when, top-1 score, the scores of its memories.
An empty-turn row (a message_id and no memory_id: docs/monitoring.md) gives a turn
with no memories. Everything later (windows, alerts, the page) reads ``turns``, so a
new floor is one query over it, not a new read of the files.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from connectors.lines import MAX_RANK, LineIssue
from dashboard.logs.log_files import LogFormatError, detect_format
from dashboard.logs.retrieval_log import LogImport, read_log

RELATION = "retrievals"
TURNS = "turns"
SNIFF_BYTES = 4096
# the columns of the relation, in this order, for every source
RELATION_COLUMNS = ("message_id", "memory_id", "rank", "score", "ts", "user_id", "store", "source", "bad")
_NUMBER_TYPES = "('UBIGINT', 'BIGINT', 'DOUBLE')"


@dataclass
class LogSet:
    """The logs read into one DuckDB connection: the relation, the turns, and what
    was wrong on the way."""

    con: duckdb.DuckDBPyConnection
    files: list[str]
    issues: list[LineIssue] = field(default_factory=list)  # bad rows (file, line, field), left out
    conflicts: list[LineIssue] = field(default_factory=list)  # repeats that disagreed, where named
    fast_files: list[str] = field(default_factory=list)  # read by DuckDB directly
    validated_files: list[str] = field(default_factory=list)  # read by the validating reader
    notes: list[str] = field(default_factory=list)
    # how each file is read: a DuckDB SELECT (fast), or by index the validating reader
    sources: dict[int, str] = field(default_factory=dict, repr=False)
    validate: list[int] = field(default_factory=list, repr=False)

    @property
    def bad_rows(self) -> int:
        return len({(issue.file, issue.line) for issue in self.issues})

    def counts(self) -> dict[str, int]:
        """turns, rows (memories returned, repeats merged), empty turns, turns with no
        timestamp, merged repeats, repeats disagreeing on the score."""
        row = self.con.execute(
            f"""SELECT count(*), coalesce(sum(rows), 0), count(*) FILTER (WHERE rows = 0),
                       count(*) FILTER (WHERE ts IS NULL), coalesce(sum(merged), 0), coalesce(sum(conflicts), 0)
                FROM {TURNS}"""
        ).fetchone()
        assert row is not None
        keys = ("turns", "rows", "empty_turns", "no_timestamp", "merged", "conflicts")
        return dict(zip(keys, (int(value) for value in row), strict=True))


def expand_paths(patterns: list[str]) -> list[str]:
    """Files named or matched by a glob, in order, each once; a pattern matching
    nothing is an error naming it."""
    files: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise LogFormatError(f"{pattern}: no file matches")
        for match in matches:
            if Path(match).is_dir():
                matches_in = sorted(str(p) for p in Path(match).iterdir() if p.is_file() and not p.name.startswith("."))
                files.extend(matches_in)
            else:
                files.append(match)
    return list(dict.fromkeys(files))


def connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    # naive timestamps in a Parquet file are UTC, as the validating reader takes them
    con.execute("SET TimeZone = 'UTC'")
    return con


# ------------------------------------------------------------------ one file, fast


def _kind(path: str) -> str:
    """jsonl, csv or parquet for DuckDB; "validate" for what only memlens reads."""
    from dashboard.logs import otlp, read_log

    kind = detect_format(path)
    if kind != "jsonl":
        return kind
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if otlp.looks_like_otlp(head) or read_log.looks_like_read_log(head):
        return "validate"
    return kind


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _checks(message_id: str, memory_id: str, rank: str, score: str, ts_text: str, ts: str, extra_bad: str = "false") -> str:
    """The `bad` column: the row-level rules of retrieval_log, in SQL."""
    empty_turn = f"({memory_id} IS NULL AND {rank} IS NULL AND {score} IS NULL)"
    # NULL (e.g. trim of a missing memory_id) is not a finding: coalesce to false
    return f"""coalesce((
        {message_id} IS NULL OR trim({message_id}) = ''
        OR ({memory_id} IS NULL AND NOT {empty_turn}) OR trim({memory_id}) = ''
        OR (NOT {empty_turn} AND ({rank} IS NULL OR {rank} <> floor({rank}) OR {rank} < 1 OR {rank} > {MAX_RANK}))
        OR (NOT {empty_turn} AND ({score} IS NULL OR NOT isfinite({score})))
        OR ({ts_text} IS NOT NULL AND {ts} IS NULL)
        OR {extra_bad}
    ), false)"""


def _json_source(path: str, index: int) -> str:
    columns = ", ".join(f"'{c}': 'JSON'" for c in ("message_id", "memory_id", "rank", "score", "user_id", "timestamp", "store"))

    def text(column: str) -> str:
        return f"CASE WHEN json_type({column}) = 'VARCHAR' THEN {column} ->> '$' END"

    def number(column: str) -> str:
        return f"CASE WHEN json_type({column}) IN {_NUMBER_TYPES} THEN TRY_CAST({column} AS DOUBLE) END"

    # a field of the wrong JSON type (a number for an id, text for a score) is bad,
    # as the validating reader says; its value above is then NULL
    wrong_type = " OR ".join(
        [f"(json_type({c}) IS NOT NULL AND json_type({c}) <> 'VARCHAR')" for c in ("message_id", "memory_id", "user_id", "timestamp", "store")]
        + [f"(json_type({c}) IS NOT NULL AND json_type({c}) NOT IN {_NUMBER_TYPES})" for c in ("rank", "score")]
    )
    return f"""
        SELECT message_id, memory_id, rank, score, ts, user_id, store, {index} AS source,
               {_checks("message_id", "memory_id", "rank", "score", "ts_text", "ts", "wrong_type")} AS bad
        FROM (
            SELECT {text("message_id")} AS message_id, {text("memory_id")} AS memory_id,
                   {number("rank")} AS rank, {number("score")} AS score,
                   {text("timestamp")} AS ts_text, TRY_CAST({text("timestamp")} AS TIMESTAMPTZ) AS ts,
                   {text("user_id")} AS user_id, {text("store")} AS store, ({wrong_type}) AS wrong_type
            FROM read_json({_quote(path)}, columns = {{{columns}}}, format = 'newline_delimited')
        )"""


def _table_source(reader: str, names: set[str], index: int) -> str:
    """CSV (every column text) and Parquet (any column types): cast, then check."""

    def column(name: str) -> str:
        return name if name in names else "NULL"

    def text(name: str) -> str:
        # an empty CSV cell is missing, as the validating reader takes it
        return f"NULLIF(CAST({column(name)} AS VARCHAR), '')" if name in names else "CAST(NULL AS VARCHAR)"

    def number(name: str) -> str:
        return f"TRY_CAST({text(name)} AS DOUBLE)"

    unparsed = f"(({text('rank')} IS NOT NULL AND {number('rank')} IS NULL) OR ({text('score')} IS NOT NULL AND {number('score')} IS NULL))"
    ts_text = text("timestamp")
    ts = f"TRY_CAST({column('timestamp')} AS TIMESTAMPTZ)" if "timestamp" in names else "CAST(NULL AS TIMESTAMPTZ)"
    return f"""
        SELECT message_id, memory_id, rank, score, ts, user_id, store, {index} AS source,
               {_checks("message_id", "memory_id", "rank", "score", "ts_text", "ts", "unparsed")} AS bad
        FROM (
            SELECT {text("message_id")} AS message_id, {text("memory_id")} AS memory_id,
                   {number("rank")} AS rank, {number("score")} AS score, {ts_text} AS ts_text, {ts} AS ts,
                   {text("user_id")} AS user_id, {text("store")} AS store, {unparsed} AS unparsed
            FROM {reader}
        )"""


def _fast_source(con: duckdb.DuckDBPyConnection, path: str, kind: str, index: int) -> str | None:
    """The SELECT reading `path` with DuckDB, or None when the validating reader must
    (a required column missing: it says which, in memlens's words)."""
    if kind == "jsonl":
        return _json_source(path, index)
    if kind == "csv":
        reader = f"read_csv({_quote(path)}, header = true, all_varchar = true)"
    else:
        reader = f"read_parquet({_quote(path)})"
    try:
        names = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {reader}").fetchall()}
    except duckdb.Error:
        return None
    if not {"message_id", "memory_id", "rank", "score"} <= names:
        return None
    return _table_source(reader, names, index)


def _probe(con: duckdb.DuckDBPyConnection, source: str) -> bool:
    """True when DuckDB reads the whole source without an error."""
    try:
        con.execute(f"SELECT count(*) FROM ({source})").fetchone()
    except duckdb.Error:
        return False
    return True


# ------------------------------------------------------------------ one file, validated


def _validated_table(log: LogImport, index: int) -> pa.Table:
    """The good rows and empty turns of a validated file, in the relation's columns."""
    rows = log.rows
    empty = log.empty_turns
    columns = {
        "message_id": list(rows["message_id"]) + list(empty["message_id"]),
        "memory_id": list(rows["memory_id"]) + [None] * len(empty),
        "rank": [float(r) for r in rows["rank"]] + [None] * len(empty),
        "score": [float(s) for s in rows["score"]] + [None] * len(empty),
        "ts": list(rows["timestamp"]) + list(empty["timestamp"]),
        "user_id": list(rows["user_id"]) + list(empty["user_id"]),
        "store": list(rows["store"]) + list(empty["store"]),
    }
    import pandas as pd

    def text(values: list) -> list:
        return [None if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v) for v in values]

    stamps = [None if v is None or pd.isna(v) else pd.Timestamp(v).to_pydatetime() for v in columns["ts"]]
    return pa.table(
        {
            "message_id": pa.array(text(columns["message_id"]), pa.string()),
            "memory_id": pa.array(text(columns["memory_id"]), pa.string()),
            "rank": pa.array(columns["rank"], pa.float64()),
            "score": pa.array(columns["score"], pa.float64()),
            "ts": pa.array(stamps, pa.timestamp("us", tz="UTC")),
            "user_id": pa.array(text(columns["user_id"]), pa.string()),
            "store": pa.array(text(columns["store"]), pa.string()),
            "source": pa.array([index] * (len(rows) + len(empty)), pa.int32()),
            "bad": pa.array([False] * (len(rows) + len(empty)), pa.bool_()),
        }
    )


# ------------------------------------------------------------------ the log set


def open_logs(
    paths: list[str], *, con: duckdb.DuckDBPyConnection | None = None, scores: bool = True, floor: float | None = None
) -> LogSet:
    """Read the files into one relation and build the turns.

    Raises LogFormatError (naming the file) for a file that cannot be read at all;
    bad rows never raise, they are in ``issues``. ``scores=False`` leaves out the
    per-turn score lists; with ``floor``, what each turn keeps at that floor is
    counted instead: what the command needs, faster."""
    con = con or connect()
    files = [str(p) for p in paths]
    logs = LogSet(con=con, files=files)
    sources, validate = logs.sources, logs.validate
    for index, path in enumerate(files):
        if not Path(path).is_file():
            raise LogFormatError(f"{path}: no such file")
        kind = _kind(path)
        source = None if kind == "validate" else _fast_source(con, path, kind, index)
        if source is None:
            validate.append(index)
        else:
            sources[index] = source
    _define_relation(logs, scores=scores, floor=floor)
    return logs


def _define_relation(logs: LogSet, *, scores: bool, floor: float | None = None) -> None:
    con = logs.con
    sources, validate = logs.sources, logs.validate
    while True:
        for index in validate:
            _read_validated(logs, index)
        parts = list(sources.values()) + [f"SELECT * FROM validated_{index}" for index in validate]
        if not parts:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {RELATION} AS {_empty_relation()}")
        else:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {RELATION} AS " + " UNION ALL ".join(parts))
        try:
            bad = build_turns(con, scores=scores, floor=floor)
        except duckdb.Error:
            # some file DuckDB cannot parse (broken JSON, a ragged CSV row): find it
            # and read it with the validating reader instead
            broken = [index for index, source in sources.items() if not _probe(con, source)]
            if not broken:
                raise
            for index in broken:
                del sources[index]
                validate.append(index)
            continue
        bad = [index for index in bad if index in sources]
        if not bad:
            break
        # files with bad rows: the validating reader names each one, and keeps the rest
        for index in bad:
            del sources[index]
            validate.append(index)
    logs.fast_files = [logs.files[i] for i in sorted(sources)]
    logs.validated_files = [logs.files[i] for i in sorted(set(validate))]
    logs.issues.sort(key=lambda issue: (logs.files.index(issue.file) if issue.file in logs.files else -1, issue.line, issue.field))


def _read_validated(logs: LogSet, index: int) -> None:
    name = f"validated_{index}"
    if name in {row[0] for row in logs.con.execute("SHOW TABLES").fetchall()}:
        return
    log = read_log(logs.files[index])
    logs.issues.extend(log.issues)
    logs.conflicts.extend(log.conflicts)
    logs.con.register(f"{name}_arrow", _validated_table(log, index))
    logs.con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM {name}_arrow")
    logs.con.unregister(f"{name}_arrow")


def _empty_relation() -> str:
    return (
        "SELECT CAST(NULL AS VARCHAR) AS message_id, CAST(NULL AS VARCHAR) AS memory_id, CAST(NULL AS DOUBLE) AS rank,"
        " CAST(NULL AS DOUBLE) AS score, CAST(NULL AS TIMESTAMPTZ) AS ts, CAST(NULL AS VARCHAR) AS user_id,"
        " CAST(NULL AS VARCHAR) AS store, 0 AS source, false AS bad WHERE false"
    )


def build_turns(con: duckdb.DuckDBPyConnection, *, scores: bool = True, floor: float | None = None) -> list[int]:
    """The turns table from the relation: one row per message_id.

    Repeats of a (message_id, memory_id) pair are merged into one memory (the score
    of the earliest file; `conflicts` counts repeats whose scores differ). `scores`
    keeps each turn's memory scores, so any floor can be applied later; with `floor`
    instead, only the count kept at that floor is kept. Returns the sources that
    had bad rows."""
    kept = f", count(*) FILTER (WHERE good_rows > 0 AND score >= {float(floor)!r}) AS kept_at_floor" if floor is not None else ""
    score_list = ", list(score) FILTER (WHERE memory_id IS NOT NULL AND good_rows > 0) AS scores" if scores else ""
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE {TURNS} AS
        WITH pairs AS (
            SELECT message_id, memory_id,
                   arg_min(score, source) FILTER (WHERE NOT bad) AS score,
                   (min(score) FILTER (WHERE NOT bad)) <> (max(score) FILTER (WHERE NOT bad)) AS conflict,
                   count(*) FILTER (WHERE NOT bad) AS good_rows,
                   min(ts) FILTER (WHERE NOT bad) AS ts,
                   count(*) FILTER (WHERE bad) AS bad_rows,
                   min(source) FILTER (WHERE bad) AS bad_source
            FROM {RELATION}
            GROUP BY message_id, memory_id
        )
        SELECT message_id,
               min(ts) AS ts,
               count(*) FILTER (WHERE memory_id IS NOT NULL AND good_rows > 0) AS rows,
               max(score) AS top1,
               coalesce(sum(good_rows) FILTER (WHERE memory_id IS NOT NULL), 0)
                   - count(*) FILTER (WHERE memory_id IS NOT NULL AND good_rows > 0) AS merged,
               count(*) FILTER (WHERE conflict) AS conflicts,
               sum(bad_rows) AS bad_rows,
               list(DISTINCT bad_source) FILTER (WHERE bad_rows > 0) AS bad_sources,
               bool_or(good_rows > 0) AS has_good
               {score_list}{kept}
        FROM pairs
        GROUP BY message_id
        """
    )
    bad = [int(row[0]) for row in con.execute(f"SELECT DISTINCT unnest(bad_sources) FROM {TURNS} WHERE bad_rows > 0").fetchall()]
    # a message id seen only in bad rows is no turn
    con.execute(f"DELETE FROM {TURNS} WHERE NOT has_good OR message_id IS NULL")
    return bad


def rebuild_turns(logs: LogSet, *, scores: bool = True, floor: float | None = None) -> None:
    """The turns again (e.g. with a floor's kept count), from the same relation."""
    build_turns(logs.con, scores=scores, floor=floor)
