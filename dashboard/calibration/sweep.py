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
  not independent of each other.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

RELEVANT, NOT_RELEVANT = "relevant", "not_relevant"
LABEL_VALUES = (RELEVANT, NOT_RELEVANT)
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
DEFAULT_RESAMPLES = 1000
MIN_RESAMPLES = 100
DEFAULT_SEED = 0
# The bootstrap costs resamples x rows: past 20,000 rows, fewer resamples keep a
# page rerun or a CLI call within seconds.
_BOOTSTRAP_BUDGET = 20_000_000
# Cap on the (resamples x rows) weight matrix the bootstrap builds at once.
_BOOTSTRAP_CELLS = 1_000_000
_SHOWN_PROBLEM_ROWS = 5


class CalibrationError(ValueError):
    """Labelled rows that cannot be calibrated on; the message says which and why."""


def _rows(row_name: str, numbers: Sequence[int]) -> str:
    """"row 4" / "rows 2, 3, 7 and 12 more": which rows, without flooding a message."""
    shown = ", ".join(str(n) for n in numbers[:_SHOWN_PROBLEM_ROWS])
    more = len(numbers) - min(len(numbers), _SHOWN_PROBLEM_ROWS)
    noun = row_name if len(numbers) == 1 else row_name + "s"
    return f"{noun} {shown}" + (f" and {more} more" if more > 0 else "")


# ----------------------------------------------------------------- input


@dataclass(frozen=True)
class LabelledScores:
    """Validated input: float scores, a relevant mask and, optionally, a turn code
    per row (0..turns-1, from the message ids)."""

    scores: np.ndarray  # float64
    relevant: np.ndarray  # bool
    turn: np.ndarray | None = None  # int64 codes, or None without message ids
    turns: int = 0

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def relevant_count(self) -> int:
        return int(self.relevant.sum())

    @property
    def irrelevant_count(self) -> int:
        return len(self) - self.relevant_count


def labelled_scores(
    scores: Iterable[Any],
    labels: Iterable[Any],
    message_ids: Iterable[Any] | None = None,
    *,
    row_numbers: Sequence[int] | None = None,
    row_name: str = "row",
) -> LabelledScores:
    """Validate and convert rows; raise CalibrationError naming the bad rows.

    Labels are the strings ``relevant`` / ``not_relevant`` (or booleans, True meaning
    relevant). ``row_numbers`` are what errors call the rows (e.g. file line numbers;
    default 1, 2, 3 ...) and ``row_name`` what a row is called ("row", "line").
    """
    score_array = _scores_array(scores)
    label_array = labels if isinstance(labels, np.ndarray) else _labels_array(list(labels))
    n = len(score_array)
    numbers = np.asarray(row_numbers) if row_numbers is not None else np.arange(1, n + 1)
    if n == 0 and len(label_array) == 0:
        raise CalibrationError("No labelled rows: label some retrievals first (or load a label file).")
    if len(label_array) != n:
        raise CalibrationError(f"{n} scores but {len(label_array)} labels: every row needs both.")

    problems = []
    bad_scores = np.flatnonzero(~np.isfinite(score_array))
    if len(bad_scores):
        problems.append(f"score missing or not a finite number in {_rows(row_name, numbers[bad_scores].tolist())}")
    relevant, label_problem = _relevant_mask(label_array, numbers, row_name)
    if label_problem:
        problems.append(label_problem)
    if problems:
        raise CalibrationError("; ".join(problems) + ".")

    relevant_count = int(relevant.sum())
    if relevant_count in (0, n):
        only = RELEVANT if relevant_count else NOT_RELEVANT
        every = f"All {n} labelled rows are" if n > 1 else "The only labelled row is"
        raise CalibrationError(
            f"{every} {only!r}: a floor is chosen between the two classes, "
            f"so label at least one {NOT_RELEVANT if relevant_count else RELEVANT!r} hit too."
        )

    turn, turns = None, 0
    if message_ids is not None:
        ids = list(message_ids) if not isinstance(message_ids, np.ndarray) else message_ids
        if len(ids) != n:
            raise CalibrationError(f"{n} scores but {len(ids)} message ids.")
        missing = [i for i, v in enumerate(ids) if v is None or (isinstance(v, float) and math.isnan(v)) or v == ""]
        if missing:
            raise CalibrationError(
                f"message_id missing in {_rows(row_name, numbers[missing].tolist())}: "
                "give every row one, or none."
            )
        turn, turns = _factorize(ids)
    return LabelledScores(score_array, relevant, turn, turns)


def _scores_array(scores: Iterable[Any]) -> np.ndarray:
    if isinstance(scores, np.ndarray) and scores.dtype.kind == "f":
        return scores.astype(np.float64, copy=False)
    values = []
    for value in scores:
        # A bool is an int to Python, but a True score is a mistake, not a 1.0.
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
            values.append(float(value))
        else:
            values.append(math.nan)
    return np.asarray(values, dtype=np.float64)


def _labels_array(labels: list[Any]) -> np.ndarray:
    # Object dtype keeps each value as given: a plain asarray would turn a stray 1
    # among strings into the string "1" and hide what the row really held.
    if labels and all(isinstance(v, (bool, np.bool_)) for v in labels):
        return np.asarray(labels, dtype=bool)
    array = np.empty(len(labels), dtype=object)
    array[:] = labels
    return array


def _relevant_mask(labels: np.ndarray, numbers: np.ndarray, row_name: str) -> tuple[np.ndarray, str | None]:
    if labels.dtype == bool:
        return labels, None
    relevant = labels == RELEVANT
    irrelevant = labels == NOT_RELEVANT
    unknown = np.flatnonzero(~(relevant | irrelevant))
    if not len(unknown):
        return relevant, None
    by_value: dict[str, list[int]] = {}
    for index in unknown.tolist():
        value = labels[index]
        value = value.item() if isinstance(value, np.generic) else value
        by_value.setdefault(repr(value), []).append(int(numbers[index]))
    parts = [f"{value} ({_rows(row_name, rows)})" for value, rows in by_value.items()]
    return relevant, f"unknown label values {', '.join(parts)}; expected {RELEVANT!r} or {NOT_RELEVANT!r}"


def _factorize(ids: Sequence[Any] | np.ndarray) -> tuple[np.ndarray, int]:
    codes: dict[Any, int] = {}
    turn = np.fromiter((codes.setdefault(v, len(codes)) for v in ids), dtype=np.int64, count=len(ids))
    return turn, len(codes)


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
    if data.turn is not None:
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

    def contains(self, floor: float) -> bool:
        return self.low < floor <= self.high

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


def _optimal_range(cost: np.ndarray, distinct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of the first run of minimal cost, per row of ``cost``.

    ``cost[:, j]`` for j < m is the cost of any floor in (distinct[j-1], distinct[j]];
    ``cost[:, m]`` that of a floor above every score (nothing kept).
    """
    columns = cost.shape[1]
    tolerance = 1e-9 * np.maximum(1.0, np.abs(cost).max(axis=1, keepdims=True))
    minimal = cost <= cost.min(axis=1, keepdims=True) + tolerance
    start = minimal.argmax(axis=1)
    index = np.arange(columns)
    after_run = ~minimal & (index > start[:, None])
    end = np.where(after_run.any(axis=1), after_run.argmax(axis=1) - 1, columns - 1)
    edges_low = np.concatenate([[-np.inf], distinct])  # low edge of column j
    edges_high = np.concatenate([distinct, [np.inf]])  # high edge of column j
    return edges_low[start], edges_high[end]


def _middle(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The middle of each (low, high]; the finite edge when the other is infinite."""
    with np.errstate(invalid="ignore"):
        return np.where(
            np.isfinite(low) & np.isfinite(high), (low + high) / 2, np.where(np.isfinite(low), low, high)
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


def default_resamples(rows: int) -> int:
    """1000 resamples, fewer (never under 100) on large label sets."""
    return int(min(DEFAULT_RESAMPLES, max(MIN_RESAMPLES, _BOOTSTRAP_BUDGET // max(1, rows))))


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
    low, high = (v[0] for v in _optimal_range(cost[None, :], distinct))
    exact = float(_middle(np.array([low]), np.array([high]))[0])
    floor = _pasteable(exact, float(low), float(high))

    interval, used, resampled = None, 0, "turns" if data.turn is not None else "rows"
    if resamples > 0:
        middles = _bootstrap_middles(data, distinct, cost_ratio, resamples, seed)
        middles = middles[~np.isnan(middles)]
        used = len(middles)
        if used:
            tail = (1 - confidence) / 2 * 100
            lo, hi = np.percentile(middles, [tail, 100 - tail])
            interval = (float(lo), float(hi))

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
    )


def _bootstrap_middles(
    data: LabelledScores, distinct: np.ndarray, cost_ratio: float, resamples: int, seed: int
) -> np.ndarray:
    """The optimal range's middle on each resample.

    A resample of turns is a weight per turn (how often it was drawn), so each
    resample is the same sorted rows with other weights: running weighted totals
    over the rows, read where each distinct score starts, as in ``sweep``.
    """
    rng = np.random.default_rng(seed)
    order = np.argsort(data.scores, kind="stable")
    rows = len(order)
    relevant_sorted = data.relevant[order]
    groups = data.turn[order] if data.turn is not None else np.arange(rows)
    group_count = data.turns if data.turn is not None else rows
    # Column j: floors up to distinct[j] drop the rows before starts[j]; the last
    # column (every row dropped) is the floor above every score.
    columns = np.append(np.searchsorted(data.scores[order], distinct, side="left"), rows)

    middles = np.empty(resamples)
    chunk = max(1, _BOOTSTRAP_CELLS // max(1, rows))
    for first in range(0, resamples, chunk):
        size = min(chunk, resamples - first)
        # Each resample draws group_count turns with replacement; count the draws per turn.
        picks = rng.integers(0, group_count, size=(size, group_count))
        picks += np.arange(size)[:, None] * group_count
        draws = np.bincount(picks.ravel(), minlength=size * group_count).reshape(size, group_count)
        weights = draws.astype(np.float64)[:, groups]
        relevant_weight = weights * relevant_sorted
        relevant_before = np.zeros((size, rows + 1))
        irrelevant_before = np.zeros((size, rows + 1))
        np.cumsum(relevant_weight, axis=1, out=relevant_before[:, 1:])
        np.cumsum(weights - relevant_weight, axis=1, out=irrelevant_before[:, 1:])
        dropped_relevant = relevant_before[:, columns]
        kept_irrelevant = irrelevant_before[:, -1:] - irrelevant_before[:, columns]
        low, high = _optimal_range(cost_ratio * kept_irrelevant + dropped_relevant, distinct)
        # A resample that drew only one class has no trade-off to optimise: left out.
        both_classes = (relevant_before[:, -1] > 0) & (irrelevant_before[:, -1] > 0)
        middles[first : first + size] = np.where(both_classes, _middle(low, high), np.nan)
    return middles


def evaluate(data: LabelledScores, floors: Iterable[float]) -> Sweep:
    """Counts at the given floors only (searchsorted on each sorted class)."""
    floors = np.unique(np.asarray(list(floors), dtype=np.float64))
    relevant_sorted = np.sort(data.scores[data.relevant])
    irrelevant_sorted = np.sort(data.scores[~data.relevant])
    dropped_relevant = np.searchsorted(relevant_sorted, floors)
    dropped_irrelevant = np.searchsorted(irrelevant_sorted, floors)
    no_memory = None
    if data.turn is not None:
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
    return Calibration(
        data=data,
        sweep=full,
        requested=evaluate(data, floors),
        band=separating_band(data),
        recommendation=recommend(data, cost_ratio, resamples=resamples, seed=seed, result=full),
        notes=notes,
    )
