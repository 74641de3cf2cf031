"""The score space of a saved run or a result, read from its own (raw, score) pairs,
and the floor as a rule on the raw value.

The rules themselves are connectors/common/score_spaces.py's one table (each connector
converts with it). A run saved before memlens recorded its space still carries each
hit's raw value beside its score, so the rule that links them says which space it is:
``1 - d`` (cosine distance), ``1 - d/2`` (squared l2), ``1 - d²/2`` (Euclid), ``-d``
(negative inner product), ``1/(1+d)`` (Manhattan), or the score as sent. A floor means
one thing in one space only, so a floor metric is compared within one space, and the
page says how to apply the floor to the raw value. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from connectors.base import COSINE_DISTANCE, L2, MANHATTAN, NEGATIVE_INNER_PRODUCT, SQUARED_L2, score_from_distance
from connectors.common.score_spaces import AS_SENT, ScoreSpace

TOLERANCE = 1e-6
RULES = (COSINE_DISTANCE, SQUARED_L2, L2, NEGATIVE_INNER_PRODUCT, MANHATTAN)


def formula(pairs: Iterable[tuple[float | None, float | None]]) -> str | None:
    """The rule that turns each raw value into the score (``AS_SENT`` when they are
    equal), or None when no pair has both or no rule of the table fits them all."""
    both = [(float(raw), float(score)) for raw, score in pairs if raw is not None and score is not None
            and math.isfinite(raw) and math.isfinite(score)]
    if not both:
        return None
    if all(abs(raw - score) <= TOLERANCE for raw, score in both):
        return AS_SENT
    for rule in RULES:
        converted = [(score_from_distance(rule, raw), score) for raw, score in both]
        if all(value is not None and abs(value - score) <= TOLERANCE for value, score in converted):
            return rule
    return None


def describe(store: str, how: str | None) -> str:
    """One space in words, as connectors/common/score_spaces.py says it."""
    if how is None:
        return f"{store}: a score converted from the raw value by a rule memlens cannot tell"
    return ScoreSpace(store, how).describe()


def raw_floor_rule(how: str | None, floor: float) -> str | None:
    """How to apply `floor` to the raw value d, in one line (None when the score is the raw value)."""
    if how is None or how == AS_SENT:
        return None
    bound = {
        COSINE_DISTANCE: ("1 - floor", 1 - floor),
        SQUARED_L2: ("2 × (1 - floor)", 2 * (1 - floor)),
        L2: ("√(2 × (1 - floor))", math.sqrt(max(0.0, 2 * (1 - floor)))),
        NEGATIVE_INNER_PRODUCT: ("-floor", -floor),
        MANHATTAN: ("1/floor - 1", 1 / floor - 1 if floor > 0 else math.inf),
    }.get(how)
    if bound is None:
        return None
    text, value = bound
    return (
        f"score = {how} (d the store's raw value): to apply the floor {floor:g} to d, keep a hit when "
        f"d <= {text}, i.e. d <= {value:.4g}"
    )
