"""A run as TREC run lines (for trec_eval or ranx) or as JSONL (ids and scores).

TREC: ``qid Q0 docid rank score tag``, one line per returned memory, in the
store's order. JSONL: one object per question with the ranked hits (id, rank,
score, raw score, breakdown, weights), latency and error; ``query`` only when
the run kept the query text (the reviewer opted in); ``as_of`` when the run ranked
at a set time (``memlens eval --as-of``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from dashboard.calibration.label_files import LabelFile, from_labels
from dashboard.database.model import Label
from dashboard.database.runs import QueryOutcome, RunInfo
from dashboard.evaluation.judged_sets import JudgedSet
from dashboard.labels.export import trec_token


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
        if info.as_of:
            row["as_of"] = info.as_of  # the clock the store ranked at
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


def judged_label_file(info: RunInfo, outcomes: Sequence[QueryOutcome], judged: JudgedSet) -> LabelFile:
    """A run's judged hits as calibration input (``judged_hits`` as label rows), with
    what the judged set knows and labels alone do not: each row's user and tag (its
    question's tags, joined by "+"), for floors per segment; and which questions can
    be answered at all, so a question whose hits hold no relevant memory is counted as
    a retrieval miss, not as a turn with nothing to give."""
    questions = judged.by_id()
    labels = from_labels(judged_hits(info, outcomes, judged), source=f"run {info.run_id}")
    for row in labels.rows:
        question = questions[row.message_id or ""]
        row.user = question.user_id
        row.tag = "+".join(question.tags) or None
    labels.answerable = {q.message_id: q.answerable for q in judged.questions}
    return labels
