"""Mem0, in its two forms: the open-source library and the hosted Platform.

Library mode opens a ``mem0.Memory`` from a Mem0 config (a dict, or a YAML/JSON
file) and queries it the way an inspector must:

- ``filters={"user_id": ...}``, ``threshold=0`` so every candidate comes back and
  memlens's floor decides (the threshold Mem0 itself would apply is reported in
  ``QueryResult.notes``, with how many of these hits it would have hidden), and
  ``explain=True`` so ``score_details`` lands in ``Hit.breakdown`` (its
  ``threshold`` and ``max_possible_score``, settings rather than components, in
  ``Hit.metadata["score_settings"]``);
- the installed Mem0 version and the vector-store backend decide whether
  ``score`` is a similarity or a distance (``score_rule``, a pure function):
  before 2.0.5 the Chroma and pgvector backends returned distances, which are
  normalised here the way Mem0 itself does from 2.0.5 on, so a floor means the
  same thing before and after an upgrade.

Platform mode speaks the REST API over httpx (``POST /v3/memories/search/`` with
``Authorization: Token <key>``, ``GET /v1/memories/<id>/``, ``POST /v3/memories/``
to list) and maps ``score_breakdown``. It sends through the shared HTTP boundary
(connectors/http_base.py), so its failures map to the connector errors
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

import builtins
import json
import math
import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from connectors.base import (
    AuthFailed,
    BadResponse,
    ConnectorError,
    HistoryEvent,
    Hit,
    InvalidRequest,
    Memory,
    NotFound,
    QueryResult,
    ScoreKind,
    StoreUnavailable,
    as_datetime,
    context_block,
)
from connectors.mem0_history import events_of_kinds, memory_history
from connectors.paths import data_dir
from connectors.registry import destination

# The Platform's v3 search hides hits under 0.1 unless told otherwise (API docs).
PLATFORM_DEFAULT_THRESHOLD = 0.1
PLATFORM_URL = "https://api.mem0.ai"
# An LLM client is built when a Memory is constructed even though infer=False
# never calls it; it needs some key string, and this one can never authenticate.
UNUSED_LLM_KEY = "memlens-no-llm-calls"
# The release from which Mem0 turns Chroma/pgvector distances into similarities.
FIRST_SIMILARITY_RELEASE = (2, 0, 5)


# ------------------------------------------------------------------ score rule


@dataclass(frozen=True)
class ScoreRule:
    """What a Mem0 ``score`` means for one (version, backend) pair."""

    version: str
    backend: str
    returns_distance: bool
    raw_kind: str | None = None  # the distance named for the page, when one
    formula: str | None = None  # how the distance becomes higher-is-better

    def normalise(self, raw: float | None) -> float | None:
        if raw is None or not self.returns_distance:
            return raw
        if self.formula == "1 - d":
            return max(0.0, 1.0 - raw)
        return 1.0 / (1.0 + max(0.0, raw))

    @property
    def note(self) -> str | None:
        if not self.returns_distance:
            return None
        return (
            f"Mem0 {self.version} with the {self.backend} backend returns a {self.raw_kind} in `score` "
            f"(lower is better; Mem0 fixed this in 2.0.5). Scores here are {self.formula}, as Mem0 "
            "computes them from 2.0.5 on, with the store's value in the raw score column."
        )


def _release(version: str) -> tuple[int, ...] | None:
    """(major, minor, patch) of a version string, a pre-release counting as
    before its release; None when the string is not a version at all."""
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # packaging ships with pip/setuptools/streamlit; belt and braces
        parts = version.split(".")[:3]
        return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None
    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    release = tuple(parsed.release[:3]) + (0,) * (3 - len(parsed.release[:3]))
    if parsed.is_prerelease or parsed.is_devrelease:
        # 2.0.5rc1 is not yet 2.0.5: step back below the release it leads to.
        return release[:2] + (release[2] - 1,) if release[2] > 0 else release[:2] + (-1,)
    return release


def score_rule(version: str, backend: str) -> ScoreRule:
    """Whether Mem0 `version` with vector store `backend` returns distances.

    Before 2.0.5, Chroma returned its (squared L2) distance and pgvector its
    cosine distance (`<=>`) as the memory's score; from 2.0.5 Mem0 converts them
    (Chroma 1/(1+d), pgvector max(0, 1-d)). Every other backend, and every version
    memlens cannot read, is taken as a similarity.
    """
    backend_name = (backend or "").strip().lower()
    release = _release(version or "")
    old = release is not None and release < FIRST_SIMILARITY_RELEASE
    if old and backend_name in ("chroma", "chromadb"):
        return ScoreRule(version, backend_name, True, "Chroma L2 distance", "1/(1+d)")
    if old and backend_name == "pgvector":
        return ScoreRule(version, backend_name, True, "pgvector cosine distance", "1 - d")
    return ScoreRule(version, backend_name, False)


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mem0ai")
    except PackageNotFoundError:
        raise StoreUnavailable(
            "Mem0 is not installed: `pip install 'memlens[mem0]'` (the mem0ai package)."
        ) from None


# ------------------------------------------------------------------ shared mapping


def _numbers(mapping: Any) -> dict[str, float]:
    """Every numeric entry of a breakdown dict (booleans and non-finite values left out)."""
    if not isinstance(mapping, dict):
        return {}
    return {
        str(k): float(v)
        for k, v in mapping.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }


# score_details also reports what the score was computed under: the threshold the
# search applied and the divisor of the hybrid score. They are not parts of the score,
# so they go to Hit.metadata["score_settings"], not into the breakdown columns.
SCORE_SETTINGS = ("threshold", "max_possible_score")

_MEMORY_KEYS = {"id", "memory", "score", "score_details", "score_breakdown", "created_at", "user_id", "metadata"}


def _memory_from_item(item: dict[str, Any]) -> Memory:
    metadata = dict(item.get("metadata") or {})
    metadata.update({k: v for k, v in item.items() if k not in _MEMORY_KEYS and v is not None})
    return Memory(
        memory_id=str(item["id"]),
        text=str(item.get("memory") or ""),
        user_id=item.get("user_id"),
        created_at=as_datetime(item.get("created_at")),
        metadata=metadata,
    )


def _results_list(body: Any, where: str) -> list[dict[str, Any]]:
    """The list of memories in a Mem0 answer ({"results": [...]}, or a bare list)."""
    items = body.get("results") if isinstance(body, dict) else body
    if not isinstance(items, list):
        raise BadResponse(f"{where}: expected a list of memories under 'results', got {type(items).__name__}")
    bad = [i for i, item in enumerate(items) if not isinstance(item, dict) or "id" not in item]
    if bad:
        raise BadResponse(f"{where}: result #{bad[0] + 1} is not a memory object with an 'id'")
    return items


def hits_from_search(items: list[dict[str, Any]], rule: ScoreRule | None = None, *, breakdown_key: str) -> list[Hit]:
    """Hits in Mem0's own order; a distance is normalised by `rule`, the raw value kept."""
    hits = []
    for rank, item in enumerate(items, start=1):
        raw = item.get("score")
        raw = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
        memory = _memory_from_item(item)
        breakdown = _numbers(item.get(breakdown_key))
        settings = {name: breakdown.pop(name) for name in SCORE_SETTINGS if name in breakdown}
        metadata = {"user_id": memory.user_id, **memory.metadata}
        if settings:
            metadata["score_settings"] = settings
        hits.append(
            Hit(
                memory_id=memory.memory_id,
                rank=rank,
                text=memory.text,
                score=rule.normalise(raw) if rule else raw,
                raw_score=raw,
                breakdown=breakdown,
                created_at=memory.created_at,
                metadata=metadata,
            )
        )
    return hits


# ------------------------------------------------------------------ library mode


def load_config(config: dict[str, Any] | str | Path) -> dict[str, Any]:
    """A Mem0 config from a dict, or a YAML/JSON file path (the error names the file)."""
    if isinstance(config, dict):
        return dict(config)
    path = Path(config).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidRequest(f"Cannot read the Mem0 config {path}: {exc.strerror or exc}") from exc
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            loaded = yaml.safe_load(text)
        else:
            loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    except Exception as exc:  # yaml.YAMLError carries its own line/column text
        raise InvalidRequest(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(loaded, dict):
        raise InvalidRequest(f"{path}: a Mem0 config must be a mapping, got {type(loaded).__name__}")
    check_store_named(loaded, str(path))
    return loaded


# Vector stores Mem0 would open in a default folder of its own (Qdrant: /tmp/qdrant)
# when the config names none, and the settings that name where the store is.
LOCAL_BACKENDS = {
    "qdrant": ("path", "url", "host", "client"),
    "chroma": ("path", "host", "client", "api_key"),
    "faiss": ("path",),
}


def check_store_named(config: dict[str, Any], source: str) -> None:
    """InvalidRequest unless the config says which vector store to read, and for a
    local backend where: otherwise Mem0 opens (and locks, and creates) its default
    store folder, outside memlens's data directory, for a file that is no Mem0
    config at all."""
    vector_store = config.get("vector_store")
    if not isinstance(vector_store, dict) or not vector_store.get("provider"):
        raise InvalidRequest(
            f"{source}: names no vector_store (with a provider): not a Mem0 config memlens opens, since Mem0 "
            "would open its own default store folder instead"
        )
    provider = str(vector_store["provider"]).lower()
    settings = vector_store.get("config") or {}
    where = LOCAL_BACKENDS.get(provider)
    if where and not (isinstance(settings, dict) and any(settings.get(key) for key in where)):
        raise InvalidRequest(
            f"{source}: vector_store {provider!r} names no {', '.join(where[:-1])} or {where[-1]}: "
            "memlens does not open Mem0's default folder"
        )


def offline_config(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with what a local, read-only inspection needs filled in: the packaged
    MiniLM for a huggingface embedder with no model, 384 dims, a placeholder LLM
    key, and Mem0's history file under memlens's data directory."""
    config = json.loads(json.dumps(config))  # a deep copy we may change
    embedder = config.setdefault("embedder", {"provider": "huggingface", "config": {}})
    embedder_config = embedder.setdefault("config", {}) or {}
    embedder["config"] = embedder_config
    if embedder.get("provider", "huggingface") == "huggingface":
        from connectors import embedding

        packaged = embedding.packaged_model_path()
        if not embedder_config.get("model"):
            embedder_config["model"] = packaged
        if embedder_config["model"] == packaged:
            # Mem0 would size the collection for OpenAI's 1536 dims otherwise.
            embedder_config.setdefault("embedding_dims", embedding.DIMENSIONS)
    vector_store = config.setdefault("vector_store", {})
    vs_config = vector_store.setdefault("config", {}) or {}
    vector_store["config"] = vs_config
    if embedder_config.get("embedding_dims"):
        vs_config.setdefault("embedding_model_dims", embedder_config["embedding_dims"])
    llm = config.setdefault("llm", {"provider": "openai", "config": {}})
    llm_config = llm.setdefault("config", {}) or {}
    llm["config"] = llm_config
    if not llm_config.get("api_key") and not os.environ.get("OPENAI_API_KEY"):
        llm_config["api_key"] = UNUSED_LLM_KEY
    config.setdefault("history_db_path", str(data_dir() / "mem0" / "history.db"))
    return config


def _import_mem0():
    # Telemetry is read when mem0 is first imported: switch it off before that.
    # An inspector must not report its reads anywhere.
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(data_dir() / "mem0"))
    Path(os.environ["MEM0_DIR"]).mkdir(parents=True, exist_ok=True)
    try:
        import mem0
    except ImportError as exc:
        raise StoreUnavailable(
            "Mem0 is not installed: `pip install 'memlens[mem0]'` (the mem0ai package)."
        ) from exc
    return mem0


def call_arguments(method: Callable, user_id: str, count: int, *, search: bool = False) -> dict[str, Any]:
    """Keyword arguments for Memory.search / get_all in the installed Mem0's own
    spelling: 2.x takes ``filters={"user_id": ...}`` and ``top_k``; 1.x and 0.x took
    ``user_id=`` and ``limit``. A search asks for threshold 0 and ``explain`` only
    where the installed version knows them."""
    import inspect

    try:
        accepted = set(inspect.signature(method).parameters)
    except (TypeError, ValueError):
        accepted = {"filters", "top_k", "threshold", "explain"}
    arguments: dict[str, Any] = {}
    if "filters" in accepted and "user_id" not in accepted:
        arguments["filters"] = {"user_id": user_id}
    else:
        arguments["user_id"] = user_id
    arguments["top_k" if "top_k" in accepted or "limit" not in accepted else "limit"] = count
    if search and "threshold" in accepted:
        arguments["threshold"] = 0.0
    if search and "explain" in accepted:
        arguments["explain"] = True
    return arguments


def _default_threshold(memory: Any) -> float | None:
    """The threshold `Memory.search` applies when a caller passes none."""
    import inspect

    try:
        default = inspect.signature(type(memory).search).parameters["threshold"].default
    except (KeyError, TypeError, ValueError):
        return None
    return float(default) if isinstance(default, (int, float)) else None


class Mem0LibraryStore:
    """A ``mem0.Memory`` opened from a config and queried read-only."""

    name = "mem0"
    score_kind = ScoreKind.SIMILARITY

    def __init__(
        self,
        memory: Any,
        *,
        backend: str,
        version: str | None = None,
        app_threshold: float | None = None,
    ):
        self.memory = memory
        self.version = version or installed_version()
        self.rule = score_rule(self.version, backend)
        self.score_kind = ScoreKind.DISTANCE if self.rule.returns_distance else ScoreKind.SIMILARITY
        self.default_threshold = _default_threshold(memory)
        self.app_threshold = app_threshold

    @property
    def backend(self) -> str:
        return self.rule.backend

    @classmethod
    def from_config(cls, config: dict[str, Any] | str | Path, *, app_threshold: float | None = None) -> Mem0LibraryStore:
        prepared = offline_config(load_config(config))
        mem0 = _import_mem0()
        from connectors import mem0_embedding

        # The packaged MiniLM (and any local model ending in Normalize) embeds on
        # memlens's ONNX path, like the embedded store, Qdrant and Chroma.
        swap = mem0_embedding.memlens_embedder if mem0_embedding.can_take_over(prepared.get("embedder") or {}) else nullcontext
        try:
            with swap():
                memory = mem0.Memory.from_config(prepared)
        except ConnectorError:
            raise
        except Exception as exc:  # pydantic validation, a locked Qdrant path, a missing model ...
            raise StoreUnavailable(f"Mem0 could not open this config: {type(exc).__name__}: {exc}") from exc
        backend = str(prepared.get("vector_store", {}).get("provider") or memory.config.vector_store.provider)
        return cls(memory, backend=backend, app_threshold=app_threshold)

    # -------------------------------------------------------------- protocol

    def query(self, text: str, *, user_id: str | None, k: int = 5) -> QueryResult:
        if not text or not text.strip():
            raise InvalidRequest("The query is empty: type the message the agent would query with.")
        if not user_id:
            raise InvalidRequest("Mem0 searches one entity at a time: choose an end user id.")
        if k < 1:
            raise InvalidRequest(f"k must be at least 1, got {k}")
        started = time.perf_counter()
        try:
            body = self.memory.search(text, **call_arguments(type(self.memory).search, user_id, k, search=True))
        except ValueError as exc:
            raise InvalidRequest(f"Mem0 rejected the search: {exc}") from exc
        except Exception as exc:
            raise StoreUnavailable(f"Mem0 search failed: {type(exc).__name__}: {exc}") from exc
        latency_ms = (time.perf_counter() - started) * 1000
        items = _results_list(body, "Mem0 search")
        hits = hits_from_search(items, self.rule, breakdown_key="score_details")
        notes = [n for n in (self.rule.note, self.threshold_note(hits)) if n]
        return QueryResult(
            query=text,
            hits=hits,
            context=context_block(hits),
            latency_ms=latency_ms,
            raw=body,
            notes=notes,
            score_kind=self.score_kind,
            raw_score_kind=self.rule.raw_kind,
        )

    def effective_threshold(self) -> tuple[float | None, str]:
        if self.app_threshold is not None:
            return self.app_threshold, "the threshold configured for your app"
        return self.default_threshold, f"the default of Memory.search in mem0ai {self.version}"

    def threshold_note(self, hits: list[Hit]) -> str | None:
        """Which threshold Mem0 would apply, and what it would hide from these hits.

        memlens queried with threshold 0 so the floor decides. Mem0 gates the
        semantic score (before BM25/entity boosts) on its threshold."""
        threshold, source = self.effective_threshold()
        if threshold is None:
            return None
        if self.rule.returns_distance:
            return (
                f"Mem0 itself would apply threshold {threshold:.2f} ({source}), but on this version and "
                "backend it compares it with a distance: it keeps the farthest memories and hides the closest."
            )
        semantic = [h.breakdown.get("semantic_score", h.raw_score) for h in hits]
        hidden = sum(1 for value in semantic if value is not None and value < threshold)
        return (
            f"Mem0 itself would apply threshold {threshold:.2f} ({source}) to the semantic score; "
            f"memlens queried with 0 so the floor decides. Mem0 would have hidden {hidden} of these "
            f"{len(hits)} hits."
        )

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None:
        try:
            item = self.memory.get(memory_id)
        except Exception as exc:  # a malformed id raises inside the vector store
            if "not found" in str(exc).lower() or isinstance(exc, ValueError):
                return None
            raise StoreUnavailable(f"Mem0 get failed: {type(exc).__name__}: {exc}") from exc
        if not item:
            return None
        memory = _memory_from_item(item)
        if user_id is not None and memory.user_id != user_id:
            return None
        return memory

    def list(self, *, user_id: str | None, limit: int = 100, offset: int = 0) -> list[Memory]:
        if not user_id:
            raise InvalidRequest("Mem0 lists one entity at a time: choose an end user id.")
        try:
            # get_all has no offset: ask for offset+limit and keep the tail.
            body = self.memory.get_all(**call_arguments(type(self.memory).get_all, user_id, offset + limit))
        except ValueError as exc:
            raise InvalidRequest(f"Mem0 rejected the listing: {exc}") from exc
        except Exception as exc:
            raise StoreUnavailable(f"Mem0 get_all failed: {type(exc).__name__}: {exc}") from exc
        return [_memory_from_item(item) for item in _results_list(body, "Mem0 get_all")[offset : offset + limit]]

    # Mem0's write history (connectors.mem0_history): what ADD / UPDATE / DELETE did.
    def history(self, memory_id: str) -> builtins.list[HistoryEvent]:  # `list` here is the method above
        return memory_history(self.memory, memory_id)

    def rewrites(self) -> builtins.list[HistoryEvent]:
        """Every UPDATE and DELETE Mem0 recorded, newest first (any user)."""
        return events_of_kinds(self.memory)

    def close(self) -> None:
        client = getattr(getattr(self.memory, "vector_store", None), "client", None)
        close = getattr(client, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # closing twice, or a client without local files
                pass


def open_library(
    config: dict[str, Any] | str | None = None,
    app_threshold: float | str | None = None,
) -> Mem0LibraryStore:
    """Registry factory: `config` is a dict or a YAML/JSON path (empty: MEMLENS_MEM0_CONFIG)."""
    config = config or os.environ.get("MEMLENS_MEM0_CONFIG")
    if not config:
        raise InvalidRequest("Mem0: give the path of a Mem0 config file (YAML or JSON), or set MEMLENS_MEM0_CONFIG.")
    return Mem0LibraryStore.from_config(config, app_threshold=_optional_threshold(app_threshold))


def _optional_threshold(value: float | str | None) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidRequest(f"threshold: {value!r} is not a number in [0, 1]") from None
    if not 0.0 <= number <= 1.0:
        raise InvalidRequest(f"threshold: {number} is outside [0, 1]")
    return number


# ------------------------------------------------------------------ platform mode


class Mem0PlatformStore:
    """The Mem0 Platform REST API through the shared HTTP boundary
    (connectors/http_base.py), so its errors follow the same rules as every HTTP
    connector's; `client` is injectable (tests pass a MockTransport)."""

    name = "mem0_platform"
    score_kind = ScoreKind.SIMILARITY

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
        from connectors.http_base import HttpBoundary

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
        if not text or not text.strip():
            raise InvalidRequest("The query is empty: type the message the agent would query with.")
        if not user_id:
            raise InvalidRequest("Mem0 Platform searches need an entity id: choose an end user id.")
        if k < 1:
            raise InvalidRequest(f"k must be at least 1, got {k}")
        payload = {
            "query": text,
            "filters": {"user_id": user_id},
            "top_k": int(k),
            "threshold": 0.0,
            "rerank": self.rerank,
        }
        reply = self._send("POST", "/v3/memories/search/", json_body=payload)
        body = reply.body
        hits = hits_from_search(_results_list(body, "Mem0 Platform search"), breakdown_key="score_breakdown")
        threshold = self.app_threshold if self.app_threshold is not None else PLATFORM_DEFAULT_THRESHOLD
        source = "the threshold configured for your app" if self.app_threshold is not None else "the v3 search default"
        hidden = sum(1 for h in hits if h.score is not None and h.score < threshold)
        notes = [
            f"Mem0 Platform itself would apply threshold {threshold:.2f} ({source}); memlens queried with 0 "
            f"so the floor decides. Mem0 would have hidden {hidden} of these {len(hits)} hits."
        ]
        return QueryResult(
            query=text, hits=hits, context=context_block(hits), latency_ms=reply.latency_ms, raw=body, notes=notes
        )

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None:
        from urllib.parse import quote

        try:
            body = self._send("GET", f"/v1/memories/{quote(memory_id, safe='')}/").body
        except NotFound:
            return None
        if not isinstance(body, dict) or "id" not in body:
            raise BadResponse("Mem0 Platform GET memory: the answer is not a memory object")
        memory = _memory_from_item(body)
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
        return [_memory_from_item(item) for item in _results_list(body, "Mem0 Platform list")[skip : skip + limit]]

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
        app_threshold=_optional_threshold(app_threshold),
        client=client,
        typed_address=typed_address,
    )
