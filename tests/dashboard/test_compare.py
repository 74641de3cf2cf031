"""dashboard.store_compare: two results lined up memory by memory, each side's floor."""

from __future__ import annotations

import pytest

from connectors.base import Hit, QueryResult, ScoreKind
from dashboard.store_compare import ABSENT, DROPPED, KEPT, compare


def result(*hits: tuple[str, str, float], kind: ScoreKind = ScoreKind.SIMILARITY, raw_kind: str | None = None) -> QueryResult:
    return QueryResult(
        query="q",
        hits=[Hit(memory_id=i, rank=n, text=t, score=s, raw_score=s) for n, (i, t, s) in enumerate(hits, start=1)],
        score_kind=kind,
        raw_score_kind=raw_kind,
    )


A = result(("m1", "Prefers light UI theme", 0.80), ("m2", "Lives in Lisbon", 0.40), ("m3", "Has a dog", 0.20))
B = result(("m2", "Lives in Lisbon", 0.70), ("m1", "Prefers light UI theme", 0.50), ("m4", "Runs on Sundays", 0.45))


def test_rows_follow_a_then_what_only_b_returned():
    comparison = compare(A, 0.35, B, 0.35)
    assert [row.key for row in comparison.rows] == ["m1", "m2", "m3", "m4"]
    m1 = comparison.rows[0]
    assert (m1.a.rank, m1.b.rank, m1.rank_change) == (1, 2, 1)
    assert comparison.rows[2].b is None and comparison.rows[2].status("b") == ABSENT
    assert comparison.rows[3].a is None and comparison.rows[3].rank_change is None
    assert comparison.returned_by_both == 2
    assert comparison.overlap == pytest.approx(2 / 4)


def test_each_side_keeps_what_clears_its_own_floor():
    comparison = compare(A, 0.35, B, 0.60)
    by_key = {row.key: row for row in comparison.rows}
    assert by_key["m1"].status("a") == KEPT and by_key["m1"].status("b") == DROPPED
    assert by_key["m2"].status("a") == KEPT and by_key["m2"].status("b") == KEPT
    assert by_key["m3"].status("a") == DROPPED
    assert comparison.keys("kept by both") == ["m2"]
    assert [row.key for row in comparison.kept_only_a] == ["m1"]
    assert comparison.kept_only_b == []
    assert by_key["m4"].verdict == "kept by neither"
    # a hit exactly at the floor is kept, as apply_floor keeps it
    assert compare(A, 0.40, B, 0.45).rows[1].status("a") == KEPT


def test_matching_by_text_lines_up_two_stores_with_different_ids():
    other = result(("uuid-9", "prefers light UI theme.", 0.79), ("uuid-7", "Lives in  Lisbon", 0.41))
    by_id = compare(A, 0.35, other, 0.35, match_by="id")
    assert by_id.returned_by_both == 0
    assert any("match by text" in note for note in by_id.notes)
    by_text = compare(A, 0.35, other, 0.35, match_by="text")
    first = by_text.rows[0]
    assert first.memory_ids == ("m1", "uuid-9") and first.verdict == "kept by both"
    assert by_text.returned_by_both == 2


def test_a_rank_scored_side_has_no_floor_and_says_so():
    ranks = result(("m1", "Prefers light UI theme", 0.01), ("m3", "Has a dog", 0.005), kind=ScoreKind.RANK)
    comparison = compare(A, 0.35, ranks, 0.35)
    assert all(row.status("b") == KEPT for row in comparison.rows if row.b)
    assert any("B's scores are ranks" in note for note in comparison.notes)


def test_different_raw_kinds_are_pointed_out():
    distances = result(("m1", "Prefers light UI theme", 0.8), raw_kind="squared l2 distance")
    comparison = compare(A, 0.35, distances, 0.35)
    assert any("squared l2 distance" in note and "A: a similarity" in note for note in comparison.notes)
    assert not any("different kinds" in n for n in compare(A, 0.35, B, 0.35).notes)


def test_duplicate_texts_count_once_at_their_best_rank():
    twice = result(("x1", "Has a dog", 0.6), ("x2", "has a dog", 0.3))
    comparison = compare(twice, 0.35, A, 0.35, match_by="text")
    dog = next(row for row in comparison.rows if row.key == "has a dog")
    assert dog.a.rank == 1 and dog.memory_ids[0] == "x1"
    assert any("twice" in note for note in comparison.notes)


def test_unknown_match_mode_is_rejected():
    with pytest.raises(ValueError, match="match_by"):
        compare(A, 0.3, B, 0.3, match_by="vibes")
