"""What a visitor may type into Store settings, in AppTest: code to import only
from the operator's list, server paths only under the directories the operator
allowed; anything else is refused with a message on the page."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "connectors"))  # langgraph_factory

FACTORY = "langgraph_factory:demo_store"
FACTORY_KEY = "cfg_langgraph_factory"


def errors(at) -> str:
    return " ".join(e.value for e in at.error)


def test_the_langgraph_factory_is_picked_from_the_operators_list(app, monkeypatch):
    monkeypatch.setenv("MEMLENS_LANGGRAPH_FACTORY", FACTORY)
    monkeypatch.setenv("MEMLENS_LANGGRAPH_FACTORIES", "langgraph_factory:no_index_store")
    at = app(store="langgraph", user="sam")
    at.run()
    assert not at.exception
    box = at.selectbox(key=FACTORY_KEY)
    assert list(box.options) == [FACTORY, "langgraph_factory:no_index_store"]
    assert box.value == FACTORY
    assert not at.error


@pytest.mark.parametrize("typed", ["tempfile:mkdtemp", "os:abort"])
def test_a_typed_factory_is_refused_with_a_message_and_nothing_runs(app, monkeypatch, tmp_path, typed):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("MEMLENS_LANGGRAPH_FACTORY", FACTORY)
    # what the widget holds once a visitor typed a value of their own into it
    at = app(store="langgraph", user="sam", **{FACTORY_KEY: typed})
    at.run()
    assert not at.exception
    assert "is not one the operator allowed (langgraph_factory:demo_store)" in errors(at)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_with_no_factory_configured_the_page_says_who_sets_one(app, monkeypatch):
    monkeypatch.delenv("MEMLENS_LANGGRAPH_FACTORY", raising=False)
    monkeypatch.delenv("MEMLENS_LANGGRAPH_FACTORIES", raising=False)
    at = app(store="langgraph", user="sam")
    at.run()
    assert not at.exception
    assert any("none configured; the operator sets MEMLENS_LANGGRAPH_FACTORY" in c.value for c in at.caption)
    assert "none is configured: set MEMLENS_LANGGRAPH_FACTORY" in errors(at)
