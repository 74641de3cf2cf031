"""Score spaces: which store a score came from and the rule that made it from the
store's raw value. The one table of those rules: each connector converts with it, and
the agent-side API (dashboard/runtime.py) converts a team's own raw hits with it, so a
floor applies in the space it was calibrated in.

A floor calibrated on Chroma's ``1 - d/2`` scores means nothing against Chroma's raw
squared distance (lower is better), nor against the embedded store's weighted score:
a floor belongs to one space, and applying it in another is refused.

The value itself (ScoreSpace, AS_SENT) is defined in connectors/base.py, since every
QueryResult carries one, and is imported from here by everything else.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from connectors.base import (
    AS_SENT,
    COMPARABLE_KINDS,
    COSINE_DISTANCE,
    L2,
    MANHATTAN,
    NEGATIVE_INNER_PRODUCT,
    SQUARED_L2,
    InvalidRequest,
    ScoreSpace,
    score_from_distance,
)

# store kind -> the store's distance setting -> the rule that turns its raw value into a score
DISTANCE_RULES: dict[str, dict[str, str]] = {
    "chroma": {"l2": SQUARED_L2, "cosine": COSINE_DISTANCE, "ip": COSINE_DISTANCE},
    "pgvector": {"<=>": COSINE_DISTANCE, "<->": L2, "<#>": NEGATIVE_INNER_PRODUCT},
    "lancedb": {"l2": SQUARED_L2, "cosine": COSINE_DISTANCE, "dot": COSINE_DISTANCE},
    "qdrant": {"cosine": AS_SENT, "dot": AS_SENT, "euclid": L2, "manhattan": MANHATTAN},
    "http_json": {"similarity": AS_SENT, "cosine_distance": COSINE_DISTANCE},
}
# The setting a store uses when none is named: Chroma's collections are l2 unless
# created otherwise, LanceDB searches by l2, an HTTP service sends similarities.
DEFAULT_SETTING = {"chroma": "l2", "lancedb": "l2", "http_json": "similarity"}
# Stores whose score is a similarity (or a weighted sum of them) sent as is.
SIMILARITY_STORES = ("embedded", "memorysync", "mem0", "mem0_platform", "langgraph")


def space_for(store: str, setting: str | None = None) -> ScoreSpace:
    """The score space of a store kind with its distance setting (Chroma's ``space``,
    pgvector's operator, LanceDB's distance type, Qdrant's distance, an HTTP service's
    ``score_kind``). Raises InvalidRequest naming what is accepted."""
    kind = (store or "").strip().lower()
    if kind in SIMILARITY_STORES:
        if setting:
            raise InvalidRequest(f"store {kind!r} sends a similarity: it has no distance setting (got {setting!r})")
        return ScoreSpace(kind, AS_SENT)
    rules = DISTANCE_RULES.get(kind)
    if rules is None:
        known = ", ".join(sorted([*SIMILARITY_STORES, *DISTANCE_RULES]))
        raise InvalidRequest(f"unknown store kind {store!r}: one of {known}")
    chosen = setting if setting is not None else DEFAULT_SETTING.get(kind)
    if chosen is None:
        raise InvalidRequest(f"store {kind!r}: name its distance setting, one of {', '.join(rules)}")
    if chosen not in rules:
        raise InvalidRequest(f"store {kind!r}: unknown distance setting {chosen!r}, one of {', '.join(rules)}")
    return ScoreSpace(kind, rules[chosen], chosen)


@runtime_checkable
class HasScoreSpace(Protocol):
    """A store whose score space depends on how it was built (a distance setting)."""

    @property
    def score_space(self) -> ScoreSpace: ...


# Whether a store class has the capability, asked once per class: isinstance against a
# runtime-checkable Protocol walks the Protocol's members on every call, and the agent
# side asks on every turn. Every store declares score_space on its class (a property).
_HAS_SPACE: dict[type, bool] = {}


def store_space(store: Any) -> ScoreSpace | None:
    """The score space of an open store; None when its scores are ranks or absent
    (no floor applies to them)."""
    if store.score_kind not in COMPARABLE_KINDS:
        return None
    has_space = _HAS_SPACE.get(type(store))
    if has_space is None:
        has_space = _HAS_SPACE[type(store)] = isinstance(store, HasScoreSpace)
    if has_space:
        return store.score_space
    return ScoreSpace(str(store.name), AS_SENT)


def raw_floor_rule(how: str | None, floor: float) -> str | None:
    """How to apply `floor` to the raw value d under the rule `how`, in one line (None
    when the score is the raw value), for a team that applies the floor in its own code."""
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


# ---------------------------------------------------------------- runs saved without their space
# A run saved before memlens recorded its score space still carries each hit's raw value
# beside its score; the rule that links the two says which space it was. Only such old
# runs are read this way: a result carries its space (QueryResult.score_space).

TOLERANCE = 1e-6
RULES = (COSINE_DISTANCE, SQUARED_L2, L2, NEGATIVE_INNER_PRODUCT, MANHATTAN)


def formula_of_pairs(pairs: Iterable[tuple[float | None, float | None]]) -> str | None:
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


def describe_formula(store: str, how: str | None) -> str:
    """One space in words, as ScoreSpace.describe says it; `how` None is a rule memlens cannot tell."""
    if how is None:
        return f"{store}: a score converted from the raw value by a rule memlens cannot tell"
    return ScoreSpace(store, how).describe()
