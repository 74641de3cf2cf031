"""Score spaces: which store a score came from and the rule that made it from the
store's raw value. The one table of those rules: each connector converts with it, and
the agent-side API (dashboard/runtime.py) converts a team's own raw hits with it, so a
floor applies in the space it was calibrated in.

A floor calibrated on Chroma's ``1 - d/2`` scores means nothing against Chroma's raw
squared distance (lower is better), nor against the embedded store's weighted score:
a floor belongs to one space, and applying it in another is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from connectors.base import (
    COSINE_DISTANCE,
    L2,
    MANHATTAN,
    NEGATIVE_INNER_PRODUCT,
    SQUARED_L2,
    InvalidRequest,
    ScoreKind,
    score_from_distance,
)

AS_SENT = "as sent"  # the store's own score, higher is better, kept as it came

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


@dataclass(frozen=True)
class ScoreSpace:
    """A store kind and the rule that made memlens's score from the store's raw value."""

    store: str  # the store kind, as the registry names it: "chroma", "pgvector", ...
    formula: str  # AS_SENT, or a distance rule: "1 - d", "1 - d/2", "1 - d²/2", "-d", "1/(1+d)"
    setting: str | None = None  # the store's distance setting the rule follows from ("l2", "<->")

    def describe(self) -> str:
        """``chroma (l2): score = 1 - d/2 of the raw distance`` / ``embedded: the store's score as sent``."""
        name = f"{self.store} ({self.setting})" if self.setting else self.store
        if self.formula == AS_SENT:
            return f"{name}: the store's score as sent"
        return f"{name}: score = {self.formula} of the raw distance d"

    def as_dict(self) -> dict[str, Any]:
        return {"store": self.store, "formula": self.formula, "setting": self.setting}

    def convert(self, raw: float | None) -> float | None:
        """memlens's score for the store's raw value `raw`, by this space's rule."""
        if raw is None or self.formula == AS_SENT:
            return raw
        return score_from_distance(self.formula, raw)


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
    if not ScoreKind(store.score_kind).comparable_to_floor:
        return None
    has_space = _HAS_SPACE.get(type(store))
    if has_space is None:
        has_space = _HAS_SPACE[type(store)] = isinstance(store, HasScoreSpace)
    if has_space:
        return store.score_space
    return ScoreSpace(str(store.name), AS_SENT)
