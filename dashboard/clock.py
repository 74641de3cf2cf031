"""The clock a view is of (``as_of``): the store as it was at that time.

The embedded store ranks at a clock itself (connectors/embedded/clock.py). For a
store that cannot, memlens filters its result after the query: a hit created after
the clock is removed and the result says how many were; a hit with no creation
time cannot be judged and is kept, and the result says that too. Recency from such
a store is still the store's own, counted from today, and the note says so.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from connectors.base import QueryResult, parse_as_of
from connectors.registry import REGISTRY

AS_OF_PARAM = "as_of"


def store_takes_clock(store: str) -> bool:
    """Whether the store named `store` ranks at a clock itself (its spec's ``clock``)."""
    spec = REGISTRY.get(store)
    return spec is not None and spec.clock


def link_clock(raw: str) -> tuple[str | None, str | None]:
    """(the clock as UTC ISO 8601, None) from a link's ``as_of``, or (None, why not)."""
    try:
        return parse_as_of(raw).isoformat(), None
    except Exception as exc:
        return None, str(exc).removeprefix("as_of: ")


def filtered_to_clock(result: QueryResult, as_of: str | datetime) -> QueryResult:
    """`result` without the hits created after `as_of`, with a note saying how many
    were removed (and how many carry no time and were kept)."""
    clock = parse_as_of(as_of)
    kept = [hit for hit in result.hits if hit.created_at is None or hit.created_at <= clock]
    removed = len(result.hits) - len(kept)
    undated = sum(1 for hit in kept if hit.created_at is None)
    notes = list(result.notes)
    when = clock.isoformat()
    if removed:
        notes.append(
            f"Ranked as of {when}: this store cannot rank at a clock, so memlens removed the {removed:,} of its "
            f"{len(result.hits):,} hits created after it (recency is still the store's own, from today)."
        )
        if not kept:
            notes.append(f"Every hit was created after {when}: nothing existed yet, so nothing is returned.")
    if undated:
        notes.append(f"{undated:,} hit(s) carry no creation time, so the clock {when} could not be checked for them.")
    # The store's own prompt block lists the removed hits too: without it, the
    # floor's block is built from the hits that existed (dashboard/floor.py).
    context = result.context if not removed else None
    return replace(result, hits=kept, notes=notes, context=context)
