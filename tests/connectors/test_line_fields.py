"""Line validation as a table (connectors/common/line_fields.py), through the memory reader
of the embedded store: each bad field is named with the message it always had, and a
good line reads to the same row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from connectors.common.line_fields import LineField, json_object, read_fields
from connectors.embedded.importing import _validate_line

NOW = datetime(2026, 1, 1, tzinfo=UTC)
GOOD = {"id": "m1", "user_id": "sam", "text": "Lives in Lisbon", "age_days": 2}


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"id": None}, "id", "required, a non-empty string"),
        ({"user_id": "  "}, "user_id", "required, a non-empty string"),
        ({"text": 5}, "text", "required, a non-empty string"),
        ({"created_at": "yesterday"}, "created_at", "'yesterday' is not an ISO 8601 date-time from 1970 to 2199"),
        ({"age_days": -1}, "age_days", "-1 is not a number of days >= 0"),
        ({"age_days": True}, "age_days", "True is not a number of days >= 0"),
        ({"age_days": float("nan")}, "age_days", "nan is not a number of days >= 0"),
        ({"importance": 3}, "importance", "3 is not a number in [0.05, 1.0]"),
        ({"importance": None}, "importance", "None is not a number in [0.05, 1.0]"),
        ({"usage_count": 1.5}, "usage_count", "1.5 is not a whole number >= 0"),
        ({"metadata": [1]}, "metadata", "must be a JSON object"),
    ],
)
def test_each_bad_field_is_named_with_its_message(change, field, message):
    row, issue = _validate_line({**GOOD, **change}, 7, NOW, "m.jsonl")
    assert row is None
    assert str(issue) == f"m.jsonl: line 7, field {field!r}: {message}"


def test_a_line_needs_created_at_or_age_days_and_created_at_wins():
    missing = {k: v for k, v in GOOD.items() if k != "age_days"}
    assert str(_validate_line(missing, 2, NOW, "m.jsonl")[1]) == (
        "m.jsonl: line 2, field 'created_at': one of created_at or age_days is required"
    )
    row, _ = _validate_line({**GOOD, "created_at": "2025-12-30T10:00:00", "age_days": "ignored"}, 2, NOW, "m.jsonl")
    assert row is not None and row["created_at"] == datetime(2025, 12, 30, 10, tzinfo=UTC)


def test_a_good_line_reads_with_the_defaults():
    row, issue = _validate_line(GOOD, 1, NOW, "m.jsonl")
    assert issue is None
    assert row == {"id": "m1", "user_id": "sam", "text": "Lives in Lisbon", "created_at": NOW - timedelta(days=2),
                   "importance": 0.5, "usage_count": 0, "metadata": {}}


def test_a_callable_default_is_made_fresh_for_every_line():
    fields = (LineField("metadata", json_object, "must be a JSON object", default=dict),)
    first, _ = read_fields({}, fields, file="f", line=1)
    second, _ = read_fields({}, fields, file="f", line=2)
    assert first is not None and second is not None
    first["metadata"]["x"] = 1
    assert second["metadata"] == {}
