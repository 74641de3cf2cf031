"""The score space of a result or a run: which store the score came from and how its
raw value became memlens's score.

memlens's score is a similarity, higher is better; for a store that returns a
distance it is a conversion of that distance (docs/stores.md): ``1 - d`` (cosine
distance), ``1 - d/2`` (squared l2, Chroma and LanceDB), ``1 - d²/2`` (Euclid, Qdrant
and pgvector), ``-d`` (pgvector's negative inner product). A floor means one thing in
one space only: 0.64 on an embedded store's weighted score is not 0.64 on Qdrant's
cosine, and a team comparing Chroma's raw l2 distance with the floor keeps the wrong
memories. So a floor metric is compared only within one space, and the page and the
floor's advice say, in one line, how to apply the floor to the raw value.

The formula is read from the (raw, score) pairs themselves, so a run saved before
memlens recorded it still says which it is. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

AS_SENT = "as the store sends it"
TOLERANCE = 1e-6

# formula -> (score from raw d, the floor on the raw value, for floor f)
FORMULAS: dict[str, tuple] = {
    "1 - d": (lambda d: 1 - d, "keep a hit when d <= 1 - floor"),
    "1 - d/2": (lambda d: 1 - d / 2, "keep a hit when d <= 2 × (1 - floor)"),
    "1 - d²/2": (lambda d: 1 - d * d / 2, "keep a hit when d <= √(2 × (1 - floor))"),
    "-d": (lambda d: -d, "keep a hit when d <= -floor"),
}


def formula(pairs: Iterable[tuple[float | None, float | None]]) -> str | None:
    """The formula that turns each raw value into the score (``AS_SENT`` when they are
    equal), or None when no pair has both or none of the known formulas fits."""
    both = [(float(raw), float(score)) for raw, score in pairs if raw is not None and score is not None
            and math.isfinite(raw) and math.isfinite(score)]
    if not both:
        return None
    if all(abs(raw - score) <= TOLERANCE for raw, score in both):
        return AS_SENT
    for name, (convert, _) in FORMULAS.items():
        # max(0, ...) too: a store may clip a conversion at 0 (Mem0's backends).
        if all(abs(convert(raw) - score) <= TOLERANCE or (convert(raw) < 0 and abs(score) <= TOLERANCE)
               for raw, score in both):
            return name
    return None


def describe(store: str, how: str | None) -> str:
    """One space in words: "chroma, score = 1 - d/2 of the raw distance d"."""
    if how is None:
        return f"{store}, score converted from the raw value by a formula memlens cannot tell"
    if how == AS_SENT:
        return f"{store}, score {AS_SENT}"
    return f"{store}, score = {how} of the raw distance d"


def raw_floor_rule(how: str | None, floor: float) -> str | None:
    """How to apply `floor` to the raw value, in one line (None when the score is the raw value)."""
    if how is None or how == AS_SENT:
        return None
    _, rule = FORMULAS[how]
    bound = {"1 - d": 1 - floor, "1 - d/2": 2 * (1 - floor), "-d": -floor}.get(how)
    if how == "1 - d²/2":
        bound = math.sqrt(max(0.0, 2 * (1 - floor)))
    return f"score = {how} (d the store's raw value): to apply the floor {floor:g} to d, {rule}, i.e. d <= {bound:.4g}"
