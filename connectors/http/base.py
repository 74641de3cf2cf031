"""The one HTTP boundary the HTTP connectors share: send, retry, translate errors.

``HttpBoundary.send`` is the only place an HTTP connector touches httpx. It

- sends through ``connectors.http.outbound`` (a total deadline per attempt, redirects
  only to the same origin and never with a key, credentials out of every message),
- retries a 429 after the delay the store asks for (``retry_after`` in the body or
  the ``Retry-After`` header), and a 5xx after an exponential backoff, both at most
  ``max_retries`` times; a request that is not safe to repeat (feedback changes
  importance) is retried only on 429, which the store rejected before acting,
- translates every failure into the hierarchy in ``connectors.base``:

    httpx.TimeoutException          -> StoreTimeout
    httpx.ConnectError / transport  -> StoreUnavailable
    401 / 403                       -> AuthFailed
    404                             -> NotFound
    400 / 409 / 422 (other 4xx)     -> InvalidRequest, with the store's own message
    429 after the retries           -> RateLimited(retry_after=...)
    5xx after the retries           -> BadResponse
    a body that is not JSON         -> BadResponse

and carries the store's request id (body ``request_id`` or an ``X-Request-ID``
header). For an address a page's visitor typed (``typed_address``) every failure
is the one message ``TYPED_ADDRESS_FAILED`` and the details go to the server log:
otherwise the messages (refused, a 405, a disconnect, a quoted body) tell a visitor
what listens on each port of the server's network. Secrets are redacted from every message and from the decoded body before
they leave this module: some stores echo a rejected key back in the error.
"""

from __future__ import annotations

import email.utils
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from connectors.base import (
    TYPED_ADDRESS_FAILED,
    AuthFailed,
    BadResponse,
    ConnectorError,
    InvalidRequest,
    NotFound,
    RateLimited,
    StoreUnavailable,
)
from connectors.common.redaction import REDACTED, redact, shorten, terminal_line
from connectors.http import outbound

__all__ = ["REDACTED", "HttpBoundary", "HttpReply", "redact"]

log = logging.getLogger(__name__)

REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-correlation-id")
MAX_MESSAGE_CHARS = 300


@dataclass
class HttpReply:
    """A successful (2xx) answer, decoded."""

    status: int
    body: Any  # the decoded JSON
    request_id: str | None
    latency_ms: float  # of the attempt that succeeded
    attempts: int
    headers: httpx.Headers


def parse_retry_after(body: Any, headers: httpx.Headers, now: Callable[[], datetime] | None = None) -> float | None:
    """Seconds the store asks us to wait: body ``retry_after`` (top level or in
    ``error.details``) first, then the ``Retry-After`` header (seconds or an
    HTTP date). None when neither says."""
    candidates: list[Any] = []
    if isinstance(body, dict):
        candidates.append(body.get("retry_after"))
        error = body.get("error")
        if isinstance(error, dict):
            candidates.append(error.get("retry_after"))
            details = error.get("details")
            if isinstance(details, dict):
                candidates.append(details.get("retry_after"))
    for value in candidates:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
            return float(value)
    header = headers.get("retry-after")
    if header is None:
        return None
    header = header.strip()
    try:
        seconds = float(header)
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now() if now else datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


def error_message(body: Any, text: str) -> str:
    """The store's own words from the error shapes stores use:
    ``{"error": {"code", "message", "details"}}``, flat ``{"error", "message"}``,
    FastAPI's ``{"detail": "..."}`` or ``{"detail": [{"loc", "msg"}, ...]}``."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            code, message = error.get("code"), error.get("message")
            parts = [str(message) if message else "", f"[{code}]" if code else ""]
            details = error.get("details")
            if details and isinstance(details, (dict, list)):
                parts.append(f"details: {details}")
            joined = " ".join(p for p in parts if p)
            if joined:
                return _short(joined)
        if isinstance(error, str) or body.get("message"):
            pieces = [str(body.get("message") or ""), f"[{error}]" if isinstance(error, str) else ""]
            return _short(" ".join(p for p in pieces if p))
        detail = body.get("detail")
        if isinstance(detail, str):
            return _short(detail)
        if isinstance(detail, list):
            items = []
            for item in detail:
                if isinstance(item, dict):
                    where = ".".join(str(p) for p in item.get("loc", []) if p != "body")
                    items.append(f"{where}: {item.get('msg', item)}" if where else str(item.get("msg", item)))
                else:
                    items.append(str(item))
            return _short("; ".join(items))
    return _short(text.strip()) if text and text.strip() else "no message"


def _short(text: str) -> str:
    # a store's or model's own words: shown on one line, its control characters escaped
    return terminal_line(shorten(text, MAX_MESSAGE_CHARS))


def _request_id(body: Any, headers: httpx.Headers, secrets: Iterable[str]) -> str | None:
    """The store's request id, redacted before it is cut: a store may echo the key
    in it, and a cut key would no longer match."""
    raw = None
    if isinstance(body, dict) and body.get("request_id"):
        raw = str(body["request_id"])
    else:
        raw = next((headers[name] for name in REQUEST_ID_HEADERS if headers.get(name)), None)
    return shorten(redact(raw, secrets), 100) if raw else None


class HttpBoundary:
    """Sends requests for one connector; see the module docstring."""

    def __init__(
        self,
        *,
        store_title: str,
        base_url: str,
        client: httpx.Client | None = None,
        timeout: float = 10.0,
        max_retries: int = 2,
        max_retry_wait: float = 30.0,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        secrets: Iterable[str] = (),
        typed_address: bool = False,
    ):
        base_url = (base_url or "").strip().rstrip("/")
        if not base_url:
            raise StoreUnavailable(f"{store_title}: no base URL is set")
        if not base_url.startswith(("http://", "https://")):
            raise InvalidRequest(
                f"{store_title}: base URL must start with http:// or https://, got {outbound.public_url(base_url)!r}"
            )
        if timeout is None or timeout <= 0:
            raise InvalidRequest(f"{store_title}: timeout must be above 0 seconds, got {timeout!r}")
        if max_retries < 0:
            raise InvalidRequest(f"{store_title}: max_retries must be 0 or more, got {max_retries!r}")
        self.store_title = store_title
        self.base_url = base_url
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.max_retry_wait = float(max_retry_wait)
        self.backoff = float(backoff)
        self.sleep = sleep
        self._secrets = [s for s in secrets if s]
        for secret in self._secrets:
            outbound.check_credential(f"{store_title}: the configured key", secret)
        self.typed_address = typed_address
        self._owns_client = client is None
        self.client = client or outbound.outbound_client()

    def redact(self, value: Any) -> Any:
        return redact(value, self._secrets)

    def send(
        self,
        method: str,
        path: str,
        *,
        headers: dict[str, str] | None = None,
        json: Any = None,
        params: dict[str, Any] | None = None,
        idempotent: bool = True,
    ) -> HttpReply:
        """One logical request, retried as the module docstring says; a 2xx
        answer decoded from JSON, or a ConnectorError."""
        try:
            return self._send(method, path, headers=headers, json=json, params=params, idempotent=idempotent)
        except ConnectorError as exc:
            if not self.typed_address:
                raise
            log.warning("%s at a typed address %s: %s", self.store_title, outbound.public_url(self.base_url), exc)
            raise StoreUnavailable(f"{self.store_title}: {TYPED_ADDRESS_FAILED}") from None

    def _send(
        self, method: str, path: str, *, headers: dict[str, str] | None, json: Any, params: dict[str, Any] | None,
        idempotent: bool,
    ) -> HttpReply:
        url = self.base_url + path
        route = f"{method} {path.split('?')[0]}"
        attempt = 0
        while True:
            attempt += 1
            started = time.perf_counter()
            response = outbound.request(
                self.client, method, url, what=self.store_title, route=route, timeout=self.timeout,
                headers=headers, json=json, params=params, secrets=self._secrets,
            )
            latency_ms = (time.perf_counter() - started) * 1000
            body, decoded = self._decode(response)
            request_id = _request_id(body if decoded else None, response.headers, self._secrets)
            log.info(
                "%s %s -> %s (attempt %d, %.0f ms, request id %s)",
                self.store_title, route, response.status_code, attempt, latency_ms, request_id,
            )
            status = response.status_code
            if 200 <= status < 300:
                if not decoded:
                    raise BadResponse(
                        f"{self.store_title} {route} answered {status} with a body that is not JSON "
                        f"({response.headers.get('content-type', 'no content type')}): "
                        f"{_short(self.redact(response.text))[:120]!r}",
                        request_id=request_id,
                        status=status,
                    )
                return HttpReply(status, self.redact(body), request_id, latency_ms, attempt, response.headers)
            delay = self._retry_delay(status, body if decoded else None, response.headers, attempt, idempotent)
            if delay is None:
                raise self._error(route, status, body if decoded else None, response, request_id, attempt)
            log.info("%s %s: waiting %.2f s before retry %d", self.store_title, route, delay, attempt)
            self.sleep(delay)

    @staticmethod
    def _decode(response: httpx.Response) -> tuple[Any, bool]:
        try:
            return response.json(), True
        except (ValueError, UnicodeDecodeError):
            return None, False

    def _retry_delay(self, status: int, body: Any, headers: httpx.Headers, attempt: int, idempotent: bool) -> float | None:
        """Seconds to wait before trying again, or None to give up now."""
        if attempt > self.max_retries:
            return None
        if status == 429:
            asked = parse_retry_after(body, headers)
            delay = asked if asked is not None else self.backoff * 2 ** (attempt - 1)
            # A store asking for a long pause gets an error at once, not a frozen page.
            return delay if delay <= self.max_retry_wait else None
        if status >= 500 and idempotent:
            return self.backoff * 2 ** (attempt - 1)
        return None

    def _error(self, route: str, status: int, body: Any, response: httpx.Response, request_id: str | None, attempts: int) -> ConnectorError:
        # Redacted before error_message cuts it: a key straddling the cut would survive.
        message = error_message(self.redact(body), self.redact(response.text) if body is None else "")
        where = f"{self.store_title} {route}"
        tried = f" after {attempts} attempts" if attempts > 1 else ""
        common: dict[str, Any] = {"request_id": request_id, "status": status}
        if status in (401, 403):
            what = "rejected the API key" if status == 401 else "refused access (the key lacks permission)"
            return AuthFailed(f"{where}: {status}, the store {what}: {message}", **common)
        if status == 404:
            return NotFound(f"{where}: 404 not found: {message}", **common)
        if status == 429:
            retry_after = parse_retry_after(body, response.headers)
            wait = f"; the store asks to wait {retry_after:g} s" if retry_after is not None else ""
            if retry_after is not None and retry_after > self.max_retry_wait:
                wait += f", longer than memlens waits ({self.max_retry_wait:g} s)"
            return RateLimited(
                f"{where}: 429 rate limited{tried}{wait}: {message}", retry_after=retry_after, **common
            )
        if status >= 500:
            return BadResponse(f"{where}: {status} server error{tried}: {message}", **common)
        return InvalidRequest(f"{where}: {status}, the store rejected the request: {message}", **common)

    def close(self) -> None:
        if self._owns_client:
            self.client.close()


# ------------------------------------------------------------------ reading JSON


def flatten_numbers(value: Any, prefix: str = "") -> tuple[dict[str, float], list[str]]:
    """Every finite number in a (possibly nested) mapping, keyed by dotted path,
    and the dotted keys that held something else (so the page can say so).
    Booleans are not numbers here, and numeric strings are not trusted."""
    numbers: dict[str, float] = {}
    skipped: list[str] = []
    if not isinstance(value, dict):
        return numbers, skipped
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            inner, inner_skipped = flatten_numbers(item, prefix=f"{name}.")
            numbers.update(inner)
            skipped += inner_skipped
        elif isinstance(item, (int, float)) and not isinstance(item, bool) and math.isfinite(item):
            numbers[name] = float(item)
        elif item is not None:
            skipped.append(name)
    return numbers, skipped


_MISSING = object()


def dotted_get(value: Any, path: str, default: Any = _MISSING) -> Any:
    """`value` at a dotted path such as ``data.results`` or ``hits.0.payload.text``
    (a number steps into a list). Raises KeyError naming the first missing step
    unless a default is given; an empty path is the value itself."""
    current = value
    if not path:
        return current
    walked: list[str] = []
    for step in path.split("."):
        walked.append(step)
        if isinstance(current, dict) and step in current:
            current = current[step]
        elif isinstance(current, list) and step.lstrip("-").isdigit() and -len(current) <= int(step) < len(current):
            current = current[int(step)]
        else:
            if default is not _MISSING:
                return default
            raise KeyError(".".join(walked))
    return current
