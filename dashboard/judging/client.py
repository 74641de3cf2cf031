"""A client for OpenAI-compatible chat models (OpenAI, vLLM, Ollama, llama.cpp's
server, LiteLLM proxies), the one place memlens sends text to a model.

Configured from the environment (or st.secrets, which the page merges in):

    MEMLENS_LLM_BASE_URL      e.g. http://127.0.0.1:11434/v1 (Ollama), https://api.openai.com/v1
    MEMLENS_LLM_MODEL         the model name the server knows, e.g. llama3.2, gpt-4o-mini
    MEMLENS_LLM_API_KEY       optional; sent only to the host of MEMLENS_LLM_BASE_URL
    MEMLENS_LLM_TIMEOUT       seconds per request, in all (default 60): a server that drips
                              its answer a byte at a time is cut off when they are up
    MEMLENS_LLM_CONCURRENCY   requests in flight at once (default 4)
    MEMLENS_LLM_JSON_MODE     schema (default) | object | none: how structured output is asked for
                              (object: {"type": "json_object", "schema": ...}, as llama.cpp's server takes it)

Nothing is sent unless a model is configured AND the caller says the user agreed
that memory and query text may go to it (``ChatClient(..., send_text=True)``): the
consent is checked here, at the boundary, not left to every page.

Requests go through ``connectors.http.base.HttpBoundary``, the boundary the HTTP
store connectors use, so timeouts, retries on 429 (after ``Retry-After``) and 5xx,
and the error translation are the same, and the key is redacted from every message.
Errors: what is wrong with the model itself is a ``ModelError``, a branch of its own
(a model is not a store); what went wrong on the way to it is the HTTP boundary's
``ConnectorError``, as for every HTTP client. Both are ``MemlensError``s, so a caller
that asks a model catches ``(ModelError, ConnectorError)``:

    MemlensError
    └── ServiceError              message, status, request id (connectors/common/errors.py)
        ├── ModelError
        │   ├── ModelNotConfigured    no base URL or model name is set
        │   ├── ModelSettingsError    a MEMLENS_LLM_* setting is unusable
        │   ├── TextNotAllowed        the user has not agreed to send text to the model
        │   └── ModelOutputError      a 2xx whose message content is missing
        └── ConnectorError            (the HTTP boundary, connectors/http/base.py)
            ├── StoreTimeout          no answer within the timeout
            ├── StoreUnavailable      connection refused, DNS
            ├── AuthFailed            401 / 403
            ├── InvalidRequest        400 / 404 / 422: the server rejected the request;
            │                         a key with control characters (check_credential)
            ├── RateLimited           429 after the retries (``retry_after``)
            └── BadResponse           5xx after the retries, a body that is not JSON
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import httpx

from connectors.common.allowed import destination
from connectors.common.errors import ServiceError
from connectors.http.base import HttpBoundary
from connectors.http.outbound import PROBE_KEY, check_credential, register_client

log = logging.getLogger(__name__)

BASE_URL_ENV = "MEMLENS_LLM_BASE_URL"
MODEL_ENV = "MEMLENS_LLM_MODEL"
API_KEY_ENV = "MEMLENS_LLM_API_KEY"
TIMEOUT_ENV = "MEMLENS_LLM_TIMEOUT"
CONCURRENCY_ENV = "MEMLENS_LLM_CONCURRENCY"
JSON_MODE_ENV = "MEMLENS_LLM_JSON_MODE"
ENV_NAMES = (BASE_URL_ENV, MODEL_ENV, API_KEY_ENV, TIMEOUT_ENV, CONCURRENCY_ENV, JSON_MODE_ENV)

DEFAULT_TIMEOUT_S = 60.0  # a small local model on two cores takes seconds per answer
DEFAULT_CONCURRENCY = 4
MAX_CONCURRENCY = 64
JSON_MODES = ("schema", "object", "none")
CHAT_PATH = "/chat/completions"


class ModelError(ServiceError):
    """What is wrong with the model itself (its settings, the consent, its answer)."""


class ModelNotConfigured(ModelError):
    pass


class ModelSettingsError(ModelError):
    pass


class TextNotAllowed(ModelError):
    pass


class ModelOutputError(ModelError):
    pass


@dataclass(frozen=True)
class ModelConfig:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT_S
    concurrency: int = DEFAULT_CONCURRENCY
    json_mode: str = "schema"
    max_retries: int = 2

    def __post_init__(self) -> None:
        if self.json_mode not in JSON_MODES:
            raise ModelSettingsError(f"{JSON_MODE_ENV} must be one of {', '.join(JSON_MODES)}, got {self.json_mode!r}")
        if not (isinstance(self.concurrency, int) and 1 <= self.concurrency <= MAX_CONCURRENCY):
            raise ModelSettingsError(f"{CONCURRENCY_ENV} must be a whole number from 1 to {MAX_CONCURRENCY}, got {self.concurrency!r}")
        check_credential(API_KEY_ENV, self.api_key)
        if not (math.isfinite(self.timeout) and self.timeout > 0):
            raise ModelSettingsError(f"{TIMEOUT_ENV} must be a number of seconds above 0, got {self.timeout!r}")

    @property
    def host(self) -> str:
        """Where text goes: ``scheme://host:port``, what the page and CLI name."""
        return destination(self.base_url)

    def with_base_url(self, base_url: str) -> ModelConfig:
        """The same model at another URL. The configured key goes with it only when
        the new URL points at the host it was configured for."""
        key = self.api_key if destination(base_url) == self.host else None
        return replace(self, base_url=base_url, api_key=key)


def _number(environ: Mapping[str, str], name: str, default: float, cast: Callable[[str], Any]) -> Any:
    text = (environ.get(name) or "").strip()
    if not text:
        return default
    try:
        return cast(text)
    except ValueError:
        raise ModelSettingsError(f"{name} must be a number, got {text!r}") from None


def config_from_environ(environ: Mapping[str, str]) -> ModelConfig | None:
    """The configured model, or None when no base URL or no model is set."""
    base_url = (environ.get(BASE_URL_ENV) or "").strip()
    model = (environ.get(MODEL_ENV) or "").strip()
    if not base_url or not model:
        return None
    return ModelConfig(
        base_url=base_url,
        model=model,
        api_key=(environ.get(API_KEY_ENV) or "").strip() or None,
        timeout=float(_number(environ, TIMEOUT_ENV, DEFAULT_TIMEOUT_S, float)),
        concurrency=int(_number(environ, CONCURRENCY_ENV, DEFAULT_CONCURRENCY, int)),
        json_mode=(environ.get(JSON_MODE_ENV) or "schema").strip() or "schema",
    )


@dataclass(frozen=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)

    @staticmethod
    def from_body(body: Any) -> TokenUsage:
        usage = body.get("usage") if isinstance(body, dict) else None
        if not isinstance(usage, dict):
            return TokenUsage()

        def count(name: str) -> int:
            value = usage.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

        return TokenUsage(count("prompt_tokens"), count("completion_tokens"))


@dataclass(frozen=True)
class ChatReply:
    content: str  # the assistant message as the model wrote it
    usage: TokenUsage
    latency_ms: float
    attempts: int  # HTTP attempts, retries on 429/5xx included
    model: str  # what the server says answered
    request_id: str | None = None


def decode_json_content(content: str) -> tuple[Any, str | None]:
    """(decoded JSON, None) or (None, what is wrong, with line and column). A
    Markdown code fence around the JSON, as chat models often add, is ignored."""
    body = content.strip()
    if body.startswith("```"):
        lines = body.splitlines()[1:]
        if lines and lines[-1].strip().startswith("```"):
            lines = lines[:-1]
        body = "\n".join(lines)
    if not body:
        return None, "the model's answer is empty"
    try:
        return json.loads(body), None
    except json.JSONDecodeError as exc:
        return None, f"the model's answer is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    except ValueError as exc:  # a number longer than Python converts (4,300 digits)
        return None, f"the model's answer is not usable JSON: {exc}"
    except RecursionError:
        return None, "the model's answer is not usable JSON: nested deeper than memlens reads"


class ChatClient:
    """Chat completions against one configured model; safe to share between threads."""

    def __init__(
        self,
        config: ModelConfig,
        *,
        send_text: bool,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.config = config
        self.send_text = send_text
        self._boundary = HttpBoundary(
            store_title=f"The model at {config.host}",
            base_url=config.base_url,
            client=client,
            timeout=config.timeout,
            max_retries=config.max_retries,
            sleep=sleep,
            secrets=[config.api_key] if config.api_key else [],
        )
        self._lock = threading.Lock()
        self.usage = TokenUsage()  # every reply's tokens, added up
        self.requests = 0

    def __repr__(self) -> str:  # never the key
        return f"ChatClient(model={self.config.model!r}, host={self.config.host!r})"

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        max_tokens: int | None = None,
    ) -> ChatReply:
        """One chat completion at temperature 0. With a schema, structured output
        is asked for as the configured JSON mode says; the caller validates it."""
        if not self.send_text:
            raise TextNotAllowed(
                f"Memory and query text may not be sent to the model at {self.config.host} "
                "until you agree to it."
            )
        body: dict[str, Any] = {"model": self.config.model, "messages": messages, "temperature": 0}
        if max_tokens:
            body["max_tokens"] = max_tokens
        if schema is not None and self.config.json_mode == "schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": True},
            }
        elif schema is not None and self.config.json_mode == "object":
            # The schema rides along: llama.cpp's server and vLLM constrain output to it.
            body["response_format"] = {"type": "json_object", "schema": schema}
        headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
        # Not idempotent in cost, but a 5xx means no answer came back: retrying is what
        # a user would do by hand, so the boundary's 5xx retries stay on.
        reply = self._boundary.send("POST", CHAT_PATH, headers=headers, json=body)
        content = _message_content(reply.body)
        if content is None:
            raise ModelOutputError(
                f"The model at {self.config.host} answered without a message (no choices[0].message.content)",
                request_id=reply.request_id,
                status=reply.status,
            )
        usage = TokenUsage.from_body(reply.body)
        with self._lock:
            self.usage = self.usage + usage
            self.requests += 1
        served = reply.body.get("model") if isinstance(reply.body, dict) else None
        log.info(
            "model %s at %s: %d prompt + %d completion tokens, %.0f ms",
            self.config.model, self.config.host, usage.prompt_tokens, usage.completion_tokens, reply.latency_ms,
        )
        return ChatReply(
            content=content,
            usage=usage,
            latency_ms=reply.latency_ms,
            attempts=reply.attempts,
            model=served if isinstance(served, str) and served else self.config.model,
            request_id=reply.request_id,
        )

    def close(self) -> None:
        self._boundary.close()


def _message_content(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else None


Item = TypeVar("Item")
Result = TypeVar("Result")


def bounded_map(
    work: Callable[[Item], Result], items: Iterable[Item], limit: int
) -> Iterator[tuple[Item, Result | None, BaseException | None]]:
    """(item, result, None) or (item, None, error) for every item, in the order
    they finish, with at most `limit` calls in flight: a caller saves each result
    as it arrives, so a killed run keeps what was done. Items are taken lazily, so a
    million pairs do not become a million queued futures."""
    source = iter(items)
    with ThreadPoolExecutor(max_workers=limit, thread_name_prefix="memlens-model") as pool:
        pending: dict[Future, Item] = {}

        def top_up() -> None:
            while len(pending) < limit:
                try:
                    item = next(source)
                except StopIteration:
                    return
                pending[pool.submit(work, item)] = item

        top_up()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                item = pending.pop(future)
                error = future.exception()
                yield (item, None, error) if error is not None else (item, future.result(), None)
            top_up()


def _probe(url: str, deadline: float) -> None:
    """One chat completion through this client (the outbound registry's probe)."""
    config = ModelConfig(base_url=url, model="probe", api_key=PROBE_KEY, timeout=deadline, max_retries=0)
    client = ChatClient(config, send_text=True)
    try:
        client.complete([{"role": "user", "content": "probe"}])
    finally:
        client.close()


register_client("model", _probe, __name__)
