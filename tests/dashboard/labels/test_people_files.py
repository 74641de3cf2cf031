"""People's labels from a file (dashboard/labels/people_files.py): the three formats,
graded qrels, repeated rows, and lines built to hurt, each a named bad line while the
rest is kept."""

from __future__ import annotations

import pytest

from connectors.common.lines import MAX_ECHO_CHARS
from dashboard.labels.people_files import PeopleFileError, read_people_bytes, read_people_labels

GOOD = b'{"message_id": "t1", "memory_id": "m1", "label": "relevant", "reviewer": "ana"}'
DEEP = b"[" * 50_000 + b"]" * 50_000
HOSTILE = {
    "nested": b'{"message_id": "t2", "memory_id": "m2", "label": "relevant", "score": ' + DEEP + b"}",
    "nested-alone": DEEP,
    "huge-score": b'{"message_id": "t2", "memory_id": "m2", "label": "relevant", "score": ' + b"9" * 5_000 + b"}",
    "400-digit-score": b'{"message_id": "t2", "memory_id": "m2", "label": "relevant", "score": ' + b"9" * 400 + b"}",
    "rank-1e300": b'{"message_id": "t2", "memory_id": "m2", "label": "relevant", "rank": 1e300}',
    "huge-label": b'{"message_id": "t2", "memory_id": "m2", "label": "' + b"y" * 1_000_000 + b'"}',
    "id-object": b'{"message_id": {"a": 1}, "memory_id": "m2", "label": "relevant"}',
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_line_is_named_and_the_rest_is_kept(case):
    found = read_people_bytes(GOOD + b"\n" + HOSTILE[case] + b"\n" + GOOD.replace(b"m1", b"m3") + b"\n", "people.jsonl")
    assert {issue.line for issue in found.issues} == {2}
    assert {label.memory_id for label in found.labels} in ({"m1", "m3"}, {"m1", "m2", "m3"})  # a bad score or rank is only ignored
    assert all(label.rank is None or 1 <= label.rank < 2**63 for label in found.labels)
    assert all(len(str(issue)) < 2 * MAX_ECHO_CHARS + 200 for issue in found.issues)


def test_graded_qrels_read_relevant_from_grade_2_and_binary_ones_from_1():
    graded = read_people_bytes(b"q1 0 m1 1\nq1 0 m2 2\nq1 0 m3 3\nq1 0 m4 0\n", "people.qrels")
    assert {lab.memory_id: lab.label for lab in graded.labels} == {"m1": "not_relevant", "m2": "relevant", "m3": "relevant", "m4": "not_relevant"}
    binary = read_people_bytes(b"q1 0 m1 1\nq1 0 m2 0\n", "people.txt")  # told apart by its first line
    assert binary.format == "qrels" and {lab.memory_id: lab.label for lab in binary.labels} == {"m1": "relevant", "m2": "not_relevant"}


def test_a_repeated_row_of_one_reviewer_counts_once_the_later_winning():
    found = read_people_bytes(
        b"message_id,memory_id,label,reviewer\nt1,m1,relevant,ana\nt1,m1,not_relevant,ana\nt1,m1,relevant,ben\n", "people.csv"
    )
    assert sorted((lab.reviewer, lab.label) for lab in found.labels) == [("ana", "not_relevant"), ("ben", "relevant")]
    assert [str(issue) for issue in found.issues] == [
        "people.csv: line 2, field '(line)': the same reviewer and pair again on line 3; the later row is used"
    ]


def test_unreadable_files_name_the_file(tmp_path):
    binary = tmp_path / "people.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PeopleFileError, match="people.jsonl: not UTF-8"):
        read_people_labels(binary)
    with pytest.raises(PeopleFileError, match="no such file"):
        read_people_labels(tmp_path / "missing.jsonl")
    header = tmp_path / "wide.csv"
    header.write_bytes(b"message_id," + b"x" * 12_000_000 + b"\nt1,1\n")
    with pytest.raises(PeopleFileError) as caught:
        read_people_labels(header)
    assert "wide.csv: the CSV header (line 1) cannot be read" in str(caught.value) and len(str(caught.value)) < 600
