"""Label files and judged sets are read line by line: memory holds the rows kept,
not the file, and a bad row late in a large file is still named by file, line and
field. Python's own allocation count (tracemalloc) is the measure: a whole-file read
holds the file's bytes and its text at once, more than the file's size."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from dashboard.calibration.label_files import LabelFileError, read_label_file
from dashboard.evaluation.judged_sets import read_file
from dashboard.judged import read_questions

ROWS = 2_000
NOTE = "n" * 8_000  # a field no reader keeps: what makes the file large


def label_rows():
    rows = [{"message_id": f"q{i // 4}", "memory_id": f"m{i}", "score": 0.5 + (i % 7) / 20, "label": ["relevant", "not_relevant"][i % 2],
             "note": NOTE} for i in range(ROWS)]  # fmt: skip
    rows[ROWS - 7]["label"] = "maybe"  # a bad row at line ROWS - 6
    return rows


def question_rows():
    rows = [{"message_id": f"q{i}", "user_id": "sam", "query": f"question {i}", "relevant": [f"m{i}"], "note": NOTE} for i in range(ROWS)]
    rows[ROWS - 7]["relevant"] = "m1"  # not a list: a bad row at line ROWS - 6
    return rows


def peak_while(read, path):
    tracemalloc.start()
    try:
        result = read(path)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path.stat().st_size


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_large_label_file_is_read_in_bounded_memory_and_its_late_bad_row_named(tmp_path, fmt):
    path = tmp_path / f"labels.{fmt}"
    rows = label_rows()
    if fmt == "jsonl":
        size = write_jsonl(path, rows)
    else:
        path.write_text("message_id,memory_id,score,label,note\n" + "".join(
            f"{r['message_id']},{r['memory_id']},{r['score']},{r['label']},{r['note']}\n" for r in rows))  # fmt: skip
        size = path.stat().st_size
    labels, peak = peak_while(read_label_file, path)
    assert len(labels.rows) == ROWS - 1
    assert [(issue.line, issue.field) for issue in labels.issues] == [(ROWS - 6 + (fmt == "csv"), "label")]
    assert str(path) in labels.issue_report()
    assert peak < size / 3, f"{peak:,} bytes held reading a {size:,}-byte file"


def test_a_label_file_that_is_not_utf8_late_names_the_byte(tmp_path):
    path = tmp_path / "labels.jsonl"
    size = write_jsonl(path, label_rows()[:100])
    path.write_bytes(path.read_bytes() + b'{"message_id": "q\xff"}\n')
    with pytest.raises(LabelFileError, match=rf"is not UTF-8 text \(byte {size + 17}\)"):
        read_label_file(path)


def test_a_large_judged_set_is_read_in_bounded_memory_and_its_late_bad_row_named(tmp_path):
    path = tmp_path / "judged.jsonl"
    size = write_jsonl(path, question_rows())
    judged, peak = peak_while(read_file, path)
    assert len(judged.questions) == ROWS - 1
    assert [(issue.line, issue.field) for issue in judged.issues] == [(ROWS - 6, "relevant")]
    assert peak < size / 3, f"{peak:,} bytes held reading a {size:,}-byte file"
    (questions, issues), peak = peak_while(read_questions, path)
    assert len(questions) == ROWS - 1 and [(issue.line, issue.field) for issue in issues] == [(ROWS - 6, "relevant")]
    assert peak < size / 3, f"{peak:,} bytes held reading a {size:,}-byte file"
