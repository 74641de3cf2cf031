"""A run's figures agree with ranx, overall and per query; compare's p-value agrees
with the exact sign-flip test; the floor figures say what reaches the prompt."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from ranx import Qrels, Run, evaluate

from dashboard.database.runs import QueryOutcome, RunHit, RunInfo
from dashboard.evaluation.judged_sets import JudgedSet
from dashboard.evaluation.run_compare import compare_runs, inspect_link, paired_randomisation_p
from dashboard.evaluation.run_figures import run_figures, table_lines
from dashboard.judged import JudgedQuestion


def generated(seed: int, questions: int = 300, k: int = 10):
    """Random graded judgments and random rankings (no ties in score)."""
    rng = random.Random(seed)
    judged, outcomes = [], []
    for i in range(questions):
        pool = [f"m{j}" for j in range(40)]
        grades = {m: rng.choice([0, 1, 1, 2, 3]) for m in rng.sample(pool, rng.randint(0, 5))}
        judged.append(JudgedQuestion(f"q{i}", f"u{i % 7}", f"question {i}", grades, (f"tag{i % 3}",)))
        ranked = rng.sample(pool, rng.randint(0, k))
        hits = [RunHit(m, r, 1.0 - r / 100) for r, m in enumerate(ranked, start=1)]
        outcomes.append(QueryOutcome(f"q{i}", i, f"u{i % 7}", hits))
    return judged, outcomes


def as_ranx(judged, outcomes):
    answerable = [q for q in judged if q.answerable]
    qrels = Qrels({q.message_id: {m: g for m, g in q.grades.items() if g > 0} for q in answerable})
    by_id = {o.message_id: o for o in outcomes}
    run = Run({q.message_id: {h.memory_id: h.score for h in by_id[q.message_id].hits} for q in answerable})
    return qrels, run


@pytest.mark.parametrize("n", [1, 3, 10])
def test_every_ranking_metric_agrees_with_ranx(n):
    judged, outcomes = generated(seed=n)
    figures = run_figures(judged, outcomes, n)
    qrels, run = as_ranx(judged, outcomes)
    names = [f"precision@{n}", f"recall@{n}", f"mrr@{n}", f"ndcg@{n}", f"hit_rate@{n}"]
    expected = evaluate(qrels, run, names, make_comparable=True)
    ours = [f"precision@{n}", f"recall@{n}", "mrr", f"ndcg@{n}", f"hit_rate@{n}"]
    for ranx_name, name in zip(names, ours, strict=True):
        assert figures.overall[name] == pytest.approx(expected[ranx_name], abs=1e-9), name
    # Per query as well, on the question the ranx run scores.
    per_query = evaluate(qrels, run, f"ndcg@{n}", return_mean=False, make_comparable=True)
    ours_by_id = {r.message_id: r.values[f"ndcg@{n}"] for r in figures.per_query if r.answerable}
    ours_per_query = [ours_by_id[q] for q in run.keys()]
    assert None not in ours_per_query  # every answerable question has an nDCG
    assert np.allclose(np.array(ours_per_query, dtype=float), per_query, atol=1e-9)


def test_tags_users_abstention_and_the_floor():
    judged = [
        JudgedQuestion("q1", "ana", "a", {"m1": 1}, ("place",)),
        JudgedQuestion("q2", "ana", "b", {}, ("food",)),
        JudgedQuestion("q3", "bo", "c", {}, ("food",)),
    ]
    outcomes = [
        QueryOutcome("q1", 0, "ana", [RunHit("m1", 1, 0.6), RunHit("m2", 2, 0.2)]),
        QueryOutcome("q2", 1, "ana", [RunHit("m3", 1, 0.15)]),
        QueryOutcome("q3", 2, "bo", []),
    ]
    figures = run_figures(judged, outcomes, 2, floor=0.3)
    assert figures.overall["abstention"] == 0.5  # q3 returned nothing, q2 something
    # only m1 passes 0.3: pooled and per turn agree on one kept memory
    assert figures.overall["floor_precision_pooled"] == figures.overall["floor_precision_per_turn"] == 1.0
    assert figures.overall["no_memory_unanswerable"] == 1.0  # both unanswerable turns left empty
    assert figures.overall["no_memory_answerable"] == 0.0
    assert figures.by_tag["place"]["recall@2"] == 1.0 and figures.by_tag["food"]["recall@2"] is None
    assert set(figures.by_user) == {"ana", "bo"}


def test_floor_precision_is_printed_pooled_and_per_turn_named_for_what_each_is():
    # Issue 53: `floor_precision` was a mean over turns, defined nowhere. One turn keeps its
    # one relevant memory, another keeps three irrelevant ones: per turn (1 + 0) / 2, pooled 1 / 4.
    judged = [JudgedQuestion("q1", "ana", "a", {"m1": 1}), JudgedQuestion("q2", "ana", "b", {"m9": 1})]
    outcomes = [
        QueryOutcome("q1", 0, "ana", [RunHit("m1", 1, 0.6)]),
        QueryOutcome("q2", 1, "ana", [RunHit("m2", 1, 0.5), RunHit("m3", 2, 0.5), RunHit("m4", 3, 0.4)]),
    ]
    figures = run_figures(judged, outcomes, 3, floor=0.3)
    assert figures.overall["floor_precision_per_turn"] == 0.5
    assert figures.overall["floor_precision_pooled"] == 0.25
    assert "floor_precision" not in figures.names
    assert "floor_precision_pooled 0.2500" in table_lines(figures)
    assert "floor_precision_per_turn 0.5000" in table_lines(figures)


def exact_p(deltas):
    observed = abs(np.mean(deltas))
    means = [abs(np.mean(np.array(signs) * deltas)) for signs in itertools.product([-1, 1], repeat=len(deltas))]
    return np.mean([m >= observed - 1e-12 for m in means])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_randomisation_p_value_is_close_to_the_exact_one(seed):
    rng = np.random.default_rng(seed)
    deltas = rng.normal(0.05 * seed, 0.2, size=12)
    assert paired_randomisation_p(deltas) == pytest.approx(exact_p(deltas), abs=0.015)


def info(run_id, k=10, set_hash="h"):
    return RunInfo(run_id, run_id, "s", set_hash, "embedded", "embedded:x", {}, k, "t", "t", 300, 300)


def test_compare_counts_wins_ties_losses_and_names_the_worst():
    judged, outcomes = generated(seed=5)
    worse = [QueryOutcome(o.message_id, o.position, o.user_id, list(reversed(o.hits))[:3]) for o in outcomes]
    judged_set = JudgedSet("s", judged)
    result = compare_runs(info("A"), outcomes, info("B"), worse, judged_set, "ndcg@10")
    assert result.wins + result.ties + result.losses == len(result.deltas)
    assert result.losses > result.wins and result.regressed(0.01)
    assert result.worst(3)[0].delta == min(d.delta for d in result.deltas)
    same = compare_runs(info("A"), outcomes, info("A2"), outcomes, judged_set, "ndcg@10")
    assert same.p_value == 1.0 and same.ties == len(same.deltas) and not same.regressed(0.0)


def test_runs_of_different_set_versions_are_not_compared():
    from dashboard.evaluation.run_compare import CompareError

    judged, outcomes = generated(seed=6)
    with pytest.raises(CompareError, match="different versions"):
        compare_runs(info("A"), outcomes, info("B", set_hash="other"), outcomes, JudgedSet("s", judged), "mrr")


def test_the_inspect_link_carries_the_parameters_the_page_restores():
    link = inspect_link("Where does the user live?", "sam", 10, 0.3)
    assert link == "/inspect?query=Where+does+the+user+live%3F&user=sam&k=10&floor=0.30"
    # A calibrated floor and a run's clock go in as they are (issue 34).
    assert inspect_link("q", "sam", 10, 0.36577, as_of="2023-05-08T00:00:00+00:00").endswith(
        "&floor=0.36577&as_of=2023-05-08T00%3A00%3A00%2B00%3A00"
    )
