"""The Mem0 Platform: it speaks the REST API over httpx (``POST /v3/memories/search/`` with
``Authorization: Token <key>``, ``GET /v1/memories/<id>/``, ``POST /v3/memories/``
to list) and maps ``score_breakdown``. It sends through the shared HTTP boundary
(connectors/http/base.py), so its failures map to the connector errors
(connectors/base.py) exactly like every HTTP connector's:

    transport error          -> StoreUnavailable
    timeout                  -> StoreTimeout
    401 / 403                -> AuthFailed
    404                      -> NotFound
    400 / 409 / 422          -> InvalidRequest
    429                      -> waits Retry-After (or retry_after in the body) and
                                retries; RateLimited(retry_after) when retries run out
                                or the wait is longer than ``max_retry_wait``
    5xx                      -> retried with backoff, then BadResponse
    body not JSON / no list  -> BadResponse

The API key never leaves the Authorization header: it is not in a message, a
``repr``, the fingerprint or the raw response panel.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import httpx

from connectors.base import AuthFailed, BadResponse, InvalidRequest, Memory, NotFound, QueryResult, ScoreKind, check_query
from connectors.common.allowed import destination
from connectors.common.score_spaces import space_for
from connectors.http.outbound import PROBE_KEY, register_client
from connectors.mem0.answers import hits_from_search, memory_from_item, optional_threshold, results_list

# The Platform's v3 search hides hits under 0.1 unless told otherwise (API docs).
PLATFORM_DEFAULT_THRESHOLD = 0.1
PLATFORM_URL = "https://api.mem0.ai"


class Mem0PlatformStore:
    """The Mem0 Platform REST API through the shared HTTP boundary
    (connectors/http/base.py), so its errors follow the same rules as every HTTP
    connector's; `client` is injectable (tests pass a MockTransport)."""

    name = "mem0_platform"
    score_kind = ScoreKind.SIMILARITY
    score_space = space_for("mem0_platform")

    def __init__(
        self,
        api_key: str | None,
        *,
        base_url: str = PLATFORM_URL,
        client: httpx.Client | None = None,
        timeout: float = 10.0,
        rerank: bool = False,
        app_threshold: float | None = None,
        max_retries: int = 2,
        max_retry_wait: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        typed_address: bool = False,
    ):
        from connectors.http.base import HttpBoundary

        if not api_key:
            raise AuthFailed("Mem0 Platform needs an API key: set MEM0_API_KEY (or enter it in the settings).")
        self.rerank = bool(rerank)
        self.app_threshold = app_threshold
        self._headers = {"Authorization": f"Token {api_key}", "Accept": "application/json"}
        self.http = HttpBoundary(
            store_title="Mem0 Platform",
            base_url=base_url or PLATFORM_URL,
            client=client,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_wait=max_retry_wait,
            sleep=sleep,
            secrets=[api_key],
            typed_address=typed_address,
        )

    @property
    def base_url(self) -> str:
        return self.http.base_url

    def __repr__(self) -> str:  # never show the key
        return f"Mem0PlatformStore(base_url={self.base_url!r})"

    def _send(self, method: str, path: str, *, json_body: Any = None, params: dict | None = None):
        return self.http.send(method, path, headers=self._headers, json=json_body, params=params)

    # -------------------------------------------------------------- protocol

    def query(self, text: str, *, user_id: str | None, k: int = 5) -> QueryResult:
        check_query(text, k)
        if not user_id:
            raise InvalidRequest("Mem0 Platform searches need an entity id: choose an end user id.")
        payload = {
            "query": text,
            "filters": {"user_id": user_id},
            "top_k": int(k),
            "threshold": 0.0,
            "rerank": self.rerank,
        }
        reply = self._send("POST", "/v3/memories/search/", json_body=payload)
        body = reply.body
        hits = hits_from_search(results_list(body, "Mem0 Platform search"), breakdown_key="score_breakdown")
        threshold = self.app_threshold if self.app_threshold is not None else PLATFORM_DEFAULT_THRESHOLD
        source = "the threshold configured for your app" if self.app_threshold is not None else "the v3 search default"
        hidden = sum(1 for h in hits if h.score is not None and h.score < threshold)
        notes = [
            f"Mem0 Platform itself would apply threshold {threshold:.2f} ({source}); memlens queried with 0 "
            f"so the floor decides. Mem0 would have hidden {hidden} of these {len(hits)} hits."
        ]
        return QueryResult.listing(text, hits, latency_ms=reply.latency_ms, raw=body, notes=notes, score_space=self.score_space)

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None:
        from urllib.parse import quote

        try:
            body = self._send("GET", f"/v1/memories/{quote(memory_id, safe='')}/").body
        except NotFound:
            return None
        if not isinstance(body, dict) or "id" not in body:
            raise BadResponse("Mem0 Platform GET memory: the answer is not a memory object")
        memory = memory_from_item(body)
        if user_id is not None and memory.user_id not in (None, user_id):
            return None
        return memory

    def list(self, *, user_id: str | None, limit: int = 100, offset: int = 0) -> list[Memory]:
        if not user_id:
            raise InvalidRequest("Mem0 Platform lists one entity at a time: choose an end user id.")
        # Pages are page_size wide; an offset that is not a multiple is read from page 1.
        if offset % limit == 0:
            params, skip = {"page": offset // limit + 1, "page_size": limit}, 0
        else:
            params, skip = {"page": 1, "page_size": offset + limit}, offset
        try:
            body = self._send("POST", "/v3/memories/", json_body={"filters": {"user_id": user_id}}, params=params).body
        except NotFound:
            return []  # a page past the end
        return [memory_from_item(item) for item in results_list(body, "Mem0 Platform list")[skip : skip + limit]]

    def close(self) -> None:
        self.http.close()


def open_platform(
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = 10.0,
    rerank: bool = False,
    app_threshold: float | str | None = None,
    client: httpx.Client | None = None,
    typed_address: bool = False,
) -> Mem0PlatformStore:
    """Registry factory; the key comes from the settings, or MEM0_API_KEY when the
    URL is the one configured with it (the key is never sent to another host)."""
    base_url = base_url or os.environ.get("MEMLENS_MEM0_URL") or PLATFORM_URL
    configured_url = os.environ.get("MEMLENS_MEM0_URL") or PLATFORM_URL
    if not api_key and destination(base_url) == destination(configured_url):
        api_key = os.environ.get("MEM0_API_KEY")
    return Mem0PlatformStore(
        api_key,
        base_url=base_url,
        timeout=timeout,
        rerank=rerank,
        app_threshold=optional_threshold(app_threshold),
        client=client,
        typed_address=typed_address,
    )


def _probe(url: str, deadline: float) -> None:
    """One search through this connector (the outbound registry's probe)."""
    store = Mem0PlatformStore(PROBE_KEY, base_url=url, timeout=deadline, max_retries=0)
    try:
        store.query("probe", user_id="probe", k=1)
    finally:
        store.close()


register_client("mem0_platform", _probe, __name__)
