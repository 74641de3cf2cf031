"""A relevance rule that reads the whole turn, applied with the standard library.

The single floor looks at one hit's score alone. A turn rule also looks at what the
rest of the turn scored (issue 54): a hit that stands well clear of the turn's other
hits is likelier relevant than one that scored the same in a turn of high scores.

Features a turn has at run time, per scored hit (``turn_features``):

    score        the hit's score (memlens's, higher is better)
    rank         its 1-based position in the store's answer
    gap_to_top   the turn's top score minus this hit's score (0 for the top hit)
    z_score      (score - the turn's mean score) / the turn's standard deviation
                 (population; 0 when every hit scored the same)
    percentile   the share of the turn's other scored hits scoring strictly lower
                 (1 for a hit alone in its turn)
    part.NAME    the store's score part NAME (``Hit.breakdown``), 0 where absent

Rule kinds (``TurnRule.kind``):

    learned      logistic: relevance = 1 / (1 + exp(-(intercept + sum(c_i * x_i))));
                 kept when relevance >= cut (a probability). The coefficients are on
                 the features as they are (the fit's standardisation folded in).
    largest-gap  Adaptive-k (Taguchi et al., EMNLP 2025): the hits above the largest
                 drop between consecutive scores of the turn (sorted high to low).
    top-ratio    the hits scoring at least ``top - (1 - cut) * |top|`` (for a positive
                 top score: cut x the top score).

A label-free cut (largest-gap, top-ratio) is combined with the floor: kept = at or
above the floor AND past the cut, so a turn whose hits all score low still gets
the no-memory block. The learned rule decides alone (the score is one of its
features). A hit with no score is never kept, as under the floor.

``kept_mask`` is what the agent side runs on every turn (no text built);
``decide`` gives the same decisions with a reason per hit, for the pages. Standard
library only: the agent side imports this (``memlens`` stays stdlib-only).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from connectors.common.errors import MemlensError
from dashboard.floor import floor_text

FLOOR = "floor"  # what the log calls the plain floor, when a config holds no rule
LEARNED, LARGEST_GAP, TOP_RATIO = "learned", "largest-gap", "top-ratio"
RULE_KINDS = (LEARNED, LARGEST_GAP, TOP_RATIO)
FEATURES = ("score", "rank", "gap_to_top", "z_score", "percentile")
PART_PREFIX = "part."
MAX_FEATURES = 64  # a rule file is read in an agent's process: a bounded model


class RuleError(MemlensError):
    """A rule that cannot be applied; ``field`` names the part of it that is wrong
    (floor_config.py turns it into a FloorConfigError naming the file too)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # a whole number past a float's range: no coefficient
        return None
    return number if math.isfinite(number) else None


def known_feature(name: object) -> bool:
    return isinstance(name, str) and (name in FEATURES or (name.startswith(PART_PREFIX) and len(name) > len(PART_PREFIX)))


@dataclass(frozen=True)
class TurnRule:
    """One rule, checked when made (RuleError naming the field)."""

    kind: str
    features: tuple[str, ...] = ()
    coefficients: tuple[float, ...] = ()
    intercept: float = 0.0
    cut: float | None = None  # learned: a probability in (0, 1); top-ratio: a share of the top score in (0, 1]

    def __post_init__(self) -> None:
        if self.kind not in RULE_KINDS:
            raise RuleError("kind", f"{str(self.kind)[:60]!r} is not one of {', '.join(RULE_KINDS)}")
        if self.kind == LEARNED:
            self._check_learned()
        elif self.kind == TOP_RATIO:
            cut = _finite(self.cut)
            if cut is None or not 0.0 < cut <= 1.0:
                raise RuleError("cut", f"{str(self.cut)[:60]!r} is not a share of the top score above 0 and at most 1")
            object.__setattr__(self, "cut", cut)

    def _check_learned(self) -> None:
        features = self.features
        if isinstance(features, str) or not isinstance(features, (list, tuple)) or not features:
            raise RuleError("features", f"{str(features)[:60]!r} is not a list of feature names")
        if len(features) > MAX_FEATURES:
            raise RuleError("features", f"{len(features)} features, more than {MAX_FEATURES}")
        for position, name in enumerate(features):
            if not known_feature(name):
                raise RuleError(f"features[{position}]", f"{str(name)[:60]!r} is not one of {', '.join(FEATURES)} or part.NAME")
        coefficients = self.coefficients
        if isinstance(coefficients, str) or not isinstance(coefficients, (list, tuple)) or len(coefficients) != len(features):
            raise RuleError("coefficients", f"not a list of {len(features)} numbers, one per feature")
        numbers = []
        for position, value in enumerate(coefficients):
            number = _finite(value)
            if number is None:
                raise RuleError(f"coefficients[{position}]", f"{str(value)[:60]!r} is not a finite number")
            numbers.append(number)
        intercept = _finite(self.intercept)
        if intercept is None:
            raise RuleError("intercept", f"{str(self.intercept)[:60]!r} is not a finite number")
        cut = _finite(self.cut)
        if cut is None or not 0.0 < cut < 1.0:
            raise RuleError("cut", f"{str(self.cut)[:60]!r} is not a probability above 0 and under 1")
        object.__setattr__(self, "features", tuple(features))
        object.__setattr__(self, "coefficients", tuple(numbers))
        object.__setattr__(self, "intercept", intercept)
        object.__setattr__(self, "cut", cut)

    @cached_property
    def uses_parts(self) -> bool:
        """Whether the rule reads the store's score parts (a ``part.NAME`` feature)."""
        return any(name.startswith(PART_PREFIX) for name in self.features)

    @cached_property
    def _folded(self) -> tuple[float, float, float, float, float, float]:
        """A learned rule's constants, worked out once rather than on every agent turn:
        the weights of score, gap_to_top, z_score, rank and percentile (each feature's
        coefficients summed; a part.NAME weight is left out, the fast path has no parts)
        and the relevance cut as a log-odds (relevance >= cut <=> log-odds >= log(cut / (1 - cut)))."""
        weight = dict.fromkeys(FEATURES, 0.0)
        for name, coefficient in zip(self.features, self.coefficients, strict=True):
            if name in weight:
                weight[name] += coefficient
        cut = self.cut or 0.0
        edge = math.log(cut / (1.0 - cut))
        return weight["score"], weight["gap_to_top"], weight["z_score"], weight["rank"], weight["percentile"], edge

    def as_dict(self) -> dict[str, object]:
        """The rule as the floor file holds it (floor_config reads it back)."""
        data: dict[str, object] = {"kind": self.kind}
        if self.kind == LEARNED:
            data.update(features=list(self.features), coefficients=list(self.coefficients), intercept=self.intercept)
        if self.cut is not None:
            data["cut"] = self.cut
        return data

    def describe(self) -> str:
        if self.kind == LEARNED:
            return f"learned rule (relevance cut {floor_text(self.cut or 0.0)})"
        if self.kind == TOP_RATIO:
            return f"top-ratio rule ({floor_text(self.cut or 0.0)} of the turn's top score, with the floor)"
        return "largest-gap rule (Adaptive-k, with the floor)"


# ------------------------------------------------------------------ features


def turn_features(
    scores: Sequence[float | None],
    ranks: Sequence[int] | None = None,
    features: Sequence[str] = FEATURES,
    breakdowns: Sequence[Mapping[str, object] | None] | None = None,
) -> list[list[float] | None]:
    """Each hit's features (in ``features``' order), None for a hit with no score.
    ``ranks`` default to the positions 1, 2, ...; the turn's figures (top, mean,
    deviation, standing) are over its scored hits only. The one definition: the
    agent side and the fit (calibration/turn_fit.py) both call it."""
    scored = [s for s in scores if s is not None]
    if not scored:
        return [None] * len(scores)
    top = max(scored)
    count = len(scored)
    mean = math.fsum(scored) / count
    deviation = math.sqrt(math.fsum((s - mean) ** 2 for s in scored) / count)
    ordered = sorted(scored) if "percentile" in features else []
    rows: list[list[float] | None] = []
    for position, score in enumerate(scores):
        if score is None:
            rows.append(None)
            continue
        row = []
        for name in features:
            if name == "score":
                row.append(score)
            elif name == "rank":
                row.append(float(ranks[position] if ranks is not None else position + 1))
            elif name == "gap_to_top":
                row.append(top - score)
            elif name == "z_score":
                row.append((score - mean) / deviation if deviation > 0 else 0.0)
            elif name == "percentile":
                row.append(bisect_left(ordered, score) / (count - 1) if count > 1 else 1.0)
            else:  # part.NAME: the store's score part, 0 where it gives none
                parts = breakdowns[position] if breakdowns is not None else None
                value = _finite(parts.get(name[len(PART_PREFIX) :])) if parts else None
                row.append(value if value is not None else 0.0)
        rows.append(row)
    return rows


def relevance(row: Sequence[float], rule: TurnRule) -> float:
    """The learned rule's probability for one hit's features (logistic, overflow-safe)."""
    z = rule.intercept + math.fsum(c * x for c, x in zip(rule.coefficients, row, strict=True))
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def largest_gap_cut(scores: Sequence[float | None]) -> tuple[float, float | None] | None:
    """(the lowest score above the turn's largest drop, the score just under it, None
    when nothing is under it); None for a turn with no scored hit. Ties between equal
    drops go to the first (highest) one: the fewest hits kept."""
    ordered = sorted((s for s in scores if s is not None), reverse=True)
    if not ordered:
        return None
    best, at = -1.0, 0
    for index in range(len(ordered) - 1):
        drop = ordered[index] - ordered[index + 1]
        if drop > best:
            best, at = drop, index
    if best <= 0:  # one hit, or every hit scored the same: no drop, all kept
        return ordered[-1], None
    return ordered[at], ordered[at + 1]


def top_ratio_cut(scores: Sequence[float | None], ratio: float) -> float | None:
    scored = [s for s in scores if s is not None]
    if not scored:
        return None
    top = max(scored)
    return top - (1.0 - ratio) * abs(top)


# ------------------------------------------------------------------ the decision


def kept_mask(
    scores: Sequence[float | None],
    rule: TurnRule | None,
    floor: float,
    ranks: Sequence[int] | None = None,
    breakdowns: Sequence[Mapping[str, object] | None] | None = None,
) -> list[bool]:
    """Kept (True) or dropped, per hit of one turn, in the store's order: the floor
    alone when ``rule`` is None. What the agent runs on every turn."""
    if rule is None:
        return [s is not None and s >= floor for s in scores]
    if rule.kind == LEARNED:
        return _learned_mask(scores, rule, ranks, breakdowns)
    if rule.kind == LARGEST_GAP:
        found = largest_gap_cut(scores)
        edge = max(floor, found[0]) if found else math.inf
    else:
        edge_cut = top_ratio_cut(scores, rule.cut or 1.0)
        edge = max(floor, edge_cut) if edge_cut is not None else math.inf
    return [s is not None and s >= edge for s in scores]


def _learned_mask(
    scores: Sequence[float | None],
    rule: TurnRule,
    ranks: Sequence[int] | None,
    breakdowns: Sequence[Mapping[str, object] | None] | None,
) -> list[bool]:
    """The learned rule's decisions with the turn's figures computed once (this runs on
    every agent turn): the same formulas as ``turn_features``, the features that are
    linear in the score folded into one slope, and the relevance cut compared as a
    log-odds, which is the same comparison."""
    if None in scores or (breakdowns is not None and rule.uses_parts):
        # unscored hits or store parts: the general path
        cut = rule.cut or 0.0
        return [row is not None and relevance(row, rule) >= cut for row in turn_features(scores, ranks, rule.features, breakdowns)]
    count = len(scores)
    if not count:
        return []
    values: list[float] = scores  # type: ignore[assignment]  # no None: checked above
    by_score, by_gap, by_z, by_rank, by_standing, edge = rule._folded
    top = max(values)
    mean = math.fsum(values) / count
    deviation = math.sqrt(math.fsum([(s - mean) ** 2 for s in values]) / count)
    # score, gap_to_top (top - s) and z_score ((s - mean) / deviation) are each linear in
    # the hit's score: within a turn one slope and one offset stand for all three
    per_deviation = by_z / deviation if deviation > 0 else 0.0
    slope = by_score - by_gap + per_deviation
    offset = rule.intercept + by_gap * top - per_deviation * mean
    ordered = sorted(values) if by_standing and count > 1 else None
    mask = []
    for position, score in enumerate(values):
        z = offset + slope * score
        if by_rank:
            z += by_rank * (ranks[position] if ranks is not None else position + 1)
        if by_standing:
            z += by_standing * (bisect_left(ordered, score) / (count - 1) if ordered is not None else 1.0)
        mask.append(z >= edge)
    return mask


@dataclass(frozen=True)
class Decision:
    """One hit's fate under the turn's rule, and why, in a sentence for a page."""

    kept: bool
    reason: str
    value: float | None  # what the cut was compared with: the relevance (learned), else the score
    cut: float | None  # the turn's cut (a probability, or a score); None for a hit with no score


def decide(
    scores: Sequence[float | None],
    rule: TurnRule | None,
    floor: float,
    ranks: Sequence[int] | None = None,
    breakdowns: Sequence[Mapping[str, object] | None] | None = None,
) -> list[Decision]:
    """Per hit of one turn (in the store's order): kept or dropped, and the reason
    ("kept: relevance 0.42 at or above the rule's cut 0.31"). The same decisions as
    ``kept_mask``, which the agent side runs: Inspect, the monitor and Quality show
    these for the hits the agent kept or dropped."""
    mask = kept_mask(scores, rule, floor, ranks, breakdowns)
    out: list[Decision] = []
    if rule is not None and rule.kind == LEARNED:
        rows = turn_features(scores, ranks, rule.features, breakdowns)
        for kept, row, score in zip(mask, rows, scores, strict=True):
            if row is None or score is None:
                out.append(Decision(False, "dropped: no score", None, None))
                continue
            value = relevance(row, rule)
            said = f"relevance {value:.2f} (score {floor_text(score)})"
            verb = f"kept: {said} at or above" if kept else f"dropped: {said} under"
            out.append(Decision(kept, f"{verb} the rule's cut {floor_text(rule.cut or 0.0)}", value, rule.cut))
        return out
    edge, why = floor, f"the floor {floor_text(floor)}"
    if rule is not None and rule.kind == LARGEST_GAP:
        found = largest_gap_cut(scores)
        if found is not None:
            cut, under = found
            drop = f"above the largest drop, {floor_text(cut)} to {floor_text(under)}" if under is not None else "no drop in the turn"
            edge, why = _with_floor(cut, f"the turn's rule cut {floor_text(cut)} ({drop})", floor)
    elif rule is not None:
        cut_score = top_ratio_cut(scores, rule.cut or 1.0)
        if cut_score is not None:
            top = max(s for s in scores if s is not None)
            shown = f"the turn's rule cut {floor_text(cut_score)} ({floor_text(rule.cut or 1.0)} of the top score {floor_text(top)})"
            edge, why = _with_floor(cut_score, shown, floor)
    for kept, score in zip(mask, scores, strict=True):
        if score is None:
            out.append(Decision(False, "dropped: no score", None, None))
        elif kept:
            out.append(Decision(True, f"kept: {floor_text(score)} at or above {why}", score, edge))
        else:
            out.append(Decision(False, f"dropped: {floor_text(score)} under {why}", score, edge))
    return out


def _with_floor(cut: float, said: str, floor: float) -> tuple[float, str]:
    """The edge of a label-free cut with the floor, and how a reason names it."""
    if floor > cut:
        return floor, f"the floor {floor_text(floor)} (above {said})"
    return cut, f"{said} and the floor {floor_text(floor)}"
