"""The floor advice for one calibration: the floor of the chosen mode, the other modes
asked for, the diagnosis and its warnings, in the shapes the CLI, the page and the
exports share. Pure.

The exported floor follows the chosen mode; when that mode reaches no floor (a target
precision out of reach) the cost-ratio floor is exported and a warning says so.

The default line never silently empties most prompts: with no mode asked for and the
cost ratio at its default (``guard_recall``), a cost-ratio floor that drops more than
half of the relevant labels is not exported; the line follows target recall
``GUARD_RECALL`` instead, says why, and names the cost-ratio floor beside it. A cost
ratio the user asked for is exported as asked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dashboard.calibration.choice import COST_RATIO, TARGET_RECALL, FloorChoice, check_target, choose, mode_name
from dashboard.calibration.diagnosis import Diagnosis, FloorOutcome, TurnSplit, diagnose, missed_text, turn_split
from dashboard.calibration.scores import CalibrationError
from dashboard.calibration.sweep import Calibration, format_floor

SPLIT_COLUMNS = ("no_memory_share_answerable", "no_memory_share_unanswerable")
GUARD_RECALL = 0.9  # the target recall the default line falls back to


@dataclass
class FloorAdvice:
    calibration: Calibration
    mode: str  # the mode the exported floor follows
    target: float  # its target (the cost ratio, a share, or beta)
    choices: dict[str, FloorChoice]  # every mode asked for besides the cost ratio
    diagnosis: Diagnosis
    split: TurnSplit | None  # over the sweep's floors
    warnings: list[str] = field(default_factory=list)  # the diagnosis's, then the export's
    fallback: str | None = None  # why the line follows target recall instead of the default cost ratio

    @property
    def chosen(self) -> FloorChoice | None:
        """The chosen mode's floor; None for the cost ratio (the recommendation)."""
        return self.choices.get(self.mode)

    @property
    def reached(self) -> bool:
        chosen = self.chosen
        return chosen is None or chosen.reached

    @property
    def floor(self) -> float:
        """The exported floor."""
        chosen = self.chosen
        if chosen is not None and chosen.floor is not None:
            return chosen.floor
        return self.calibration.recommendation.floor

    @property
    def name(self) -> str:
        return mode_name(self.mode, self.target)

    @property
    def snippet(self) -> str:
        return f"MEMORY_SCORE_FLOOR={format_floor(self.floor)}"

    def env_text(self) -> str:
        """The .env download: comment lines naming the mode and the warnings, then the line."""
        lines = [f"# memlens: floor chosen by {self.name}"]
        lines += [f"# {self.fallback}"] if self.fallback else []
        lines += [f"# warning: {warning}" for warning in self.warnings]
        return "\n".join(lines + [self.snippet]) + "\n"

    def as_dict(self) -> dict[str, Any]:
        """The JSON report's ``advice``: mode, target, floor, each mode's choice and the diagnosis."""
        return {
            "mode": self.mode,
            "target": self.target,
            "name": self.name,
            "floor": self.floor,
            "snippet": self.snippet,
            "reached": self.reached,
            "choices": {mode: choice.as_dict() for mode, choice in self.choices.items()},
            "diagnosis": self.diagnosis.as_dict(),
            "warnings": list(self.warnings),
            "fallback": self.fallback,
        }

    def export_fields(self) -> dict[str, Any]:
        """What the page's floor JSON adds to the chosen floor's numbers: how it was
        chosen, its interval when not the cost ratio's, and the warnings."""
        chosen = self.chosen
        fields: dict[str, Any] = {
            "recommended": True,  # the floor its mode recommends, not one picked by hand
            "mode": self.mode,
            "target": self.target,
            "mode_name": self.name,
            "reached": self.reached,
            "warnings": list(self.warnings),
            "fallback": self.fallback,
            "diagnosis": {
                "roc_auc": self.diagnosis.roc_auc,
                "average_precision": self.diagnosis.average_precision,
                "relevant_share": self.diagnosis.relevant_share,
                "answerable_turns": self.diagnosis.answerable_turns,
                "unanswerable_turns": self.diagnosis.unanswerable_turns,
                "missed_turns": self.diagnosis.missed_turns,
            },
        }
        if chosen is not None and chosen.reached:
            fields["interval"] = list(chosen.interval) if chosen.interval else None
            fields["interval_note"] = chosen.interval_note
            fields["resampled"] = chosen.resampled
        return json_safe(fields)

    def sweep_frame(self):
        """The sweep table with the no-memory share of answerable and unanswerable turns."""
        frame = self.calibration.sweep.to_frame()
        if self.split is not None:
            frame[SPLIT_COLUMNS[0]] = self.split.answerable_share
            frame[SPLIT_COLUMNS[1]] = self.split.unanswerable_share
        return frame


def empties_prompts(calibration: Calibration) -> bool:
    """The cost-ratio floor drops more than half of the relevant labels: as the default
    line it would leave most prompts without their memories."""
    return 2 * calibration.recommendation.dropped_relevant > calibration.sweep.relevant_total


def advise(
    calibration: Calibration,
    targets: dict[str, float] | None = None,
    mode: str = COST_RATIO,
    *,
    resamples: int | None = 0,
    seed: int = 0,
    guard_recall: bool = False,
    ask_cost_ratio: str | None = None,
) -> FloorAdvice:
    """Choose a floor by each mode in ``targets`` ({mode: target}); export ``mode``'s.

    The cost ratio is the calibration's own; ``resamples`` is for the other modes'
    intervals (0: none; None: the sweep's default for the row count).
    ``guard_recall``: the cost ratio is the default, not asked for (see the module
    docstring); ``ask_cost_ratio``: how this surface asks for the cost-ratio floor
    explicitly, said in the fallback line (default: the CLI's ``--cost-ratio``).
    """
    data, full, rec = calibration.data, calibration.sweep, calibration.recommendation
    targets = dict(targets or {})
    fallback = None
    if guard_recall and mode == COST_RATIO and not targets and empties_prompts(calibration):
        mode, targets = TARGET_RECALL, {TARGET_RECALL: GUARD_RECALL}
        ask = ask_cost_ratio or f"ask for the cost ratio explicitly (--cost-ratio {rec.cost_ratio:g})"
        fallback = (
            f"MEMORY_SCORE_FLOOR follows {mode_name(TARGET_RECALL, GUARD_RECALL)}: the cost-ratio floor "
            f"{format_floor(rec.floor)} (cost ratio {rec.cost_ratio:g}) drops {rec.dropped_relevant:,} of "
            f"{full.relevant_total:,} relevant memories, more than half, and would leave most prompts without them; "
            f"{ask} to export it"
        )
    if mode == COST_RATIO:
        targets.pop(COST_RATIO, None)
        target = rec.cost_ratio
    elif mode not in targets:
        raise CalibrationError(f"mode {mode!r} has no target in {targets!r}")
    else:
        target = targets[mode]
    for name, value in targets.items():
        check_target(name, value)
    choices = {
        name: choose(data, name, value, result=full, resamples=resamples, seed=seed) for name, value in targets.items()
    }
    split = turn_split(data, full.floor)

    def answerable_share(floor: float) -> float | None:
        if split is None or not split.answerable:
            return None
        return float(split.at(np.array([floor])).answerable_share[0])

    outcomes = [
        FloorOutcome(
            f"cost ratio {rec.cost_ratio:g}", rec.floor, rec.dropped_relevant, full.relevant_total, answerable_share(rec.floor)
        )
    ]
    for choice in choices.values():
        if choice.floor is not None:
            outcomes.append(
                FloorOutcome(choice.name, choice.floor, choice.dropped_relevant, full.relevant_total, answerable_share(choice.floor))
            )
    diagnosis = diagnose(full, data, outcomes, separates=calibration.band is not None, split=split)
    warnings = list(diagnosis.warnings)
    chosen = choices.get(mode)
    if chosen is not None and not chosen.reached:
        warnings.append(
            f"No floor reaches {chosen.name}; the exported floor is the cost-ratio one "
            f"({format_floor(rec.floor)} at cost ratio {rec.cost_ratio:g})."
        )
    return FloorAdvice(calibration, mode, float(target), choices, diagnosis, split, warnings, fallback)


# ----------------------------------------------------------------- the CLI's lines


def json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities as None and numpy numbers as Python ones (JSON has neither)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def turn_line(advice: FloorAdvice) -> str | None:
    """No memory in answerable turns (a loss) and unanswerable ones (right) at the exported floor."""
    if advice.split is None:
        return None
    at = advice.split.at(np.array([advice.floor]))
    parts = []
    if at.answerable:
        parts.append(f"no memory in {at.answerable_share[0]:.0%} of {at.answerable} answerable turns (a loss)")
    if at.unanswerable:
        parts.append(at.other_turns_text(float(at.unanswerable_share[0])))
    if at.missed:
        parts.append(missed_text(at.missed))
    return f"at floor {format_floor(advice.floor)}: " + ", ".join(parts)


def advice_lines(
    table: list[str], advice: FloorAdvice, segment_lines: Sequence[str] = (), segment_warnings: Sequence[str] = ()
) -> list[str]:
    """The table of ``report.table_lines`` with the advice spliced in: each mode's line
    after the recommended floor, the exported floor's line in place of the
    recommendation's, then the diagnosis, the segments and the ``warning:`` lines.
    With no mode asked and separating labels, the table is unchanged above the new
    lines."""
    lines = list(table)
    snippet_at = next(i for i, line in enumerate(lines) if line.startswith("MEMORY_SCORE_FLOOR="))
    lines[snippet_at] = advice.snippet
    said = [advice.fallback] if advice.fallback else []
    lines[snippet_at:snippet_at] = [choice.line() for choice in advice.choices.values()] + said
    if not advice.diagnosis.separates:
        lines.append(advice.diagnosis.line())
    turns = turn_line(advice)
    if turns:
        lines.append(turns)
    lines.extend(segment_lines)
    lines.extend(f"warning: {warning}" for warning in [*advice.warnings, *segment_warnings])
    return lines
