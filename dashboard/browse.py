"""Is the memory I expected stored at all? Pure functions for the Browse page.

A retrieval that misses is either a ranking problem (the memory is stored but
scores too low for this query, or under the floor) or a storage problem (it was
never stored, or stored in other words: Mem0's ``infer=True`` rewrites and drops
facts). This module answers the storage half from the user's own memories:

- ``scan_memories`` reads every memory of a user through ``MemoryStore.list``,
  page by page, up to a cap (and says when the cap cut it short);
- ``find_text_matches`` finds the expected text among them: exact (case and
  spacing aside), contained in a memory, containing a memory, or similar wording;
- ``nearest_by_embedding`` picks the neighbour signal: the store's own nearest
  memory by embedding (``SupportsNeighbours``: cosine over its stored embeddings),
  or, for a store that does not expose embeddings, the semantic part of the hits
  its own ``query`` returns for the expected text;
- ``stored_verdict`` turns the text matches and that neighbour into one sentence.

How close a neighbour must be (cosine similarity, all-MiniLM-L6-v2, measured on the
demo memories with hand-made rewordings; figures in docs/browse-verdict.md):

- ``SAME_FACT_AT`` 0.60: "stored in other words". 17 of 21 hand-made rewordings of
  a demo memory reach it (median 0.72; "He has a collie called Pixel" vs sam-14
  "Has a pet dog named Pixel, a border collie" is 0.844); no two distinct memories
  of one demo user do (the closest pair is 0.577).
- ``RELATED_AT`` 0.40: under it, and with no text match, "probably never stored".
  Facts about other topics stay at or under 0.26 (a margin of 0.14); 20 of the 21
  rewordings are above it. Between the two the nearest memory is on the same topic
  but may state a different fact (a cat called Pixel vs a dog named Pixel is 0.703,
  piano vs five-a-side football 0.401): the verdict names it and asks the reviewer
  to read it, and claims neither.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

from connectors.base import HistoryEvent, Hit, Memory, Neighbour, QueryResult, ScoreKind

SCAN_PAGE_SIZE = 200
MAX_SCANNED = 5_000
SIMILAR_AT = 0.6  # difflib ratio (or word overlap) from which wording counts as "similar"
MAX_MATCHES = 20
SAME_FACT_AT = 0.60  # cosine from which the nearest memory is taken for the fact in other words
RELATED_AT = 0.40  # cosine under which the nearest memory is about something else
# Breakdown entries that hold the semantic part of a store's score, in the stores'
# own words (embedded and Mem0 Platform: semantic; Mem0 library: semantic_score).
SEMANTIC_PARTS = ("semantic", "semantic_score")
MATCH_ORDER = {"exact": 0, "contains": 1, "contained": 2, "similar": 3}
MATCH_TITLES = {
    "exact": "the same text",
    "contains": "a memory containing the text",
    "contained": "a memory that is part of the text",
    "similar": "similar wording",
}

_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+")


def normalise_text(text: str) -> str:
    """Casefolded, spacing collapsed, outer punctuation trimmed: how two stores that
    wrote the same memory still compare equal."""
    return _SPACES.sub(" ", (text or "").casefold()).strip().strip(".!?;:,").strip()


@dataclass
class Scan:
    memories: list[Memory]
    complete: bool  # False when MAX_SCANNED cut the listing short


def scan_memories(
    list_page: Callable[[int, int], list[Memory]],
    *,
    page_size: int = SCAN_PAGE_SIZE,
    max_memories: int = MAX_SCANNED,
) -> Scan:
    """Every memory `list_page(limit, offset)` yields, up to `max_memories`."""
    memories: list[Memory] = []
    while len(memories) < max_memories:
        want = min(page_size, max_memories - len(memories))
        page = list_page(want, len(memories))
        memories.extend(page)
        if len(page) < want:
            return Scan(memories, complete=True)
    # Exactly at the cap: one more read says whether anything was left out.
    return Scan(memories, complete=not list_page(1, len(memories)))


@dataclass
class TextMatch:
    memory: Memory
    kind: str  # exact | contains | contained | similar
    similarity: float  # difflib ratio of the normalised texts, 0..1

    @property
    def title(self) -> str:
        return MATCH_TITLES[self.kind]


def _word_overlap(a: str, b: str) -> float:
    words_a, words_b = set(_WORD.findall(a)), set(_WORD.findall(b))
    if not words_a or not words_b:
        return 0.0
    return len(words_a & words_b) / len(words_a | words_b)


def find_text_matches(
    memories: list[Memory], expected: str, *, similar_at: float = SIMILAR_AT, limit: int = MAX_MATCHES
) -> list[TextMatch]:
    """Memories whose text matches `expected`, best kind first, then most similar."""
    wanted = normalise_text(expected)
    if not wanted:
        return []
    matches = []
    for memory in memories:
        text = normalise_text(memory.text)
        if not text:
            continue
        ratio = difflib.SequenceMatcher(None, wanted, text).ratio()
        if text == wanted:
            kind = "exact"
        elif wanted in text:
            kind = "contains"
        elif text in wanted:
            kind = "contained"
        elif ratio >= similar_at or _word_overlap(wanted, text) >= similar_at:
            kind = "similar"
        else:
            continue
        matches.append(TextMatch(memory, kind, ratio))
    matches.sort(key=lambda m: (MATCH_ORDER[m.kind], -m.similarity, m.memory.memory_id))
    return matches[:limit]


@dataclass(frozen=True)
class Nearest:
    """The store's nearest memory to the expected text, by embedding."""

    memory_id: str
    text: str
    similarity: float  # cosine similarity (or the store's semantic part of its score)
    source: str  # how it was found, as the verdict says it


FROM_EMBEDDINGS = "cosine similarity of the store's embeddings"
FROM_SEMANTIC_PART = "semantic part of the store's score"
FROM_SCORE = "the store's similarity score"


def nearest_by_embedding(
    neighbours: list[Neighbour] | None, result: QueryResult | None, *, per_result_set: bool = False
) -> Nearest | None:
    """The neighbour signal, None when the store gives none that says how similar.

    `neighbours` (a store with SupportsNeighbours) wins: its first entry is the
    nearest by cosine. Otherwise the store's own query for the expected text: the
    hit with the highest semantic part (SEMANTIC_PARTS in its breakdown), or, when
    the hits carry none, the highest score if that score is a similarity (vector
    stores: the cosine). A store that normalises its components per result set
    (`per_result_set`) gives a value that says nothing about similarity: None."""
    if neighbours:
        top = neighbours[0]
        return Nearest(top.memory_id, top.text, top.similarity, FROM_EMBEDDINGS)
    if result is None or not result.hits or per_result_set:
        return None
    parts = [(h, value) for h in result.hits if (value := _semantic_part(h)) is not None]
    if parts:
        source = FROM_SEMANTIC_PART
    elif result.score_kind in (ScoreKind.SIMILARITY, ScoreKind.DISTANCE):
        parts, source = [(h, h.score) for h in result.hits if h.score is not None], FROM_SCORE
    if not parts:
        return None
    hit, value = max(parts, key=lambda pair: (pair[1], -pair[0].rank))
    return Nearest(hit.memory_id, hit.text, float(value), source)


def _semantic_part(hit: Hit) -> float | None:
    return next((hit.breakdown[name] for name in SEMANTIC_PARTS if name in hit.breakdown), None)


@dataclass
class StoredVerdict:
    status: str  # stored | reworded | related | not_found
    message: str


def stored_verdict(
    expected: str,
    matches: list[TextMatch],
    nearest: list[Hit],
    *,
    scanned: int,
    complete: bool,
    user_id: str | None,
    neighbour: Nearest | None = None,
    same_fact_at: float = SAME_FACT_AT,
    related_at: float = RELATED_AT,
) -> StoredVerdict:
    """One sentence a reviewer can act on: ranking problem or storage problem.

    `nearest` are the store's own hits for the expected text (where a stored copy
    ranks); `neighbour` the nearest memory by embedding (``nearest_by_embedding``).
    "Never stored" is said only when neither the text nor the neighbour comes close."""
    whose = f"the {scanned:,} memories of {user_id}" if user_id else f"{scanned:,} memories"
    if not complete:
        whose = f"the first {scanned:,} memories (the listing was cut there)" + (f" of {user_id}" if user_id else "")
    exact = [m for m in matches if m.kind == "exact"]
    if exact:
        ids = ", ".join(m.memory.memory_id for m in exact)
        own = next((h for h in nearest if h.memory_id in {m.memory.memory_id for m in exact}), None)
        if own is None:
            rank = " Searching its own text does not return it among the nearest: check the embedding model."
        elif own.score is None:
            rank = f" Searching its own text ranks it #{own.rank}."
        else:
            rank = f" Searching its own text ranks it #{own.rank} with score {own.score:.3f}."
        return StoredVerdict(
            "stored",
            f"Stored as written ({ids}). A miss is a ranking problem: its score for that query, or the floor."
            + rank,
        )
    if matches:
        best = matches[0]
        return StoredVerdict(
            "reworded",
            f"Not stored as written, but {best.title} is ({best.memory.memory_id}: "
            f"\u201c{best.memory.text[:120]}\u201d). The store may have rewritten or merged it "
            "(Mem0 infer=True does); query with words closer to what was stored.",
        )
    if neighbour is not None:
        named = f"{neighbour.memory_id} (\u201c{neighbour.text[:120]}\u201d, {neighbour.source} {neighbour.similarity:.3f})"
        if neighbour.similarity >= same_fact_at:
            return StoredVerdict(
                "reworded",
                f"Stored in other words, probably: the nearest memory by embedding is {named}, at or above "
                f"{same_fact_at:.2f}, where rewordings of one fact lie. Read it: if it says the same, the "
                "miss is a ranking problem (its score for that query, or the floor); query with words "
                "closer to what was stored.",
            )
        if neighbour.similarity >= related_at:
            return StoredVerdict(
                "related",
                f"No text match among {whose}. The nearest memory by embedding is {named}: on the same "
                f"topic (at or above {related_at:.2f}) but under {same_fact_at:.2f}, where rewordings of one "
                "fact lie. Read it: if it states the expected fact, it is stored in other words; if not, "
                "the fact was probably never stored.",
            )
    elif nearest:
        # Hits whose scores say nothing about similarity: no ground for "never stored".
        top = nearest[0]
        return StoredVerdict(
            "related",
            f"No text match among {whose}, and this store's scores do not say how similar its nearest "
            f"memory is. Its top hit for the text is {top.memory_id}: \u201c{top.text[:120]}\u201d. Read it: "
            "if it states the expected fact, it is stored in other words; if not, the fact was probably "
            "never stored.",
        )
    closest = ""
    if neighbour is not None:
        closest = (
            f" The nearest by embedding, {neighbour.memory_id} (\u201c{neighbour.text[:120]}\u201d), is at "
            f"{neighbour.similarity:.3f} ({neighbour.source}), under {related_at:.2f}: about something else."
        )
    return StoredVerdict(
        "not_found",
        f"No text match among {whose}: it was probably never stored (an extraction step such as "
        f"Mem0 infer=True can drop a fact), so no floor or ranking change will retrieve it.{closest}",
    )


# ------------------------------------------------------------------ write history


@dataclass
class HistoryMatch:
    """An UPDATE or DELETE whose old text is close to the memory the reviewer expected."""

    event: HistoryEvent
    similarity: float  # difflib ratio of the normalised old text and the expected text

    @property
    def message(self) -> str:
        when = f" on {self.event.at:%Y-%m-%d %H:%M} UTC" if self.event.at else ""
        old = f"\u201c{(self.event.old_text or '')[:120]}\u201d"
        if self.event.event == "DELETE":
            return f"{old} was deleted{when} (memory {self.event.memory_id})."
        new = f"\u201c{(self.event.new_text or '')[:120]}\u201d"
        return f"{old} was merged into {new}{when} (memory {self.event.memory_id})."


def history_matches(
    events: list[HistoryEvent], expected: str, *, similar_at: float = SIMILAR_AT, limit: int = MAX_MATCHES
) -> list[HistoryMatch]:
    """UPDATE and DELETE events whose old text is the expected text, contains it, is
    part of it or is worded alike: where a memory the store no longer holds went."""
    wanted = normalise_text(expected)
    if not wanted:
        return []
    found = []
    for event in events:
        if event.event not in ("UPDATE", "DELETE"):
            continue
        old = normalise_text(event.old_text or "")
        if not old:
            continue
        ratio = difflib.SequenceMatcher(None, wanted, old).ratio()
        close = old == wanted or wanted in old or old in wanted
        if close or ratio >= similar_at or _word_overlap(wanted, old) >= similar_at:
            found.append(HistoryMatch(event, 1.0 if old == wanted else ratio))
    found.sort(key=lambda m: (-m.similarity, -(m.event.at.timestamp() if m.event.at else 0)))
    return found[:limit]


def history_rows(events: list[HistoryEvent]) -> list[dict[str, object]]:
    """One memory's events as table rows, oldest first."""
    return [
        {
            "event": e.event,
            "old text": e.old_text,
            "new text": e.new_text,
            "when": e.at.isoformat(timespec="seconds") if e.at else None,
        }
        for e in events
    ]
