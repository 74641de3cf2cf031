"""A generic connector for an in-house memory service that speaks JSON over HTTP.

A team describes its service once in a small TOML file and shares it:

    title = "Notes service"              # optional; used in messages
    base_url = "http://127.0.0.1:8080"
    method = "POST"                      # POST sends [request.body] as JSON; GET as query params
    path = "/search"
    score_kind = "similarity"            # similarity | cosine_distance | rank | none
    timeout = 10                         # optional, seconds
    max_retries = 2                      # optional, for 429 / 5xx
    max_k = 100                          # optional, the service's largest k

    [request.headers]                    # optional; placeholders allowed
    X-End-User-ID = "{user_id}"

    [request.body]                       # placeholders: {query} {k} {user_id}
    query = "{query}"
    limit = "{k}"

    [auth]                               # optional; the key comes from MEMLENS_HTTP_JSON_API_KEY
    header = "Authorization"             # (or st.secrets), never from this file
    prefix = "Bearer "

    [response]                           # dotted paths; a number steps into a list
    results = "data.hits"                # the list of results (required)
    id = "id"                            # within one result (required)
    text = "payload.text"                # (required)
    score = "score"                      # optional; without it nothing is compared to a floor
    breakdown = "debug.components"       # optional; every number inside, nested keys dotted
    created_at = "payload.created_at"    # optional
    context = "context"                  # optional; within the whole body

    [get]                                # optional: fetch one memory by id
    path = "/memories/{id}"
    item = "memory"                      # where the memory sits in the body ("" = the body)

    [list]                               # optional: list a user's memories
    path = "/memories"
    results = "items"
    params = { user = "{user_id}", limit = "{limit}", offset = "{offset}" }

A value that is exactly one placeholder keeps its type (``"{k}"`` sends the number
5, ``"{user_id}"`` sends null when there is no user); a placeholder inside longer
text is replaced as text. Templates are filled in on the parsed TOML, never by
pasting into JSON text, so a query with quotes or braces stays one string.

Errors in the file name the file and the field (and the line, for TOML syntax).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from connectors.base import (
    BadResponse,
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
from connectors.common import inbound
from connectors.common.score_spaces import ScoreSpace, space_for
from connectors.http import outbound
from connectors.http.base import HttpBoundary, dotted_get, flatten_numbers

ENV_CONFIG = "MEMLENS_HTTP_JSON_CONFIG"
ENV_API_KEY = "MEMLENS_HTTP_JSON_API_KEY"
SCORE_KINDS = ("similarity", "cosine_distance", "rank", "none")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_]+)\}")
QUERY_PLACEHOLDERS = ("query", "k", "user_id")
LIST_PLACEHOLDERS = ("user_id", "limit", "offset")


class ConfigError(InvalidRequest):
    """The TOML file is missing a field or has a wrong one; the message names both."""


@dataclass(frozen=True)
class HttpJsonConfig:
    base_url: str
    path: str
    results: str
    id: str
    text: str
    title: str = "HTTP JSON store"
    method: str = "POST"
    score: str | None = None
    breakdown: str | None = None
    created_at: str | None = None
    context: str | None = None
    score_kind: str = "similarity"
    timeout: float = 10.0
    max_retries: int = 2
    max_k: int | None = None
    headers: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)
    auth_header: str | None = None
    auth_prefix: str = ""
    get_path: str | None = None
    get_item: str = ""
    list_path: str | None = None
    list_results: str = ""
    list_params: dict[str, Any] = field(default_factory=dict)
    source: str = "(config)"


def _check_placeholders(value: Any, allowed: tuple[str, ...], where: str, source: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _check_placeholders(item, allowed, f"{where}.{key}", source)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_placeholders(item, allowed, f"{where}[{i}]", source)
    elif isinstance(value, str):
        for name in _PLACEHOLDER.findall(value):
            if name not in allowed:
                raise ConfigError(
                    f"{source}: field {where!r}: unknown placeholder {{{name}}}; "
                    f"allowed: {', '.join('{' + a + '}' for a in allowed)}"
                )


def parse_config(data: dict[str, Any], source: str = "(config)") -> HttpJsonConfig:
    """Validate a decoded TOML mapping; a ConfigError names the file and field."""

    def need_str(table: dict[str, Any], name: str, where: str, *, required: bool = True, default: Any = None):
        value = table.get(name, default)
        if value is None:
            if required:
                raise ConfigError(f"{source}: field {where!r} is required")
            return None
        if not isinstance(value, str) or (required and not value.strip()):
            raise ConfigError(f"{source}: field {where!r} must be a non-empty string, got {value!r}")
        return value

    def table(name: str) -> dict[str, Any]:
        value = data.get(name, {})
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: [{name}] must be a table")
        return value

    base_url = need_str(data, "base_url", "base_url")
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{source}: field 'base_url' must start with http:// or https://, got {base_url!r}")
    method = (need_str(data, "method", "method", default="POST") or "POST").upper()
    if method not in ("GET", "POST"):
        raise ConfigError(f"{source}: field 'method' must be GET or POST, got {method!r}")
    path = need_str(data, "path", "path", required=False, default="") or ""
    if path and not path.startswith("/"):
        raise ConfigError(f"{source}: field 'path' must start with '/', got {path!r}")
    score_kind = need_str(data, "score_kind", "score_kind", required=False, default="similarity")
    if score_kind not in SCORE_KINDS:
        raise ConfigError(f"{source}: field 'score_kind' must be one of {', '.join(SCORE_KINDS)}, got {score_kind!r}")
    timeout = data.get("timeout", 10.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(f"{source}: field 'timeout' must be a number of seconds above 0, got {timeout!r}")
    max_retries = data.get("max_retries", 2)
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigError(f"{source}: field 'max_retries' must be a whole number >= 0, got {max_retries!r}")
    max_k = data.get("max_k")
    if max_k is not None and (isinstance(max_k, bool) or not isinstance(max_k, int) or max_k < 1):
        raise ConfigError(f"{source}: field 'max_k' must be a whole number >= 1, got {max_k!r}")

    request = table("request")
    headers = request.get("headers", {})
    body = request.get("body", {})
    if not isinstance(headers, dict):
        raise ConfigError(f"{source}: [request.headers] must be a table")
    if not isinstance(body, dict):
        raise ConfigError(f"{source}: [request.body] must be a table")
    _check_placeholders(headers, QUERY_PLACEHOLDERS, "request.headers", source)
    _check_placeholders(body, QUERY_PLACEHOLDERS, "request.body", source)

    response = table("response")
    auth = table("auth")
    get = table("get")
    listing = table("list")
    list_params = listing.get("params", {})
    if not isinstance(list_params, dict):
        raise ConfigError(f"{source}: field 'list.params' must be a table")
    _check_placeholders(list_params, LIST_PLACEHOLDERS, "list.params", source)
    get_path = need_str(get, "path", "get.path", required=False)
    if get_path is not None and "{id}" not in get_path:
        raise ConfigError(f"{source}: field 'get.path' must contain {{id}}, got {get_path!r}")
    list_path = need_str(listing, "path", "list.path", required=False)
    if list_path is not None and not isinstance(listing.get("results", ""), str):
        raise ConfigError(f"{source}: field 'list.results' must be a string")
    return HttpJsonConfig(
        title=need_str(data, "title", "title", required=False, default="HTTP JSON store") or "HTTP JSON store",
        base_url=base_url,
        method=method,
        path=path,
        results=need_str(response, "results", "response.results"),
        id=need_str(response, "id", "response.id"),
        text=need_str(response, "text", "response.text"),
        score=need_str(response, "score", "response.score", required=False),
        breakdown=need_str(response, "breakdown", "response.breakdown", required=False),
        created_at=need_str(response, "created_at", "response.created_at", required=False),
        context=need_str(response, "context", "response.context", required=False),
        score_kind=score_kind,
        timeout=float(timeout),
        max_retries=max_retries,
        max_k=max_k,
        headers=headers,
        body=body,
        auth_header=need_str(auth, "header", "auth.header", required=False),
        auth_prefix=need_str(auth, "prefix", "auth.prefix", required=False, default="") or "",
        get_path=get_path,
        get_item=need_str(get, "item", "get.item", required=False, default="") or "",
        list_path=list_path,
        list_results=listing.get("results", "") or "",
        list_params=list_params,
        source=source,
    )


def load_config(path: str | Path) -> HttpJsonConfig:
    path = Path(path)
    try:
        text = inbound.read_small(path, "HTTP JSON store config").decode("utf-8")
        data = inbound.load_toml(text, str(path))  # the message carries line and column
    except UnicodeDecodeError as exc:
        raise ConfigError(f"Cannot read the HTTP JSON store config {path}: {exc}") from exc
    except inbound.InboundError as exc:
        raise ConfigError(f"Cannot read the HTTP JSON store config: {exc}") from None
    return parse_config(data, source=str(path))


def fill(template: Any, values: dict[str, Any]) -> Any:
    """The template with placeholders replaced; see the module docstring."""
    if isinstance(template, dict):
        return {key: fill(item, values) for key, item in template.items()}
    if isinstance(template, list):
        return [fill(item, values) for item in template]
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole and whole.group(1) in values:
            return values[whole.group(1)]

        def replace(match: re.Match) -> str:
            name = match.group(1)
            if name not in values:
                return match.group(0)
            return "" if values[name] is None else str(values[name])

        return _PLACEHOLDER.sub(replace, template)
    return template


class HttpJsonStore:
    """A memory service described by an ``HttpJsonConfig``."""

    name = "http_json"

    def __init__(
        self,
        config: HttpJsonConfig,
        *,
        api_key: str | None = None,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_retry_wait: float = 30.0,
        backoff: float = 0.5,
    ):
        self.config = config
        self.title = config.title
        self.max_k = config.max_k  # HasMaxK; None when the config names no limit
        self.score_kind = {
            "similarity": ScoreKind.SIMILARITY,
            "cosine_distance": ScoreKind.DISTANCE,
            "rank": ScoreKind.RANK,
            "none": ScoreKind.NONE,
        }[config.score_kind if config.score else "none"]
        if config.auth_header and not api_key:
            raise InvalidRequest(
                f"{config.source}: [auth] names header {config.auth_header!r} but no key is set; "
                f"set {ENV_API_KEY} or enter it in the sidebar"
            )
        self._api_key = api_key
        self.http = HttpBoundary(
            store_title=config.title,
            base_url=config.base_url,
            client=client,
            timeout=config.timeout,
            max_retries=config.max_retries,
            max_retry_wait=max_retry_wait,
            backoff=backoff,
            sleep=sleep,
            secrets=[api_key] if api_key else [],
        )

    def __repr__(self) -> str:
        return f"HttpJsonStore(title={self.title!r}, base_url={self.config.base_url!r})"

    def _headers(self, values: dict[str, Any]) -> dict[str, str]:
        headers = {str(k): str(v) for k, v in fill(self.config.headers, values).items() if v not in (None, "")}
        if self.config.auth_header and self._api_key:
            headers[self.config.auth_header] = self.config.auth_prefix + self._api_key
        return headers

    def _field(self, item: Any, path: str | None, default: Any = None) -> Any:
        return dotted_get(item, path, default) if path is not None else default

    @property
    def score_space(self) -> ScoreSpace:
        """HasScoreSpace: a service sending cosine distances is scored 1 - d (connectors/common/score_spaces.py)."""
        return space_for(self.name, "cosine_distance" if self.score_kind is ScoreKind.DISTANCE else "similarity")

    def query(self, text: str, *, user_id: str | None, k: int = 5) -> QueryResult:
        check_query(text)  # k is clamped to the service's range below
        asked = int(k)
        k = max(1, min(asked, self.max_k)) if self.max_k else max(1, asked)
        values = {"query": text, "k": k, "user_id": user_id}
        payload = fill(self.config.body, values)
        if self.config.method == "GET":
            params = {key: value for key, value in payload.items() if value is not None}
            reply = self.http.send("GET", self.config.path, headers=self._headers(values), params=params)
        else:
            reply = self.http.send("POST", self.config.path, headers=self._headers(values), json=payload)
        try:
            items = dotted_get(reply.body, self.config.results)
        except KeyError as exc:
            raise BadResponse(
                f"{self.title}: the response has no results at {self.config.results!r} "
                f"(missing step {exc.args[0]!r}; see response.results in {self.config.source})",
                request_id=reply.request_id,
            ) from exc
        if not isinstance(items, list):
            raise BadResponse(
                f"{self.title}: {self.config.results!r} in the response is a {type(items).__name__}, not a list",
                request_id=reply.request_id,
            )
        notes: list[str] = []
        if asked != k:
            notes.append(f"k={asked} is outside this store's 1-{self.max_k}; asked for k={k}.")
        hits = self._hits(items, notes)
        context = self._field(reply.body, self.config.context)
        result = QueryResult(
            query=text,
            hits=hits,
            context=context if isinstance(context, str) and context.strip() else None,
            latency_ms=reply.latency_ms,
            raw=reply.body,
            notes=notes,
            score_kind=self.score_kind,
            raw_score_kind="cosine distances" if self.score_kind is ScoreKind.DISTANCE else None,
            score_space=self.score_space if self.score_kind.comparable_to_floor else None,
        )
        return result

    def _hits(self, items: list[Any], notes: list[str]) -> list[Hit]:
        cfg = self.config
        hits: list[Hit] = []
        for position, item in enumerate(items):
            where = f"{cfg.results}[{position}]"
            raw_id = self._field(item, cfg.id)
            memory_id = str(raw_id) if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) and str(raw_id) else None
            if memory_id is None:
                notes.append(f"{where}: no id at {cfg.id!r}; left out.")
                continue
            text = self._field(item, cfg.text)
            if not isinstance(text, str):
                notes.append(f"{where} ({memory_id}): no text at {cfg.text!r}; shown empty.")
                text = ""
            raw_score = as_number(self._field(item, cfg.score)) if cfg.score else None
            if cfg.score and raw_score is None:
                notes.append(f"{where} ({memory_id}): no number at {cfg.score!r}; shown without a score.")
            score = raw_score
            if raw_score is not None and self.score_kind is ScoreKind.DISTANCE:
                score = self.score_space.convert(raw_score)  # cosine distance: 1 - d
            breakdown, skipped = flatten_numbers(self._field(item, cfg.breakdown)) if cfg.breakdown else ({}, [])
            if skipped:
                notes.append(f"{where} ({memory_id}): breakdown values that are not numbers left out: {', '.join(skipped)}.")
            hits.append(
                Hit(
                    memory_id=memory_id,
                    rank=len(hits) + 1,
                    text=text,
                    score=score,
                    raw_score=raw_score,
                    breakdown=breakdown,
                    created_at=as_datetime(self._field(item, cfg.created_at)),
                )
            )
        return hits

    def _memory(self, item: Any, where: str) -> Memory:
        raw_id = self._field(item, self.config.id)
        if raw_id is None or isinstance(raw_id, bool):
            raise BadResponse(f"{self.title}: {where} has no id at {self.config.id!r}")
        text = self._field(item, self.config.text)
        return Memory(
            memory_id=str(raw_id),
            text=text if isinstance(text, str) else "",
            created_at=as_datetime(self._field(item, self.config.created_at)),
        )

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None:
        if not self.config.get_path:
            raise InvalidRequest(f"{self.title}: {self.config.source} has no [get] section, so ids cannot be looked up")
        path = self.config.get_path.replace("{id}", quote(memory_id, safe=""))
        values = {"query": "", "k": 0, "user_id": user_id}
        try:
            reply = self.http.send("GET", path, headers=self._headers(values))
        except NotFound:
            return None
        item = dotted_get(reply.body, self.config.get_item, None)
        return self._memory(item, f"GET {path}") if item is not None else None

    def list(self, *, user_id: str | None, limit: int = 100, offset: int = 0) -> list[Memory]:
        if not self.config.list_path:
            raise InvalidRequest(f"{self.title}: {self.config.source} has no [list] section, so memories cannot be listed")
        values = {"user_id": user_id, "limit": limit, "offset": offset}
        params = {k: v for k, v in fill(self.config.list_params, values).items() if v is not None}
        reply = self.http.send("GET", self.config.list_path, headers=self._headers({**values, "query": "", "k": 0}), params=params)
        items = dotted_get(reply.body, self.config.list_results, None)
        if not isinstance(items, list):
            raise BadResponse(f"{self.title}: no list at {self.config.list_results!r} in the list response")
        if len(items) > limit:  # the service ignored paging
            items = items[offset : offset + limit]
        return [self._memory(item, f"list[{i}]") for i, item in enumerate(items)]

    def close(self) -> None:
        self.http.close()


def open_store(config_path: str | None = None, api_key: str | None = None, **options: Any) -> HttpJsonStore:
    """The registry's factory: the TOML file named in the sidebar or $MEMLENS_HTTP_JSON_CONFIG."""
    if config_path is None or not config_path.strip():
        raise StoreUnavailable(f"HTTP JSON store: no config file; set {ENV_CONFIG} or enter its path in the sidebar")
    return HttpJsonStore(load_config(config_path), api_key=api_key, **options)


def _probe(url: str, deadline: float) -> None:
    """One query through this connector (the outbound registry's probe)."""
    config = parse_config(
        {"base_url": url, "timeout": deadline, "max_retries": 0, "auth": {"header": "Authorization", "prefix": "Bearer "},
         "response": {"results": "results", "id": "id", "text": "text", "score": "score"}},
        source="(probe)",
    )
    store = HttpJsonStore(config, api_key=outbound.PROBE_KEY)
    try:
        store.query("probe", user_id="probe", k=1)
    finally:
        store.close()


outbound.register_client("http_json", _probe, __name__)


inbound.register_reader(
    inbound.Reader(
        "HTTP JSON store config", load_config, (ConfigError,), ".toml",
        {"base_url": "http://127.0.0.1:9", "timeout": 5, "response": {"results": "r", "id": "i", "text": "t"}},
        rows=False, qualname=f"{__name__}.load_config",
    )
)
