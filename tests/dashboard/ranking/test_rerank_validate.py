"""The validator catches each kind of violation, names where it is, and reports
all of them at once; plus property tests of the re-ranker itself."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from connectors.base import Hit
from dashboard.ranking.ranking_json import validate_ranking
from dashboard.ranking.rerank import RerankSettings, rerank

CANDIDATES = ["a", "b", "c", "d"]
VALID = {
    "query": "live-0123456789abcdef",
    "ranked_results": [
        {
            "entry_id": "b",
            "relevance_score": 0.6,
            "recency_score": 1.0,
            "composite_score": 0.72,
            "justification": "relevance 0.60 over the 0.30 threshold; 0.0 hours old, recency 1.00; composite 0.72",
            "excluded": False,
            "stale": False,
        },
        {
            "entry_id": "a",
            "relevance_score": 0.8,
            "recency_score": 0.5,
            "composite_score": 0.71,
            "justification": "relevance 0.80 over the 0.30 threshold; 3.0 days old, recency 0.50; composite 0.71",
            "excluded": False,
            "stale": False,
        },
        {
            "entry_id": "c",
            "relevance_score": 0.2,
            "recency_score": 0.99,
            "composite_score": 0.0,
            "justification": "relevance 0.20 under the 0.30 threshold, so excluded; 1.0 hours old, recency 0.99; composite 0",
            "excluded": True,
            "stale": False,
        },
        {
            "entry_id": "d",
            "relevance_score": 0.9,
            "recency_score": 0.1,
            "composite_score": 0.0,
            "justification": "relevance 0.90 over the 0.30 threshold; 10.0 days old, past the 168 h staleness cutoff, so stale; composite 0",
            "excluded": False,
            "stale": True,
        },
    ],
    "retrieval_metadata": {"total_candidates": 4, "returned_count": 2, "excluded_count": 1, "stale_count": 1},
}


def check(payload, relevance_weight=0.7, recency_weight=0.3, candidates=CANDIDATES):
    return validate_ranking(payload, candidates, relevance_weight=relevance_weight, recency_weight=recency_weight)


def mutated(change):
    payload = copy.deepcopy(VALID)
    change(payload)
    return payload


def test_the_valid_example_passes():
    assert check(VALID) == []


def test_two_decimal_rounding_of_the_composite_passes():
    # .7*.8 + .3*.5 = 0.71 exactly; 0.713 would be off by 0.003, within 0.005.
    assert check(mutated(lambda p: p["ranked_results"][1].update(composite_score=0.713))) == []


@pytest.mark.parametrize(
    "change, rule, where, words",
    [
        (lambda p: p["ranked_results"][0].update(entry_id="zzz"), "unknown_id", "ranked_results[0].entry_id", "not among the candidates"),
        (lambda p: p["ranked_results"][1].update(entry_id="b"), "duplicate_id", "ranked_results[1].entry_id", "already listed at ranked_results[0]"),
        (lambda p: p["ranked_results"][1].update(relevance_score=1.2), "out_of_range", "ranked_results[1].relevance_score", "outside [0, 1]"),
        (lambda p: p["ranked_results"][2].update(recency_score=-0.1), "out_of_range", "ranked_results[2].recency_score", "outside [0, 1]"),
        (lambda p: p["ranked_results"][1].update(composite_score=0.60), "composite", "ranked_results[1].composite_score", "0.7 × 0.8 + 0.3 × 0.5"),
        (lambda p: p["ranked_results"][2].update(composite_score=0.2), "dropped_not_zero", "ranked_results[2].composite_score", "marked excluded"),
        (lambda p: p["ranked_results"][3].update(composite_score=0.66), "dropped_not_zero", "ranked_results[3].composite_score", "marked stale"),
        (lambda p: p["ranked_results"].reverse(), "order", "ranked_results[2].composite_score", "descending composite order"),
        (lambda p: p["retrieval_metadata"].update(total_candidates=5), "metadata", "retrieval_metadata.total_candidates", "the number of candidates number 4"),
        (lambda p: p["retrieval_metadata"].update(returned_count=4), "metadata", "retrieval_metadata.returned_count", "says 4"),
        (lambda p: p["retrieval_metadata"].update(excluded_count=0), "metadata", "retrieval_metadata.excluded_count", "says 0"),
        (lambda p: p["retrieval_metadata"].update(stale_count=2), "metadata", "retrieval_metadata.stale_count", "says 2"),
        (lambda p: p.pop("retrieval_metadata"), "shape", "retrieval_metadata", "missing"),
        (lambda p: p.update(weights={"relevance": 0.7}), "shape", "weights", "unexpected field"),
        (lambda p: p["ranked_results"][0].pop("justification"), "shape", "ranked_results[0].justification", "missing"),
        (lambda p: p["ranked_results"][0].update(note="x"), "shape", "ranked_results[0].note", "unexpected field"),
        (lambda p: p["ranked_results"][0].update(excluded="no"), "shape", "ranked_results[0].excluded", "true or false"),
        (lambda p: p["ranked_results"][0].update(relevance_score="high"), "shape", "ranked_results[0].relevance_score", "must be a number"),
        (lambda p: p["ranked_results"].append(7), "shape", "ranked_results[4]", "must be an object"),
    ],
)
def test_each_violation_is_caught_and_located(change, rule, where, words):
    violations = check(mutated(change))
    matching = [v for v in violations if v.rule == rule and v.where == where]
    assert matching, violations
    assert words in str(matching[0]), str(matching[0])


def test_weights_that_do_not_sum_to_one_are_a_violation():
    [violation] = check(VALID, relevance_weight=0.6, recency_weight=0.3)
    assert violation.rule == "weights"
    assert "0.6 + recency weight 0.3 = 0.9, not 1" in violation.message
    out_of_range = check(VALID, relevance_weight=1.5, recency_weight=-0.5)
    assert {v.where for v in out_of_range} == {"weights.relevance_weight", "weights.recency_weight"}


def test_a_top_level_that_is_not_an_object_is_a_violation():
    [violation] = check(["not", "an", "object"])
    assert violation.rule == "shape" and violation.where == "(top level)"


def test_every_violation_is_named_not_just_the_first():
    def break_many(p):
        p["ranked_results"][0]["entry_id"] = "ghost"
        p["ranked_results"][1]["recency_score"] = 3.0
        p["ranked_results"][2]["composite_score"] = 0.5
        p["retrieval_metadata"]["stale_count"] = 0

    violations = check(mutated(break_many))
    rules = {(v.rule, v.where) for v in violations}
    assert ("unknown_id", "ranked_results[0].entry_id") in rules
    assert ("out_of_range", "ranked_results[1].recency_score") in rules
    assert ("dropped_not_zero", "ranked_results[2].composite_score") in rules
    assert ("metadata", "retrieval_metadata.stale_count") in rules
    # recency 3.0 also makes a's composite wrong: .7 * .8 + .3 * 3 is not 0.71.
    assert ("composite", "ranked_results[1].composite_score") in rules
    assert len(violations) == 5


# ------------------------------------------------------------------ properties

NOW = datetime(2025, 6, 1, tzinfo=UTC)

hit_strategy = st.builds(
    lambda semantic, score, age: (semantic, score, age),
    st.one_of(st.none(), st.floats(-1.0, 2.0)),
    st.one_of(st.none(), st.floats(-1.0, 2.0)),
    st.one_of(st.none(), st.floats(-10.0, 100_000.0)),
)


def make_hits(specs):
    hits = []
    for rank, (semantic, score, age) in enumerate(specs, start=1):
        hits.append(
            Hit(
                memory_id=f"m{rank}",
                rank=rank,
                text="",
                score=score,
                breakdown={} if semantic is None else {"semantic": semantic},
                created_at=None if age is None else NOW - timedelta(hours=age),
            )
        )
    return hits


@st.composite
def settings_strategy(draw):
    relevance_weight = draw(st.floats(0.0, 1.0))
    return RerankSettings(
        relevance_weight=relevance_weight,
        recency_weight=1.0 - relevance_weight,
        decay_per_hour=draw(st.floats(0.0, 5.0)),
        relevance_threshold=draw(st.floats(0.0, 1.0)),
        staleness_cutoff_hours=draw(st.one_of(st.none(), st.floats(0.5, 50_000.0))),
    )


@hypothesis_settings(max_examples=300, deadline=None)
@given(st.lists(hit_strategy, max_size=12), settings_strategy())
def test_composite_is_always_within_zero_one_and_our_json_always_validates(specs, settings):
    hits = make_hits(specs)
    result = rerank(hits, now=NOW, settings=settings)
    for entry in result.entries:
        assert 0.0 <= entry.composite_score <= 1.0
        assert 0.0 <= entry.relevance_score <= 1.0 and 0.0 <= entry.recency_score <= 1.0
        if entry.excluded or entry.stale:
            assert entry.composite_score == 0.0
    assert sorted(e.entry_id for e in result.entries) == sorted(h.memory_id for h in hits)
    assert (
        validate_ranking(
            result.to_json(),
            [h.memory_id for h in hits],
            relevance_weight=settings.relevance_weight,
            recency_weight=settings.recency_weight,
        )
        == []
    )


@hypothesis_settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.0, 1.0), st.one_of(st.none(), st.floats(0.0, 10_000.0))), max_size=12),
    st.floats(0.0, 5.0),
    st.floats(0.0, 1.0),
)
def test_with_recency_weight_zero_the_order_is_the_relevance_order(specs, decay, threshold):
    hits = make_hits([(semantic, None, age) for semantic, age in specs])
    settings = RerankSettings(relevance_weight=1.0, recency_weight=0.0, decay_per_hour=decay, relevance_threshold=threshold)
    result = rerank(hits, now=NOW, settings=settings)
    by_relevance = sorted(hits, key=lambda h: (-h.breakdown["semantic"], h.rank))
    assert [e.entry_id for e in result.entries] == [h.memory_id for h in by_relevance]
