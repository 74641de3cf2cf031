"""MemorySync, a hosted memory API, read from its raw REST responses.

The official SDK drops each memory's ``scoring_breakdown``; this connector reads the
raw JSON so the page can show what a score is made of. Routes (docs/domain.md, "Stores and what their scores mean"):

    POST /memory/query             {query, k (1-50), filters?, weights?} -> {memories: [...], context?, ...}
    GET  /memory/{id}              one memory
    GET  /memory/export            every memory of the end user (limit / offset pages)
    POST /memory/{id}/feedback     {signal, comment?} -> importance_before / _after, ...

Headers: ``X-API-Key`` (the secret), ``X-End-User-ID`` (required with an API key;
without it the store answers 400), ``X-Project-ID`` (optional). The key goes in a
header only, never in a URL, a log line, a message or ``repr``.

Two facts about its scores the page must show with every result (``NOTES``): the
components are min-max normalised within one result set, so a score only places a
memory against the others returned with it; and every query bumps ``usage_count``
of the memories it returns, in production.

Errors are translated in ``connectors.http.base`` (see its table); a 400 about the
missing end user becomes ``MissingEndUser``, which says which setting to fill in.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from connectors.base import (
    SIGNALS,
    AuthFailed,
    BadResponse,
    FeedbackResult,
    Hit,
    InvalidRequest,
    Memory,
    NotFound,
    QueryResult,
    ScoreKind,
    StoreUnavailable,
    as_datetime,
    as_number,
    check_query,
)
from connectors.common.score_spaces import space_for
from connectors.http import outbound
from connectors.http.base import HttpBoundary, flatten_numbers

STORE_TITLE = "MemorySync"
MAX_K = 50  # the store rejects k above this
ENV_BASE_URL = "MEMORYSYNC_BASE_URL"
ENV_API_KEY = "MEMORYSYNC_API_KEY"
ENV_END_USER_ID = "MEMORYSYNC_END_USER_ID"

NORMALISED_NOTE = (
    "MemorySync normalises each score component min-max within one result set: a score "
    "places a memory against the others returned with it and is not comparable across "
    "queries (or across k for the same query)."
)
USAGE_NOTE = (
    "Every MemorySync query bumps the usage counts of the memories it returns, in "
    "production: inspecting here nudges their future usage scores."
)
NOTES = (NORMALISED_NOTE, USAGE_NOTE)


class MissingEndUser(InvalidRequest):
    """400: an API-key request without ``X-End-User-ID``."""


def _memory_id(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _memory_text(item: dict[str, Any]) -> str | None:
    for name in ("text", "content", "memory"):
        if isinstance(item.get(name), str):
            return item[name]
    return None


def _weights(value: Any) -> dict[str, float]:
    numbers, _ = flatten_numbers(value) if isinstance(value, dict) else ({}, [])
    return numbers


def parse_query_body(body: Any, *, request_weights: dict[str, float] | None = None) -> tuple[list[Hit], list[str]]:
    """Hits and the notes about what could not be read, from a query response.

    A body without a ``memories`` list is a BadResponse; a memory without an id is
    left out with a note; a score that is not a number leaves the hit without a
    score (any floor drops it); non-numeric breakdown values are left out with a
    note. Every finite number in ``scoring_breakdown`` becomes a breakdown entry,
    nested keys joined with dots."""
    if not isinstance(body, dict):
        raise BadResponse(f"{STORE_TITLE} answered the query with a JSON {type(body).__name__}, not an object")
    memories = body.get("memories")
    if not isinstance(memories, list):
        found = ", ".join(sorted(map(str, body))) or "nothing"
        raise BadResponse(
            f"{STORE_TITLE} answered the query without a `memories` list (the body has: {found[:200]})"
        )
    weights = _weights(body.get("weights")) or dict(request_weights or {})
    hits: list[Hit] = []
    notes: list[str] = []
    skipped_breakdown: dict[str, int] = {}
    for position, item in enumerate(memories):
        where = f"memories[{position}]"
        if not isinstance(item, dict):
            notes.append(f"{where} is not an object; left out.")
            continue
        memory_id = _memory_id(item.get("id"))
        if memory_id is None:
            notes.append(f"{where} has no usable `id`; left out.")
            continue
        text = _memory_text(item)
        if text is None:
            notes.append(f"{where} ({memory_id}) has no `text`; shown empty.")
            text = ""
        score = as_number(item.get("score"))
        if score is None:
            notes.append(
                f"{where} ({memory_id}): score {item.get('score')!r} is not a number; "
                "shown without a score, so any floor drops it."
            )
        raw_breakdown = item.get("scoring_breakdown")
        if raw_breakdown is not None and not isinstance(raw_breakdown, dict):
            notes.append(f"{where} ({memory_id}): `scoring_breakdown` is not an object; ignored.")
        breakdown, skipped = flatten_numbers(raw_breakdown)
        for key in skipped:
            skipped_breakdown[key] = skipped_breakdown.get(key, 0) + 1
        metadata: dict[str, Any] = {}
        if isinstance(item.get("metadata"), dict):
            metadata.update(item["metadata"])
        for name in ("importance", "usage_count", "tags", "user_id", "updated_at"):
            if item.get(name) is not None:
                metadata[name] = item[name]
        hits.append(
            Hit(
                memory_id=memory_id,
                rank=len(hits) + 1,
                text=text,
                score=score,
                raw_score=score,
                breakdown=breakdown,
                weights=dict(weights),
                created_at=as_datetime(item.get("created_at")),
                metadata=metadata,
            )
        )
    if skipped_breakdown:
        listed = ", ".join(f"{k} ({n}×)" for k, n in sorted(skipped_breakdown.items()))
        notes.append(f"scoring_breakdown values that are not numbers were left out: {listed}.")
    intent = body.get("query_intent")
    if isinstance(intent, str) and intent:
        notes.append(f"MemorySync read the query's intent as {intent!r}, which sets the recency half-life it used.")
    return hits, notes


def parse_memory(item: Any, *, where: str = "memory") -> Memory:
    if isinstance(item, dict) and isinstance(item.get("memory"), dict):
        item = item["memory"]
    if not isinstance(item, dict):
        raise BadResponse(f"{STORE_TITLE}: {where} is not a JSON object")
    memory_id = _memory_id(item.get("id"))
    if memory_id is None:
        raise BadResponse(f"{STORE_TITLE}: {where} has no `id`")
    usage = item.get("usage_count")
    metadata = dict(item["metadata"]) if isinstance(item.get("metadata"), dict) else {}
    if isinstance(item.get("tags"), list):
        metadata["tags"] = item["tags"]
    return Memory(
        memory_id=memory_id,
        text=_memory_text(item) or "",
        user_id=item.get("user_id") if isinstance(item.get("user_id"), str) else None,
        created_at=as_datetime(item.get("created_at")),
        importance=as_number(item.get("importance")),
        usage_count=usage if isinstance(usage, int) and not isinstance(usage, bool) else None,
        metadata=metadata,
    )


class MemorySyncStore:
    """A MemorySync project seen through its REST API; see the module docstring."""

    name = "memorysync"
    score_kind = ScoreKind.SIMILARITY
    score_space = space_for("memorysync")
    scores_per_result_set = True  # ScoresPerResultSet: NORMALISED_NOTE
    max_k = MAX_K  # HasMaxK: the rank lookup asks with this k
    queries_bump_usage = True  # QueriesBumpUsage: the page says so next to anything that queries

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        end_user_id: str | None = None,
        project_id: str | None = None,
        timeout: float = 10.0,
        max_retries: int = 2,
        max_retry_wait: float = 30.0,
        backoff: float = 0.5,
        weights: dict[str, float] | None = None,
        filters: dict[str, Any] | None = None,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        typed_address: bool = False,
    ):
        if not api_key:
            raise AuthFailed(f"{STORE_TITLE}: no API key; set {ENV_API_KEY} or enter it in the sidebar")
        self._api_key = api_key
        self.end_user_id = end_user_id or None
        self.project_id = project_id or None
        self.weights = dict(weights) if weights else None
        self.filters = dict(filters) if filters else None
        self.http = HttpBoundary(
            store_title=STORE_TITLE,
            base_url=base_url,
            client=client,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_wait=max_retry_wait,
            backoff=backoff,
            sleep=sleep,
            secrets=[api_key],
            typed_address=typed_address,
        )

    def __repr__(self) -> str:  # never the key
        return f"MemorySyncStore(base_url={self.http.base_url!r}, end_user_id={self.end_user_id!r}, project_id={self.project_id!r})"

    @property
    def default_user(self) -> str | None:  # HasDefaultUser
        return self.end_user_id

    def _headers(self, user_id: str | None) -> dict[str, str]:
        headers = {"X-API-Key": self._api_key, "Accept": "application/json"}
        end_user = user_id or self.end_user_id
        if end_user:
            headers["X-End-User-ID"] = end_user
        if self.project_id:
            headers["X-Project-ID"] = self.project_id
        return headers

    def _send(self, method: str, path: str, *, user_id: str | None, **kwargs: Any):
        try:
            return self.http.send(method, path, headers=self._headers(user_id), **kwargs)
        except InvalidRequest as exc:
            # error_message puts the store's code in brackets, so the code is in here too.
            text = exc.message.lower()
            if exc.status == 400 and ("end_user" in text or "end user" in text or "end-user" in text):
                raise MissingEndUser(
                    f"{STORE_TITLE} needs an end user for API-key requests: enter an end user id in the "
                    f"sidebar or set {ENV_END_USER_ID}. ({exc.message})",
                    request_id=exc.request_id,
                    status=exc.status,
                ) from exc
            raise

    # ------------------------------------------------------------ protocol

    def query(
        self,
        text: str,
        *,
        user_id: str | None,
        k: int = 5,
        filters: dict[str, Any] | None = None,
        weights: dict[str, float] | None = None,
    ) -> QueryResult:
        check_query(text)  # k is clamped to MemorySync's 1-MAX_K below
        asked = int(k)
        k = min(max(asked, 1), MAX_K)
        body: dict[str, Any] = {"query": text, "k": k}
        filters = filters if filters is not None else self.filters
        weights = weights if weights is not None else self.weights
        if filters:
            body["filters"] = filters
        if weights:
            body["weights"] = weights
        reply = self._send("POST", "/memory/query", user_id=user_id, json=body)
        try:
            hits, problems = parse_query_body(reply.body, request_weights=weights)
        except BadResponse as exc:
            exc.request_id, exc.status = reply.request_id, reply.status
            raise
        notes = list(NOTES)
        if asked != k:
            notes.append(f"k={asked} is outside MemorySync's 1-{MAX_K}; asked for k={k}.")
        notes += problems
        context = reply.body.get("context")
        latency = as_number(reply.body.get("latency_ms"))
        return QueryResult(
            query=text,
            hits=hits,
            context=context if isinstance(context, str) and context.strip() else None,
            latency_ms=latency if latency is not None else reply.latency_ms,
            raw=reply.body,
            notes=notes,
            score_kind=self.score_kind,
            score_space=self.score_space,
        )

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None:
        try:
            reply = self._send("GET", f"/memory/{quote(memory_id, safe='')}", user_id=user_id)
        except NotFound:
            return None
        return parse_memory(reply.body, where=f"GET /memory/{memory_id}")

    def list(self, *, user_id: str | None, limit: int = 100, offset: int = 0) -> list[Memory]:
        """One page of the export. A store that ignores limit/offset and sends
        everything is paged here instead."""
        reply = self._send(
            "GET", "/memory/export", user_id=user_id, params={"limit": int(limit), "offset": int(offset)}
        )
        body = reply.body
        items = body if isinstance(body, list) else body.get("memories") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise BadResponse(f"{STORE_TITLE} answered GET /memory/export without a `memories` list")
        if len(items) > limit:
            items = items[offset : offset + limit]
        return [parse_memory(item, where=f"export[{i}]") for i, item in enumerate(items)]

    def feedback(self, memory_id: str, signal: str, *, comment: str | None = None, user_id: str | None = None) -> FeedbackResult:
        if signal not in SIGNALS:
            raise InvalidRequest(f"signal must be one of {', '.join(SIGNALS)}, got {signal!r}")
        body: dict[str, Any] = {"signal": signal}
        if comment:
            body["comment"] = comment
        # Not idempotent: a 5xx may have applied it, so only a 429 is retried.
        reply = self._send(
            "POST", f"/memory/{quote(memory_id, safe='')}/feedback", user_id=user_id, json=body, idempotent=False
        )
        data = reply.body if isinstance(reply.body, dict) else {}
        influenced = data.get("influenced_ranking")
        return FeedbackResult(
            memory_id=memory_id,
            signal=signal,
            importance_before=as_number(data.get("importance_before")),
            importance_after=as_number(data.get("importance_after")),
            adjustment=as_number(data.get("adjustment")),
            influenced_ranking=influenced if isinstance(influenced, bool) else None,
        )

    def close(self) -> None:
        self.http.close()


def open_store(
    base_url: str | None = None,
    api_key: str | None = None,
    end_user_id: str | None = None,
    project_id: str | None = None,
    timeout: float = 10.0,
    max_retries: int = 2,
    **options: Any,
) -> MemorySyncStore:
    """The registry's factory; the sidebar passes the fields registered for it."""
    if not (base_url or "").strip():
        raise StoreUnavailable(f"{STORE_TITLE}: no base URL; set {ENV_BASE_URL} or enter it in the sidebar")
    return MemorySyncStore(
        base_url or "",
        api_key or "",
        end_user_id=end_user_id,
        project_id=project_id,
        timeout=timeout,
        max_retries=max_retries,
        **options,
    )


def _probe(url: str, deadline: float) -> None:
    """One query through this connector (the outbound registry's probe)."""
    store = MemorySyncStore(url, outbound.PROBE_KEY, end_user_id="probe", timeout=deadline, max_retries=0)
    try:
        store.query("probe", user_id="probe", k=1)
    finally:
        store.close()


outbound.register_client("memorysync", _probe, __name__)
