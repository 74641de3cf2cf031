"""dashboard.browse: reading all of a user's memories, finding the expected text,
and the verdict that tells a ranking problem from a storage problem."""

from __future__ import annotations

from connectors.base import Hit, Memory, Neighbour, QueryResult, ScoreKind
from dashboard.browse import (
    FROM_EMBEDDINGS,
    FROM_SCORE,
    FROM_SEMANTIC_PART,
    RELATED_AT,
    SAME_FACT_AT,
    Nearest,
    find_text_matches,
    nearest_by_embedding,
    normalise_text,
    scan_memories,
    stored_verdict,
)

MEMORIES = [
    Memory("m1", "Prefers light UI theme", "sam"),
    Memory("m2", "Lives in Lisbon with his partner", "sam"),
    Memory("m3", "Prefers the light theme in every UI", "sam"),
    Memory("m4", "Has a dog", "sam"),
    Memory("m5", "Lisbon", "sam"),
]


def test_normalise_text_ignores_case_spacing_and_outer_punctuation():
    assert normalise_text("  Prefers   LIGHT ui theme. ") == "prefers light ui theme"


def test_matches_come_best_kind_first():
    kinds = [(m.memory.memory_id, m.kind) for m in find_text_matches(MEMORIES, "prefers light UI theme!")]
    assert kinds[0] == ("m1", "exact")
    assert ("m3", "similar") in kinds
    assert "m4" not in dict(kinds)
    lisbon = [(m.memory.memory_id, m.kind) for m in find_text_matches(MEMORIES, "lives in lisbon")]
    assert lisbon == [("m2", "contains"), ("m5", "contained")]
    assert find_text_matches(MEMORIES, "   ") == []


def test_scan_reads_page_by_page_until_a_short_page():
    calls = []

    def list_page(limit, offset):
        calls.append((limit, offset))
        return MEMORIES[offset : offset + limit]

    scan = scan_memories(list_page, page_size=2)
    assert [m.memory_id for m in scan.memories] == ["m1", "m2", "m3", "m4", "m5"]
    assert scan.complete and calls == [(2, 0), (2, 2), (2, 4)]


def test_scan_stops_at_the_cap_and_says_so():
    many = [Memory(f"m{i}", f"memory {i}") for i in range(10)]
    scan = scan_memories(lambda limit, offset: many[offset : offset + limit], page_size=3, max_memories=6)
    assert len(scan.memories) == 6 and not scan.complete
    exact = scan_memories(lambda limit, offset: many[offset : offset + limit], page_size=5, max_memories=10)
    assert len(exact.memories) == 10 and exact.complete


def hit(memory_id, text, score, rank=1):
    return Hit(memory_id=memory_id, rank=rank, text=text, score=score)


def test_verdict_stored_as_written_points_at_ranking():
    matches = find_text_matches(MEMORIES, "Prefers light UI theme")
    verdict = stored_verdict("Prefers light UI theme", matches, [hit("m1", "Prefers light UI theme", 0.99)],
                             scanned=5, complete=True, user_id="sam")
    assert verdict.status == "stored"
    assert "(m1)" in verdict.message and "ranking problem" in verdict.message and "#1 with score 0.990" in verdict.message


def test_verdict_reworded_names_the_closest_text():
    matches = find_text_matches(MEMORIES, "Lives in Lisbon")
    verdict = stored_verdict("Lives in Lisbon", matches, [], scanned=5, complete=True, user_id="sam")
    assert verdict.status == "reworded" and "m2" in verdict.message and "rewritten" in verdict.message


def test_verdict_not_found_says_never_stored_and_names_the_nearest():
    far = Nearest("m4", "Has a dog", 0.21, FROM_EMBEDDINGS)
    verdict = stored_verdict(
        "Is allergic to peanuts", [], [hit("m4", "Has a dog", 0.21)], scanned=5, complete=True, user_id="sam", neighbour=far
    )
    assert verdict.status == "not_found"
    assert "the 5 memories of sam" in verdict.message and "never stored" in verdict.message
    assert "m4 (\u201cHas a dog\u201d), is at 0.210" in verdict.message
    partial = stored_verdict("x", [], [], scanned=5000, complete=False, user_id="sam")
    assert "first 5,000 memories" in partial.message


# ------------------------------------------------------------------ the neighbour signal


def test_the_nearest_by_embedding_is_the_stores_own_neighbour_when_it_has_embeddings():
    result = QueryResult("q", [hit("m2", "other", 0.9)])
    nearest = nearest_by_embedding([Neighbour("m1", "Has a dog", 0.84), Neighbour("m3", "x", 0.2)], result)
    assert nearest == Nearest("m1", "Has a dog", 0.84, FROM_EMBEDDINGS)


def test_without_embeddings_the_semantic_part_of_the_stores_hits_is_the_signal():
    hits = [hit("m1", "a", 0.7), hit("m2", "b", 0.6)]
    hits[0].breakdown, hits[1].breakdown = {"semantic": 0.3, "recency": 1.0}, {"semantic": 0.55}
    nearest = nearest_by_embedding(None, QueryResult("q", hits))
    assert (nearest.memory_id, nearest.similarity, nearest.source) == ("m2", 0.55, FROM_SEMANTIC_PART)
    mem0 = [hit("m9", "c", 0.8)]
    mem0[0].breakdown = {"semantic_score": 0.66, "bm25_score": 0.2}
    assert nearest_by_embedding(None, QueryResult("q", mem0)).similarity == 0.66
    # A vector store's score is the cosine; a rank-only score says nothing.
    assert nearest_by_embedding(None, QueryResult("q", [hit("m1", "a", 0.61)])).source == FROM_SCORE
    assert nearest_by_embedding(None, QueryResult("q", [hit("m1", "a", 3.0)], score_kind=ScoreKind.RANK)) is None
    # Components min-max normalised per result set place a memory, they do not measure it.
    assert nearest_by_embedding(None, QueryResult("q", hits), per_result_set=True) is None


def test_a_close_neighbour_is_stored_in_other_words_and_names_memory_and_similarity():
    close = Nearest("sam-14", "Has a pet dog named Pixel, a border collie", 0.844, FROM_EMBEDDINGS)
    verdict = stored_verdict("He has a collie called Pixel", [], [], scanned=22, complete=True, user_id="sam", neighbour=close)
    assert verdict.status == "reworded"
    assert "Stored in other words" in verdict.message and "sam-14" in verdict.message and "0.844" in verdict.message
    assert "never stored" not in verdict.message


def test_a_related_neighbour_is_named_and_neither_claim_is_made():
    related = Nearest("sam-20", "Plays five-a-side football", 0.45, FROM_EMBEDDINGS)
    verdict = stored_verdict("Plays the piano", [], [], scanned=22, complete=True, user_id="sam", neighbour=related)
    assert verdict.status == "related" and "sam-20" in verdict.message and "0.450" in verdict.message
    assert RELATED_AT <= 0.45 < SAME_FACT_AT


def test_without_a_similarity_signal_never_stored_is_not_claimed():
    verdict = stored_verdict("Has a collie", [], [hit("m4", "Has a dog", 1.0)], scanned=5, complete=True, user_id="sam")
    assert verdict.status == "related" and "m4" in verdict.message and "do not say how similar" in verdict.message
