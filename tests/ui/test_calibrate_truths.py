"""The Calibrate page says only what memlens knows (issue 53): no interval from a
bootstrap over too few turns, with the minimum and the count named; and a null score
space explained by what is true of the labels (they name no store, several stores,
or a distance store whose settings this server does not know)."""

from __future__ import annotations

import json

import pytest
from markdown_text import seen

from dashboard.calibration.bootstrap import MIN_INTERVAL_TURNS
from dashboard.calibration.report import UNKNOWN_SPACE_HEAD
from tests.ui.test_calibrate_page import metric, open_calibrate


def upload(app, tmp_path, rows: list[dict]):
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    at = open_calibrate(app, calibrate_source="Upload a file")
    at.file_uploader(key="calibrate_upload").set_value((path.name, path.read_bytes(), "application/jsonl")).run()
    assert not at.exception, at.exception
    return at


def captions(at) -> list[str]:
    return [seen(c.value) for c in at.caption]


def test_two_labels_from_one_turn_get_no_interval_and_the_reason(app, tmp_path):
    at = upload(app, tmp_path, [
        {"message_id": "t1", "memory_id": "a", "score": 0.25, "label": "relevant"},
        {"message_id": "t1", "memory_id": "b", "score": 0.21, "label": "not_relevant"},
    ])  # fmt: skip
    assert metric(at, "Recommended floor") == "0.23"
    shown = captions(at)
    assert not any("interval 0.2" in text for text in shown)  # was "95% interval 0.23–0.235 (1000 resamples of turns)"
    reason = f"no interval: the labels hold 1 turn, fewer than the {MIN_INTERVAL_TURNS} a bootstrap of turns needs"
    assert any(reason in text for text in shown), shown
    assert json.loads(at.json[0].value)["interval"] is None


def rows_of(stores: list[str | None]) -> list[dict]:
    rows = []
    for turn in range(12):
        for rank, label in ((1, "relevant"), (2, "not_relevant")):
            row = {"message_id": f"t{turn}", "memory_id": f"m{turn}-{rank}", "rank": rank, "label": label,
                   "score": 0.7 - rank / 10 + turn / 1000}
            store = stores[turn % len(stores)]
            if store:
                row["store"] = store
            rows.append(row)
    return rows


@pytest.mark.parametrize(
    ("stores", "said", "not_said"),
    [
        ([None], "these labels name no store", ("several stores", "distance store")),
        (["embedded:aaa", "chroma:bbb"], "these labels come from 2 stores (chroma:bbb, embedded:aaa)", ("distance store", "name no store")),
        (["chroma:bbb"], "these labels come from a distance store (chroma:bbb) whose settings this server does not know",
         ("several stores", "name no store")),
    ],
)
def test_a_null_score_space_is_explained_by_what_is_true_of_the_labels(app, tmp_path, stores, said, not_said):
    at = upload(app, tmp_path, rows_of(stores))
    assert json.loads(at.json[0].value)["score_space"] is None
    notes = [text for text in captions(at) if text.startswith(UNKNOWN_SPACE_HEAD)]
    assert len(notes) == 1 and said in notes[0], notes
    assert not any(words in notes[0] for words in not_said)
