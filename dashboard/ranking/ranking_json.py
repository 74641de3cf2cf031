"""The ranking JSON shape: parse it, check it, compare two of it. Pure.

The shape (what ``RerankResult.to_json`` writes, and what an LLM ranker is asked for):

    {"query": ..., "ranked_results": [{entry_id, relevance_score, recency_score,
     composite_score, justification, excluded, stale}, ...],
     "retrieval_metadata": {total_candidates, returned_count, excluded_count, stale_count}}

``validate_ranking`` checks any JSON of that shape (ours, or one pasted from an LLM
ranker) and names every violation with its JSON path; ``compare_rankings`` lines up
two rankings by entry id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from connectors.base import as_number
from dashboard.ranking.rerank import WEIGHT_SUM_TOLERANCE

# A pasted ranking usually carries two or three decimals: a composite rounded that far
# is still "the weighted sum".
COMPOSITE_TOLERANCE = 0.005

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
    except ValueError as exc:  # a number longer than Python converts (4,300 digits)
        return None, f"Not usable JSON: {exc}."
    except RecursionError:
        return None, "Not usable JSON: nested deeper than memlens reads."


def validate_ranking(
    payload: Any,
    candidate_ids: Iterable[str],
    *,
    relevance_weight: float,
    recency_weight: float,
    tolerance: float = COMPOSITE_TOLERANCE,
) -> list[Violation]:
    """Every way `payload` breaks the ranking rules (docs/domain.md, "Ranking by
    relevance and recency"); an empty list means it passes.

    Rules: the weights are in [0, 1] and sum to 1; the shape has exactly the
    fields above; every entry_id is one of the candidates, once; scores lie in [0, 1];
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
        if as_number(value) is None or not 0.0 <= value <= 1.0:
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
            violation(str(name), "shape", "unexpected field (a ranking has query, ranked_results, retrieval_metadata)")
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
        composite = as_number(entry.get("composite_score"))
        if composite is None:
            continue
        if previous is not None and composite > previous[1] + 1e-12:
            violation(
                f"ranked_results[{index}].composite_score",
                "order",
                f"{composite:g} is above the {previous[1]:g} of ranked_results[{previous[0]}]: "
                "results must be in descending composite order",
            )
        previous = (index, composite)

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
        if as_number(value) is None:
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
    if as_number(composite) is None:
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
    if as_number(relevance) is None or as_number(recency) is None:
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
class RankingComparison:
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


def compare_rankings(ours: dict[str, Any], theirs: Any) -> RankingComparison:
    """Line up two rankings by entry id: ranks, composites, returned or dropped."""
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
    return RankingComparison(
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
    return as_number(entry.get(name))
