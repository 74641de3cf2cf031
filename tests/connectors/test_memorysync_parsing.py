"""MemorySync client logic with httpx.MockTransport: what is sent, and how every
shape of response (good, odd, broken) is read. The wire itself is tested against
a real loopback server in test_memorysync_wire.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx
import pytest

from connectors.base import (
    AuthFailed,
    BadResponse,
    InvalidRequest,
    NotFound,
    RateLimited,
    StoreTimeout,
    StoreUnavailable,
)
from connectors.http.base import error_message, parse_retry_after
from connectors.http.memorysync import MAX_K, NORMALISED_NOTE, USAGE_NOTE, MemorySyncStore, MissingEndUser, open_store

KEY = "msk-mock-SECRET-91ab77"
NaN_TOKEN = "__nan__"  # replaced by a bare NaN, which Python's json reads as a float
BASE = "https://api.memorysync.test/v1"


class Recorder:
    """A MockTransport handler answering from a queue of responses, keeping every request."""

    def __init__(self, *responses: httpx.Response | Exception):
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def body(self, i: int = -1) -> dict:
        return json.loads(self.requests[i].content)


def make_store(handler: Recorder, **options) -> MemorySyncStore:
    options.setdefault("end_user_id", "sam")
    return MemorySyncStore(BASE, KEY, client=httpx.Client(transport=httpx.MockTransport(handler)), **options)


def memories(*items: dict, **extra) -> httpx.Response:
    return httpx.Response(200, json={"memories": list(items), **extra})


def one(**fields) -> dict:
    return {"id": "m1", "text": "Prefers light UI theme", "score": 0.64, **fields}


# ------------------------------------------------------------------ what is sent


def test_query_sends_documented_body_and_headers_and_never_the_key_in_the_url():
    handler = Recorder(memories(one()))
    store = make_store(handler, project_id="proj-7")
    store.query("Which UI theme?", user_id="priya", k=7, filters={"tags": ["ui"]}, weights={"semantic": 1.0})
    request = handler.requests[0]
    assert request.method == "POST" and request.url.path == "/v1/memory/query"
    assert handler.body() == {"query": "Which UI theme?", "k": 7, "filters": {"tags": ["ui"]}, "weights": {"semantic": 1.0}}
    assert request.headers["X-API-Key"] == KEY
    assert request.headers["X-End-User-ID"] == "priya"  # the page's user wins over the configured default
    assert request.headers["X-Project-ID"] == "proj-7"
    assert KEY not in str(request.url)


def test_configured_end_user_is_sent_when_the_page_names_none():
    handler = Recorder(memories())
    make_store(handler).query("q", user_id=None, k=5)
    assert handler.requests[0].headers["X-End-User-ID"] == "sam"


@pytest.mark.parametrize(("asked", "sent"), [(500, MAX_K), (51, MAX_K), (50, 50), (0, 1), (-3, 1)])
def test_k_is_clamped_to_the_store_range_and_the_page_is_told(asked, sent):
    handler = Recorder(memories())
    result = make_store(handler).query("q", user_id=None, k=asked)
    assert handler.body()["k"] == sent
    clamped = [n for n in result.notes if "outside MemorySync's 1-50" in n]
    assert bool(clamped) == (asked != sent)


def test_empty_query_is_refused_before_any_request():
    handler = Recorder(memories())
    with pytest.raises(InvalidRequest, match="query is empty"):
        make_store(handler).query("   ", user_id=None, k=5)
    assert handler.requests == []


# ------------------------------------------------------------------ reading responses


def test_full_memory_is_mapped_with_context_latency_intent_and_raw_body():
    body = {
        "memories": [
            one(
                created_at="2025-03-01T10:00:00Z",
                importance=0.75,
                usage_count=22,
                tags=["preferences"],
                metadata={"source": "chat"},
                scoring_breakdown={"semantic": 0.8, "cluster": 0.5, "recency": 0.2, "importance": 0.75, "usage": 0.6},
            )
        ],
        "context": "Relevant memories:\n- Prefers light UI theme",
        "latency_ms": 41.5,
        "query_intent": "preference",
        "weights": {"semantic": 0.4, "cluster": 0.2, "recency": 0.15, "importance": 0.15, "usage": 0.1},
    }
    result = make_store(Recorder(httpx.Response(200, json=body))).query("theme?", user_id=None, k=5)
    hit = result.hits[0]
    assert (hit.memory_id, hit.rank, hit.text, hit.score, hit.raw_score) == ("m1", 1, "Prefers light UI theme", 0.64, 0.64)
    assert hit.breakdown == {"semantic": 0.8, "cluster": 0.5, "recency": 0.2, "importance": 0.75, "usage": 0.6}
    assert hit.weights["cluster"] == 0.2
    assert hit.created_at == datetime(2025, 3, 1, 10, tzinfo=UTC)
    assert hit.metadata == {"source": "chat", "importance": 0.75, "usage_count": 22, "tags": ["preferences"]}
    assert result.context.startswith("Relevant memories")
    assert result.latency_ms == 41.5
    assert result.raw == body
    assert any("'preference'" in n for n in result.notes)


def test_every_result_carries_the_normalisation_and_usage_notes():
    result = make_store(Recorder(memories(one()))).query("q", user_id=None, k=5)
    assert NORMALISED_NOTE in result.notes and USAGE_NOTE in result.notes
    assert "normalises" in NORMALISED_NOTE and "not comparable across" in NORMALISED_NOTE
    assert "bumps the usage counts" in USAGE_NOTE


def test_missing_breakdown_leaves_an_empty_breakdown_and_keeps_the_score():
    result = make_store(Recorder(memories(one()))).query("q", user_id=None, k=5)
    assert result.hits[0].breakdown == {} and result.hits[0].score == 0.64


def test_unknown_and_nested_breakdown_keys_are_all_kept_with_dotted_names():
    breakdown = {
        "vector": 0.799,
        "keyword_boost": 0.1,
        "recency": {"value": 0.3, "half_life_hours": 72, "decay": {"rate": 0.0096}},
        "normalized": {"vector": 1.0},
    }
    hit = make_store(Recorder(memories(one(scoring_breakdown=breakdown)))).query("q", user_id=None, k=5).hits[0]
    assert hit.breakdown == {
        "vector": 0.799,
        "keyword_boost": 0.1,
        "recency.value": 0.3,
        "recency.half_life_hours": 72.0,
        "recency.decay.rate": 0.0096,
        "normalized.vector": 1.0,
    }


def test_wrong_types_are_left_out_with_a_note_and_the_good_rows_still_shown():
    raw = json.dumps(
        {
            "memories": [
                one(id=17, score="0.9", scoring_breakdown={"semantic": "high", "usage": True, "recency": 0.4, "bad": NaN_TOKEN}),
                {"text": "no id here", "score": 0.5},
                "not an object",
                one(id="m3", scoring_breakdown=[0.1, 0.2], created_at="yesterday"),
                one(id="m4", text=None, score=0.3),
            ]
        }
    ).replace(f'"{NaN_TOKEN}"', "NaN")
    handler = Recorder(httpx.Response(200, content=raw.encode(), headers={"content-type": "application/json"}))
    result = make_store(handler).query("q", user_id=None, k=5)
    assert [h.memory_id for h in result.hits] == ["17", "m3", "m4"]
    assert [h.rank for h in result.hits] == [1, 2, 3]
    first, third, fourth = result.hits
    assert first.score is None  # a string score is not trusted; any floor drops the hit
    assert first.breakdown == {"recency": 0.4}
    assert third.breakdown == {} and third.created_at is None
    assert fourth.text == "" and fourth.score == 0.3
    notes = "\n".join(result.notes)
    assert "memories[0] (17): score '0.9' is not a number" in notes
    assert "memories[1] has no usable `id`; left out" in notes
    assert "memories[2] is not an object" in notes
    assert "memories[3] (m3): `scoring_breakdown` is not an object" in notes
    assert "memories[4] (m4) has no `text`" in notes
    assert "semantic (1×)" in notes and "usage (1×)" in notes and "bad (1×)" in notes


def test_empty_memories_is_an_empty_result_not_an_error():
    result = make_store(Recorder(memories(context=""))).query("pizza?", user_id=None, k=5)
    assert result.hits == [] and result.context is None
    assert NORMALISED_NOTE in result.notes


@pytest.mark.parametrize(
    ("response", "fragment"),
    [
        (httpx.Response(200, json={"results": []}), "without a `memories` list (the body has: results)"),
        (httpx.Response(200, json={"memories": {"m1": {}}}), "without a `memories` list"),
        (httpx.Response(200, json=[1, 2]), "a JSON list, not an object"),
        (httpx.Response(200, text="<html>maintenance</html>", headers={"content-type": "text/html"}), "not JSON (text/html)"),
        (httpx.Response(200, content=b"\xff\xfe\x00garbage"), "not JSON"),
    ],
)
def test_bodies_that_cannot_be_read_are_bad_responses(response, fragment):
    with pytest.raises(BadResponse) as caught:
        make_store(Recorder(response)).query("q", user_id=None, k=5)
    assert fragment in str(caught.value)


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("response", "error", "fragments"),
    [
        (
            httpx.Response(400, json={"error": {"code": "missing_end_user", "message": "X-End-User-ID header is required"}, "request_id": "r-1"}),
            MissingEndUser,
            ["needs an end user", "MEMORYSYNC_END_USER_ID", "request id r-1"],
        ),
        (
            httpx.Response(401, json={"error": {"code": "invalid_api_key", "message": "Invalid API key"}, "request_id": "r-2"}),
            AuthFailed,
            ["401", "rejected the API key", "Invalid API key", "request id r-2"],
        ),
        (
            httpx.Response(403, json={"error": "forbidden", "message": "Key lacks memory:read"}, headers={"X-Request-ID": "hdr-3"}),
            AuthFailed,
            ["403", "Key lacks memory:read [forbidden]", "request id hdr-3"],
        ),
        (httpx.Response(404, json={"detail": "Not Found"}), NotFound, ["404 not found: Not Found"]),
        (
            httpx.Response(409, json={"error": {"code": "conflict", "message": "Project is re-indexing"}}),
            InvalidRequest,
            ["409", "rejected the request", "Project is re-indexing [conflict]"],
        ),
        (
            httpx.Response(422, json={"detail": [{"loc": ["body", "filters", "tags"], "msg": "unsupported operator", "type": "x"}]}),
            InvalidRequest,
            ["422", "filters.tags: unsupported operator"],
        ),
        (httpx.Response(400, json={"detail": "weights must sum to 1"}), InvalidRequest, ["400", "weights must sum to 1"]),
    ],
)
def test_error_statuses_map_to_the_hierarchy_with_the_stores_words(response, error, fragments):
    with pytest.raises(error) as caught:
        make_store(Recorder(response), max_retries=0).query("q", user_id=None, k=5)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message
    assert caught.value.status == response.status_code


def test_missing_end_user_is_not_reported_for_other_400s():
    response = httpx.Response(400, json={"detail": "weights must sum to 1"})
    with pytest.raises(InvalidRequest) as caught:
        make_store(Recorder(response)).query("q", user_id=None, k=5)
    assert not isinstance(caught.value, MissingEndUser)


def test_a_key_the_store_echoes_back_is_redacted_from_messages_and_raw_bodies():
    echo = httpx.Response(401, json={"error": {"code": "invalid_api_key", "message": f"Key {KEY} is revoked"}})
    with pytest.raises(AuthFailed) as caught:
        make_store(Recorder(echo)).query("q", user_id=None, k=5)
    assert KEY not in str(caught.value) and "Key *** is revoked" in str(caught.value)
    ok = memories(one(text=f"debug: {KEY}"), echo={"X-API-Key": KEY})
    result = make_store(Recorder(ok)).query("q", user_id=None, k=5)
    assert KEY not in json.dumps(result.raw) and KEY not in result.hits[0].text


def test_transport_failures_become_timeout_and_unavailable():
    request = httpx.Request("POST", BASE)
    with pytest.raises(StoreTimeout, match="did not answer POST /memory/query within 10 s"):
        make_store(Recorder(httpx.ReadTimeout("slow", request=request))).query("q", user_id=None, k=5)
    with pytest.raises(StoreUnavailable, match="refused the connection"):
        make_store(Recorder(httpx.ConnectError("[Errno 111] Connection refused", request=request))).query("q", user_id=None, k=5)


def test_rate_limit_waits_what_the_body_asks_then_succeeds():
    waits: list[float] = []
    handler = Recorder(
        httpx.Response(429, json={"error": {"code": "rate_limited", "message": "slow down"}, "retry_after": 1.5}),
        httpx.Response(429, json={"error": {"code": "rate_limited", "message": "slow down", "details": {"retry_after": 2}}}),
        memories(one()),
    )
    result = make_store(handler, sleep=waits.append, max_retries=2).query("q", user_id=None, k=5)
    assert waits == [1.5, 2.0] and len(handler.requests) == 3 and result.hits


def test_rate_limit_that_persists_ends_in_rate_limited_after_the_retries():
    waits: list[float] = []
    handler = Recorder(httpx.Response(429, json={"error": "rate_limited", "message": "slow down"}, headers={"Retry-After": "3"}))
    with pytest.raises(RateLimited) as caught:
        make_store(handler, sleep=waits.append, max_retries=2).query("q", user_id=None, k=5)
    assert waits == [3.0, 3.0] and len(handler.requests) == 3
    assert caught.value.retry_after == 3.0
    assert "429 rate limited after 3 attempts; the store asks to wait 3 s" in str(caught.value)


def test_a_wait_longer_than_the_cap_is_not_slept_through():
    waits: list[float] = []
    handler = Recorder(httpx.Response(429, json={"retry_after": 3600}))
    with pytest.raises(RateLimited, match="longer than memlens waits"):
        make_store(handler, sleep=waits.append, max_retry_wait=30).query("q", user_id=None, k=5)
    assert waits == [] and len(handler.requests) == 1


def test_server_errors_back_off_and_feedback_is_never_repeated_on_a_5xx():
    waits: list[float] = []
    handler = Recorder(httpx.Response(503, text="upstream down"), httpx.Response(502, text="bad gateway"), memories(one()))
    make_store(handler, sleep=waits.append, max_retries=2, backoff=0.25).query("q", user_id=None, k=5)
    assert waits == [0.25, 0.5]
    feedback_handler = Recorder(httpx.Response(500, json={"error": {"code": "internal", "message": "boom"}}))
    with pytest.raises(BadResponse, match="500 server error: boom"):
        make_store(feedback_handler, sleep=waits.append, max_retries=2).feedback("m1", "ignored")
    assert len(feedback_handler.requests) == 1


def test_feedback_rate_limit_is_retried_because_the_store_did_not_act():
    waits: list[float] = []
    handler = Recorder(
        httpx.Response(429, json={"retry_after": 0.5}),
        httpx.Response(200, json={"importance_before": 0.5, "importance_after": 0.47, "adjustment": -0.03, "influenced_ranking": True}),
    )
    result = make_store(handler, sleep=waits.append).feedback("m 1/x", "ignored", comment="off topic")
    assert waits == [0.5]
    assert handler.requests[-1].url.raw_path == b"/v1/memory/m%201%2Fx/feedback"
    assert handler.body() == {"signal": "ignored", "comment": "off topic"}
    assert (result.importance_before, result.importance_after, result.influenced_ranking) == (0.5, 0.47, True)


def test_feedback_signal_is_checked_before_sending():
    handler = Recorder(memories())
    with pytest.raises(InvalidRequest, match="positive, negative, retrieved, ignored"):
        make_store(handler).feedback("m1", "loved")
    assert handler.requests == []


def test_get_maps_404_to_none_and_list_pages_a_store_that_ignores_paging():
    everything = [{"id": f"m{i}", "text": f"t{i}", "importance": 0.5, "usage_count": i} for i in range(10)]
    handler = Recorder(httpx.Response(404, json={"detail": "Memory not found"}), httpx.Response(200, json={"memories": everything}))
    store = make_store(handler)
    assert store.get("nope") is None
    page = store.list(user_id=None, limit=3, offset=4)
    assert [m.memory_id for m in page] == ["m4", "m5", "m6"]
    assert handler.requests[1].url.params["limit"] == "3" and handler.requests[1].url.params["offset"] == "4"


def test_retry_after_header_as_an_http_date():
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    headers = httpx.Headers({"Retry-After": "Wed, 01 Jan 2025 12:00:07 GMT"})
    assert parse_retry_after(None, headers, now=lambda: now) == 7.0
    assert parse_retry_after({"retry_after": -1}, httpx.Headers({"Retry-After": "soon"})) is None


def test_error_message_reads_every_documented_shape():
    assert error_message({"error": {"code": "c", "message": "m"}}, "") == "m [c]"
    assert error_message({"error": "c", "message": "m"}, "") == "m [c]"
    assert error_message({"detail": "d"}, "") == "d"
    assert error_message(None, "  plain\ntext ") == "plain text"
    assert error_message(None, "") == "no message"


def test_settings_are_checked_when_the_store_is_opened():
    with pytest.raises(StoreUnavailable, match="MEMORYSYNC_BASE_URL"):
        open_store(base_url="", api_key=KEY)
    with pytest.raises(AuthFailed, match="MEMORYSYNC_API_KEY"):
        open_store(base_url=BASE, api_key="")
    with pytest.raises(InvalidRequest, match="must start with http"):
        open_store(base_url="ftp://x", api_key=KEY)
    store = open_store(base_url=BASE, api_key=KEY, end_user_id="sam")
    assert KEY not in repr(store) and "sam" in repr(store)
