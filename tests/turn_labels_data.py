"""Seeded labels where the turn carries the signal (issue 54): each turn's scores are
shifted by its own offset, so one floor for all turns separates relevant from
irrelevant hits poorly, while a hit's place among its turn's scores separates them
well. Every hit of a turn is labelled (a judged set or a labelling session does so).
Shared by the turn-rule tests and benchmarks/turn_rule.py."""

from __future__ import annotations

import json

import numpy as np


def signal_turns(turns: int = 400, k: int = 10, seed: int = 7, offset: float = 0.15, noise: float = 0.03) -> list[dict]:
    """Label rows (the export format) for `turns` turns of `k` hits, in rank order.
    70% of turns hold one or two relevant hits, about 0.17 above the turn's others."""
    rng = np.random.default_rng(seed)
    rows = []
    for turn in range(turns):
        shift = rng.normal(0, offset)
        relevant = int(rng.integers(1, 3)) if rng.random() < 0.7 else 0
        # clipped into memlens's score range, 0 to 1 (a calibration refuses scores outside it)
        scores = [min(0.999, max(0.001, shift + (0.62 if hit < relevant else 0.45) + rng.normal(0, noise))) for hit in range(k)]
        order = sorted(range(k), key=lambda hit: -scores[hit])
        for rank, hit in enumerate(order, start=1):
            rows.append(
                {
                    "message_id": f"turn-{turn:05d}",
                    "memory_id": f"m-{turn}-{hit}",
                    "rank": rank,
                    "score": round(float(scores[hit]), 6),
                    "label": "relevant" if hit < relevant else "not_relevant",
                    "store": "embedded:synthetic",
                }
            )
    return rows


def as_jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)
