"""A Mem0 Platform look-alike on 127.0.0.1 for the tests, over the real demo store.

It speaks the routes the Mem0 client uses:

    POST /v3/memories/search/   {query, filters (an entity id required), top_k, threshold, rerank}
                                -> {"results": [{id, memory, user_id, metadata, score,
                                    score_breakdown: {semantic, bm25, entity}, created_at, ...}]}
    GET  /v1/memories/<id>/     -> the memory, or 404 {"detail": ...}
    POST /v3/memories/?page=&page_size=   {filters} -> {count, next, previous, results};
                                a page past the end is 404 {"detail": "Invalid page."}

with ``Authorization: Token <key>`` (401 {"detail": ...} otherwise). Scores are the
real cosine similarities of the packaged MiniLM (the embedded store's semantic
part), ranked by it, and the v3 default threshold (0.1) applies when the body
names none. Faults are injected per test; every request is recorded.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from connectors.embedded.store import EmbeddedStore

TEST_API_KEY = "m0-live-TESTKEY-5c1e9a7d20"
DEFAULT_THRESHOLD = 0.1


@dataclass
class Fault:
    status: int | None = 500  # None: answer normally (after `delay`)
    body: Any = None  # dict/list -> JSON; str -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    times: int = 1
    content_type: str = "application/json"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


class Mem0PlatformServer:
    def __init__(self, store: EmbeddedStore, api_key: str = TEST_API_KEY):
        self.store = store
        self.api_key = api_key
        self.faults: list[Fault] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    def start(self) -> Mem0PlatformServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                server._handle(self)

            def do_POST(self):
                server._handle(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_port}"

    def stop(self) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()

    def inject(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def reset(self) -> None:
        with self._lock:
            self.faults.clear()
            self.requests.clear()

    # ------------------------------------------------------------ handling

    def _next_fault(self) -> Fault | None:
        with self._lock:
            if not self.faults:
                return None
            fault = self.faults[0]
            fault.times -= 1
            if fault.times <= 0:
                self.faults.pop(0)
            return fault

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        with self._lock:
            self.requests.append(
                Recorded(handler.command, parts.path, parse_qs(parts.query), dict(handler.headers.items()), body)
            )
        fault = self._next_fault()
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.status is not None:
                return self._send(handler, fault.status, fault.body, fault.headers, fault.content_type)
        if handler.headers.get("Authorization") != f"Token {self.api_key}":
            given = (handler.headers.get("Authorization") or "").removeprefix("Token ")
            # Echoes the rejected token, as some servers do: the client must redact it.
            return self._send(handler, 401, {"detail": f"Invalid token: {given}"})
        status, payload = self._route(handler.command, parts.path, parse_qs(parts.query), body)
        self._send(handler, status, payload)

    def _route(self, method: str, path: str, query: dict, body: Any) -> tuple[int, Any]:
        if method == "POST" and path == "/v3/memories/search/":
            return self._search(body)
        if method == "GET" and path.startswith("/v1/memories/") and path.endswith("/"):
            memory = self.store.get(unquote(path[len("/v1/memories/") : -1]))
            if memory is None:
                return 404, {"detail": "Memory not found."}
            return 200, self._item(memory)
        if method == "POST" and path == "/v3/memories/":
            return self._list(body, query)
        return 404, {"detail": "Not found."}

    @staticmethod
    def _user(body: Any) -> str | None:
        filters = body.get("filters") if isinstance(body, dict) else None
        return filters.get("user_id") if isinstance(filters, dict) else None

    def _search(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return 400, {"detail": "query is required."}
        if "user_id" in body:
            return 400, {"detail": "Top-level entity parameters are not supported; use filters."}
        user = self._user(body)
        if not user:
            return 400, {"detail": "filters must contain at least one of: user_id, agent_id, app_id, run_id."}
        top_k = int(body.get("top_k", 10))
        threshold = body.get("threshold", DEFAULT_THRESHOLD)
        # Every candidate, ranked by its semantic part (the cosine similarity).
        hits = self.store.query(body["query"], user_id=user, k=1000).hits
        hits.sort(key=lambda h: (-h.breakdown["semantic"], h.memory_id))
        results = []
        for hit in hits:
            semantic = hit.breakdown["semantic"]
            if semantic < threshold:
                continue
            memory = self.store.get(hit.memory_id)
            item = self._item(memory)
            item.update(score=semantic, score_breakdown={"semantic": semantic, "bm25": 0.0, "entity": 0.0})
            results.append(item)
        return 200, {"results": results[:top_k]}

    def _list(self, body: Any, query: dict) -> tuple[int, Any]:
        user = self._user(body)
        if not user:
            return 400, {"detail": "filters must contain at least one of: user_id, agent_id, app_id, run_id."}
        page = int(query.get("page", ["1"])[0])
        size = int(query.get("page_size", ["100"])[0])
        everything = self.store.list(user_id=user, limit=100_000)
        chunk = everything[(page - 1) * size : page * size]
        if page > 1 and not chunk:
            return 404, {"detail": "Invalid page."}
        return 200, {
            "count": len(everything),
            "next": None if page * size >= len(everything) else f"?page={page + 1}",
            "previous": None if page == 1 else f"?page={page - 1}",
            "results": [self._item(m) for m in chunk],
        }

    @staticmethod
    def _item(memory) -> dict[str, Any]:
        return {
            "id": memory.memory_id,
            "memory": memory.text,
            "user_id": memory.user_id,
            "metadata": memory.metadata,
            "categories": [memory.metadata["topic"]] if "topic" in memory.metadata else [],
            "created_at": memory.created_at.isoformat().replace("+00:00", "Z"),
            "updated_at": None,
        }

    @staticmethod
    def _send(handler, status: int, body: Any, headers: dict | None = None, content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(data)))
            handler.send_header("X-Request-ID", f"req-{id(handler) % 100000}")
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first (the timeout test): nothing left to tell it
