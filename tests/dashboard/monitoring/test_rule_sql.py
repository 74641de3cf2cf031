"""The monitor's SQL for a floor file's turn rule keeps and drops exactly what the
agent side's `turn_rule.kept_mask` does, on 1,000 seeded turns for each kind of rule:
ties, single hits, hits with no score and empty turns included."""

from __future__ import annotations

import random

import duckdb
import pytest

from dashboard.monitoring.rule_sql import RuleNotInLog, decided_rows, number
from dashboard.turn_rule import TurnRule, kept_mask

FLOOR = 0.3
RULES = [
    TurnRule("largest-gap"),
    TurnRule("top-ratio", cut=0.9),
    TurnRule("learned", features=("score", "rank", "gap_to_top", "z_score", "percentile"),
             coefficients=(3.0, -0.2, -2.0, 0.5, 1.0), intercept=-1.0, cut=0.4),
]  # fmt: skip


def _turns(seed: int = 0) -> dict[str, list[float | None]]:
    rng = random.Random(seed)
    turns = {}
    for number_ in range(1000):
        # few decimals make ties (equal scores, equal drops); full precision makes none
        scores: list[float | None] = [round(rng.random(), rng.choice((2, 3, 17))) for _ in range(rng.randint(0, 10))]
        if scores and rng.random() < 0.1:
            scores[rng.randrange(len(scores))] = None  # a memory returned with no score
        turns[f"t{number_}"] = scores
    return turns


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.kind)
def test_the_sql_decides_as_the_agent_side_on_1000_turns(rule):
    turns = _turns()
    con = duckdb.connect()
    con.execute("CREATE TABLE r (message_id VARCHAR, memory_id VARCHAR, rank DOUBLE, score DOUBLE)")
    con.executemany(
        "INSERT INTO r VALUES (?, ?, ?, ?)",
        [(turn, f"m{i}", i + 1, score) for turn, scores in turns.items() for i, score in enumerate(scores)],
    )
    found = con.execute(f"SELECT message_id, memory_id, rule_kept FROM ({decided_rows('SELECT * FROM r', rule, number(FLOOR))})").fetchall()
    decided = {(turn, memory): kept for turn, memory, kept in found}
    expected = {
        (turn, f"m{i}"): kept
        for turn, scores in turns.items()
        for i, kept in enumerate(kept_mask(scores, rule, FLOOR, list(range(1, len(scores) + 1))))
    }
    assert decided == expected
    # the rule keeps some and drops some: the comparison is not all of one kind
    assert 0.1 < sum(expected.values()) / len(expected) < 0.9


def test_a_rule_reading_the_stores_parts_is_not_recomputed_from_a_log():
    rule = TurnRule("learned", features=("score", "part.semantic"), coefficients=(1.0, 1.0), intercept=0.0, cut=0.5)
    with pytest.raises(RuleNotInLog, match="part.semantic"):
        decided_rows("SELECT * FROM r", rule, number(FLOOR))
