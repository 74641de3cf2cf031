"""What a visitor may type into Store settings, in AppTest: code to import only
from the operator's list, server paths only under the directories the operator
allowed; anything else is refused with a message on the page."""

from __future__ import annotations

import http.server
import logging
import socketserver
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from markdown_text import seen
from ports import closed_port

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "connectors"))  # langgraph_factory

FACTORY = "langgraph_factory:demo_store"
FACTORY_KEY = "cfg_langgraph_factory"


def errors(at) -> str:
    return " ".join(seen(e.value) for e in at.error)


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
    assert any("none configured; the operator sets MEMLENS_LANGGRAPH_FACTORY" in seen(c.value) for c in at.caption)
    assert "none is configured: set MEMLENS_LANGGRAPH_FACTORY" in errors(at)


# ------------------------------------------------------------------ a typed URL is no port scanner


@contextmanager
def listening(kind: str):
    """A loopback port with something behind it: nothing ("closed"), a plain HTTP
    server that knows no POST ("http"), or a socket that hangs up at once ("hangup")."""
    if kind == "closed":
        yield f"http://127.0.0.1:{closed_port()}"
        return
    server: socketserver.TCPServer
    if kind == "http":
        server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    else:

        class HangUp(socketserver.BaseRequestHandler):
            def handle(self):
                self.request.close()

        server = socketserver.TCPServer(("127.0.0.1", 0), HangUp)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def typed_url_error(app, url: str) -> str:
    at = app(
        store="memorysync",
        query="Which UI theme does the user prefer?",
        cfg_memorysync_base_url=url,
        cfg_memorysync_api_key="msk-typed-by-the-visitor",
    )
    at.run()
    assert not at.exception
    return errors(at)


def test_a_typed_url_fails_with_one_message_whatever_listens_there(app, ms_env, caplog):
    seen = {}
    with caplog.at_level(logging.WARNING, logger="connectors.http.base"):
        for kind in ("closed", "http", "hangup"):
            with listening(kind) as url:
                seen[kind] = typed_url_error(app, url).replace(url, "URL")
        # the operator's store under another name, so a typed address: the typed key is wrong there
        other_name = ms_env.url.replace("127.0.0.1", "localhost")
        seen["a MemorySync with another key"] = typed_url_error(app, other_name).replace(other_name, "URL")
    assert set(seen.values()) == {
        "The store could not answer: StoreUnavailable: MemorySync: could not reach the store at that address"
    }, seen
    logged = caplog.text
    assert "refused" in logged.lower()  # the details are in the server log: the closed port refused
    assert "msk-typed-by-the-visitor" not in logged


def test_the_operators_url_keeps_its_detailed_messages(app, ms_env):
    ms_env.inject(status=409, body={"error": "conflict", "message": "Project is re-indexing"}, route="/memory/query")
    at = app(store="memorysync", query="Which UI theme does the user prefer?")
    at.run()
    assert "Project is re-indexing" in errors(at)


@pytest.mark.parametrize(("store", "title"), [("qdrant", "Qdrant collection"), ("chroma", "Chroma collection")])
def test_a_typed_qdrant_or_chroma_url_fails_with_one_message_whatever_listens_there(app, store, title, caplog):
    # These stores talk through their client library, which words each failure its own way.
    seen_messages = {}
    with caplog.at_level(logging.WARNING, logger="connectors.common.typed_address"):
        for kind in ("closed", "http", "hangup"):
            with listening(kind) as url:
                at = app(store=store, query="Which UI theme does the user prefer?", **{f"cfg_{store}_url": url})
                at.run()
                assert not at.exception
                seen_messages[kind] = errors(at).replace(url, "URL").replace(url.split("//")[1], "HOST")
    assert set(seen_messages.values()) == {
        f"Cannot open the store: {title}: could not reach the store at that address"
    }, seen_messages
    assert title in caplog.text  # the details are in the server log
