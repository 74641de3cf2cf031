"""dashboard.browse: reading all of a user's memories, finding the expected text,
and the verdict that tells a ranking problem from a storage problem."""

from __future__ import annotations

from connectors.base import Hit, Memory
from dashboard.browse import find_text_matches, normalise_text, scan_memories, stored_verdict

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
    verdict = stored_verdict("Is allergic to peanuts", [], [hit("m4", "Has a dog", 0.21)], scanned=5, complete=True, user_id="sam")
    assert verdict.status == "not_found"
    assert "the 5 memories of sam" in verdict.message and "never stored" in verdict.message
    assert "m4 (score 0.210)" in verdict.message
    partial = stored_verdict("x", [], [], scanned=5000, complete=False, user_id="sam")
    assert "first 5,000 memories" in partial.message
