"""One reviewer working through a session: what a key press writes and what undo restores."""

from __future__ import annotations

import pytest

from dashboard.database import AppDatabase
from dashboard.database.sessions import LabelSession, SessionItem
from dashboard.labels import labelling


@pytest.fixture
def store(tmp_path):
    opened = AppDatabase(tmp_path / "labels.sqlite")
    items = [
        SessionItem(position=i, message_id=f"t{i // 2}", memory_id=f"m{i}", rank=i % 2 + 1, score=0.2 + i / 10)
        for i in range(6)
    ]
    opened.sessions.create(
        LabelSession(name="s", method="turns", size=6, reviewers=["ana", "ben"], store="embedded:log"),
        items,
        {"t0": ["ana"], "t1": ["ana", "ben"], "t2": ["ben"]},
    )
    yield opened
    opened.close()


def test_each_reviewer_sees_only_their_turns_and_an_outsider_sees_all(store):
    assert [i.memory_id for i in labelling.load_queue(store, "s", "ana").items] == ["m0", "m1", "m2", "m3"]
    assert [i.memory_id for i in labelling.load_queue(store, "s", "ben").items] == ["m2", "m3", "m4", "m5"]
    outsider = labelling.load_queue(store, "s", "cy")
    assert outsider.total == 6 and not outsider.assigned


def test_pressing_keys_moves_through_the_queue_and_counts_progress(store):
    queue = labelling.load_queue(store, "s", "ana")
    current = queue.current()
    assert current is not None
    turn, item = current
    assert (turn.message_id, item.memory_id, [i.memory_id for i in turn.items]) == ("t0", "m0", ["m0", "m1"])
    labelling.record(store, queue.session, item, "ana", "relevant")
    labelling.record(store, queue.session, queue.items[1], "ana", "skip")
    queue = labelling.load_queue(store, "s", "ana")
    assert (queue.done, queue.total) == (2, 4) and queue.current()[1].memory_id == "m2"
    [label] = store.sessions.labels("s")
    # the label says which store the log row came from, with the score the reviewer saw
    assert (label.store, label.score, label.rank, label.label) == ("embedded:log", 0.2, 1, "relevant")


def test_undo_of_a_relabel_restores_the_old_value(store):
    session = store.sessions.get("s")
    item = store.sessions.items("s")[0]
    labelling.record(store, session, item, "ana", "relevant")
    step = labelling.record(store, session, item, "ana", "not_relevant")
    assert step.previous_label == "relevant"
    labelling.undo(store, step, item, session)
    assert store.labels.get("t0", "m0", "ana").label == "relevant"
    assert [(h["old_label"], h["new_label"]) for h in store.labels.history("t0", "m0")] == [
        ("relevant", "not_relevant"),
        ("not_relevant", "relevant"),
    ]


def test_undo_of_a_first_label_and_of_a_skip(store):
    session = store.sessions.get("s")
    first, second = store.sessions.items("s")[:2]
    labelled = labelling.record(store, session, first, "ana", "not_relevant")
    skipped = labelling.record(store, session, second, "ana", "skip")
    labelling.undo(store, skipped, second, session)
    assert store.sessions.skips("s") == set()
    labelling.undo(store, labelled, first, session)
    assert store.labels.get("t0", "m0", "ana") is None
    assert labelling.load_queue(store, "s", "ana").done == 0


def test_labelling_a_skipped_row_replaces_the_skip_and_undo_brings_it_back(store):
    session = store.sessions.get("s")
    item = store.sessions.items("s")[0]
    labelling.record(store, session, item, "ana", "skip")
    step = labelling.record(store, session, item, "ana", "relevant")
    assert store.sessions.skips("s") == set() and step.was_skipped
    labelling.undo(store, step, item, session)
    assert store.sessions.skips("s") == {("t0", "m0", "ana")} and store.labels.get("t0", "m0", "ana") is None


def test_a_missing_memory_cannot_be_judged_relevant(store):
    session = store.sessions.get("s")
    item = store.sessions.items("s")[0]
    with pytest.raises(ValueError, match="missing from the store"):
        labelling.record(store, session, item, "ana", "relevant", memory_missing=True)
    labelling.record(store, session, item, "ana", "not_relevant", memory_missing=True)
    assert store.labels.get("t0", "m0", "ana").label == "not_relevant"


def test_an_unknown_action_is_refused(store):
    with pytest.raises(ValueError, match="action must be one of"):
        labelling.record(store, store.sessions.get("s"), store.sessions.items("s")[0], "ana", "maybe")
