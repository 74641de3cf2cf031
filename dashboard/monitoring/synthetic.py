"""Synthetic production logs for the monitor, seeded: the Monitor page's demo, the
tests' known changes and the benchmark's 10,000,000 rows come from here. Pure.

Each turn's top-1 score is drawn around 0.45 (sd 0.12) and its other memories step
down from it, so a floor of 0.35 leaves about a fifth of the turns with no memory;
a small share of turns are empty (the store returned nothing: one row with no
memory_id). Two known changes can be put on one day: ``under_floor_day`` pushes a
further ``extra_under`` share of that day's turns under the floor, ``shift_day``
moves every score of that day by ``shift`` (as after an embedding-model change).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

START = datetime(2026, 1, 1, tzinfo=UTC)
FLOOR = 0.35
# the Monitor page's demo: a month with more turns under the floor on Jan 21 and
# every score 0.05 lower on Jan 26 (as after an embedding-model change)
DEMO_LOG = {"days": 30, "turns_per_day": 400, "seed": 2026, "k": 3, "under_floor_day": 20, "shift_day": 25}


def synthetic_log(
    days: int,
    turns_per_day: int,
    *,
    seed: int,
    k: int = 3,
    floor: float = FLOOR,
    under_floor_day: int | None = None,
    extra_under: float = 0.20,
    shift_day: int | None = None,
    shift: float = -0.05,
    empty_share: float = 0.02,
    start: datetime = START,
    first_turn: int = 0,
) -> pa.Table:
    """The log's rows (message_id, memory_id, rank, score, timestamp) in turn order."""
    rng = np.random.default_rng(seed)
    turns = days * turns_per_day
    day = np.repeat(np.arange(days), turns_per_day)
    top1 = np.clip(rng.normal(0.45, 0.12, turns), 0.0, 1.0)
    if under_floor_day is not None:
        # a further share of the day's turns, drawn from those above the floor, now score under it
        on_day = np.flatnonzero((day == under_floor_day) & (top1 >= floor))
        moved = rng.choice(on_day, size=min(len(on_day), round(extra_under * turns_per_day)), replace=False)
        top1[moved] = rng.uniform(0.05, floor - 0.01, len(moved))
    steps = np.cumsum(rng.exponential(0.04, (turns, k)), axis=1)
    scores = top1[:, None] - np.concatenate([np.zeros((turns, 1)), steps[:, : k - 1]], axis=1)
    if shift_day is not None:
        scores[day == shift_day] += shift
    # memlens's score lies in [0, 1]: a low top-1 minus its steps (or the shift) would
    # go below 0, and the Monitor's range check rightly takes such scores for a raw
    # distance, a false warning on the demo.
    np.clip(scores, 0.0, 1.0, out=scores)
    seconds = rng.uniform(0, 86_400, turns)
    base = np.datetime64(start.replace(tzinfo=None), "us")
    stamps = base + (day * 86_400_000_000 + (seconds * 1e6).astype(np.int64)).astype("timedelta64[us]")
    empty = rng.random(turns) < empty_share
    message = np.char.add("t", np.arange(first_turn, first_turn + turns).astype(str))
    # rows: k per turn, one (with no memory) per empty turn
    per_turn = np.where(empty, 1, k)
    turn_of_row = np.repeat(np.arange(turns), per_turn)
    offsets = np.arange(len(turn_of_row)) - np.repeat(np.cumsum(per_turn) - per_turn, per_turn)
    rank = offsets + 1
    is_empty_row = empty[turn_of_row]
    memory = np.char.add("mem-", (turn_of_row * 7 + rank * 13 % 997).astype(str))
    row_scores = scores[turn_of_row, np.minimum(offsets, k - 1)]
    mask = is_empty_row
    return pa.table(
        {
            "message_id": pa.array(message[turn_of_row]),
            "memory_id": pa.array(memory, mask=mask),
            "rank": pa.array(rank.astype(np.int64), mask=mask),
            "score": pa.array(np.round(row_scores, 4), mask=mask),
            "timestamp": pa.array(stamps[turn_of_row], pa.timestamp("us", tz="UTC")),
        }
    )


def write_daily(table: pa.Table, directory: Path, *, kind: str = "parquet") -> list[Path]:
    """One file per UTC day, as a folder of daily logs: parquet or jsonl."""
    directory.mkdir(parents=True, exist_ok=True)
    stamps = table.column("timestamp").to_numpy()
    days = stamps.astype("datetime64[D]")
    paths = []
    for value in np.unique(days):
        part = table.filter(pa.array(days == value))
        path = directory / f"{value}.{kind}"
        if kind == "parquet":
            pq.write_table(part, path)
        else:
            import json

            with path.open("w", encoding="utf-8") as handle:
                for row in part.to_pylist():
                    row["timestamp"] = row["timestamp"].isoformat().replace("+00:00", "Z")
                    handle.write(json.dumps({key: value for key, value in row.items() if value is not None}) + "\n")
        paths.append(path)
    return paths
