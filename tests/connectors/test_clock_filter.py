"""The clock on a store that cannot rank at one (issue 34): memlens removes the hits
created after it, after the query, and says how many; a clock before every memory
returns nothing and says so. On a real Chroma collection of the demo memories."""

from __future__ import annotations

from datetime import timedelta

import pytest
from demo_questions import THEME

from connectors.demo_loader import demo_rows, load_chroma
from connectors.vector.chroma import ChromaStore, persistent_client
from dashboard.clock import filtered_to_clock, store_takes_clock


@pytest.fixture(scope="module")
def chroma(tmp_path_factory):
    rows, report = demo_rows()
    assert not report.issues, report.summary()
    path = tmp_path_factory.mktemp("chroma_clock")
    load_chroma(persistent_client(path), "demo", rows, space="cosine")
    return ChromaStore("demo", path=path)


def test_hits_created_after_the_clock_are_removed_and_counted(chroma):
    assert not store_takes_clock("chroma") and store_takes_clock("embedded")
    result = chroma.query(THEME, user_id="sam", k=10)
    dates = sorted(hit.created_at for hit in result.hits if hit.created_at is not None)
    assert len(dates) == 10
    clock = dates[4]  # five hits are newer than it
    later = [hit.memory_id for hit in result.hits if hit.created_at > clock]
    assert len(later) == 5
    shown = filtered_to_clock(result, clock)
    assert [hit.memory_id for hit in shown.hits] == [hit.memory_id for hit in result.hits if hit.created_at <= clock]
    assert any("memlens removed the 5 of its 10 hits created after it" in note for note in shown.notes)
    assert shown.context is None  # the store's block listed the removed hits


def test_a_clock_before_every_hit_returns_nothing_and_says_so(chroma):
    result = chroma.query(THEME, user_id="sam", k=10)
    first = min(hit.created_at for hit in result.hits)
    shown = filtered_to_clock(result, first - timedelta(seconds=1))
    assert shown.hits == []
    assert any("nothing existed yet, so nothing is returned" in note for note in shown.notes)
