"""The rule that reads the whole turn, applied with the standard library
(dashboard/turn_rule.py): the same decisions as the scikit-learn model it was fitted
as, the label-free cuts with the floor, and a reason per hit."""

from __future__ import annotations

import numpy as np
import pytest
from turn_labels_data import as_jsonl, signal_turns

from dashboard.calibration.label_files import parse_label_text
from dashboard.calibration.turn_fit import as_rule, learned_model, turn_labels
from dashboard.turn_rule import FEATURES, LARGEST_GAP, LEARNED, TOP_RATIO, RuleError, TurnRule, decide, kept_mask, turn_features


def test_the_stdlib_decision_equals_the_fitted_models_on_1000_turns():
    labels = parse_label_text(as_jsonl(signal_turns(turns=1000, seed=11)), source="signal.jsonl")
    turns = turn_labels(labels)
    model = learned_model(turns.features, turns.data.relevant)
    rule = as_rule(model, 0.4)
    expected = model.predict_proba(turns.features)[:, 1] >= 0.4
    got = np.zeros(len(expected), dtype=bool)
    rows, turn_of_row = labels.rows, turns.data.turn
    assert turn_of_row is not None  # labels with message ids: each row's turn
    for turn in np.unique(turn_of_row):
        at = np.flatnonzero(turn_of_row == turn)
        got[at] = kept_mask([rows[i].score for i in at], rule, 0.0, [int(rows[i].rank or 0) for i in at])
    assert turns.data.turns == 1000
    assert expected.sum() > 100 and (got == expected).all()


def test_largest_gap_keeps_the_hits_above_the_turns_largest_drop():
    scores = [0.81, 0.78, 0.52, 0.50, 0.47]
    assert kept_mask(scores, TurnRule(LARGEST_GAP), 0.3) == [True, True, False, False, False]
    reasons = [d.reason for d in decide(scores, TurnRule(LARGEST_GAP), 0.3)]
    assert reasons[0] == "kept: 0.81 at or above the turn's rule cut 0.78 (above the largest drop, 0.78 to 0.52) and the floor 0.30"
    assert reasons[2].startswith("dropped: 0.52 under the turn's rule cut 0.78")


def test_a_label_free_cut_still_gives_no_memory_when_every_hit_is_under_the_floor():
    # the largest drop alone always keeps the top hit; the floor beside it keeps nothing here
    scores = [0.21, 0.12, 0.11]
    for rule in (TurnRule(LARGEST_GAP), TurnRule(TOP_RATIO, cut=0.8)):
        assert kept_mask(scores, rule, 0.35) == [False, False, False]
        assert decide(scores, rule, 0.35)[0].reason.startswith("dropped: 0.21 under the floor 0.35")


def test_top_ratio_keeps_hits_near_the_turns_top_score():
    assert kept_mask([0.9, 0.75, 0.7, None], TurnRule(TOP_RATIO, cut=0.8), 0.1) == [True, True, False, False]


def test_the_learned_rule_says_its_relevance_and_cut_per_hit():
    rule = TurnRule(LEARNED, ("score", "z_score"), (3.0, 1.0), -2.0, 0.5)
    decisions = decide([0.9, 0.5, None], rule, 0.3)
    assert [d.kept for d in decisions] == [True, False, False]
    assert decisions[0].reason == "kept: relevance 0.85 (score 0.90) at or above the rule's cut 0.50"
    assert decisions[1].reason == "dropped: relevance 0.18 (score 0.50) under the rule's cut 0.50"
    assert decisions[2].reason == "dropped: no score"


def test_turn_features_describe_the_hits_place_in_its_turn():
    rows = turn_features([0.6, 0.4, 0.2], [1, 2, 3])
    by_name = [dict(zip(FEATURES, row, strict=True)) for row in rows if row is not None]
    assert [f["gap_to_top"] for f in by_name] == pytest.approx([0.0, 0.2, 0.4])
    assert [f["percentile"] for f in by_name] == [1.0, 0.5, 0.0]
    assert by_name[1]["z_score"] == pytest.approx(0.0) and by_name[0]["z_score"] > 1


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"kind": "magic"}, "kind"),
        ({"kind": LEARNED, "features": ["score", "mood"], "coefficients": [1, 2], "intercept": 0, "cut": 0.5}, "features[1]"),
        ({"kind": LEARNED, "features": ["score"], "coefficients": [1, 2], "intercept": 0, "cut": 0.5}, "coefficients"),
        ({"kind": LEARNED, "features": ["score"], "coefficients": [1], "intercept": 0, "cut": 1.5}, "cut"),
        ({"kind": TOP_RATIO, "cut": 0}, "cut"),
    ],
)
def test_a_bad_rule_names_its_field(rule, field):
    with pytest.raises(RuleError) as caught:
        TurnRule(**rule)
    assert caught.value.field == field
