"""What-if re-ranking by relevance and recency, computed, not asked of a model
(docs/domain.md, "Ranking by relevance and recency").

For each hit the store returned:

    relevance  the store's semantic component when it sends one (under any name in
               SEMANTIC_COMPONENTS), else its score, clamped to [0, 1] (which one
               was used is reported)
    recency    exp(-decay_per_hour * hours_since_created)   (decay = ln 2 / half-life)
    composite  relevance_weight * relevance + recency_weight * recency, weights summing to 1

A hit whose relevance is under the threshold is ``excluded`` and one older than the
staleness cutoff is ``stale``; either way its composite is 0 and it sinks below every
returned hit. The result serialises to the ranking JSON shape that
``ranking_json.validate_ranking`` checks and ``review.review_flags`` reads. Pure
functions: no Streamlit, no store calls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from connectors.base import Hit, as_number

DEFAULT_RELEVANCE_WEIGHT = 0.7
DEFAULT_RECENCY_WEIGHT = 0.3
DEFAULT_HALF_LIFE_HOURS = 72.0
DEFAULT_RELEVANCE_THRESHOLD = 0.3
DEFAULT_STALENESS_HOURS = 168.0  # what the page offers when the cutoff is switched on
WEIGHT_SUM_TOLERANCE = 1e-6
JSON_DECIMALS = 6
# The semantic component under the names stores give it in Hit.breakdown (which keeps
# the store's own words), first match wins: `semantic` (embedded store, MemorySync,
# Mem0 Platform's score_breakdown), `semantic_score` (Mem0 library's score_details),
# `vector` (MemorySync's raw cosine in scoring_breakdown).
SEMANTIC_COMPONENTS = ("semantic", "semantic_score", "vector")


def decay_from_half_life(half_life_hours: float) -> float:
    """The per-hour decay rate that halves recency every `half_life_hours`."""
    if not half_life_hours or half_life_hours <= 0 or not math.isfinite(half_life_hours):
        raise ValueError(f"half_life_hours must be a number above 0, got {half_life_hours!r}")
    return math.log(2) / half_life_hours


@dataclass(frozen=True)
class RerankSettings:
    relevance_weight: float = DEFAULT_RELEVANCE_WEIGHT
    recency_weight: float = DEFAULT_RECENCY_WEIGHT
    decay_per_hour: float = math.log(2) / DEFAULT_HALF_LIFE_HOURS
    relevance_threshold: float = DEFAULT_RELEVANCE_THRESHOLD
    staleness_cutoff_hours: float | None = None  # None: nothing is stale

    def __post_init__(self) -> None:
        for name in ("relevance_weight", "recency_weight", "relevance_threshold"):
            value = getattr(self, name)
            if as_number(value) is None or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        total = self.relevance_weight + self.recency_weight
        if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
            raise ValueError(
                f"relevance_weight + recency_weight must be 1, got "
                f"{self.relevance_weight:g} + {self.recency_weight:g} = {total:g}"
            )
        if as_number(self.decay_per_hour) is None or self.decay_per_hour < 0:
            raise ValueError(f"decay_per_hour must be a number >= 0, got {self.decay_per_hour!r}")
        stale_after = self.staleness_cutoff_hours
        if stale_after is not None and (as_number(stale_after) is None or stale_after <= 0):
            raise ValueError(f"staleness_cutoff_hours must be a number above 0 or None, got {stale_after!r}")

    @classmethod
    def with_half_life(cls, half_life_hours: float, **settings: Any) -> RerankSettings:
        return cls(decay_per_hour=decay_from_half_life(half_life_hours), **settings)

    @property
    def half_life_hours(self) -> float:
        return math.log(2) / self.decay_per_hour if self.decay_per_hour > 0 else math.inf


@dataclass(frozen=True)
class RankedEntry:
    entry_id: str
    store_rank: int
    new_rank: int
    relevance_score: float
    recency_score: float
    composite_score: float
    excluded: bool
    stale: bool
    age_hours: float | None  # None when the store sent no timestamp
    relevance_source: str  # "semantic" | "score" | "none"
    justification: str

    @property
    def dropped(self) -> bool:
        """Not returned: excluded, stale, or both."""
        return self.excluded or self.stale

    @property
    def move(self) -> int:
        """Places moved up (positive) or down (negative) from the store's order."""
        return self.store_rank - self.new_rank

    def json_row(self) -> dict[str, Any]:
        return {
            "entry_id": self.entry_id,
            "relevance_score": round(self.relevance_score, JSON_DECIMALS),
            "recency_score": round(self.recency_score, JSON_DECIMALS),
            "composite_score": round(self.composite_score, JSON_DECIMALS),
            "justification": self.justification,
            "excluded": self.excluded,
            "stale": self.stale,
        }


@dataclass(frozen=True)
class RerankResult:
    query: str
    settings: RerankSettings
    entries: list[RankedEntry]  # in the new order

    @property
    def total_candidates(self) -> int:
        return len(self.entries)

    @property
    def returned(self) -> list[RankedEntry]:
        return [e for e in self.entries if not e.dropped]

    @property
    def excluded_count(self) -> int:
        return sum(e.excluded for e in self.entries)

    @property
    def stale_count(self) -> int:
        return sum(e.stale for e in self.entries)

    @property
    def relevance_source(self) -> str:
        """"semantic", "score", "none", or "mixed" when hits differ."""
        sources = {e.relevance_source for e in self.entries}
        if not sources:
            return "none"
        return sources.pop() if len(sources) == 1 else "mixed"

    def metadata(self) -> dict[str, int]:
        return {
            "total_candidates": self.total_candidates,
            "returned_count": len(self.returned),
            "excluded_count": self.excluded_count,
            "stale_count": self.stale_count,
        }

    def to_json(self, query: str | None = None) -> dict[str, Any]:
        """The ranking JSON shape, nothing more. `query` replaces the query text
        (the page passes a message id unless the user opted in to text)."""
        return {
            "query": self.query if query is None else query,
            "ranked_results": [e.json_row() for e in self.entries],
            "retrieval_metadata": self.metadata(),
        }


# ------------------------------------------------------------------ computing


def _clamp01(value: float) -> float:
    return min(1.0, max(0.0, value))


def relevance_of(hit: Hit) -> tuple[float | None, str]:
    """(relevance in [0, 1], where it came from). The semantic component says how
    well the memory matches the words; the blended score also carries recency and
    importance, which this ranking weighs on its own terms (Mem0's adds keyword and
    entity boosts and divides by their maximum: with BM25 on, a hit that matches no
    keyword scores half its similarity)."""
    for name in SEMANTIC_COMPONENTS:
        semantic = as_number(hit.breakdown.get(name) if hit.breakdown else None)
        if semantic is not None:
            return _clamp01(semantic), "semantic"
    score = as_number(hit.score)
    if score is not None:
        return _clamp01(score), "score"
    return None, "none"


def age_hours_of(hit: Hit, now: datetime) -> float | None:
    if hit.created_at is None:
        return None
    created = hit.created_at if hit.created_at.tzinfo else hit.created_at.replace(tzinfo=UTC)
    current = now if now.tzinfo else now.replace(tzinfo=UTC)
    # A timestamp from the future (clock skew) counts as brand new, not as negative age.
    return max(0.0, (current - created).total_seconds() / 3600.0)


def describe_age(hours: float) -> str:
    if hours < 48:
        return f"{hours:.1f} hours old"
    return f"{hours / 24:.1f} days old"


def justify(
    relevance: float | None,
    recency: float,
    composite: float,
    age_hours: float | None,
    excluded: bool,
    stale: bool,
    settings: RerankSettings,
) -> str:
    """One sentence from the numbers, e.g. "relevance 0.80 over the 0.50 threshold;
    3.2 days old, recency 0.31; composite 0.65"."""
    threshold = settings.relevance_threshold
    if relevance is None:
        relevance_part = "no relevance score from the store, so excluded"
    elif excluded:
        relevance_part = f"relevance {relevance:.2f} under the {threshold:.2f} threshold, so excluded"
    else:
        side = "at" if relevance == threshold else "over"
        relevance_part = f"relevance {relevance:.2f} {side} the {threshold:.2f} threshold"
    if age_hours is None:
        age_part = f"age unknown, recency {recency:.2f}"
    elif stale:
        age_part = (
            f"{describe_age(age_hours)}, past the {settings.staleness_cutoff_hours:g} h staleness cutoff, so stale"
        )
    else:
        age_part = f"{describe_age(age_hours)}, recency {recency:.2f}"
    if excluded or stale:
        return f"{relevance_part}; {age_part}; composite 0"
    return f"{relevance_part}; {age_part}; composite {composite:.2f}"


def rerank(
    hits: Sequence[Hit],
    *,
    now: datetime,
    settings: RerankSettings | None = None,
    query: str = "",
) -> RerankResult:
    """Score every hit and order them: returned hits by composite (ties: higher
    relevance, then the store's own order), then the excluded and stale ones by
    relevance (then the store's order)."""
    settings = settings or RerankSettings()
    scored: list[dict[str, Any]] = []
    for position, hit in enumerate(hits, start=1):
        store_rank = hit.rank if isinstance(hit.rank, int) and hit.rank > 0 else position
        relevance, source = relevance_of(hit)
        age = age_hours_of(hit, now)
        # An unknown age earns no recency credit: it cannot be shown to be fresh.
        recency = 0.0 if age is None else math.exp(-settings.decay_per_hour * age)
        excluded = relevance is None or relevance < settings.relevance_threshold
        stale = age is not None and settings.staleness_cutoff_hours is not None and age > settings.staleness_cutoff_hours
        weighted = settings.relevance_weight * (relevance or 0.0) + settings.recency_weight * recency
        # Weights like 0.7 + 0.30000000000000004 can push a perfect hit a hair over 1.
        composite = 0.0 if excluded or stale else _clamp01(weighted)
        scored.append(
            dict(
                entry_id=hit.memory_id,
                store_rank=store_rank,
                relevance_score=relevance or 0.0,
                recency_score=recency,
                composite_score=composite,
                excluded=excluded,
                stale=stale,
                age_hours=age,
                relevance_source=source,
                justification=justify(relevance, recency, composite, age, excluded, stale, settings),
            )
        )
    scored.sort(
        key=lambda e: (e["excluded"] or e["stale"], -e["composite_score"], -e["relevance_score"], e["store_rank"])
    )
    entries = [RankedEntry(new_rank=i, **e) for i, e in enumerate(scored, start=1)]
    return RerankResult(query=query, settings=settings, entries=entries)
