"""What-if re-ranking by relevance and recency (DOMAIN.md §4), computed, not asked of a model.

For each hit the store returned:

    relevance  the store's semantic component when it sends one (under any name in
               SEMANTIC_COMPONENTS), else its score, clamped to [0, 1] (which one
               was used is reported)
    recency    exp(-decay_per_hour * hours_since_created)   (decay = ln 2 / half-life)
    composite  relevance_weight * relevance + recency_weight * recency, weights summing to 1

A hit whose relevance is under the threshold is ``excluded`` and one older than the
staleness cutoff is ``stale``; either way its composite is 0 and it sinks below every
returned hit. The result serialises to the §4 JSON shape, and ``validate_ranking``
checks any JSON of that shape (ours, or one pasted from an LLM ranker) and names
every violation. Pure functions: no Streamlit, no store calls.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeGuard

from connectors.base import Hit

DEFAULT_RELEVANCE_WEIGHT = 0.7
DEFAULT_RECENCY_WEIGHT = 0.3
DEFAULT_HALF_LIFE_HOURS = 72.0
DEFAULT_RELEVANCE_THRESHOLD = 0.3
DEFAULT_STALENESS_HOURS = 168.0  # what the page offers when the cutoff is switched on
# A pasted ranking usually carries two or three decimals: a composite rounded that far
# is still "the weighted sum".
COMPOSITE_TOLERANCE = 0.005
WEIGHT_SUM_TOLERANCE = 1e-6
REVIEW_MIN_TOP_COMPOSITE = 0.4
REVIEW_NEAR_TIE = 0.05
JSON_DECIMALS = 6
# The semantic component under the names stores give it in Hit.breakdown (which keeps
# the store's own words), first match wins: `semantic` (embedded store, MemorySync,
# Mem0 Platform's score_breakdown), `semantic_score` (Mem0 library's score_details),
# `vector` (MemorySync's raw cosine in scoring_breakdown).
SEMANTIC_COMPONENTS = ("semantic", "semantic_score", "vector")

ENTRY_FIELDS = (
    "entry_id",
    "relevance_score",
    "recency_score",
    "composite_score",
    "justification",
    "excluded",
    "stale",
)
TOP_FIELDS = ("query", "ranked_results", "retrieval_metadata")
METADATA_FIELDS = ("total_candidates", "returned_count", "excluded_count", "stale_count")
SCORE_FIELDS = ("relevance_score", "recency_score", "composite_score")


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
            if not _is_number(value) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        total = self.relevance_weight + self.recency_weight
        if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
            raise ValueError(
                f"relevance_weight + recency_weight must be 1, got "
                f"{self.relevance_weight:g} + {self.recency_weight:g} = {total:g}"
            )
        if not _is_number(self.decay_per_hour) or self.decay_per_hour < 0:
            raise ValueError(f"decay_per_hour must be a number >= 0, got {self.decay_per_hour!r}")
        cutoff = self.staleness_cutoff_hours
        if cutoff is not None and (not _is_number(cutoff) or cutoff <= 0):
            raise ValueError(f"staleness_cutoff_hours must be a number above 0 or None, got {cutoff!r}")

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
        """The DOMAIN.md §4 shape, nothing more. `query` replaces the query text
        (the page passes a message id unless the user opted in to text)."""
        return {
            "query": self.query if query is None else query,
            "ranked_results": [e.json_row() for e in self.entries],
            "retrieval_metadata": self.metadata(),
        }


# ------------------------------------------------------------------ computing


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _clamp01(value: float) -> float:
    return min(1.0, max(0.0, value))


def relevance_of(hit: Hit) -> tuple[float | None, str]:
    """(relevance in [0, 1], where it came from). The semantic component says how
    well the memory matches the words; the blended score also carries recency and
    importance, which this ranking weighs on its own terms (Mem0's adds keyword and
    entity boosts and divides by their maximum: with BM25 on, a hit that matches no
    keyword scores half its similarity)."""
    for name in SEMANTIC_COMPONENTS:
        semantic = hit.breakdown.get(name) if hit.breakdown else None
        if _is_number(semantic):
            return _clamp01(float(semantic)), "semantic"
    if _is_number(hit.score):
        return _clamp01(float(hit.score)), "score"
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


# ------------------------------------------------------------------ review flags


def review_flags(
    payload: dict[str, Any],
    *,
    min_top_composite: float = REVIEW_MIN_TOP_COMPOSITE,
    near_tie: float = REVIEW_NEAR_TIE,
) -> list[str]:
    """Reasons a human should look at this ranking: a weak top result, or returned
    entries so close together that their order is a coin toss. Works on any §4
    JSON (malformed entries are skipped; the validator reports them)."""
    rows = [
        r
        for r in payload.get("ranked_results", []) or []
        if isinstance(r, dict) and _is_number(r.get("composite_score")) and isinstance(r.get("entry_id"), str)
    ]
    if not rows:
        return ["There are no ranked results to review."]
    flags = []
    top = max(float(r["composite_score"]) for r in rows)
    if top < min_top_composite:
        flags.append(
            f"The top composite is {top:.2f}, under {min_top_composite:.2f}: no candidate is a convincing match."
        )
    returned = sorted(
        (r for r in rows if not r.get("excluded") and not r.get("stale")),
        key=lambda r: -float(r["composite_score"]),
    )
    start = 0
    while start < len(returned):
        head = float(returned[start]["composite_score"])
        end = start + 1
        # 1e-9: 0.65 - 0.60 is 0.05000000000000004 in floating point.
        while end < len(returned) and head - float(returned[end]["composite_score"]) <= near_tie + 1e-9:
            end += 1
        if end - start >= 2:
            group = returned[start:end]
            ids = ", ".join(r["entry_id"] for r in group)
            low = float(group[-1]["composite_score"])
            flags.append(
                f"{len(group)} entries lie within {near_tie:.2f} of each other "
                f"({head:.2f} to {low:.2f}: {ids}); their order is close to a tie."
            )
        start = end
    return flags


# ------------------------------------------------------------------ validation


@dataclass(frozen=True)
class Violation:
    where: str  # a JSON path, e.g. "ranked_results[2].composite_score"
    rule: str  # shape | weights | unknown_id | duplicate_id | out_of_range | composite | dropped_not_zero | order | metadata
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def parse_ranking_json(text: str) -> tuple[Any, str | None]:
    """(decoded JSON, None) or (None, an error naming line and column). A Markdown
    code fence around the JSON, as chat models often add, is ignored."""
    body = text.strip()
    if body.startswith("```"):
        lines = body.splitlines()
        lines = lines[1:]
        if lines and lines[-1].strip().startswith("```"):
            lines = lines[:-1]
        body = "\n".join(lines)
    if not body:
        return None, "The pasted text is empty."
    try:
        return json.loads(body), None
    except json.JSONDecodeError as exc:
        return None, f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."


def validate_ranking(
    payload: Any,
    candidate_ids: Iterable[str],
    *,
    relevance_weight: float,
    recency_weight: float,
    tolerance: float = COMPOSITE_TOLERANCE,
) -> list[Violation]:
    """Every way `payload` breaks the §4 rules; an empty list means it passes.

    Rules: the weights are in [0, 1] and sum to 1; the shape has exactly the §4
    fields; every entry_id is one of the candidates, once; scores lie in [0, 1];
    a returned entry's composite is the weighted sum (within `tolerance`); an
    excluded or stale entry's composite is 0; entries are in descending composite
    order; the metadata counts match the entries and the candidates."""
    candidates = list(candidate_ids)
    known = set(candidates)
    found: list[Violation] = []

    def violation(where: str, rule: str, message: str) -> None:
        found.append(Violation(where, rule, message))

    weights_ok = True
    for name, value in (("relevance_weight", relevance_weight), ("recency_weight", recency_weight)):
        if not _is_number(value) or not 0.0 <= value <= 1.0:
            violation(f"weights.{name}", "weights", f"must be a number in [0, 1], got {value!r}")
            weights_ok = False
    if weights_ok and abs(relevance_weight + recency_weight - 1.0) > WEIGHT_SUM_TOLERANCE:
        weights_ok = False  # every composite would then be judged against a wrong sum
        violation(
            "weights",
            "weights",
            f"relevance weight {relevance_weight:g} + recency weight {recency_weight:g} = "
            f"{relevance_weight + recency_weight:g}, not 1",
        )

    if not isinstance(payload, dict):
        violation("(top level)", "shape", f"expected a JSON object with {', '.join(TOP_FIELDS)}")
        return found
    for name in TOP_FIELDS:
        if name not in payload:
            violation(name, "shape", "required field is missing")
    for name in payload:
        if name not in TOP_FIELDS:
            violation(str(name), "shape", "unexpected field (the §4 shape has query, ranked_results, retrieval_metadata)")
    if "query" in payload and not isinstance(payload["query"], str):
        violation("query", "shape", "must be a string")

    results = payload.get("ranked_results")
    entries: list[tuple[int, dict[str, Any]]] = []
    if "ranked_results" in payload and not isinstance(results, list):
        violation("ranked_results", "shape", "must be a list")
    elif isinstance(results, list):
        for index, entry in enumerate(results):
            where = f"ranked_results[{index}]"
            if not isinstance(entry, dict):
                violation(where, "shape", "must be an object")
                continue
            entries.append((index, entry))
            _check_entry(entry, where, known, violation)

    seen: dict[str, int] = {}
    for index, entry in entries:
        entry_id = entry.get("entry_id")
        if isinstance(entry_id, str):
            if entry_id in seen:
                violation(
                    f"ranked_results[{index}].entry_id",
                    "duplicate_id",
                    f"{entry_id!r} already listed at ranked_results[{seen[entry_id]}]",
                )
            else:
                seen[entry_id] = index

    if weights_ok:
        for index, entry in entries:
            _check_composite(entry, f"ranked_results[{index}]", relevance_weight, recency_weight, tolerance, violation)

    previous: tuple[int, float] | None = None
    for index, entry in entries:
        composite = entry.get("composite_score")
        if not _is_number(composite):
            continue
        if previous is not None and composite > previous[1] + 1e-12:
            violation(
                f"ranked_results[{index}].composite_score",
                "order",
                f"{composite:g} is above the {previous[1]:g} of ranked_results[{previous[0]}]: "
                "results must be in descending composite order",
            )
        previous = (index, float(composite))

    _check_metadata(payload.get("retrieval_metadata"), "retrieval_metadata" in payload, entries, candidates, violation)
    return found


def _check_entry(entry: dict[str, Any], where: str, known: set[str], violation) -> None:
    for name in ENTRY_FIELDS:
        if name not in entry:
            violation(f"{where}.{name}", "shape", "required field is missing")
    for name in entry:
        if name not in ENTRY_FIELDS:
            violation(f"{where}.{name}", "shape", "unexpected field")
    entry_id = entry.get("entry_id")
    if "entry_id" in entry:
        if not isinstance(entry_id, str):
            violation(f"{where}.entry_id", "shape", f"must be a string, got {entry_id!r}")
        elif entry_id not in known:
            violation(f"{where}.entry_id", "unknown_id", f"{entry_id!r} is not among the candidates")
    for name in SCORE_FIELDS:
        if name not in entry:
            continue
        value = entry[name]
        if not _is_number(value):
            violation(f"{where}.{name}", "shape", f"must be a number, got {value!r}")
        elif not 0.0 <= value <= 1.0:
            violation(f"{where}.{name}", "out_of_range", f"{value:g} is outside [0, 1]")
    for name in ("excluded", "stale"):
        if name in entry and not isinstance(entry[name], bool):
            violation(f"{where}.{name}", "shape", f"must be true or false, got {entry[name]!r}")
    if "justification" in entry and (not isinstance(entry["justification"], str) or not entry["justification"].strip()):
        violation(f"{where}.justification", "shape", "must be a non-empty string")


def _check_composite(entry, where, relevance_weight, recency_weight, tolerance, violation) -> None:
    composite = entry.get("composite_score")
    if not _is_number(composite):
        return
    dropped = [name for name in ("excluded", "stale") if entry.get(name) is True]
    if dropped:
        if composite != 0:
            violation(
                f"{where}.composite_score",
                "dropped_not_zero",
                f"{composite:g}, but an entry marked {' and '.join(dropped)} must have composite 0",
            )
        return
    relevance, recency = entry.get("relevance_score"), entry.get("recency_score")
    if not (_is_number(relevance) and _is_number(recency)):
        return
    expected = relevance_weight * relevance + recency_weight * recency
    if abs(composite - expected) > tolerance:
        violation(
            f"{where}.composite_score",
            "composite",
            f"{composite:g} is not {relevance_weight:g} × {relevance:g} + {recency_weight:g} × {recency:g} "
            f"= {expected:.4f}",
        )


def _check_metadata(metadata, present: bool, entries, candidates: list[str], violation) -> None:
    if not present:
        return
    if not isinstance(metadata, dict):
        violation("retrieval_metadata", "shape", f"must be an object with {', '.join(METADATA_FIELDS)}")
        return
    for name in metadata:
        if name not in METADATA_FIELDS:
            violation(f"retrieval_metadata.{name}", "shape", "unexpected field")
    rows = [e for _, e in entries]
    expected = {
        "total_candidates": (len(candidates), "the number of candidates"),
        "returned_count": (
            sum(1 for e in rows if e.get("excluded") is not True and e.get("stale") is not True),
            "the entries neither excluded nor stale",
        ),
        "excluded_count": (sum(1 for e in rows if e.get("excluded") is True), "the entries marked excluded"),
        "stale_count": (sum(1 for e in rows if e.get("stale") is True), "the entries marked stale"),
    }
    for name, (count, what) in expected.items():
        where = f"retrieval_metadata.{name}"
        if name not in metadata:
            violation(where, "shape", "required field is missing")
            continue
        value = metadata[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            violation(where, "shape", f"must be a whole number >= 0, got {value!r}")
        elif value != count:
            violation(where, "metadata", f"says {value}, but {what} number {count}")


# ------------------------------------------------------------------ comparing two rankings


@dataclass(frozen=True)
class ComparisonRow:
    entry_id: str
    ours_rank: int | None
    theirs_rank: int | None
    ours_composite: float | None
    theirs_composite: float | None
    ours_status: str
    theirs_status: str

    @property
    def composite_difference(self) -> float | None:
        if self.ours_composite is None or self.theirs_composite is None:
            return None
        return self.theirs_composite - self.ours_composite


@dataclass(frozen=True)
class Comparison:
    rows: list[ComparisonRow]
    same_order: bool  # the ids both list come in the same order
    same_top: bool
    status_disagreements: int  # entries one side returns and the other drops
    max_composite_difference: float | None
    only_ours: list[str] = field(default_factory=list)
    only_theirs: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = ["same order" if self.same_order else "a different order"]
        parts.append("the same top entry" if self.same_top else "a different top entry")
        parts.append(f"{self.status_disagreements} returned/dropped disagreement(s)")
        if self.max_composite_difference is not None:
            parts.append(f"largest composite difference {self.max_composite_difference:.3f}")
        if self.only_theirs:
            parts.append(f"{len(self.only_theirs)} id(s) only in the pasted ranking")
        if self.only_ours:
            parts.append(f"{len(self.only_ours)} id(s) missing from the pasted ranking")
        return "; ".join(parts) + "."


def _status(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "absent"
    flags = [name for name in ("excluded", "stale") if entry.get(name) is True]
    return " + ".join(flags) if flags else "returned"


def _well_formed(payload: Any) -> list[dict[str, Any]]:
    results = payload.get("ranked_results") if isinstance(payload, dict) else None
    if not isinstance(results, list):
        return []
    return [r for r in results if isinstance(r, dict) and isinstance(r.get("entry_id"), str)]


def compare_rankings(ours: dict[str, Any], theirs: Any) -> Comparison:
    """Line up two §4 rankings by entry id: ranks, composites, returned or dropped."""
    our_rows, their_rows = _well_formed(ours), _well_formed(theirs)
    our_by_id = _first_by_id(our_rows)
    their_by_id = _first_by_id(their_rows)
    order = list(our_by_id) + [i for i in their_by_id if i not in our_by_id]
    rows = []
    for entry_id in order:
        ours_rank, our_entry = our_by_id.get(entry_id, (None, None))
        theirs_rank, their_entry = their_by_id.get(entry_id, (None, None))
        rows.append(
            ComparisonRow(
                entry_id=entry_id,
                ours_rank=ours_rank,
                theirs_rank=theirs_rank,
                ours_composite=_number_or_none(our_entry, "composite_score"),
                theirs_composite=_number_or_none(their_entry, "composite_score"),
                ours_status=_status(our_entry),
                theirs_status=_status(their_entry),
            )
        )
    common = [i for i in our_by_id if i in their_by_id]
    same_order = common == sorted(common, key=lambda i: their_by_id[i][0])
    same_top = bool(our_rows and their_rows and our_rows[0]["entry_id"] == their_rows[0]["entry_id"])
    differences = [abs(r.composite_difference) for r in rows if r.composite_difference is not None]
    disagreements = sum(
        1
        for r in rows
        if r.ours_rank is not None
        and r.theirs_rank is not None
        and (r.ours_status == "returned") != (r.theirs_status == "returned")
    )
    return Comparison(
        rows=rows,
        same_order=same_order,
        same_top=same_top,
        status_disagreements=disagreements,
        max_composite_difference=max(differences) if differences else None,
        only_ours=[i for i in our_by_id if i not in their_by_id],
        only_theirs=[i for i in their_by_id if i not in our_by_id],
    )


def _first_by_id(rows: list[dict[str, Any]]) -> dict[str, tuple[int, dict[str, Any]]]:
    """entry id -> (1-based position, entry), in order; a repeated id keeps its first place."""
    found: dict[str, tuple[int, dict[str, Any]]] = {}
    for position, row in enumerate(rows, start=1):
        found.setdefault(row["entry_id"], (position, row))
    return found


def _number_or_none(entry: dict[str, Any] | None, name: str) -> float | None:
    if entry is None:
        return None
    value = entry.get(name)
    return float(value) if _is_number(value) else None
