"""Naming the bad rows of a large log in bounded memory. Pure (no streamlit).

When DuckDB reads a file and finds bad rows (``columnar``'s ``bad`` column), the good
rows stay in DuckDB (the relation filters the bad ones out) and only the naming is
left: this module streams the file through the validating reader's checks one batch
at a time, so a 5,000,000-row Parquet file with one NaN score costs one batch of
pandas (100,000 rows), not the whole file as a frame. Parquet is read by row groups
(``iter_batches``), JSONL by chunks cut at a line feed; line numbers are the file's.
Other formats (CSV, whose quoted values may span lines; OTLP traces; the read log)
return None and are read by the validating reader whole, as before.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from connectors.common.lines import LineIssue

BATCH_ROWS = 100_000
CHUNK_BYTES = 16 << 20


def named_bad_rows(path: str, kind: str, name: str) -> list[LineIssue] | None:
    """Every bad row of the file named by file, line and field, or None when the
    format is not streamed here."""
    from dashboard.logs.log_import import checked

    if kind == "parquet":
        batches = _parquet_batches(path)
    elif kind == "jsonl":
        batches = jsonl_batches(path, name)
    else:
        return None
    issues: list[LineIssue] = []
    for frame, lines, read_issues in batches:
        issues.extend(checked(frame, lines, read_issues, name).issues)
    return sorted(issues, key=lambda issue: (issue.line, issue.field))


def _parquet_batches(path: str) -> Iterator[tuple]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dashboard.logs.log_files import COLUMNS, nan_score_as_infinite

    parquet = pq.ParquetFile(path)
    present = [column for column in COLUMNS if column in parquet.schema_arrow.names]
    first = 1
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=present):
        frame = nan_score_as_infinite(pa.Table.from_batches([batch])).to_pandas()
        yield frame, np.arange(first, first + len(frame), dtype=np.int64), []
        first += len(frame)


def jsonl_batches(path: str, name: str) -> Iterator[tuple]:
    from dashboard.logs.log_files import read_jsonl

    before = 0  # lines in the chunks already read
    with Path(path).open("rb") as handle:
        rest = b""
        while True:
            block = handle.read(CHUNK_BYTES)
            data = rest + block
            if not block:
                if data:
                    yield _offset(read_jsonl(data, name), before)
                return
            cut = data.rfind(b"\n")
            if cut < 0:
                rest = data
                continue
            chunk, rest = data[: cut + 1], data[cut + 1 :]
            yield _offset(read_jsonl(chunk, name), before)
            before += chunk.count(b"\n")


def _offset(read: tuple, before: int) -> tuple:
    frame, lines, issues = read
    return frame, lines + before, [dataclasses.replace(issue, line=issue.line + before) for issue in issues]


class LineIndex:
    """Where a file's lines end, kept small: the number of line feeds up to the end of
    each 64 KiB block (16 bytes a block, under 50 KB for a 177 MB file). Finding a
    line's bytes then looks at one block, not the whole file."""

    BLOCK = 1 << 16

    def __init__(self, path: str | Path):
        import mmap

        self.path = str(path)
        self.size = os.path.getsize(path)
        counts: list[int] = []
        if self.size:
            with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                data = np.frombuffer(mapped, dtype=np.uint8)
                # compared 1 MB at a time into one buffer: a boolean copy of the whole file
                # would be its size again, and a piece this small stays in the CPU's cache
                # until it is counted (a new buffer for each piece cost a sixth more)
                step = 1 << 20
                buffer = np.empty(step, dtype=bool)
                for start in range(0, len(data), step):
                    piece = data[start : start + step]
                    is_newline = np.equal(piece, 10, out=buffer[: len(piece)])
                    counts.extend(int(np.count_nonzero(is_newline[i : i + self.BLOCK])) for i in range(0, len(is_newline), self.BLOCK))
                ends_with_newline = bool(data[-1] == 10)
                del data, piece  # the map cannot close while an array still points into it
        self.ends = np.cumsum(np.array(counts, dtype=np.int64))
        newlines = int(self.ends[-1]) if len(self.ends) else 0
        # lines in the file: a last line without a line feed counts
        self.count = 0 if not self.size else newlines + (0 if ends_with_newline else 1)

    def line_bytes(self, mapped, number: int) -> bytes:
        """Line `number` (1-based) of the file mapped at `mapped`, without its line feed."""
        start = 0 if number == 1 else self._newline(mapped, number - 1) + 1
        end = mapped.find(b"\n", start)  # the line's own end is the next line feed, or the file's end
        return bytes(mapped[start : end if end >= 0 else self.size])

    def _newline(self, mapped, k: int) -> int:
        """The offset of the file's k-th line feed (1-based)."""
        block = int(np.searchsorted(self.ends, k))  # the first block whose count reaches k
        before = int(self.ends[block - 1]) if block else 0
        start = block * self.BLOCK
        chunk = np.frombuffer(mapped[start : start + self.BLOCK], dtype=np.uint8)
        return start + int(np.flatnonzero(chunk == 10)[k - before - 1])


def named_lines(path: str, line_numbers: np.ndarray, name: str, index: LineIndex | None = None) -> list[LineIssue]:
    """The issues of just these lines of a JSONL file (1-based, as DuckDB's row
    positions give them when the file has no blank line): the lines are cut out of a
    memory map (found by `index`) and only they go through the validating checks, so
    naming 100 bad rows of a million costs a look at 100 lines, not a second pass
    over the file."""
    import mmap

    from dashboard.logs.log_files import read_jsonl_lines
    from dashboard.logs.log_import import checked

    if not len(line_numbers):
        return []
    index = index or LineIndex(path)
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        picked = [index.line_bytes(mapped, number) for number in line_numbers.tolist()]
    frame, lines, issues = read_jsonl_lines(picked, np.asarray(line_numbers, dtype=np.int64), name)
    found = checked(frame, lines, issues, name).issues  # the row rules alone: repeats are the caller's
    return sorted(found, key=lambda issue: (issue.line, issue.field))
