"""A MemorySync look-alike on 127.0.0.1 for the tests, over a real embedded store.

It speaks the documented routes (docs/domain.md, "Stores and what their scores mean") with real scores: the embedded
store ranks, then each component is min-max normalised within the returned set
and re-weighted, as MemorySync does, and every query bumps the usage counts of
what it returns. It runs on a *copy* of the session's demo store, so those bumps
never reach the demo file other tests read.

Faults are injected per test (``inject``): a status with a body in any of the
store's error shapes, a header (``Retry-After``), a delay (for timeouts), or a raw
non-JSON body. Every request is recorded (method, path, headers, body, arrival
time) so tests can count attempts and measure the gaps between them.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from connectors.base import SIGNALS, NotFound
from connectors.embedded.store import EmbeddedStore

TEST_API_KEY = "msk-live-TESTKEY-7f3a9c21e4b8d6"
# A stand-in for MemorySync's weights: the embedded store has no `cluster` component.
WEIGHTS = {"semantic": 0.5, "recency": 0.2, "importance": 0.2, "usage": 0.1}
COMPONENTS = tuple(WEIGHTS)
MAX_K = 50


@dataclass
class Fault:
    status: int | None = 500  # None: answer normally (after `delay`)
    body: Any = None  # dict/list -> JSON; str/bytes -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    route: str | None = None  # a path prefix such as "/memory/query"; None matches any
    times: int = 1
    content_type: str = "application/json"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    at: float  # time.monotonic() on arrival


def min_max(values: list[float]) -> list[float]:
    """Min-max within one result set; a column that does not vary counts as the best."""
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return [1.0 for _ in values]
    return [(v - low) / (high - low) for v in values]


class MemorySyncServer:
    def __init__(self, store: EmbeddedStore, api_key: str = TEST_API_KEY):
        self.store = store
        self.api_key = api_key
        self.faults: list[Fault] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------ control

    def start(self) -> MemorySyncServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle on, the client's
            # delayed ACK would add ~40 ms to every answer.
            disable_nagle_algorithm = True

            def do_GET(self):
                server._handle(self, "GET")

            def do_POST(self):
                server._handle(self, "POST")

            def log_message(self, *args):  # keep test output clean
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, name="memorysync-test-server", daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_port}"

    def inject(self, status: int | None = 500, body: Any = None, **options: Any) -> Fault:
        fault = Fault(status=status, body=body, **options)
        with self._lock:
            self.faults.append(fault)
        return fault

    def reset(self) -> None:
        with self._lock:
            self.faults.clear()
            self.requests.clear()

    def stop(self) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
        self.store.close()

    def requests_to(self, path_prefix: str) -> list[Recorded]:
        return [r for r in self.requests if r.path.startswith(path_prefix)]

    # ------------------------------------------------------------ handling

    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.route is None or path.startswith(fault.route):
                    fault.times -= 1
                    if fault.times <= 0:
                        self.faults.remove(fault)
                    return fault
        return None

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with self._lock:
            self.requests.append(
                Recorded(method, parts.path, parse_qs(parts.query), dict(handler.headers.items()), body, time.monotonic())
            )
        request_id = f"req-{next(self._ids)}"
        fault = self._take_fault(parts.path)
        if fault and fault.delay:
            time.sleep(fault.delay)
        if fault and fault.status is not None:
            payload = fault.body
            if isinstance(payload, (dict, list)):
                payload = json.dumps(payload).encode()
            elif isinstance(payload, str):
                payload = payload.encode()
            elif payload is None:
                payload = json.dumps({"error": {"code": "injected", "message": f"injected {fault.status}"}, "request_id": request_id}).encode()
            self._send(handler, fault.status, payload, fault.content_type, {"X-Request-ID": request_id, **fault.headers})
            return
        status, answer = self._route(method, parts.path, parse_qs(parts.query), handler.headers, body, request_id)
        if isinstance(answer, dict):
            answer.setdefault("request_id", request_id)
        self._send(handler, status, json.dumps(answer).encode(), "application/json", {"X-Request-ID": request_id})

    @staticmethod
    def _send(handler, status: int, payload: bytes, content_type: str, headers: dict[str, str]) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            pass

    def _route(self, method: str, path: str, query: dict, headers, body: Any, request_id: str) -> tuple[int, Any]:
        def error(status: int, code: str, message: str, **details: Any):
            return status, {"error": {"code": code, "message": message, "details": details}, "request_id": request_id}

        if headers.get("X-API-Key") != self.api_key:
            return error(401, "invalid_api_key", "Missing or invalid API key")
        user = headers.get("X-End-User-ID")
        if not user:
            return error(400, "missing_end_user", "X-End-User-ID header is required when authenticating with an API key")
        if method == "POST" and path == "/memory/query":
            return self._query(body, user)
        if method == "GET" and path == "/memory/export":
            limit = int(query.get("limit", ["100"])[0])
            offset = int(query.get("offset", ["0"])[0])
            memories = self.store.list(user_id=user, limit=limit, offset=offset)
            return 200, {"memories": [self._memory_json(m) for m in memories], "total": len(self.store.list(user_id=user, limit=10_000))}
        if path.startswith("/memory/") and path.endswith("/feedback") and method == "POST":
            memory_id = unquote(path[len("/memory/") : -len("/feedback")])
            return self._feedback(memory_id, body, user)
        if method == "GET" and path.startswith("/memory/"):
            memory = self.store.get(unquote(path[len("/memory/") :]), user_id=user)
            if memory is None:
                return 404, {"detail": "Memory not found"}  # FastAPI's shape, as MemorySync's older routes send
            return 200, self._memory_json(memory)
        return 404, {"detail": "Not Found"}

    def _query(self, body: Any, user: str) -> tuple[int, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("query"), str) or not body["query"].strip():
            return 422, {"detail": [{"loc": ["body", "query"], "msg": "field required", "type": "value_error.missing"}]}
        k = body.get("k", 5)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            return 422, {"detail": [{"loc": ["body", "k"], "msg": f"ensure this value is between 1 and {MAX_K}", "type": "value_error"}]}
        weights = dict(WEIGHTS)
        if isinstance(body.get("weights"), dict):
            weights = {c: float(body["weights"].get(c, 0.0)) for c in COMPONENTS}
            total = sum(weights.values()) or 1.0
            weights = {c: w / total for c, w in weights.items()}
        started = time.perf_counter()
        result = self.store.query(body["query"], user_id=user, k=k)  # count_usage: bumps usage
        hits = result.hits
        normalised = {c: min_max([h.breakdown[c] for h in hits]) if hits else [] for c in COMPONENTS}
        memories = []
        for i, hit in enumerate(hits):
            parts = {c: round(normalised[c][i], 6) for c in COMPONENTS}
            score = round(sum(weights[c] * parts[c] for c in COMPONENTS), 6)
            memories.append(
                {
                    "id": hit.memory_id,
                    "text": hit.text,
                    "score": score,
                    "created_at": hit.created_at.isoformat() if hit.created_at else None,
                    "importance": hit.breakdown["importance"],
                    "usage_count": hit.metadata.get("usage_count", 0) + 1,
                    "tags": [hit.metadata["topic"]] if hit.metadata.get("topic") else [],
                    "metadata": {k: v for k, v in hit.metadata.items() if k not in ("usage_count", "age_hours", "user_id")},
                    "scoring_breakdown": {
                        **parts,
                        "raw": {c: round(hit.breakdown[c], 6) for c in COMPONENTS},
                        "final": score,
                    },
                }
            )
        memories.sort(key=lambda m: (-m["score"], m["id"]))
        intent = "temporal" if any(w in body["query"].lower() for w in ("recent", "latest", "last", "today")) else "factual"
        return 200, {
            "memories": memories,
            "context": "Relevant memories about the user:\n" + "\n".join(f"- {m['text']}" for m in memories)
            if memories
            else "",
            "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            "query_intent": intent,
            "weights": weights,
        }

    def _feedback(self, memory_id: str, body: Any, user: str) -> tuple[int, Any]:
        signal = body.get("signal") if isinstance(body, dict) else None
        if signal not in SIGNALS:
            return 422, {"detail": [{"loc": ["body", "signal"], "msg": f"value is not one of {', '.join(SIGNALS)}", "type": "value_error"}]}
        if self.store.get(memory_id, user_id=user) is None:
            return 404, {"detail": "Memory not found"}
        try:
            result = self.store.feedback(memory_id, signal, comment=body.get("comment"))
        except NotFound:
            return 404, {"detail": "Memory not found"}
        return 200, {
            "memory_id": memory_id,
            "signal": signal,
            "importance_before": result.importance_before,
            "importance_after": result.importance_after,
            "adjustment": result.adjustment,
            "influenced_ranking": result.influenced_ranking,
        }

    @staticmethod
    def _memory_json(memory) -> dict[str, Any]:
        return {
            "id": memory.memory_id,
            "text": memory.text,
            "user_id": memory.user_id,
            "created_at": memory.created_at.isoformat() if memory.created_at else None,
            "importance": memory.importance,
            "usage_count": memory.usage_count,
            "metadata": memory.metadata,
        }


def serve_copy_of(demo_db: Path, directory: Path, api_key: str = TEST_API_KEY) -> MemorySyncServer:
    """Start a server over a copy of `demo_db` made in `directory` (SQLite's backup
    API, so a WAL file is included)."""
    copy = Path(directory) / "memorysync.sqlite"
    source, target = sqlite3.connect(demo_db), sqlite3.connect(copy)
    with target:
        source.backup(target)
    source.close()
    target.close()
    return MemorySyncServer(EmbeddedStore(copy, count_usage=True), api_key).start()
