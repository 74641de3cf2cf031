"""The cost-optimal floor range, on the labels and on bootstrap resamples of them. Pure.

A resample draws turns (message ids) with replacement, rows when there are none:
hits returned for one turn are not independent of each other. Each resample is a
weight per row over the same sorted scores, so the cost at every floor is read from
running weighted totals, as in ``sweep``, never a pass over the rows per floor.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dashboard.calibration.scores import LabelledScores

DEFAULT_RESAMPLES = 1000
MIN_RESAMPLES = 100
# The bootstrap costs resamples x rows: past 20,000 rows, fewer resamples keep a
# page rerun or a CLI call within seconds.
_BOOTSTRAP_BUDGET = 20_000_000
# Cap on the (resamples x rows) weight matrix the bootstrap builds at once.
_BOOTSTRAP_CELLS = 1_000_000
# Under this many turns (rows, without message ids) there is no interval: resamples
# of a handful of turns redraw the same few scores, and the interval looks narrow
# (two labels from one turn gave "0.23-0.235"). The global floor and every segment's
# follow this one rule (``no_interval_reason``).
MIN_INTERVAL_TURNS = 10


def default_resamples(rows: int) -> int:
    """1000 resamples, fewer (never under 100) on large label sets."""
    return int(min(DEFAULT_RESAMPLES, max(MIN_RESAMPLES, _BOOTSTRAP_BUDGET // max(1, rows))))


def no_interval_reason(data: LabelledScores) -> str | None:
    """Why these labels get no bootstrap interval (too few turns to resample, the
    minimum and the count named), or None when they are enough."""
    unit = "turn" if data.turn is not None else "row"
    drawn = data.turns if data.turn is not None else len(data)
    if drawn >= MIN_INTERVAL_TURNS:
        return None
    return (
        f"no interval: the labels hold {drawn} {unit}{'' if drawn == 1 else 's'}, fewer than the "
        f"{MIN_INTERVAL_TURNS} a bootstrap of {unit}s needs"
    )


# Said when every resample drew one label class only: nothing to optimise on any of them.
ONE_CLASS_RESAMPLES = "no interval: no resample held both labels"


def optimal_range(cost: np.ndarray, distinct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def middle(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The middle of each (low, high]; the finite edge when the other is infinite."""
    with np.errstate(invalid="ignore"):
        return np.where(
            np.isfinite(low) & np.isfinite(high), (low + high) / 2, np.where(np.isfinite(low), low, high)
        )


def resampled_totals(
    data: LabelledScores, order: np.ndarray, resamples: int, seed: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Running weighted totals of relevant and irrelevant rows, in ``order`` (the
    rows sorted by score), one (resamples, rows + 1) pair per chunk of resamples.

    A resample of turns is a weight per turn (how often it was drawn), so each
    resample is the same sorted rows with other weights; column i of a total counts
    the rows before position i. Every floor's counts are read from these, as in
    ``sweep``. Chunks keep the matrices under ``_BOOTSTRAP_CELLS`` cells.
    """
    rng = np.random.default_rng(seed)
    rows = len(order)
    relevant_sorted = data.relevant[order]
    groups = data.turn[order] if data.turn is not None else np.arange(rows)
    group_count = data.turns if data.turn is not None else rows
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
        yield relevant_before, irrelevant_before


def bootstrap_middles(
    data: LabelledScores, distinct: np.ndarray, cost_ratio: float, resamples: int, seed: int
) -> np.ndarray:
    """The optimal range's middle on each resample."""
    order = np.argsort(data.scores, kind="stable")
    rows = len(order)
    # Column j: floors up to distinct[j] drop the rows before starts[j]; the last
    # column (every row dropped) is the floor above every score.
    columns = np.append(np.searchsorted(data.scores[order], distinct, side="left"), rows)

    middles = np.empty(resamples)
    first = 0
    for relevant_before, irrelevant_before in resampled_totals(data, order, resamples, seed):
        size = len(relevant_before)
        dropped_relevant = relevant_before[:, columns]
        kept_irrelevant = irrelevant_before[:, -1:] - irrelevant_before[:, columns]
        low, high = optimal_range(cost_ratio * kept_irrelevant + dropped_relevant, distinct)
        # A resample that drew only one class has no trade-off to optimise: left out.
        both_classes = (relevant_before[:, -1] > 0) & (irrelevant_before[:, -1] > 0)
        middles[first : first + size] = np.where(both_classes, middle(low, high), np.nan)
        first += size
    return middles
