"""Target-recall, target-precision and F-beta floors against brute force and
scikit-learn; the diagnosis (ROC AUC, average precision, warnings); answerable and
unanswerable turns against a hand count."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, fbeta_score, precision_score, recall_score, roc_auc_score

from dashboard.calibration import sweep as cal
from dashboard.calibration.advice import advise
from dashboard.calibration.choice import FBETA, TARGET_PRECISION, TARGET_RECALL, choose, short_floor
from dashboard.calibration.diagnosis import average_precision, roc_auc, turn_split
from dashboard.calibration.sweep import CalibrationError, labelled_scores


@st.composite
def overlapping(draw, max_size=80):
    """Two overlapping score distributions on a coarse grid (ties are common), both
    labels present, a turn per row."""
    size = draw(st.integers(2, max_size))
    grid = draw(st.sampled_from([10, 50, 1000]))
    relevant = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    relevant[0], relevant[1] = True, False
    # Relevant hits lean high, irrelevant ones low, with a wide overlap.
    scores = [
        draw(st.integers(grid // 3, grid)) if is_relevant else draw(st.integers(0, 2 * grid // 3))
        for is_relevant in relevant
    ]
    turns = draw(st.lists(st.integers(0, max(1, size // 4)), min_size=size, max_size=size))
    return np.array(scores, dtype=float) / grid, np.array(relevant), [f"t{t}" for t in turns]


def counts_at(scores, relevant, floor):
    """One pass over the rows for one floor."""
    kept = scores >= floor
    kept_relevant = int((kept & relevant).sum())
    kept_irrelevant = int((kept & ~relevant).sum())
    precision = kept_relevant / (kept_relevant + kept_irrelevant) if kept.any() else math.nan
    return kept_relevant, kept_irrelevant, precision, kept_relevant / int(relevant.sum())


def same_outcome(choice, scores, relevant, floor):
    kept_relevant, kept_irrelevant, _, _ = counts_at(scores, relevant, floor)
    assert (choice.kept_relevant, choice.kept_irrelevant) == (kept_relevant, kept_irrelevant)
    # The pasteable floor keeps exactly what the brute-force floor keeps.
    assert counts_at(scores, relevant, choice.floor)[:2] == (kept_relevant, kept_irrelevant)


@settings(max_examples=150, deadline=None)
@given(overlapping(), st.sampled_from([0.5, 0.8, 0.9, 0.95, 1.0]))
def test_target_recall_floor_is_the_highest_distinct_floor_reaching_it(rows, target):
    scores, relevant, turns = rows
    choice = choose(labelled_scores(scores, relevant, turns), TARGET_RECALL, target)
    reaching = [f for f in sorted(set(scores.tolist())) if counts_at(scores, relevant, f)[3] >= target]
    assert choice.reached and choice.exact == max(reaching)
    same_outcome(choice, scores, relevant, max(reaching))
    assert choice.recall >= target
    empty = {t for t in turns if not any(s >= choice.floor for s, u in zip(scores, turns, strict=True) if u == t)}
    assert choice.no_memory_share == len(empty) / len(set(turns))


@settings(max_examples=150, deadline=None)
@given(overlapping(), st.sampled_from([0.3, 0.5, 0.8, 0.9, 1.0]))
def test_target_precision_floor_is_the_lowest_distinct_floor_reaching_it(rows, target):
    scores, relevant, turns = rows
    choice = choose(labelled_scores(scores, relevant, turns), TARGET_PRECISION, target)
    distinct = sorted(set(scores.tolist()))
    precisions = [counts_at(scores, relevant, f)[2] for f in distinct]
    reaching = [f for f, p in zip(distinct, precisions, strict=True) if p >= target]
    if reaching:
        assert choice.reached and choice.exact == min(reaching)
        same_outcome(choice, scores, relevant, min(reaching))
    else:
        assert not choice.reached and choice.floor is None
        assert choice.best_precision == max(precisions)
        assert counts_at(scores, relevant, choice.best_floor)[2] == max(precisions)
        assert "no floor reaches it (best" in choice.line()


@settings(max_examples=60, deadline=None)
@given(overlapping(max_size=40), st.sampled_from([0.5, 1.0, 2.0]))
def test_fbeta_floor_maximises_scikit_learns_fbeta(rows, beta):
    scores, relevant, turns = rows
    choice = choose(labelled_scores(scores, relevant, turns), FBETA, beta)
    predicted = scores >= choice.floor
    assert choice.precision == pytest.approx(precision_score(relevant, predicted, zero_division=0))
    assert choice.recall == pytest.approx(recall_score(relevant, predicted))
    assert choice.fbeta == pytest.approx(fbeta_score(relevant, predicted, beta=beta, zero_division=0))
    best = max(fbeta_score(relevant, scores >= f, beta=beta, zero_division=0) for f in set(scores.tolist()))
    assert choice.fbeta == pytest.approx(best)


@settings(max_examples=150, deadline=None)
@given(overlapping())
def test_roc_auc_and_average_precision_match_scikit_learn(rows):
    scores, relevant, turns = rows
    full = cal.sweep(labelled_scores(scores, relevant, turns), [0.123, 2.0])  # extra floors are ignored
    assert roc_auc(full) == pytest.approx(roc_auc_score(relevant, scores))
    assert average_precision(full) == pytest.approx(average_precision_score(relevant, scores))


def test_the_mode_lines_have_the_issue_shapes():
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    relevant = np.array([False, True, False, True, False, True, True, False])
    data = labelled_scores(scores, relevant)
    assert choose(data, TARGET_RECALL, 0.75).line() == (
        "target recall 0.75: floor 0.40 keeps 2 irrelevant, drops 1 relevant, precision 0.60"
    )
    assert choose(data, TARGET_PRECISION, 0.6).line() == (
        "target precision 0.60: floor 0.31 keeps 2 irrelevant, drops 1 relevant, recall 0.75"
    )
    assert choose(data, TARGET_PRECISION, 0.9).line() == "target precision 0.90: no floor reaches it (best 0.67 at floor 0.51)"
    assert choose(data, FBETA, 1).line() == "max F1: floor 0.15 keeps 3 irrelevant, drops 0 relevant, precision 0.57, recall 1.00"


@pytest.mark.parametrize(
    "low, high, prefer, expected",
    [(0.3012, 0.3456, "high", 0.34), (0.3012, 0.3456, "low", 0.31), (0.3012, 0.3456, "middle", 0.32),
     (0.3401, 0.3409, "high", 0.3409), (-math.inf, 0.25, "low", 0.25), (0.25, math.inf, "high", 0.26)],
)  # fmt: skip
def test_short_floor_stays_inside_its_range(low, high, prefer, expected):
    assert short_floor(low, high, prefer) == pytest.approx(expected)


@pytest.mark.parametrize("mode, target", [(TARGET_RECALL, 0), (TARGET_RECALL, 1.5), (TARGET_PRECISION, math.nan), (FBETA, -1)])
def test_a_target_out_of_range_is_refused(mode, target):
    data = labelled_scores([0.1, 0.9], ["not_relevant", "relevant"])
    with pytest.raises(CalibrationError, match="must be"):
        choose(data, mode, target)


def test_bootstrap_interval_brackets_the_target_recall_floor_and_is_reproducible():
    rng = np.random.default_rng(3)
    relevant = rng.random(3000) < 0.2
    scores = np.where(relevant, rng.normal(0.55, 0.1, 3000), rng.normal(0.4, 0.1, 3000))
    data = labelled_scores(scores, relevant, [f"t{i // 5}" for i in range(3000)])
    first = choose(data, TARGET_RECALL, 0.9, resamples=300, seed=1)
    again = choose(data, TARGET_RECALL, 0.9, resamples=300, seed=1)
    assert first.interval == again.interval and first.resamples_used == 300
    assert first.interval[0] <= first.exact <= first.interval[1]
    assert first.interval[1] - first.interval[0] < 0.1


# ----------------------------------------------------------------- answerable turns


def test_answerable_and_unanswerable_turns_are_counted_apart():
    # Four turns: a and b hold a relevant hit (answerable), c and d hold none.
    rows = [
        ("a", 0.80, "relevant"), ("a", 0.30, "not_relevant"),
        ("b", 0.40, "relevant"),
        ("c", 0.50, "not_relevant"), ("c", 0.20, "not_relevant"),
        ("d", 0.10, "not_relevant"),
    ]  # fmt: skip
    data = labelled_scores([r[1] for r in rows], [r[2] for r in rows], [r[0] for r in rows])
    split = turn_split(data, np.array([0.05, 0.35, 0.45, 0.6, 0.9]))
    assert (split.answerable, split.unanswerable) == (2, 2)
    # By hand: best scores a 0.8, b 0.4 | c 0.5, d 0.1.
    assert split.no_memory_answerable.tolist() == [0, 0, 1, 1, 2]
    assert split.no_memory_unanswerable.tolist() == [0, 1, 1, 2, 2]
    assert split.answerable_share.tolist() == [0, 0, 0.5, 0.5, 1]
    assert split.unanswerable_share.tolist() == [0, 0.5, 0.5, 1, 1]

    result = cal.calibrate(data, [0.45], resamples=0)
    frame = advise(result).sweep_frame()
    at = frame[frame["floor"] == 0.45].iloc[0]
    assert (at["no_memory_share_answerable"], at["no_memory_share_unanswerable"]) == (0.5, 0.5)
    assert at["no_memory_share"] == 0.5  # the overall share stays as it was


# ----------------------------------------------------------------- warnings


def rare_overlapping(rows=4000, relevant_share=0.04, seed=5):
    """Rare relevant hits whose scores overlap the irrelevant ones'."""
    rng = np.random.default_rng(seed)
    relevant = rng.random(rows) < relevant_share
    scores = np.round(np.where(relevant, rng.normal(0.45, 0.1, rows), rng.normal(0.38, 0.1, rows)), 4)
    turns = [f"turn-{i // 10}" for i in range(rows)]
    return scores, relevant, turns


def test_rare_relevant_labels_at_cost_ratio_1_get_plain_warnings():
    scores, relevant, turns = rare_overlapping()
    data = labelled_scores(scores, relevant, turns)
    result = cal.calibrate(data, resamples=0)
    rec = result.recommendation
    assert rec.dropped_relevant > data.relevant_count / 2  # the arithmetic's answer, useless
    advice = advise(result, {TARGET_RECALL: 0.9})
    warnings = advice.warnings
    assert any(w.startswith("At every floor that keeps 90% of relevant memories, at least") for w in warnings)
    assert any(f"drops {rec.dropped_relevant} of {data.relevant_count} relevant memories" in w for w in warnings)
    assert any("of answerable turns (turns with a relevant memory) with no memory at all" in w for w in warnings)
    assert advice.diagnosis.roc_auc == pytest.approx(roc_auc_score(relevant, scores))
    # The target-recall floor keeps 90% and is exported with its mode.
    chosen = advise(result, {TARGET_RECALL: 0.9}, TARGET_RECALL)
    assert chosen.floor == chosen.choices[TARGET_RECALL].floor and chosen.chosen.recall >= 0.9
    env = chosen.env_text().splitlines()
    assert env[0] == "# memlens: floor chosen by target recall 0.90"
    assert any(line.startswith("# warning: At every floor") for line in env)
    assert env[-1] == chosen.snippet


def test_separating_labels_get_no_warning():
    data = labelled_scores([0.1, 0.2, 0.6, 0.7], ["not_relevant", "not_relevant", "relevant", "relevant"], list("aabb"))
    advice = advise(cal.calibrate(data, resamples=0), {TARGET_RECALL: 0.9, FBETA: 1.0})
    assert advice.warnings == [] and advice.diagnosis.roc_auc == 1.0


def test_an_unreachable_target_precision_exports_the_cost_floor_and_says_so():
    scores, relevant, turns = rare_overlapping()
    result = cal.calibrate(labelled_scores(scores, relevant, turns), resamples=0)
    advice = advise(result, {TARGET_PRECISION: 0.99}, TARGET_PRECISION)
    assert not advice.reached and advice.floor == result.recommendation.floor
    assert advice.warnings[-1].startswith("No floor reaches target precision 0.99; the exported floor is the cost-ratio one")


@settings(max_examples=100, deadline=None)
@given(overlapping(), st.lists(st.integers(-5, 1005), max_size=8))
def test_turn_split_equals_a_count_per_turn_at_every_floor(rows, extra):
    scores, relevant, turns = rows
    data = labelled_scores(scores, relevant, turns)
    # Many floors (every score) and few (just the extra ones) take different paths.
    for floors in (np.unique(np.concatenate([scores, np.array(extra) / 1000])), np.unique(np.array(extra) / 1000)):
        split = turn_split(data, floors)
        names = sorted(set(turns))
        answerable = {t for t in names if any(r for r, u in zip(relevant, turns, strict=True) if u == t)}
        for i, floor in enumerate(floors.tolist()):
            empty = {t for t in names if not any(s >= floor for s, u in zip(scores, turns, strict=True) if u == t)}
            assert split.no_memory_answerable[i] == len(empty & answerable)
            assert split.no_memory_unanswerable[i] == len(empty - answerable)
        assert (split.answerable, split.unanswerable) == (len(answerable), len(names) - len(answerable))


def test_a_dear_wrong_memory_is_named_as_the_reason_when_relevant_hits_are_common():
    rng = np.random.default_rng(8)
    relevant = rng.random(2000) < 0.4
    scores = np.where(relevant, rng.normal(0.5, 0.1, 2000), rng.normal(0.4, 0.1, 2000))
    result = cal.calibrate(labelled_scores(scores, relevant, [f"t{i // 5}" for i in range(2000)]), cost_ratio=20, resamples=0)
    warnings = advise(result).warnings
    assert any("(cost ratio 20) drops" in w and "A wrong memory costs 20 missed ones, so dropping" in w for w in warnings)
