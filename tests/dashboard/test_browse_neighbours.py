"""Browse's "stored in other words" threshold, with the real model on the demo store:
the figures docs/browse-verdict.md gives for SAME_FACT_AT and RELATED_AT hold."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from connectors.embedding import model_loader as embedding
from dashboard.browse import RELATED_AT, SAME_FACT_AT, find_text_matches, nearest_by_embedding, stored_verdict

# Hand-made rewordings of one demo memory each: (what a reviewer types, the memory).
REWORDINGS = [
    ("He has a collie called Pixel", "sam-14"),
    ("Sam's dog is a border collie named Pixel", "sam-14"),
    ("Sam lives in Lisbon, Portugal", "sam-01"),
    ("His home city is Lisbon", "sam-01"),
    ("Likes the light theme in the UI", "sam-02"),
    ("He is a backend software engineer", "sam-03"),
    ("Rides a bicycle to the office", "sam-15"),
    ("Sam's birthday is March 14", "sam-16"),
    ("Priya is allergic to peanuts", "priya-01"),
    ("Priya doesn't eat meat", "priya-02"),
    ("Her son Rohan has a sesame allergy", "priya-03"),
    ("She teaches at a primary school", "priya-04"),
    ("Does yoga every Wednesday morning", "priya-14"),
    ("She hates coriander", "priya-24"),
    ("Leo has a cat called Miso", "leo-06"),
    ("He is a freelance photographer", "leo-02"),
    ("Leo shoots weddings", "leo-03"),
    ("His lease runs out at the end of June", "leo-10"),
    ("He goes climbing twice a week", "leo-13"),
    ("Leo can't tell red from green", "leo-16"),
    ("Has two espressos each morning", "leo-18"),
]
# Facts on topics the user's memories do not touch: (text, user).
OFF_TOPIC = [
    ("His favourite pizza topping is pepperoni", "sam"),
    ("Prefers Python over Java", "sam"),
    ("Is allergic to shellfish", "sam"),
    ("Owns a red Tesla Model 3", "sam"),
    ("Sam is afraid of flying", "sam"),
    ("Melanie signed up for a pottery class", "sam"),
    ("Supports Manchester United", "priya"),
    ("Is learning to play the violin", "priya"),
    ("Works night shifts at a hospital", "priya"),
    ("Has a pet rabbit called Daisy", "priya"),
    ("Is vegan", "leo"),
]


def user_of(memory_id: str) -> str:
    return memory_id.split("-")[0]


def test_the_issues_case_is_stored_in_other_words_naming_sam_14(demo_store):
    expected = "He has a collie called Pixel"
    memories = demo_store.list(user_id="sam", limit=100)
    matches = find_text_matches(memories, expected)
    assert matches == []  # no text match: the old verdict said "never stored"
    neighbour = nearest_by_embedding(demo_store.neighbours(expected, user_id="sam", k=5), None)
    assert neighbour is not None and neighbour.memory_id == "sam-14"
    assert neighbour.similarity == pytest.approx(0.844, abs=0.005)
    verdict = stored_verdict(
        expected, matches, demo_store.query(expected, user_id="sam", k=5).hits,
        scanned=len(memories), complete=True, user_id="sam", neighbour=neighbour,
    )
    assert verdict.status == "reworded" and "sam-14" in verdict.message and "0.84" in verdict.message


def test_the_store_query_fallback_reads_the_cosine_from_the_semantic_part(demo_store):
    # A store without SupportsNeighbours: its own query's semantic part is the signal.
    # For the collie the composite score of sam-14 is about 0.64; its semantic part is the cosine.
    result = demo_store.query("He has a collie called Pixel", user_id="sam", k=5)
    neighbour = nearest_by_embedding(None, result)
    assert neighbour is not None and neighbour.memory_id == "sam-14"
    assert neighbour.similarity == pytest.approx(0.844, abs=0.005) and neighbour.similarity >= SAME_FACT_AT
    assert result.hits[0].score == pytest.approx(0.64, abs=0.02)


def test_rewordings_reach_the_thresholds_as_documented(demo_store):
    similarities = []
    for text, memory_id in REWORDINGS:
        [nearest] = demo_store.neighbours(text, user_id=user_of(memory_id), k=1)
        assert nearest.memory_id == memory_id, text  # the reworded memory is always the nearest
        similarities.append(nearest.similarity)
    assert sum(s >= SAME_FACT_AT for s in similarities) == 17
    assert sum(s >= RELATED_AT for s in similarities) == 20
    assert float(np.median(similarities)) == pytest.approx(0.72, abs=0.01)


def test_off_topic_facts_stay_under_related_at_with_a_margin(demo_store):
    nearest = [demo_store.neighbours(text, user_id=user, k=1)[0].similarity for text, user in OFF_TOPIC]
    assert max(nearest) <= 0.26 < RELATED_AT - 0.1


def test_no_two_distinct_memories_of_one_demo_user_reach_same_fact_at(demo_store):
    # Otherwise "stored in other words" would fire between two different stored facts.
    closest = 0.0
    for user in ("sam", "priya", "leo"):
        memories = demo_store.list(user_id=user, limit=100)
        vectors = embedding.encode([m.text for m in memories])
        for i, j in itertools.combinations(range(len(memories)), 2):
            closest = max(closest, float(vectors[i] @ vectors[j]))
    assert closest == pytest.approx(0.577, abs=0.005) and closest < SAME_FACT_AT
