"""The contract every memory store connector meets.

A connector translates one kind of store into ``Hit`` / ``Memory`` / ``QueryResult``
values and translates that store's failures into one exception hierarchy, so pages
catch a single type and show its message:

    ConnectorError                  anything a store did wrong; pages catch only this
    ├── StoreUnavailable            connection refused, DNS, store not installed/opened
    ├── StoreTimeout                no answer within the configured timeout
    ├── AuthFailed                  401 / 403, missing or wrong key
    ├── NotFound                    the id (or route) does not exist
    ├── InvalidRequest              400 / 409 / 422: the store rejected what we sent
    ├── RateLimited                 429; ``retry_after`` seconds when the store says
    └── BadResponse                 5xx after retries, body not JSON, fields missing

Optional capabilities are Protocols too (``SupportsFeedback``, ``SupportsUsers``,
``HasDefaultUser``, ``HasMaxK``, ``QueriesBumpUsage``, ``SupportsNeighbours``,
``ScoresPerResultSet``, ``SupportsHistory``): a store that has one simply
defines the method or attribute, and pages ask ``isinstance(store, SupportsUsers)``.

Every error may carry the store's ``request_id`` so a bug report can quote it.
Connectors raise these ``from`` the library or HTTP error that caused them.

Scores: ``Hit.score`` is always "higher is better" and comparable to a floor when
``QueryResult.score_kind`` is SIMILARITY or DISTANCE (distances are normalised on
read, the store's own value kept in ``Hit.raw_score``). A RANK or NONE score must
never be compared with a floor.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, runtime_checkable

from connectors.common.errors import ServiceError


class ScoreKind(enum.StrEnum):
    """What a store's own score means before memlens normalises it."""

    SIMILARITY = "similarity"  # higher is better, usable against a floor as is
    DISTANCE = "distance"  # lower is better; normalised on read
    RANK = "rank"  # an order only (RRF, reranker position): no floor applies
    NONE = "none"  # the store sends no score

    @property
    def comparable_to_floor(self) -> bool:
        return self in COMPARABLE_KINDS


# The kinds a floor compares with. A member or its text is looked up here directly:
# the agent side asks it on every turn, where ScoreKind(text) cost more than the
# floor itself.
COMPARABLE_KINDS = frozenset({ScoreKind.SIMILARITY, ScoreKind.DISTANCE})


Signal = Literal["positive", "negative", "retrieved", "ignored"]
SIGNALS: tuple[str, ...] = ("positive", "negative", "retrieved", "ignored")


@dataclass
class Memory:
    memory_id: str
    text: str
    user_id: str | None = None
    created_at: datetime | None = None
    importance: float | None = None
    usage_count: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Hit:
    memory_id: str
    rank: int  # 1-based, in the store's own order
    text: str
    score: float | None  # higher is better; None when the store sent none
    raw_score: float | None = None  # exactly what the store sent
    breakdown: dict[str, float] = field(default_factory=dict)  # component -> value
    weights: dict[str, float] = field(default_factory=dict)  # component -> weight
    created_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class QueryResult:
    query: str
    hits: list[Hit]
    context: str | None = None  # the store's own prompt-ready block, if any
    latency_ms: float | None = None
    raw: Any = None  # the decoded response, for the "raw response" panel
    notes: list[str] = field(default_factory=list)  # warnings the page must show
    score_kind: ScoreKind = ScoreKind.SIMILARITY
    raw_score_kind: str | None = None  # e.g. "cosine distance", "l2 distance"
    # The rule that made each score from the store's raw value, set by the connector
    # that applied it; None where the scores are ranks or absent (no floor applies).
    score_space: ScoreSpace | None = None

    @classmethod
    def listing(
        cls,
        query: str,
        hits: list[Hit],
        *,
        latency_ms: float | None,
        raw: Any,
        notes: list[str] | None = None,
        score_kind: ScoreKind = ScoreKind.SIMILARITY,
        raw_score_kind: str | None = None,
        score_space: ScoreSpace | None = None,
    ) -> QueryResult:
        """The result of a store that sends no prompt block of its own (the vector
        stores, Mem0): its context is ``context_block`` of every hit."""
        return cls(
            query=query,
            hits=hits,
            context=context_block(hits),
            latency_ms=latency_ms,
            raw=raw,
            notes=list(notes or []),
            score_kind=score_kind,
            raw_score_kind=raw_score_kind,
            score_space=score_space,
        )


def check_query(text: str, k: int | None = None) -> None:
    """The arguments every connector's ``query`` refuses the same way: an empty
    message, and (when the store does not clamp k itself) a k under 1."""
    if not text or not text.strip():
        raise InvalidRequest("The query is empty: type the message the agent would query with.")
    if k is not None and k < 1:
        raise InvalidRequest(f"k must be at least 1, got {k}")


# How a distance becomes a higher-is-better score; each is the cosine similarity
# when the embeddings are unit length (except MANHATTAN, which only keeps the order).
COSINE_DISTANCE = "1 - d"  # cosine distance; also 1 - inner product (Chroma ip, LanceDB dot)
SQUARED_L2 = "1 - d/2"  # squared euclidean distance (Chroma l2, LanceDB l2)
L2 = "1 - d²/2"  # euclidean distance (pgvector <->, Qdrant Euclid)
NEGATIVE_INNER_PRODUCT = "-d"  # pgvector <#>
MANHATTAN = "1/(1+d)"  # Qdrant Manhattan


def score_from_distance(formula: str, distance: float | None) -> float | None:
    """`distance` turned into a score by `formula` (one of the constants above)."""
    if distance is None:
        return None
    if formula == SQUARED_L2:
        return 1.0 - distance / 2.0
    if formula == L2:
        return 1.0 - distance * distance / 2.0
    if formula == NEGATIVE_INNER_PRODUCT:
        return -distance
    if formula == MANHATTAN:
        return 1.0 / (1.0 + max(0.0, distance))
    return 1.0 - distance


AS_SENT = "as sent"  # the store's own score, higher is better, kept as it came


@dataclass(frozen=True)
class ScoreSpace:
    """A store kind and the rule that made memlens's score from the store's raw value.

    The value every QueryResult carries; it sits here, beside the rules, because a
    result names it. The table of which store and setting uses which rule, and the
    rest of what memlens knows of score spaces, is connectors/common/score_spaces.py."""

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


def distance_hit(
    rank: int,
    distance: Any,
    formula: str,
    *,
    memory_id: str,
    text: str,
    created_at: datetime | None,
    metadata: dict[str, Any],
) -> Hit:
    """A hit from a store that answers with a distance: the score by `formula`, the
    distance the store sent kept as the raw score."""
    raw = float(distance) if distance is not None else None
    return Hit(
        memory_id=memory_id,
        rank=rank,
        text=text,
        score=score_from_distance(formula, raw),
        raw_score=raw,
        created_at=created_at,
        metadata=metadata,
    )


def unit_length_note(how: str, container: str) -> str:
    """The note on a result from a store whose distance is not cosine (`how`: "This
    table is ordered by l2 distance"): its normalised score equals the cosine
    similarity only when the stored embeddings are unit-length, which memlens's own
    are; `container` (collection, table) names what the reviewer should check."""
    return (
        f"{how}: the score is the cosine similarity only for unit-length embeddings "
        f"(memlens encodes unit-length; check how the {container} was built)."
    )


def context_block(hits: list[Hit]) -> str | None:
    """A prompt-ready block of every returned memory, in rank order, for stores that
    send none of their own (None when nothing came back). Like a hosted store's
    context block it lists every hit: the floor's own block is built from the kept
    ones (dashboard/floor.py)."""
    if not hits:
        return None
    return "Relevant memories about the user:\n" + "\n".join(f"- {h.text}" for h in hits)


@dataclass
class FeedbackResult:
    memory_id: str
    signal: str
    importance_before: float | None
    importance_after: float | None
    adjustment: float | None
    influenced_ranking: bool | None


@runtime_checkable
class MemoryStore(Protocol):
    name: str
    score_kind: ScoreKind

    def query(self, text: str, *, user_id: str | None, k: int) -> QueryResult: ...

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None: ...

    def list(self, *, user_id: str | None, limit: int, offset: int = 0) -> list[Memory]: ...

    def close(self) -> None: ...


@runtime_checkable
class SupportsFeedback(Protocol):
    def feedback(
        self, memory_id: str, signal: Signal, *, comment: str | None = None
    ) -> FeedbackResult: ...


# The optional capabilities below are read-only properties, so a plain class
# attribute (``max_k = 100``) or an instance attribute satisfies them as well.


@runtime_checkable
class SupportsUsers(Protocol):
    """The store can name its users: the sidebar offers them as a list instead of a
    free-text box."""

    def users(self) -> list[str]: ...


@runtime_checkable
class HasDefaultUser(Protocol):
    """The user a page should preselect (None: no suggestion)."""

    @property
    def default_user(self) -> str | None: ...


@runtime_checkable
class HasMaxK(Protocol):
    """The largest k the store answers (None: it states no limit). The rank lookup
    asks with this k."""

    @property
    def max_k(self) -> int | None: ...


@runtime_checkable
class QueriesBumpUsage(Protocol):
    """True when a query itself changes what the store ranks by (usage counts), so
    the page warns next to anything that queries."""

    @property
    def queries_bump_usage(self) -> bool: ...


@dataclass(frozen=True)
class Neighbour:
    """A stored memory near a text by embedding alone (no recency, importance, ...)."""

    memory_id: str
    text: str
    similarity: float  # cosine similarity of the text's and the memory's embeddings


@runtime_checkable
class SupportsNeighbours(Protocol):
    """The store can rank a user's memories by cosine similarity to a text, from its
    own stored embeddings: Browse asks it whether a memory is stored in other words."""

    def neighbours(self, text: str, *, user_id: str | None, k: int) -> list[Neighbour]: ...


@runtime_checkable
class ScoresPerResultSet(Protocol):
    """True when the store normalises its score components within one result set
    (min-max, say), so a component's value says how a memory places against the
    others returned with it, not how similar it is to the query."""

    @property
    def scores_per_result_set(self) -> bool: ...


@dataclass(frozen=True)
class HistoryEvent:
    """One write a store recorded for a memory (Mem0's history table)."""

    memory_id: str
    event: str  # ADD | UPDATE | DELETE | NONE, as the store wrote it
    old_text: str | None
    new_text: str | None
    at: datetime | None  # when the write happened


@dataclass(frozen=True)
class WriteEvent:
    """One change a store reported for a message it was given (Mem0's ``add`` results)."""

    event: str  # ADD | UPDATE | DELETE | NONE, as the store reported it
    memory_id: str
    text: str | None  # the memory's text after the event: shown only when asked for


@dataclass(frozen=True)
class ReplayedMessage:
    """What a store did with one replayed message (``memlens write-audit``)."""

    message_id: str
    user_id: str
    events: list[WriteEvent] = field(default_factory=list)


@runtime_checkable
class SupportsHistory(Protocol):
    """A store that keeps what each write did to a memory (Mem0 library mode)."""

    def history(self, memory_id: str) -> list[HistoryEvent]: ...

    def rewrites(self) -> list[HistoryEvent]: ...


# ---------------------------------------------------------------- errors

# What any failure of a store at an address a page's visitor typed says (the details
# go to the server log): see connectors/common/typed_address.py.
TYPED_ADDRESS_FAILED = "could not reach the store at that address"


class ConnectorError(ServiceError):
    """Base of every store failure; its message is what the page shows."""


class StoreUnavailable(ConnectorError):
    pass


class StoreTimeout(ConnectorError):
    pass


class AuthFailed(ConnectorError):
    pass


class NotFound(ConnectorError):
    pass


class InvalidRequest(ConnectorError):
    pass


class RateLimited(ConnectorError):
    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class BadResponse(ConnectorError):
    pass


# Values as stores send them: every connector reads numbers and timestamps alike.


def as_number(value: Any) -> float | None:
    """A finite float, or None for anything else (booleans and strings included)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def parse_as_of(value: str | datetime) -> datetime:
    """The time a store ranks at (``as_of``): ISO 8601, a date (midnight UTC) or a date
    and time; without an offset it is UTC. Raises InvalidRequest saying what was given."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    text = str(value).strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequest(
            f"as_of: {text!r} is not an ISO 8601 time; give a date or a date and time, "
            "e.g. 2023-05-08 or 2023-05-08T13:00:00Z"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def as_datetime(value: Any) -> datetime | None:
    """An ISO 8601 string (``Z`` allowed) or epoch seconds as an aware datetime."""
    if isinstance(value, str) and value.strip():
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    number = as_number(value)
    if number is not None:
        try:
            return datetime.fromtimestamp(number, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None
