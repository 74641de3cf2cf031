"""The Inspect page against the loopback MemorySync server, in AppTest: the same
loop as the embedded store (query, floor, labels), its notes, every store fault
as a message, the rank lookup, feedback that is off until confirmed, and a key
that never shows up anywhere."""

from __future__ import annotations

import logging

import pytest
from demo_questions import PIZZA, THEME
from markdown_text import seen
from ports import closed_port
from streamlit.testing.v1.element_tree import Block

from connectors.http.memorysync import NORMALISED_NOTE, USAGE_NOTE
from dashboard.floor import apply_floor
from dashboard.labels import export

# Labels here are saved under a named reviewer, as a deployment names one (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("named_reviewer")




def node_text(node) -> str:
    """One element's message and value."""
    text = str(getattr(node, "proto", ""))
    try:
        text += "\n" + repr(node.value) + "\n" + seen(str(node.value))
    except Exception:  # blocks and some elements have no value
        pass
    return text


def everything_rendered(at) -> str:
    """Every element's message and value, sidebar included: what a browser could see."""
    return "\n".join(node_text(node) for node in at._tree)


def texts(elements) -> str:
    return "\n".join(seen(str(e.value)) for e in elements)


def store_query_requests(server) -> int:
    return len(server.requests_to("/memory/query"))


# ------------------------------------------------------------------ the same loop as the embedded store


@pytest.mark.parametrize("store", ["embedded", "memorysync"])
def test_query_floor_and_labels_work_the_same_on_both_stores(app, ms_env, data_dir, store):
    at = app(store=store, query=THEME, floor=0.35)
    at.run()
    assert not at.exception and not at.error, texts(at.error)
    result = at.session_state["result"]
    assert result.hits[0].memory_id == "sam-02"
    table = at.dataframe[0].value
    assert list(table["memory id"]) == [h.memory_id for h in result.hits]
    kept, dropped = apply_floor(result.hits, 0.35)
    assert [m.value for m in at.metric][:3] == [str(len(result.hits)), str(len(kept)), str(len(dropped))]

    # A floor that splits the results: the counts follow, the store is not asked again.
    middle = round((result.hits[0].score + result.hits[-1].score) / 2, 2)
    at.slider(key="floor").set_value(middle).run()
    kept, dropped = apply_floor(result.hits, middle)
    assert kept and dropped
    assert [m.value for m in at.metric][1:3] == [str(len(kept)), str(len(dropped))]
    assert set(at.dataframe[0].value["status"]) == {"kept", "dropped"}

    at.button(key=f"not_relevant_{dropped[0].memory_id}").click().run()
    assert not at.exception
    from dashboard.database import AppDatabase

    labels = AppDatabase(data_dir / "labels.sqlite").labels.find()
    assert [(row.memory_id, row.label, row.rank) for row in labels] == [(dropped[0].memory_id, "not_relevant", dropped[0].rank)]
    assert labels[0].store.startswith(f"{store}:")
    assert at.session_state["store_calls"] == 1
    if store == "memorysync":
        assert store_query_requests(ms_env) == 1
        notes = texts(at.warning)
        assert NORMALISED_NOTE in notes and USAGE_NOTE in notes
        assert any("API key: configured (from MEMORYSYNC_API_KEY)" in seen(c.value) for c in at.sidebar.caption)


# ------------------------------------------------------------------ faults as messages


FAULTS = [
    # (id, injected fault or None, env overrides, exception name, fragment of the message)
    ("missing-end-user", None, {"MEMORYSYNC_END_USER_ID": ""}, "MissingEndUser", "needs an end user"),
    ("wrong-key", None, {"MEMORYSYNC_API_KEY": "msk-not-the-key"}, "AuthFailed", "401"),
    ("forbidden", dict(status=403, body={"error": {"code": "forbidden", "message": "Key lacks memory:read"}}), {}, "AuthFailed", "Key lacks memory:read"),
    ("not-found", dict(status=404, body={"detail": "Project not found"}), {}, "NotFound", "Project not found"),
    ("conflict", dict(status=409, body={"error": "conflict", "message": "Project is re-indexing"}), {}, "InvalidRequest", "Project is re-indexing"),
    ("validation", dict(status=422, body={"detail": [{"loc": ["body", "k"], "msg": "too large"}]}), {}, "InvalidRequest", "k: too large"),
    ("rate-limited", dict(status=429, body={"error": "rate_limited", "retry_after": 9}, times=5), {}, "RateLimited", "wait 9 s"),
    ("server-error", dict(status=500, body={"error": {"code": "internal", "message": "db locked"}}), {}, "BadResponse", "500 server error"),
    ("timeout", dict(status=None, delay=1.0), {"MEMORYSYNC_TIMEOUT": "0.3"}, "StoreTimeout", "within 0.3 s"),
    ("refused", None, {"MEMORYSYNC_BASE_URL": "closed-port"}, "StoreUnavailable", "refused the connection"),
    ("not-json", dict(status=200, body="<html>oops</html>", content_type="text/html"), {}, "BadResponse", "not JSON"),
    ("no-memories", dict(status=200, body={"results": []}), {}, "BadResponse", "without a `memories` list"),
]


@pytest.mark.parametrize(("fault", "env", "name", "fragment"), [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS])
def test_every_store_fault_is_a_message_in_the_page_never_a_traceback(app, ms_env, monkeypatch, fault, env, name, fragment):
    for var, value in env.items():
        monkeypatch.setenv(var, f"http://127.0.0.1:{closed_port()}" if value == "closed-port" else value)
    if fault:
        ms_env.inject(**{"route": "/memory/query", **fault})
    at = app(store="memorysync", query=THEME)
    at.run()
    assert not at.exception
    message = texts(at.error)
    assert f"The store could not answer: {name}:" in message and fragment in message
    assert at.button(key="retry_query")  # the page offers a retry and keeps running
    at.slider(key="floor").set_value(0.2).run()  # a floor move does not hammer the failing store
    assert not at.exception and at.session_state["store_calls"] == 1


def test_a_rate_limit_within_the_retries_is_waited_out_and_the_page_shows_results(app, ms_env, monkeypatch):
    monkeypatch.setenv("MEMORYSYNC_MAX_RETRIES", "1")
    ms_env.inject(429, {"error": "rate_limited"}, headers={"Retry-After": "0.2"}, route="/memory/query")
    at = app(store="memorysync", query=THEME)
    at.run()
    assert not at.exception and not at.error
    first, second = ms_env.requests_to("/memory/query")
    assert second.at - first.at >= 0.2
    assert at.session_state["result"].hits


def test_a_missing_key_is_asked_for_as_a_password_and_then_never_shown(app, ms_env, monkeypatch):
    monkeypatch.delenv("MEMORYSYNC_API_KEY")
    at = app(store="memorysync", query=THEME)
    at.run()
    assert "no API key" in texts(at.error) and not at.exception
    key_input = at.text_input(key="cfg_memorysync_api_key")
    assert key_input.proto.type == key_input.proto.PASSWORD
    key_input.input(ms_env.api_key).run()
    assert not at.error and at.session_state["result"].hits
    holders = [
        (getattr(node, "type", None), getattr(node, "key", None))
        for node in at._tree
        if ms_env.api_key in node_text(node) and not isinstance(node, Block)
    ]
    assert holders == [("text_input", "cfg_memorysync_api_key")]  # only the masked field itself
    assert ms_env.api_key not in str(dict(at.query_params))


def test_a_key_from_st_secrets_is_used_and_only_configured_is_shown(app, ms_env, monkeypatch):
    monkeypatch.delenv("MEMORYSYNC_API_KEY")
    at = app(store="memorysync", query=THEME)
    at.secrets["MEMORYSYNC_API_KEY"] = ms_env.api_key
    at.run()
    assert not at.error and at.session_state["result"].hits
    assert ms_env.requests_to("/memory/query")[-1].headers["X-API-Key"] == ms_env.api_key
    assert any("API key: configured (from MEMORYSYNC_API_KEY)" in seen(c.value) for c in at.sidebar.caption)
    assert not any(t.key == "cfg_memorysync_api_key" for t in at.text_input)
    assert ms_env.api_key not in everything_rendered(at)


# ------------------------------------------------------------------ rank lookup and feedback


def test_rank_lookup_reports_rank_and_score_without_requerying_on_reruns(app, ms_env):
    at = app(store="memorysync", query=PIZZA)
    at.run()
    at.text_input(key="rank_lookup_id").input("sam-02")
    at.button(key="rank_lookup_go").click().run()
    assert not at.exception
    assert "Memory sam-02 ranks #" in texts(at.success)
    assert ms_env.requests_to("/memory/query")[-1].body["k"] == 50
    assert any("This query too bumps usage counts" in c.value for c in at.caption)
    at.slider(key="floor").set_value(0.5).run()
    assert at.session_state["rank_lookup_calls"] == 1 and store_query_requests(ms_env) == 2
    at.text_input(key="rank_lookup_id").input("leo-01")
    at.button(key="rank_lookup_go").click().run()
    assert "never stored" in texts(at.warning)


def test_rank_lookup_failure_is_a_message(app, ms_env):
    at = app(store="memorysync", query=THEME)
    at.run()
    ms_env.inject(503, {"error": {"code": "down", "message": "maintenance"}}, route="/memory/query")
    at.text_input(key="rank_lookup_id").input("sam-02")
    at.button(key="rank_lookup_go").click().run()
    assert not at.exception and "The lookup failed: BadResponse" in texts(at.error)


def feedback_requests(server) -> list:
    return [r for r in server.requests if r.path.endswith("/feedback")]


def test_feedback_is_off_by_default_and_every_send_is_reviewed_and_confirmed(app, ms_env):
    at = app(store="memorysync", query=THEME, floor=0.5)
    at.run()
    toggle = at.toggle(key="feedback_enabled")
    assert toggle.value is False
    assert not any(b.key == "feedback_confirm" for b in at.button)
    toggle.set_value(True).run()
    assert not feedback_requests(ms_env)

    result = at.session_state["result"]
    kept, dropped = apply_floor(result.hits, 0.5)
    at.button(key="feedback_prepare").click().run()
    assert f"Send {len(result.hits)} signal(s)" in texts(at.warning)
    assert not feedback_requests(ms_env)  # reviewing sends nothing
    at.button(key="feedback_confirm").click().run()
    sent = feedback_requests(ms_env)
    assert [r.body["signal"] for r in sent] == ["retrieved"] * len(kept) + ["ignored"] * len(dropped)
    assert [r.headers["X-End-User-ID"] for r in sent] == ["sam"] * len(sent)
    table = next(d.value for d in at.dataframe if "importance before" in d.value.columns)
    assert list(table["memory id"]) == [h.memory_id for h in kept + dropped]
    assert (table.loc[table["signal"] == "retrieved", "importance after"] > table.loc[table["signal"] == "retrieved", "importance before"]).all()
    assert (table.loc[table["signal"] == "ignored", "importance after"] < table.loc[table["signal"] == "ignored", "importance before"]).all()
    assert f"Sent {len(sent)} signal(s)" in texts(at.success)
    assert not any(b.key == "feedback_confirm" for b in at.button)  # the next send needs its own review
    assert store_query_requests(ms_env) == 1

    at.radio(key="feedback_mode").set_value("negative").run()
    at.selectbox(key="feedback_memory").set_value(result.hits[1].memory_id).run()
    at.button(key="feedback_prepare").click().run()
    assert "needs a comment" in texts(at.error)
    at.text_input(key="feedback_comment").input("not about themes").run()
    at.button(key="feedback_prepare").click().run()
    at.text_input(key="feedback_comment").input("changed my mind").run()
    assert not any(b.key == "feedback_confirm" for b in at.button)  # the reviewed plan changed
    at.button(key="feedback_prepare").click().run()
    at.button(key="feedback_confirm").click().run()
    last = feedback_requests(ms_env)[-1]
    assert last.path == f"/memory/{result.hits[1].memory_id}/feedback"
    assert last.body == {"signal": "negative", "comment": "changed my mind"}
    assert at.session_state["feedback_sends"] == 2


def test_feedback_failure_is_a_message(app, ms_env):
    at = app(store="memorysync", query=THEME, feedback_enabled=True, feedback_mode="floor")
    at.run()
    ms_env.inject(401, {"error": {"code": "invalid_api_key", "message": "key revoked"}}, route="/memory/sam")
    at.button(key="feedback_prepare").click().run()
    at.button(key="feedback_confirm").click().run()
    assert not at.exception
    assert "signal(s) failed: AuthFailed" in texts(at.error) and "key revoked" in texts(at.error)


def test_the_embedded_store_offers_feedback_too_off_by_default(app):
    at = app(query=THEME)
    at.run()
    assert at.toggle(key="feedback_enabled").value is False
    assert any("Feedback would change importance in Embedded" in c.value for c in at.caption)


# ------------------------------------------------------------------ the key stays secret


def test_the_api_key_never_appears_in_the_page_logs_exports_or_url(app, ms_env, data_dir, caplog):
    caplog.set_level(logging.DEBUG)
    # httpx's own request lines too, whatever an earlier import did to its logger
    # (importing the Langfuse SDK sets it to WARNING for the whole process)
    caplog.set_level(logging.DEBUG, logger="httpx")
    key = ms_env.api_key
    at = app(store="memorysync", query=THEME, floor=0.5, store_text=True)
    at.run()
    seen = [everything_rendered(at)]
    at.button(key=f"relevant_{at.session_state['result'].hits[0].memory_id}").click().run()
    at.text_input(key="rank_lookup_id").input("sam-02")
    at.button(key="rank_lookup_go").click().run()
    at.toggle(key="feedback_enabled").set_value(True).run()
    at.button(key="feedback_prepare").click().run()
    at.button(key="feedback_confirm").click().run()
    seen.append(everything_rendered(at))
    # A store that echoes the key in its error: the page shows *** instead.
    ms_env.inject(401, {"error": {"code": "invalid_api_key", "message": f"Key {key} is revoked"}}, route="/memory/query")
    at.text_input(key="query").input(PIZZA)
    at.button(key="FormSubmitter:query_form-Search").click().run()
    assert "Key *** is revoked" in texts(at.error)
    seen.append(everything_rendered(at))
    assert not at.exception

    rendered = "\n".join(seen)
    assert "sam-02" in rendered and "Prefers light UI theme" in rendered  # the walk does see the page
    assert key not in rendered
    assert key not in str(dict(at.query_params))
    assert "HTTP Request: POST" in caplog.text and "MemorySync POST /memory/query -> 200" in caplog.text  # the walk was logged
    assert key not in caplog.text

    from dashboard.database import AppDatabase

    labels = AppDatabase(data_dir / "labels.sqlite").labels.find()
    assert labels
    for text in (export.to_jsonl(labels, include_text=True), export.to_csv(labels, include_text=True), export.to_qrels(labels)):
        assert key not in text
    for path in data_dir.glob("labels.sqlite*"):
        assert key.encode() not in path.read_bytes()
