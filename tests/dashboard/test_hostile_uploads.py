"""Uploads built to hurt: a line nested 50,000 deep, a 5,000-digit number, a rank
of 1e300, a CSV whose header is one 12 MB line. Each is a bad line named like any
other (never a traceback), the good lines are kept, and no message echoes more
than a bounded piece of the input."""

from __future__ import annotations

import pytest

from connectors.common.lines import MAX_ECHO_CHARS
from dashboard.calibration.label_files import LabelFileError, parse_label_bytes
from dashboard.logs.log_files import LogFormatError
from dashboard.logs.retrieval_log import read_log_bytes

GOOD_LOG = b'{"message_id": "t1", "memory_id": "m1", "rank": 1, "score": 0.9}'
GOOD_LABEL = b'{"memory_id": "m1", "score": 0.9, "label": "relevant"}'
DEEP = b'{"message_id": "t2", "memory_id": "m2", "rank": 1, "score": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
DEEP_ALONE = b"[" * 50_000 + b"]" * 50_000
HUGE_DIGITS = b"9" * 5_000


def log_lines(*lines: bytes) -> bytes:
    return b"\n".join(lines) + b"\n"


HOSTILE_LOG_LINES = {
    "nested": DEEP,
    "nested-alone": DEEP_ALONE,
    "huge-score": b'{"message_id": "t2", "memory_id": "m2", "rank": 1, "score": ' + HUGE_DIGITS + b"}",
    "huge-rank": b'{"message_id": "t2", "memory_id": "m2", "rank": ' + HUGE_DIGITS + b', "score": 0.5}',
    "rank-1e300": b'{"message_id": "t2", "memory_id": "m2", "rank": 1e300, "score": 0.5}',
}


@pytest.mark.parametrize("case", list(HOSTILE_LOG_LINES))
def test_a_hostile_log_line_is_a_named_bad_line_and_the_rest_is_kept(case):
    log = read_log_bytes(log_lines(GOOD_LOG, HOSTILE_LOG_LINES[case], GOOD_LOG.replace(b"m1", b"m3")), "week.jsonl")
    assert [issue.line for issue in log.issues] == [2]
    assert set(log.rows["memory_id"]) == {"m1", "m3"}
    assert log.rows["rank"].min() >= 1  # nothing wrapped round to a negative rank
    assert all(len(str(issue)) < 400 for issue in log.issues)


HOSTILE_LABEL_LINES = {
    "nested": b'{"memory_id": "m2", "label": "relevant", "score": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    "nested-alone": DEEP_ALONE,
    "huge-score": b'{"memory_id": "m2", "label": "relevant", "score": ' + HUGE_DIGITS + b"}",
    "huge-rank": b'{"memory_id": "m2", "label": "relevant", "score": 0.5, "rank": ' + HUGE_DIGITS + b"}",
    "rank-1e300": b'{"memory_id": "m2", "label": "relevant", "score": 0.5, "rank": 1e300}',
}


@pytest.mark.parametrize("case", list(HOSTILE_LABEL_LINES))
def test_a_hostile_label_line_is_named_and_the_rest_is_kept(case):
    labels = parse_label_bytes(log_lines(GOOD_LABEL, HOSTILE_LABEL_LINES[case]), "team.jsonl")
    assert [issue.line for issue in labels.issues] == [2]
    assert [row.memory_id for row in labels.rows] in (["m1"], ["m1", "m2"])  # a bad rank is only ignored
    assert all(row.rank is None or 0 <= row.rank < 2**63 for row in labels.rows)
    assert all(len(str(issue)) < 400 for issue in labels.issues)


def test_a_csv_whose_header_is_one_12_mb_line_is_refused_with_a_bounded_message():
    header = b"message_id," + b"x" * 12_000_000 + b"\n"
    with pytest.raises(LogFormatError) as caught:
        read_log_bytes(header + b"t1,1\n", "week.csv")
    assert "missing column" in str(caught.value) and len(str(caught.value)) < 2 * MAX_ECHO_CHARS + 400
    with pytest.raises(LabelFileError) as caught_labels:
        parse_label_bytes(header + b"t1,1\n", "team.csv")
    assert len(str(caught_labels.value)) < 2 * MAX_ECHO_CHARS + 400


def test_a_huge_bad_value_is_echoed_in_a_bounded_piece():
    line = b'{"message_id": "t2", "memory_id": "m2", "rank": 1, "score": "' + b"y" * 1_000_000 + b'"}'
    log = read_log_bytes(log_lines(GOOD_LOG, line), "week.jsonl")
    [issue] = log.issues
    assert len(str(issue)) < 400
