"""What-if weights on a real embedded store whose weighting over-rewards recency:
the relevant memories are old, fresh off-topic ones crowd them out, and the search
over the stored breakdowns finds weights that win back the metric on the held-out
questions, without asking the store again."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from connectors.embedded.store import EmbeddedStore
from dashboard.database import AppDatabase
from dashboard.database.runs import QueryOutcome, RunHit
from dashboard.evaluation import weight_search as whatif
from dashboard.evaluation.judged_sets import JudgedSet
from dashboard.evaluation.runs import RunRequest, start_run
from dashboard.judged import JudgedQuestion

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
FACTS = [
    ("lives in Lisbon", "Where does the user live?"),
    ("is allergic to peanuts", "Does the user have any food allergy?"),
    ("prefers the light UI theme", "Which UI theme does the user prefer?"),
    ("works as a database engineer", "What does the user do for work?"),
    ("is training for a half marathon", "What race is the user training for?"),
    ("has a cat called Miso", "What is the name of the user's cat?"),
    ("speaks Portuguese and German", "Which languages does the user speak?"),
    ("drives an electric car", "What kind of car does the user drive?"),
]
NOISE = [
    "Bought new headphones", "Watched a film last night", "Ordered groceries online", "Cleaned the kitchen",
    "Booked a dentist appointment", "Renewed a library card", "Called a plumber", "Paid the electricity bill",
]


@pytest.fixture(scope="module")
def recency_heavy_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("whatif")
    store = EmbeddedStore(directory / "store.sqlite", weights="semantic=0.25,recency=0.75,importance=0,usage=0", now=lambda: NOW)
    rng = random.Random(3)
    rows, questions = [], []
    for u in range(6):
        user = f"user{u}"
        for i, (fact, question) in enumerate(FACTS):
            rows.append({"id": f"{user}-fact{i}", "user_id": user, "text": f"The user {fact}",
                         "created_at": NOW - timedelta(days=200 + rng.randrange(100)), "importance": 0.5,
                         "usage_count": 0, "metadata": {}})
            questions.append(JudgedQuestion(f"{user}-q{i}", user, question, {f"{user}-fact{i}": 1}))
        for j, noise in enumerate(NOISE):
            rows.append({"id": f"{user}-noise{j}", "user_id": user, "text": noise,
                         "created_at": NOW - timedelta(hours=rng.randrange(1, 48)), "importance": 0.5,
                         "usage_count": 0, "metadata": {}})
    store.import_rows(rows)
    db = AppDatabase(directory / "labels.sqlite")
    judged = JudgedSet("facts", questions)
    info = start_run(store, db, RunRequest(judged, "embedded", "embedded:test", {}, k=16))
    yield judged, info, db.runs.outcomes(info.run_id)
    store.close()
    db.close()


def test_the_search_finds_weights_that_hold_on_the_held_out_questions(recency_heavy_run):
    judged, info, outcomes = recency_heavy_run
    result = whatif.search(judged.questions, outcomes, metric="mrr", n=3, k=info.k, step=0.1)
    assert result.components == ["importance", "recency", "semantic", "usage"]
    assert result.own_weights["recency"] == pytest.approx(0.75)
    assert result.best.weights["semantic"] > result.best.weights["recency"]
    assert result.train_gain > 0.2 and result.held_out_gain > 0.2  # the gain held on unseen questions
    assert result.held_out_questions + result.train_questions == len(judged.questions)
    assert "of the gain held" in result.summary()


def test_rescoring_with_the_stores_own_weights_reproduces_its_order(recency_heavy_run):
    judged, info, outcomes = recency_heavy_run
    cands = whatif.candidates(judged.questions, outcomes)
    own = np.array([cands.own_weights[c] for c in cands.components])
    for metric in whatif.METRICS:
        store_order = whatif.evaluate(cands, None, -np.inf, metric, 5)
        rescored = whatif.evaluate(cands, own, 0.0, metric, 5)
        assert np.allclose(store_order, rescored), metric


def test_a_run_without_breakdowns_is_refused_with_a_reason():
    questions = [JudgedQuestion(f"q{i}", None, "x", {"m1": 1}) for i in range(5)]
    outcomes = [QueryOutcome(q.message_id, i, None, [RunHit("m1", 1, 0.4)]) for i, q in enumerate(questions)]
    with pytest.raises(whatif.WhatIfError, match="no hit in this run has a score breakdown"):
        whatif.search(questions, outcomes, metric="recall", n=1, k=1)


# ------------------------------------------------------------------ honesty (issue 20, item 1)


@pytest.fixture
def perfect(tmp_path):
    from whatif_runs import perfect_run

    db = AppDatabase(tmp_path / "labels.sqlite")
    info = perfect_run(db)
    yield db, info
    db.close()


@pytest.mark.parametrize("search_floor", [False, True])
def test_nothing_beats_the_stores_own_weights_so_nothing_is_recommended(perfect, search_floor):
    evals, info = perfect
    result = whatif.search_run(evals, info, metric="recall", n=1, search_floor=search_floor)
    assert result.own_train == 1.0 and result.best.train == 1.0
    assert result.recommended is None and result.train_gain == 0
    assert "no weighting beats the store's own (1.0000)" in result.summary()
    assert "nothing to apply" in result.summary()
    assert whatif.weights_to_apply(result, "embedded") is None
    # Usage is 0 and importance 0.5 for every memory: the 11 weightings with no weight
    # on semantic or recency (usage=1 among them) tie every candidate. They are left
    # out, never shown as the best.
    assert result.degenerate == 11
    for setting in result.top:
        assert setting.weights["semantic"] + setting.weights["recency"] > 0


def test_ties_between_settings_go_to_the_one_nearest_the_stores_weights_and_are_counted(perfect):
    evals, info = perfect
    result = whatif.search_run(evals, info, metric="recall", n=1)
    own = np.array([result.own_weights[c] for c in result.components])

    def distance(setting):
        return np.abs(np.array([setting.weights[c] for c in result.components]) - own).sum()

    sharing = [s for s in result.top if s.train == result.best.train]
    assert result.best_ties > 1 and len(sharing) > 1
    assert all(distance(result.best) <= distance(s) + 1e-9 for s in sharing)
    assert any(f"{result.best_ties} settings share the best search-split value" in n for n in result.notes())




def test_the_tie_rule_keeps_the_store_order_and_counts_the_questions_it_decided():
    present = np.ones((3, 3), dtype=bool)
    score = np.array([[0.9, 0.5, 0.1], [0.7, 0.7, 0.1], [0.9, 0.2, 0.2]])
    assert whatif.tied_questions(score, present, 1) == 1  # question 2: which of two is first
    assert whatif.tied_questions(score, present, 2) == 2  # question 3: which of two is second
    assert not whatif.distinguishes(np.zeros((3, 3)), present)
    assert whatif.distinguishes(score, present)


def test_a_weighting_that_wins_is_still_recommended(recency_heavy_run):
    judged, info, outcomes = recency_heavy_run
    result = whatif.search(judged.questions, outcomes, metric="mrr", n=3, k=info.k, step=0.1)
    assert result.recommended is result.best
    assert whatif.weights_to_apply(result, "embedded") == whatif.weights_text(result.best.weights)
    assert whatif.weights_to_apply(result, "memorysync") is None  # memlens cannot set another store's weights
