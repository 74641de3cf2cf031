"""Re-ranking rules from hand-computed cases: weights, exclusion, staleness, ties,
the justification sentence, the ranking JSON and the review flags."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest

from connectors.base import Hit
from dashboard.ranking.ranking_json import compare_rankings, parse_ranking_json, validate_ranking
from dashboard.ranking.rerank import RerankSettings, decay_from_half_life, rerank
from dashboard.ranking.review import review_flags

NOW = datetime(2025, 1, 10, 12, 0, tzinfo=UTC)


def hit(memory_id, rank, *, semantic=None, score=None, age_hours=None, breakdown=None):
    parts = dict(breakdown or {})
    if semantic is not None:
        parts["semantic"] = semantic
    return Hit(
        memory_id=memory_id,
        rank=rank,
        text=f"text of {memory_id}",
        score=score,
        breakdown=parts,
        created_at=None if age_hours is None else NOW - timedelta(hours=age_hours),
    )


def by_id(result):
    return {e.entry_id: e for e in result.entries}


# Four candidates in the store's order, with a 72 h half-life:
#   a  semantic 0.8, 72 h old  -> recency 0.5, composite .7*.8 + .3*.5 = 0.71
#   b  semantic 0.6, brand new -> recency 1.0, composite .7*.6 + .3*1  = 0.72
#   c  semantic 0.2            -> under the 0.3 threshold: excluded
#   d  semantic 0.9, 216 h old -> recency 0.125; past a 168 h cutoff: stale
CANDIDATES = [
    hit("a", 1, semantic=0.8, score=0.9, age_hours=72),
    hit("b", 2, semantic=0.6, score=0.5, age_hours=0),
    hit("c", 3, semantic=0.2, score=0.4, age_hours=1),
    hit("d", 4, semantic=0.9, score=0.3, age_hours=216),
]


def test_default_weights_recency_lifts_the_fresh_memory_over_the_closer_match():
    result = rerank(CANDIDATES, now=NOW, settings=RerankSettings.with_half_life(72))
    entries = by_id(result)
    assert entries["a"].recency_score == pytest.approx(0.5)
    assert entries["a"].composite_score == pytest.approx(0.71)
    assert entries["b"].recency_score == pytest.approx(1.0)
    assert entries["b"].composite_score == pytest.approx(0.72)
    # No staleness cutoff: d is returned; three half-lives old, .7*.9 + .3*.125 = 0.6675.
    assert entries["d"].recency_score == pytest.approx(0.125)
    assert entries["d"].composite_score == pytest.approx(0.7 * 0.9 + 0.3 * 0.125)
    assert [e.entry_id for e in result.entries] == ["b", "a", "d", "c"]
    assert entries["b"].move == 1 and entries["a"].move == -1 and entries["d"].move == 1 and entries["c"].move == -1


@pytest.mark.parametrize(
    "relevance_weight, expected_order, expected_b",
    [
        (1.0, ["d", "a", "b", "c"], 0.6),  # relevance only: the store's semantic order
        (0.5, ["b", "a", "d", "c"], 0.8),  # .5*.6 + .5*1
        (0.0, ["b", "a", "d", "c"], 1.0),  # recency only: newest first
    ],
)
def test_weights_change_the_composite_and_the_order(relevance_weight, expected_order, expected_b):
    settings = RerankSettings.with_half_life(72, relevance_weight=relevance_weight, recency_weight=1 - relevance_weight)
    result = rerank(CANDIDATES, now=NOW, settings=settings)
    assert [e.entry_id for e in result.entries] == expected_order
    assert by_id(result)["b"].composite_score == pytest.approx(expected_b)


def test_exclusion_below_threshold_zeroes_the_composite_and_sinks_the_entry():
    result = rerank(CANDIDATES, now=NOW, settings=RerankSettings(relevance_threshold=0.65))
    entries = by_id(result)
    assert {e.entry_id for e in result.entries if e.excluded} == {"b", "c"}
    assert entries["b"].composite_score == 0.0 and entries["c"].composite_score == 0.0
    # Excluded entries follow every returned one, the more relevant first.
    assert [e.entry_id for e in result.entries][-2:] == ["b", "c"]
    assert entries["b"].justification.startswith("relevance 0.60 under the 0.65 threshold, so excluded")


def test_relevance_exactly_at_the_threshold_is_kept():
    result = rerank([hit("x", 1, semantic=0.5, age_hours=0)], now=NOW, settings=RerankSettings(relevance_threshold=0.5))
    assert not result.entries[0].excluded
    assert result.entries[0].justification.startswith("relevance 0.50 at the 0.50 threshold")


def test_staleness_cutoff_marks_old_entries_stale_with_composite_zero():
    settings = RerankSettings(staleness_cutoff_hours=168)
    result = rerank(CANDIDATES, now=NOW, settings=settings)
    d = by_id(result)["d"]
    assert d.stale and not d.excluded and d.composite_score == 0.0
    assert d.justification == (
        "relevance 0.90 over the 0.30 threshold; 9.0 days old, past the 168 h staleness cutoff, so stale; composite 0"
    )
    assert [e.entry_id for e in result.entries] == ["b", "a", "d", "c"]  # dropped ones by relevance
    assert result.metadata() == {"total_candidates": 4, "returned_count": 2, "excluded_count": 1, "stale_count": 1}


def test_an_entry_exactly_at_the_cutoff_is_not_stale():
    result = rerank([hit("x", 1, semantic=0.9, age_hours=168)], now=NOW, settings=RerankSettings(staleness_cutoff_hours=168))
    assert not result.entries[0].stale


def test_excluded_and_stale_at_once_count_in_both():
    result = rerank(
        [hit("x", 1, semantic=0.1, age_hours=500)], now=NOW, settings=RerankSettings(staleness_cutoff_hours=24)
    )
    assert result.metadata() == {"total_candidates": 1, "returned_count": 0, "excluded_count": 1, "stale_count": 1}


def test_a_composite_tie_goes_to_the_higher_relevance_then_the_store_order():
    # 0.5/0.5 weights: e (relevance 1.0, age unknown -> recency 0) and f (relevance 0,
    # brand new -> recency 1) both score exactly 0.5; g and h tie on everything.
    settings = RerankSettings(relevance_weight=0.5, recency_weight=0.5, relevance_threshold=0.0)
    hits = [
        hit("f", 1, semantic=0.0, age_hours=0),
        hit("e", 2, semantic=1.0),
        hit("h", 3, semantic=0.2, age_hours=0),
        hit("g", 4, semantic=0.2, age_hours=0),
    ]
    result = rerank(hits, now=NOW, settings=settings)
    assert by_id(result)["e"].composite_score == by_id(result)["f"].composite_score == 0.5
    assert [e.entry_id for e in result.entries] == ["h", "g", "e", "f"]  # h, g: 0.6; store order breaks their tie


def test_relevance_falls_back_to_the_score_and_reports_it():
    semantic_only = rerank([hit("a", 1, semantic=0.4, score=0.9, age_hours=0)], now=NOW)
    assert semantic_only.entries[0].relevance_score == 0.4
    assert semantic_only.relevance_source == "semantic"
    score_only = rerank([hit("a", 1, score=0.9, age_hours=0)], now=NOW)
    assert score_only.entries[0].relevance_score == 0.9
    assert score_only.relevance_source == "score"
    mixed = rerank([hit("a", 1, semantic=0.4, age_hours=0), hit("b", 2, score=0.7, age_hours=0)], now=NOW)
    assert mixed.relevance_source == "mixed"


@pytest.mark.parametrize(
    "component",
    [
        "semantic",  # embedded store, MemorySync, Mem0 Platform's score_breakdown
        "semantic_score",  # Mem0 library's score_details
        "vector",  # MemorySync's raw cosine in scoring_breakdown
    ],
)
def test_relevance_reads_the_semantic_component_under_each_stores_own_name(component):
    """A hybrid score (Mem0 divides semantic + BM25 by 2) is not the relevance: a
    hit whose words match well but whose blended score is low must not be excluded."""
    result = rerank([hit("a", 1, score=0.25, age_hours=0, breakdown={component: 0.5})], now=NOW)
    entry = result.entries[0]
    assert entry.relevance_score == 0.5 and result.relevance_source == "semantic"
    assert not entry.excluded and entry.composite_score == pytest.approx(0.7 * 0.5 + 0.3 * 1.0)


def test_the_conventional_semantic_name_wins_over_an_alias():
    result = rerank([hit("a", 1, semantic=0.4, score=0.9, age_hours=0, breakdown={"vector": 0.8})], now=NOW)
    assert result.entries[0].relevance_score == 0.4


def test_a_cosine_outside_zero_one_is_clamped():
    result = rerank([hit("a", 1, score=-0.3, age_hours=0), hit("b", 2, score=1.2, age_hours=0)], now=NOW)
    assert {e.entry_id: e.relevance_score for e in result.entries} == {"a": 0.0, "b": 1.0}


def test_no_score_at_all_is_excluded_with_a_reason():
    result = rerank([hit("a", 1, age_hours=0)], now=NOW, settings=RerankSettings(relevance_threshold=0.0))
    entry = result.entries[0]
    assert entry.excluded and entry.relevance_source == "none"
    assert entry.justification.startswith("no relevance score from the store, so excluded")


def test_unknown_age_earns_no_recency_and_says_so():
    result = rerank([hit("a", 1, semantic=0.8)], now=NOW)
    entry = result.entries[0]
    assert entry.recency_score == 0.0 and not entry.stale
    assert entry.composite_score == pytest.approx(0.56)
    assert entry.justification == "relevance 0.80 over the 0.30 threshold; age unknown, recency 0.00; composite 0.56"


def test_a_timestamp_in_the_future_counts_as_new():
    result = rerank([hit("a", 1, semantic=0.8, age_hours=-5)], now=NOW)
    assert result.entries[0].recency_score == 1.0
    assert result.entries[0].age_hours == 0.0


def test_decay_per_hour_and_half_life_agree():
    assert decay_from_half_life(24) == pytest.approx(math.log(2) / 24)
    by_rate = rerank([hit("a", 1, semantic=0.8, age_hours=10)], now=NOW, settings=RerankSettings(decay_per_hour=0.1))
    assert by_rate.entries[0].recency_score == pytest.approx(math.exp(-1.0))
    assert RerankSettings(decay_per_hour=0.1).half_life_hours == pytest.approx(math.log(2) / 0.1)
    assert RerankSettings(decay_per_hour=0.0).half_life_hours == math.inf


def test_the_justification_reads_like_the_issue_example():
    # 3.2 days old with recency 0.31: decay chosen so that exp(-d * 76.8) = 0.31.
    decay = -math.log(0.31) / 76.8
    settings = RerankSettings(decay_per_hour=decay, relevance_threshold=0.5)
    [entry] = rerank([hit("a", 1, semantic=0.8, age_hours=76.8)], now=NOW, settings=settings).entries
    assert entry.justification == "relevance 0.80 over the 0.50 threshold; 3.2 days old, recency 0.31; composite 0.65"
    [young] = rerank([hit("a", 1, semantic=0.8, age_hours=5)], now=NOW, settings=settings).entries
    assert "5.0 hours old" in young.justification


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(relevance_weight=0.6, recency_weight=0.3), "relevance_weight + recency_weight"),
        (dict(relevance_weight=1.2, recency_weight=-0.2), "relevance_weight"),
        (dict(relevance_threshold=1.5), "relevance_threshold"),
        (dict(decay_per_hour=-1.0), "decay_per_hour"),
        (dict(staleness_cutoff_hours=0), "staleness_cutoff_hours"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field.replace("+", r"\+")):
        RerankSettings(**kwargs)


def test_json_has_exactly_the_domain_shape_and_passes_validation():
    result = rerank(CANDIDATES, now=NOW, settings=RerankSettings(staleness_cutoff_hours=168), query="where?")
    payload = result.to_json()
    assert set(payload) == {"query", "ranked_results", "retrieval_metadata"}
    assert payload["query"] == "where?"
    assert all(
        set(row) == {"entry_id", "relevance_score", "recency_score", "composite_score", "justification", "excluded", "stale"}
        for row in payload["ranked_results"]
    )
    assert set(payload["retrieval_metadata"]) == {"total_candidates", "returned_count", "excluded_count", "stale_count"}
    assert json.loads(json.dumps(payload)) == payload
    assert validate_ranking(payload, [h.memory_id for h in CANDIDATES], relevance_weight=0.7, recency_weight=0.3) == []
    assert result.to_json(query="live-123")["query"] == "live-123"


def test_review_flags_weak_top_and_near_ties():
    # Top composite 0.26 < 0.4, and two returned entries within 0.05.
    weak = {
        "ranked_results": [
            {"entry_id": "a", "composite_score": 0.26, "excluded": False, "stale": False},
            {"entry_id": "b", "composite_score": 0.22, "excluded": False, "stale": False},
            {"entry_id": "c", "composite_score": 0.0, "excluded": True, "stale": False},
        ]
    }
    flags = review_flags(weak)
    assert any("top composite is 0.26, under 0.40" in f for f in flags)
    assert any("2 entries lie within 0.05" in f and "a, b" in f for f in flags)
    clear = {
        "ranked_results": [
            {"entry_id": "a", "composite_score": 0.9, "excluded": False, "stale": False},
            {"entry_id": "b", "composite_score": 0.5, "excluded": False, "stale": False},
        ]
    }
    assert review_flags(clear) == []
    # Exactly 0.05 apart counts as "within" despite floating point.
    edge = {"ranked_results": [{"entry_id": "a", "composite_score": 0.65}, {"entry_id": "b", "composite_score": 0.6}]}
    assert any("within 0.05" in f for f in review_flags(edge))
    assert review_flags({"ranked_results": []}) == ["There are no ranked results to review."]


def test_review_flags_group_several_close_entries_once():
    rows = [{"entry_id": i, "composite_score": s} for i, s in zip("abcd", (0.80, 0.78, 0.76, 0.50), strict=True)]
    [flag] = review_flags({"ranked_results": rows})
    assert flag.startswith("3 entries lie within 0.05") and "a, b, c" in flag


def test_parse_ranking_json_accepts_code_fences_and_names_the_error_position():
    payload, error = parse_ranking_json('```json\n{"query": "q"}\n```')
    assert error is None and payload == {"query": "q"}
    payload, error = parse_ranking_json('{\n  "query": "q",\n}')
    assert payload is None and "line 3" in error
    assert parse_ranking_json("   ")[1] == "The pasted text is empty."


def test_compare_rankings_lines_up_ids_ranks_and_statuses():
    ours = rerank(CANDIDATES, now=NOW).to_json()
    theirs = json.loads(json.dumps(ours))
    theirs["ranked_results"].reverse()
    theirs["ranked_results"][0]["excluded"] = False  # c, returned by them
    theirs["ranked_results"].append({"entry_id": "zzz", "composite_score": 0.1})
    comparison = compare_rankings(ours, theirs)
    rows = {r.entry_id: r for r in comparison.rows}
    assert not comparison.same_order and not comparison.same_top
    assert rows["b"].ours_rank == 1 and rows["b"].theirs_rank == 4
    assert rows["c"].ours_status == "excluded" and rows["c"].theirs_status == "returned"
    assert comparison.status_disagreements == 1
    assert comparison.only_theirs == ["zzz"] and comparison.only_ours == []
    assert "a different order" in comparison.summary()
    same = compare_rankings(ours, json.loads(json.dumps(ours)))
    assert same.same_order and same.same_top and same.max_composite_difference == 0.0
