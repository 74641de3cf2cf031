"""The rank lookup and feedback plans, against the loopback MemorySync server and a
private copy of the embedded demo store (feedback changes importance, so never
the shared demo file)."""

from __future__ import annotations

import sqlite3

import pytest
from demo_questions import PIZZA, THEME

from connectors.base import Hit, InvalidRequest
from connectors.embedded.store import EmbeddedStore
from connectors.http.memorysync import MemorySyncStore
from dashboard import feedback
from dashboard.ranking.rank_lookup import DEFAULT_LOOKUP_K, find_rank, lookup_k


@pytest.fixture
def memorysync(memorysync_server):
    return MemorySyncStore(memorysync_server.url, memorysync_server.api_key, end_user_id="sam", max_retries=0)


@pytest.fixture
def embedded_copy(demo_dir, tmp_path):
    copy = tmp_path / "copy.sqlite"
    source, target = sqlite3.connect(demo_dir / "demo.sqlite"), sqlite3.connect(copy)
    with target:
        source.backup(target)
    source.close()
    target.close()
    store = EmbeddedStore(copy)
    yield store
    store.close()


# ------------------------------------------------------------------ rank lookup


def test_lookup_queries_up_to_the_stores_limit_and_reports_rank_and_score(memorysync, memorysync_server):
    table = memorysync.query(PIZZA, user_id=None, k=5).hits
    target = table[0].memory_id
    lookup = find_rank(memorysync, PIZZA, target, user_id=None, table_hits=table)
    assert memorysync_server.requests_to("/memory/query")[-1].body["k"] == 50
    assert lookup.found and lookup.k == 50 and lookup.k_is_store_limit and lookup.returned == 22
    message = lookup.message()
    assert f"Memory {target} ranks #{lookup.hit.rank} of 22 with score {lookup.hit.score:.3f}" in message
    assert "k=50, the store's limit" in message
    # Min-max over 22 memories gives the same memory another score than over 5.
    assert lookup.hit.score != pytest.approx(table[0].score, abs=5e-4)
    assert "normalises scores within each result set" in message


def test_a_memory_that_was_never_stored_is_called_a_storage_problem(memorysync):
    lookup = find_rank(memorysync, THEME, "leo-03", user_id=None)  # leo's memory, asked for sam
    assert not lookup.found and lookup.exists is False
    assert "never stored (or is stored under another user)" in lookup.message()


def test_a_stored_memory_below_the_limit_is_called_a_ranking_problem(embedded_copy):
    embedded_copy.max_k = 3  # a store whose limit is 3
    last = embedded_copy.query(THEME, user_id="sam", k=22).hits[-1].memory_id
    lookup = find_rank(embedded_copy, THEME, last, user_id="sam")
    assert lookup.exists is True and lookup.returned == 3
    assert lookup.message() == (
        f"Memory {last} is stored but not among the top 3 results (queried with k=3, the store's limit): "
        "a ranking problem, not a storage one."
    )


def test_a_store_without_a_limit_is_queried_with_the_default_depth(embedded_copy):
    assert lookup_k(embedded_copy) == (DEFAULT_LOOKUP_K, False)
    lookup = find_rank(embedded_copy, THEME, "sam-02", user_id="sam")
    assert lookup.hit.rank == 1 and "memlens's lookup depth" in lookup.message()


def test_a_failed_existence_check_is_reported_not_raised(memorysync, memorysync_server):
    memorysync_server.inject(503, {"error": {"code": "down", "message": "maintenance"}}, route="/memory/ghost")
    lookup = find_rank(memorysync, THEME, "ghost", user_id=None)
    assert lookup.exists is None and "could not be checked" in lookup.message() and "maintenance" in lookup.message()


def test_lookup_needs_an_id_and_a_query(memorysync):
    with pytest.raises(InvalidRequest, match="Enter a memory id"):
        find_rank(memorysync, THEME, "  ", user_id=None)
    with pytest.raises(InvalidRequest, match="Run a query first"):
        find_rank(memorysync, "", "sam-01", user_id=None)


# ------------------------------------------------------------------ feedback


def hit(memory_id: str, score: float) -> Hit:
    return Hit(memory_id=memory_id, rank=1, text="t", score=score)


def test_floor_plan_sends_retrieved_for_kept_and_ignored_for_dropped():
    plan = feedback.plan_from_floor([hit("a", 0.8)], [hit("b", 0.1), hit("c", 0.05)])
    assert [(i.memory_id, i.signal) for i in plan] == [("a", "retrieved"), ("b", "ignored"), ("c", "ignored")]


def test_negative_plan_needs_a_row_and_a_comment():
    with pytest.raises(ValueError, match="needs a comment"):
        feedback.plan_negative("a", "  ")
    with pytest.raises(ValueError, match="Choose the row"):
        feedback.plan_negative("", "wrong")
    assert feedback.plan_negative(" a ", " wrong city ") == [feedback.FeedbackItem("a", "negative", "wrong city")]


def test_sending_to_memorysync_reports_importance_before_and_after(memorysync, memorysync_server):
    items = [feedback.FeedbackItem("sam-04", "retrieved"), feedback.FeedbackItem("sam-06", "negative", "stale")]
    outcomes = feedback.send(memorysync, items, user_id="sam")
    assert [o.error for o in outcomes] == [None, None]
    up, down = (o.result for o in outcomes)
    assert up.importance_after > up.importance_before and down.importance_after < down.importance_before
    assert memorysync_server.requests_to("/memory/sam-06/feedback")[-1].headers["X-End-User-ID"] == "sam"
    assert outcomes[1].row()["importance after"] == down.importance_after


def test_one_bad_id_does_not_stop_the_batch_but_an_auth_failure_does(memorysync, memorysync_server):
    outcomes = feedback.send(memorysync, [feedback.FeedbackItem("nope", "ignored"), feedback.FeedbackItem("sam-07", "ignored")])
    assert "NotFound" in outcomes[0].error and outcomes[1].result is not None
    memorysync_server.inject(401, {"error": {"code": "invalid_api_key", "message": "key revoked"}})
    outcomes = feedback.send(memorysync, [feedback.FeedbackItem("sam-07", "ignored"), feedback.FeedbackItem("sam-08", "ignored")])
    assert "AuthFailed" in outcomes[0].error
    assert outcomes[1].error == "not sent: AuthFailed on sam-07" and outcomes[1].result is None
    assert len(memorysync_server.requests_to("/memory/sam-08")) == 0


def test_the_embedded_store_takes_the_same_feedback(embedded_copy):
    assert feedback.supports_feedback(embedded_copy)
    before = embedded_copy.get("sam-02").importance
    outcomes = feedback.send(embedded_copy, [feedback.FeedbackItem("sam-02", "ignored")], user_id="sam")
    assert outcomes[0].result.importance_before == before
    assert embedded_copy.get("sam-02").importance == outcomes[0].result.importance_after < before
