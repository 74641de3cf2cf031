"""Retrieval logs as one DuckDB relation, and the turns built from it. Pure (no streamlit).

The relation ``retrievals`` holds every row of every log file with the log's columns
(docs/domain.md: ids and scores), typed once:

    message_id VARCHAR, memory_id VARCHAR, rank DOUBLE, score DOUBLE, ts TIMESTAMPTZ,
    user_id VARCHAR, store VARCHAR, source INTEGER (which file), bad BOOLEAN,
    floor DOUBLE, floor_segment VARCHAR (the floor the agent applied to the turn, and
    where it came from; NULL in a log written before memlens logged them),
    query VARCHAR (the message text, where the log keeps it; NULL where it does not),
    rule VARCHAR, kept BOOLEAN, shadow_rule VARCHAR, shadow_kept BOOLEAN (what decided
    the row and its decision, and a shadow config's: dashboard/logs/writer.py; NULL
    where not logged)

A clean JSONL, CSV or Parquet file is read by DuckDB itself (``read_json``,
``read_csv``, ``read_parquet``): the file is a view, never a pandas frame, and the
checks memlens makes on every row (ids present, rank a whole number from 1, score
finite, timestamp ISO 8601, JSON fields of the right type) are a column of the same
scan, ``bad``. A file with any bad row, a file DuckDB cannot parse, and the formats
it does not read (OTLP traces, the app's read log) go through memlens's validating
reader (``retrieval_log.read_log``), which names every bad row by file, line and
field; its good rows join the relation as an Arrow table. So the usual clean case is
one pass over the files, and only a file with problems is read twice. The relation
keeps the ``query`` column too: what the judge of the monitor's sample reads as the
turn's text (``turn_queries``) comes from this one read, not a second reader.

``turns`` aggregates the relation per message_id in SQL, with repeated
(message_id, memory_id) pairs merged: when, top-1 score, the scores of its memories.
An empty-turn row (a message_id and no memory_id: docs/monitoring.md) gives a turn
with no memories. Everything later (windows, alerts, the page) reads ``turns``, so a
new floor is one query over it, not a new read of the files.
"""

from __future__ import annotations

import glob
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from connectors.common import inbound
from connectors.common.lines import LineIssue
from dashboard.logs.columnar import column_types, connect, fast_source, file_kind, parquet_sources, probe, table_reader
from dashboard.logs.log_files import LogFormatError
from dashboard.monitoring import rule_sql
from dashboard.monitoring import turn_floor as turn_floors
from dashboard.monitoring.turn_floor import LOGGED, TurnFloor

if TYPE_CHECKING:  # the validating reader (and pandas, pyarrow) only for a file that needs it
    import pyarrow as pa

    from dashboard.floor_config import FloorConfig
    from dashboard.logs.retrieval_log import LogImport
    from dashboard.turn_rule import TurnRule

RELATION = "retrievals"
TURNS = "turns"
# Whether any source of the relation may carry the agent's logged decisions (kept,
# shadow_kept): a one-row view beside it, so every cursor of the connection (the
# Monitor page's) reads it. A file without those columns reads them as NULL
# (columnar._table_source), and with no source carrying them build_turns gives their
# counts as 0 instead of aggregating NULLs on every pair and every turn (a seventh of
# build_turns over ten million rows: benchmarks/monitor.py).
DECIDED = f"{RELATION}_decided"
# the columns of the relation, in this order, for every source
RELATION_COLUMNS = (
    "message_id", "memory_id", "rank", "score", "ts", "user_id", "store", "source", "bad", "floor", "floor_segment", "query",
    "rule", "kept", "shadow_rule", "shadow_kept",
)  # fmt: skip


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
    # how each file is read: a DuckDB SELECT (fast), or by index the validating reader
    sources: dict[int, str] = field(default_factory=dict, repr=False)
    parquet: set[int] = field(default_factory=set, repr=False)  # the sources that are Parquet files
    validate: list[int] = field(default_factory=list, repr=False)
    named: set[int] = field(default_factory=set, repr=False)  # read by DuckDB, bad rows named by streaming

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


# ------------------------------------------------------------------ one file, validated


def _validated_table(log: LogImport, index: int) -> pa.Table:
    """The good rows and empty turns of a validated file, in the relation's columns."""
    import pyarrow as pa

    rows = log.rows
    empty = log.empty_turns

    def logged(frame, name: str) -> list:  # a column the log may not have (a log written before it)
        return list(frame[name]) if name in frame.columns else [None] * len(frame)

    columns = {
        "message_id": list(rows["message_id"]) + list(empty["message_id"]),
        "memory_id": list(rows["memory_id"]) + [None] * len(empty),
        "rank": [float(r) for r in rows["rank"]] + [None] * len(empty),
        "score": [float(s) for s in rows["score"]] + [None] * len(empty),
        "ts": list(rows["timestamp"]) + list(empty["timestamp"]),
        "user_id": list(rows["user_id"]) + list(empty["user_id"]),
        "store": list(rows["store"]) + list(empty["store"]),
        "floor": logged(rows, "floor") + logged(empty, "floor"),
        "floor_segment": logged(rows, "floor_segment") + logged(empty, "floor_segment"),
        "query": logged(rows, "query") + logged(empty, "query"),
        **{name: logged(rows, name) + logged(empty, name) for name in ("rule", "kept", "shadow_rule", "shadow_kept")},
    }
    import pandas as pd

    def text(values: list) -> list:
        return [None if v is None or (not isinstance(v, str) and pd.isna(v)) else str(v) for v in values]

    def flags(values: list) -> list:  # a logged decision: true, false, or none (pandas' NA)
        return [None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else bool(v) for v in values]

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
            "floor": pa.array([None if v is None or pd.isna(v) else float(v) for v in columns["floor"]], pa.float64()),
            "floor_segment": pa.array(text(columns["floor_segment"]), pa.string()),
            "query": pa.array(text(columns["query"]), pa.string()),
            "rule": pa.array(text(columns["rule"]), pa.string()),
            "kept": pa.array(flags(columns["kept"]), pa.bool_()),
            "shadow_rule": pa.array(text(columns["shadow_rule"]), pa.string()),
            "shadow_kept": pa.array(flags(columns["shadow_kept"]), pa.bool_()),
        }
    )


# ------------------------------------------------------------------ the log set


def open_logs(
    paths: list[str],
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    scores: bool = True,
    floor: float | None = None,
    turn_floor: TurnFloor | None = None,
    decide: TurnRule | None = None,
) -> LogSet:
    """Read the files into one relation and build the turns.

    Raises LogFormatError (naming the file) for a file that cannot be read at all;
    bad rows never raise, they are in ``issues``. ``scores=False`` leaves out the
    per-turn score lists; with ``floor``, what each turn keeps at that floor is
    counted instead: what the command needs, faster. Without ``floor``, each turn's
    own floor is kept (``build_turns``): ``turn_floor``'s, else the logged one.
    ``decide``: a floor file's turn rule, whose decisions each turn counts too."""
    con = con or connect()
    files = [str(p) for p in paths]
    logs = LogSet(con=con, files=files)
    sources, validate = logs.sources, logs.validate
    for index, path in enumerate(files):
        try:
            inbound.regular_file(path, "log")
        except inbound.InboundError as exc:
            raise LogFormatError(str(exc)) from None
        kind = file_kind(path)
        source = None if kind == "validate" else fast_source(con, path, kind, index)
        if source is None:
            validate.append(index)
        else:
            sources[index] = source
            if kind == "parquet":
                logs.parquet.add(index)
    _define_relation(logs, scores=scores, floor=floor, turn_floor=turn_floor, decide=decide)
    return logs


def _define_relation(
    logs: LogSet, *, scores: bool, floor: float | None = None, turn_floor: TurnFloor | None = None, decide: TurnRule | None = None
) -> None:
    con = logs.con
    sources, validate = logs.sources, logs.validate
    while True:
        for index in validate:
            _read_validated(logs, index)
        columns = ", ".join(RELATION_COLUMNS)
        # the Parquet files read together (all cores), the rest one SELECT each
        together = parquet_sources(con, {index: logs.files[index] for index in sources if index in logs.parquet})
        alone = [source for index, source in sources.items() if index not in logs.parquet]
        parts = [f"SELECT {columns} FROM ({source})" for source in together + alone]
        parts += [f"SELECT {columns} FROM validated_{index}" for index in validate]
        if not parts:
            con.execute(f"CREATE OR REPLACE VIEW {RELATION} AS {_empty_relation()}")
        else:
            con.execute(f"CREATE OR REPLACE VIEW {RELATION} AS " + " UNION ALL ".join(parts))
        con.execute(f"CREATE OR REPLACE VIEW {DECIDED} AS SELECT {_may_carry_decisions(logs)} AS decided")
        try:
            bad = build_turns(con, scores=scores, floor=floor, turn_floor=turn_floor, decide=decide)
        except duckdb.Error:
            # some file DuckDB cannot parse (broken JSON, a ragged CSV row): find it
            # and read it with the validating reader instead
            broken = [index for index, source in sources.items() if not probe(con, source)]
            if not broken:
                raise
            for index in broken:
                del sources[index]
                validate.append(index)
            continue
        bad = [index for index in bad if index in sources]
        if not bad:
            break
        # files with bad rows: named by a streaming pass while DuckDB keeps the good
        # rows (bounded memory at any size); else the validating reader reads them whole
        for index in bad:
            if not _name_in_place(logs, index):
                del sources[index]
                validate.append(index)
    logs.fast_files = [logs.files[i] for i in sorted(sources) if i not in logs.named]
    logs.validated_files = [logs.files[i] for i in sorted(set(validate) | logs.named)]
    logs.issues.sort(key=lambda issue: (logs.files.index(issue.file) if issue.file in logs.files else -1, issue.line, issue.field))


def _name_in_place(logs: LogSet, index: int) -> bool:
    """Name the bad rows of a file DuckDB reads by streaming it through the validating
    checks (dashboard.logs.bad_rows), and keep its good rows in DuckDB, filtered.
    False when the format is not streamed, or the two disagree on which rows are bad
    (then the validating reader, whose word is final, reads the file)."""
    from dashboard.logs.bad_rows import named_bad_rows

    path = logs.files[index]
    kind = file_kind(path)
    source = fast_source(logs.con, path, kind, index, exact=True) if kind != "validate" else None
    if source is None:
        return False
    from dashboard.logs.streamed import not_plain_jsonl

    if kind == "jsonl" and not_plain_jsonl(Path(path)):
        return False
    issues = named_bad_rows(path, kind, path)
    if not issues:
        return False
    found = logs.con.execute(f"SELECT count(*) FILTER (WHERE bad) FROM ({source})").fetchone()
    if found is None or found[0] != len({issue.line for issue in issues if issue.skipped}):
        return False
    logs.issues.extend(issues)
    logs.sources[index] = f"SELECT * FROM ({source}) WHERE NOT bad"
    logs.parquet.discard(index)  # read alone, with its filter
    logs.named.add(index)
    return True


def _read_validated(logs: LogSet, index: int) -> None:
    name = f"validated_{index}"
    if name in {row[0] for row in logs.con.execute("SHOW TABLES").fetchall()}:
        return
    from dashboard.logs.retrieval_log import read_log

    # with the query text a trace holds, as the relation keeps every file's query column
    log = read_log(logs.files[index], include_query=True)
    logs.issues.extend(log.issues)
    logs.conflicts.extend(log.conflicts)
    logs.con.register(f"{name}_arrow", _validated_table(log, index))
    logs.con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
    logs.con.unregister(f"{name}_arrow")


def _may_carry_decisions(logs: LogSet) -> bool:
    """Whether any source may carry a logged decision (``kept`` or ``shadow_kept``).
    A Parquet or CSV file has the columns or not, as its schema says; a JSONL line
    may have them or not, which only reading the whole file would tell, so a JSONL
    file may; a validated file's rows are in memory, and asked."""
    con = logs.con
    for index in logs.validate:
        if con.execute(f"SELECT bool_or(kept IS NOT NULL OR shadow_kept IS NOT NULL) FROM validated_{index}").fetchone() == (True,):
            return True
    for index in logs.sources:
        kind = file_kind(logs.files[index])
        if kind not in ("parquet", "csv"):
            return True
        if column_types(con, table_reader(logs.files[index], kind)).keys() & {"kept", "shadow_kept"}:
            return True
    return False


def _empty_relation() -> str:
    return (
        "SELECT CAST(NULL AS VARCHAR) AS message_id, CAST(NULL AS VARCHAR) AS memory_id, CAST(NULL AS DOUBLE) AS rank,"
        " CAST(NULL AS DOUBLE) AS score, CAST(NULL AS TIMESTAMPTZ) AS ts, CAST(NULL AS VARCHAR) AS user_id,"
        " CAST(NULL AS VARCHAR) AS store, 0 AS source, false AS bad, CAST(NULL AS DOUBLE) AS floor,"
        " CAST(NULL AS VARCHAR) AS floor_segment, CAST(NULL AS VARCHAR) AS query, CAST(NULL AS VARCHAR) AS rule,"
        " CAST(NULL AS BOOLEAN) AS kept, CAST(NULL AS VARCHAR) AS shadow_rule, CAST(NULL AS BOOLEAN) AS shadow_kept WHERE false"
    )


def build_turns(
    con: duckdb.DuckDBPyConnection,
    *,
    scores: bool = True,
    floor: float | None = None,
    turn_floor: TurnFloor | None = None,
    table: str = TURNS,
    decide: TurnRule | None = None,
) -> list[int]:
    """The turns table (`table`) from the relation: one row per message_id.

    Repeats of a (message_id, memory_id) pair are merged into one memory (the score
    of the earliest file; `conflicts` counts repeats whose scores differ). `scores`
    keeps each turn's memory scores, so any floor can be applied later; with `floor`
    instead, only the count kept at that floor is kept. Returns the sources that
    had bad rows: then the table is not used, those files are read by the
    validating reader and the table is built again. So the table that stays is
    always built from good rows only, and the aggregates need no filter for bad
    ones (filters on every aggregate of ten million rows cost a third of the scan).
    A bad row is grouped under no message_id (a row without one is bad anyway), so
    one turn with a NULL message_id says there were bad rows, without an aggregate.

    Without `floor`, each turn gets the floor it is counted at (``floor``, and
    ``floor_segment``): `turn_floor`'s rule over its rows (a floor config's per user
    and store), else the floor the agent logged for it (NULL when the log has none);
    with `scores=False`, ``kept_at_floor`` counts what it keeps at its own floor.

    Every turn also counts the decisions the agent logged for its memories (a repeat
    kept in any of its rows is kept): ``logged_kept`` of ``logged_decided`` memories
    with a logged ``kept``, and a shadow config's, ``shadow_kept`` of
    ``shadow_decided`` (all 0 for a log without them, and not aggregated at all when
    no source carries them: ``DECIDED``). With `decide`, a floor file's
    turn rule, ``rule_kept`` counts what the rule keeps, computed here from the
    turn's rows (dashboard/monitoring/rule_sql.py) at the turn's floor."""
    rule = turn_floor or LOGGED
    per_pair = "" if floor is not None else f", min({rule.sql}) AS floor, min({rule.segment_sql}) AS floor_segment"
    per_turn = "" if floor is not None else ", min(floor) AS floor, min(floor_segment) AS floor_segment"
    if floor is not None:
        kept = f", count(*) FILTER (WHERE score >= {float(floor)!r}) AS kept_at_floor"
    else:
        kept = ", count(*) FILTER (WHERE score >= floor) AS kept_at_floor" if not scores else ""
    score_list = ", list(score) FILTER (WHERE memory_id IS NOT NULL) AS scores" if scores else ""
    # the logged decisions per memory, and per turn their counts; when no source
    # carries any (DECIDED), the counts are 0 without aggregating NULLs on every row
    if _decisions_logged(con):
        per_pair += ", bool_or(kept) AS kept_flag, bool_or(shadow_kept) AS shadow_flag"
        decided = (
            ", count(*) FILTER (WHERE kept_flag) AS logged_kept, count(kept_flag) AS logged_decided,"
            " count(*) FILTER (WHERE shadow_flag) AS shadow_kept, count(shadow_flag) AS shadow_decided"
        )
    else:
        decided = "".join(f", CAST(0 AS BIGINT) AS {name}" for name in ("logged_kept", "logged_decided", "shadow_kept", "shadow_decided"))
    rows = "pairs"
    if decide is not None:
        per_pair += ", arg_min(rank, source) AS rank"  # a learned rule may read the rank
        at = "floor" if floor is None else rule_sql.number(floor)
        rows = f"({rule_sql.decided_rows('SELECT * FROM pairs', decide, at)})"
        decided += f", count(*) FILTER (WHERE {rule_sql.KEPT}) AS rule_kept"
    con.execute(
        f"""
        CREATE OR REPLACE TABLE {table} AS
        WITH pairs AS (
            SELECT CASE WHEN NOT bad THEN message_id END AS message_id, memory_id,
                   arg_min(score, source) AS score, count(*) AS repeats, min(ts) AS ts{per_pair}
            FROM {RELATION}
            GROUP BY 1, 2
        )
        SELECT message_id,
               min(ts) AS ts,
               count(memory_id) AS rows,
               max(score) AS top1,
               coalesce(sum(repeats) FILTER (WHERE memory_id IS NOT NULL), 0) - count(memory_id) AS merged,
               CAST(0 AS BIGINT) AS conflicts
               {score_list}{kept}{per_turn}{decided}
        FROM {rows}
        GROUP BY message_id
        """
    )
    found = con.execute(f"SELECT count(*) FILTER (WHERE message_id IS NULL), coalesce(sum(merged), 0) FROM {table}").fetchone()
    assert found is not None
    if found[0]:
        # which files the bad rows are in: a second scan, but only when a row is bad
        # (the clean case is one scan)
        return [int(row[0]) for row in con.execute(f"SELECT DISTINCT source FROM {RELATION} WHERE bad").fetchall()]
    if found[1]:
        # repeats whose scores differ, counted per turn: a second scan, only for a log
        # with repeated pairs (two more aggregates on every pair made the one scan slower)
        con.execute(
            f"""
            UPDATE {table} SET conflicts = disagreeing.pairs
            FROM (
                SELECT message_id, count(*) AS pairs
                FROM (
                    SELECT message_id FROM {RELATION} WHERE memory_id IS NOT NULL
                    GROUP BY message_id, memory_id HAVING count(*) > 1 AND min(score) <> max(score)
                )
                GROUP BY message_id
            ) AS disagreeing
            WHERE {table}.message_id = disagreeing.message_id
            """
        )
    return []


def _decisions_logged(con: duckdb.DuckDBPyConnection) -> bool:
    found = con.execute(f"SELECT decided FROM {DECIDED}").fetchone()
    assert found is not None
    return bool(found[0])


def turn_queries(con: duckdb.DuckDBPyConnection, message_ids: Iterable[str]) -> dict[str, str]:
    """The query text of each turn of `message_ids` that has one, from the relation's
    ``query`` column: the first non-blank text of its memory rows, by file, then rank.
    What the monitor's judge grades a memory against, and what a labelling session
    drawn from a window keeps when asked to."""
    ids = sorted(set(message_ids))
    if not ids:
        return {}
    rows = con.execute(
        f"""SELECT message_id, query FROM {RELATION}
            WHERE NOT bad AND memory_id IS NOT NULL AND query IS NOT NULL AND message_id IN (SELECT unnest(?::VARCHAR[]))
            ORDER BY message_id, source, rank""",
        [ids],
    ).fetchall()
    found: dict[str, str] = {}
    for message_id, query in rows:
        if message_id not in found and query.strip():
            found[message_id] = query
    return found


@dataclass
class ConfigFloors:
    """How a floor config counts a log's turns: one floor for every turn (``floor``),
    or (``floor`` None) each turn at its user's or store's floor, from the turns
    table ``turns``; ``words`` say which floors, ``notes`` what was not applied or
    not checked. ``decide``: the config's turn rule, whose decisions (the table's
    ``rule_kept``) say what each turn keeps, at those floors; None without one."""

    floor: float | None
    turns: str = TURNS
    words: str | None = None
    notes: list[str] = field(default_factory=list)
    decide: TurnRule | None = None


def count_at_config(con: duckdb.DuckDBPyConnection, config: FloorConfig, where: str, turns: str | None = None) -> ConfigFloors:
    """The one way `memlens monitor --floor-config` and the Monitor page apply a floor
    config (turn_floor.from_config): its score space checked against the logs' stores
    (ScoreSpaceMismatch for another store kind), and with floors per user or store,
    each turn at its own; with a turn rule (``config.rule``), each turn by the rule's
    decisions computed from its rows (rule_sql.py; RuleNotInLog for a rule reading the
    store's score parts). `turns` is a turns table already built with the config's
    floors and rule (the command builds it while reading the files); without one, a
    table of the config's own is built once beside the logs' ``turns`` (whose floors
    stay the logged ones, for the page's other choices) and named by them."""
    rule = turn_floors.from_config(config)
    decide = config.rule
    stores = [row[0] for row in con.execute(f"SELECT DISTINCT store FROM {RELATION} WHERE NOT bad AND store IS NOT NULL LIMIT 100").fetchall()]
    notes = turn_floors.config_notes(config) + turn_floors.check_space(config, stores, where)
    if rule is None and decide is None:
        return ConfigFloors(config.floor, notes=notes)
    if turns is None:
        key = rule.sql if rule is not None else rule_sql.number(config.floor)
        if decide is not None:
            key += json.dumps(decide.as_dict(), sort_keys=True)
        turns = f"{TURNS}_{hashlib.sha256(key.encode()).hexdigest()[:16]}"
        built = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [turns]).fetchone()
        if not built or not built[0]:
            if rule is None:  # one floor for every turn, the rule's cuts applied with it
                build_turns(con, floor=config.floor, table=turns, decide=decide)
            else:
                build_turns(con, turn_floor=rule, table=turns, decide=decide)
    words = None
    if rule is not None:
        floors = turn_floors.logged_floors(con, turns, where)  # every turn has one: the config's
        words = turn_floors.describe_floors(floors, f"its floor from {config.source or 'the floor config'}")
    if decide is not None:
        # the command's header words, on the page too
        at = words or f"the floor {config.floor!r}"
        words = f"each turn by the {decide.describe()} from {config.source}, computed from its rows ({at})"
    return ConfigFloors(None if rule is not None else config.floor, turns, words, notes, decide)


def score_direction(con: duckdb.DuckDBPyConnection):
    """The score-direction check (dashboard/score_direction.py) over the relation, in
    SQL: per turn, the score at its first rank against its last, and the scores
    outside [0, 1]. A raw distance logged as the score makes every monitor figure
    upside down (no turn ever without memory)."""
    from dashboard.score_direction import EPSILON, DirectionCheck

    ranked, rising, falling = con.execute(
        f"""
        WITH t AS (
            SELECT message_id, arg_min(score, rank) AS first, arg_max(score, rank) AS last,
                   count(DISTINCT rank) AS n
            FROM {RELATION}
            WHERE NOT bad AND memory_id IS NOT NULL AND score IS NOT NULL AND rank IS NOT NULL
            GROUP BY message_id
        )
        SELECT count(*) FILTER (WHERE n >= 2),
               count(*) FILTER (WHERE n >= 2 AND last > first + {EPSILON!r}),
               count(*) FILTER (WHERE n >= 2 AND last < first - {EPSILON!r})
        FROM t
        """
    ).fetchone() or (0, 0, 0)
    outside, scores = con.execute(
        f"SELECT count(*) FILTER (WHERE score < -{EPSILON!r} OR score > 1 + {EPSILON!r}), count(score) "
        f"FROM {RELATION} WHERE NOT bad AND memory_id IS NOT NULL"
    ).fetchone() or (0, 0)
    return DirectionCheck(int(ranked), int(rising), int(falling), int(outside), int(scores))


def _open_one(path: str) -> LogSet:
    return open_logs([path], scores=False, floor=0.35)


for _suffix in (".jsonl", ".parquet"):
    inbound.register_reader(
        inbound.Reader(
            f"monitor logs ({_suffix[1:]})", _open_one, (LogFormatError,), _suffix,
            {"message_id": "t1", "memory_id": "m1", "rank": 1, "score": 0.5, "timestamp": "2026-01-01T10:00:00Z"}, qualname=f"{__name__}.open_logs",
        )
    )
