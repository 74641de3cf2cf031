"""Retrieval metrics: hand-computed cases, agreement with ranx on random runs,
averaging, judged questions as cases, labelled sessions, stale-but-convincing."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from ranx import Qrels, Run, evaluate

from connectors.base import Hit
from dashboard.judged import JudgedQuestion
from dashboard.ranking import metrics
from dashboard.ranking.rerank import RerankSettings

NOW = datetime(2025, 1, 10, tzinfo=UTC)


def test_hand_computed_metrics_for_one_ranking():
    ranking = ["a", "b", "c", "d"]
    grades = {"b": 1, "d": 1, "x": 0}
    assert metrics.precision_at_k(ranking, grades, 3) == pytest.approx(1 / 3)
    assert metrics.recall_at_k(ranking, grades, 3) == pytest.approx(1 / 2)
    assert metrics.reciprocal_rank(ranking, grades) == pytest.approx(1 / 2)
    assert metrics.reciprocal_rank(ranking, grades, k=1) == 0.0
    # DCG@3 = 1/log2(3); ideal = 1 + 1/log2(3)
    assert metrics.ndcg_at_k(ranking, grades, 3) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert metrics.hit_rate_at_k(ranking, grades, 1) == 0.0
    assert metrics.hit_rate_at_k(ranking, grades, 2) == 1.0
    assert metrics.returned_precision_at_k(ranking, grades, 3) == pytest.approx(1 / 3)


def test_precision_divides_by_k_but_returned_precision_by_what_came_back():
    # A re-ranker that returned one relevant memory and nothing else.
    assert metrics.precision_at_k(["a"], {"a": 1}, 3) == pytest.approx(1 / 3)
    assert metrics.returned_precision_at_k(["a"], {"a": 1}, 3) == 1.0
    assert metrics.returned_precision_at_k([], {"a": 1}, 3) is None


def test_metrics_with_nothing_relevant():
    assert metrics.recall_at_k(["a"], {}, 3) is None
    assert metrics.ndcg_at_k(["a"], {"a": 0}, 3) is None
    assert metrics.precision_at_k(["a"], {}, 3) == 0.0
    assert metrics.reciprocal_rank(["a"], {}) == 0.0


def test_graded_ndcg():
    # gains 3 at rank 2 and 1 at rank 1: DCG = 1 + 3/log2(3); ideal = 3 + 1/log2(3)
    value = metrics.ndcg_at_k(["low", "high"], {"high": 3, "low": 1}, 5)
    assert value == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))


def test_k_must_be_positive():
    with pytest.raises(ValueError, match="k must be"):
        metrics.precision_at_k(["a"], {"a": 1}, 0)


def defined(value: float | None) -> float:
    """Every generated query has a relevant document, so no metric is undefined."""
    assert value is not None
    return value


def random_benchmark(seed: int, queries: int = 120):
    """Random judgments (graded 0-3, every query with at least one relevant doc)
    and random runs with distinct scores, over a pool of 40 docs."""
    rng = random.Random(seed)
    qrels, runs = {}, {}
    for q in range(queries):
        docs = [f"d{i}" for i in range(40)]
        judged = rng.sample(docs, rng.randint(1, 15))
        grades = {d: rng.randint(0, 3) for d in judged}
        grades[judged[0]] = rng.randint(1, 3)  # at least one relevant
        retrieved = rng.sample(docs, rng.randint(1, 25))
        scores = rng.sample(range(1, 10_000), len(retrieved))  # distinct: no tie-order ambiguity
        qrels[f"q{q}"] = grades
        runs[f"q{q}"] = {d: float(s) for d, s in zip(retrieved, scores, strict=True)}
    return qrels, runs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_metrics_agree_with_ranx_on_random_runs(seed):
    qrels, runs = random_benchmark(seed)
    names = []
    for k in (1, 3, 5, 10):
        names += [f"precision@{k}", f"recall@{k}", f"ndcg@{k}", f"hit_rate@{k}", f"mrr@{k}"]
    names.append("mrr")
    expected = evaluate(Qrels(qrels), Run(runs), names, return_mean=False)
    order = sorted(qrels)  # ranx reports per query in sorted query-id order
    ours: dict[str, list[float]] = {name: [] for name in names}
    for q in order:
        ranking = sorted(runs[q], key=lambda d: -runs[q][d])
        grades = qrels[q]
        for k in (1, 3, 5, 10):
            ours[f"precision@{k}"].append(metrics.precision_at_k(ranking, grades, k))
            ours[f"recall@{k}"].append(defined(metrics.recall_at_k(ranking, grades, k)))
            ours[f"ndcg@{k}"].append(defined(metrics.ndcg_at_k(ranking, grades, k)))
            ours[f"hit_rate@{k}"].append(metrics.hit_rate_at_k(ranking, grades, k))
            ours[f"mrr@{k}"].append(metrics.reciprocal_rank(ranking, grades, k))
        ours["mrr"].append(metrics.reciprocal_rank(ranking, grades))
    for name in names:
        assert len(expected[name]) == len(order)
        for query, theirs, mine in zip(order, expected[name], ours[name], strict=True):
            assert abs(theirs - mine) <= 1e-9, f"{name} for {query}: ranx {theirs}, memlens {mine}"
        # and the averages the page shows
        assert abs(sum(expected[name]) / len(order) - sum(ours[name]) / len(order)) <= 1e-9


def test_summaries_average_answerable_queries_and_count_abstentions():
    per_query = [
        metrics.evaluate_ranking("q1", ["a", "b", "c"], {"a": 1}, 3),  # answerable, hit at 1
        metrics.evaluate_ranking("q2", ["x", "y"], {"z": 1}, 3),  # answerable, missed
        metrics.evaluate_ranking("q3", [], {}, 3),  # unanswerable, nothing returned: right
        metrics.evaluate_ranking("q4", ["p"], {}, 3),  # unanswerable, something returned: wrong
    ]
    summary = metrics.summarise(per_query)
    assert summary.queries == 4 and summary.answerable == 2
    assert summary.precision == pytest.approx((1 / 3 + 0) / 2)
    assert summary.recall == pytest.approx(0.5)
    assert summary.mrr == pytest.approx(0.5)
    assert summary.hit_rate == pytest.approx(0.5)
    # returned precision: q1 1/3, q2 0, q4 0; q3 returned nothing and is left out
    assert summary.returned_precision == pytest.approx((1 / 3) / 3)
    assert summary.queries_with_returns == 3
    assert summary.abstention_rate == pytest.approx(0.5)


def hit(memory_id, rank, semantic, age_hours):
    return Hit(
        memory_id=memory_id,
        rank=rank,
        text="",
        score=semantic,
        breakdown={"semantic": semantic},
        created_at=NOW - timedelta(hours=age_hours),
    )


def test_compare_orders_store_versus_reranked_by_hand():
    cases = [
        # The store puts an off-topic memory first; the relevant one (0.6) is second.
        metrics.EvalCase("q1", [hit("off", 1, 0.25, 1), hit("rel", 2, 0.6, 1), hit("meh", 3, 0.1, 1)], {"rel": 1}),
        # Unanswerable: everything under the 0.3 threshold.
        metrics.EvalCase("q2", [hit("x", 1, 0.2, 1), hit("y", 2, 0.1, 1)], {}),
    ]
    report = metrics.compare_orders(cases, settings=RerankSettings(relevance_threshold=0.3), now=NOW, k=3)
    q1, q2 = report.cases
    assert q1.store.top == ("off", "rel", "meh") and q1.store.reciprocal_rank == 0.5
    assert q1.rerank.top == ("rel",) and q1.rerank.reciprocal_rank == 1.0
    assert q1.store.returned_precision == pytest.approx(1 / 3) and q1.rerank.returned_precision == 1.0
    assert q2.rerank.returned_count == 0
    assert report.store.returned_precision == pytest.approx((1 / 3 + 0) / 2)
    assert report.rerank.returned_precision == 1.0  # q2 returned nothing: left out
    assert report.store.abstention_rate == 0.0 and report.rerank.abstention_rate == 1.0
    assert report.store.mrr == 0.5 and report.rerank.mrr == 1.0


def test_stale_but_convincing_finds_old_strong_matches():
    case = metrics.EvalCase(
        "q1",
        [hit("old-strong", 1, 0.8, 24 * 200), hit("old-weak", 2, 0.2, 24 * 200), hit("new-strong", 3, 0.9, 5)],
        {"old-strong": 0},
    )
    report = metrics.compare_orders([case], settings=RerankSettings(), now=NOW)
    found = metrics.stale_but_convincing(report, older_than_hours=24 * 90, min_relevance=0.5)
    assert [(s.entry_id, s.judged_relevant) for s in found] == [("old-strong", False)]
    assert found[0].age_hours == pytest.approx(24 * 200)


@dataclass
class LabelRow:
    message_id: str
    memory_id: str
    label: str
    rank: int | None = None
    score: float | None = None


def test_grades_from_labels_take_the_majority_and_leave_ties_out():
    rows = [
        LabelRow("m1", "a", "relevant"),
        LabelRow("m1", "a", "not_relevant"),  # a tie: unresolved, not graded
        LabelRow("m1", "b", "not_relevant"),
        LabelRow("m1", "b", "not_relevant"),
        LabelRow("m1", "b", "relevant"),  # 1 of 3: not relevant
        LabelRow("m2", "c", "relevant"),
    ]
    assert metrics.grades_from_labels(rows) == {"m1": {"b": 0}, "m2": {"c": 1}}


def test_cases_from_labels_rebuild_the_store_order_and_ages():
    rows = [
        LabelRow("m1", "b", "not_relevant", rank=2, score=0.4),
        LabelRow("m1", "a", "relevant", rank=1, score=0.5),
        LabelRow("m1", "c", "relevant", rank=3, score=0.35),
    ]
    ages = {"a": NOW - timedelta(days=1)}
    [case] = metrics.cases_from_labels(rows, created_at=ages.get)
    assert [h.memory_id for h in case.hits] == ["a", "b", "c"]
    assert [h.score for h in case.hits] == [0.5, 0.4, 0.35]
    assert case.hits[0].created_at == NOW - timedelta(days=1) and case.hits[1].created_at is None
    assert case.grades == {"a": 1, "b": 0, "c": 1}
    report = metrics.compare_orders([case], settings=RerankSettings(relevance_threshold=0.38), now=NOW, k=3)
    # Relevance from the score: c (0.35) is excluded, a and b returned.
    assert report.cases[0].rerank.top == ("a", "b")
    assert report.cases[0].reranked.relevance_source == "score"


def test_judged_questions_become_cases_with_their_grades_user_and_query():
    questions = [
        JudgedQuestion("q1", "sam", "Where?", {"sam-01": 2, "sam-02": 0}),
        JudgedQuestion("q2", None, "Pizza?", {}),
        JudgedQuestion("q3", "sam", "Never asked", {"sam-03": 1}),
    ]
    hits = {"q1": [hit("sam-02", 1, 0.9, 5), hit("sam-01", 2, 0.8, 5)], "q2": []}
    cases = metrics.cases_from_queries(questions, hits)
    assert [(c.message_id, c.user_id, c.query, c.grades) for c in cases] == [
        ("q1", "sam", "Where?", {"sam-01": 2, "sam-02": 0}),
        ("q2", None, "Pizza?", {}),
    ]
    # graded relevance reaches the metrics: sam-01 (grade 2) at rank 2 of the store's order
    report = metrics.compare_orders(cases, settings=RerankSettings(), now=NOW, k=2)
    assert report.cases[0].store.precision == pytest.approx(1 / 2)
    assert report.store.answerable == 1
    assert metrics.judged_ids_check(cases).judged == {"sam-01"}
