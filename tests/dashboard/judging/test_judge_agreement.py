"""Judge-vs-people agreement, checked against scikit-learn on a fixed set."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix, recall_score

from dashboard.database.judge_labels import JudgeLabel
from dashboard.database.model import Label
from dashboard.judging.judge_agreement import bootstrap_kappa, judge_agreement

SOURCE = "judge:umbrela@m"
# (memory, ana's label, ben's label or None, judge grade)
FIXED = [
    ("m01", "relevant", "relevant", 3),
    ("m02", "relevant", "not_relevant", 2),
    ("m03", "not_relevant", "not_relevant", 0),
    ("m04", "not_relevant", None, 1),
    ("m05", "relevant", "relevant", 1),
    ("m06", "not_relevant", "not_relevant", 2),
    ("m07", "relevant", None, 3),
    ("m08", "not_relevant", "not_relevant", 0),
    ("m09", "relevant", "relevant", 2),
    ("m10", "not_relevant", "relevant", 0),
    ("m11", "relevant", None, None),  # the judge never graded it: no comparison
]


def fixed_set() -> tuple[list[Label], list[JudgeLabel]]:
    labels, judged = [], []
    for memory, ana, ben, grade in FIXED:
        for reviewer, value in (("ana", ana), ("ben", ben)):
            if value:
                labels.append(Label("q1", memory, 1, 0.5, value, reviewer, "s", "t", "t"))
        if grade is not None:
            judged.append(JudgeLabel("q1", memory, SOURCE, grade, "r", None, 1, 0.5, "t"))
    judged.append(JudgeLabel("q1", "m01", "judge:other@x", 0, "r", None, 1, 0.5, "t"))  # another judge: ignored
    return labels, judged


def comparisons(reviewer: str | None = None) -> tuple[list[int], list[int]]:
    """Per reviewer, each of their labels; overall, one label per pair by the one
    rule (the majority; ana and ben split on m02 and m10: ties, left out)."""
    people, judge = [], []
    for _, ana, ben, grade in FIXED:
        if grade is None:
            continue
        if reviewer is None:
            if ben is None or ana == ben:
                people.append(int(ana == "relevant"))
                judge.append(int(grade >= 2))
            continue
        for who, value in (("ana", ana), ("ben", ben)):
            if value and reviewer in (None, who):
                people.append(int(value == "relevant"))
                judge.append(int(grade >= 2))
    return people, judge


@pytest.mark.parametrize("reviewer", [None, "ana", "ben"])
def test_the_figures_match_scikit_learn(reviewer):
    labels, judged = fixed_set()
    report = judge_agreement(labels, judged, SOURCE, resamples=200)
    figures = report if reviewer is None else report.per_reviewer[reviewer]
    people, judge = comparisons(reviewer)
    assert figures.count == len(people)
    assert figures.kappa == pytest.approx(cohen_kappa_score(people, judge))
    assert figures.raw_agreement == pytest.approx(accuracy_score(people, judge))
    assert figures.tpr == pytest.approx(recall_score(people, judge, pos_label=1))
    assert figures.tnr == pytest.approx(recall_score(people, judge, pos_label=0))
    (tn, fp), (fn, tp) = confusion_matrix(people, judge, labels=[0, 1])
    c = figures.confusion
    assert (c["relevant"]["relevant"], c["relevant"]["not_relevant"]) == (tp, fn)
    assert (c["not_relevant"]["relevant"], c["not_relevant"]["not_relevant"]) == (fp, tn)


def test_the_interval_holds_the_kappa_and_repeats_with_the_seed():
    labels, judged = fixed_set()
    report = judge_agreement(labels, judged, SOURCE, resamples=500, seed=3)
    assert report.kappa_interval is not None
    low, high = report.kappa_interval
    assert report.kappa is not None and low <= report.kappa <= high
    assert judge_agreement(labels, judged, SOURCE, resamples=500, seed=3).kappa_interval == (low, high)
    assert sorted(report.per_reviewer) == ["ana", "ben"]
    assert "over 8 pair(s)" in report.headline()  # 10 graded pairs, 2 of them ties


def test_bootstrap_kappa_is_each_resample_s_cohen_kappa():
    people = np.array([1, 1, 0, 0, 1, 0, 1, 0], dtype=bool)
    judge = np.array([1, 0, 0, 0, 1, 1, 1, 0], dtype=bool)
    rng = np.random.default_rng(7)
    picks = rng.integers(0, len(people), size=(50, len(people)))
    expected = [cohen_kappa_score(people[p], judge[p]) for p in picks if len(set(people[p]) | set(judge[p])) > 1]
    expected = [k for k in expected if not np.isnan(k)]
    interval = bootstrap_kappa(people, judge, 50, 7)
    assert interval is not None
    low, high = interval
    assert low == pytest.approx(np.percentile(expected, 2.5)) and high == pytest.approx(np.percentile(expected, 97.5))


def test_no_shared_pair_gives_no_figure():
    report = judge_agreement([], [], SOURCE)
    assert report.count == 0 and report.kappa is None
    assert "no pair is labelled by both" in report.headline()
