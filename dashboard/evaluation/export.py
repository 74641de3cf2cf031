"""A run as TREC run lines (for trec_eval or ranx) or as JSONL (ids and scores).

TREC: ``qid Q0 docid rank score tag``, one line per returned memory, in the
store's order. JSONL: one object per question with the ranked hits (id, rank,
score, raw score, breakdown, weights), latency and error; ``query`` only when
the run kept the query text (the reviewer opted in).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from dashboard.evaluation.judged_sets import JudgedSet
from dashboard.evaluation.storage import QueryOutcome, RunInfo
from dashboard.labels.export import trec_token
from dashboard.labels.model import Label


def trec_lines(info: RunInfo, outcomes: Sequence[QueryOutcome]) -> Iterator[str]:
    tag = trec_token(info.run_id)
    for outcome in outcomes:
        for position, hit in enumerate(sorted(outcome.hits, key=lambda h: h.rank), start=1):
            score = hit.score if hit.score is not None else 0.0
            yield f"{trec_token(outcome.message_id)} Q0 {trec_token(hit.memory_id)} {position} {score!r} {tag}"


def jsonl_lines(info: RunInfo, outcomes: Sequence[QueryOutcome]) -> Iterator[str]:
    for outcome in outcomes:
        row = {
            "run_id": info.run_id,
            "message_id": outcome.message_id,
            "user_id": outcome.user_id,
            "hits": [
                {
                    "memory_id": h.memory_id,
                    "rank": h.rank,
                    "score": h.score,
                    "raw_score": h.raw_score,
                    "breakdown": h.breakdown,
                    "weights": h.weights,
                }
                for h in sorted(outcome.hits, key=lambda h: h.rank)
            ],
            "latency_ms": outcome.latency_ms,
            "error": outcome.error,
        }
        if outcome.query_text is not None:
            row["query"] = outcome.query_text
        yield json.dumps(row, ensure_ascii=False)


def judged_hits(info: RunInfo, outcomes: Sequence[QueryOutcome], judged: JudgedSet) -> list[Label]:
    """Every scored hit of a run as a label row, judged by the run's judged set: the
    Calibrate page's labels. A hit the set does not grade counts as not relevant,
    as the metrics count it."""
    questions = judged.by_id()
    rows = []
    for outcome in outcomes:
        question = questions.get(outcome.message_id)
        if question is None:
            continue
        for hit in outcome.hits:
            if hit.score is None:
                continue
            value = "relevant" if question.grades.get(hit.memory_id, 0) > 0 else "not_relevant"
            rows.append(
                Label(outcome.message_id, hit.memory_id, hit.rank, hit.score, value, f"run {info.run_id}",
                      info.fingerprint, info.started_at, info.started_at)
            )
    return rows
