"""Outside text on the pages, in AppTest: a shared link's store, a model's JSON keys and
answers, a model setting the client refuses, a damaged ranking cache. Each is drawn
as the characters it is (no link, no picture) or said in a message, never a traceback."""

from __future__ import annotations

import json

import pytest
from chat_model_server import ChatModelServer, Reply, formula_ranker
from demo_questions import THEME
from markdown_it import MarkdownIt
from markdown_text import seen

RENDER = MarkdownIt("commonmark", {"html": True})
PLANTED = "![p](http://evil.example/leak.png)"


def drawn(at) -> list[str]:
    """Every text element of the page, as Markdown source."""
    kinds = ("markdown", "caption", "success", "warning", "error", "info")
    return [str(e.value) for kind in kinds for e in getattr(at, kind)]


def live(markdown: str) -> bool:
    html = RENDER.render(markdown)
    return "<a " in html or "<img" in html


@pytest.mark.parametrize("page", ["inspect", "quality", "browse"])
@pytest.mark.parametrize("store", ["[Sign in again](https://evil.example/x)", PLANTED])
def test_a_store_in_a_shared_link_is_named_as_text_on_every_page(app, page, store):
    at = app()
    at.query_params.update({"store": store})
    if page != "inspect":
        at.switch_page(f"{page}.py")
    at.run()
    assert not at.exception, at.exception
    warnings = [w for w in drawn(at) if "link" in w]
    assert warnings, drawn(at)
    assert not [w for w in warnings if live(w)]


def _model(monkeypatch, server: ChatModelServer) -> None:
    monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
    monkeypatch.setenv("MEMLENS_LLM_MODEL", "loopback-ranker")


def _ask(app):
    at = app(query=THEME)
    at.run()
    assert not at.exception, at.exception
    at.checkbox(key="llm_rank_send_text").check().run()
    at.button(key="llm_rank_run").click().run()
    assert not at.exception, at.exception
    return at


def test_a_json_key_with_backticks_from_the_model_draws_no_picture(app, monkeypatch):
    hostile = {"query": "x", f"`{PLANTED}": 1, "ranked_results": [{f"` {PLANTED} `": 1}]}
    with ChatModelServer(formula_ranker) as server:
        _model(monkeypatch, server)
        server.script += [Reply(content=json.dumps(hostile))] * 2
        at = _ask(app)
    listed = [text for text in drawn(at) if "violation(s)" in text]
    assert listed and not [text for text in listed if live(text)]
    assert PLANTED in seen(listed[0])  # named, as the characters it is


@pytest.mark.parametrize(
    "answer",
    ["[" * 100_000 + "]" * 100_000, '{"query": ' + "7" * 5000 + "}"],
    ids=["100,000 brackets", "5,000-digit number"],
)
def test_a_deep_or_huge_answer_falls_back_with_a_message(app, monkeypatch, answer):
    with ChatModelServer(formula_ranker) as server:
        _model(monkeypatch, server)
        server.script += [Reply(content=answer)] * 2
        at = _ask(app)
    assert [m.value for m in at.metric if m.label == "Outcome"] == ["fallback"]
    assert any("not usable JSON" in text for text in drawn(at))


def test_a_damaged_ranking_cache_is_ranked_around(app, monkeypatch, data_dir):
    (data_dir / "llm_rankings.sqlite").write_bytes(b"this is not a database" * 100)
    with ChatModelServer(formula_ranker) as server:
        _model(monkeypatch, server)
        at = _ask(app)
        assert len(server.received) == 1
    assert any("passes every check" in text for text in drawn(at))
    assert any("ranking cache" in text and "ranking without it" in text for text in drawn(at))


def test_a_base_url_without_a_scheme_is_a_message_in_the_panel(app, monkeypatch):
    monkeypatch.setenv("MEMLENS_LLM_BASE_URL", "127.0.0.1:9/v1")
    monkeypatch.setenv("MEMLENS_LLM_MODEL", "m")
    at = _ask(app)
    assert any("must start with http" in str(e.value) for e in at.error)
