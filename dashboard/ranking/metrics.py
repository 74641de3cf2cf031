"""Retrieval quality over judged queries: the store's order against a re-ranked one.

Standard IR metrics, with the definitions ranx and trec_eval use, so the figures
can be checked against either:

    precision@k   relevant memories in the top k, divided by k
    recall@k      relevant memories in the top k, divided by all relevant ones
    MRR           1 / rank of the first relevant memory (0 when none)
    nDCG@k        DCG with gain = grade / log2(rank + 1), over the ideal DCG
    hit rate@k    1 when any relevant memory is in the top k, else 0

They are averaged over answerable queries only (recall and nDCG have no meaning
when nothing relevant exists). Two more figures say what reaches the prompt:

    returned precision@k  of the memories actually returned in the top k (a
                          re-ranker returns nothing excluded or stale), the share
                          that is relevant; undefined when nothing is returned
    abstention rate       of the unanswerable queries, the share where nothing
                          was returned at all

Plus staleness detection: old entries with high relevance (stale but convincing).
Pure functions: no Streamlit, no store calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from connectors.base import Hit
from dashboard.judged import JudgedQuestion
from dashboard.ranking.rerank import RerankResult, RerankSettings, rerank

DEFAULT_DEPTH = 3
PRECISION_TARGET = 0.85  # docs/domain.md, "Ranking by relevance and recency": top-3 precision above 0.85

Grades = Mapping[str, int]  # memory id -> grade; > 0 is relevant


def _relevant(grades: Grades) -> dict[str, int]:
    return {memory_id: grade for memory_id, grade in grades.items() if grade > 0}


def _check_k(k: int) -> None:
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a whole number >= 1, got {k!r}")


def precision_at_k(ranking: Sequence[str], grades: Grades, k: int) -> float:
    _check_k(k)
    relevant = _relevant(grades)
    return sum(1 for memory_id in ranking[:k] if memory_id in relevant) / k


def recall_at_k(ranking: Sequence[str], grades: Grades, k: int) -> float | None:
    _check_k(k)
    relevant = _relevant(grades)
    if not relevant:
        return None
    return sum(1 for memory_id in ranking[:k] if memory_id in relevant) / len(relevant)


def reciprocal_rank(ranking: Sequence[str], grades: Grades, k: int | None = None) -> float:
    relevant = _relevant(grades)
    for position, memory_id in enumerate(ranking[:k] if k else ranking, start=1):
        if memory_id in relevant:
            return 1.0 / position
    return 0.0


def ndcg_at_k(ranking: Sequence[str], grades: Grades, k: int) -> float | None:
    _check_k(k)
    relevant = _relevant(grades)
    if not relevant:
        return None
    dcg = sum(relevant.get(memory_id, 0) / math.log2(i + 1) for i, memory_id in enumerate(ranking[:k], start=1))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(grade / math.log2(i + 1) for i, grade in enumerate(ideal, start=1))
    return dcg / idcg


def hit_rate_at_k(ranking: Sequence[str], grades: Grades, k: int) -> float:
    _check_k(k)
    relevant = _relevant(grades)
    return 1.0 if any(memory_id in relevant for memory_id in ranking[:k]) else 0.0


def returned_precision_at_k(ranking: Sequence[str], grades: Grades, k: int) -> float | None:
    """Of what was returned in the top k, the share that is relevant: the precision
    of the prompt's memory block. None when nothing was returned."""
    _check_k(k)
    top = ranking[:k]
    if not top:
        return None
    relevant = _relevant(grades)
    return sum(1 for memory_id in top if memory_id in relevant) / len(top)


# ------------------------------------------------------------------ per query and averaged


@dataclass(frozen=True)
class QueryMetrics:
    message_id: str
    answerable: bool
    top: tuple[str, ...]  # the ids in the top k, in order
    returned_count: int
    precision: float
    recall: float | None
    reciprocal_rank: float
    ndcg: float | None
    hit: float
    returned_precision: float | None


def evaluate_ranking(message_id: str, ranking: Sequence[str], grades: Grades, k: int) -> QueryMetrics:
    answerable = bool(_relevant(grades))
    return QueryMetrics(
        message_id=message_id,
        answerable=answerable,
        top=tuple(ranking[:k]),
        returned_count=len(ranking),
        precision=precision_at_k(ranking, grades, k),
        recall=recall_at_k(ranking, grades, k),
        reciprocal_rank=reciprocal_rank(ranking, grades, k),
        ndcg=ndcg_at_k(ranking, grades, k),
        hit=hit_rate_at_k(ranking, grades, k),
        returned_precision=returned_precision_at_k(ranking, grades, k),
    )


@dataclass(frozen=True)
class Summary:
    queries: int
    answerable: int
    precision: float | None  # mean over answerable queries
    recall: float | None
    mrr: float | None
    ndcg: float | None
    hit_rate: float | None
    returned_precision: float | None  # mean over queries that returned something
    queries_with_returns: int
    abstention_rate: float | None  # unanswerable queries that returned nothing


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def summarise(per_query: Sequence[QueryMetrics]) -> Summary:
    answerable = [m for m in per_query if m.answerable]
    unanswerable = [m for m in per_query if not m.answerable]
    with_returns = [m for m in per_query if m.returned_precision is not None]
    return Summary(
        queries=len(per_query),
        answerable=len(answerable),
        precision=_mean(m.precision for m in answerable),
        recall=_mean(m.recall for m in answerable),
        mrr=_mean(m.reciprocal_rank for m in answerable),
        ndcg=_mean(m.ndcg for m in answerable),
        hit_rate=_mean(m.hit for m in answerable),
        returned_precision=_mean(m.returned_precision for m in with_returns),
        queries_with_returns=len(with_returns),
        abstention_rate=_mean(1.0 if m.returned_count == 0 else 0.0 for m in unanswerable),
    )


# ------------------------------------------------------------------ store order vs re-ranked


@dataclass(frozen=True)
class EvalCase:
    """One judged query and the candidates the store returned for it."""

    message_id: str
    hits: list[Hit]
    grades: dict[str, int]
    user_id: str | None = None
    query: str | None = None  # shown only where the text is not private (the demo)


@dataclass(frozen=True)
class CaseResult:
    case: EvalCase
    reranked: RerankResult
    store: QueryMetrics
    rerank: QueryMetrics


@dataclass(frozen=True)
class QualityReport:
    cases: list[CaseResult]
    store: Summary
    rerank: Summary
    k: int
    settings: RerankSettings


def store_ranking(hits: Sequence[Hit]) -> list[str]:
    return [h.memory_id for h in sorted(hits, key=lambda h: h.rank)]


def compare_orders(cases: Sequence[EvalCase], *, settings: RerankSettings, now: datetime, k: int = DEFAULT_DEPTH) -> QualityReport:
    """Metrics for the store's order and for the re-ranked order (returned entries
    only: an excluded or stale memory never reaches the prompt)."""
    _check_k(k)
    results = []
    for case in cases:
        reranked = rerank(case.hits, now=now, settings=settings)
        results.append(
            CaseResult(
                case=case,
                reranked=reranked,
                store=evaluate_ranking(case.message_id, store_ranking(case.hits), case.grades, k),
                rerank=evaluate_ranking(case.message_id, [e.entry_id for e in reranked.returned], case.grades, k),
            )
        )
    return QualityReport(
        cases=results,
        store=summarise([r.store for r in results]),
        rerank=summarise([r.rerank for r in results]),
        k=k,
        settings=settings,
    )


# ------------------------------------------------------------------ staleness


@dataclass(frozen=True)
class StaleButConvincing:
    message_id: str
    entry_id: str
    age_hours: float
    relevance: float
    judged_relevant: bool | None  # None when the memory was never judged


def stale_but_convincing(
    report: QualityReport, *, older_than_hours: float, min_relevance: float
) -> list[StaleButConvincing]:
    """Candidates older than `older_than_hours` whose relevance is at least
    `min_relevance`: old facts that still read as a strong match, the ones most
    likely to put an outdated answer in front of the model."""
    found = []
    for result in report.cases:
        for entry in result.reranked.entries:
            if entry.age_hours is None or entry.relevance_source == "none":
                continue
            if entry.age_hours > older_than_hours and entry.relevance_score >= min_relevance:
                grade = result.case.grades.get(entry.entry_id)
                found.append(
                    StaleButConvincing(
                        message_id=result.case.message_id,
                        entry_id=entry.entry_id,
                        age_hours=entry.age_hours,
                        relevance=entry.relevance_score,
                        judged_relevant=None if grade is None else grade > 0,
                    )
                )
    return sorted(found, key=lambda s: (-s.age_hours, s.message_id, s.entry_id))


# ------------------------------------------------------------------ labelled sessions


def grades_from_labels(labels: Iterable[Any]) -> dict[str, dict[str, int]]:
    """message_id -> {memory_id: 1 or 0} from label rows (anything with message_id,
    memory_id, label). Several reviewers of one pair: the one rule of
    dashboard/labels/resolution.py, as in every export: the majority; a tie is
    unresolved and the pair is left out (not graded)."""
    from dashboard.labels.resolution import majority

    votes: dict[tuple[str, str], list[str]] = {}
    for label in labels:
        votes.setdefault((label.message_id, label.memory_id), []).append(label.label)
    grades: dict[str, dict[str, int]] = {}
    for (message, memory), vs in votes.items():
        decided = majority(vs)
        if decided is not None:
            grades.setdefault(message, {})[memory] = int(decided == "relevant")
    return grades


def cases_from_labels(
    labels: Iterable[Any],
    created_at: Callable[[str], datetime | None] | None = None,
) -> list[EvalCase]:
    """One case per labelled message, its candidates rebuilt from the labels: the
    store's order from the rank the reviewer saw, relevance from the score (labels
    keep no breakdown), age from `created_at(memory_id)` when the store is at hand.
    Only labelled memories are known, so unlabelled ones count as not returned."""
    labels = list(labels)
    grades = grades_from_labels(labels)
    first: dict[tuple[str, str], Any] = {}
    for label in labels:
        if label.memory_id in grades.get(label.message_id, {}):  # an unresolved tie is left out
            first.setdefault((label.message_id, label.memory_id), label)
    by_message: dict[str, list[Any]] = {}
    for (message, _), label in first.items():
        by_message.setdefault(message, []).append(label)
    cases = []
    for message in sorted(by_message):
        rows = sorted(
            by_message[message],
            key=lambda label: (label.rank is None, label.rank if label.rank is not None else 0, -(label.score or 0.0), label.memory_id),
        )
        hits = [
            Hit(
                memory_id=row.memory_id,
                rank=position,
                text="",
                score=row.score,
                created_at=created_at(row.memory_id) if created_at else None,
            )
            for position, row in enumerate(rows, start=1)
        ]
        cases.append(EvalCase(message_id=message, hits=hits, grades=grades[message]))
    return cases


def cases_from_queries(queries: Sequence[JudgedQuestion], hits_by_message: Mapping[str, list[Hit]]) -> list[EvalCase]:
    """One case per judged question the store was asked (the Quality page's demo queries)."""
    return [
        EvalCase(
            message_id=q.message_id,
            hits=list(hits_by_message[q.message_id]),
            grades=dict(q.grades),
            user_id=q.user_id,
            query=q.query,
        )
        for q in queries
        if q.message_id in hits_by_message
    ]


@dataclass
class JudgedIdsCheck:
    """Whether the judged ids ever came back: if none did, the store is probably not
    loaded with the memories the judgments name."""

    judged: set[str] = field(default_factory=set)
    returned: set[str] = field(default_factory=set)

    @property
    def overlap(self) -> int:
        return len(self.judged & self.returned)


def judged_ids_check(cases: Sequence[EvalCase]) -> JudgedIdsCheck:
    check = JudgedIdsCheck()
    for case in cases:
        check.judged |= {m for m, g in case.grades.items() if g > 0}
        check.returned |= {h.memory_id for h in case.hits}
    return check
