"""Which floor each turn of a log is counted at. Pure (no streamlit).

Three answers, as `memlens monitor` and the Monitor page take them:

- one floor for every turn (``--floor X``: "what if the floor were X"; or a floor
  config with no floor per user or store);
- the floor config's, per turn, as the agent applies it (``FloorConfig.floor_for``):
  the user's floor, else the store's, else the global one, from the log's
  ``user_id`` and ``store``. A log has no tag, so floors per tag cannot be applied:
  those turns are counted at the global floor, and a note says so;
- the floor the agent logged for the turn (the log's ``floor`` column, with
  ``floor_segment``), when neither is given.

A rule is a SQL expression over a row of the relation (dashboard/monitoring/relation.py)
that ``build_turns`` takes once per turn into the turns table's ``floor`` and
``floor_segment`` columns; the windows then count each turn at its own floor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from connectors.common.errors import MemlensError
from connectors.common.score_spaces import DISTANCE_RULES, SIMILARITY_STORES, ScoreSpace
from dashboard.floor_config import FloorConfig, ScoreSpaceMismatch

# the log's column each segment kind is read from (a log carries no tag)
SEGMENT_COLUMNS = {"user": "user_id", "store": "store"}
FLOORS_SHOWN = 5  # floors listed in the header; the JSON has them all
NO_FLOOR_LOGGED = (
    "carry no floor per turn (no `floor` column: written before memlens logged the floor applied to each turn); "
    "give --floor X or --floor-config FILE"
)


class NoLoggedFloor(MemlensError, ValueError):
    """The log does not say at which floor its turns were filtered, and no floor was given."""


@dataclass(frozen=True)
class TurnFloor:
    """The floor each turn is counted at: ``sql`` over a relation row, with the
    segment it came from (``segment_sql``); ``logged`` when they are the log's own."""

    sql: str
    segment_sql: str
    logged: bool = False
    notes: list[str] = field(default_factory=list)


LOGGED = TurnFloor("floor", "floor_segment", logged=True)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def from_config(config: FloorConfig) -> TurnFloor | None:
    """The config's floors per user and store as a rule, in ``floor_for``'s order
    (user, then store, then the global floor); None when it has none (one floor for
    every turn: the caller counts at ``config.floor``)."""
    notes = []
    if config.segments.get("tag"):
        notes.append(
            f"the floor config's {len(config.segments['tag']):,} floor(s) per tag are not applied: a log has no tag, "
            f"so those turns are counted at the global floor {config.floor!r}"
        )
    floors, segments = [], []
    for by in ("user", "store"):
        for value, floor in sorted(config.segments.get(by, {}).items()):
            test = f"{SEGMENT_COLUMNS[by]} = {_quote(value)}"
            floors.append(f"WHEN {test} THEN {float(floor)!r}")
            segments.append(f"WHEN {test} THEN {_quote(f'{by}={value}')}")
    if not floors:
        return None
    return TurnFloor(
        f"(CASE {' '.join(floors)} ELSE {config.floor!r} END)",
        f"(CASE {' '.join(segments)} ELSE 'global' END)",
        notes=notes,
    )


def config_notes(config: FloorConfig) -> list[str]:
    """What applying the config to a log leaves out (floors per tag), for a config
    counted at one floor."""
    rule = from_config(config)
    if rule is not None:
        return rule.notes
    return [] if not config.segments.get("tag") else [
        f"the floor config's {len(config.segments['tag']):,} floor(s) per tag are not applied: a log has no tag, "
        f"so every turn is counted at the global floor {config.floor!r}"
    ]


def _kind(store: str) -> str | None:
    """The store kind a log's store value names (``chroma`` or ``chroma:1a2b3c4d``), or None."""
    kind = store.split(":", 1)[0].strip().lower()
    return kind if kind in SIMILARITY_STORES or kind in DISTANCE_RULES else None


def check_space(config: FloorConfig, stores: list[str], where: str) -> list[str]:
    """Refuse a floor calibrated in another store kind's space than the log's stores
    (ScoreSpaceMismatch), as the agent side does; the notes say what could not be
    checked. The log carries a store's name, never its distance setting, so a floor
    from Chroma's l2 space is not told apart from one from Chroma's cosine space."""
    space: ScoreSpace | None = config.score_space
    if space is None:
        return ["the floor config names no score space: the log's scores are not checked against it"]
    if not stores:
        return [f"the score space ({space.describe()}) is not checked: {where} name no store"]
    unknown = sorted(store for store in stores if _kind(store) is None)
    other = sorted(store for store in stores if _kind(store) not in (None, space.store))
    if other:
        raise ScoreSpaceMismatch(
            f"the floor {config.floor!r} from {config.source or 'the floor config'} was calibrated in {space.describe()}; "
            f"{where} hold turns of {', '.join(other[:3])}{' ...' if len(other) > 3 else ''}. A floor applies only in its "
            "own score space: calibrate one on that store's labels"
        )
    notes = []
    if unknown:
        notes.append(
            f"the score space is not checked for store(s) {', '.join(unknown[:3])}{' ...' if len(unknown) > 3 else ''}: "
            "not a store kind memlens knows"
        )
    if space.formula != "as sent" and len(unknown) < len(stores):
        notes.append(
            f"the log names the store ({space.store}) but not its distance setting: checked as {space.store}, "
            f"not as {space.describe()}"
        )
    return notes


def logged_floors(con: duckdb.DuckDBPyConnection, turns: str, where: str) -> list[tuple[float, str, int]]:
    """(floor, segment, turns) of a turns table built with the logged rule, most
    turns first; NoLoggedFloor when a turn with a memory carries no floor."""
    missing, with_memory = con.execute(
        f"SELECT count(*) FILTER (WHERE floor IS NULL AND rows > 0), count(*) FILTER (WHERE rows > 0) FROM {turns}"
    ).fetchone() or (0, 0)
    check_logged(missing, with_memory, where)
    rows = con.execute(
        f"""SELECT floor, coalesce(floor_segment, '?') AS segment, count(*) AS turns FROM {turns}
            WHERE floor IS NOT NULL GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2"""
    ).fetchall()
    return [(float(floor), str(segment), int(count)) for floor, segment, count in rows]


def check_logged(missing: int, with_memory: int, where: str) -> None:
    """NoLoggedFloor when `missing` of the `with_memory` turns with a memory carry no
    logged floor: they cannot be counted at the floor applied to them. The same words
    for a log (logged_floors) and an engine's table (dashboard/monitoring/warehouse.py)."""
    if missing and missing == with_memory:
        raise NoLoggedFloor(f"{where}: the turns {NO_FLOOR_LOGGED}")
    if missing:
        raise NoLoggedFloor(
            f"{missing:,} of {with_memory:,} turns with a memory in {where} carry no logged floor (written before "
            "memlens logged the floor applied to each turn); give --floor X or --floor-config FILE"
        )


def describe_floors(floors: list[tuple[float, str, int]], how: str) -> str:
    """``each turn at its logged floor (0.28 user=sam: 120 turns; 0.35 global: 880 turns)``."""
    shown = "; ".join(f"{floor!r} {segment}: {count:,} turns" for floor, segment, count in floors[:FLOORS_SHOWN])
    more = f"; and {len(floors) - FLOORS_SHOWN:,} more" if len(floors) > FLOORS_SHOWN else ""
    return f"each turn at {how} ({shown}{more})" if floors else f"each turn at {how}"
