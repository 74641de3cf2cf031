"""Two stores, or two configurations of one store, on the same query. Pure.

Each side is a ``QueryResult`` with its own floor. ``compare`` lines the two up
memory by memory and says, for each, its rank and score on either side and
whether that side keeps it (at or above its floor), drops it, or never returned
it. Memories are matched by id (two configurations of one store) or by their
normalised text (two different stores, whose ids differ).

A side whose scores are ranks (``ScoreKind.RANK`` / ``NONE``) has no floor: it
keeps everything it returned, and the comparison says so in ``notes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from connectors.base import Hit, QueryResult
from dashboard.browse import normalise_text
from dashboard.floor import apply_floor

MATCH_BY = ("id", "text")
KEPT, DROPPED, ABSENT = "kept", "dropped", "not returned"


@dataclass
class SideHit:
    rank: int
    score: float | None
    raw_score: float | None
    status: str  # kept | dropped


@dataclass
class CompareRow:
    key: str  # the memory id, or the normalised text when matching by text
    memory_ids: tuple[str | None, str | None]  # each side's own id
    text: str
    a: SideHit | None
    b: SideHit | None

    def status(self, side: str) -> str:
        hit = self.a if side == "a" else self.b
        return hit.status if hit else ABSENT

    @property
    def rank_change(self) -> int | None:
        """B's rank minus A's (negative: B ranks it higher); None unless both returned it."""
        return self.b.rank - self.a.rank if self.a and self.b else None

    @property
    def verdict(self) -> str:
        a_kept, b_kept = self.status("a") == KEPT, self.status("b") == KEPT
        if a_kept and b_kept:
            return "kept by both"
        if a_kept:
            return "kept by A only"
        if b_kept:
            return "kept by B only"
        return "kept by neither"


@dataclass
class StoreComparison:
    rows: list[CompareRow]  # A's order first, then what only B returned, in B's order
    match_by: str
    notes: list[str] = field(default_factory=list)

    def keys(self, verdict: str) -> list[str]:
        return [row.key for row in self.rows if row.verdict == verdict]

    @property
    def returned_by_both(self) -> int:
        return sum(1 for row in self.rows if row.a and row.b)

    @property
    def kept_by_both(self) -> int:
        return len(self.keys("kept by both"))

    @property
    def kept_only_a(self) -> list[CompareRow]:
        return [row for row in self.rows if row.verdict == "kept by A only"]

    @property
    def kept_only_b(self) -> list[CompareRow]:
        return [row for row in self.rows if row.verdict == "kept by B only"]

    @property
    def overlap(self) -> float:
        """Share of the memories either side returned that both returned (Jaccard)."""
        return self.returned_by_both / len(self.rows) if self.rows else 1.0


def _side(result: QueryResult, floor: float, label: str, match_by: str, notes: list[str]) -> dict[str, tuple[Hit, SideHit]]:
    if result.score_kind.comparable_to_floor:
        kept, _ = apply_floor(result.hits, floor)
        kept_ids = {id(h) for h in kept}
    else:
        kept_ids = {id(h) for h in result.hits}
        notes.append(
            f"{label}'s scores are {result.score_kind.value}s, not similarities: no floor applies, "
            "so it keeps everything it returned."
        )
    by_key: dict[str, tuple[Hit, SideHit]] = {}
    duplicates = 0
    for hit in result.hits:
        key = hit.memory_id if match_by == "id" else normalise_text(hit.text)
        if key in by_key:
            duplicates += 1  # the same memory twice (by text): the better-ranked one stands
            continue
        status = KEPT if id(hit) in kept_ids else DROPPED
        by_key[key] = (hit, SideHit(hit.rank, hit.score, hit.raw_score, status))
    if duplicates:
        notes.append(f"{label} returned {duplicates} memory(ies) twice by {match_by}; the better-ranked copy is compared.")
    return by_key


def compare(a: QueryResult, floor_a: float, b: QueryResult, floor_b: float, *, match_by: str = "id") -> StoreComparison:
    """Line up two results; see the module docstring."""
    if match_by not in MATCH_BY:
        raise ValueError(f"match_by must be one of {', '.join(MATCH_BY)}, got {match_by!r}")
    notes: list[str] = []
    side_a = _side(a, floor_a, "A", match_by, notes)
    side_b = _side(b, floor_b, "B", match_by, notes)
    rows = []
    for key in [*side_a, *(k for k in side_b if k not in side_a)]:
        hit_a, rank_a = side_a.get(key, (None, None))
        hit_b, rank_b = side_b.get(key, (None, None))
        shown = hit_a or hit_b
        assert shown is not None  # every key comes from one side's hits at least
        rows.append(
            CompareRow(
                key=key,
                memory_ids=(hit_a.memory_id if hit_a else None, hit_b.memory_id if hit_b else None),
                text=shown.text,
                a=rank_a,
                b=rank_b,
            )
        )
    if a.raw_score_kind != b.raw_score_kind and (a.raw_score_kind or b.raw_score_kind):
        notes.append(
            "The two sides' raw scores are of different kinds "
            f"(A: {a.raw_score_kind or 'a similarity'}, B: {b.raw_score_kind or 'a similarity'}); "
            "compare the normalised scores, and give each side the floor calibrated for it."
        )
    if a.hits and b.hits and not any(row.a and row.b for row in rows) and match_by == "id":
        notes.append("No memory id appears on both sides: if these are two different stores, match by text.")
    return StoreComparison(rows=rows, match_by=match_by, notes=notes)
