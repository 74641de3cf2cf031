"""The Browse page on a Mem0 store whose history Mem0 itself wrote: one memory's
ADD and UPDATE, and an expected memory traced to its deletion."""

from __future__ import annotations

import pytest
from markdown_text import error_texts
from mem0_history_data import CAR_AFTER, CAR_BEFORE, CAT, write_history

CHECK = "FormSubmitter:browse_check_form-Check"


@pytest.fixture(scope="module")
def mem0_config(tmp_path_factory):
    return write_history(tmp_path_factory.mktemp("mem0-history-page"))


@pytest.fixture
def browse(app, mem0_config, monkeypatch):
    config_file, ids = mem0_config
    monkeypatch.setenv("MEMLENS_MEM0_CONFIG", str(config_file))
    at = app(store="mem0", user="sam")
    at.switch_page("browse.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at, ids


def test_browse_shows_what_mem0_did_to_a_memory_and_where_an_expected_one_went(browse):
    # One page for both: Mem0's local Qdrant folder takes one client per process.
    at, ids = browse
    at.text_input(key="browse_history_id").input(ids["car"]).run()
    assert not at.exception, at.exception
    table = next(df.value for df in at.dataframe if "event" in df.value.columns)
    assert table["event"].tolist() == ["ADD", "UPDATE", "DELETE"]
    assert table["old text"].tolist()[1:] == [CAR_BEFORE, CAR_AFTER]
    assert table["new text"].tolist()[:2] == [CAR_BEFORE, CAR_AFTER]

    at.text_input(key="browse_expected").input(CAT)
    at.button(key=CHECK).click().run()
    assert not at.exception, at.exception
    assert at.error and "never stored" in error_texts(at)[0]  # not in the store now...
    assert any(f"\u201c{CAT}\u201d was deleted on" in w.value for w in at.warning)  # ...because Mem0 deleted it
