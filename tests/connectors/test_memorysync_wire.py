"""The MemorySync connector over a real socket: a server on 127.0.0.1 that speaks
MemorySync's routes over the embedded demo store (real embeddings, real scores),
with faults injected for every error class."""

from __future__ import annotations

import pytest
from demo_questions import PIZZA, THEME
from ports import closed_port

from connectors.base import (
    AuthFailed,
    BadResponse,
    InvalidRequest,
    NotFound,
    RateLimited,
    StoreTimeout,
    StoreUnavailable,
)
from connectors.http.memorysync import NORMALISED_NOTE, USAGE_NOTE, MemorySyncStore, MissingEndUser

COMPONENTS = ("semantic", "recency", "importance", "usage")


@pytest.fixture
def server(memorysync_server):
    return memorysync_server


def connect(server, **options) -> MemorySyncStore:
    options.setdefault("end_user_id", "sam")
    return MemorySyncStore(server.url, server.api_key, **options)


# ------------------------------------------------------------------ the happy path


def test_query_returns_real_scores_whose_raw_semantic_part_is_the_embedded_cosine(server, demo_store):
    result = connect(server).query(THEME, user_id=None, k=5)
    assert len(result.hits) == 5
    assert result.hits[0].memory_id == "sam-02"  # "Prefers light UI theme"
    local = {h.memory_id: h for h in demo_store.query(THEME, user_id="sam", k=22).hits}
    for hit in result.hits:
        assert hit.breakdown["raw.semantic"] == pytest.approx(local[hit.memory_id].breakdown["semantic"], abs=1e-5)
    assert local["sam-02"].breakdown["semantic"] > 0.5  # the theme memory answers the theme question


def test_scores_are_min_max_normalised_within_each_result_set(server):
    store = connect(server)
    result = store.query(PIZZA, user_id=None, k=8)
    for component in COMPONENTS:
        values = [h.breakdown[component] for h in result.hits]
        assert max(values) == pytest.approx(1.0) and min(values) == pytest.approx(0.0)
    for hit in result.hits:  # what the chart stacks adds up to the score
        assert sum(hit.weights[c] * hit.breakdown[c] for c in COMPONENTS) == pytest.approx(hit.score, abs=1e-5)
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    wider = {h.memory_id: h.score for h in store.query(PIZZA, user_id=None, k=22).hits}
    assert any(abs(wider[h.memory_id] - h.score) > 1e-3 for h in result.hits), "a wider set must move scores"
    assert NORMALISED_NOTE in result.notes and USAGE_NOTE in result.notes


def test_every_query_bumps_the_usage_count_of_what_it_returns(server):
    store = connect(server)
    returned = store.query(THEME, user_id=None, k=50).hits
    assert len(returned) == 22  # all of sam's memories: k=50 reaches past them
    before = store.get("sam-05").usage_count
    store.query(THEME, user_id=None, k=50)
    assert store.get("sam-05").usage_count == before + 1


def test_headers_carry_key_user_and_project_and_the_url_never_the_key(server):
    connect(server, project_id="proj-1").query(THEME, user_id="priya", k=3)
    request = server.requests_to("/memory/query")[-1]
    assert request.headers["X-API-Key"] == server.api_key
    assert request.headers["X-End-User-ID"] == "priya"
    assert request.headers["X-Project-ID"] == "proj-1"
    assert request.body == {"query": THEME, "k": 3}
    assert all(server.api_key not in r.path and server.api_key not in str(r.query) for r in server.requests)


def test_the_end_users_own_memories_only(server):
    hits = connect(server).query(THEME, user_id="priya", k=50).hits
    assert hits and all(h.memory_id.startswith("priya-") for h in hits)


def test_get_list_with_paging_and_feedback(server):
    store = connect(server)
    memory = store.get("sam-02")
    assert memory.text == "Prefers light UI theme" and memory.user_id == "sam"
    assert store.get("leo-01") is None  # another user's memory is not this user's
    assert store.get("no-such-id") is None
    first, second = store.list(user_id=None, limit=10), store.list(user_id=None, limit=10, offset=10)
    assert len(first) == 10 and len(second) == 10
    assert not {m.memory_id for m in first} & {m.memory_id for m in second}
    result = store.feedback("sam-09", "negative", comment="wrong city")
    assert result.importance_after < result.importance_before and result.influenced_ranking is True
    assert server.requests_to("/memory/sam-09/feedback")[-1].body == {"signal": "negative", "comment": "wrong city"}
    with pytest.raises(NotFound, match="404"):
        store.feedback("no-such-id", "ignored")


# ------------------------------------------------------------------ every error class


def test_missing_end_user_is_a_400_with_a_clear_fix(server):
    with pytest.raises(MissingEndUser) as caught:
        connect(server, end_user_id=None).query(THEME, user_id=None, k=5)
    assert "MEMORYSYNC_END_USER_ID" in str(caught.value)
    assert caught.value.status == 400 and caught.value.request_id.startswith("req-")


def test_wrong_key_is_auth_failed_and_the_key_is_not_in_the_message(server):
    with pytest.raises(AuthFailed) as caught:
        MemorySyncStore(server.url, "msk-wrong-key", end_user_id="sam").query(THEME, user_id=None, k=5)
    assert "401" in str(caught.value) and "msk-wrong-key" not in str(caught.value)
    assert caught.value.request_id.startswith("req-")


@pytest.mark.parametrize(
    ("status", "body", "error", "fragment"),
    [
        (403, {"error": {"code": "forbidden", "message": "Key lacks memory:read"}, "request_id": "rq-403"}, AuthFailed, "Key lacks memory:read"),
        (404, {"detail": "Project not found"}, NotFound, "Project not found"),
        (409, {"error": "conflict", "message": "Project is re-indexing", "request_id": "rq-409"}, InvalidRequest, "Project is re-indexing"),
        (422, {"detail": [{"loc": ["body", "filters"], "msg": "unknown field 'colour'"}]}, InvalidRequest, "filters: unknown field 'colour'"),
        (500, {"error": {"code": "internal", "message": "database is locked"}}, BadResponse, "500 server error after 3 attempts"),
        (503, "<html>Service Unavailable</html>", BadResponse, "Service Unavailable"),
    ],
)
def test_injected_errors_end_in_the_right_exception(server, status, body, error, fragment):
    server.inject(status, body, times=10, content_type="text/html" if isinstance(body, str) else "application/json")
    waits: list[float] = []
    with pytest.raises(error) as caught:
        connect(server, sleep=waits.append).query(THEME, user_id=None, k=5)
    assert fragment in str(caught.value)
    assert caught.value.status == status and caught.value.request_id
    retried = status >= 500
    assert len(server.requests) == (3 if retried else 1)  # max_retries=2: bounded
    assert waits == ([0.5, 1.0] if retried else [])


def test_429_waits_what_the_body_and_the_header_ask_then_succeeds(server):
    server.inject(429, {"error": {"code": "rate_limited", "message": "slow down"}, "retry_after": 1.25})
    server.inject(429, {"error": "rate_limited"}, headers={"Retry-After": "2"})
    waits: list[float] = []
    result = connect(server, sleep=waits.append).query(THEME, user_id=None, k=5)
    assert waits == [1.25, 2.0] and result.hits and len(server.requests) == 3


def test_429_that_persists_is_rate_limited_after_bounded_retries(server):
    server.inject(429, {"error": "rate_limited", "retry_after": 4}, times=10)
    waits: list[float] = []
    with pytest.raises(RateLimited) as caught:
        connect(server, sleep=waits.append, max_retries=3).query(THEME, user_id=None, k=5)
    assert waits == [4.0, 4.0, 4.0] and len(server.requests) == 4
    assert caught.value.retry_after == 4.0 and "wait 4 s" in str(caught.value)


def test_the_delay_the_server_asks_for_is_really_waited_over_the_socket(server):
    server.inject(429, {"error": "rate_limited", "retry_after": 0.3})
    result = connect(server).query(THEME, user_id=None, k=3)  # the real time.sleep
    first, second = server.requests
    assert result.hits
    # Not a speed figure: a lower bound the client must respect to honour the server.
    assert second.at - first.at >= 0.3


def test_slow_answer_is_a_timeout(server):
    server.inject(None, delay=1.0)
    with pytest.raises(StoreTimeout, match=r"did not answer POST /memory/query within 0.2 s"):
        connect(server, timeout=0.2).query(THEME, user_id=None, k=5)
    assert len(server.requests) == 1  # a timeout is not retried: it would only multiply the wait


def test_connection_refused_is_store_unavailable():
    port = closed_port()
    with pytest.raises(StoreUnavailable, match=rf"MemorySync at http://127.0.0.1:{port} refused the connection or could not be reached: "):
        MemorySyncStore(f"http://127.0.0.1:{port}", "k", end_user_id="sam").query(THEME, user_id=None, k=5)


def test_non_json_body_and_body_without_memories_are_bad_responses(server):
    server.inject(200, "<html><body>Login</body></html>", content_type="text/html")
    with pytest.raises(BadResponse, match="not JSON"):
        connect(server).query(THEME, user_id=None, k=5)
    server.inject(200, {"data": [], "request_id": "rq-shape"})
    with pytest.raises(BadResponse, match="without a `memories` list") as caught:
        connect(server).query(THEME, user_id=None, k=5)
    assert caught.value.request_id == "rq-shape"
