"""An OpenAI-compatible chat server on a real loopback socket, for the model tests
and the judging benchmark.

Each request to ``POST /v1/chat/completions`` is answered by the next scripted
``Reply`` (``server.script``), or, when the script is empty, by ``server.responder``
(a function of the decoded request body). A reply can be a chat answer whose
message content is any text (valid JSON or not), any status with any headers,
or a slow one (``delay`` seconds before answering). Every request is kept
(headers and body) so a test can check what was sent.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str | None = None  # the assistant message; None: send `body` as is
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    usage: tuple[int, int] = (12, 7)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


def chat_body(content: str, model: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


class ChatModelServer:
    """The server on 127.0.0.1:<free port>, a thread per request."""

    def __init__(self, responder: Callable[[Any], Reply] | None = None, *, latency: float = 0.0):
        self.script: list[Reply] = []
        self.responder = responder or (lambda body: Reply(content="{}"))
        self.latency = latency  # added to every answer, as a remote model's would be
        self.received: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in two writes: with Nagle on, the body waits
                # for the client's delayed ACK (~40 ms) on every kept-alive request.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with server._lock:
                    server.received.append(Received(self.path, dict(self.headers), body))
                    reply = server.script.pop(0) if server.script else None
                if reply is None:
                    reply = server.responder(body)
                time.sleep(server.latency + reply.delay)
                if reply.content is not None:
                    model = body.get("model", "") if isinstance(body, dict) else ""
                    payload = json.dumps(chat_body(reply.content, model, reply.usage)).encode()
                elif isinstance(reply.body, (bytes, str)):
                    payload = reply.body.encode() if isinstance(reply.body, str) else reply.body
                else:
                    payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> ChatModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ChatModelServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def prompts(self) -> list[str]:
        """The last message of every request, in order."""
        return [r.body["messages"][-1]["content"] for r in self.received if isinstance(r.body, dict)]


def formula_ranker(body: Any) -> Reply:
    """A ranking model that does the arithmetic right: the formula's ranking (the panel's
    default settings) of the candidates the prompt lists."""
    from connectors.base import Hit
    from dashboard.ranking.rerank import RerankSettings, rerank

    sent = json.loads(body["messages"][-1]["content"])
    now = datetime.fromisoformat(sent["now"])
    hits = [
        Hit(
            memory_id=c["entry_id"],
            rank=i,
            text=c["text"],
            score=c["store_relevance"],
            breakdown={"semantic": c["store_relevance"]},
            created_at=None if c["age_hours"] is None else now - timedelta(hours=c["age_hours"]),
        )
        for i, c in enumerate(sent["candidates"], start=1)
    ]
    return Reply(content=json.dumps(rerank(hits, now=now, settings=RerankSettings(), query=sent["query"]).to_json()))
