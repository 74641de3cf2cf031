"""Floors per segment: one floor per user, store or tag, beside the one floor for all.

A floor that suits one user's memories or one category of question may not suit
another's. Each segment gets the floor of the chosen mode with its bootstrap
interval, and a note when that floor cannot be trusted: too few labels (an interval
wider than ``MAX_STABLE_WIDTH``, under ``MIN_RELEVANT`` relevant ones, or too few
turns for an interval by the global floor's rule), one label class only, or a target
out of reach.
Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dashboard.calibration.bootstrap import default_resamples
from dashboard.calibration.choice import COST_RATIO, choose
from dashboard.calibration.label_files import LabelFile
from dashboard.calibration.scores import CalibrationError, LabelledScores
from dashboard.calibration.sweep import format_floor, recommend, shown_interval

SEGMENT_FIELDS = ("user", "store", "tag")
ALL_SEGMENTS = "(all segments)"
NO_VALUE = "(none)"
MAX_STABLE_WIDTH = 0.1
# Under this many relevant labels a bootstrap interval says little: resamples of a
# handful of turns repeat the same few scores, and the interval looks narrow.
MIN_RELEVANT = 10


@dataclass
class SegmentFloor:
    segment: str
    rows: int
    relevant: int
    turns: int | None
    floor: float | None
    interval: tuple[float, float] | None
    note: str | None = None  # why this floor should not be trusted, when it should not

    @property
    def width(self) -> float | None:
        return self.interval[1] - self.interval[0] if self.interval else None

    def line(self, by: str) -> str:
        """The CLI line: ``segment tag=temporal: floor 0.41 (95% interval 0.37-0.45) over 812 labels``."""
        name = self.title(by)
        if self.floor is None:
            return f"{name}: no floor over {self.rows} labels"
        interval = ""
        if self.interval:
            low, high = shown_interval(self.floor, self.interval)
            interval = f" (95% interval {format_floor(low)}-{format_floor(high)})"
        return f"{name}: floor {format_floor(self.floor)}{interval} over {self.rows} labels, {self.relevant} relevant"

    def title(self, by: str) -> str:
        return f"segment {by}={self.segment}" if self.segment != ALL_SEGMENTS else f"all {by} segments"

    def as_dict(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["interval"] = list(self.interval) if self.interval else None
        return data


def segments_for_export(by: str, segments: list[SegmentFloor]) -> dict[str, dict[str, float]]:
    """The floor JSON's ``segments`` (``{"user": {"sam": 0.41}}``, what dashboard/runtime.py
    looks up): each segment with a floor that can be trusted. A segment with a note
    (too few labels, one class, a target out of reach) is left out, so the agent
    falls back to the global floor for it, as for a segment never labelled."""
    floors = {s.segment: s.floor for s in segments if s.floor is not None and s.note is None and s.segment not in (ALL_SEGMENTS, NO_VALUE)}
    return {by: floors} if floors else {}


def segment_fields(labels: LabelFile) -> list[str]:
    """The segment fields these labels carry with at least two distinct values."""
    fields = []
    for name in SEGMENT_FIELDS:
        values = {getattr(row, name) for row in labels.rows}
        if len(values) >= 2 and values != {None}:  # rows without a value form a segment too
            fields.append(name)
    return fields


def segment_floors(
    labels: LabelFile,
    by: str,
    mode: str = COST_RATIO,
    target: float = 1.0,
    *,
    resamples: int | None = None,
    seed: int = 0,
    max_width: float = MAX_STABLE_WIDTH,
) -> list[SegmentFloor]:
    """The floor for all rows first, then one per value of ``by`` (rows without one
    form the ``(none)`` segment), largest segment first.

    ``resamples`` defaults to the sweep's default for all rows, so the segments
    together cost about what the one bootstrap of every row costs.
    """
    if by not in SEGMENT_FIELDS:
        raise CalibrationError(f"segments are by {', '.join(SEGMENT_FIELDS)}; got {by!r}")
    if resamples is None:
        resamples = default_resamples(len(labels.rows))
    whole = labels.labelled_scores()
    values = np.array([getattr(row, by) or NO_VALUE for row in labels.rows], dtype=object)
    names, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    # Rows grouped by segment once (a stable sort keeps each segment's rows in file
    # order), not a pass over every row per segment: there may be thousands of users.
    by_segment = np.argsort(inverse, kind="stable")
    ends = np.cumsum(counts)
    floors = [_floor(ALL_SEGMENTS, whole, mode, target, resamples, seed, max_width)]
    for index in np.argsort(-counts, kind="stable"):
        rows = by_segment[ends[index] - counts[index] : ends[index]]
        floors.append(_segment(str(names[index]), whole, rows, mode, target, resamples, seed, max_width))
    return floors


def _segment(
    name: str, whole: LabelledScores, rows: np.ndarray, mode: str, target: float, resamples: int, seed: int, max_width: float
) -> SegmentFloor:
    relevant = whole.relevant[rows]
    turn = whole.turn[rows] if whole.turn is not None else None
    turns = len(np.unique(turn)) if turn is not None else None
    if relevant.all() or not relevant.any():
        only = "relevant" if relevant.all() else "not relevant"
        return SegmentFloor(name, len(rows), int(relevant.sum()), turns, None, None, f"only {only} labels: no floor to choose")
    part = LabelledScores(whole.scores[rows], relevant, None, 0)
    if turn is not None:
        codes = np.unique(turn, return_inverse=True)[1]
        part = LabelledScores(whole.scores[rows], relevant, codes.astype(np.int64), int(codes.max()) + 1)
    return _floor(name, part, mode, target, resamples, seed, max_width)


def _floor(name: str, data: LabelledScores, mode: str, target: float, resamples: int, seed: int, max_width: float) -> SegmentFloor:
    turns = data.turns if data.turn is not None else None
    if mode == COST_RATIO:
        rec = recommend(data, target, resamples=resamples, seed=seed)
        floor, interval, no_interval = rec.floor, rec.interval, rec.interval_note
    else:
        choice = choose(data, mode, target, resamples=resamples, seed=seed)
        if choice.floor is None:
            return SegmentFloor(name, len(data), data.relevant_count, turns, None, None, f"no floor reaches {choice.name}")
        floor, interval, no_interval = choice.floor, choice.interval, choice.interval_note
    segment = SegmentFloor(name, len(data), data.relevant_count, turns, floor, interval)
    # The interval's reason is the global floor's own (bootstrap.no_interval_reason): one rule for both.
    if data.relevant_count < MIN_RELEVANT:
        segment.note = f"too few labels for a stable floor: {data.relevant_count} relevant (fewer than {MIN_RELEVANT})"
        if no_interval:
            segment.note += f"; {no_interval}"
    elif no_interval:
        segment.note = no_interval
    elif segment.width is not None and (segment.width > max_width or not math.isfinite(segment.width)):
        segment.note = (
            f"too few labels for a stable floor: the 95% interval is {segment.width:.2f} wide (more than {max_width:g})"
        )
    return segment
