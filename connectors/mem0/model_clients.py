"""The model clients inside a Mem0 ``Memory`` (its LLM's and its embedder's OpenAI
clients), under memlens's outbound boundary.

Mem0 builds ``openai.OpenAI(api_key=..., base_url=...)`` itself and takes no HTTP
client of ours, so each one found on a built Memory is replaced by a copy sending
through ``outbound.library_client``: a total deadline per request, bodies capped
before and after decompression, redirects only within the server and never with the
key, failures as connector errors that never quote it. The copy makes no retries of
its own, so the deadline is the whole wait.

``model_secrets`` lists every key the Memory may send (from the config, the clients
and the environment variables Mem0 reads), and ``failure_text`` words any failure of
Mem0 or its model with those keys redacted in every form (a 401 body echoing the key).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from connectors.base import BadResponse, ConnectorError
from connectors.common.redaction import exception_text, redact_text, remember_secrets, terminal_line

# A chat completion that is not streamed sends nothing until the whole answer is
# written: a small local model on a busy CPU took over 180 s on Mem0's extraction prompt
# (about 9,000 tokens), so the wait for a first byte is long. The whole request is held
# to the OpenAI client's own default (600 s), what Mem0 waited before memlens bounded it.
READ_SECONDS = 300.0
DEADLINE_SECONDS = 600.0
# The environment variables Mem0's model clients read a key from.
KEY_ENVIRONMENT = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "AZURE_OPENAI_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY")
_SECRET_WORDS = ("api_key", "apikey", "token", "password", "secret")


def model_secrets(config: Any, memory: Any = None) -> list[str]:
    """The keys a Mem0 config and Memory may hold: every string under a key-like
    name in the config, each model client's key, and the key environment variables."""
    found: list[str] = [os.environ.get(name, "") for name in KEY_ENVIRONMENT]
    stack = [config]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, str) and any(word in str(key).lower() for word in _SECRET_WORDS):
                    found.append(item)
                else:
                    stack.append(item)
        elif isinstance(value, list):
            stack.extend(value)
    found += [str(getattr(client, "api_key", "") or "") for _, client in _openai_clients(memory)]
    keys = sorted({key for key in found if key}, key=len, reverse=True)
    remember_secrets(keys)  # Mem0 logs its model's failures itself: redacted where they are written
    return keys


def _openai_clients(memory: Any) -> list[tuple[Any, Any]]:
    """(holder, client) for each OpenAI client of the Memory's LLM, embedder and reranker."""
    if memory is None:
        return []
    try:
        from openai import OpenAI
    except ImportError:
        return []
    holders = [getattr(memory, name, None) for name in ("llm", "embedding_model", "reranker")]
    return [(holder, getattr(holder, "client", None)) for holder in holders if isinstance(getattr(holder, "client", None), OpenAI)]


def bound_model_clients(memory: Any, *, deadline: float = DEADLINE_SECONDS) -> None:
    """Replace each OpenAI client of the Memory with one sending through the boundary."""
    from connectors.http.outbound import check_credential, library_client, public_url

    for holder, client in _openai_clients(memory):
        key = str(client.api_key or "")
        check_credential("the model's API key", key)
        base = str(client.base_url)
        http = library_client(
            base, what=f"The model at {public_url(base)}", timeout=READ_SECONDS, deadline=deadline, secrets=[key],
            content_types=("application/json",),
        )
        holder.client = client.copy(http_client=http, max_retries=0, timeout=READ_SECONDS)


def failure_text(exc: BaseException, secrets: Iterable[str]) -> str:
    """One terminal-safe line for a failure of Mem0 or its model: the boundary's own
    words when it ended the request, else the exception's (a model's error body is
    outside text), every key redacted."""
    current: BaseException | None = exc
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        if isinstance(current, ConnectorError):
            return terminal_line(redact_text(str(current), secrets))
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return terminal_line(exception_text(exc, secrets, limit=1))


def _probe(url: str, deadline: float) -> None:
    """One chat request through a bounded OpenAI client (the outbound registry's
    probe); a problem raises, as a connector error."""
    from openai import OpenAI

    from connectors.http.outbound import PROBE_KEY, library_client

    http = library_client(url, what="The model", timeout=READ_SECONDS, deadline=deadline, secrets=[PROBE_KEY],
                          content_types=("application/json",))
    # OpenAI takes httpx's own Client as well as httpx2's (its legacy-client path)
    client = OpenAI(api_key=PROBE_KEY, base_url=url, http_client=http, max_retries=0)  # type: ignore[arg-type]
    try:
        client.chat.completions.create(model="probe", messages=[{"role": "user", "content": "probe"}])
    except ConnectorError:
        raise
    except Exception as exc:
        raise BadResponse(failure_text(exc, [PROBE_KEY])) from None


def _register() -> None:
    from connectors.http.outbound import register_client

    register_client("mem0-openai", _probe, __name__)


_register()
