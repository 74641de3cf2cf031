"""The one floor config (dashboard/floor_config.py): what its notes say about an
unknown score space is what is known, and the label dates are read without pandas."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from dashboard.floor_config import FloorConfig, FloorConfigError


def test_a_config_made_in_code_says_so_not_that_a_file_is_old():
    (note,) = FloorConfig(floor=0.35).notes
    assert "made in code without a score_space" in note
    assert "exported" not in note and "file" not in note.split(";")[0]


def test_a_file_naming_no_space_says_calibrate_did_not_know_it(tmp_path):
    path = tmp_path / "memlens-floor.json"
    path.write_text(json.dumps({"floor": 0.35, "score_space": None}))
    (note,) = FloorConfig.load(path).notes
    assert f"{path} names none: Calibrate did not know it" in note
    assert "before memlens" not in note


def test_a_file_without_the_key_says_it_was_written_before_memlens_recorded_it(tmp_path):
    path = tmp_path / "memlens-floor.json"
    path.write_text(json.dumps({"floor": 0.35}))
    (note,) = FloorConfig.load(path).notes
    assert f"{path} has no 'score_space': written before memlens recorded it" in note


def test_label_dates_are_read_as_utc(tmp_path):
    path = tmp_path / "memlens-floor.json"
    path.write_text(json.dumps({"floor": 0.35, "date_range": {"from": "2026-01-01T10:00:00Z", "to": "2026-01-07T12:00:00+02:00"}}))
    config = FloorConfig.load(path)
    assert config.label_range == (datetime(2026, 1, 1, 10, tzinfo=UTC), datetime(2026, 1, 7, 10, tzinfo=UTC))


@pytest.mark.parametrize(
    "document,field",
    [
        ({"floor": 0.35, "store": 7}, "field 'store'"),
        ({"floor": 0.35, "date_range": "2026-01-01..2026-01-07"}, "field 'date_range'"),
        ({"floor": 0.35, "date_range": {"from": 20260101, "to": "2026-01-07"}}, "field 'date_range.from'"),
        ({"floor": True}, "field 'floor'"),
    ],
)
def test_wrong_types_name_the_field(tmp_path, document, field):
    path = tmp_path / "memlens-floor.json"
    path.write_text(json.dumps(document))
    with pytest.raises(FloorConfigError, match=field) as caught:
        FloorConfig.load(path)
    assert str(path) in str(caught.value)
