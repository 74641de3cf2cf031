"""Floors per segment: each segment's floor is the floor of its own rows, the first
row is the floor for all, and unstable or one-class segments say so."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dashboard.calibration.choice import COST_RATIO, TARGET_RECALL, choose
from dashboard.calibration.label_files import parse_label_text
from dashboard.calibration.segments import ALL_SEGMENTS, NO_VALUE, segment_fields, segment_floors
from dashboard.calibration.sweep import CalibrationError, labelled_scores, recommend


def label_text(rows) -> str:
    return "\n".join(json.dumps(row) for row in rows) + "\n"


def mixed_rows(seed=2):
    """Three users over 300 turns; user "ana" scores her relevant memories lower, so
    her floor sits lower; "zed" labelled only irrelevant hits."""
    rng = np.random.default_rng(seed)
    rows = []
    for turn in range(300):
        user = ("ana", "ben")[turn % 2]
        shift = -0.15 if user == "ana" else 0.0
        for hit in range(5):
            relevant = hit == 0
            score = rng.normal(0.6 + shift if relevant else 0.3, 0.05)
            rows.append({"message_id": f"t{turn}", "memory_id": f"m{hit}", "score": round(float(score), 4),
                         "label": "relevant" if relevant else "not_relevant", "user_id": user})  # fmt: skip
    rows += [{"message_id": "z1", "memory_id": "a", "score": 0.5, "label": "not_relevant", "user_id": "zed"}]
    rows += [{"message_id": "n1", "memory_id": "a", "score": 0.7, "label": "relevant"}]
    return rows


@pytest.mark.parametrize("mode, target", [(COST_RATIO, 1.0), (COST_RATIO, 4.0), (TARGET_RECALL, 0.9)])
def test_each_segment_gets_the_floor_of_its_own_rows(mode, target):
    rows = mixed_rows()
    labels = parse_label_text(label_text(rows), "labels.jsonl")
    assert segment_fields(labels) == ["user"]
    segments = segment_floors(labels, "user", mode, target, resamples=0)
    # Largest first; equal sizes by name.
    assert [s.segment for s in segments] == [ALL_SEGMENTS, "ana", "ben", NO_VALUE, "zed"]
    for segment in segments[1:3]:
        own = [r for r in rows if r.get("user_id") == segment.segment]
        data = labelled_scores([r["score"] for r in own], [r["label"] for r in own], [r["message_id"] for r in own])
        expected = recommend(data, target, resamples=0).floor if mode == COST_RATIO else choose(data, mode, target).floor
        assert segment.floor == expected
        assert (segment.rows, segment.relevant, segment.turns) == (len(own), 150, 150)
    whole = labels.labelled_scores()
    everything = recommend(whole, target, resamples=0).floor if mode == COST_RATIO else choose(whole, mode, target).floor
    assert segments[0].floor == everything and segments[0].rows == len(rows)
    ana, ben = segments[1].floor, segments[2].floor
    assert ana < ben  # the per-user floors differ where the one floor hides it
    none, zed = segments[3], segments[4]
    assert zed.floor is None and zed.note == "only not relevant labels: no floor to choose"
    assert none.floor is None and none.note == "only relevant labels: no floor to choose"


def test_intervals_and_the_stability_note():
    labels = parse_label_text(label_text(mixed_rows()), "labels.jsonl")
    segments = segment_floors(labels, "user", TARGET_RECALL, 0.9, resamples=200, max_width=0.1)
    whole, ana = segments[0], segments[1]
    assert whole.interval[0] <= whole.floor + 0.01 and whole.interval[1] >= whole.floor - 0.01
    assert ana.note is None and ana.width < 0.1
    # The same labels held to a far stricter width are called unstable, with the width.
    strict = segment_floors(labels, "user", TARGET_RECALL, 0.9, resamples=200, max_width=0.001)
    assert strict[1].note.startswith("too few labels for a stable floor: the 95% interval is")


def test_segments_by_a_field_the_labels_lack_are_refused():
    labels = parse_label_text(label_text(mixed_rows()), "labels.jsonl")
    with pytest.raises(CalibrationError, match="segments are by user, store, tag"):
        segment_floors(labels, "reviewer")
