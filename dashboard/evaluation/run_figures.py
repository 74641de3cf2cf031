"""The figures of a run: overall, per tag, per user and per query.

Definitions are those of dashboard/ranking/metrics.py (ranx's and trec_eval's), at
the run's depth n (at most the run's k):

    precision@n, recall@n, mrr, ndcg@n (graded), hit_rate@n
                        means over answerable questions
    abstention          of the unanswerable questions, the share the store
                        returned nothing for

and, at a chosen floor (hits scored under it never reach the prompt):

    floor_precision_pooled  of every memory kept over all questions, the share
                            judged relevant (kept relevant / kept, pooled)
    floor_precision_per_turn  the mean, over the questions (turns) that kept
                            something, of each one's kept relevant / kept: every
                            turn weighs the same, however many memories it kept
    no_memory_answerable    the share of answerable questions left with no memory
    no_memory_unanswerable  the share of unanswerable ones left with no memory
                            (higher is better: the prompt says nothing is known)

A question whose query failed counts as one that returned nothing; ``errors``
says how many did. Pure functions: no Streamlit, no store calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dashboard.database.runs import QueryOutcome
from dashboard.judged import JudgedQuestion
from dashboard.ranking import metrics as ir

POOLED, PER_TURN = "floor_precision_pooled", "floor_precision_per_turn"


def metric_names(n: int, floor: float | None = None) -> list[str]:
    names = [f"precision@{n}", f"recall@{n}", "mrr", f"ndcg@{n}", f"hit_rate@{n}", "abstention"]
    if floor is not None:
        names += [POOLED, PER_TURN, "no_memory_answerable", "no_memory_unanswerable"]
    return names


@dataclass(frozen=True)
class QueryFigures:
    message_id: str
    user_id: str | None
    tags: tuple[str, ...]
    answerable: bool
    values: dict[str, float | None]  # metric name -> value (None: not defined here)
    top: tuple[str, ...]
    error: str | None = None
    kept: int = 0  # memories kept at the floor, and how many of them are relevant: the pooled precision's sums
    kept_relevant: int = 0


def query_figures(question: JudgedQuestion, outcome: QueryOutcome | None, n: int, floor: float | None = None) -> QueryFigures:
    hits = sorted(outcome.hits, key=lambda h: h.rank) if outcome else []
    ranking = [h.memory_id for h in hits]
    grades = question.grades
    answerable = question.answerable
    values: dict[str, float | None] = {
        f"precision@{n}": ir.precision_at_k(ranking, grades, n) if answerable else None,
        f"recall@{n}": ir.recall_at_k(ranking, grades, n),
        "mrr": ir.reciprocal_rank(ranking, grades, n) if answerable else None,
        f"ndcg@{n}": ir.ndcg_at_k(ranking, grades, n),
        f"hit_rate@{n}": ir.hit_rate_at_k(ranking, grades, n) if answerable else None,
        "abstention": None if answerable else float(not ranking),
    }
    if floor is not None:
        kept = [h.memory_id for h in hits[:n] if h.score is not None and h.score >= floor]
        # One question's pooled and per-turn precision are the same; they differ in how questions are combined.
        values[POOLED] = values[PER_TURN] = ir.returned_precision_at_k(kept, grades, n) if kept else None
        values["no_memory_answerable"] = float(not kept) if answerable else None
        values["no_memory_unanswerable"] = None if answerable else float(not kept)
    return QueryFigures(
        message_id=question.message_id,
        user_id=question.user_id,
        tags=question.tags,
        answerable=answerable,
        values=values,
        top=tuple(ranking[:n]),
        error=outcome.error if outcome else "not asked",
        kept=len(kept) if floor is not None else 0,
        kept_relevant=sum(1 for memory_id in kept if grades.get(memory_id, 0) > 0) if floor is not None else 0,
    )


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _pooled(rows: Sequence[QueryFigures]) -> float | None:
    """Kept relevant / kept, summed over all rows (None when no row kept anything)."""
    kept = sum(r.kept for r in rows)
    return sum(r.kept_relevant for r in rows) / kept if kept else None


def average(rows: Sequence[QueryFigures], names: Sequence[str]) -> dict[str, float | None]:
    return {name: _pooled(rows) if name == POOLED else _mean(r.values.get(name) for r in rows) for name in names}


@dataclass
class RunFigures:
    n: int
    floor: float | None
    names: list[str]
    per_query: list[QueryFigures]
    overall: dict[str, float | None]
    by_tag: dict[str, dict[str, float | None]]
    by_user: dict[str, dict[str, float | None]]
    questions: int
    answerable: int
    answered: int  # questions the run has a row for (less than `questions` when incomplete)
    errors: int


def run_figures(
    questions: Sequence[JudgedQuestion], outcomes: Sequence[QueryOutcome], n: int, floor: float | None = None
) -> RunFigures:
    """Every figure of a run at depth `n`. Only questions the run answered count:
    an incomplete run is measured on what it has, and says how much that is."""
    if n < 1:
        raise ValueError(f"the cutoff must be at least 1, got {n}")
    by_id = {o.message_id: o for o in outcomes}
    names = metric_names(n, floor)
    rows = [query_figures(q, by_id[q.message_id], n, floor) for q in questions if q.message_id in by_id]
    tags = sorted({t for r in rows for t in r.tags})
    users = sorted({r.user_id or "" for r in rows})
    return RunFigures(
        n=n,
        floor=floor,
        names=names,
        per_query=rows,
        overall=average(rows, names),
        by_tag={t: average([r for r in rows if t in r.tags], names) for t in tags},
        by_user={u: average([r for r in rows if (r.user_id or "") == u], names) for u in users},
        questions=len(questions),
        answerable=sum(1 for q in questions if q.answerable),
        answered=len(rows),
        errors=sum(1 for r in rows if r.error),
    )


def format_value(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def table_lines(figures: RunFigures) -> list[str]:
    """One `metric value` line per metric, four decimals (`recall@10 0.3708`)."""
    return [f"{name} {format_value(figures.overall[name])}" for name in figures.names]
