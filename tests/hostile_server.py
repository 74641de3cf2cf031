"""A loopback HTTP server that misbehaves the ways the outbound boundary must survive,
on a real socket (raw, so it can drip bytes and answer with anything):

    drip     a 200 whose headers and body arrive one byte every `interval` seconds
    redirect a 3xx to `location` (another host, or the same one)
    control  a 500 whose body holds terminal escapes (retitle, colour, bell)
    ok       a 200 with a small JSON body (the chat shape, so a model client reads it)
    html     a 200 text/html sign-in page (a proxy in front of the service)
    bomb     a 200 JSON answer, gzip: 2 MB on the wire, 2 GB decompressed
    echo401  a 401 quoting the Authorization header it got, and its credentials
             base64-encoded, reversed and broken by a line break
    deep     a 200 JSON answer nested 5,000 deep
    answer   a 200 of ``body`` with ``content_type`` (a service's answer, scripted)
    cursor   Langfuse's observations page, one observation, the same cursor every time
    oversized a 200 JSON answer of ``OVERSIZED_BYTES`` (no results, a long padding string),
             sent in 1 MB pieces until the client hangs up

Every request's method, path and headers are kept in ``received``.
"""

from __future__ import annotations

import base64
import functools
import json
import socket
import threading
import time
import zlib
from dataclasses import dataclass, field

CONTROL_BODY = '{"error": {"message": "bad \\u001b]0;pwned\\u0007 \\u001b[31mred\\u001b[0m \\u0008x"}}'
OK_BODY = json.dumps(
    {"choices": [{"message": {"role": "assistant", "content": "{}"}}], "model": "m", "ok": True}
)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class HostileServer:
    mode: str = "ok"
    location: str = ""
    status: int = 307
    interval: float = 0.25
    drip_for: float = 30.0  # then the answer completes: a client without a deadline gets it
    control_body: str = CONTROL_BODY  # what `control` answers (raw escapes for a client that prints the body)
    body: bytes = b""  # what `answer` answers
    content_type: str = "application/json"
    received: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._socket = socket.socket()
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(16)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def port(self) -> int:
        return self._socket.getsockname()[1]

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._socket.close()

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            try:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    head += chunk
                lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
                self.received.append(Seen(method, path, {k.lower(): v for k, v in headers.items()}))
                # read the request's body too: closing on unread bytes resets the connection
                rest = int({k.lower(): v for k, v in headers.items()}.get("content-length", "0")) - len(head.split(b"\r\n\r\n", 1)[1])
                while rest > 0 and (chunk := connection.recv(min(rest, 65536))):
                    rest -= len(chunk)
                if self.mode == "drip":
                    self._drip(connection, self._reply())
                elif self.mode == "oversized":
                    self._oversized(connection)
                else:
                    connection.sendall(self._reply({k.lower(): v for k, v in headers.items()}))
            except OSError:
                return

    def _reply(self, headers: dict[str, str] | None = None) -> bytes:
        if self.mode in ANSWERS:
            content_type, body, extra = ANSWERS[self.mode](self, headers or {})
            status = "401 Unauthorized" if self.mode == "echo401" else "200 OK"
            return (
                f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n{extra}"
                "Connection: close\r\n\r\n"
            ).encode() + body
        if self.mode == "redirect":
            return (
                f"HTTP/1.1 {self.status} Moved\r\nLocation: {self.location}\r\nContent-Length: 0\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
        if self.mode == "control":
            body = self.control_body.encode()
            return b"HTTP/1.1 500 Oops\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (
                len(body), body,
            )
        body = OK_BODY.encode()
        return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (
            len(body), body,
        )

    def _oversized(self, connection: socket.socket) -> None:
        # a valid answer a client without a cap would read whole and accept
        head, tail = b'{"results": [], "choices": [], "pad": "', b'"}'
        length = OVERSIZED_BYTES
        connection.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
            % (length, head)
        )
        left, block = length - len(head) - len(tail), b"0" * (1 << 20)
        while left > 0 and not self._stopped.is_set():
            connection.sendall(block[:left])  # OSError once the client hangs up: the answer ends
            left -= len(block)
        connection.sendall(tail)

    def _drip(self, connection: socket.socket, whole: bytes) -> None:
        started = time.monotonic()
        for index in range(len(whole)):
            if self._stopped.is_set():
                return
            connection.sendall(whole[index : index + 1])
            if time.monotonic() - started < self.drip_for:
                time.sleep(self.interval)


SIGN_IN_PAGE = b"<!doctype html><html><head><title>Sign in</title></head><body><form>Sign in to continue</form></body></html>"
BOMB_DECOMPRESSED = 2 * 1024 * 1024 * 1024
OVERSIZED_BYTES = 80 * 1024 * 1024  # above the outbound boundary's 64 MB cap


@functools.cache
def gzip_bomb() -> bytes:
    """2 GB of zeros inside a JSON string, gzip: about 2 MB (built once)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = b"0" * (1 << 20)
    parts = [packer.compress(b'{"data": "')]
    parts += [packer.compress(block) for _ in range(BOMB_DECOMPRESSED >> 20)]
    parts += [packer.compress(b'"}'), packer.flush()]
    return b"".join(parts)


def echoed(authorization: str) -> bytes:
    """A 401 body quoting the header and its credentials in the forms a server might."""
    credentials = authorization.split(" ", 1)[-1]
    middle = len(credentials) // 2
    return json.dumps({
        "message": f"Received header: {authorization}",
        "base64": base64.b64encode(credentials.encode()).decode(),
        "reversed": credentials[::-1],
        "split": credentials[:middle] + "\n" + credentials[middle:],
    }).replace("\\n", "\n").encode()  # the line break raw in the body, as a text page would have it


ANSWERS = {
    "html": lambda server, headers: ("text/html; charset=utf-8", SIGN_IN_PAGE, ""),
    "bomb": lambda server, headers: ("application/json", gzip_bomb(), "Content-Encoding: gzip\r\n"),
    "echo401": lambda server, headers: ("application/json", echoed(
        headers.get("authorization") or f"api-key {headers.get('api-key') or headers.get('x-api-key', '')}"), ""),
    "deep": lambda server, headers: ("application/json", b"[" * 5000 + b"]" * 5000, ""),
    "answer": lambda server, headers: (server.content_type, server.body, ""),
    "cursor": lambda server, headers: ("application/json", json.dumps({
        "data": [{"id": "obs-1", "traceId": "t-1", "projectId": "p-1", "type": "RETRIEVER", "startTime": "2026-01-01T09:00:00Z",
                  "output": [{"id": "mem-a", "score": 0.5}]}],
        "meta": {"cursor": "the-same-cursor"},
    }).encode(), ""),
}
