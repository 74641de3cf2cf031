"""The monitor's window aggregates on the team's own engine, written once with ibis. Pure.

``memlens monitor --connect URL --table NAME`` reads a table (or view) with the log's
columns where it lives (PostgreSQL, DuckDB, and through their ibis backends Spark,
ClickHouse, BigQuery, Snowflake, Trino) and runs one query there. Only small summaries
come back: one row per (window, top-1 histogram bin) with additive counts, so a
window's turns, rows, no-memory count, memories kept and near-floor count are sums of
its bins, and its top-1 histogram is its bins. The baseline and the alert tests then
run here, in dashboard.monitoring.alerts, exactly as for log files.

What the query does, the same as the file run (dashboard.monitoring.relation and
.windows):

- repeated (message_id, memory_id) pairs are merged into one memory (the pair's
  lowest score: a table has no file order to pick the first by); when there are
  repeats, a second query counts those that disagree (conflicts), as the file run
  does, so a clean log costs one query;
- a turn is a message_id: its time is its earliest row, its top-1 the highest score,
  an empty turn (a row with no memory_id) has no memory, and a memory with no score
  (NULL: what the agent's log writes for a NaN score) is returned but never kept;
- a row is bad, as the file reader finds it, when it has no message_id, a score but
  no memory_id, a score that is not a finite number (NaN, infinity), or a timestamp
  outside 1970-2200 (infinity, year 9999): it is counted and left out in the query
  itself, before any arithmetic on its time or score, which an engine refuses
  (PostgreSQL's epoch of `infinity` is out of bigint's range); when there are bad
  rows, a second query counts them by field;
- each turn is counted at one floor, or (``floor`` None) at the floor its rows
  logged (the ``floor`` column, a value that is not a finite number read as none),
  as the file run counts a log's logged floors; a third query then lists those
  floors (floor, segment, turns);
- with no floor, where the table has a ``kept`` column (the agent's decision per
  row: dashboard/logs/writer.py), a turn whose rows carry decisions is counted by
  them, as the file run counts them (dashboard/monitoring/decisions.py): it has
  memory when any of its memories was kept, and kept per turn counts the kept ones;
  the other turns stay at their logged floor. A fourth query counts the decided
  turns by the ``rule`` that decided them, for the header;
- where the table has ``shadow_rule`` and ``shadow_kept`` columns (a shadow config's
  decisions, logged beside the shipped one's), the shipped config and the candidate
  per window as the file run puts them side by side (decisions.shadow_windows): the
  good rows with a ``shadow_rule``, a turn per message_id at its earliest such row,
  with memory on a side when that side kept any of its memories; one more query
  counts the windows' turns in the engine, and one lists the rules each side
  logged, whatever the floor;
- windows are whole hours, days or weeks (from Monday) of UTC, numbered from the
  epoch, so every engine buckets alike;
- the top-1 histogram has HISTOGRAM_BINS equal bins between the lowest and highest
  top-1 of the turns with a time, as the file run's drift test uses.

Written for every engine at once, so only expressions every dialect compiles alike:
counts are sums of 0/1 CASE expressions, never ``count(where=...)``, which some
dialects compile to a sum that is NULL for a group with no match (an empty turn). The
top-1 quantiles come from the histogram (within one bin width of the exact
quantile): BigQuery, Trino and Athena have no exact quantile, and ClickHouse's is
sampled.

ibis is an optional extra (``memlens[warehouse]``): this module imports it only when
a run connects.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from connectors.common.errors import MemlensError
from connectors.common.inbound import EARLIEST, LATEST
from connectors.common.redaction import redact_text
from dashboard.monitoring import turn_floor
from dashboard.monitoring.decisions import LoggedDecisions, ShadowReport, shadow_report
from dashboard.monitoring.windows import HISTOGRAM_BINS, NEAR_FLOOR, WINDOW_MICROSECONDS, WINDOW_OFFSET, WINDOWS, Window

if TYPE_CHECKING:
    import ibis.expr.types as ir

# the log's fields the aggregates read, and the column each is read from by default
FIELDS = {"message_id": "message_id", "memory_id": "memory_id", "score": "score", "timestamp": "timestamp"}
# read only when each turn is counted at its logged floor; a table without
# floor_segment names each floor's segment "?", as a log without it does
LOGGED_FIELDS = {"floor": "floor", "floor_segment": "floor_segment"}
# read where the table has them: the agent's decision per row and what made it (with no
# floor), and a shadow config's (whatever the floor: the side by side, shadow_summary)
DECISION_FIELDS = {"kept": "kept", "rule": "rule", "shadow_rule": "shadow_rule", "shadow_kept": "shadow_kept"}
# what makes a row bad, by field, in the file reader's words (dashboard/logs/retrieval_log.py)
PROBLEMS = {
    "message_id": "required, missing",
    "memory_id": "required, missing (a turn with no memory leaves rank and score empty too)",
    "score": "not a finite number",
    "timestamp": f"outside {EARLIEST:%Y}-{LATEST:%Y}",
}
# a number between these is finite: NaN compares false (or above every number) on every
# engine, and a NaN is not NULL, where ibis's isnan/isinf are not compiled alike
LARGEST = sys.float_info.max
INSTALL_HINT = "pip install 'memlens[warehouse]'"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
QUANTILES = (0.1, 0.5, 0.9)


class WarehouseError(MemlensError):
    """A connection, table or column that cannot be used; the text never holds a secret."""


@dataclass
class Summary:
    """What came back from the engine: the windows, their top-1 histograms (rows in
    window order) and the counts a file run reports."""

    windows: list[Window]
    histograms: np.ndarray
    counts: dict[str, int] = field(default_factory=dict)
    bad_rows: int = 0
    summary_rows: int = 0  # rows that left the engine
    bad_fields: dict[str, int] = field(default_factory=dict)  # bad rows by the field that makes them bad
    floors: list[tuple[float, str, int]] | None = None  # the logged floors (floor, segment, turns), most turns first
    decisions: LoggedDecisions | None = None  # the logged decisions counted, where the table has a kept column
    shadow: ShadowReport | None = None  # the shipped config and the candidate side by side, where rows carry a shadow's


def parse_columns(pairs: list[str] | None) -> dict[str, str]:
    """``--column FIELD=NAME`` flags as {field: column}, every field present."""
    columns = FIELDS | LOGGED_FIELDS | DECISION_FIELDS
    for pair in pairs or []:
        name, sep, column = pair.partition("=")
        name, column = name.strip(), column.strip()
        if not sep or not column:
            raise WarehouseError(f"--column {pair!r}: give FIELD=COLUMN, e.g. timestamp=created_at")
        if name not in columns:
            raise WarehouseError(f"--column {pair!r}: FIELD is one of {', '.join(columns)}")
        columns[name] = column
    return columns


# ------------------------------------------------------------------ the expression


def finite(value: ir.FloatingValue) -> ir.BooleanValue:
    """True for a finite number, false for NaN and infinity (NULL stays NULL)."""
    return value.between(-LARGEST, LARGEST)


def has_decisions(table: ir.Table, columns: dict[str, str] | None) -> bool:
    """Whether the table carries the agent's decision per row (its kept column)."""
    return (columns or {}).get("kept", "") in table.columns


def typed_rows(table: ir.Table, columns: dict[str, str] | None = None, logged: bool = False, extra: dict[str, Any] | None = None) -> ir.Table:
    """The log's fields, typed, with ``problem``: NULL for a good row, else the field
    that makes it bad (the first, in PROBLEMS' order). With `logged`, each row's
    logged floor (a value that is not a finite number is none; none at all in a table
    without the column, which then counts by its decisions) and its segment, and where
    the table has them, the row's decision (``kept``) and its ``rule``. `extra`: more
    fields, expressions over `table`."""
    import ibis

    columns = columns or FIELDS
    message_id = table[columns["message_id"]].cast("string")
    memory_id = table[columns["memory_id"]].cast("string")
    score = table[columns["score"]].cast("float64")
    ts = table[columns["timestamp"]]
    problem = ibis.cases(
        (message_id.isnull(), "message_id"),
        (memory_id.isnull() & score.notnull(), "memory_id"),
        # NULL is a memory with no score: good (coalesced, so no engine's NULL rules apply)
        (~finite(ibis.coalesce(score, 0.0)), "score"),
        (ts.notnull() & ((ts < ibis.timestamp(EARLIEST)) | (ts >= ibis.timestamp(LATEST))), "timestamp"),
        else_=ibis.null("string"),
    )
    fields: dict[str, Any] = {"message_id": message_id, "memory_id": memory_id, "score": score, "ts": ts, "problem": problem}
    if logged:
        if columns.get("floor") in table.columns:
            floor = table[columns["floor"]].cast("float64")
            fields["floor"] = ibis.ifelse(finite(ibis.coalesce(floor, 0.0)), floor, ibis.null("float64"))
        else:
            fields["floor"] = ibis.null("float64")
        fields["segment"] = optional_field(table, columns, "floor_segment", "string")
        if has_decisions(table, columns):
            fields["kept"] = table[columns["kept"]].cast("boolean")
            fields["rule"] = optional_field(table, columns, "rule", "string")
    return table.select(**fields, **(extra or {}))


def optional_field(table: ir.Table, columns: dict[str, str], name: str, kind: str) -> ir.Value:
    """A field the table may lack: its column (mapped by `columns`) cast to `kind`, or
    NULL of that type where the table has no such column."""
    import ibis

    column = columns.get(name, "")
    return table[column].cast(kind) if column in table.columns else ibis.null(kind)


def turns_expression(table: ir.Table, floor: float | None, columns: dict[str, str] | None = None) -> ir.Table:
    """A row per turn (message_id): its time, memories, top-1, memories kept at the
    floor (`floor`, or None: each memory at its logged floor), merged repeats, rows
    read; with no floor, the turn's own (``floor``, ``segment``). Every bad row is
    in one "turn" with no message_id, whose time and scores are NULL: an engine
    computes nothing on them. With no floor and a kept column, the turn's logged
    decisions too: ``logged_kept`` of ``logged_decided`` memories (a repeat kept in
    any of its rows is kept), as the file run's turns count them."""
    import ibis

    logged = floor is None
    decided = logged and has_decisions(table, columns)
    rows = typed_rows(table, columns, logged)
    good = rows.problem.isnull()
    cleared = {"message_id": ibis.null("string"), "score": ibis.null("float64"), "ts": ibis.null(rows.ts.type())}
    if logged:
        cleared |= {"floor": ibis.null("float64"), "segment": ibis.null("string")}
    if decided:
        cleared |= {"kept": ibis.null("boolean")}
    rows = rows.mutate(**{name: ibis.ifelse(good, rows[name], null) for name, null in cleared.items()})
    per_pair: dict[str, Any] = {"score": rows.score.min(), "repeats": rows.count(), "ts": rows.ts.min()}
    if logged:
        per_pair |= {"floor": rows.floor.min(), "segment": rows.segment.min()}
    if decided:
        # 0/1 maxima, not bool_or: every dialect compiles them alike (a NULL decision is 0 in both)
        per_pair |= {"kept_flag": ibis.ifelse(rows.kept, 1, 0).max(), "decided_flag": ibis.ifelse(rows.kept.notnull(), 1, 0).max()}
    pairs = rows.group_by(["message_id", "memory_id"]).aggregate(**per_pair)
    memory = pairs.memory_id.notnull()
    at = pairs.floor if logged else float(floor)  # type: ignore[arg-type]  # floor is a number when not logged
    per_turn: dict[str, Any] = {
        "ts": pairs.ts.min(),
        "rows": pairs.memory_id.count(),
        "top1": pairs.score.max(),
        "kept": ibis.ifelse(pairs.score >= at, 1, 0).sum(),
        "merged": ibis.ifelse(memory, pairs.repeats - 1, 0).sum(),
        "raw": pairs.repeats.sum(),
    }
    if logged:
        per_turn |= {"floor": pairs.floor.min(), "segment": pairs.segment.min()}
    if decided:
        per_turn |= {"logged_kept": pairs.kept_flag.sum(), "logged_decided": pairs.decided_flag.sum()}
    return pairs.group_by("message_id").aggregate(**per_turn)


def summary_expression(table: ir.Table, floor: float | None, window: str, columns: dict[str, str] | None = None) -> ir.Table:
    """One query over `table`: a row per (bad, window, bin) with additive counts.

    ``bad`` is true for the one group of bad rows; ``window`` (the window number since
    the epoch) is NULL for turns with no time, ``bin`` is NULL for turns with no memory.
    `floor` None: each turn at its logged floor, or by its logged decisions where
    the table has a kept column and the turn's rows carry them."""
    import ibis

    if window not in WINDOWS:
        raise ValueError(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
    width_s, offset_s = WINDOW_MICROSECONDS[window] // 1_000_000, WINDOW_OFFSET[window] // 1_000_000
    turns = turns_expression(table, floor, columns)
    bad = turns.message_id.isnull()
    timed = ~bad & turns.ts.notnull()
    # the histogram spans the top-1 of every turn with a time, as the file run's does:
    # one aggregate row joined to every turn (a MIN() OVER () would move every turn to
    # one worker on Spark, Trino or BigQuery)
    bounds = turns.filter(timed).aggregate(low=turns.top1.min(), high=turns.top1.max())
    joined = turns.cross_join(bounds)
    at = joined.floor if floor is None else float(floor)
    width = ibis.ifelse(joined.high > joined.low, (joined.high - joined.low) / HISTOGRAM_BINS, 1.0)
    in_window = ~joined.message_id.isnull() & joined.ts.notnull()
    number = ((joined.ts.epoch_seconds() - offset_s) // width_s).cast("int64")
    binned = joined.mutate(
        bad=joined.message_id.isnull(),
        window=ibis.ifelse(in_window, number, ibis.null("int64")),
        bin=ibis.ifelse(
            in_window & joined.top1.notnull(),
            ibis.least(((joined.top1 - joined.low) / width).floor(), HISTOGRAM_BINS - 1),
            ibis.null("int64"),
        ).cast("int64"),
        at=at,
    )
    no_memory = ibis.ifelse(binned.top1.isnull() | (binned.top1 < binned.at), 1, 0)
    kept = binned.kept
    if floor is None and has_decisions(table, columns):
        # a turn with logged decisions has memory when the agent kept any (windows.no_memory_sql)
        by_decisions = binned.logged_decided > 0
        no_memory = ibis.ifelse(by_decisions, ibis.ifelse(binned.logged_kept == 0, 1, 0), no_memory)
        kept = ibis.ifelse(by_decisions, binned.logged_kept, kept)
    return (
        binned.group_by(["bad", "window", "bin"])
        .aggregate(
            turns=binned.count(),
            rows=binned.rows.sum(),
            no_memory=no_memory.sum(),
            kept=kept.sum(),
            near=ibis.ifelse((binned.top1 - binned.at).abs() <= NEAR_FLOOR, 1, 0).sum(),
            empty=ibis.ifelse(binned.rows == 0, 1, 0).sum(),
            merged=binned.merged.sum(),
            raw=binned.raw.sum(),
            low=binned.low.min(),
            high=binned.high.max(),
        )
        .order_by(["window", "bin"])
    )


def bad_rows_expression(table: ir.Table, columns: dict[str, str] | None = None) -> ir.Table:
    """The bad rows by the field that makes them bad: a second query, run only when
    the summaries show bad rows."""
    rows = typed_rows(table, columns)
    bad = rows.filter(rows.problem.notnull())
    return bad.group_by("problem").aggregate(rows=bad.count())


def floors_expression(table: ir.Table, columns: dict[str, str] | None = None) -> ir.Table:
    """The logged floors of the good turns: a row per (floor, segment) with its turns
    and those with a memory (a turn with a memory and no floor cannot be counted)."""
    import ibis

    turns = turns_expression(table, None, columns)
    turns = turns.filter(turns.message_id.notnull())
    counts: dict[str, Any] = {"turns": turns.count(), "with_memory": ibis.ifelse(turns.rows > 0, 1, 0).sum()}
    if has_decisions(table, columns):  # turns with a memory and no logged decision: counted at their floor
        counts["undecided"] = ibis.ifelse((turns.rows > 0) & (turns.logged_decided == 0), 1, 0).sum()
    return turns.group_by(["floor", "segment"]).aggregate(**counts)


def has_shadow_columns(table: ir.Table, columns: dict[str, str] | None) -> bool:
    """Whether the table carries a shadow config's decisions (its shadow_rule and
    shadow_kept columns): without either, the file run shows no side by side either."""
    columns = columns or {}
    return columns.get("shadow_rule", "") in table.columns and columns.get("shadow_kept", "") in table.columns


def shadow_rows(table: ir.Table, columns: dict[str, str], shadowed: bool = True) -> ir.Table:
    """The good rows, as the file run's side by side reads them: the turn, its time,
    both sides' decisions (``kept`` NULL in a table without the column) and the rules
    that made them; with `shadowed`, only those with a ``shadow_rule``."""
    decisions = {
        name: optional_field(table, columns, name, kind)
        for name, kind in (("kept", "boolean"), ("rule", "string"), ("shadow_rule", "string"), ("shadow_kept", "boolean"))
    }
    rows = typed_rows(table, columns, extra=decisions)
    good = rows.problem.isnull()
    return rows.filter(good & rows.shadow_rule.notnull() if shadowed else good)


def shadow_expression(table: ir.Table, window: str, columns: dict[str, str]) -> ir.Table:
    """The side by side's counts per window (the file run's decisions.shadow_windows):
    a turn per message_id of the rows with a ``shadow_rule``, at its earliest row's
    time; a side has memory in the turn when it kept any of its memories (0/1 maxima,
    as turns_expression counts the logged decisions: a NULL decision is 0). A row per
    window (its number since the epoch, as summary_expression's) with its turns, those
    each side left with no memory, those only one did, and ``decided``: the turns with
    a candidate's decision at all (the file run shows the side by side only then)."""
    import ibis

    if window not in WINDOWS:
        raise ValueError(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
    width_s, offset_s = WINDOW_MICROSECONDS[window] // 1_000_000, WINDOW_OFFSET[window] // 1_000_000
    rows = shadow_rows(table, columns)
    turns = rows.group_by("message_id").aggregate(
        ts=rows.ts.min(),
        shipped=ibis.ifelse(rows.kept, 1, 0).max(),
        candidate=ibis.ifelse(rows.shadow_kept, 1, 0).max(),
        decided=ibis.ifelse(rows.shadow_kept.notnull(), 1, 0).max(),
    )
    turns = turns.filter(turns.ts.notnull())
    turns = turns.mutate(window=((turns.ts.epoch_seconds() - offset_s) // width_s).cast("int64"))
    shipped_none, candidate_none = turns.shipped == 0, turns.candidate == 0
    return (
        turns.group_by("window")
        .aggregate(
            turns=turns.count(),
            shipped_no_memory=ibis.ifelse(shipped_none, 1, 0).sum(),
            candidate_no_memory=ibis.ifelse(candidate_none, 1, 0).sum(),
            only_shipped=ibis.ifelse(shipped_none & ~candidate_none, 1, 0).sum(),
            only_candidate=ibis.ifelse(~shipped_none & candidate_none, 1, 0).sum(),
            decided=turns.decided.sum(),
        )
        .order_by("window")
    )


def shadow_summary(table: ir.Table, window: str, columns: dict[str, str]) -> ShadowReport | None:
    """The side by side from the engine (None where the file run shows none: no row
    with a shadow_rule and a time, or none with a candidate's decision): the windows'
    counts in one query, the rules each side logged in a second, small one; the
    McNemar tests and the output are the file run's (decisions.shadow_report)."""
    found = shadow_expression(table, window, columns).to_pyarrow().to_pylist()
    if not found:
        return None
    if not sum(int(row["decided"]) for row in found):
        # the file run's has_shadow counts any good row's decision, with a shadow_rule or not:
        # asked only in this rare case (rows with a shadow_rule and no decision in any timed turn)
        good = shadow_rows(table, columns, shadowed=False)
        if not int(good.filter(good.shadow_kept.notnull()).count().execute()):
            return None
    rows = shadow_rows(table, columns)
    names = rows.select("rule", "shadow_rule").distinct().to_pyarrow().to_pylist()
    step_us, offset_us = WINDOW_MICROSECONDS[window], WINDOW_OFFSET[window]
    counts = [
        (
            EPOCH + timedelta(microseconds=int(row["window"]) * step_us + offset_us),
            row["turns"], row["shipped_no_memory"], row["candidate_no_memory"], row["only_shipped"], row["only_candidate"],
        )
        for row in found
    ]  # fmt: skip
    # sorted as the file run's list(DISTINCT ... ORDER BY ...) sorts them (code points)
    shipped = sorted({str(row["rule"]) for row in names if row["rule"] is not None})
    candidate = sorted({str(row["shadow_rule"]) for row in names})
    return shadow_report(counts, window, shipped, candidate)


def decisions_expression(table: ir.Table, columns: dict[str, str] | None = None) -> ir.Table:
    """The good turns with a logged decision, by the rule that made it (the file run's
    decisions.logged_decisions): a row per rule with its turns."""
    rows = typed_rows(table, columns, logged=True)
    rows = rows.filter(rows.problem.isnull() & rows.kept.notnull())
    return rows.group_by(rule=rows.rule.fill_null("?")).aggregate(turns=rows.message_id.nunique())


def conflicts_expression(table: ir.Table, columns: dict[str, str] | None = None) -> ir.Scalar:
    """Repeated (message_id, memory_id) pairs whose scores disagree: a second query,
    run only when the summaries show repeats (as the file run does), so a clean log
    costs one scan."""
    rows = typed_rows(table, columns)
    rows = rows.filter(rows.problem.isnull() & rows.memory_id.notnull() & rows.score.notnull())
    pairs = rows.group_by(["message_id", "memory_id"]).aggregate(repeats=rows.count(), low=rows.score.min(), high=rows.score.max())
    return pairs.filter((pairs.repeats > 1) & (pairs.low != pairs.high)).count()


def compile_sql(floor: float, window: str, dialect: str, name: str = "retrievals", columns: dict[str, str] | None = None) -> str:
    """The query as `dialect` runs it, over a table `name` of the log's columns."""
    import ibis

    columns = columns or FIELDS
    schema = {
        columns["message_id"]: "string",
        columns["memory_id"]: "string",
        columns["score"]: "float64",
        columns["timestamp"]: "timestamp('UTC')",
    }
    return str(ibis.to_sql(summary_expression(ibis.table(schema, name=name), floor, window, columns), dialect=dialect))


# ------------------------------------------------------------------ connecting


def url_secrets(url: str) -> list[str]:
    """The parts of a connection URL never to print: its password (and the URL itself)."""
    from urllib.parse import unquote, urlsplit

    secrets = [url]
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    if password:
        secrets += [password, unquote(password)]
    return secrets


def connect(url: str) -> Any:
    """An ibis connection for `url`; errors name the engine, never the URL's secrets."""
    try:
        import ibis
    except ImportError:
        raise WarehouseError(f"--connect needs the warehouse extra: {INSTALL_HINT}") from None
    scheme = url.partition("://")[0].lower() or "?"
    if scheme == "postgresql":
        url = "postgres" + url[len("postgresql") :]  # ibis names the backend postgres
    try:
        return ibis.connect(url)
    except ImportError as exc:
        raise WarehouseError(
            f"no ibis backend for {scheme!r} installed ({redact_text(str(exc), url_secrets(url))}): pip install 'ibis-framework[{scheme}]'"
        ) from None
    except Exception as exc:  # any driver's error: its text may carry the URL
        raise WarehouseError(f"cannot connect to the {scheme} engine: {redact_text(str(exc), url_secrets(url))}") from None


def open_table(con: Any, name: str, columns: dict[str, str], logged: bool = False) -> ir.Table:
    """The table or view `name` (``schema.table`` allowed), its columns checked; with
    `logged` (each turn at its logged floor), its floor column too: a table without
    one exits 2 asking for --floor or --floor-config, as a log without one does,
    unless it has a kept column (the turns are counted by their logged decisions, and
    a turn without any by a floor it does not carry exits 2 in summarize)."""
    database, _, table_name = name.rpartition(".")
    try:
        table = con.table(table_name, database=database or None)
    except Exception as exc:
        raise WarehouseError(f"table {name}: not found or not readable ({type(exc).__name__}: {redact_text(str(exc))})") from None
    schema = table.schema()
    missing = [f"{field_name} (column {column!r})" for field_name, column in columns.items() if field_name in FIELDS and column not in schema]
    if missing:
        raise WarehouseError(
            f"table {name}: no {', '.join(missing)}; it has {', '.join(schema.names)} (map a field with --column FIELD=COLUMN)"
        )
    stamp = schema[columns["timestamp"]]
    if not stamp.is_timestamp():
        raise WarehouseError(f"table {name}: column {columns['timestamp']!r} (timestamp) is {stamp}, not a timestamp")
    score = schema[columns["score"]]
    if not score.is_numeric():
        raise WarehouseError(f"table {name}: column {columns['score']!r} (score) is {score}, not a number")
    if logged and columns["floor"] not in schema and columns.get("kept") not in schema:
        raise turn_floor.NoLoggedFloor(f"table {name}: the turns {turn_floor.NO_FLOOR_LOGGED}")
    if logged and columns["floor"] in schema:
        floor = schema[columns["floor"]]
        if not floor.is_numeric():
            raise WarehouseError(f"table {name}: column {columns['floor']!r} (floor) is {floor}, not a number")
    return table


# ------------------------------------------------------------------ the summaries


def summarize(table: ir.Table, floor: float | None, window: str, columns: dict[str, str] | None = None, name: str = "") -> Summary:
    """Run the query on the engine and build the windows and their histograms; with
    `floor` None, each turn at its logged floor (NoLoggedFloor when a turn with a
    memory carries none), or by its logged decisions where it has them. `name` is
    the table's, for messages."""
    try:
        found = summary_expression(table, floor, window, columns).to_pyarrow().to_pydict()
        summary = from_rows(found, window)
        if summary.counts["merged"]:
            summary.counts["conflicts"] = int(conflicts_expression(table, columns).execute())
        if summary.bad_rows:
            by_field = bad_rows_expression(table, columns).to_pyarrow().to_pydict()
            counted = dict(zip(by_field["problem"], by_field["rows"], strict=True))
            summary.bad_fields = {problem: int(counted[problem]) for problem in PROBLEMS if counted.get(problem)}
        floors = floors_expression(table, columns).to_pyarrow().to_pylist() if floor is None else None
        rules = decisions_expression(table, columns).to_pyarrow().to_pylist() if floors is not None and has_decisions(table, columns) else []
        # a shadow config's decisions are shown whatever the floor, as the file run shows them
        shadow = shadow_summary(table, window, columns) if columns is not None and has_shadow_columns(table, columns) else None
    except Exception as exc:
        raise WarehouseError(f"the engine refused the monitor's query: {redact_text(str(exc))}") from None
    summary.shadow = shadow
    if rules:
        # as the file run: most turns first, then by name
        listed_rules = sorted(((str(row["rule"]), int(row["turns"])) for row in rules), key=lambda item: (-item[1], item[0]))
        summary.decisions = LoggedDecisions(listed_rules, sum(int(row["undecided"]) for row in floors or []))
    if floors is not None and (summary.decisions is None or summary.decisions.without):
        with_memory = sum(int(row["with_memory"]) for row in floors)
        missing = sum(int(row["with_memory"]) for row in floors if row["floor"] is None)
        turn_floor.check_logged(missing, with_memory, f"table {name}")
        # as the file run lists them (turn_floor.logged_floors): most turns first
        listed = [(float(row["floor"]), row["segment"] or "?", int(row["turns"])) for row in floors if row["floor"] is not None]
        summary.floors = sorted(listed, key=lambda item: (-item[2], item[0], item[1]))
    return summary


def from_rows(found: dict[str, list], window: str) -> Summary:
    """Windows, histograms and counts from the summary rows (columns as lists)."""
    count = len(found["turns"])
    step_us, offset_us = WINDOW_MICROSECONDS[window], WINDOW_OFFSET[window]
    totals = dict.fromkeys(("turns", "rows", "empty_turns", "no_timestamp", "merged", "conflicts"), 0)
    per_window: dict[int, dict[str, int]] = {}
    bins: dict[int, dict[int, int]] = {}
    bad_rows, low, high = 0, None, None
    for i in range(count):
        if found["bad"][i]:
            bad_rows += int(found["raw"][i])
            continue
        turns = int(found["turns"][i])
        totals["turns"] += turns
        totals["rows"] += int(found["rows"][i])
        totals["empty_turns"] += int(found["empty"][i])
        totals["merged"] += int(found["merged"][i])
        number = found["window"][i]
        if number is None:
            totals["no_timestamp"] += turns
            continue
        figures = per_window.setdefault(int(number), dict.fromkeys(("turns", "rows", "no_memory", "kept", "near", "scored"), 0))
        figures["turns"] += turns
        figures["rows"] += int(found["rows"][i])
        figures["no_memory"] += int(found["no_memory"][i])
        figures["kept"] += int(found["kept"][i])
        figures["near"] += int(found["near"][i])
        if found["bin"][i] is not None:
            figures["scored"] += turns
            bins.setdefault(int(number), {})[int(found["bin"][i])] = turns
            low, high = found["low"][i], found["high"][i]
    numbers = sorted(per_window)
    histograms = np.zeros((len(numbers), HISTOGRAM_BINS), dtype=np.int64)
    for row, number in enumerate(numbers):
        for b, turns in bins.get(number, {}).items():
            histograms[row, b] += turns
    windows = []
    for row, number in enumerate(numbers):
        f = per_window[number]
        start = EPOCH + timedelta(microseconds=number * step_us + offset_us)
        p10: float | None = None
        p50: float | None = None
        p90: float | None = None
        if f["scored"] and low is not None and high is not None:
            p10, p50, p90 = histogram_quantiles(histograms[row], float(low), float(high))
        windows.append(
            Window(
                start=start,
                end=start + WINDOWS[window],
                turns=f["turns"],
                rows=f["rows"],
                no_memory=f["no_memory"],
                kept_per_turn=f["kept"] / f["turns"],
                p10=p10,
                p50=p50,
                p90=p90,
                near_floor=f["near"] / f["scored"] if f["scored"] else None,
            )
        )
    return Summary(windows, histograms, totals, bad_rows, count)


def histogram_quantiles(counts: np.ndarray, low: float, high: float) -> tuple[float, float, float]:
    """p10, p50, p90 from binned counts, as DuckDB's quantile_cont would give them from
    the values: the values of a bin are taken evenly spread across it, so each
    estimate is within one bin width of the exact quantile."""
    n = int(counts.sum())
    width = (high - low) / HISTOGRAM_BINS or 1.0
    cumulative = np.cumsum(counts)

    def value(index: int) -> float:
        b = int(np.searchsorted(cumulative, index, side="right"))
        before = int(cumulative[b - 1]) if b else 0
        inside = (index - before + 0.5) / int(counts[b])
        return min(high, max(low, low + width * (b + inside)))

    result = []
    for q in QUANTILES:
        position = q * (n - 1)
        below, above = math.floor(position), math.ceil(position)
        first = value(below)
        result.append(first + (value(above) - first) * (position - below))
    return result[0], result[1], result[2]
