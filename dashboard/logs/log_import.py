"""What reading a retrieval log gives (``LogImport``) and the row rules every reader
of one applies: ``checked`` on one frame's rows, ``merged`` over the parts of one
file. Pure.

The readers (retrieval_log.py, the validating one and the entry points; fast_path.py,
DuckDB's scan; streamed.py, a file read in parts; bad_rows.py, the bad rows named in
bounded memory) all build on this module, and it imports none of them, so the
dependency runs one way. The rules themselves (required fields, empty turns,
repeated pairs) are in retrieval_log.py's docstring.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from connectors.common.inbound import EARLIEST, LATEST
from connectors.common.lines import MAX_RANK, LineIssue
from dashboard.logs.log_files import COLUMNS, DECISION_COLUMNS, DECISION_FLAGS, ID_COLUMNS, TEXT_COLUMNS

EMPTY_TURN_COLUMNS = ("message_id", "user_id", "timestamp", "store", "floor", "floor_segment", *DECISION_COLUMNS, "line")


@dataclass
class LogImport:
    """What reading one log gave: the good rows, and what was wrong with the rest."""

    source: str
    rows: pd.DataFrame  # COLUMNS + "line", one row per (message_id, memory_id)
    issues: list[LineIssue] = field(default_factory=list)  # bad rows, not imported
    duplicates: int = 0  # rows merged into an earlier row with the same pair
    conflicts: list[LineIssue] = field(default_factory=list)  # merged repeats that disagreed
    rows_read: int = 0  # data rows seen, good and bad, blank lines not counted
    bad_row_count: int | None = None  # set where one line holds many rows (OTLP)
    # turns the store returned nothing for: EMPTY_TURN_COLUMNS, one row per message_id
    empty_turns: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(EMPTY_TURN_COLUMNS)))
    columnar: bool = False  # read by DuckDB's fast path (a clean file), not the validating reader

    @property
    def bad_rows(self) -> int:
        if self.bad_row_count is not None:
            return self.bad_row_count
        return len({issue.line for issue in self.issues})

    @property
    def turns(self) -> int:
        """Turns with a memory, plus the turns the store returned nothing for."""
        with_memory = int(self.rows["message_id"].nunique()) if len(self.rows) else 0
        return with_memory + len(self.empty_turns)

    def summary(self) -> str:
        text = (
            f"{self.source}: imported {len(self.rows):,} rows in {self.turns:,} turns"
            f" from {self.rows_read:,} read; {self.bad_rows:,} bad row(s) skipped;"
            f" {self.duplicates:,} duplicate row(s) merged"
        )
        if len(self.empty_turns):
            text += f"; {len(self.empty_turns):,} turn(s) with no memory"
        if self.conflicts:
            text += f" ({len(self.conflicts):,} with a different rank or score: the first is kept)"
        return text

    def issue_lines(self, limit: int | None = None) -> list[str]:
        shown = self.issues if limit is None else self.issues[:limit]
        return [str(issue) for issue in shown]


@dataclass
class Checked:
    """One frame's rows checked: the good rows and empty turns kept, the rest named."""

    good: pd.DataFrame  # COLUMNS + "line": rows with a memory, repeats not merged yet
    empty: pd.DataFrame  # the same columns: empty-turn rows
    issues: list[LineIssue]
    rows_read: int


def checked(frame: pd.DataFrame, lines: np.ndarray, issues: list[LineIssue], name: str) -> Checked:
    """The row rules on every column at once; repeats are merged by ``merged``, over
    every part of a file read in parts."""
    issue_lines = np.unique(np.array([issue.line for issue in issues], dtype=np.int64))
    # every row once: the rows read whole, plus bad lines that never became a row
    rows_read = len(frame) + int((~_contains(issue_lines, lines)).sum())
    for column in COLUMNS:
        if column not in frame.columns:
            frame[column] = None
    frame = frame[list(COLUMNS)].copy()
    # rows a reader already found wrong stay out, whatever the column checks say
    bad = _contains(lines, issue_lines)
    found: list[tuple[np.ndarray, str, str]] = []

    def flag(mask: np.ndarray, column: str, message: str) -> None:
        nonlocal bad
        mask = np.asarray(mask, dtype=bool)
        if mask.any():
            found.append((lines[mask], column, message))
            bad |= mask

    for column in TEXT_COLUMNS:
        if column != "timestamp":
            # one text dtype (missing stays missing), also for e.g. integer ids in Parquet
            frame[column] = frame[column].astype("str")
    # an empty turn: a message id and no memory, rank or score (the store returned nothing)
    empty_turn = (
        frame["message_id"].notna().to_numpy()
        & frame["memory_id"].isna().to_numpy()
        & frame["rank"].isna().to_numpy()
        & frame["score"].isna().to_numpy()
    )
    for column in ID_COLUMNS:
        values = frame[column]
        missing = values.isna().to_numpy()
        if column == "memory_id":
            flag(missing & ~empty_turn, column, "required, missing (a turn with no memory leaves rank and score empty too)")
        else:
            flag(missing, column, "required, missing")
        flag(~missing & (values.fillna("").str.strip() == "").to_numpy(), column, "required, a non-empty string")

    rank = pd.to_numeric(frame["rank"], errors="coerce")
    raw_rank = frame["rank"]
    flag(raw_rank.isna().to_numpy() & ~empty_turn, "rank", "required, missing")
    rank_values = rank.to_numpy(dtype=float, na_value=np.nan)
    # a NaN or infinity that arrow kept as a number (not a missing value) is no rank either
    not_number = (rank.isna().to_numpy() | ~np.isfinite(rank_values)) & raw_rank.notna().to_numpy()
    flag(not_number, "rank", "not a whole number")
    with np.errstate(invalid="ignore"):
        fractional = ~np.isnan(rank_values) & (np.floor(rank_values) != rank_values)
        below_one = ~np.isnan(rank_values) & ~fractional & (rank_values < 1)
    flag(fractional, "rank", "not a whole number")
    flag(below_one, "rank", "must be 1 or more (ranks are 1-based)")
    with np.errstate(invalid="ignore"):
        too_big = ~np.isnan(rank_values) & ~fractional & (rank_values > MAX_RANK)
    flag(too_big, "rank", f"out of range (at most {MAX_RANK:,})")

    score = pd.to_numeric(frame["score"], errors="coerce")
    raw_score = frame["score"]
    score_values = score.to_numpy(dtype=float, na_value=np.nan)
    score_missing = raw_score.isna().to_numpy()
    # a row with a memory and a rank but no score is a memory the store returned with
    # no score (the agent's log writes a NaN or infinite score so): imported, NaN here,
    # under every floor. to_numeric turns unparseable text into NaN; a literal NaN / inf
    # in the file is refused
    flag(~score_missing & ~np.isfinite(score_values), "score", "not a finite number")

    stamps = frame["timestamp"]
    if pd.api.types.is_datetime64_any_dtype(stamps.dtype):
        parsed = stamps.dt.tz_localize("UTC") if stamps.dt.tz is None else stamps.dt.tz_convert("UTC")
    else:
        parsed = pd.to_datetime(stamps, utc=True, errors="coerce", format="ISO8601")
        flag((parsed.isna() & stamps.notna()).to_numpy(), "timestamp", "not an ISO 8601 date-time")
    # a time no retrieval happened at (year 9999, 1900) would end every window sum
    outside = parsed.notna() & ((parsed < pd.Timestamp(EARLIEST)) | (parsed >= pd.Timestamp(LATEST)))
    flag(outside.to_numpy(), "timestamp", f"outside {EARLIEST:%Y}-{LATEST:%Y}")
    parsed = parsed.mask(outside)
    frame["timestamp"] = parsed
    # the logged floor, leniently (log_files.OPTIONAL_COLUMNS): not a finite number is none
    # (pandas' nullable Float64: a missing floor is pd.NA, as DuckDB's path gives it)
    floor = pd.to_numeric(frame["floor"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    frame["floor"] = pd.array(np.where(np.isfinite(floor), floor, np.nan), dtype="Float64")
    for column in DECISION_FLAGS:
        frame[column] = decisions(frame[column])
    frame["rank"] = np.where(bad, 0, np.nan_to_num(rank_values, nan=0)).astype(np.int64)
    frame["score"] = score_values
    frame["line"] = lines.astype(np.int64)

    issues = _issue_list(issues, found, name)
    return Checked(frame[~empty_turn & ~bad], frame[empty_turn & ~bad], issues, rows_read)


def decisions(values: pd.Series) -> pd.Series:
    """A logged decision (``kept``, ``shadow_kept``) as pandas' nullable boolean, read
    leniently as the floor is: true or false (a CSV cell's ``true`` / ``false`` too),
    anything else none, never a bad row."""
    if pd.api.types.is_bool_dtype(values.dtype) or values.isna().all():
        return values.astype("boolean")  # the common cases (a log written without them: all none) at once
    words = {"true": True, "false": False}
    flags = [
        bool(value) if isinstance(value, (bool, np.bool_)) else words.get(value.lower()) if isinstance(value, str) else None
        for value in values.tolist()
    ]
    return pd.Series(pd.array(flags, dtype="boolean"), index=values.index)


def merged(parts: list[Checked], name: str) -> LogImport:
    """The parts of one file (in file order) as one import: repeated pairs merged into
    the first, each repeat that disagrees named, the empty turns sorted out."""
    if len(parts) == 1:
        good, empty = parts[0].good.reset_index(drop=True), parts[0].empty
    else:
        good = pd.concat([part.good for part in parts], ignore_index=True)
        empty = pd.concat([part.empty for part in parts], ignore_index=True)
    duplicated = good.duplicated(list(ID_COLUMNS), keep="first").to_numpy()
    conflicts = repeat_conflicts(good, duplicated, name)
    if duplicated.any():
        good = good[~duplicated].reset_index(drop=True)
    empty_turns, merged_turns = merge_empty_turns(empty, good, name, conflicts)
    conflicts.sort(key=lambda issue: (issue.line, issue.field))
    return LogImport(
        source=name,
        rows=good,
        issues=[issue for part in parts for issue in part.issues],  # each part's in order, the parts in file order
        duplicates=int(duplicated.sum()) + merged_turns,
        conflicts=conflicts,
        rows_read=sum(part.rows_read for part in parts),
        empty_turns=empty_turns,
    )


def repeat_conflicts(rows: pd.DataFrame, duplicated: np.ndarray, name: str) -> list[LineIssue]:
    """A conflict for each repeat (`duplicated`, in file order) whose rank or score
    differs from the first row of its pair, which is kept. `rows` holds every row of
    each repeated pair (it may hold others too)."""
    conflicts: list[LineIssue] = []
    if not duplicated.any():
        return conflicts
    # the rows of the pairs that repeat (usually a handful, however long the log), in file order
    in_pairs = rows.duplicated(list(ID_COLUMNS), keep=False).to_numpy()
    pairs = rows.loc[in_pairs, [*ID_COLUMNS, "rank", "score", "line"]]
    first: dict[tuple, tuple] = {}
    for message_id, memory_id, rank, score, line, again in zip(
        *(pairs[column].to_numpy() for column in pairs.columns), duplicated[in_pairs], strict=True
    ):
        if not again:
            first[(message_id, memory_id)] = (rank, score, line)
            continue
        kept_rank, kept_score, kept_line = first[(message_id, memory_id)]
        for column, value, kept in (("rank", rank, kept_rank), ("score", score, kept_score)):
            if value != kept and not (value != value and kept != kept):  # two memories with no score (NaN) agree
                conflicts.append(
                    LineIssue(name, int(line), column, f"repeats line {kept_line} with {column} {value} instead of {kept}; line {kept_line} is kept")
                )
    return conflicts


def merge_empty_turns(empty: pd.DataFrame, good: pd.DataFrame, name: str, conflicts: list[LineIssue]) -> tuple[pd.DataFrame, int]:
    """(one row per turn with no memory, how many empty-turn rows were merged). A
    repeated empty-turn row is merged into the first; one for a turn that has
    memories elsewhere in the log contradicts them: it is merged and reported."""
    empty = empty[list(EMPTY_TURN_COLUMNS)]
    if not len(empty):
        return empty.reset_index(drop=True), 0
    repeated = empty.duplicated("message_id", keep="first").to_numpy()
    # arrow's set lookup: pandas' isin on text walks the million good ids in Python
    with_memory = pc.is_in(pa.array(empty["message_id"], pa.string()), value_set=pa.array(good["message_id"], pa.string()))
    with_memory = with_memory.to_numpy(zero_copy_only=False)
    if with_memory.any():
        first_line = good.groupby("message_id", sort=False)["line"].min()
        for message_id, line in zip(empty["message_id"][with_memory], empty["line"][with_memory], strict=True):
            kept_line = int(first_line[message_id])
            conflicts.append(
                LineIssue(name, int(line), "memory_id", f"says turn {message_id} had no memory, but line {kept_line} "
                          "gives it one; the memories are kept")
            )
    drop = repeated | with_memory
    return empty[~drop].reset_index(drop=True), int(drop.sum())


def _contains(values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """np.isin for line numbers; the lookup-table method is linear, where the
    default sorts a million lines."""
    if not len(values) or not len(wanted):
        return np.zeros(len(values), dtype=bool)
    return np.isin(values, wanted, kind="table")


def _issue_list(
    read_issues: list[LineIssue], found: list[tuple[np.ndarray, str, str]], name: str
) -> list[LineIssue]:
    """Issues in file order; each (line, field) once, the first reason found (a
    reader's own finding first: it saw the value before it was emptied)."""
    seen = {(issue.line, issue.field) for issue in read_issues}
    issues = list(read_issues)
    for line_numbers, column, message in found:
        for line in line_numbers.tolist():
            if (line, column) not in seen:
                seen.add((line, column))
                issues.append(LineIssue(name, int(line), column, message))
    return sorted(issues, key=lambda issue: (issue.line, issue.field))
