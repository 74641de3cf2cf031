"""A log DuckDB will not parse, read one part at a time. Pure (no streamlit).

A line of broken JSON in a JSONL file, or a CSV record with the wrong number of
fields, stops DuckDB's scan (``fast_path``). Such a file is still read by the
validating reader, which names each bad row by file, line and field, but in parts
(16 MB of JSONL cut at a line feed, or a batch of CSV records): each part is parsed
and checked (``log_import.checked``) and only its good rows are kept, so memory
holds the good rows and one part being checked, not the whole file as bytes, text
and a frame of Python objects. Repeated pairs and empty turns are sorted out once,
over all the parts (``log_import.merged``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from connectors.common.lines import LINE, LineIssue
from dashboard.logs.bad_rows import jsonl_batches
from dashboard.logs.log_files import LogFormatError, require_columns
from dashboard.logs.log_import import LogImport, checked, merged

CSV_BLOCK_BYTES = 16 << 20


def read_streamed(path: Path, name: str, kind: str) -> LogImport | None:
    """The log read in parts, or None for what is read whole (OTLP traces, the
    app's read log, Parquet, an empty file)."""
    if kind == "jsonl" and not not_plain_jsonl(path):
        parts = jsonl_batches(str(path), name)
    elif kind == "csv":
        parts = _csv_batches(path, name)
    else:
        return None
    try:
        checked_parts = [checked(frame, lines, issues, name) for frame, lines, issues in parts]
    except OSError as exc:
        raise LogFormatError(f"{name}: cannot read the file ({exc.strerror or exc})") from exc
    return merged(checked_parts, name) if checked_parts else None


def not_plain_jsonl(path: Path) -> bool:
    """True for OTLP traces or the app's read log, which have readers of their own."""
    from dashboard.logs import otlp, read_log

    with path.open("rb") as handle:
        head = handle.read(1 << 16)
    return otlp.looks_like_otlp(head) or read_log.looks_like_read_log(head)

def _csv_batches(path: Path, name: str) -> Iterator[tuple]:
    """(frame, record number of each row, issues) per batch of a CSV file, as
    ``log_files.read_csv`` gives them for the whole file: the header is record 1, a
    record with the wrong number of fields is named and skipped."""
    import pandas as pd
    from pyarrow import csv as pa_csv

    with path.open("rb") as handle:
        header = handle.readline().decode("utf-8", "replace").strip().lstrip("\ufeff")
    columns = [c.strip().strip('"') for c in header.split(",")] if header else []
    require_columns(columns, name)
    issues: list[LineIssue] = []
    skipped: set[int] = set()

    def bad_row(row) -> str:
        # called as arrow parses a block, before the batch holding the rows around it
        skipped.add(row.number)
        if row.text.strip():
            issues.append(LineIssue(name, row.number, LINE, f"{row.actual_columns} field(s) where the header has {row.expected_columns}"))
        return "skip"

    try:
        reader = pa_csv.open_csv(
            path,
            read_options=pa_csv.ReadOptions(use_threads=False, block_size=CSV_BLOCK_BYTES),
            parse_options=pa_csv.ParseOptions(invalid_row_handler=bad_row, newlines_in_values=True, ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(column_types={c: pa.string() for c in columns}, strings_can_be_null=False),
        )
        next_record = 2
        for batch in reader:
            frame = batch.to_pandas()
            # record numbers: the next ones after the last batch's, the skipped ones left out
            known = np.array(sorted(skipped), dtype=np.int64)
            candidates = np.arange(next_record, next_record + len(frame) + len(known) + 1, dtype=np.int64)
            numbers = np.setdiff1d(candidates, known)[: len(frame)]
            if len(numbers):
                next_record = int(numbers[-1]) + 1
            frame = frame.replace("", None)
            blank = frame.isna().all(axis=1).to_numpy()
            found, issues[:] = [issue for issue in issues if issue.line < next_record], [i for i in issues if i.line >= next_record]
            yield frame[~blank].reset_index(drop=True), numbers[~blank], found
        if issues:  # bad records after the last good one
            yield pd.DataFrame(columns=columns), np.empty(0, dtype=np.int64), list(issues)
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise LogFormatError(f"{name}: not a readable CSV file ({exc})") from exc
