"""More ways to choose a floor than the cost ratio: a target recall, a target
precision, or the floor that maximises F-beta. Pure functions over the sweep.

Each mode picks one of the sweep's columns: column ``j < m`` stands for every floor
in (``distinct[j-1]``, ``distinct[j]``] (they keep and drop the same hits), column
``m`` for a floor above every score (nothing kept).

* target recall ``r``: the highest floor that keeps at least ``r`` of the relevant
  hits (recall never rises with the floor, so it is the last column with recall >= r);
* target precision ``p``: the lowest floor at which at least ``p`` of what is kept is
  relevant, or none (precision need not rise with the floor: the first column that
  reaches it is taken, and when none does the best precision is reported);
* F-beta: the floor maximising ``(1 + b^2) P R / (b^2 P + R)``; ties go to the lowest
  floor (it keeps the most).

The floor given is a score (the edge of its column's range), and the pasteable form
is the shortest number inside the same range, so it keeps exactly the same hits.
The bootstrap interval resamples turns (message ids; rows without them) as the
cost-ratio recommendation does, and picks the column again on each resample: one
pass of weighted running totals over the rows sorted once, never a pass per floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dashboard.calibration.bootstrap import ONE_CLASS_RESAMPLES, default_resamples, no_interval_reason, resampled_totals
from dashboard.calibration.scores import CalibrationError, LabelledScores
from dashboard.calibration.sweep import Sweep, format_floor, sweep

COST_RATIO, TARGET_RECALL, TARGET_PRECISION, FBETA = "cost_ratio", "target_recall", "target_precision", "fbeta"
MODES = (COST_RATIO, TARGET_RECALL, TARGET_PRECISION, FBETA)


def mode_name(mode: str, target: float) -> str:
    """How a line calls a mode: "target recall 0.90", "max F1", "cost ratio 1"."""
    if mode == TARGET_RECALL:
        return f"target recall {target:.2f}"
    if mode == TARGET_PRECISION:
        return f"target precision {target:.2f}"
    if mode == FBETA:
        return f"max F{target:g}"
    if mode == COST_RATIO:
        return f"cost ratio {target:g}"
    raise CalibrationError(f"unknown floor mode {mode!r}; expected one of {', '.join(MODES)}")


def check_target(mode: str, target: float) -> None:
    """Raise CalibrationError when ``target`` makes no sense for ``mode``."""
    ok = isinstance(target, (int, float)) and math.isfinite(target)
    if mode in (TARGET_RECALL, TARGET_PRECISION):
        if not (ok and 0 < target <= 1):
            raise CalibrationError(f"{mode.replace('_', ' ')} must be a share above 0 and at most 1, got {target!r}")
    elif mode in (FBETA, COST_RATIO):
        if not (ok and target > 0):
            raise CalibrationError(f"{'beta' if mode == FBETA else 'cost ratio'} must be a number above 0, got {target!r}")
    else:
        mode_name(mode, target)  # raises for an unknown mode


# ----------------------------------------------------------------- picking a column


def pick_columns(mode: str, target: float, kept_relevant: np.ndarray, kept_irrelevant: np.ndarray) -> np.ndarray:
    """The chosen column per row of (rows x columns) kept counts; -1 where no column
    reaches the target (target precision only).

    ``kept_relevant[:, -1]`` and ``kept_irrelevant[:, -1]`` are the floor above every
    score (0 and 0). Counts may be weighted (the bootstrap).
    """
    # Only what the mode needs: on a million floors each array costs.
    with np.errstate(invalid="ignore", divide="ignore"):
        if mode == TARGET_RECALL:
            recall = kept_relevant / kept_relevant[:, :1]  # the lowest floor keeps every relevant hit
            # Recall never rises with the floor: the columns reaching it are a prefix.
            return np.asarray(recall >= target).sum(axis=1) - 1
        precision = kept_relevant / (kept_relevant + kept_irrelevant)  # NaN where nothing is kept (0 / 0)
        if mode == TARGET_PRECISION:
            reached = np.asarray(precision >= target)  # NaN compares False
            return np.where(reached.any(axis=1), reached.argmax(axis=1), -1)
        if mode == FBETA:
            recall = kept_relevant / kept_relevant[:, :1]
            return fbeta_values(precision, recall, target).argmax(axis=1)  # first maximum: the lowest floor
    raise CalibrationError(f"pick_columns has no rule for mode {mode!r}")


def fbeta_values(precision: np.ndarray, recall: np.ndarray, beta: float) -> np.ndarray:
    """F-beta, 0 where precision and recall are both 0 or precision is undefined
    (nothing kept), as scikit-learn reports it."""
    b2 = beta * beta
    with np.errstate(invalid="ignore", divide="ignore"):
        value = (1 + b2) * precision * recall / (b2 * precision + recall)
    return np.nan_to_num(value, nan=0.0)


def _columns(result: Sweep) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct scores and the kept counts per column (the last: nothing kept)."""
    distinct = result.floor[result.is_score]
    kept_relevant = np.append(result.kept_relevant[result.is_score], 0)
    kept_irrelevant = np.append(result.kept_irrelevant[result.is_score], 0)
    return distinct, kept_relevant, kept_irrelevant


def _edges(distinct: np.ndarray, column: int) -> tuple[float, float]:
    low = float(distinct[column - 1]) if column > 0 else -math.inf
    high = float(distinct[column]) if column < len(distinct) else math.inf
    return low, high


def short_floor(low: float, high: float, prefer: str) -> float:
    """The number with the fewest decimals (from 2) in (low, high]; among those of
    that length, the highest, the lowest or the one nearest the middle (``prefer``)."""
    for decimals in range(2, 10):
        step = 10.0**-decimals
        candidates = set()
        if math.isfinite(high):
            candidates.add(round(math.floor(round(high / step, 6)) * step, decimals))
        if math.isfinite(low):
            candidates.add(round(math.floor(round(low / step, 6)) * step + step, decimals))
        if math.isfinite(low) and math.isfinite(high):
            candidates.add(round((low + high) / 2, decimals))
        inside = [c for c in candidates if low < c <= high]
        if inside:
            if prefer == "high":
                return max(inside)
            if prefer == "low":
                return min(inside)
            middle = (low + high) / 2 if math.isfinite(low) and math.isfinite(high) else high
            return min(inside, key=lambda c: abs(c - middle))
    return high if math.isfinite(high) else float(np.nextafter(low, np.inf))


# ----------------------------------------------------------------- the choice


@dataclass
class FloorChoice:
    """The floor one mode chooses, and what it keeps and drops.

    ``reached`` is False when a target precision is out of reach: then ``floor`` is
    None and ``best_precision`` / ``best_floor`` say how close the labels get.
    """

    mode: str
    target: float
    reached: bool
    floor: float | None = None  # pasteable: the shortest number with the same outcome as ``exact``
    exact: float | None = None  # the score the choice rests on
    low: float | None = None  # every floor in (low, high] has the same outcome
    high: float | None = None
    kept_relevant: int = 0
    kept_irrelevant: int = 0
    dropped_relevant: int = 0
    dropped_irrelevant: int = 0
    precision: float = math.nan
    recall: float = math.nan
    fbeta: float | None = None
    no_memory_share: float | None = None
    best_precision: float | None = None
    best_floor: float | None = None
    interval: tuple[float, float] | None = None
    confidence: float = 0.95
    resamples_used: int = 0
    resampled: str = "turns"
    interval_note: str | None = None  # why there is no interval, when resamples were asked for

    @property
    def name(self) -> str:
        return mode_name(self.mode, self.target)

    @property
    def snippet(self) -> str | None:
        return f"MEMORY_SCORE_FLOOR={format_floor(self.floor)}" if self.floor is not None else None

    def line(self) -> str:
        """The CLI line, e.g. ``target recall 0.90: floor 0.31 keeps 1234 irrelevant,
        drops 89 relevant, precision 0.07``."""
        if not self.reached:
            best = "no floor keeps anything" if self.best_floor is None else (
                f"best {self.best_precision:.2f} at floor {format_floor(self.best_floor)}"
            )
            return f"{self.name}: no floor reaches it ({best})"
        assert self.floor is not None
        head = f"{self.name}: floor {format_floor(self.floor)} keeps {self.kept_irrelevant} irrelevant, drops {self.dropped_relevant} relevant"
        if self.mode == TARGET_RECALL:
            return f"{head}, precision {_ratio(self.precision)}"
        if self.mode == TARGET_PRECISION:
            return f"{head}, recall {_ratio(self.recall)}"
        return f"{head}, precision {_ratio(self.precision)}, recall {_ratio(self.recall)}"

    def as_dict(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["name"] = self.name
        data["interval"] = list(self.interval) if self.interval else None
        data["snippet"] = self.snippet
        for key in ("low", "high", "exact", "precision", "recall"):
            if isinstance(data[key], float) and not math.isfinite(data[key]):
                data[key] = None  # JSON has no infinity or NaN
        return data


def _ratio(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"


_PREFER = {TARGET_RECALL: "high", TARGET_PRECISION: "low", FBETA: "middle"}


def choose(
    data: LabelledScores,
    mode: str,
    target: float,
    *,
    result: Sweep | None = None,
    resamples: int | None = 0,
    seed: int = 0,
    confidence: float = 0.95,
) -> FloorChoice:
    """The floor ``mode`` (target recall, target precision or F-beta) chooses.

    ``resamples`` > 0 adds a bootstrap interval of the chosen score (None: the
    sweep's default for this many rows).
    """
    if mode == COST_RATIO:
        raise CalibrationError("the cost-ratio floor is sweep.recommend's; choose() takes the other modes")
    check_target(mode, target)
    full = result if result is not None else sweep(data)
    distinct, kept_relevant, kept_irrelevant = _columns(full)
    column = int(pick_columns(mode, target, kept_relevant[None, :], kept_irrelevant[None, :])[0])
    resampled = "turns" if data.turn is not None else "rows"
    if column < 0:
        with np.errstate(invalid="ignore", divide="ignore"):
            kept = kept_relevant + kept_irrelevant
            precision = np.where(kept > 0, kept_relevant / np.maximum(kept, 1), -1.0)
        best = int(precision.argmax())  # the lowest floor with the best precision
        return FloorChoice(
            mode, float(target), reached=False, best_precision=float(precision[best]),
            best_floor=short_floor(*_edges(distinct, best), "low"), resampled=resampled,
        )  # fmt: skip
    low, high = _edges(distinct, column)
    floor = short_floor(low, high, _PREFER[mode])
    # The pasteable floor keeps what the column keeps: read its counts off the sweep.
    kept_rel, kept_irr = int(kept_relevant[column]), int(kept_irrelevant[column])
    no_memory = None
    if full.no_memory_turns is not None:
        turns_empty = full.turns if column == len(distinct) else int(full.no_memory_turns[np.searchsorted(full.floor, high)])
        no_memory = turns_empty / full.turns
    choice = FloorChoice(
        mode=mode,
        target=float(target),
        reached=True,
        floor=floor,
        exact=high if math.isfinite(high) else low,
        low=low,
        high=high,
        kept_relevant=kept_rel,
        kept_irrelevant=kept_irr,
        dropped_relevant=full.relevant_total - kept_rel,
        dropped_irrelevant=full.irrelevant_total - kept_irr,
        precision=kept_rel / (kept_rel + kept_irr) if kept_rel + kept_irr else math.nan,
        recall=kept_rel / full.relevant_total,
        no_memory_share=no_memory,
        confidence=confidence,
        resampled=resampled,
    )
    choice.fbeta = float(fbeta_values(np.array(choice.precision), np.array(choice.recall), target if mode == FBETA else 1.0))
    if resamples is None:
        resamples = default_resamples(len(data))
    if resamples > 0:
        choice.interval_note = no_interval_reason(data)
    if resamples > 0 and choice.interval_note is None:
        chosen = bootstrap_choices(data, mode, target, resamples, seed)
        chosen = chosen[np.isfinite(chosen)]
        choice.resamples_used = len(chosen)
        if len(chosen):
            tail = (1 - confidence) / 2 * 100
            lo, hi = np.percentile(chosen, [tail, 100 - tail])
            choice.interval = (float(lo), float(hi))
        else:
            choice.interval_note = ONE_CLASS_RESAMPLES
    return choice


def bootstrap_choices(data: LabelledScores, mode: str, target: float, resamples: int, seed: int) -> np.ndarray:
    """The score each resample's choice rests on; NaN for a resample holding one
    class only or reaching no floor. Resamples as the cost-ratio interval does
    (``bootstrap.resampled_totals``): the kept counts of every column are read off
    running weighted totals over the rows sorted once."""
    order = np.argsort(data.scores, kind="stable")
    rows = len(order)
    sorted_scores = data.scores[order]
    distinct = np.unique(sorted_scores)
    starts = np.append(np.searchsorted(sorted_scores, distinct, side="left"), rows)
    values = np.append(distinct, np.inf)  # the score behind each column; the last keeps nothing

    chosen = np.empty(resamples)
    first = 0
    for relevant_before, irrelevant_before in resampled_totals(data, order, resamples, seed):
        size = len(relevant_before)
        kept_relevant = relevant_before[:, -1:] - relevant_before[:, starts]
        kept_irrelevant = irrelevant_before[:, -1:] - irrelevant_before[:, starts]
        columns = pick_columns(mode, target, kept_relevant, kept_irrelevant)
        # A score no drawn turn holds is no floor of this resample: its column keeps
        # what the next drawn score's does, so the choice rests on that score.
        kept = kept_relevant + kept_irrelevant
        drawn = np.append(kept[:, :-1] > kept[:, 1:], np.ones((size, 1), dtype=bool), axis=1)
        index = np.where(drawn, np.arange(drawn.shape[1]), drawn.shape[1] - 1)
        next_drawn = np.minimum.accumulate(index[:, ::-1], axis=1)[:, ::-1]
        columns = np.where(columns >= 0, np.take_along_axis(next_drawn, np.maximum(columns, 0)[:, None], 1)[:, 0], -1)
        both_classes = (relevant_before[:, -1] > 0) & (irrelevant_before[:, -1] > 0)
        picked = values[np.maximum(columns, 0)]
        chosen[first : first + size] = np.where(both_classes & (columns >= 0) & np.isfinite(picked), picked, np.nan)
        first += size
    return chosen
