"""Kappa against the reference implementations, and the agreement report."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from dashboard.database.model import Label
from dashboard.labels.reviewer_agreement import agreement, cohen_kappa, fleiss_kappa

LABELS = ["relevant", "not_relevant"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(LABELS + ["skip"]), st.sampled_from(LABELS + ["skip"])), min_size=1, max_size=80))
def test_cohen_kappa_matches_scikit_learn(pairs):
    first, second = zip(*pairs, strict=True)
    ours = cohen_kappa(list(first), list(second))
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = cohen_kappa_score(first, second)
    assert (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_fleiss_kappa_matches_statsmodels_on_random_tables(seed):
    rng = np.random.default_rng(seed)
    items, raters, categories = rng.integers(5, 60), rng.integers(2, 7), rng.integers(2, 4)
    table = np.array([rng.multinomial(raters, rng.dirichlet(np.ones(categories))) for _ in range(items)])
    assert fleiss_kappa(table) == pytest.approx(statsmodels_fleiss(table, method="fleiss"), abs=1e-12)


def test_fleiss_kappa_refuses_uneven_tables():
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa(np.array([[2, 0], [1, 2]]))


def lab(message, memory, reviewer, value, score=0.3):
    return Label(message, memory, 1, score, value, reviewer, "s", "t", "t")


def test_two_reviewers_give_cohen_over_the_rows_both_labelled():
    labels = [
        lab("m1", "a", "ana", "relevant"), lab("m1", "a", "ben", "relevant"),
        lab("m1", "b", "ana", "not_relevant"), lab("m1", "b", "ben", "relevant"),
        lab("m2", "c", "ana", "not_relevant"), lab("m2", "c", "ben", "not_relevant"),
        lab("m2", "d", "ana", "relevant"),  # ana alone: not counted
    ]
    report = agreement(labels)
    a = ["relevant", "not_relevant", "not_relevant"]
    b = ["relevant", "relevant", "not_relevant"]
    assert report.method == "cohen" and report.rows == 3
    assert report.kappa == pytest.approx(cohen_kappa_score(a, b))
    assert report.observed == pytest.approx(2 / 3)
    [d] = report.disagreements
    assert (d.message_id, d.memory_id, d.labels) == ("m1", "b", {"ana": "not_relevant", "ben": "relevant"})
    assert d.describe() == "m1 b rank 1 score 0.300: ana not_relevant, ben relevant"


def test_more_reviewers_give_fleiss_at_the_usual_number_of_labels():
    labels = [
        lab("m1", "a", "ana", "relevant"), lab("m1", "a", "ben", "relevant"),
        lab("m1", "b", "ben", "relevant"), lab("m1", "b", "cy", "not_relevant"),
        lab("m1", "c", "cy", "not_relevant"), lab("m1", "c", "ana", "not_relevant"),
        lab("m1", "d", "ana", "relevant"), lab("m1", "d", "ben", "relevant"), lab("m1", "d", "cy", "relevant"),
    ]
    report = agreement(labels)
    assert report.method == "fleiss" and report.rows == 3 and report.left_out == 1
    table = np.array([[2, 0], [1, 1], [0, 2]])
    assert report.kappa == pytest.approx(statsmodels_fleiss(table))
    assert [(d.memory_id) for d in report.disagreements] == ["b"]


def test_nothing_labelled_twice_gives_no_figure():
    report = agreement([lab("m1", "a", "ana", "relevant"), lab("m1", "b", "ben", "relevant")])
    assert report.method is None and report.kappa is None
    assert report.headline().startswith("No row has labels from two reviewers")
