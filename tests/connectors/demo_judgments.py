"""The demo judgments (demo_data/queries.jsonl) applied to any store: label each
hit of every demo query by whether its demo id is among the query's relevant ids,
and let dashboard.calibration.sweep choose the floor from those labels."""

from __future__ import annotations

from collections.abc import Callable

from demo_questions import demo_queries, query_text

from connectors.base import Hit, MemoryStore
from dashboard.calibration.sweep import labelled_scores, recommend

__all__ = ["calibrated_floor", "demo_queries", "query_text", "relevant_ids"]
K = 5


def relevant_ids(message_id: str) -> list[str]:
    return next(q["relevant"] for q in demo_queries() if q["message_id"] == message_id)


def calibrated_floor(store: MemoryStore, demo_id: Callable[[Hit], str]) -> float:
    """The floor dashboard.calibration.sweep recommends for `store`'s own scores on the
    demo queries, labelled by the demo judgments (`demo_id` reads a hit's demo id)."""
    scores, labels, turns = [], [], []
    for q in demo_queries():
        for hit in store.query(q["query"], user_id=q["user_id"], k=K).hits:
            scores.append(hit.score)
            labels.append("relevant" if demo_id(hit) in q["relevant"] else "not_relevant")
            turns.append(q["message_id"])
    return recommend(labelled_scores(scores, labels, turns), resamples=0).floor
