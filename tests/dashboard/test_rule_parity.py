"""One decision per hit wherever it is made (issue 54): for 1,000 seeded turns, what
Inspect shows under a floor file (dashboard/hit_decisions.decide_hits), what the agent
side keeps (memlens.memory_from_hits with that config) and turn_rule.kept_mask keep
and drop the same hits, for each rule kind and for a plain floor."""

from __future__ import annotations

import random

import pytest

import memlens
from connectors.base import Hit
from connectors.common.score_spaces import AS_SENT, ScoreSpace
from dashboard.hit_decisions import decide_hits
from dashboard.turn_rule import FEATURES, LARGEST_GAP, LEARNED, TOP_RATIO, TurnRule, kept_mask

SPACE = ScoreSpace("embedded", AS_SENT)
FLOOR = 0.35
RULES = {
    "floor": None,
    LEARNED: TurnRule(LEARNED, FEATURES, (6.0, -0.2, -9.0, 1.1, 1.5), -3.0, 0.4),
    LARGEST_GAP: TurnRule(LARGEST_GAP),
    TOP_RATIO: TurnRule(TOP_RATIO, cut=0.85),
}


def seeded_turns(count: int = 1000, seed: int = 54) -> list[list[float | None]]:
    """Each turn's scores in the store's order: 1 to 10 hits, mostly falling with rank,
    ties and an unscored hit now and then, and one turn in five scoring all under the floor."""
    rng = random.Random(seed)
    turns = []
    for _ in range(count):
        size = rng.randint(1, 10)
        top = rng.uniform(0.05, FLOOR - 0.01) if rng.random() < 0.2 else rng.uniform(0.3, 0.95)
        scores: list[float | None] = []
        for _hit in range(size):
            score = round(max(0.0, top - rng.uniform(0.0, 0.25)), rng.choice((2, 6)))  # two decimals: ties
            scores.append(None if rng.random() < 0.03 else score)
        turns.append(scores)
    return turns


@pytest.mark.parametrize("name", list(RULES))
def test_the_page_the_agent_side_and_kept_mask_keep_the_same_hits(name):
    rule = RULES[name]
    config = memlens.FloorConfig(floor=FLOOR, score_space=SPACE, rule=rule)
    turns = seeded_turns()
    kept_somewhere = dropped_somewhere = empty_turns = 0
    for number, scores in enumerate(turns):
        ids = [f"t{number}-m{i}" for i in range(len(scores))]
        hits = [Hit(memory_id, rank, "", score) for rank, (memory_id, score) in enumerate(zip(ids, scores, strict=True), start=1)]
        page = decide_hits(hits, FLOOR, rule)
        agent = memlens.memory_from_hits(
            [{"id": memory_id, "text": "", "score": score} for memory_id, score in zip(ids, scores, strict=True)],
            store_kind="embedded",
            floor=config,
        )
        mask = kept_mask(scores, rule, FLOOR)
        expected = [memory_id for memory_id, keep in zip(ids, mask, strict=True) if keep]
        assert [hit.memory_id for hit in page.kept] == expected, (name, scores)
        assert [hit.memory_id for hit in agent.kept] == expected, (name, scores)
        assert [said.kept for said in page.decisions] == mask
        kept_somewhere += len(expected)
        dropped_somewhere += len(ids) - len(expected)
        empty_turns += not expected
    # the turns exercise both outcomes, and turns left with no memory (all low, or cut away)
    assert kept_somewhere > 500 and dropped_somewhere > 500 and empty_turns >= 50
