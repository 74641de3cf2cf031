"""Fitting a rule that reads the whole turn, and its honest held-out figures (issue 54).

Four ways to decide a hit, compared on the same labels at the same target:

* the single floor (the score alone);
* ``learned``: scikit-learn's logistic regression over the turn features of
  dashboard/turn_rule.py (standardised, L2-regularised), its probability cut;
* ``largest-gap``: Adaptive-k (Taguchi et al., EMNLP 2025), with the floor;
* ``top-ratio``: a share of the turn's top score, with the floor.

Every figure is held out. The turns are split into folds (``GroupKFold`` on the
message id, so no turn is on both sides); on each fold the model is fitted and the
cut (for the label-free cuts: the floor beside them) is chosen on the training turns
by the floor's own chooser (calibration/choice.py: target recall, target precision;
sweep.recommend: cost ratio), then applied to the held-out turns. The out-of-fold
decisions give precision, recall and the share of turns left with no memory, with
95% intervals from the bootstrap of turns the floor uses (bootstrap.resampled_totals).
The draws depend only on the rows, the turns and the seed, so every rule is measured
on the same resamples, and the difference between two rules has its own interval.

The recommendation: a rule only when it beats the single floor beyond the interval
(the interval of the difference lies above 0), and the learned rule only when it is
not worse than the largest-gap cut at that cut's own recall (the difference's
interval reaches 0 or above); otherwise the simpler rule that is as good is named.

The features that need the whole turn come from the turn's labelled hits, so every
hit of each turn must be labelled (a sampled session's labels are refused).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dashboard.calibration.bootstrap import default_resamples, no_interval_reason, resampled_totals
from dashboard.calibration.choice import COST_RATIO, FBETA, TARGET_PRECISION, TARGET_RECALL, choose, mode_name
from dashboard.calibration.label_files import LabelFile
from dashboard.calibration.scores import CalibrationError, LabelledScores
from dashboard.calibration.sweep import recommend, sweep
from dashboard.turn_rule import FEATURES, FLOOR, LARGEST_GAP, LEARNED, TOP_RATIO, TurnRule, kept_mask, turn_features

RULES = (LEARNED, LARGEST_GAP, TOP_RATIO)
COMPARED = (FLOOR, *RULES)
DEFAULT_TOP_RATIO = 0.8
DEFAULT_FOLDS = 5
REGULARISATION = 1.0  # LogisticRegression's C (L2): features are standardised first
CONFIDENCE = 0.95


# ----------------------------------------------------------------- the turns of the labels


@dataclass(frozen=True)
class TurnLabels:
    """The labels with each row's turn features, and whether it passes each label-free cut."""

    data: LabelledScores  # scores, relevant, turn codes
    features: np.ndarray  # rows x len(FEATURES), as turn_rule.turn_features gives them
    ranks: np.ndarray  # the rank each row's features used
    passes_gap: np.ndarray  # bool: at or above its turn's largest-gap cut
    passes_ratio: np.ndarray  # bool: at or above its turn's top-ratio cut
    top_ratio: float


def turn_labels(labels: LabelFile, top_ratio: float = DEFAULT_TOP_RATIO) -> TurnLabels:
    """The labels grouped into turns, each row's features computed from its turn's
    labelled hits by the agent side's own function. Raises CalibrationError when the
    labels have no turns or only a sample of each turn's hits."""
    data = labels.labelled_scores()
    if data.turn is None:
        raise CalibrationError("a rule that reads the whole turn needs a message_id on every row (the turn each hit belongs to)")
    if data.sampled:
        raise CalibrationError(
            f"{data.sampled:,} of {data.turns:,} turns have no labelled rank-1 hit: a rule reading the whole turn "
            "needs every hit of each turn labelled (its features come from the turn's hits)"
        )
    ranks_given = all(row.rank is not None for row in labels.rows)
    features = np.zeros((len(data), len(FEATURES)))
    ranks = np.zeros(len(data), dtype=np.int64)
    passes_gap = np.zeros(len(data), dtype=bool)
    passes_ratio = np.zeros(len(data), dtype=bool)
    gap_rule, ratio_rule = TurnRule(LARGEST_GAP), TurnRule(TOP_RATIO, cut=top_ratio)
    order = np.argsort(data.turn, kind="stable")
    bounds = np.flatnonzero(np.diff(data.turn[order])) + 1
    for rows in np.split(order, bounds):
        scores = data.scores[rows].tolist()
        if ranks_given:
            turn_ranks = [labels.rows[i].rank or 0 for i in rows.tolist()]
        else:  # no ranks in the file: the store's order is taken to be the score's
            by_score = sorted(range(len(scores)), key=lambda i: -scores[i])
            turn_ranks = [0] * len(scores)
            for position, i in enumerate(by_score, start=1):
                turn_ranks[i] = position
        features[rows] = turn_features(scores, turn_ranks)
        ranks[rows] = turn_ranks
        passes_gap[rows] = kept_mask(scores, gap_rule, -math.inf)
        passes_ratio[rows] = kept_mask(scores, ratio_rule, -math.inf)
    return TurnLabels(data, features, ranks, passes_gap, passes_ratio, top_ratio)


def grouped_folds(turn: np.ndarray, folds: int = DEFAULT_FOLDS) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train rows, test rows) per fold, split by turn: no turn on both sides."""
    from sklearn.model_selection import GroupKFold

    turns = len(np.unique(turn))
    if turns < 2:
        raise CalibrationError(f"the labels hold {turns} turn: held-out figures need at least 2 turns")
    splitter = GroupKFold(n_splits=min(folds, turns))
    return list(splitter.split(np.zeros(len(turn)), groups=turn))


def learned_model(features: np.ndarray, relevant: np.ndarray) -> Any:
    """Standardised features, then L2-regularised logistic regression (fixed solver: no randomness)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(C=REGULARISATION, max_iter=1000))
    return model.fit(features, relevant)


def as_rule(model: Any, cut: float) -> TurnRule:
    """The fitted pipeline as the floor file's rule: the scaling folded into the
    coefficients, so the agent applies it to the features as they are."""
    scaler, logistic = model[0], model[-1]
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    coefficients = logistic.coef_[0] / scale
    intercept = float(logistic.intercept_[0] - np.sum(logistic.coef_[0] * scaler.mean_ / scale))
    return TurnRule(LEARNED, FEATURES, tuple(float(c) for c in coefficients), intercept, _probability(cut))


def _probability(cut: float) -> float:
    """A chosen probability cut kept strictly inside (0, 1), as the rule file requires."""
    return float(min(max(cut, 1e-12), 1 - 1e-12))


# ----------------------------------------------------------------- choosing a cut on training rows


def _part(data: LabelledScores, values: np.ndarray, rows: np.ndarray) -> LabelledScores:
    """The rows as calibration input with ``values`` for scores, turn codes renumbered."""
    codes = np.unique(data.turn[rows], return_inverse=True)[1] if data.turn is not None else None
    return LabelledScores(
        values[rows], data.relevant[rows], None if codes is None else codes.astype(np.int64),
        0 if codes is None else int(codes.max()) + 1,
    )  # fmt: skip


def choose_cut(data: LabelledScores, values: np.ndarray, rows: np.ndarray, mode: str, target: float) -> float:
    """The threshold on ``values`` the floor's chooser picks on ``rows``: a hit is kept
    when its value is at or above it. A target precision out of reach takes the best
    precision's threshold; rows of one class keep everything (the lowest value)."""
    part = _part(data, values, rows)
    if part.relevant.all() or not part.relevant.any():
        return float(part.scores.min())
    if mode == COST_RATIO:
        return recommend(part, target, resamples=0).floor
    choice = choose(part, mode, target, resamples=0)
    if choice.floor is not None:
        return choice.floor
    return float(choice.best_floor) if choice.best_floor is not None else math.inf


def _gated(values: np.ndarray, passes: np.ndarray) -> tuple[np.ndarray, float]:
    """Scores with the hits a label-free cut drops set below every score: a threshold
    on these is the floor beside the cut. Returns them and the value given to the dropped."""
    below = float(values.min()) - 1.0
    return np.where(passes, values, below), below


# ----------------------------------------------------------------- the comparison


@dataclass
class RuleFigures:
    """One rule's held-out outcome at the target, with 95% intervals over turns."""

    rule: str
    kept: np.ndarray  # out-of-fold decision per labelled row
    precision: float
    recall: float
    no_memory_share: float
    precision_interval: tuple[float, float] | None = None
    recall_interval: tuple[float, float] | None = None
    no_memory_interval: tuple[float, float] | None = None

    def line(self) -> str:
        def shown(value: float, interval: tuple[float, float] | None, share: bool = False) -> str:
            text = f"{value:.0%}" if share else _ratio(value)
            if interval is None:
                return text
            low, high = interval
            return f"{text} ({low:.0%}-{high:.0%})" if share else f"{text} ({_ratio(low)}-{_ratio(high)})"

        return (
            f"held out, {RULE_NAMES[self.rule]}: precision {shown(self.precision, self.precision_interval)}, "
            f"recall {shown(self.recall, self.recall_interval)}, no memory in "
            f"{shown(self.no_memory_share, self.no_memory_interval, share=True)} of turns"
        )

    def as_dict(self) -> dict[str, Any]:
        data = {key: value for key, value in dataclasses.asdict(self).items() if key != "kept"}
        for key in ("precision_interval", "recall_interval", "no_memory_interval"):
            data[key] = list(data[key]) if data[key] is not None else None
        return _plain(data)


RULE_NAMES = {
    FLOOR: "single floor",
    LEARNED: "learned rule",
    LARGEST_GAP: "largest-gap cut + floor",
    TOP_RATIO: "top-ratio cut + floor",
}


@dataclass
class Difference:
    """Rule minus the single floor (or another rule) on one figure, over the same resamples."""

    rule: str
    against: str
    figure: str  # "precision", "recall" or "cost" (lower is better for cost: the sign is flipped)
    value: float
    interval: tuple[float, float] | None

    @property
    def better(self) -> bool:
        """Better beyond the interval: the whole interval above 0."""
        return self.interval is not None and self.interval[0] > 0

    @property
    def not_worse(self) -> bool:
        """Not shown worse: the interval reaches 0 or above (no interval: the point value)."""
        return (self.interval[1] if self.interval is not None else self.value) >= 0

    def text(self) -> str:
        interval = f", 95% interval {self.interval[0]:+.3f} to {self.interval[1]:+.3f}" if self.interval else ""
        return f"{RULE_NAMES[self.rule]} vs {RULE_NAMES[self.against]}: {self.figure} {self.value:+.3f}{interval}"


@dataclass
class RuleComparison:
    """What the held-out comparison says, for the CLI, the page and the floor file."""

    mode: str
    target: float
    figures: dict[str, RuleFigures]  # FLOOR and each rule at the target
    against_floor: dict[str, Difference]  # each rule against the single floor
    gap_recall: float  # the largest-gap cut's held-out recall
    learned_at_gap: RuleFigures  # the learned rule chosen at that recall
    learned_vs_gap: Difference  # its precision against the largest-gap cut's
    recommended: str  # FLOOR or a rule kind
    reason: str
    folds: int
    turns: int
    resamples: int
    interval_note: str | None
    top_ratio: float
    # the rules fitted on every label, at the target: what --floor-config-out writes
    final: dict[str, tuple[TurnRule, float]] = field(default_factory=dict)  # kind -> (rule, floor beside it)
    oof_values: dict[str, np.ndarray] = field(default_factory=dict)  # per rule: the held-out value a threshold is put on
    relevant: np.ndarray | None = None

    @property
    def name(self) -> str:
        return mode_name(self.mode, self.target)

    def lines(self) -> list[str]:
        """The CLI's lines: the figures of each, the tests, the recommendation."""
        lines = [
            f"held-out comparison at {self.name} ({self.folds}-fold cross-validation by turn over {self.turns} turns; "
            + (f"95% intervals over {self.resamples} resamples of turns)" if self.interval_note is None else f"{self.interval_note})")
        ]
        lines += [self.figures[name].line() for name in COMPARED]
        lines += [difference.text() for difference in self.against_floor.values()]
        lines.append(
            f"learned rule at the largest-gap cut's recall {self.gap_recall:.2f}: precision "
            f"{_ratio(self.learned_at_gap.precision)} against {_ratio(self.figures[LARGEST_GAP].precision)} "
            f"({self.learned_vs_gap.text()})"
        )
        lines.append(f"recommended rule: {RULE_NAMES[self.recommended]}: {self.reason}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return _plain(
            {
                "mode": self.mode,
                "target": self.target,
                "name": self.name,
                "folds": self.folds,
                "turns": self.turns,
                "resamples": self.resamples,
                "interval_note": self.interval_note,
                "top_ratio": self.top_ratio,
                "figures": {name: figures.as_dict() for name, figures in self.figures.items()},
                "against_floor": {name: _difference_dict(d) for name, d in self.against_floor.items()},
                "gap_recall": self.gap_recall,
                "learned_at_gap": self.learned_at_gap.as_dict(),
                "learned_vs_gap": _difference_dict(self.learned_vs_gap),
                "recommended": self.recommended,
                "reason": self.reason,
            }
        )


def _difference_dict(difference: Difference) -> dict[str, Any]:
    data = dataclasses.asdict(difference)
    data["interval"] = list(difference.interval) if difference.interval else None
    data["better"], data["not_worse"] = difference.better, difference.not_worse
    return data


def _ratio(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.3f}"


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def compare_rules(
    turns: TurnLabels,
    mode: str = TARGET_RECALL,
    target: float = 0.9,
    *,
    folds: int = DEFAULT_FOLDS,
    resamples: int | None = None,
    seed: int = 0,
) -> RuleComparison:
    """The single floor, the learned rule and the two label-free cuts, held out by
    turn at ``mode``/``target``, with intervals over turns and the recommendation."""
    if mode == FBETA:
        raise CalibrationError("a turn rule is chosen by target recall, target precision or cost ratio")
    data = turns.data
    splits = grouped_folds(data.turn, folds)  # type: ignore[arg-type]  # turn_labels made sure
    for train, _ in splits:
        if data.relevant[train].all() or not data.relevant[train].any():
            raise CalibrationError("a training fold holds one label class only: too few turns with both labels to fit a rule")
    # the learned model per fold, fitted once: its training and held-out probabilities
    fitted = []
    oof_probability = np.zeros(len(data))
    for train, test in splits:
        model = learned_model(turns.features[train], data.relevant[train])
        in_sample = np.zeros(len(data))
        in_sample[train] = model.predict_proba(turns.features[train])[:, 1]
        oof_probability[test] = model.predict_proba(turns.features[test])[:, 1]
        fitted.append((train, test, in_sample))
    gap_values, _ = _gated(data.scores, turns.passes_gap)
    ratio_values, _ = _gated(data.scores, turns.passes_ratio)

    def held_out(values_of_fold, at_mode: str, at_target: float) -> np.ndarray:
        kept = np.zeros(len(data), dtype=bool)
        for train, test, in_sample in fitted:
            train_values, test_values = values_of_fold(in_sample, train, test)
            cut = choose_cut(data, train_values, train, at_mode, at_target)
            kept[test] = test_values[test] >= cut
        return kept

    kept = {
        FLOOR: held_out(lambda _p, _tr, _te: (data.scores, data.scores), mode, target),
        LEARNED: held_out(lambda p, _tr, _te: (p, oof_probability), mode, target),
        LARGEST_GAP: held_out(lambda _p, _tr, _te: (gap_values, gap_values), mode, target),
        TOP_RATIO: held_out(lambda _p, _tr, _te: (ratio_values, ratio_values), mode, target),
    }
    gap_recall = _recall(kept[LARGEST_GAP], data.relevant)
    kept_learned_at_gap = held_out(lambda p, _tr, _te: (p, oof_probability), TARGET_RECALL, max(gap_recall, 1e-9))

    if resamples is None:
        resamples = default_resamples(len(data))
    note = no_interval_reason(data) if resamples > 0 else "no intervals: no resamples asked for"
    draws = _resampled_figures(data, {**kept, "learned_at_gap": kept_learned_at_gap}, resamples, seed) if note is None else None
    figure = _figure_of(mode)
    figures = {name: _figures(name, kept[name], data, draws) for name in COMPARED}
    learned_at_gap = _figures(LEARNED, kept_learned_at_gap, data, draws, key="learned_at_gap")
    against_floor = {name: _difference(name, FLOOR, figure, kept, data, draws, target if mode == COST_RATIO else None) for name in RULES}
    learned_vs_gap = _difference("learned_at_gap", LARGEST_GAP, "precision", {**kept, "learned_at_gap": kept_learned_at_gap}, data, draws, None)
    learned_vs_gap.rule = LEARNED
    recommended, reason = _recommend(against_floor, learned_vs_gap, figure)

    final = _final_rules(turns, mode, target, gap_values, ratio_values)
    return RuleComparison(
        mode=mode, target=float(target), figures=figures, against_floor=against_floor, gap_recall=gap_recall,
        learned_at_gap=learned_at_gap, learned_vs_gap=learned_vs_gap, recommended=recommended, reason=reason,
        folds=len(splits), turns=data.turns, resamples=resamples if note is None else 0, interval_note=note,
        top_ratio=turns.top_ratio, final=final,
        oof_values={FLOOR: data.scores, LEARNED: oof_probability, LARGEST_GAP: gap_values, TOP_RATIO: ratio_values},
        relevant=data.relevant,
    )  # fmt: skip


def _final_rules(
    turns: TurnLabels, mode: str, target: float, gap_values: np.ndarray, ratio_values: np.ndarray
) -> dict[str, tuple[TurnRule, float]]:
    """Each rule fitted on every label, its cut (or the floor beside it) chosen at the target."""
    data = turns.data
    every = np.arange(len(data))
    model = learned_model(turns.features, data.relevant)
    probability = model.predict_proba(turns.features)[:, 1]
    final: dict[str, tuple[TurnRule, float]] = {}
    floor = choose_cut(data, data.scores, every, mode, target)
    final[LEARNED] = (as_rule(model, choose_cut(data, probability, every, mode, target)), floor)
    lowest = float(data.scores.min())
    # a threshold at the value given to the cut's dropped hits is no floor: the lowest score keeps every hit past the cut
    final[LARGEST_GAP] = (TurnRule(LARGEST_GAP), max(choose_cut(data, gap_values, every, mode, target), lowest))
    final[TOP_RATIO] = (TurnRule(TOP_RATIO, cut=turns.top_ratio), max(choose_cut(data, ratio_values, every, mode, target), lowest))
    return final


# ----------------------------------------------------------------- figures and intervals


def _recall(kept: np.ndarray, relevant: np.ndarray) -> float:
    return float((kept & relevant).sum() / relevant.sum())


def _figure_of(mode: str) -> str:
    """What a rule must do better at this target: at a target recall, precision; at a
    target precision, recall; at a cost ratio, the cost."""
    return {TARGET_RECALL: "precision", TARGET_PRECISION: "recall", COST_RATIO: "cost"}[mode]


def _point(kept: np.ndarray, data: LabelledScores) -> tuple[float, float, float]:
    kept_relevant = float((kept & data.relevant).sum())
    kept_all = float(kept.sum())
    precision = kept_relevant / kept_all if kept_all else math.nan
    recall = kept_relevant / float(data.relevant.sum())
    any_kept = np.zeros(data.turns, dtype=bool)
    any_kept[data.turn[kept]] = True  # type: ignore[index]
    return precision, recall, float((~any_kept).mean())


def _resampled_figures(
    data: LabelledScores, kept: dict[str, np.ndarray], resamples: int, seed: int
) -> dict[str, dict[str, np.ndarray]]:
    """Per rule, per resample of turns: kept relevant, kept irrelevant, relevant in
    all, turns with no memory. Every rule on the same draws (bootstrap.resampled_totals
    draws by seed, rows and turns alone), so differences are paired."""
    turn = data.turn
    assert turn is not None  # turn_labels made sure
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, mask in kept.items():
        order = np.argsort(mask, kind="stable")  # dropped rows first: the kept are the tail
        dropped = int((~mask).sum())
        parts: dict[str, list[np.ndarray]] = {"kept_relevant": [], "kept_irrelevant": [], "relevant": []}
        for relevant_before, irrelevant_before in resampled_totals(data, order, resamples, seed):
            parts["kept_relevant"].append(relevant_before[:, -1] - relevant_before[:, dropped])
            parts["kept_irrelevant"].append(irrelevant_before[:, -1] - irrelevant_before[:, dropped])
            parts["relevant"].append(relevant_before[:, -1])
        # turns with no memory: one row per turn marked when its turn keeps nothing,
        # resampled over the same rows and turns (so the same draws)
        any_kept = np.zeros(data.turns, dtype=bool)
        any_kept[turn[mask]] = True
        first_row = np.zeros(len(data), dtype=bool)
        first_row[np.unique(turn, return_index=True)[1]] = True
        empty = LabelledScores(data.scores, first_row & ~any_kept[turn], turn, data.turns)
        parts["no_memory"] = [before[:, -1] for before, _ in resampled_totals(empty, np.arange(len(data)), resamples, seed)]
        out[name] = {key: np.concatenate(values) for key, values in parts.items()}
    return out


def _interval(values: np.ndarray) -> tuple[float, float] | None:
    values = values[np.isfinite(values)]
    if not len(values):
        return None
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def _resampled(draws: dict[str, np.ndarray], figure: str, turns: int, cost_ratio: float | None = None) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        if figure == "precision":
            return draws["kept_relevant"] / (draws["kept_relevant"] + draws["kept_irrelevant"])
        if figure == "recall":
            return draws["kept_relevant"] / draws["relevant"]
        if figure == "no_memory":
            return draws["no_memory"] / turns
        # cost per turn, negated so that higher is better like the others
        dropped_relevant = draws["relevant"] - draws["kept_relevant"]
        return -((cost_ratio or 1.0) * draws["kept_irrelevant"] + dropped_relevant) / turns


def _figures(name: str, kept: np.ndarray, data: LabelledScores, draws: dict | None, key: str | None = None) -> RuleFigures:
    precision, recall, no_memory = _point(kept, data)
    figures = RuleFigures(name, kept, precision, recall, no_memory)
    if draws is not None:
        mine = draws[key or name]
        figures.precision_interval = _interval(_resampled(mine, "precision", data.turns))
        figures.recall_interval = _interval(_resampled(mine, "recall", data.turns))
        figures.no_memory_interval = _interval(_resampled(mine, "no_memory", data.turns))
    return figures


def _point_figure(kept: np.ndarray, data: LabelledScores, figure: str, cost_ratio: float | None) -> float:
    precision, recall, _ = _point(kept, data)
    if figure == "precision":
        return precision
    if figure == "recall":
        return recall
    kept_relevant = float((kept & data.relevant).sum())
    kept_irrelevant = float((kept & ~data.relevant).sum())
    return -((cost_ratio or 1.0) * kept_irrelevant + float(data.relevant.sum()) - kept_relevant) / data.turns


def _difference(
    name: str, against: str, figure: str, kept: dict[str, np.ndarray], data: LabelledScores, draws: dict | None, cost_ratio: float | None
) -> Difference:
    value = _point_figure(kept[name], data, figure, cost_ratio) - _point_figure(kept[against], data, figure, cost_ratio)
    interval = None
    if draws is not None:
        interval = _interval(
            _resampled(draws[name], figure, data.turns, cost_ratio) - _resampled(draws[against], figure, data.turns, cost_ratio)
        )
    return Difference(name, against, figure, float(value) if math.isfinite(value) else math.nan, interval)


def _recommend(against_floor: dict[str, Difference], learned_vs_gap: Difference, figure: str) -> tuple[str, str]:
    """The rule to ship: the learned rule only when it beats the floor beyond the
    interval and is not worse than the largest-gap cut at that cut's recall; else a
    label-free cut that beats the floor; else the single floor."""
    learned = against_floor[LEARNED]
    if learned.better and learned_vs_gap.not_worse:
        return LEARNED, f"it beats the single floor beyond the interval ({learned.text()}) and is not worse than the largest-gap cut at that cut's recall"
    for name in (LARGEST_GAP, TOP_RATIO):
        difference = against_floor[name]
        if difference.better:
            why = (
                f"the learned rule is worse than the largest-gap cut at that cut's recall ({learned_vs_gap.text()})"
                if learned.better
                else f"the learned rule does not beat the single floor beyond the interval ({learned.text()})"
            )
            return name, f"it beats the single floor beyond the interval ({difference.text()}); {why}"
    shown = "; ".join(difference.text() for difference in against_floor.values())
    return FLOOR, f"no rule beats it beyond the interval on these labels ({shown}): the single floor is as good and simpler"


# ----------------------------------------------------------------- what the page draws


@dataclass
class RuleCurve:
    """A held-out precision-recall curve: one point per threshold on the rule's value."""

    rule: str
    threshold: np.ndarray
    precision: np.ndarray
    recall: np.ndarray


def held_out_curves(comparison: RuleComparison) -> dict[str, RuleCurve]:
    """The held-out precision-recall curve of the single floor and of each rule (the
    learned rule's out-of-fold probabilities; the label-free cuts with every floor
    beside them), for the Calibrate page's chart. From the sweep of each rule's values."""
    assert comparison.relevant is not None
    scores = comparison.oof_values[FLOOR]
    curves = {}
    for name, values in comparison.oof_values.items():
        result = sweep(LabelledScores(values, comparison.relevant, None, 0))
        at = result.is_score
        if name in (LARGEST_GAP, TOP_RATIO):
            # the value the cut's dropped hits were given is no floor: nothing past the cut lies there
            at = at & (result.floor >= scores.min())
        curves[name] = RuleCurve(name, result.floor[at], result.precision[at], result.recall[at])
    return curves


# ----------------------------------------------------------------- the floor file's rule section


def rule_section(comparison: RuleComparison, kind: str) -> tuple[dict[str, Any], float | None]:
    """(the floor file's ``rule``, the floor to write beside it: the floor a
    label-free cut is applied with; None for the learned rule, which keeps the file's floor)."""
    rule, floor = comparison.final[kind]
    section = rule.as_dict()
    section.update(
        mode=comparison.mode,
        target=comparison.target,
        recommended=comparison.recommended,
        held_out=comparison.figures[kind].as_dict(),
        held_out_floor=comparison.figures[FLOOR].as_dict(),
    )
    return _plain(section), (None if kind == LEARNED else floor)
