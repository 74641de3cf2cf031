"""dashboard/calibration/sweep.py against brute force, scikit-learn and hand-built cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import precision_recall_curve

from dashboard.calibration import sweep as cal
from dashboard.calibration.sweep import CalibrationError, labelled_scores

# ----------------------------------------------------------------- random data


@st.composite
def labelled_rows(draw, min_size=2, max_size=60):
    """Scores on a coarse grid (so ties are common), both labels present, a turn id
    per row, and a few extra floors that may or may not be scores."""
    size = draw(st.integers(min_size, max_size))
    grid = draw(st.sampled_from([10, 20, 1000]))
    scores = draw(st.lists(st.integers(0, grid), min_size=size, max_size=size))
    relevant = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    relevant[0], relevant[1] = True, False  # both classes, always
    turns = draw(st.lists(st.integers(0, max(1, size // 3)), min_size=size, max_size=size))
    floors = draw(st.lists(st.integers(-2, grid + 2), max_size=6))
    return (
        np.array(scores, dtype=float) / grid,
        np.array(relevant),
        [f"m{t}" for t in turns],
        [f / grid for f in floors],
    )


def brute_force(scores, relevant, turns, floor):
    """The hand loop a team would write: one pass over the rows for one floor."""
    counts: dict[str, float] = dict(kept_relevant=0, kept_irrelevant=0, dropped_relevant=0, dropped_irrelevant=0)
    kept_in_turn: dict[str, int] = {turn: 0 for turn in turns}
    for score, is_relevant, turn in zip(scores, relevant, turns, strict=True):
        kept = score >= floor
        name = ("kept_" if kept else "dropped_") + ("relevant" if is_relevant else "irrelevant")
        counts[name] += 1
        kept_in_turn[turn] += kept
    counts["no_memory_share"] = sum(1 for n in kept_in_turn.values() if n == 0) / len(kept_in_turn)
    counts["mean_kept_per_turn"] = sum(kept_in_turn.values()) / len(kept_in_turn)
    return counts


@settings(max_examples=150, deadline=None)
@given(labelled_rows())
def test_sweep_equals_a_brute_force_count_at_every_floor(rows):
    scores, relevant, turns, floors = rows
    sweep = cal.sweep(labelled_scores(scores, relevant, turns), floors)
    assert sweep.floor.tolist() == sorted(set(scores.tolist()) | set(floors))
    assert sweep.requested.tolist() == [f in floors for f in sweep.floor.tolist()]
    for i, floor in enumerate(sweep.floor.tolist()):
        expected = brute_force(scores, relevant, turns, floor)
        row = sweep.row(i)
        for name, value in expected.items():
            assert row[name] == pytest.approx(value), (floor, name)
        kept = expected["kept_relevant"] + expected["kept_irrelevant"]
        if kept:
            assert row["precision"] == pytest.approx(expected["kept_relevant"] / kept)
        else:
            assert math.isnan(row["precision"])
        assert row["recall"] == pytest.approx(expected["kept_relevant"] / relevant.sum())


@settings(max_examples=150, deadline=None)
@given(labelled_rows())
def test_raising_the_floor_never_keeps_more_irrelevant_nor_drops_fewer_relevant(rows):
    scores, relevant, turns, floors = rows
    sweep = cal.sweep(labelled_scores(scores, relevant, turns), floors)
    assert np.all(np.diff(sweep.floor) > 0)
    assert np.all(np.diff(sweep.kept_irrelevant) <= 0)
    assert np.all(np.diff(sweep.dropped_relevant) >= 0)
    assert np.all(np.diff(sweep.no_memory_share) >= 0)
    assert np.all(sweep.kept_relevant + sweep.dropped_relevant == relevant.sum())
    assert np.all(sweep.kept_irrelevant + sweep.dropped_irrelevant == (~relevant).sum())


@settings(max_examples=100, deadline=None)
@given(labelled_rows(max_size=200))
def test_precision_and_recall_agree_with_scikit_learn(rows):
    scores, relevant, _, _ = rows
    sweep = cal.sweep(labelled_scores(scores, relevant))
    precision, recall, thresholds = precision_recall_curve(relevant, scores)
    # scikit-learn: one entry per distinct score ("keep score >= threshold"), plus a
    # final (precision 1, recall 0) point that belongs to no threshold.
    np.testing.assert_array_equal(sweep.floor, thresholds)
    np.testing.assert_allclose(sweep.precision, precision[:-1])
    np.testing.assert_allclose(sweep.recall, recall[:-1])


def test_a_million_rows_agree_with_scikit_learn():
    rng = np.random.default_rng(7)
    relevant = rng.random(1_000_000) < 0.3
    scores = np.where(relevant, rng.beta(5, 3, relevant.size), rng.beta(2, 5, relevant.size)).round(5)
    sweep = cal.sweep(cal.LabelledScores(scores, relevant))
    precision, recall, thresholds = precision_recall_curve(relevant, scores)
    np.testing.assert_array_equal(sweep.floor, thresholds)
    np.testing.assert_allclose(sweep.precision, precision[:-1])
    np.testing.assert_allclose(sweep.recall, recall[:-1])


def test_a_requested_floor_between_scores_counts_like_the_next_score_up():
    data = labelled_scores([0.1, 0.3, 0.5, 0.7], ["not_relevant", "relevant", "not_relevant", "relevant"])
    sweep = cal.sweep(data, [0.33])
    at_033, at_05 = sweep.at(0.33), sweep.at(0.5)
    assert at_033["requested"] and not at_05["requested"]
    for name in ("kept_relevant", "kept_irrelevant", "dropped_relevant", "dropped_irrelevant"):
        assert at_033[name] == at_05[name]
    assert (at_033["kept_irrelevant"], at_033["dropped_relevant"]) == (1, 1)


def test_without_message_ids_there_is_no_turn_share():
    sweep = cal.sweep(labelled_scores([0.2, 0.6], ["not_relevant", "relevant"]))
    assert sweep.no_memory_share is None and sweep.mean_kept_per_turn is None
    assert np.isnan(sweep.to_frame()["no_memory_share"]).all()


def test_share_of_turns_with_no_memory():
    # Turn a's best hit scores 0.3, turn b's 0.8: a floor of 0.5 empties turn a only.
    data = labelled_scores(
        [0.3, 0.1, 0.8, 0.2], ["relevant", "not_relevant", "relevant", "not_relevant"], ["a", "a", "b", "b"]
    )
    row = cal.sweep(data, [0.5]).at(0.5)
    assert row["no_memory_share"] == 0.5
    assert row["mean_kept_per_turn"] == 0.5


# ----------------------------------------------------------------- the band


# docs/domain.md, "Floors come from labels": one user, ~20 memories. Off-topic hits scored 0.119 (pizza), 0.136
# and 0.126 (programming language); relevant ones 0.43 ("Lives in Lisbon") to 0.64.
OFF_TOPIC = [0.119, 0.136, 0.126]
ON_TOPIC = [0.4285, 0.64, 0.51]


def domain_example():
    return labelled_scores(
        OFF_TOPIC + ON_TOPIC,
        ["not_relevant"] * 3 + ["relevant"] * 3,
        ["pizza", "language", "language", "home", "theme", "race"],
    )


def test_separating_band_of_the_domain_example_is_0_14_to_0_42():
    band = cal.separating_band(domain_example())
    assert (band.low, band.high) == (0.136, 0.4285)
    assert band.rounded() == (0.14, 0.42)
    assert "0.14-0.42" in band.describe()
    sweep = cal.sweep(domain_example(), [0.13, 0.14, 0.42, 0.43])
    for inside in (0.14, 0.42):
        row = sweep.at(inside)
        assert (row["kept_irrelevant"], row["dropped_relevant"]) == (0, 0)
    assert sweep.at(0.13)["kept_irrelevant"] == 1  # the 0.136 language hit gets in
    assert sweep.at(0.43)["dropped_relevant"] == 1  # "Lives in Lisbon" is dropped


@pytest.mark.parametrize(
    "irrelevant, relevant",
    [
        ([0.1, 0.5], [0.4, 0.9]),  # an irrelevant hit above a relevant one
        ([0.1, 0.4], [0.4, 0.9]),  # a tie: no floor keeps one and drops the other
    ],
)
def test_no_band_when_the_labels_overlap(irrelevant, relevant):
    data = labelled_scores(irrelevant + relevant, ["not_relevant"] * 2 + ["relevant"] * 2)
    assert cal.separating_band(data) is None


def test_a_band_narrower_than_two_decimals_has_no_rounded_form():
    band = cal.Band(0.301, 0.309)
    assert band.rounded() is None
    assert band.rounded(3) == (0.302, 0.309)


# ----------------------------------------------------------------- cost-optimal floor

# Sorted: 0.1 I, 0.2 I, 0.25 R, 0.3 I, 0.4 R, 0.5 I, 0.6 R, 0.7 R. Kept irrelevant and
# dropped relevant for each range of floors, worked out by hand:
#   (-inf,0.1] 4/0   (0.1,0.2] 3/0   (0.2,0.25] 2/0   (0.25,0.3] 2/1   (0.3,0.4] 1/1
#   (0.4,0.5] 1/2    (0.5,0.6] 0/2   (0.6,0.7] 0/3    above 0.7  0/4
HAND_IRRELEVANT = [0.1, 0.2, 0.3, 0.5]
HAND_RELEVANT = [0.25, 0.4, 0.6, 0.7]


def hand_built(with_turns=True):
    ids = [f"t{i}" for i in range(8)] if with_turns else None
    return labelled_scores(HAND_IRRELEVANT + HAND_RELEVANT, ["not_relevant"] * 4 + ["relevant"] * 4, ids)


@pytest.mark.parametrize(
    "cost_ratio, low, high, kept_irrelevant, dropped_relevant, cost",
    [
        (3.0, 0.5, 0.6, 0, 2, 2.0),  # 3*0+2 beats 3*1+1 = 4 at (0.3, 0.4]
        (1.2, 0.5, 0.6, 0, 2, 2.0),  # 2 beats 1.2*1+1 = 2.2 at (0.3, 0.4] and 1.2*2 = 2.4 at (0.2, 0.25]
        (0.9, 0.2, 0.25, 2, 0, 1.8),  # 0.9*2 = 1.8 beats 1.9 and 2: the choice flips below 1
        (0.5, 0.2, 0.25, 2, 0, 1.0),  # missing a memory is the dear mistake: keep more
        (1.0, 0.2, 0.25, 2, 0, 2.0),  # a three-way tie at cost 2 goes to the lowest floors
    ],
)
def test_cost_optimal_floor_on_a_hand_built_case(cost_ratio, low, high, kept_irrelevant, dropped_relevant, cost):
    rec = cal.recommend(hand_built(), cost_ratio, resamples=0)
    assert (rec.low, rec.high) == (low, high)
    assert rec.exact == pytest.approx((low + high) / 2)
    assert low < rec.floor <= high
    assert (rec.kept_irrelevant, rec.dropped_relevant, rec.cost) == (kept_irrelevant, dropped_relevant, cost)


def test_recommended_floor_is_short_and_pasteable():
    rec = cal.recommend(hand_built(), 3.0, resamples=0)
    assert rec.floor == 0.55 and rec.snippet == "MEMORY_SCORE_FLOOR=0.55"


def test_a_very_dear_wrong_memory_can_recommend_keeping_nothing():
    # The best-scoring hit is irrelevant: only a floor above it keeps no wrong memory.
    data = labelled_scores([0.2, 0.9, 0.5], ["relevant", "not_relevant", "relevant"])
    rec = cal.recommend(data, 100.0, resamples=0)
    assert rec.low == 0.9 and math.isinf(rec.high)
    assert rec.floor > 0.9 and rec.kept_irrelevant == 0 and rec.dropped_relevant == 2


@settings(max_examples=100, deadline=None)
@given(labelled_rows(), st.sampled_from([0.25, 1.0, 2.0, 7.5]))
def test_recommended_floor_has_the_least_brute_force_cost(rows, cost_ratio):
    scores, relevant, turns, _ = rows
    rec = cal.recommend(labelled_scores(scores, relevant, turns), cost_ratio, resamples=0)

    def cost(floor):
        counts = brute_force(scores, relevant, turns, floor)
        return cost_ratio * counts["kept_irrelevant"] + counts["dropped_relevant"]

    candidates = sorted(set(scores.tolist())) + [scores.max() + 1]
    assert cost(rec.floor) == pytest.approx(min(cost(f) for f in candidates))
    assert rec.cost == pytest.approx(cost(rec.floor))


def test_bootstrap_is_reproducible_and_brackets_the_estimate():
    rng = np.random.default_rng(3)
    relevant = rng.random(600) < 0.3
    scores = np.where(relevant, rng.normal(0.55, 0.08, 600), rng.normal(0.3, 0.08, 600))
    turns = [f"m{i // 5}" for i in range(600)]
    data = labelled_scores(scores, relevant, turns)
    first = cal.recommend(data, 2.0, resamples=300, seed=11)
    again = cal.recommend(data, 2.0, resamples=300, seed=11)
    assert first.interval == again.interval
    assert first.interval is not None
    low, high = first.interval
    assert low <= first.exact <= high
    assert 0.3 < low < high < 0.55  # between the two class centres
    assert first.resampled == "turns" and first.resamples_used == 300


def test_bootstrap_resamples_turns_not_rows():
    # Ten turns, the relevant rows all in one: a resample of turns leaves that turn out
    # 0.9^10 = 35% of the time, loses the relevant class, and is set aside. Resampling
    # the 40 rows one by one would almost never lose a class. (Two turns, as this test
    # had before issue 53, are now too few for any interval: see the test below.)
    scores = [0.6 + i / 1000 for i in range(20)] + [0.2 + i / 1000 for i in range(20)]
    labels = ["relevant"] * 20 + ["not_relevant"] * 20
    turns = ["a"] * 20 + [f"b{i % 9}" for i in range(20)]
    by_turn = cal.recommend(labelled_scores(scores, labels, turns), resamples=400)
    by_row = cal.recommend(labelled_scores(scores, labels), resamples=400)
    assert 200 < by_turn.resamples_used < 320
    assert by_row.resamples_used == 400 and by_row.resampled == "rows"


def test_a_bootstrap_over_fewer_turns_than_the_minimum_gives_no_interval_and_says_why():
    # Issue 53: two labels from one turn gave "95% interval 0.23-0.235 (1000 resamples of turns)".
    from dashboard.calibration.bootstrap import MIN_INTERVAL_TURNS
    from dashboard.calibration.choice import TARGET_RECALL, choose

    one_turn = labelled_scores([0.25, 0.21], ["relevant", "not_relevant"], ["t1", "t1"])
    rec = cal.recommend(one_turn, resamples=1000)
    assert rec.floor == 0.23 and rec.interval is None and rec.resamples_used == 0
    assert rec.interval_note == f"no interval: the labels hold 1 turn, fewer than the {MIN_INTERVAL_TURNS} a bootstrap of turns needs"
    assert cal.recommend(one_turn, resamples=0).interval_note is None  # no interval asked for, none withheld
    assert choose(one_turn, TARGET_RECALL, 0.9, resamples=100).interval_note == rec.interval_note
    rows_only = labelled_scores([0.25, 0.21, 0.3], ["relevant", "not_relevant", "relevant"])
    assert cal.recommend(rows_only, resamples=100).interval_note == (
        f"no interval: the labels hold 3 rows, fewer than the {MIN_INTERVAL_TURNS} a bootstrap of rows needs"
    )
    # At the minimum the interval is back.
    scores = [0.6 + i / 100 for i in range(MIN_INTERVAL_TURNS)] + [0.2 + i / 100 for i in range(MIN_INTERVAL_TURNS)]
    labels = ["relevant"] * MIN_INTERVAL_TURNS + ["not_relevant"] * MIN_INTERVAL_TURNS
    enough = labelled_scores(scores, labels, [f"t{i % MIN_INTERVAL_TURNS}" for i in range(2 * MIN_INTERVAL_TURNS)])
    assert cal.recommend(enough, resamples=200).interval is not None


def test_calibrate_bundles_everything_and_notes_missing_message_ids():
    result = cal.calibrate(hand_built(with_turns=False), [0.35], 3.0, resamples=50)
    assert result.requested.floor.tolist() == [0.35]
    assert result.band is None
    assert result.recommendation.floor == 0.55
    assert any("No message ids" in note for note in result.notes)


# ----------------------------------------------------------------- unusable input


def test_no_labels():
    with pytest.raises(CalibrationError, match="No labelled rows"):
        labelled_scores([], [])


@pytest.mark.parametrize("only", ["relevant", "not_relevant"])
def test_one_class_only(only):
    with pytest.raises(CalibrationError, match=f"All 3 labelled rows are '{only}'"):
        labelled_scores([0.1, 0.2, 0.3], [only] * 3)


def test_missing_and_nan_scores_name_their_rows():
    with pytest.raises(CalibrationError) as error:
        labelled_scores([0.1, None, float("nan"), 0.4, "0.5", True], ["relevant", "not_relevant"] * 3)
    assert "rows 2, 3, 5, 6" in str(error.value)


def test_unknown_labels_name_values_and_rows():
    with pytest.raises(CalibrationError) as error:
        labelled_scores(
            [0.1, 0.2, 0.3, 0.4, 0.5],
            ["relevant", "yes", "not_relevant", "yes", 1],
            row_numbers=[10, 11, 12, 13, 14],
            row_name="line",
        )
    message = str(error.value)
    assert "'yes' (lines 11, 13)" in message and "1 (line 14)" in message
    assert "expected 'relevant' or 'not_relevant'" in message


def test_long_lists_of_bad_rows_are_cut_short():
    with pytest.raises(CalibrationError, match=r"rows 1, 2, 3, 4, 5 and 45 more"):
        labelled_scores([None] * 50, ["relevant"] * 50)


def test_message_ids_must_be_on_every_row_or_none():
    with pytest.raises(CalibrationError, match="message_id missing in row 2"):
        labelled_scores([0.1, 0.9], ["not_relevant", "relevant"], ["m1", None])


def test_cost_ratio_must_be_positive():
    with pytest.raises(CalibrationError, match="cost ratio"):
        cal.recommend(hand_built(), 0.0)


@pytest.mark.parametrize("floor, text", [(0.2, "0.20"), (0.35, "0.35"), (0.375, "0.375"), (1.0, "1.00")])
def test_format_floor(floor, text):
    assert cal.format_floor(floor) == text


@pytest.mark.parametrize("rows, resamples", [(190, 1000), (20_000, 1000), (100_000, 200), (1_000_000, 100)])
def test_fewer_resamples_on_large_label_sets(rows, resamples):
    assert cal.default_resamples(rows) == resamples


# ----------------------------------------------------------------- the interval as shown


def shown_contains(floor: float, interval: tuple[float, float]) -> bool:
    """What a reader sees: the printed low, floor and high, read back as numbers."""
    low, high = cal.shown_interval(floor, interval)
    return float(cal.format_floor(low)) <= float(cal.format_floor(floor)) <= float(cal.format_floor(high))


def test_the_issues_case_a_floor_of_0_23_is_inside_its_shown_interval():
    low, high = cal.shown_interval(0.23, (0.2349, 0.2349))  # was printed "0.235-0.235" beside "0.23"
    assert (cal.format_floor(low), cal.format_floor(high)) == ("0.23", "0.235")
    assert cal.shown_interval(0.41, (0.3712, 0.4488)) == (0.371, 0.449)  # rounded outward, never inward


@settings(max_examples=500, deadline=None)
@given(
    st.floats(-2, 2, allow_nan=False),
    st.floats(-2, 2, allow_nan=False),
    st.floats(-2, 2, allow_nan=False),
)
def test_the_shown_interval_always_holds_the_shown_floor_and_the_exact_interval(floor, a, b):
    interval = (min(a, b), max(a, b))
    low, high = cal.shown_interval(floor, interval)
    assert low <= min(interval[0], floor) and high >= max(interval[1], floor)
    assert round(low, cal.INTERVAL_DECIMALS) == low and round(high, cal.INTERVAL_DECIMALS) == high
    assert shown_contains(floor, interval)


@settings(max_examples=60, deadline=None)
@given(labelled_rows(max_size=80))
def test_every_recommended_floor_lies_inside_its_interval_as_shown(rows):
    scores, relevant, turns, _ = rows
    data = labelled_scores(scores, np.where(relevant, "relevant", "not_relevant"), turns)
    rec = cal.calibrate(data, [], 1.0, resamples=50).recommendation
    if rec.interval is not None and all(math.isfinite(v) for v in (rec.floor, *rec.interval)):
        assert shown_contains(rec.floor, rec.interval)
