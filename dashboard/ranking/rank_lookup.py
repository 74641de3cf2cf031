"""Where does memory X rank for this query, and what is its score?

The store is asked again with the largest k it allows (``max_k`` when the store
states one), and when the memory is not among the results, whether it is stored at
all: a memory that was never stored is a storage problem, one that ranks too low a
ranking problem (docs/domain.md, "Storage problems versus ranking problems").
No streamlit here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from connectors.base import ConnectorError, HasMaxK, Hit, InvalidRequest, MemoryStore

# For a store that names no limit: enough to see far past any sensible k.
DEFAULT_LOOKUP_K = 200


def lookup_k(store: MemoryStore) -> tuple[int, bool]:
    """(k to query with, whether that k is the store's own limit)."""
    limit = store.max_k if isinstance(store, HasMaxK) else None
    if isinstance(limit, int) and limit > 0:
        return limit, True
    return DEFAULT_LOOKUP_K, False


@dataclass
class RankLookup:
    memory_id: str
    k: int
    k_is_store_limit: bool
    returned: int  # how many results the wide query returned
    hit: Hit | None  # the memory in the wide result, when it is there
    exists: bool | None  # None: not checked (found) or the check failed
    exists_error: str | None = None
    table_score: float | None = None  # its score in the result on the page, if it was there
    notes: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return self.hit is not None

    def message(self) -> str:
        limit = "the store's limit" if self.k_is_store_limit else "memlens's lookup depth"
        if self.hit is not None:
            score = f"{self.hit.score:.3f}" if self.hit.score is not None else "no score"
            text = (
                f"Memory {self.memory_id} ranks #{self.hit.rank} of {self.returned} with score {score} "
                f"(queried with k={self.k}, {limit})."
            )
            if (
                self.table_score is not None
                and self.hit.score is not None
                and abs(self.table_score - self.hit.score) > 5e-4
            ):
                text += (
                    f" On the page it scored {self.table_score:.3f}: this store normalises scores within "
                    "each result set, so a wider query gives the same memory another score."
                )
            return text
        where = f"among the top {self.returned} results (queried with k={self.k}, {limit})"
        if self.exists is True:
            return f"Memory {self.memory_id} is stored but not {where}: a ranking problem, not a storage one."
        if self.exists is False:
            return (
                f"Memory {self.memory_id} is not {where}, and the store has no memory with that id for this "
                "user: it was never stored (or is stored under another user), so no query can return it."
            )
        return f"Memory {self.memory_id} is not {where}; whether it is stored could not be checked: {self.exists_error}"


def find_rank(
    store: MemoryStore,
    query: str,
    memory_id: str,
    *,
    user_id: str | None,
    table_hits: list[Hit] | None = None,
) -> RankLookup:
    """Query `store` with its largest k and report where `memory_id` lands.
    ConnectorErrors from the query propagate; a failed existence check is reported."""
    memory_id = (memory_id or "").strip()
    if not memory_id:
        raise InvalidRequest("Enter a memory id to look up.")
    if not (query or "").strip():
        raise InvalidRequest("Run a query first: the lookup ranks the memory for that query.")
    k, is_limit = lookup_k(store)
    result = store.query(query, user_id=user_id, k=k)
    hit = next((h for h in result.hits if h.memory_id == memory_id), None)
    table_score = next((h.score for h in table_hits or [] if h.memory_id == memory_id), None)
    lookup = RankLookup(
        memory_id=memory_id,
        k=k,
        k_is_store_limit=is_limit,
        returned=len(result.hits),
        hit=hit,
        exists=None,
        table_score=table_score,
        notes=list(result.notes),
    )
    if hit is None:
        try:
            lookup.exists = store.get(memory_id, user_id=user_id) is not None
        except ConnectorError as exc:
            lookup.exists_error = str(exc)
    return lookup
