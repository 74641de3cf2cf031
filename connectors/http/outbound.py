"""The one outbound HTTP boundary: every request memlens makes to a server (a model,
a webhook, an HTTP memory store) goes through ``request`` on a client from
``outbound_client``. By construction, so a new client gets the rules too:

- a **total deadline** per request, not only a timeout per read: a server that sends
  one byte every two seconds is cut off when the deadline passes, headers and body
  alike (the socket reads and writes are bounded by what is left of it);
- **redirects** are followed only to the same scheme, host and port, and never with
  credentials (a request carrying a key, or a Location holding a user or password,
  is not followed); a 3xx that is not followed is a failure naming the new
  location's host;
- **credentials** (URL userinfo, keys, tokens) are removed from every message and
  URL this module writes (``public_url``; ``redact`` for anything else);
- every **body is capped** (``MAX_BODY_BYTES``) before and after decompression (a 2 MB
  gzip answer cannot grow to gigabytes, an endless body is not read to its end): past
  the cap, BadResponse naming the host;
- a **key holding a control character** is refused when it is configured
  (``check_credential``): such a key escapes redaction through its repr;
- outside text is made **terminal-safe** by ``terminal_line`` (re-exported from
  connectors.common.redaction, which the CLI uses without importing httpx).

A client library that sends on its own (Phoenix, Langfuse, the OpenAI client inside
Mem0) is handed an httpx.Client from ``library_client``, which applies the same rules
hop by hop in its transport (the body cap by the same ``_capped`` and ``_decoded``),
and more that a library never checks itself: an answer of another **content type** than the
library expects (a sign-in page answering 200 text/html) is refused, and a JSON
answer **nested deeper** than the inbound boundary allows is refused before the
library's own parser recurses into it.

Every client registers a probe in ``CLIENTS`` (``register_client``), where it is
defined: one request through its own code to a URL, so the hostile-input suite
(tests/test_hostile_inputs.py) meets every client with the same servers.

Failures are the ``connectors.base`` hierarchy (``StoreTimeout``, ``StoreUnavailable``,
``BadResponse``), with messages that name a host, never a full URL.
"""

from __future__ import annotations

import threading
import time
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpcore
import httpx

from connectors.base import BadResponse, InvalidRequest, StoreTimeout, StoreUnavailable
from connectors.common.inbound import MAX_NESTING, nesting_depth
from connectors.common.redaction import redact, terminal_line

__all__ = [
    "CREDENTIAL_HEADERS",
    "RedirectRefused",
    "check_credential",
    "library_client",
    "library_transport",
    "outbound_client",
    "public_url",
    "redact",
    "request",
    "terminal_line",
]

MAX_REDIRECTS = 5
# A library's answer, before and after decompression: far above any page memlens asks
# for (500 observations, a span query), far below what would strain the machine.
MAX_BODY_BYTES = 64 * 1024 * 1024
PROBE_KEY = "sk-probe-0123456789abcdef"  # the key a probe sends, so a test can look for it


@dataclass(frozen=True)
class Client:
    """An outbound client: ``probe(url, deadline)`` sends one request through the
    client's own code with ``PROBE_KEY`` as its key where it takes one, and raises
    ConnectorError on any failure (a webhook's reported problem included)."""

    name: str
    probe: Callable[[str, float], None]
    module: str  # where it is defined, for the completeness test


CLIENTS: dict[str, Client] = {}


def register_client(name: str, probe: Callable[[str, float], None], module: str) -> None:
    CLIENTS[name] = Client(name, probe, module)
# Header names that carry a credential whatever their value.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"})


class RedirectRefused(BadResponse):
    """A 3xx memlens did not follow (another origin, or a request with credentials)."""


# ------------------------------------------------------------------ credentials


def check_credential(name: str, value: str | None) -> None:
    """Refuse a key or token holding a control character (a newline from a copied
    file, an escape): its repr escapes the character, so the key would no longer
    match the redaction and would reach a message. The key itself is not quoted."""
    if not value:
        return
    for position, char in enumerate(value):
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            raise InvalidRequest(
                f"{name} holds a control character ({char.encode('unicode_escape').decode('ascii')} at "
                f"position {position + 1} of {len(value)}): a key is one line of printable text; check how it was copied"
            )


def public_url(url: Any) -> str:
    """``url`` without its user, password and query string: what a message may name."""
    text = str(url or "")
    try:
        parts = urlsplit(text)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return str(redact(text.split("?")[0]))
    if not parts.scheme or not host:
        return str(redact(text.split("?")[0]))
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default


def _carries_credentials(url: httpx.URL, headers: Mapping[str, str] | None, secrets: Iterable[str]) -> bool:
    if url.userinfo:
        return True
    known = [s for s in secrets if s]
    for name, value in (headers or {}).items():
        if name.lower() in CREDENTIAL_HEADERS or any(secret in value for secret in known):
            return True
    return any(secret in str(url) for secret in known)


# ------------------------------------------------------------------ the total deadline

_deadline = threading.local()


@contextmanager
def total_deadline(seconds: float) -> Iterator[None]:
    """Every socket operation of this thread, inside the block, ends by `seconds`
    from now (nested blocks keep the earlier end)."""
    previous = getattr(_deadline, "at", None)
    at = time.monotonic() + seconds
    _deadline.at = at if previous is None else min(previous, at)
    try:
        yield
    finally:
        _deadline.at = previous


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    at = getattr(_deadline, "at", None)
    if at is None:
        return timeout
    remaining = at - time.monotonic()
    if remaining <= 0:
        raise error("the total deadline for the request passed")
    return remaining if timeout is None else min(timeout, remaining)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream):
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> httpcore.NetworkStream:
        inner = self._stream.start_tls(ssl_context, server_hostname, _bounded(timeout, httpcore.ConnectTimeout))
        return _DeadlineStream(inner)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's own sockets, with every read, write and connect bounded by the
    calling thread's deadline."""

    def __init__(self, backend: httpcore.NetworkBackend):
        self._backend = backend

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        stream = self._backend.connect_tcp(
            host, port, _bounded(timeout, httpcore.ConnectTimeout), local_address=local_address, socket_options=socket_options
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> httpcore.NetworkStream:
        stream = self._backend.connect_unix_socket(path, _bounded(timeout, httpcore.ConnectTimeout), socket_options=socket_options)
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _DeadlineTransport(httpx.HTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        # httpx builds its pool from httpcore's public constructor but takes no
        # network backend of its own; the pool's sockets are wrapped here, once.
        pool = self._pool
        pool._network_backend = _DeadlineBackend(pool._network_backend)


def outbound_client() -> httpx.Client:
    """A client whose requests ``request`` bounds by a total deadline. Redirects are
    never followed by httpx itself: ``request`` decides."""
    return httpx.Client(transport=_DeadlineTransport(), follow_redirects=False, trust_env=False)


# ------------------------------------------------------------------ a client library's client


class _BoundaryTransport(httpx.BaseTransport):
    """The rules for a client library that sends through an httpx.Client of its own
    making: each hop's body is read here, inside the request's deadline, and capped
    before and after decompression (the library gets it decoded); a 3xx the rules do
    not allow ends in RedirectRefused before httpx could follow it; a 2xx of another
    content type than ``content_types``, or JSON nested too deep, is BadResponse;
    every transport failure is a connector error with redacted, terminal-safe text."""

    def __init__(self, what: str, deadline: float, secrets: list[str], content_types: tuple[str, ...] = (),
                 max_body: int = MAX_BODY_BYTES):
        self._inner = _DeadlineTransport()
        self._what, self._deadline, self._secrets = what, deadline, secrets
        self._content_types, self._max_body = content_types, max_body

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        route = f"{request.method} {request.url.path}"
        read = (request.extensions.get("timeout") or {}).get("read")
        # the deadline per hop here too: a library handed only the transport
        # (library_transport) has no _BoundedClient around it; nested, the earlier end wins
        with _failures(self._what, route, request.url, self._deadline, self._secrets, read=read), total_deadline(self._deadline):
            response = self._inner.handle_request(request)
            said = f"{_named(self._what, request.url)} answered {route} with"
            try:
                raw = _capped(response.iter_raw(), self._max_body, said)
            finally:
                response.close()
        body = _decoded(raw, response.headers.get("content-encoding", ""), self._max_body, said)
        headers = httpx.Headers(response.headers)
        if "content-encoding" in headers:
            del headers["content-encoding"]
            headers["content-length"] = str(len(body))
        if 300 <= response.status_code < 400 and "location" in response.headers:
            _check_redirect(response, request.url, request.headers, self._secrets, self._what)
        if 200 <= response.status_code < 300 and body:
            self._check_answer(response.status_code, headers.get("content-type", ""), body, route)
        return httpx.Response(response.status_code, headers=headers, stream=httpx.ByteStream(body), extensions=response.extensions)

    def _check_answer(self, status: int, content_type: str, body: bytes, route: str) -> None:
        media = content_type.split(";")[0].strip().lower()
        if self._content_types and media not in self._content_types:
            raise BadResponse(
                f"{self._what} answered {route} with {status} {terminal_line(media) or 'and no content type'}, not "
                f"{' or '.join(self._content_types)}: is a sign-in page or a proxy in front of it? Check the URL",
                status=status,
            )
        json_like = media == "application/json" or media.endswith("+json")
        # counting brackets is cheap; the scan runs only when they could nest too deep
        if json_like and body.count(b"[") + body.count(b"{") > MAX_NESTING and nesting_depth(body.decode("utf-8", "replace")) > MAX_NESTING:
            raise BadResponse(f"{self._what} answered {route} with JSON nested deeper than {MAX_NESTING} levels; memlens does not read it",
                              status=status)

    def close(self) -> None:
        self._inner.close()


def _capped(chunks: Iterable[bytes], cap: int, said: str) -> bytes:
    """The chunks joined, or BadResponse as soon as they pass ``cap`` bytes."""
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > cap:
            raise BadResponse(f"{said} a body larger than {cap:,} bytes; memlens stopped reading it")
    return bytes(body)


def _decoded(body: bytes, encoding: str, cap: int, said: str) -> bytes:
    """``body`` undone of its Content-Encoding (gzip, deflate), never more than ``cap``
    bytes: zlib is asked for at most what is left, so a bomb is stopped at the cap,
    not after it has filled the memory. Another encoding is BadResponse."""
    for name in reversed([part.strip().lower() for part in encoding.split(",") if part.strip()]):
        if name == "identity":
            continue
        if name not in ("gzip", "x-gzip", "deflate"):
            raise BadResponse(f"{said} Content-Encoding {terminal_line(name)}, which memlens does not read")
        # deflate is meant zlib-wrapped, but servers send it raw too (as httpx accepts)
        wrapped = name != "deflate" or body[:1] == b"\x78"
        wbits = zlib.MAX_WBITS | 16 if name != "deflate" else zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS
        decoder = zlib.decompressobj(wbits)
        out = bytearray()
        try:
            out += decoder.decompress(body, cap + 1)
            while decoder.unconsumed_tail and len(out) <= cap:
                out += decoder.decompress(decoder.unconsumed_tail, cap + 1 - len(out))
            if len(out) <= cap:
                out += decoder.flush()
        except zlib.error as exc:
            raise BadResponse(f"{said} a {name} body that does not decompress ({exc})") from None
        if len(out) > cap:
            raise BadResponse(f"{said} a {name} body that decompresses to more than {cap:,} bytes; memlens stopped reading it")
        body = bytes(out)
    return body


class _BoundedClient(httpx.Client):
    """An httpx.Client whose every request, its redirect hops included, ends within
    the total deadline."""

    def __init__(self, *, what: str, deadline: float, secrets: list[str], **kwargs: Any):
        super().__init__(**kwargs)
        self._what, self._total, self._secrets = what, deadline, secrets

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        route = f"{request.method} {request.url.path}"
        # the transport's failures are connector errors already; this maps what httpx
        # raises around it (too many redirects, a stream read after the deadline)
        with _failures(self._what, route, request.url, self._total, self._secrets), total_deadline(self._total):
            return super().send(request, **kwargs)


def library_client(
    base_url: str,
    *,
    what: str,
    timeout: float,
    deadline: float,
    headers: Mapping[str, str] | None = None,
    secrets: Iterable[str | None] = (),
    content_types: Iterable[str] = (),
    max_body: int = MAX_BODY_BYTES,
) -> httpx.Client:
    """An httpx.Client to hand a client library (Phoenix's ``http_client``,
    Langfuse's ``httpx_client``, OpenAI's ``http_client``), so the library's own
    requests keep the rules of ``request``: ``deadline`` seconds in all per request,
    ``timeout`` per read, redirects only within the same origin and never with a key,
    every body at most ``max_body`` bytes before and after decompression, a 2xx
    answer only of ``content_types`` (when given) and JSON no deeper than the inbound
    boundary allows, failures as connector errors naming ``what``, never a key or the
    URL's password. Environment proxies are not used, as with ``outbound_client``."""
    known = [s for s in secrets if s]
    for name, value in (headers or {}).items():
        check_credential(f"the {name} header", value)
    return _BoundedClient(
        what=what,
        deadline=deadline,
        secrets=known,
        base_url=base_url,
        headers=dict(headers or {}),
        timeout=timeout,
        transport=_BoundaryTransport(what, deadline, known, tuple(t.lower() for t in content_types), max_body),
        follow_redirects=True,  # hop by hop, each hop checked by the transport first
        max_redirects=MAX_REDIRECTS,
        trust_env=False,
    )


def library_transport(
    *,
    what: str,
    deadline: float,
    secrets: Iterable[str | None] = (),
    content_types: Iterable[str] = (),
    max_body: int = MAX_BODY_BYTES,
) -> httpx.BaseTransport:
    """The transport of ``library_client`` alone, for a library that builds its httpx
    client itself from keyword arguments (QdrantClient passes ``transport=`` on to
    it): the same rules per request, ``deadline`` seconds each; the library's client
    must not follow redirects itself (httpx's default), so a 3xx to another origin
    or with a key is refused here."""
    known = [s for s in secrets if s]
    return _BoundaryTransport(what, deadline, known, tuple(t.lower() for t in content_types), max_body)


# ------------------------------------------------------------------ one request


def request(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    what: str,
    route: str = "",
    timeout: float,
    deadline: float | None = None,
    headers: Mapping[str, str] | None = None,
    json: Any = None,
    params: Mapping[str, Any] | None = None,
    secrets: Iterable[str] = (),
    max_body: int = MAX_BODY_BYTES,
) -> httpx.Response:
    """One request, its body read, within ``deadline`` seconds in all (default: the
    per-read ``timeout``), with redirects as the module docstring says. ``what``
    names the server in messages ("The model at http://host:port"), ``route`` the
    request ("POST /chat/completions"). The body is at most ``max_body`` bytes before
    and after decompression, as a client library's (``_capped``, ``_decoded``);
    past it, BadResponse naming the host. Any status that is not a redirect is
    returned for the caller to judge."""
    secrets = [s for s in secrets if s]
    deadline = timeout if deadline is None else deadline
    started = time.monotonic()
    current = httpx.URL(url)
    for _ in range(MAX_REDIRECTS + 1):
        with _failures(what, route, current, deadline, secrets), total_deadline(max(deadline - (time.monotonic() - started), 0.001)):
            response = _read_capped(client, client.build_request(
                method, current, headers=dict(headers or {}), json=json, params=params, timeout=timeout
            ), f"{_named(what, current)} answered {route}{' ' if route else ''}with", max_body)
        # an injected client (tests, MockTransport) has no deadline sockets: check once more
        if time.monotonic() - started > deadline:
            raise StoreTimeout(f"{what} did not answer {route}{' ' if route else ''}within {deadline:g} s")
        if not (300 <= response.status_code < 400 and "location" in response.headers):
            return response
        target = _check_redirect(response, response.url, headers, secrets, what)
        if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
            method, json = "GET", None
        current, params = target, None
    raise RedirectRefused(f"{what} redirected more than {MAX_REDIRECTS} times")


def _read_capped(client: httpx.Client, sent: httpx.Request, said: str, cap: int) -> httpx.Response:
    """``sent``'s answer with its body read through the same caps a client library's
    transport applies: streamed, so an endless or oversized body is stopped at
    ``cap`` bytes, then decompressed to at most ``cap`` (httpx would inflate a gzip
    bomb whole). The answer returned holds the decoded body."""
    response = client.send(sent, stream=True)
    if response.is_stream_consumed:
        # built whole in memory by an injected transport (httpx.MockTransport): decoded already
        _capped([response.content], cap, said)
        return response
    try:
        raw = _capped(response.iter_raw(), cap, said)
    finally:
        response.close()
    body = _decoded(raw, response.headers.get("content-encoding", ""), cap, said)
    headers = httpx.Headers(response.headers)
    if "content-encoding" in headers:
        del headers["content-encoding"]
        headers["content-length"] = str(len(body))
    return httpx.Response(response.status_code, headers=headers, content=body, request=response.request,
                          extensions=response.extensions)


def _named(what: str, url: httpx.URL) -> str:
    """``what`` with the host it was asked at, when it does not name it already (a
    store's title): scheme, host and port only, never a path, user or key."""
    return what if url.host and url.host in what else f"{what} at {_origin_text(url)}"


def _origin_text(url: httpx.URL) -> str:
    scheme, host, port = origin(url)
    return f"{scheme}://{host}:{port}"


@contextmanager
def _failures(
    what: str, route: str, url: httpx.URL, deadline: float, secrets: list[str], read: float | None = None
) -> Iterator[None]:
    """httpx's failures of one request as the connector errors, their text redacted
    and terminal-safe. A timeout names the limit that ended it: the per-read
    ``read`` when it fired well before the total ``deadline``."""
    started = time.monotonic()
    try:
        yield
    except httpx.TimeoutException as exc:
        if read is not None and read < deadline and time.monotonic() - started < deadline * 0.95:
            raise StoreTimeout(
                f"{what} sent nothing for {read:g} s on {route}{' ' if route else ''}(memlens waits {read:g} s per read, "
                f"{deadline:g} s in all)"
            ) from exc
        raise StoreTimeout(f"{what} did not answer {route}{' ' if route else ''}within {deadline:g} s") from exc
    except httpx.ConnectError as exc:
        raise StoreUnavailable(
            f"{_named(what, url)} refused the connection or could not be reached: "
            f"{_safe(str(exc), _hidden(url, secrets)) or type(exc).__name__}"
        ) from exc
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise StoreUnavailable(
            f"{what} {route}{' ' if route else ''}failed: {type(exc).__name__}: {_safe(str(exc), _hidden(url, secrets))}"
        ) from exc


def _check_redirect(
    response: httpx.Response, url: httpx.URL, headers: Mapping[str, str] | None, secrets: list[str], what: str
) -> httpx.URL:
    """Where a 3xx from ``url`` may be followed, or RedirectRefused: another origin,
    a Location holding credentials, or a request that carried a key."""
    try:
        target = url.join(response.headers["location"])
    except (httpx.InvalidURL, ValueError):
        raise RedirectRefused(
            f"{what} answered {response.status_code} with a Location that is not a URL", status=response.status_code
        ) from None
    if origin(target) != origin(url) or target.userinfo:
        raise RedirectRefused(
            f"{what} answered {response.status_code}, moving it to {target.host or 'an unnamed host'}: memlens follows a "
            "redirect only to the same scheme, host and port; point the setting at the new address if you trust it",
            status=response.status_code,
        )
    if _carries_credentials(url, headers, secrets):
        raise RedirectRefused(
            f"{what} answered {response.status_code}, moving it to another path on the same host: memlens never "
            "resends a key after a redirect; point the setting at the new address",
            status=response.status_code,
        )
    return target


def _safe(text: str, secrets: list[str]) -> str:
    return terminal_line(str(redact(text, secrets)))


def _hidden(url: httpx.URL, secrets: list[str]) -> list[str]:
    """What a message must not quote: the keys, and the URL itself (a webhook's
    path is its secret), longest first."""
    return [*secrets, str(url), url.raw_path.decode("ascii", "replace") if url.raw_path not in (b"", b"/") else ""]
