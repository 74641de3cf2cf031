"""Mem0's write history read through the Mem0 connector: events written by Mem0's
own add / update / delete, and where a memory the reviewer expected went."""

from __future__ import annotations

import pytest
from mem0_history_data import CAR_AFTER, CAR_BEFORE, CAT, LISBON, PIZZA_AFTER, PIZZA_BEFORE, write_history

from connectors.base import StoreUnavailable, SupportsHistory
from connectors.mem0.history import events_of_kinds
from connectors.mem0.library import Mem0LibraryStore
from dashboard.browse import history_matches, history_rows


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    config_file, ids = write_history(tmp_path_factory.mktemp("mem0-history"))
    store = Mem0LibraryStore.from_config(config_file)
    yield store, ids
    store.close()


def test_a_memory_updated_through_mem0_shows_its_add_then_its_update(written):
    store, ids = written
    assert isinstance(store, SupportsHistory)
    events = store.history(ids["pizza"])
    assert [(e.event, e.old_text, e.new_text) for e in events] == [
        ("ADD", None, PIZZA_BEFORE),
        ("UPDATE", PIZZA_BEFORE, PIZZA_AFTER),
    ]
    assert all(e.at is not None for e in events) and events[0].at <= events[1].at
    assert [row["event"] for row in history_rows(events)] == ["ADD", "UPDATE"]


def test_a_deleted_memory_keeps_its_add_and_delete(written):
    store, ids = written
    assert [(e.event, e.old_text) for e in store.history(ids["cat"])] == [("ADD", None), ("DELETE", CAT)]
    assert store.get(ids["cat"]) is None  # gone from the store, not from the history
    assert [e.event for e in store.history(ids["lisbon"])] == ["ADD"]


def test_a_memory_added_updated_and_deleted_shows_all_three_writes(written):
    store, ids = written
    assert [(e.event, e.old_text, e.new_text) for e in store.history(ids["car"])] == [
        ("ADD", None, CAR_BEFORE),
        ("UPDATE", CAR_BEFORE, CAR_AFTER),
        ("DELETE", CAR_AFTER, None),
    ]


def test_rewrites_lists_every_update_and_delete(written):
    store, ids = written
    assert {(e.memory_id, e.event) for e in store.rewrites()} == {
        (ids["pizza"], "UPDATE"), (ids["cat"], "DELETE"), (ids["car"], "UPDATE"), (ids["car"], "DELETE"),
    }


@pytest.mark.parametrize(
    "expected,message",
    [
        ("likes cheese pizza", f"\u201c{PIZZA_BEFORE}\u201d was merged into \u201c{PIZZA_AFTER}\u201d on "),
        ("Has a cat named Miso.", f"\u201c{CAT}\u201d was deleted on "),
    ],
)
def test_an_expected_memory_that_is_gone_is_traced_to_its_update_or_delete(written, expected, message):
    store, _ = written
    [match] = history_matches(store.rewrites(), expected)
    assert match.message.startswith(message)


def test_nothing_close_in_the_history_finds_nothing(written):
    store, _ = written
    assert history_matches(store.rewrites(), "Is allergic to peanuts") == []
    assert history_matches(store.rewrites(), LISBON) == []  # added, never rewritten


def test_a_config_without_a_history_file_says_so(tmp_path):
    class NoHistory:
        class config:
            history_db_path = str(tmp_path / "missing.db")

    with pytest.raises(StoreUnavailable, match="no history file"):
        events_of_kinds(NoHistory())
