"""Labelled scores, the calibration's input: checked once and held as numpy arrays. Pure.

One row per labelled hit: its ``score``, its ``label`` (``relevant`` / ``not_relevant``)
and, when known, the ``message_id`` of the turn it was returned for. A row that
cannot be used raises ``CalibrationError`` naming the rows, so the page and the CLI
can say which lines of a label file to fix.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from connectors.common.errors import MemlensError
from dashboard.database.model import NOT_RELEVANT, RELEVANT

_SHOWN_PROBLEM_ROWS = 5


class CalibrationError(MemlensError, ValueError):
    """Labelled rows that cannot be calibrated on; the message says which and why."""


class TooFewLabels(CalibrationError):
    """Nothing is wrong with the rows, there are just not enough of them yet: no
    labelled row at all, or rows of one class only. A page shows this as the next
    step to take (a warning), not as a fault."""


def _rows(row_name: str, numbers: Sequence[int]) -> str:
    """"row 4" / "rows 2, 3, 7 and 12 more": which rows, without flooding a message."""
    shown = ", ".join(str(n) for n in numbers[:_SHOWN_PROBLEM_ROWS])
    more = len(numbers) - min(len(numbers), _SHOWN_PROBLEM_ROWS)
    noun = row_name if len(numbers) == 1 else row_name + "s"
    return f"{noun} {shown}" + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class LabelledScores:
    """Validated input: float scores, a relevant mask and, optionally, a turn code
    per row (0..turns-1, from the message ids)."""

    scores: np.ndarray  # float64
    relevant: np.ndarray  # bool
    turn: np.ndarray | None = None  # int64 codes, or None without message ids
    turns: int = 0
    # Per turn code: can the turn be answered from memory, as a judged set says (a
    # relevant memory exists, fetched or not)? None: only the labels know, so a turn
    # counts as answerable when one of its labelled hits is relevant.
    answerable: np.ndarray | None = None
    # Turns whose rank-1 hit is not among the labelled rows (a sampled session labels
    # some rows of each turn): a turn's no-memory figure is its top hit's, so with any
    # such turn the turn figures would count the sample, not the turns, and are not shown.
    sampled: int = 0

    @property
    def turn_figures(self) -> bool:
        """Whether turn figures (no memory per floor) can be counted from these labels."""
        return self.turn is not None and not self.sampled

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
        raise TooFewLabels("No labelled rows: label some retrievals first (or load a label file).")
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
        raise TooFewLabels(
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
    """A code per row for its turn, numbered in the ids' sorted order, not the rows':
    the bootstrap draws turns by code, so one set of labels gives one interval whether
    it comes from the label database, an upload or the CLI, in whatever row order."""
    unique, turn = np.unique(np.asarray([str(v) for v in ids], dtype=object).astype(str), return_inverse=True)
    return turn.astype(np.int64), len(unique)
