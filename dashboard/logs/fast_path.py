"""read_log's DuckDB path: a JSONL, CSV or Parquet log read by one DuckDB scan. Pure.

The scan (``columnar``) gives every row with a ``bad`` column (the row rules in SQL)
and a ``pair`` column (the hash of message_id and memory_id). What is left is done on
the Arrow table, before any pandas frame exists, so that a file with a few bad rows
or repeated pairs costs about what a clean one does:

- the bad rows are named by looking at their lines alone (``bad_rows.named_lines``,
  by way of a small index of the file's line feeds, counted on the other core once
  DuckDB's scan is done);
- repeated pairs are found from the sorted hashes, and only the rows whose hash
  repeats are compared in pandas;
- the bad rows and the repeats leave the table in one filter, and the rest becomes
  the pandas frame ``LogImport.rows`` once.

A file DuckDB will not parse, or whose rows the two readers see differently, gives
None: the caller reads it the validating way, which names every row.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from connectors.common.lines import LineIssue
from dashboard.logs.bad_rows import LineIndex, named_bad_rows, named_lines
from dashboard.logs.log_files import ID_COLUMNS, LogFormatError
from dashboard.logs.log_import import LogImport, merge_empty_turns, repeat_conflicts
from dashboard.logs.streamed import not_plain_jsonl, read_streamed

if TYPE_CHECKING:
    import duckdb

# Work done on the other core while the calling thread goes on with the rows: numpy,
# which lets go of the GIL. Nothing runs beside DuckDB's scan, which uses both cores
# and was slowed by as much as the work beside it took.
_BESIDE = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memlens-log")


class _Beside:
    """What the other core works out for one scanned table while this one finds the
    repeats and makes the frames: the file's line feeds (to name bad rows by line, and
    to tell a blank line), then, for a VARCHAR read, whether its text is certain
    (``columnar.text_is_certain``), needed only at the end."""

    def __init__(self, path: Path, kind: str, table: pa.Table, *, check_text: bool = False, lines: Future[LineIndex] | None = None):
        from dashboard.logs import columnar

        self.lines = lines or (_BESIDE.submit(LineIndex, path) if kind != "parquet" else None)
        # after the line feeds, not beside them: two threads beside this one would slow all three
        self.certain = _BESIDE.submit(_after, self.lines, columnar.text_is_certain, table) if check_text else None

    def index(self) -> LineIndex | None:
        return self.lines.result() if self.lines is not None else None

    def text_is_certain(self) -> bool:
        return self.certain is None or self.certain.result()


def _after(first: Future | None, then: Callable[[pa.Table], bool], table: pa.Table) -> bool:
    # `first` was submitted before this task, and the pool takes tasks in order: it is
    # running or done, so the wait cannot hold up the task it waits for
    if first is not None:
        first.result()
    return then(table)


def read_fast(path: Path, name: str, format: str | None) -> LogImport | None:
    """The log read by DuckDB, every bad row named, or None (read it the validating way)."""
    from dashboard.logs import columnar

    try:
        kind = format or columnar.file_kind(str(path))
    except (LogFormatError, OSError):
        return None
    if kind not in ("jsonl", "csv", "parquet"):
        return None
    lines = None
    # numeric-looking ids from the first line on: no VARCHAR scan to find it out
    if kind == "jsonl" and not columnar.exact_text_fields(str(path)):
        table = _scanned(lambda con: columnar.read_jsonl_rows(con, str(path)))
        if table is None:
            return None
        # whether a text field could be a blank id or another JSON type is worked out
        # beside the rest; when it could, what was done is dropped and the exact read
        # below marks each such row
        beside = _Beside(path, kind, table, check_text=True)
        imported = _imported(path, name, kind, table, beside)
        if beside.text_is_certain():
            return imported
        lines = beside.lines  # the same file: its line feeds are counted once
    # for JSONL, every text field read as JSON text (fast_source's exact)
    table = _scanned(lambda con: _exact_rows(con, path, kind))
    return _imported(path, name, kind, table, _Beside(path, kind, table, lines=lines)) if table is not None else None


def _scanned(scan: Callable[[duckdb.DuckDBPyConnection], pa.Table | None]) -> pa.Table | None:
    """What `scan` reads on a cursor of the shared database, or None when DuckDB
    would not parse the file (the validating reader says why, line by line)."""
    import duckdb

    from dashboard.logs import columnar

    con = columnar.cursor()
    try:
        return scan(con)
    except duckdb.Error:
        return None
    finally:
        con.close()


def _exact_rows(con: duckdb.DuckDBPyConnection, path: Path, kind: str) -> pa.Table | None:
    """The rows with `bad` and `pair` columns, every JSON text field read exact; None
    when a required column is missing (the validating reader names it)."""
    from dashboard.logs import columnar

    source = columnar.fast_source(con, str(path), kind, 0, exact=True)
    if source is None:
        return None
    # the pair's hash, in the same scan: what finds a repeated pair below
    return con.sql(
        "SELECT message_id, memory_id, rank, score, user_id, query, ts AS timestamp, store, bad,"
        f" {columnar.PAIR_HASH} AS pair, floor, floor_segment, {columnar.DECISIONS} FROM ({source})"
    ).to_arrow_table()


def _imported(path: Path, name: str, kind: str, table: pa.Table, beside: _Beside) -> LogImport | None:
    """The scanned rows as a LogImport: bad rows named, repeats merged; None when the
    validating reader must read the file. The bad rows are named last, when the other
    core has counted the line feeds."""
    rows_read = table.num_rows
    if rows_read == 0:
        return None
    first_line = {"jsonl": 1, "csv": 2, "parquet": 1}[kind]
    bad = table.column("bad").to_numpy(zero_copy_only=False)
    line_of_row = np.arange(first_line, first_line + rows_read, dtype=np.int64)
    repeats, conflicts = _repeats(table, _sharing_a_hash(table.column("pair")), bad, line_of_row, name)
    table = table.select([c for c in table.column_names if c not in ("bad", "pair")])
    drop = np.flatnonzero(bad | repeats)
    if len(drop):
        table, line_of_row = _without(table, drop), np.delete(line_of_row, drop)
    good, empty = _frames(table, line_of_row)
    empty_turns, merged = merge_empty_turns(empty, good, name, conflicts)
    conflicts.sort(key=lambda issue: (issue.line, issue.field))
    index = beside.index()
    if index is not None and index.count != rows_read + first_line - 1:
        return None  # blank lines, a header only, values over several lines: line numbers would not hold
    issues: list[LineIssue] = []
    if bad.any():
        named = _named(path, kind, name, bad, index)
        if named is None:
            return None
        issues = named
    return LogImport(
        source=name, rows=good, issues=issues, duplicates=int(repeats.sum()) + merged, conflicts=conflicts,
        rows_read=rows_read, empty_turns=empty_turns, columnar=True,
    )


def _named(path: Path, kind: str, name: str, bad: np.ndarray, index: LineIndex | None) -> list[LineIssue] | None:
    """The bad rows named by the validating reader's checks, or None when it must read
    the file itself (traces or the app's read log, or the two readers disagree)."""
    if kind == "jsonl" and not_plain_jsonl(path):
        return None  # OTLP traces or the app's read log: their own readers name the rows
    if kind == "jsonl" and index is not None and index.count == len(bad):
        # one row per line: DuckDB's positions are the lines, and only they are looked at
        named: list[LineIssue] | None = named_lines(str(path), np.flatnonzero(bad) + 1, name, index)
    else:
        named = named_bad_rows(str(path), kind, name)
    if not named or len({i.line for i in named if i.skipped}) != int(bad.sum()):
        return None  # the two readers disagree: the validating reader's word is final
    return named


def _sharing_a_hash(pair: pa.ChunkedArray) -> np.ndarray | None:
    """Which rows hold a pair hash that occurs more than once, or None when none does.
    The hashes are sorted to find those that occur twice (a few milliseconds for a
    million rows), and only those are looked for in the column."""
    # the hashes, with 0 in place of the empty turns' missing ones
    every = pc.fill_null(pair, 0).to_numpy()
    hashes = np.sort(every)
    twice = hashes[1:][hashes[1:] == hashes[:-1]]
    if pair.null_count and int(np.searchsorted(hashes, 1)) - pair.null_count < 2:
        twice = twice[twice != 0]  # 0 repeats only as the placeholder (the sorted zeros come first)
    if not len(twice):
        return None
    twice = np.unique(twice)
    # 16 bits of each hash (the first two bytes of each) as a first sieve: a lookup in
    # a table of 65,536 flags. Only the rows it lets through (the repeats, and about
    # one row in 1,000 for each repeated hash) are compared whole. A fifth of what
    # np.isin on every hash costs, and a third of arrow's is_in.
    sieve = np.zeros(1 << 16, dtype=bool)
    sieve[twice.view(np.uint16)[::4]] = True
    through = np.flatnonzero(sieve[every.view(np.uint16)[::4]])
    holds = np.zeros(len(every), dtype=bool)
    # by sorting: NumPy 2.0's lookup-table method, which it picks for a narrow range
    # (one repeated hash), fails on a hash at or above 2**63 (OverflowError)
    holds[through[np.isin(every[through], twice, kind="sort")]] = True
    if pair.null_count:
        holds &= pc.is_valid(pair).to_numpy(zero_copy_only=False)
    return holds


def _repeats(
    table: pa.Table, holds: np.ndarray | None, bad: np.ndarray, line_of_row: np.ndarray, name: str
) -> tuple[np.ndarray, list[LineIssue]]:
    """(which rows repeat the pair of an earlier good row, the repeats that disagree on
    rank or score). Only the good rows that hold a repeated hash (`holds`, from
    ``_sharing_a_hash``) are compared, pair by pair (two pairs can share a hash)."""
    repeats = np.zeros(table.num_rows, dtype=bool)
    if holds is None:
        return repeats, []
    candidates = np.flatnonzero(holds & ~bad)
    rows = _only(table.select(["message_id", "memory_id", "rank", "score"]), candidates).to_pandas()
    rows["rank"] = rows["rank"].astype(np.int64)  # good rows: a whole rank
    rows["line"] = line_of_row[candidates]
    repeated = rows.duplicated(list(ID_COLUMNS), keep="first").to_numpy()
    repeats[candidates[repeated]] = True
    return repeats, repeat_conflicts(rows, repeated, name)


# Up to this many rows picked or dropped, a table is cut into slices (which copy
# nothing) rather than filtered (which copies every column) or taken from (arrow's
# take joins a column's chunks into one first: a copy of the column for a few rows)
_FEW_ROWS = 1024


def _only(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """The rows at these positions (ascending)."""
    if len(rows) > _FEW_ROWS:
        keep = np.zeros(table.num_rows, dtype=bool)
        keep[rows] = True
        return _kept(table, pa.array(keep))
    return pa.concat_tables([table.slice(row, 1) for row in rows.tolist()]) if len(rows) else table.slice(0, 0)


def _without(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """The table without the rows at these positions (ascending). A few rows out of
    many: the slices between them (the pandas frame made next copies every column
    once anyway)."""
    if len(rows) > _FEW_ROWS:
        keep = np.ones(table.num_rows, dtype=bool)
        keep[rows] = False
        return _kept(table, pa.array(keep))
    starts, stops = np.concatenate([[0], rows + 1]).tolist(), np.append(rows, table.num_rows).tolist()
    pieces = [table.slice(start, stop - start) for start, stop in zip(starts, stops, strict=True) if stop > start]
    return pa.concat_tables(pieces) if pieces else table.slice(0, 0)


def _kept(table: pa.Table, keep: pa.Array) -> pa.Table:
    """The rows where `keep` is true, filtered column by column on this thread: the
    table's own filter costs half as much again, most of it waiting on arrow's pool."""
    return pa.table([table.column(name).filter(keep) for name in table.column_names], names=table.column_names)


def _frames(table: pa.Table, line_numbers: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows with their line numbers as pandas frames: those with a memory, and the empty turns."""
    table = table.append_column("line", pa.array(line_numbers))
    # text as the validating reader's frames hold it (pandas' "str"), which an older
    # pyarrow would otherwise make Python objects, None where that has NaN
    text = pd.api.types.pandas_dtype("str")
    as_text = {pa.string(): text, pa.large_string(): text}.get
    # split off the empty turns in arrow, and only when there are some: each pandas
    # filter or column reorder of a million rows is a copy of every column
    empty_turn = pc.is_null(table.column("memory_id"))
    if pc.any(empty_turn).as_py():
        empty = _kept(table, empty_turn).to_pandas(types_mapper=as_text)
        table = _kept(table, pc.invert(empty_turn))
    else:
        empty = table.slice(0, 0).to_pandas(types_mapper=as_text)
    # the good rows' ranks are whole: cast chunk by chunk in arrow, and each column its
    # own block (pandas would otherwise copy the numbers once more to join them in one)
    table = table.set_column(table.column_names.index("rank"), "rank", pc.cast(table.column("rank"), pa.int64()))
    good = table.to_pandas(split_blocks=True, types_mapper=as_text)
    for frame in (good, empty):
        # UTC as pandas names it (an older pyarrow gives DuckDB's "Etc/UTC", another dtype)
        frame["timestamp"] = frame["timestamp"].dt.tz_convert("UTC")
        if "floor" in frame.columns:  # the logged floor as the validating reader holds it (log_import.checked)
            frame["floor"] = frame["floor"].astype("Float64")
        for column in ("kept", "shadow_kept"):  # the logged decisions, as log_import.decisions holds them
            if column in frame.columns:
                frame[column] = frame[column].astype("boolean")
    return good, empty


def read_fast_bytes(data: bytes, name: str, kind: str) -> LogImport | None:
    """An upload through the DuckDB path, by way of a temporary file (DuckDB reads
    files), or in parts where DuckDB stops at a broken line; None when it is traces,
    a read log, or a file the validating reader must read whole."""
    import tempfile

    from dashboard.logs import otlp, read_log

    if kind == "jsonl" and (otlp.looks_like_otlp(data) or read_log.looks_like_read_log(data)):
        return None
    with tempfile.TemporaryDirectory(prefix="memlens-log-") as directory:
        path = Path(directory) / f"upload.{kind}"
        path.write_bytes(data)
        fast = read_fast(path, name, kind)
        if fast is None and kind in ("jsonl", "csv"):
            # a line DuckDB cannot parse: in parts, not one frame of the whole upload
            fast = read_streamed(path, name, kind)
        return fast
