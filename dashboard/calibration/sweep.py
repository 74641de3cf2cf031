"""Choosing the score floor from labelled scores. Pure functions over numpy arrays.

Input: one row per labelled hit, its ``score``, its ``label`` (``relevant`` /
``not_relevant``) and, when known, the ``message_id`` of the turn it was returned for.
A floor keeps a hit whose score is at or above it (as ``dashboard.floor.apply_floor``).

What comes out:

* ``sweep``: for every distinct score (each is a floor with a different outcome) and
  any floors the caller asks for, the kept / dropped counts of each class, precision,
  recall, F1 and, with message ids, the share of turns left with no memory and the
  mean memories kept per turn. The scores are sorted once; counts are cumulative
  sums read at each floor's position, never a pass over the rows per floor.
* ``separating_band``: the floors that keep every relevant hit and drop every
  irrelevant one, when the labels allow it.
* ``recommend``: the floor that minimises ``cost_ratio * kept_irrelevant +
  dropped_relevant`` (a wrong memory costs ``cost_ratio`` missed ones), with a
  bootstrap interval that resamples turns (message ids), since hits of one turn are
  not independent of each other (the resampling is in ``bootstrap.py``).
* ``calibrate``: all of the above for one set of labels, as the page and the CLI show it.

The input is checked and converted once, in ``scores.py`` (``labelled_scores``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

import numpy as np

from dashboard.calibration.bootstrap import (
    ONE_CLASS_RESAMPLES,
    bootstrap_middles,
    default_resamples,
    middle,
    no_interval_reason,
    optimal_range,
)
from dashboard.calibration.scores import CalibrationError, LabelledScores
from dashboard.calibration.scores import labelled_scores as labelled_scores  # re-exported: callers import it from here

SWEEP_COLUMNS = (
    "floor",
    "requested",
    "kept_relevant",
    "kept_irrelevant",
    "dropped_relevant",
    "dropped_irrelevant",
    "precision",
    "recall",
    "f1",
    "no_memory_share",
    "mean_kept_per_turn",
)
DEFAULT_SEED = 0


# ----------------------------------------------------------------- the sweep


@dataclass
class Sweep:
    """One entry per floor, ascending. Arrays share one index."""

    floor: np.ndarray
    requested: np.ndarray  # bool: a floor the caller asked for
    is_score: np.ndarray  # bool: the floor is one of the labelled scores
    dropped_relevant: np.ndarray
    dropped_irrelevant: np.ndarray
    no_memory_turns: np.ndarray | None  # turns with nothing kept (None: no message ids)
    turns: int
    relevant_total: int
    irrelevant_total: int

    def __len__(self) -> int:
        return len(self.floor)

    @property
    def kept_relevant(self) -> np.ndarray:
        return self.relevant_total - self.dropped_relevant

    @property
    def kept_irrelevant(self) -> np.ndarray:
        return self.irrelevant_total - self.dropped_irrelevant

    @property
    def kept(self) -> np.ndarray:
        return self.kept_relevant + self.kept_irrelevant

    @property
    def precision(self) -> np.ndarray:
        """Kept relevant / kept; NaN where the floor keeps nothing (undefined)."""
        kept = self.kept
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(kept > 0, self.kept_relevant / np.maximum(kept, 1), np.nan)

    @property
    def recall(self) -> np.ndarray:
        return self.kept_relevant / self.relevant_total

    @property
    def f1(self) -> np.ndarray:
        precision, recall = self.precision, self.recall
        total = precision + recall  # NaN where precision is undefined, and stays so
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total == 0, 0.0, 2 * precision * recall / total)

    @property
    def no_memory_share(self) -> np.ndarray | None:
        if self.no_memory_turns is None:
            return None
        return self.no_memory_turns / self.turns

    @property
    def mean_kept_per_turn(self) -> np.ndarray | None:
        if self.no_memory_turns is None:
            return None
        return self.kept / self.turns

    def column(self, name: str) -> np.ndarray:
        value = getattr(self, name)
        return value if value is not None else np.full(len(self), np.nan)

    def at(self, floor: float) -> dict[str, Any]:
        """The row of an exact floor in this sweep, as plain Python values."""
        matches = np.flatnonzero(self.floor == floor)
        if not len(matches):
            raise KeyError(f"floor {floor!r} is not in this sweep")
        return self.row(int(matches[0]))

    def row(self, index: int) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for name in SWEEP_COLUMNS:
            value = self.column(name)[index]
            row[name] = value.item() if hasattr(value, "item") else value
        return row

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame({name: self.column(name) for name in SWEEP_COLUMNS})


def sweep(data: LabelledScores, floors: Iterable[float] = ()) -> Sweep:
    """Counts at every distinct score, plus at each of ``floors``.

    The two classes are copied into one buffer, relevant first, and each part is
    sorted in place (two part sorts are far cheaper than an argsort of every row).
    A stable argsort then merges the two sorted runs: numpy runs it as timsort, which
    finds the runs and does one linear merge, and each position's source says its
    class. Where a distinct score first appears in the merged order tells how many
    hits score below it; a running count of the relevant ones tells how many of
    those are relevant. Requested floors are placed with searchsorted.
    """
    rows, relevant_total = len(data.scores), int(np.count_nonzero(data.relevant))
    by_class = np.empty(rows)  # relevant scores, then irrelevant ones, each sorted in place
    relevant_sorted, irrelevant_sorted = by_class[:relevant_total], by_class[relevant_total:]
    np.compress(data.relevant, data.scores, out=relevant_sorted)
    np.compress(~data.relevant, data.scores, out=irrelevant_sorted)
    relevant_sorted.sort()
    irrelevant_sorted.sort()
    order = np.argsort(by_class, kind="stable")
    merged_scores = by_class[order]
    relevant_before = np.empty(rows + 1, dtype=np.int64)  # relevant hits before each position
    relevant_before[0] = 0
    np.cumsum(order < relevant_total, out=relevant_before[1:])

    new_score = merged_scores[1:] != merged_scores[:-1]
    if new_score.all():  # every score distinct, the usual case for float scores
        distinct = merged_scores
        dropped_relevant = relevant_before[:-1]
        dropped_irrelevant = np.arange(rows) - dropped_relevant
    else:
        starts = np.flatnonzero(np.concatenate([[True], new_score]))  # hits under each distinct score
        distinct = merged_scores[starts]
        dropped_relevant = relevant_before[starts]
        dropped_irrelevant = starts - dropped_relevant

    requested = np.unique(np.asarray(list(floors), dtype=np.float64))
    requested = requested[np.isfinite(requested)]
    all_floors, is_score = distinct, np.ones(len(distinct), dtype=bool)
    at = np.searchsorted(distinct, requested)
    among_scores = (at < len(distinct)) & (distinct[np.minimum(at, len(distinct) - 1)] == requested)
    extra, at = requested[~among_scores], at[~among_scores]
    if len(extra):
        # Slot the few requested floors into the sorted distinct scores: a copy, no re-sort.
        all_floors = np.insert(distinct, at, extra)
        is_score = np.insert(is_score, at, False)
        dropped_relevant = np.insert(dropped_relevant, at, np.searchsorted(relevant_sorted, extra))
        dropped_irrelevant = np.insert(dropped_irrelevant, at, np.searchsorted(irrelevant_sorted, extra))
    is_requested = np.zeros(len(all_floors), dtype=bool)
    is_requested[np.searchsorted(all_floors, requested)] = True

    no_memory = None
    if data.turn is not None and data.turn_figures:
        # A turn is left with no memory when even its best hit is under the floor.
        # Each best score is itself a floor: count the turns whose best sits at each
        # floor, and the running total says how many are under the next one.
        best = np.full(data.turns, -np.inf)
        np.maximum.at(best, data.turn, data.scores)
        # Sorted keys make searchsorted walk the floors once instead of jumping about.
        turns_at = np.bincount(np.searchsorted(all_floors, np.sort(best)), minlength=len(all_floors))
        no_memory = np.concatenate([[0], np.cumsum(turns_at)[:-1]])

    return Sweep(
        floor=all_floors,
        requested=is_requested,
        is_score=is_score,
        dropped_relevant=dropped_relevant,
        dropped_irrelevant=dropped_irrelevant,
        no_memory_turns=no_memory,
        turns=data.turns,
        relevant_total=relevant_total,
        irrelevant_total=rows - relevant_total,
    )


# ----------------------------------------------------------------- separating band


@dataclass(frozen=True)
class Band:
    """Floors above ``low`` (the best irrelevant score) and up to ``high`` (the worst
    relevant score) keep every relevant hit and drop every irrelevant one."""

    low: float  # exclusive
    high: float  # inclusive

    def rounded(self, decimals: int = 2) -> tuple[float, float] | None:
        """The band's floors written with ``decimals`` decimals, or None when it is
        narrower than one step at that precision."""
        step = 10.0**-decimals
        low = round(math.ceil(round(self.low / step, 9)) * step, decimals)
        if low <= self.low:
            low = round(low + step, decimals)
        high = round(math.floor(round(self.high / step, 9)) * step, decimals)
        if high > self.high:
            high = round(high - step, decimals)
        return (low, high) if low <= high else None

    def describe(self) -> str:
        text = (
            f"any floor above {self.low:.3f} and up to {self.high:.3f} keeps every relevant "
            "memory and drops every irrelevant one"
        )
        rounded = self.rounded()
        if rounded:
            text += f" ({format_floor(rounded[0])}-{format_floor(rounded[1])} at two decimals)"
        return text


def separating_band(data: LabelledScores) -> Band | None:
    best_irrelevant = float(data.scores[~data.relevant].max())
    worst_relevant = float(data.scores[data.relevant].min())
    return Band(best_irrelevant, worst_relevant) if worst_relevant > best_irrelevant else None


# ----------------------------------------------------------------- recommendation


@dataclass
class Recommendation:
    """The cost-optimal floor.

    Every floor in (``low``, ``high``] has the minimal cost; ``exact`` is the middle
    of that range (the floor furthest from a label flip) and ``floor`` the same
    written with as few decimals as stay inside the range, ready to paste.
    ``interval`` is the bootstrap percentile interval of ``exact``.
    """

    floor: float
    exact: float
    low: float
    high: float
    cost: float
    cost_ratio: float
    kept_relevant: int
    kept_irrelevant: int
    dropped_relevant: int
    dropped_irrelevant: int
    precision: float
    recall: float
    no_memory_share: float | None
    interval: tuple[float, float] | None
    confidence: float
    resamples: int
    resamples_used: int  # resamples holding both classes (the others are left out)
    resampled: str  # "turns" (message ids) or "rows" (no message ids)
    seed: int
    interval_note: str | None = None  # why there is no interval, when resamples were asked for

    @property
    def snippet(self) -> str:
        return f"MEMORY_SCORE_FLOOR={format_floor(self.floor)}"

    def as_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items()}
        data["interval"] = list(self.interval) if self.interval else None
        for key in ("low", "high", "exact"):
            if not math.isfinite(data[key]):
                data[key] = None  # JSON has no infinity
        data["snippet"] = self.snippet
        return data


def format_floor(floor: float) -> str:
    """Two decimals when that is exact (0.2 -> "0.20"), else as few more as needed."""
    for decimals in range(2, 10):
        if round(floor, decimals) == floor:
            return f"{floor:.{decimals}f}"
    return repr(float(floor))


INTERVAL_DECIMALS = 3  # an interval beside a floor is printed to this many decimals


def shown_interval(floor: float, interval: tuple[float, float]) -> tuple[float, float]:
    """The interval to print beside `floor`, as (low, high) of INTERVAL_DECIMALS
    decimals, always holding `floor` as shown.

    The interval is the exact floor over bootstrap resamples, while the floor shown is
    a short number that keeps what the exact floor keeps (0.23 for an exact 0.2349):
    printed as is, "0.23" sat beside "0.235-0.235". So the interval is widened to the
    floor shown and rounded outward (low down, high up), never to the nearest. A
    floor or end that is not finite (no floor keeps anything) is returned as it is."""
    if not all(math.isfinite(value) for value in (floor, *interval)):
        return interval
    low, high = min(interval[0], floor), max(interval[1], floor)
    step = Decimal(1).scaleb(-INTERVAL_DECIMALS)
    # repr is the shortest decimal that reads back as the float: rounding it is exact.
    return (
        float(Decimal(repr(float(low))).quantize(step, rounding=ROUND_FLOOR)),
        float(Decimal(repr(float(high))).quantize(step, rounding=ROUND_CEILING)),
    )


def _pasteable(exact: float, low: float, high: float) -> float:
    """A short number in (low, high], near ``exact``."""
    for decimals in range(2, 10):
        step = 10.0**-decimals
        candidates = [round(exact, decimals)]
        if math.isfinite(low):
            candidates.append(round(math.floor(low / step + 1) * step, decimals))
        if math.isfinite(high):
            candidates.append(round(math.floor(high / step) * step, decimals))
        inside = [c for c in candidates if low < c <= high]
        if inside:
            return min(inside, key=lambda c: abs(c - exact))
    return high if math.isfinite(high) else float(np.nextafter(low, np.inf))


def recommend(
    data: LabelledScores,
    cost_ratio: float = 1.0,
    *,
    resamples: int | None = None,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
    result: Sweep | None = None,
) -> Recommendation:
    """The floor minimising ``cost_ratio * kept_irrelevant + dropped_relevant``.

    Ties go to the lowest range of floors (it keeps the most). The interval
    resamples turns with replacement (rows when there are no message ids) and
    recomputes the optimal range's middle each time; ``resamples`` defaults to
    ``default_resamples(rows)``, 0 skips the interval.
    """
    if resamples is None:
        resamples = default_resamples(len(data))
    if not (isinstance(cost_ratio, (int, float)) and math.isfinite(cost_ratio) and cost_ratio > 0):
        raise CalibrationError(f"cost ratio must be a number above 0, got {cost_ratio!r}")
    full = result if result is not None else sweep(data)
    distinct = full.floor[full.is_score]
    kept_irrelevant = np.append(full.kept_irrelevant[full.is_score], 0)
    dropped_relevant = np.append(full.dropped_relevant[full.is_score], full.relevant_total)
    cost = cost_ratio * kept_irrelevant + dropped_relevant
    low, high = (v[0] for v in optimal_range(cost[None, :], distinct))
    exact = float(middle(np.array([low]), np.array([high]))[0])
    floor = _pasteable(exact, float(low), float(high))

    interval, used, resampled = None, 0, "turns" if data.turn is not None else "rows"
    interval_note = no_interval_reason(data) if resamples > 0 else None
    if resamples > 0 and interval_note is None:
        middles = bootstrap_middles(data, distinct, cost_ratio, resamples, seed)
        middles = middles[~np.isnan(middles)]
        used = len(middles)
        if used:
            tail = (1 - confidence) / 2 * 100
            lo, hi = np.percentile(middles, [tail, 100 - tail])
            interval = (float(lo), float(hi))
        else:
            interval_note = ONE_CLASS_RESAMPLES

    at = evaluate(data, [floor])
    return Recommendation(
        floor=floor,
        exact=exact,
        low=float(low),
        high=float(high),
        cost=float(cost.min()),
        cost_ratio=float(cost_ratio),
        kept_relevant=int(at.kept_relevant[0]),
        kept_irrelevant=int(at.kept_irrelevant[0]),
        dropped_relevant=int(at.dropped_relevant[0]),
        dropped_irrelevant=int(at.dropped_irrelevant[0]),
        precision=float(at.precision[0]),
        recall=float(at.recall[0]),
        no_memory_share=float(at.no_memory_share[0]) if at.no_memory_share is not None else None,
        interval=interval,
        confidence=confidence,
        resamples=resamples,
        resamples_used=used,
        resampled=resampled,
        seed=seed,
        interval_note=interval_note,
    )


def evaluate(data: LabelledScores, floors: Iterable[float]) -> Sweep:
    """Counts at the given floors only (searchsorted on each sorted class)."""
    floors = np.unique(np.asarray(list(floors), dtype=np.float64))
    relevant_sorted = np.sort(data.scores[data.relevant])
    irrelevant_sorted = np.sort(data.scores[~data.relevant])
    dropped_relevant = np.searchsorted(relevant_sorted, floors)
    dropped_irrelevant = np.searchsorted(irrelevant_sorted, floors)
    no_memory = None
    if data.turn is not None and data.turn_figures:
        best = np.full(data.turns, -np.inf)
        np.maximum.at(best, data.turn, data.scores)
        no_memory = np.searchsorted(np.sort(best), floors)
    return Sweep(
        floor=floors,
        requested=np.ones(len(floors), dtype=bool),
        is_score=np.isin(floors, data.scores),
        dropped_relevant=dropped_relevant,
        dropped_irrelevant=dropped_irrelevant,
        no_memory_turns=no_memory,
        turns=data.turns,
        relevant_total=len(relevant_sorted),
        irrelevant_total=len(irrelevant_sorted),
    )


@dataclass
class Calibration:
    """Everything the page and the CLI show for one set of labels."""

    data: LabelledScores
    sweep: Sweep
    requested: Sweep
    band: Band | None
    recommendation: Recommendation
    notes: list[str] = field(default_factory=list)


def calibrate(
    data: LabelledScores,
    floors: Iterable[float] = (),
    cost_ratio: float = 1.0,
    *,
    resamples: int | None = None,
    seed: int = DEFAULT_SEED,
) -> Calibration:
    floors = list(floors)
    full = sweep(data, floors)
    notes = []
    if data.turn is None:
        notes.append(
            "No message ids: the share of turns with no memory cannot be counted, "
            "and the interval resamples single rows instead of turns."
        )
    elif data.sampled:
        notes.append(
            f"{data.sampled:,} of {data.turns:,} turns have no labelled rank-1 hit (the labels are a sample of each "
            "turn): the share of turns with no memory would count the sample, not the turns, so it is not shown. "
            "Read it from the whole turns: the log the labels were drawn from (memlens monitor LOG --floor F) or a saved run."
        )
    return Calibration(
        data=data,
        sweep=full,
        requested=evaluate(data, floors),
        band=separating_band(data),
        recommendation=recommend(data, cost_ratio, resamples=resamples, seed=seed, result=full),
        notes=notes,
    )
