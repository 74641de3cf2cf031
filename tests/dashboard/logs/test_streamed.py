"""A log DuckDB will not parse (a line of broken JSON, a CSV record with the wrong
number of fields) is read in parts: no part holds the whole file, and the result is
what the whole-file validating reader gives, every bad row named by file and line."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest

from dashboard.logs import bad_rows, streamed
from dashboard.logs.log_files import read_csv, read_jsonl
from dashboard.logs.retrieval_log import _validate, read_log, read_log_bytes

ROWS = 30_000


def records() -> list[dict]:
    rng = random.Random(7)
    rows = [
        {"message_id": f"msg-{i // 3:06d}", "memory_id": f"mem-{rng.randrange(10**6):06d}-{i % 3}", "rank": i % 3 + 1,
         "score": round(rng.random(), 4), "timestamp": f"2026-02-{1 + i % 28:02d}T10:00:00Z"}
        for i in range(ROWS)
    ]
    rows[100] = {**rows[99]}  # a repeated pair in the first part, merged as before
    rows[ROWS - 50] = {**rows[ROWS - 50], "score": "high"}  # a bad value in a late part
    return rows


@pytest.fixture
def parts(monkeypatch):
    """Small parts, so a test file of a few MB is read in many; each part's rows recorded."""
    monkeypatch.setattr(bad_rows, "CHUNK_BYTES", 1 << 16)
    monkeypatch.setattr(streamed, "CSV_BLOCK_BYTES", 1 << 16)
    sizes: list[int] = []
    checked = streamed.checked

    def recording(frame, lines, issues, name):
        sizes.append(len(frame))
        return checked(frame, lines, issues, name)

    monkeypatch.setattr(streamed, "checked", recording)
    return sizes


def same(part_read, whole):
    assert part_read.rows.to_dict("records") == whole.rows.to_dict("records")
    assert (part_read.summary(), part_read.issues, part_read.conflicts) == (whole.summary(), whole.issues, whole.conflicts)


def test_a_broken_json_line_late_in_the_file_is_named_while_the_file_is_read_in_parts(tmp_path, parts):
    lines = [json.dumps(row) for row in records()]
    lines[ROWS - 10] = '{"message_id": "msg-late", "memory_id": '  # cut off mid-line
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = read_log(path)
    assert not result.columnar  # DuckDB stopped at the broken line
    assert [(i.line, i.field) for i in result.issues] == [(ROWS - 49, "score"), (ROWS - 9, "(line)")]
    assert str(result.issues[-1]).startswith(f"{path}: line {ROWS - 9}, field '(line)': not valid JSON")
    assert result.duplicates == 1 and len(result.rows) == ROWS - 3
    assert len(parts) > 10 and max(parts) < ROWS / 10  # no part was the whole file
    data = path.read_bytes()
    same(result, _validate(*read_jsonl(data, str(path)), str(path)))
    # an upload of the same bytes takes the same way
    same(read_log_bytes(data, str(path)), result)


def test_a_csv_record_with_the_wrong_field_count_is_named_while_the_file_is_read_in_parts(tmp_path, parts):
    frame = pd.DataFrame(records())
    text = frame.to_csv(index=False).splitlines()
    text[ROWS - 20] = "msg-late,mem-late,1"  # three fields where the header has five (record ROWS - 20 + 1)
    path = tmp_path / "log.csv"
    path.write_text("\n".join(text) + "\n")
    result = read_log(path)
    assert not result.columnar
    assert [(i.line, i.field) for i in result.issues] == [(ROWS - 49 + 1, "score"), (ROWS - 20 + 1, "(line)")]
    assert "3 field(s) where the header has 5" in str(result.issues[-1])
    assert len(parts) > 10 and max(parts) < ROWS / 10
    same(result, _validate(*read_csv(path.read_bytes(), str(path)), str(path)))
