"""The LLM ranking harness: every documented rule as a test on model output, and the
retry / fallback / cache paths end to end against a loopback model server."""

from __future__ import annotations

import copy
import json
import logging
from datetime import UTC, datetime, timedelta

import pytest
from chat_model_server import ChatModelServer, Reply

from connectors.base import Hit
from dashboard.judging.client import ChatClient, ModelConfig
from dashboard.judging.ranker import (
    FALLBACK,
    RETRIED,
    VALID,
    RankCache,
    build_messages,
    check_model_ranking,
    output_schema,
    rank_with_model,
)
from dashboard.ranking.rerank import RerankSettings, rerank

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SETTINGS = RerankSettings.with_half_life(72.0, relevance_threshold=0.3, staleness_cutoff_hours=500.0)
SECRET_TEXT = "Sam is allergic to peanuts"


def hit(memory_id: str, rank: int, semantic: float, hours: float, text: str = "a memory") -> Hit:
    return Hit(
        memory_id=memory_id,
        rank=rank,
        text=text,
        score=semantic,
        breakdown={"semantic": semantic},
        created_at=NOW - timedelta(hours=hours),
    )


HITS = [
    hit("m-theme", 1, 0.80, 10.0, SECRET_TEXT),
    hit("m-city", 2, 0.55, 200.0),
    hit("m-old", 3, 0.70, 900.0),  # past the 500 h cutoff: stale
    hit("m-pizza", 4, 0.12, 1.0),  # under the 0.3 threshold: excluded
]


def correct_answer() -> dict:
    """A ranking that keeps every rule: what the formula gives for these hits."""
    return rerank(HITS, now=NOW, settings=SETTINGS, query="q").to_json()


def rules(payload) -> set[str]:
    return {v.rule for v in check_model_ranking(payload, HITS, SETTINGS, NOW)}


def entry(payload: dict, entry_id: str) -> dict:
    return next(r for r in payload["ranked_results"] if r["entry_id"] == entry_id)


def test_the_formula_answer_passes_every_rule():
    assert check_model_ranking(correct_answer(), HITS, SETTINGS, NOW) == []


def broken(change) -> dict:
    payload = copy.deepcopy(correct_answer())
    change(payload)
    return payload


def _unknown_id(p):
    entry(p, "m-city")["entry_id"] = "m-invented"


def _duplicate(p):
    p["ranked_results"][1]["entry_id"] = p["ranked_results"][0]["entry_id"]


def _out_of_range(p):
    entry(p, "m-theme")["relevance_score"] = 1.4


def _wrong_composite(p):
    entry(p, "m-theme")["composite_score"] = round(entry(p, "m-theme")["composite_score"] - 0.2, 6)


def _excluded_with_composite(p):
    entry(p, "m-pizza")["composite_score"] = 0.0 + 0.7 * 0.12 + 0.3 * entry(p, "m-pizza")["recency_score"]


def _stale_with_composite(p):
    entry(p, "m-old")["composite_score"] = 0.5


def _miscalculated_decay(p):
    e = entry(p, "m-city")  # 200 h old, half-life 72 h: recency 0.146, not 0.5
    e["recency_score"] = 0.5
    e["composite_score"] = round(0.7 * e["relevance_score"] + 0.3 * 0.5, 6)


def _not_excluded_under_threshold(p):
    e = entry(p, "m-pizza")
    e["excluded"] = False
    e["composite_score"] = round(0.7 * e["relevance_score"] + 0.3 * e["recency_score"], 6)
    p["retrieval_metadata"]["excluded_count"] -= 1
    p["retrieval_metadata"]["returned_count"] += 1
    p["ranked_results"].sort(key=lambda r: -r["composite_score"])


def _stale_not_marked(p):
    e = entry(p, "m-old")
    e["stale"] = False
    e["composite_score"] = round(0.7 * e["relevance_score"] + 0.3 * e["recency_score"], 6)
    p["retrieval_metadata"]["stale_count"] -= 1
    p["retrieval_metadata"]["returned_count"] += 1
    p["ranked_results"].sort(key=lambda r: -r["composite_score"])


def _wrong_order(p):
    p["ranked_results"][0], p["ranked_results"][1] = p["ranked_results"][1], p["ranked_results"][0]


def _counts(p):
    p["retrieval_metadata"]["returned_count"] = 4


def _missing_candidate(p):
    p["ranked_results"] = [r for r in p["ranked_results"] if r["entry_id"] != "m-pizza"]
    p["retrieval_metadata"]["excluded_count"] = 0


def _missing_field(p):
    del p["ranked_results"][0]["justification"]


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        (_unknown_id, "unknown_id"),
        (_duplicate, "duplicate_id"),
        (_out_of_range, "out_of_range"),
        (_wrong_composite, "composite"),
        (_excluded_with_composite, "dropped_not_zero"),
        (_stale_with_composite, "dropped_not_zero"),
        (_miscalculated_decay, "decay"),
        (_not_excluded_under_threshold, "threshold"),
        (_stale_not_marked, "staleness"),
        (_wrong_order, "order"),
        (_counts, "metadata"),
        (_missing_candidate, "missing_id"),
        (_missing_field, "shape"),
    ],
    ids=lambda value: value if isinstance(value, str) else value.__name__.strip("_"),
)
def test_each_rule_catches_its_violation(change, rule):
    assert rule in rules(broken(change))


def test_violations_name_their_json_path():
    found = check_model_ranking(broken(_miscalculated_decay), HITS, SETTINGS, NOW)
    decay = next(v for v in found if v.rule == "decay")
    index = next(i for i, r in enumerate(correct_answer()["ranked_results"]) if r["entry_id"] == "m-city")
    assert decay.where == f"ranked_results[{index}].recency_score"
    assert "200.0 h" in decay.message


def test_the_prompt_states_the_settings_the_clock_and_the_candidates():
    system, user = build_messages("where does sam live", HITS, SETTINGS, NOW)
    assert "under 0.3" in system["content"] and "over 500" in system["content"]
    assert "0.7 × relevance_score + 0.3 × recency_score" in system["content"]
    sent = json.loads(user["content"])
    assert sent["now"] == "2026-03-01T12:00:00+00:00" and sent["query"] == "where does sam live"
    assert [c["entry_id"] for c in sent["candidates"]] == ["m-theme", "m-city", "m-old", "m-pizza"]
    assert sent["candidates"][1]["age_hours"] == 200.0 and sent["candidates"][1]["store_relevance"] == 0.55


def test_the_output_schema_is_strict():
    schema = output_schema()
    assert schema["additionalProperties"] is False
    assert schema["properties"]["ranked_results"]["items"]["additionalProperties"] is False


# ------------------------------------------------------------------ end to end


@pytest.fixture
def server():
    with ChatModelServer() as running:
        yield running


@pytest.fixture
def client(server):
    return ChatClient(ModelConfig(base_url=server.url, model="ranker-test"), send_text=True, sleep=lambda s: None)


def run(client, tmp_path, cache=None, settings=SETTINGS):
    return rank_with_model(
        client, HITS, query="where does sam live", settings=settings, now=NOW, query_label="live-abc",
        cache=cache, read_log=tmp_path / "reads.jsonl",
    )


def test_a_valid_answer_is_used_as_it_is(server, client, tmp_path):
    server.script.append(Reply(content=json.dumps(correct_answer()), usage=(400, 120)))
    outcome = run(client, tmp_path)
    assert outcome.status == VALID and not outcome.retried and not outcome.fell_back
    assert outcome.order() == ["m-theme", "m-city", "m-old", "m-pizza"]
    assert outcome.usage.total_tokens == 520
    assert server.received[0].body["response_format"]["json_schema"]["name"] == "ranking"


def test_a_broken_answer_is_retried_with_its_violations_and_the_retry_is_used(server, client, tmp_path):
    server.script += [Reply(content=json.dumps(broken(_excluded_with_composite))), Reply(content=json.dumps(correct_answer()))]
    outcome = run(client, tmp_path)
    assert outcome.status == RETRIED and len(server.received) == 2
    retry_prompt = server.prompts()[1]
    assert "composite_score" in retry_prompt and "excluded must have composite 0" in retry_prompt
    assert "dropped_not_zero" in {v.rule for v in outcome.attempts[0].violations}
    assert outcome.attempts[1].violations == []


def test_two_broken_answers_fall_back_to_the_formula_and_log_why(server, client, tmp_path, caplog):
    server.script += [Reply(content="not json at all"), Reply(content=json.dumps(broken(_miscalculated_decay)))]
    with caplog.at_level(logging.WARNING, logger="dashboard.judging.ranker"):
        outcome = run(client, tmp_path)
    assert outcome.status == FALLBACK and len(outcome.attempts) == 2
    assert outcome.attempts[0].violations[0].rule == "json"
    assert outcome.payload == outcome.formula
    assert outcome.payload["query"] == "live-abc"  # the formula's JSON carries the message id
    assert "fell back to the formula after 2 attempt(s)" in caplog.text and "recency_score" in caplog.text


def test_a_model_that_cannot_be_reached_falls_back_without_a_second_prompt(server, client, tmp_path):
    server.script += [Reply(status=500, body={"error": "down"})] * 3
    outcome = run(client, tmp_path)
    assert outcome.status == FALLBACK and len(outcome.attempts) == 1
    assert "500" in (outcome.attempts[0].error or "")


def test_the_same_question_over_the_same_hits_is_answered_from_the_cache(server, client, tmp_path):
    cache = RankCache(tmp_path / "cache.sqlite")
    server.script += [Reply(content=json.dumps(broken(_wrong_order))), Reply(content=json.dumps(correct_answer()))]
    first = run(client, tmp_path, cache)
    second = run(client, tmp_path, cache)
    assert len(server.received) == 2  # both from the first run
    assert second.cached and not first.cached
    assert second.status == RETRIED and second.payload == first.payload
    assert len(second.messages) == 4  # the retry prompt is shown on a hit too
    assert (cache.reads, cache.hits) == (2, 1)
    # Other settings are another question: asked again.
    other = RerankSettings.with_half_life(24.0)
    server.script.append(Reply(content=json.dumps(rerank(HITS, now=NOW, settings=other).to_json())))
    third = run(client, tmp_path, cache, settings=other)
    assert not third.cached and third.status == VALID and len(server.received) == 3


def test_every_read_is_logged_with_ids_and_numbers_only(server, client, tmp_path):
    cache = RankCache(tmp_path / "cache.sqlite")
    server.script.append(Reply(content=json.dumps(correct_answer())))
    run(client, tmp_path, cache)
    run(client, tmp_path, cache)
    lines = [json.loads(line) for line in (tmp_path / "reads.jsonl").read_text().splitlines()]
    assert [line["cached"] for line in lines] == [False, True]
    assert lines[0]["candidate_count"] == 4 and lines[0]["top_k"][0]["memory_id"] == "m-theme"
    assert lines[0]["status"] == VALID and lines[0]["model"] == "ranker-test"
    written = (tmp_path / "reads.jsonl").read_text() + (tmp_path / "cache.sqlite").read_bytes().decode("latin-1")
    assert SECRET_TEXT not in written and "where does sam live" not in written
