"""The Monitor page's precision side in AppTest: the swapped log alerts from the swap
day on, the unchanged log is quiet, nothing is sent before the box naming the host is
ticked, the grades stay in the app database (a second visit shows them and sends
nothing), and a session of an alert window holds exactly the judged pairs."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from chat_model_server import ChatModelServer
from judged_logs import DAYS, START, SWAP_DAY, constant_judge, demo_judge, log_text, user_memories
from markdown_text import seen

from dashboard.database import AppDatabase
from dashboard.ui.pages.monitor import UPLOAD_CHOICE

PAGE = "monitor.py"


@pytest.fixture(scope="module")
def logs(demo_store):
    memories = user_memories(demo_store)
    return log_text(memories, SWAP_DAY).encode(), log_text(memories, None).encode()


@pytest.fixture
def judge(monkeypatch, demo_store):
    texts = {m.memory_id: m.text for m in demo_store.list(user_id=None, limit=1000)}
    with ChatModelServer(demo_judge(texts)) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("MEMLENS_LLM_MODEL", "grader")
        yield server


def open_log(app, content: bytes, name: str):
    at = app()
    at.switch_page(PAGE).run()
    at.radio(key="monitor_source").set_value(UPLOAD_CHOICE).run()
    at.file_uploader(key="monitor_upload").set_value((name, content, "application/jsonl")).run()
    at.number_input(key="monitor_judge_sample").set_value(12).run()
    assert not at.exception, at.exception
    return at


def precision_alerts(at) -> list[str]:
    return [seen(w.value) for w in at.warning if "kept precision" in seen(w.value)]


def test_without_a_model_the_page_says_relevance_is_not_watched(app, logs):
    at = app()
    at.switch_page(PAGE).run()
    at.radio(key="monitor_source").set_value(UPLOAD_CHOICE).run()
    at.file_uploader(key="monitor_upload").set_value(("swapped.jsonl", logs[0], "application/jsonl")).run()
    assert not at.exception
    said = [seen(i.value) for i in at.info if "Relevance is not being watched" in seen(i.value)]
    assert len(said) == 1


def test_the_swapped_log_alerts_from_the_swap_day_and_a_session_holds_the_judged_pairs(app, logs, judge, data_dir):
    at = open_log(app, logs[0], "swapped.jsonl")
    assert judge.received == []  # nothing sent before the box naming the host is ticked
    assert at.button(key="monitor_judge_run").disabled
    assert "127.0.0.1" in at.checkbox(key="monitor_judge_send_text").label
    at.checkbox(key="monitor_judge_send_text").check().run()
    at.button(key="monitor_judge_run").click().run()
    assert not at.exception, at.exception
    assert len(judge.received) == DAYS * 12 * 2
    alerts = precision_alerts(at)
    swap_date = START + timedelta(days=SWAP_DAY)
    assert [a.split(":")[1].strip() for a in alerts] == [f"{swap_date + timedelta(days=d):%Y-%m-%d}" for d in range(DAYS - SWAP_DAY)]
    assert "kept precision 0.0%" in alerts[0] and "vs baseline 50.0%" in alerts[0]
    chart = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "Kept precision" in json.loads(c.proto.spec)["layout"]["title"]["text"])
    assert len(chart["data"][0]["x"]) == DAYS and [x[:10] for x in chart["data"][1]["x"]][0] == f"{swap_date:%Y-%m-%d}"
    assert chart["data"][0]["error_y"]["array"]  # each window's Wilson interval
    assert any("agreement with people is unknown" in seen(c.value) for c in at.caption)

    at.text_input(key="monitor_judged_session_name").set_value("check-the-judge")
    submit = next(b for b in at.get("form_submit_button") if b.proto.label == "Start a session of the judged pairs")
    submit.click().run()
    assert not at.exception, at.exception
    db = AppDatabase(data_dir / "labels.sqlite")
    items = db.sessions.items("check-the-judge")
    graded = {(j.message_id, j.memory_id) for j in db.judge_labels.find(source="judge:umbrela@grader")}
    assert len(items) == 24 and {(i.message_id, i.memory_id) for i in items} <= graded
    assert {i.message_id[:3] for i in items} == {f"d{SWAP_DAY:02d}"}

    again = open_log(app, logs[0], "swapped.jsonl")  # a new visit: the grades come from the app database
    assert len(judge.received) == DAYS * 12 * 2
    assert precision_alerts(again) == alerts


def test_the_unchanged_log_is_quiet(app, logs, judge):
    at = open_log(app, logs[1], "unchanged.jsonl")
    at.checkbox(key="monitor_judge_send_text").check().run()
    at.button(key="monitor_judge_run").click().run()
    assert not at.exception, at.exception
    assert len(judge.received) == DAYS * 12 * 2
    assert precision_alerts(at) == []
    assert any("Baseline kept precision 50.0%" in seen(c.value) for c in at.caption)


def test_a_constant_judge_is_shown_as_untrusted_never_as_a_baseline_of_zero(app, logs, monkeypatch):
    # grade 0 and the placeholder for every pair, on the log whose quality drops: before,
    # "Baseline kept precision 0.0%" and no word that the judge says nothing
    with ChatModelServer(constant_judge) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("MEMLENS_LLM_MODEL", "grader")
        at = open_log(app, logs[0], "swapped.jsonl")
        at.checkbox(key="monitor_judge_send_text").check().run()
        at.button(key="monitor_judge_run").click().run()
        assert not at.exception, at.exception
        assert len(server.received) == DAYS * 12 * 2
    errors = [seen(e.value) for e in at.error]
    assert any(
        "Kept precision is untrusted" in e and "one grade for every pair" in e and "'<one short sentence>'" in e and "exits 3" in e
        for e in errors
    ), errors
    assert not any("Baseline kept precision" in seen(c.value) for c in at.caption)
    assert precision_alerts(at) == []
    assert not [c for c in at.get("plotly_chart") if "Kept precision" in json.loads(c.proto.spec)["layout"]["title"]["text"]]
