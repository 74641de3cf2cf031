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
  an empty turn (a row with no memory_id) has no memory;
- a row with no message_id, or a memory with no score, is bad: counted and left out;
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
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from connectors.common.errors import MemlensError
from connectors.common.redaction import redact_text
from dashboard.monitoring.windows import _MICROSECONDS, _OFFSET, HISTOGRAM_BINS, NEAR_FLOOR, WINDOWS, Window

if TYPE_CHECKING:
    import ibis.expr.types as ir

# the log's fields the aggregates read, and the column each is read from by default
FIELDS = {"message_id": "message_id", "memory_id": "memory_id", "score": "score", "timestamp": "timestamp"}
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


def parse_columns(pairs: list[str] | None) -> dict[str, str]:
    """``--column FIELD=NAME`` flags as {field: column}, every field present."""
    columns = dict(FIELDS)
    for pair in pairs or []:
        name, sep, column = pair.partition("=")
        name, column = name.strip(), column.strip()
        if not sep or not column:
            raise WarehouseError(f"--column {pair!r}: give FIELD=COLUMN, e.g. timestamp=created_at")
        if name not in FIELDS:
            raise WarehouseError(f"--column {pair!r}: FIELD is one of {', '.join(FIELDS)}")
        columns[name] = column
    return columns


# ------------------------------------------------------------------ the expression


def summary_expression(table: ir.Table, floor: float, window: str, columns: dict[str, str] | None = None) -> ir.Table:
    """One query over `table`: a row per (bad, window, bin) with additive counts.

    ``bad`` is true for the one group of bad rows; ``window`` (the window number since
    the epoch) is NULL for turns with no time, ``bin`` is NULL for turns with no memory."""
    import ibis

    if window not in WINDOWS:
        raise ValueError(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
    columns = columns or FIELDS
    floor = float(floor)
    width_s, offset_s = _MICROSECONDS[window] // 1_000_000, _OFFSET[window] // 1_000_000
    rows = table.select(
        message_id=table[columns["message_id"]].cast("string"),
        memory_id=table[columns["memory_id"]].cast("string"),
        score=table[columns["score"]].cast("float64"),
        ts=table[columns["timestamp"]],
    )
    good = rows.message_id.notnull() & (rows.memory_id.isnull() | rows.score.notnull())
    # a bad row is grouped under no message_id: one "turn" that holds every bad row
    rows = rows.mutate(message_id=ibis.ifelse(good, rows.message_id, ibis.null("string")))
    pairs = rows.group_by(["message_id", "memory_id"]).aggregate(
        score=rows.score.min(), repeats=rows.count(), ts=rows.ts.min()
    )
    memory = pairs.memory_id.notnull()
    turns = pairs.group_by("message_id").aggregate(
        ts=pairs.ts.min(),
        rows=pairs.memory_id.count(),
        top1=pairs.score.max(),
        kept=ibis.ifelse(pairs.score >= floor, 1, 0).sum(),
        merged=ibis.ifelse(memory, pairs.repeats - 1, 0).sum(),
        raw=pairs.repeats.sum(),
    )
    bad = turns.message_id.isnull()
    timed = ~bad & turns.ts.notnull()
    # the histogram spans the top-1 of every turn with a time, as the file run's does:
    # one aggregate row joined to every turn (a MIN() OVER () would move every turn to
    # one worker on Spark, Trino or BigQuery)
    bounds = turns.filter(timed).aggregate(low=turns.top1.min(), high=turns.top1.max())
    joined = turns.cross_join(bounds)
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
    )
    return (
        binned.group_by(["bad", "window", "bin"])
        .aggregate(
            turns=binned.count(),
            rows=binned.rows.sum(),
            no_memory=ibis.ifelse(binned.top1.isnull() | (binned.top1 < floor), 1, 0).sum(),
            kept=binned.kept.sum(),
            near=ibis.ifelse((binned.top1 - floor).abs() <= NEAR_FLOOR, 1, 0).sum(),
            empty=ibis.ifelse(binned.rows == 0, 1, 0).sum(),
            merged=binned.merged.sum(),
            raw=binned.raw.sum(),
            low=binned.low.min(),
            high=binned.high.max(),
        )
        .order_by(["window", "bin"])
    )


def conflicts_expression(table: ir.Table, columns: dict[str, str] | None = None) -> ir.Scalar:
    """Repeated (message_id, memory_id) pairs whose scores disagree: a second query,
    run only when the summaries show repeats (as the file run does), so a clean log
    costs one scan."""
    columns = columns or FIELDS
    rows = table.select(
        message_id=table[columns["message_id"]].cast("string"),
        memory_id=table[columns["memory_id"]].cast("string"),
        score=table[columns["score"]].cast("float64"),
    )
    rows = rows.filter(rows.message_id.notnull() & rows.memory_id.notnull() & rows.score.notnull())
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


def open_table(con: Any, name: str, columns: dict[str, str]) -> ir.Table:
    """The table or view `name` (``schema.table`` allowed), its columns checked."""
    database, _, table_name = name.rpartition(".")
    try:
        table = con.table(table_name, database=database or None)
    except Exception as exc:
        raise WarehouseError(f"table {name}: not found or not readable ({type(exc).__name__}: {redact_text(str(exc))})") from None
    schema = table.schema()
    missing = [f"{field_name} (column {column!r})" for field_name, column in columns.items() if column not in schema]
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
    return table


# ------------------------------------------------------------------ the summaries


def summarize(table: ir.Table, floor: float, window: str, columns: dict[str, str] | None = None) -> Summary:
    """Run the query on the engine and build the windows and their histograms."""
    try:
        found = summary_expression(table, floor, window, columns).to_pyarrow().to_pydict()
        summary = from_rows(found, floor, window)
        if summary.counts["merged"]:
            summary.counts["conflicts"] = int(conflicts_expression(table, columns).execute())
    except Exception as exc:
        raise WarehouseError(f"the engine refused the monitor's query: {redact_text(str(exc))}") from None
    return summary


def from_rows(found: dict[str, list], floor: float, window: str) -> Summary:
    """Windows, histograms and counts from the summary rows (columns as lists)."""
    count = len(found["turns"])
    step_us, offset_us = _MICROSECONDS[window], _OFFSET[window]
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
