"""Mem0 Platform mode: over the wire against a loopback server speaking the
documented routes (search, get, list; 401, 429, 5xx, timeouts, broken bodies),
and the client logic with httpx.MockTransport."""

from __future__ import annotations

import json

import httpx
import pytest
from demo_questions import PIZZA, THEME
from mem0_platform_server import TEST_API_KEY, Fault, Mem0PlatformServer
from ports import closed_port

from connectors.base import (
    AuthFailed,
    BadResponse,
    InvalidRequest,
    RateLimited,
    StoreTimeout,
    StoreUnavailable,
)
from connectors.mem0.platform import Mem0PlatformStore, open_platform


@pytest.fixture(scope="session")
def platform_server(demo_store):
    server = Mem0PlatformServer(demo_store).start()
    yield server
    server.stop()


@pytest.fixture
def server(platform_server):
    platform_server.reset()
    yield platform_server
    platform_server.reset()


def connect(server, **options) -> tuple[Mem0PlatformStore, list[float]]:
    waits: list[float] = []
    options.setdefault("timeout", 5.0)
    store = Mem0PlatformStore(options.pop("api_key", TEST_API_KEY), base_url=server.url, sleep=waits.append, **options)
    return store, waits


# ------------------------------------------------------------------ over the wire


def test_search_sends_the_documented_request_and_maps_score_breakdown(server, demo_store):
    store, _ = connect(server)
    result = store.query(THEME, user_id="sam", k=5)
    top = result.hits[0]
    assert top.memory_id == "sam-02" and top.text == "Prefers light UI theme"
    assert set(top.breakdown) == {"semantic", "bm25", "entity"}
    assert top.score == top.breakdown["semantic"] == pytest.approx(
        next(h for h in demo_store.query(THEME, user_id="sam", k=30).hits if h.memory_id == "sam-02").breakdown["semantic"]
    )
    assert [h.rank for h in result.hits] == [1, 2, 3, 4, 5]
    assert top.created_at is not None and top.metadata["categories"] == ["preferences"]
    request = server.requests[-1]
    assert (request.method, request.path) == ("POST", "/v3/memories/search/")
    assert request.headers["Authorization"] == f"Token {TEST_API_KEY}"
    assert request.body == {"query": THEME, "filters": {"user_id": "sam"}, "top_k": 5, "threshold": 0.0, "rerank": False}
    assert TEST_API_KEY not in request.path and not request.query


def test_threshold_zero_returns_what_the_platform_default_would_hide_and_says_so(server):
    store, _ = connect(server)
    result = store.query(PIZZA, user_id="sam", k=20)
    hidden = [h for h in result.hits if h.score < 0.1]
    assert hidden, "the demo has pizza hits under 0.1: the default would have hidden them"
    assert any("threshold 0.10 (the v3 search default)" in n and f"hidden {len(hidden)} of these" in n for n in result.notes)


def test_get_and_list_with_paging(server):
    store, _ = connect(server)
    assert store.get("sam-02").text == "Prefers light UI theme"
    assert store.get("sam-02", user_id="leo") is None
    assert store.get("no-such-id") is None
    everything = store.list(user_id="sam", limit=100)
    assert len(everything) == 22 and {m.user_id for m in everything} == {"sam"}
    page_two = store.list(user_id="sam", limit=5, offset=5)
    assert [m.memory_id for m in page_two] == [m.memory_id for m in everything[5:10]]
    assert server.requests[-1].query == {"page": ["2"], "page_size": ["5"]}
    odd = store.list(user_id="sam", limit=5, offset=3)
    assert [m.memory_id for m in odd] == [m.memory_id for m in everything[3:8]]
    assert store.list(user_id="sam", limit=10, offset=100) == []


def test_wrong_key_is_auth_failed_and_the_echoed_key_is_redacted(server):
    wrong = "m0-live-WRONGKEY-000111"
    store, _ = connect(server, api_key=wrong)
    with pytest.raises(AuthFailed) as caught:
        store.query(THEME, user_id="sam", k=5)
    assert caught.value.status == 401
    assert wrong not in str(caught.value) and "***" in str(caught.value)
    assert caught.value.request_id and caught.value.request_id.startswith("req-")
    assert len(server.requests) == 1  # an auth failure is not retried


def test_429_waits_what_the_server_asks_then_succeeds(server):
    server.inject(Fault(429, {"detail": "Request was throttled."}, headers={"Retry-After": "0.3"}))
    store, waits = connect(server)
    assert store.query(THEME, user_id="sam", k=3).hits[0].memory_id == "sam-02"
    assert waits == [0.3]
    assert len(server.requests) == 2


def test_429_that_persists_is_rate_limited_with_retry_after(server):
    server.inject(Fault(429, {"detail": "Request was throttled.", "retry_after": 1}, times=5))
    store, waits = connect(server, max_retries=2)
    with pytest.raises(RateLimited) as caught:
        store.query(THEME, user_id="sam", k=3)
    assert caught.value.retry_after == 1.0
    assert waits == [1.0, 1.0] and len(server.requests) == 3
    assert "throttled" in str(caught.value)


def test_429_asking_for_a_long_wait_fails_at_once(server):
    server.inject(Fault(429, {"detail": "Slow down."}, headers={"Retry-After": "120"}))
    store, waits = connect(server)
    with pytest.raises(RateLimited) as caught:
        store.query(THEME, user_id="sam", k=3)
    assert caught.value.retry_after == 120.0 and waits == [] and len(server.requests) == 1


def test_5xx_is_retried_then_succeeds(server):
    server.inject(Fault(502, "<html>Bad gateway</html>", content_type="text/html"))
    store, waits = connect(server)
    assert store.query(THEME, user_id="sam", k=3).hits[0].memory_id == "sam-02"
    assert len(waits) == 1 and len(server.requests) == 2


def test_5xx_that_persists_is_a_bad_response(server):
    server.inject(Fault(503, {"detail": "Service unavailable"}, times=10))
    store, waits = connect(server, max_retries=2)
    with pytest.raises(BadResponse) as caught:
        store.query(THEME, user_id="sam", k=3)
    assert caught.value.status == 503 and "after 3 attempts" in str(caught.value)
    assert len(server.requests) == 3


def test_rejected_request_names_the_servers_reason(server):
    server.inject(Fault(422, {"detail": [{"loc": ["body", "top_k"], "msg": "must be <= 1000"}]}))
    store, _ = connect(server)
    with pytest.raises(InvalidRequest, match="top_k: must be <= 1000"):
        store.query(THEME, user_id="sam", k=3)


def test_broken_bodies_are_bad_responses(server):
    server.inject(Fault(200, "{not json", content_type="application/json"))
    store, _ = connect(server)
    with pytest.raises(BadResponse, match="not JSON"):
        store.query(THEME, user_id="sam", k=3)
    server.inject(Fault(200, {"memories": []}))
    with pytest.raises(BadResponse, match="expected a list of memories under 'results'"):
        store.query(THEME, user_id="sam", k=3)


def test_slow_answer_is_a_timeout(server):
    server.inject(Fault(200, {"results": []}, delay=1.5))  # answers too late, without touching the store
    store, _ = connect(server, timeout=0.3)
    with pytest.raises(StoreTimeout, match="within 0.3 s"):
        store.query(THEME, user_id="sam", k=3)


def test_connection_refused_is_store_unavailable():
    port = closed_port()
    store = Mem0PlatformStore(TEST_API_KEY, base_url=f"http://127.0.0.1:{port}", timeout=2.0)
    with pytest.raises(StoreUnavailable, match="could not be reached"):
        store.query(THEME, user_id="sam", k=3)


# ------------------------------------------------------------------ MockTransport


def mock_store(handler, **options) -> Mem0PlatformStore:
    return Mem0PlatformStore(
        "m0-mock-KEY", base_url="https://api.mem0.test", client=httpx.Client(transport=httpx.MockTransport(handler)), **options
    )


def answer(body, status=200):
    return lambda request: httpx.Response(status, json=body)


def test_results_as_a_bare_list_are_read():
    store = mock_store(answer([{"id": "m1", "memory": "Likes tea", "score": 0.5, "user_id": "sam"}]))
    result = store.query("drinks?", user_id="sam", k=3)
    assert [(h.memory_id, h.score) for h in result.hits] == [("m1", 0.5)]
    assert result.context == "Relevant memories about the user:\n- Likes tea"


def test_breakdown_keeps_numbers_only():
    body = {
        "results": [
            {
                "id": "m1",
                "memory": "Likes tea",
                "score": 0.62,
                "score_breakdown": {"semantic": 0.7, "bm25": 0.4, "entity": True, "note": "x", "rerank": None},
                "created_at": "2025-01-02T03:04:05Z",
                "metadata": {"source": "chat"},
                "categories": ["food"],
            }
        ]
    }
    hit = mock_store(answer(body)).query("tea?", user_id="sam", k=1).hits[0]
    assert hit.breakdown == {"semantic": 0.7, "bm25": 0.4}
    assert hit.created_at.isoformat() == "2025-01-02T03:04:05+00:00"
    assert hit.metadata["source"] == "chat" and hit.metadata["categories"] == ["food"]


def test_a_result_without_id_is_a_bad_response_naming_it():
    store = mock_store(answer({"results": [{"id": "m1", "memory": "a"}, {"memory": "no id"}]}))
    with pytest.raises(BadResponse, match="result #2"):
        store.query("q", user_id="sam", k=2)


def test_request_shape_rerank_and_app_threshold():
    seen = []

    def handler(request: httpx.Request):
        seen.append(request)
        return httpx.Response(200, json={"results": [{"id": "m1", "memory": "a", "score": 0.2}]})

    result = mock_store(handler, rerank=True, app_threshold=0.3).query("q", user_id="sam", k=7)
    body = json.loads(seen[0].content)
    assert str(seen[0].url) == "https://api.mem0.test/v3/memories/search/"
    assert body["rerank"] is True and body["top_k"] == 7 and body["threshold"] == 0.0
    assert "threshold 0.30 (the threshold configured for your app)" in result.notes[0]
    assert "hidden 1 of these 1 hits" in result.notes[0]


def test_no_key_is_auth_failed_before_any_request(monkeypatch):
    monkeypatch.delenv("MEM0_API_KEY", raising=False)
    with pytest.raises(AuthFailed, match="MEM0_API_KEY"):
        open_platform()
    monkeypatch.setenv("MEM0_API_KEY", "m0-env-KEY-42")
    store = open_platform()
    assert "m0-env-KEY-42" not in repr(store)
    with pytest.raises(InvalidRequest, match="end user"):
        store.query("q", user_id=None, k=3)
