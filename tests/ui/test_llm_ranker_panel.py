"""The LLM ranker on the Inspect page, in AppTest against the real demo store and a
loopback OpenAI-compatible server."""

from __future__ import annotations

import pytest
from chat_model_server import ChatModelServer, Reply, formula_ranker
from demo_questions import THEME


@pytest.fixture
def model(monkeypatch):
    with ChatModelServer(formula_ranker) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("MEMLENS_LLM_MODEL", "loopback-ranker")
        yield server


def opened(app):
    at = app(query=THEME)
    at.run()
    assert not at.exception, at.exception
    return at


def store_reads(data_dir) -> int:
    path = data_dir / "reads.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def texts(at) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "caption", "success", "warning", "error") for e in getattr(at, kind))


def test_without_a_model_the_panel_says_how_to_configure_one(app, monkeypatch):
    monkeypatch.delenv("MEMLENS_LLM_BASE_URL", raising=False)
    at = opened(app)
    assert "No model is configured" in texts(at)
    assert not [b for b in at.button if b.key == "llm_rank_run"]


def test_nothing_is_sent_until_the_box_is_ticked_then_the_orders_stand_side_by_side(app, model, data_dir):
    at = opened(app)
    box = at.checkbox(key="llm_rank_send_text")
    assert "127.0.0.1" in box.label and "loopback-ranker" in box.label
    assert at.button(key="llm_rank_run").disabled
    assert model.received == []
    reads = store_reads(data_dir)

    box.check().run()
    at.button(key="llm_rank_run").click().run()
    assert not at.exception, at.exception
    assert len(model.received) == 1
    assert THEME in model.received[0].body["messages"][-1]["content"]
    assert store_reads(data_dir) == reads  # the model ranked the hits in hand
    assert "passes every check" in texts(at)
    orders = next(d.value for d in at.dataframe if "model rank" in d.value.columns)
    assert list(orders["model rank"]) == list(orders["formula rank"])  # a model doing the formula's sums
    assert orders["store rank"].notna().all() and len(orders) == len(set(orders["memory id"]))
    assert [m.value for m in at.metric if m.label == "Tokens (prompt + answer)"] == ["12 + 7"]
    assert any(b.key == "llm_rank_download" for b in at.get("download_button"))

    # The same hits and settings again: answered from the cache, nothing sent.
    at.button(key="llm_rank_run").click().run()
    assert len(model.received) == 1
    assert "From the ranking cache" in texts(at)


def test_a_broken_answer_shows_its_violations_the_retry_and_then_the_fallback(app, model):
    model.script += [Reply(content='{"query": "x"}'), Reply(content="I cannot rank these.")]
    at = opened(app)
    at.checkbox(key="llm_rank_send_text").check().run()
    at.button(key="llm_rank_run").click().run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert "formula's ranking is used instead" in shown and "after a retry" in shown
    assert "ranked\\_results (shape)" in shown  # the first answer's violation, by JSON path, inert
    assert "not valid JSON" in shown  # the second's
    assert [m.value for m in at.metric if m.label == "Outcome"] == ["fallback"]
    assert "Your answer breaks these rules" in model.received[1].body["messages"][-1]["content"]
    # The formula ranked these hits: the model's columns are empty, never the formula's
    # order under the model's name, and the tally counts a fallback, not a model ranking.
    orders = next(d.value for d in at.dataframe if "model rank" in d.value.columns)
    assert orders["model rank"].isna().all() and orders["model composite"].isna().all()
    assert set(orders["model status"]) == {"fell back: the formula ranked it"}
    assert orders["formula rank"].notna().all()
    assert "0 quer(ies) ranked by the model, 1 fell back to the formula" in shown
