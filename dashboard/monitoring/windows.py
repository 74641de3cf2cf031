"""Per-window figures of the turns, as SQL over the ``turns`` table. Pure (no streamlit).

For each window (1 h, 1 d or 1 w, aligned on UTC; weeks start on Monday):

    turns            turns in the window (a turn's time is its earliest row)
    rows             memories returned, repeats merged
    no_memory        turns left with no memory at the floor: nothing scored at or
                     above it, or the store returned nothing (an empty turn)
    kept_per_turn    memories at or above the floor, per turn
    p10, p50, p90    quantiles of the top-1 score (turns with a memory)
    near_floor       share of turns whose top-1 lies within NEAR_FLOOR of the floor:
                     a floor sitting in the crowd, where a small score shift moves
                     many turns across it

The top-1 distribution of each window is also returned as counts over fixed bins
(``top1_histograms``), so the drift test compares distributions without moving
the turns out of DuckDB.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from dashboard.monitoring.relation import RELATION, TURNS

if TYPE_CHECKING:  # window_rows' frame: DuckDB imports pandas for it, the command never does
    import pandas as pd

WINDOWS = {"1h": timedelta(hours=1), "1d": timedelta(days=1), "1w": timedelta(weeks=1)}
WINDOW_MICROSECONDS = {name: int(step.total_seconds() * 1_000_000) for name, step in WINDOWS.items()}
# weeks start on Monday: 1970-01-05, four days after the epoch
WINDOW_OFFSET = {"1h": 0, "1d": 0, "1w": 4 * 86_400_000_000}
NEAR_FLOOR = 0.02
HISTOGRAM_BINS = 2000
# What makes a turn one with memory: a score at or above its floor (the default), the
# decisions the agent logged per row (a turn keeping any memory has memory; a turn
# the log carries none for is counted at its floor), or a floor file's turn rule
# computed from the turn's rows (relation.build_turns' ``rule_kept``)
AT_FLOOR, LOGGED_DECISIONS, RULE_DECISIONS = "floor", "logged", "rule"


@dataclass
class Window:
    start: datetime
    end: datetime
    turns: int
    rows: int
    no_memory: int
    kept_per_turn: float
    p10: float | None
    p50: float | None
    p90: float | None
    near_floor: float | None
    # set by the alert rules (dashboard.monitoring.alerts)
    in_baseline: bool = False
    drift: float | None = None  # KS statistic of the top-1 against the baseline
    drift_threshold: float | None = None
    tested: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def no_memory_share(self) -> float:
        return self.no_memory / self.turns if self.turns else float("nan")

    def label(self, window: str) -> str:
        return window_label(self.start, window)


def window_label(start: datetime, window: str) -> str:
    """How a window starting at `start` is named in the output, for a window size
    (`1h`, `1d`, `1w`): what the table, the alerts and the precision side print."""
    if window == "1h":
        return start.strftime("%Y-%m-%d %H:00")
    if window == "1w":
        return "week of " + start.strftime("%Y-%m-%d")
    return start.strftime("%Y-%m-%d")


def window_start_sql(window: str) -> str:
    """The window start as SQL: integer arithmetic on epoch microseconds (UTC), which
    is much cheaper than a time-zone-aware time_bucket on every turn."""
    if window not in WINDOWS:
        raise ValueError(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
    width, offset = WINDOW_MICROSECONDS[window], WINDOW_OFFSET[window]
    return f"make_timestamptz(((epoch_us(ts) - {offset}) // {width}) * {width} + {offset})"


def _kept_expression(con: duckdb.DuckDBPyConnection, floor: str, turns: str = TURNS) -> str:
    columns = {row[0] for row in con.execute(f"DESCRIBE {turns}").fetchall()}
    if "scores" in columns:
        return f"coalesce(len(list_filter(scores, lambda s: s >= {floor})), 0)"
    return "kept_at_floor"  # built for this floor (relation.build_turns(floor=...)), or each turn's own


def kept_sql(con: duckdb.DuckDBPyConnection, floor: str, turns: str = TURNS, counting: str = AT_FLOOR) -> str:
    """Memories kept per turn, in SQL over the turns table, as `counting` decides."""
    if counting == RULE_DECISIONS:
        return "rule_kept"
    at_floor = _kept_expression(con, floor, turns)
    if counting == LOGGED_DECISIONS:
        return f"(CASE WHEN logged_decided > 0 THEN logged_kept ELSE {at_floor} END)"
    return at_floor


def no_memory_sql(floor: str, counting: str = AT_FLOOR) -> str:
    """True for a turn left with no memory, in SQL over the turns table."""
    at_floor = f"(top1 IS NULL OR top1 < {floor})"
    if counting == RULE_DECISIONS:
        return "rule_kept = 0"
    if counting == LOGGED_DECISIONS:
        return f"(CASE WHEN logged_decided > 0 THEN logged_kept = 0 ELSE {at_floor} END)"
    return at_floor


def turn_floor_sql(floor: float | None) -> str:
    """The floor a turn is counted at, in SQL over the turns table: `floor` for every
    turn, or (None) each turn's own (its ``floor`` column: relation.build_turns)."""
    return "floor" if floor is None else repr(float(floor))


def window_figures(
    con: duckdb.DuckDBPyConnection, floor: float | None, window: str = "1d", turns: str = TURNS, counting: str = AT_FLOOR
) -> list[Window]:
    """The figures of every window holding a turn of `turns`, oldest first; turns
    without a timestamp are in no window. `floor` None: each turn at its own floor;
    `counting`: what keeps a memory (AT_FLOOR, LOGGED_DECISIONS, RULE_DECISIONS)."""
    bucket = window_start_sql(window)
    at = turn_floor_sql(floor)
    kept = kept_sql(con, at, turns, counting)
    rows = con.execute(
        f"""
        SELECT {bucket} AS start,
               count(*) AS turns,
               sum(rows) AS rows,
               count(*) FILTER (WHERE {no_memory_sql(at, counting)}) AS no_memory,
               avg({kept}) AS kept_per_turn,
               quantile_cont(top1, [0.1, 0.5, 0.9]) AS quantiles,
               count(*) FILTER (WHERE abs(top1 - {at}) <= {NEAR_FLOOR}) / nullif(count(top1), 0) AS near_floor
        FROM {turns}
        WHERE ts IS NOT NULL
        GROUP BY 1
        ORDER BY 1
        """
    ).fetchall()
    step = WINDOWS[window]
    windows = []
    for start, turns, row_count, no_memory, kept_per_turn, quantiles, near_floor in rows:
        p10, p50, p90 = quantiles if quantiles else (None, None, None)
        windows.append(
            Window(
                start=start,
                end=start + step,
                turns=int(turns),
                rows=int(row_count or 0),
                no_memory=int(no_memory),
                kept_per_turn=float(kept_per_turn or 0.0),
                p10=p10,
                p50=p50,
                p90=p90,
                near_floor=None if near_floor is None else float(near_floor),
            )
        )
    return windows


def top1_histograms(con: duckdb.DuckDBPyConnection, window: str, windows: list[Window], turns: str = TURNS) -> np.ndarray:
    """Counts of top-1 scores per window (rows, in `windows` order) over
    HISTOGRAM_BINS equal bins spanning every top-1 in the log."""
    window_start_sql(window)  # checks the name
    counts = np.zeros((len(windows), HISTOGRAM_BINS), dtype=np.int64)
    bounds = con.execute(f"SELECT min(top1), max(top1) FROM {turns} WHERE ts IS NOT NULL").fetchone()
    if bounds is None or bounds[0] is None or not windows:
        return counts
    low, high = float(bounds[0]), float(bounds[1])
    width = (high - low) / HISTOGRAM_BINS or 1.0
    step, offset = WINDOW_MICROSECONDS[window], WINDOW_OFFSET[window]
    # window numbers as integers, so a few hundred thousand (window, bin) counts come
    # back as arrays, not as Python datetimes
    found = con.execute(
        f"""
        SELECT (epoch_us(ts) - {offset}) // {step} AS number,
               least(CAST(floor((top1 - {low!r}) / {width!r}) AS INTEGER), {HISTOGRAM_BINS - 1}) AS bin,
               count(*) AS turns
        FROM {turns}
        WHERE ts IS NOT NULL AND top1 IS NOT NULL
        GROUP BY 1, 2
        """
    ).fetchnumpy()
    numbers = np.array([(int(w.start.timestamp() * 1_000_000) - offset) // step for w in windows], dtype=np.int64)
    row = np.searchsorted(numbers, np.asarray(found["number"], dtype=np.int64))
    inside = (row < len(numbers)) & (numbers[np.minimum(row, len(numbers) - 1)] == np.asarray(found["number"]))
    np.add.at(counts, (row[inside], np.asarray(found["bin"], dtype=np.int64)[inside]), np.asarray(found["turns"], dtype=np.int64)[inside])
    return counts


def window_rows(con: duckdb.DuckDBPyConnection, start: datetime, end: datetime) -> pd.DataFrame:
    """The log rows (memories returned, repeats merged) of exactly the turns in
    [start, end), in the log's columns plus ``line`` (their order), ready for a
    labelling session (dashboard.labels.sampling). Reads the relation again: one
    window, when a session is asked for, never on a floor move."""
    frame = con.execute(
        f"""
        SELECT message_id, memory_id, CAST(rank AS BIGINT) AS rank, score, user_id, CAST(NULL AS VARCHAR) AS query,
               ts AS timestamp, store, row_number() OVER (ORDER BY ts, message_id, rank) AS line
        FROM {RELATION}
        WHERE NOT bad AND memory_id IS NOT NULL
          AND message_id IN (SELECT message_id FROM {TURNS} WHERE ts >= ? AND ts < ?)
        QUALIFY row_number() OVER (PARTITION BY message_id, memory_id ORDER BY source) = 1
        ORDER BY line
        """,
        [start, end],
    ).df()
    return frame
