"""Mem0, the open-source library (the hosted Platform is connectors/mem0/platform.py).

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
"""

from __future__ import annotations

import builtins
import json
import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from connectors.base import (
    ConnectorError,
    HistoryEvent,
    Hit,
    InvalidRequest,
    Memory,
    QueryResult,
    ScoreKind,
    StoreUnavailable,
    check_query,
)
from connectors.common import inbound
from connectors.common.paths import data_dir
from connectors.common.score_spaces import AS_SENT, ScoreSpace
from connectors.mem0.answers import (
    hits_from_search,
    installed_version,
    memory_from_item,
    optional_threshold,
    results_list,
    score_rule,
)
from connectors.mem0.history import events_of_kinds, memory_history
from connectors.mem0.model_clients import bound_model_clients, failure_text, model_secrets

# An LLM client is built when a Memory is constructed even though infer=False
# never calls it; it needs some key string, and this one can never authenticate.
UNUSED_LLM_KEY = "memlens-no-llm-calls"


# ------------------------------------------------------------------ library mode


def load_config(config: dict[str, Any] | str | Path) -> dict[str, Any]:
    """A Mem0 config from a dict, or a YAML/JSON file path (the error names the file)."""
    if isinstance(config, dict):
        return dict(config)
    path = Path(config).expanduser()
    try:
        text = inbound.read_small(path, "Mem0 config").decode("utf-8")
    except inbound.InboundError as exc:
        raise InvalidRequest(f"Cannot read the Mem0 config: {exc}") from None
    except UnicodeDecodeError as exc:
        raise InvalidRequest(f"Cannot read the Mem0 config {path}: {exc}") from exc
    try:
        # the inbound boundary's loaders: no YAML aliases, bounded nesting and numbers
        if path.suffix.lower() in (".yaml", ".yml"):
            loaded = inbound.load_yaml(text, str(path))
        else:
            loaded = inbound.load_json(text, str(path))
    except inbound.InboundError as exc:
        raise InvalidRequest(str(exc)) from None
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
    MiniLM for a huggingface embedder with no model, 384 dims (an ONNX export
    folder's own), a placeholder LLM key, and Mem0's history file under memlens's
    data directory."""
    config = json.loads(json.dumps(config))  # a deep copy we may change
    embedder = config.setdefault("embedder", {"provider": "huggingface", "config": {}})
    embedder_config = embedder.setdefault("config", {}) or {}
    embedder["config"] = embedder_config
    if embedder.get("provider", "huggingface") == "huggingface":
        from connectors.embedding import model_loader as embedding
        from connectors.embedding import onnx_export

        packaged = embedding.packaged_model_path()
        if not embedder_config.get("model"):
            embedder_config["model"] = packaged
        # Mem0 would size the collection for OpenAI's 1536 dims otherwise.
        if embedder_config["model"] == packaged:
            embedder_config.setdefault("embedding_dims", embedding.DIMENSIONS)
        elif isinstance(embedder_config["model"], str) and onnx_export.is_exported(Path(embedder_config["model"])):
            # an ONNX export folder (what a torch-free agent runs) says its own
            embedder_config.setdefault("embedding_dims", onnx_export.dimensions(embedder_config["model"]))
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
    secrets: tuple[str, ...] | builtins.list[str] = ()  # the model keys the Memory holds, for redaction

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

    @property
    def score_space(self) -> ScoreSpace:
        """HasScoreSpace: before Mem0 2.0.5 some backends send a distance, converted by the rule's formula."""
        if self.rule.returns_distance and self.rule.formula:
            return ScoreSpace(self.name, self.rule.formula, self.rule.backend)
        return ScoreSpace(self.name, AS_SENT)

    @classmethod
    def from_config(cls, config: dict[str, Any] | str | Path, *, app_threshold: float | None = None) -> Mem0LibraryStore:
        prepared = offline_config(load_config(config))
        mem0 = _import_mem0()
        from connectors.mem0 import embedding as mem0_embedding

        # The packaged MiniLM (and any local model ending in Normalize) embeds on
        # memlens's ONNX path, like the embedded store, Qdrant and Chroma.
        swap = mem0_embedding.memlens_embedder if mem0_embedding.can_take_over(prepared.get("embedder") or {}) else nullcontext
        secrets = model_secrets(prepared)
        try:
            with swap():
                memory = mem0.Memory.from_config(prepared)
            # Mem0's LLM and embedder send through the outbound boundary, not a client of their own
            bound_model_clients(memory)
        except ConnectorError:
            raise
        except Exception as exc:  # pydantic validation, a locked Qdrant path, a missing model ...
            raise StoreUnavailable(f"Mem0 could not open this config: {failure_text(exc, secrets)}") from exc
        backend = str(prepared.get("vector_store", {}).get("provider") or memory.config.vector_store.provider)
        store = cls(memory, backend=backend, app_threshold=app_threshold)
        store.secrets = model_secrets(prepared, memory)
        return store

    # -------------------------------------------------------------- protocol

    def query(self, text: str, *, user_id: str | None, k: int = 5) -> QueryResult:
        check_query(text, k)
        if not user_id:
            raise InvalidRequest("Mem0 searches one entity at a time: choose an end user id.")
        started = time.perf_counter()
        try:
            body = self.memory.search(text, **call_arguments(type(self.memory).search, user_id, k, search=True))
        except ValueError as exc:
            raise InvalidRequest(f"Mem0 rejected the search: {exc}") from exc
        except Exception as exc:
            raise StoreUnavailable(f"Mem0 search failed: {failure_text(exc, self.secrets)}") from exc
        latency_ms = (time.perf_counter() - started) * 1000
        items = results_list(body, "Mem0 search")
        hits = hits_from_search(items, self.rule, breakdown_key="score_details")
        notes = [n for n in (self.rule.note, self.threshold_note(hits)) if n]
        return QueryResult.listing(
            text, hits, latency_ms=latency_ms, raw=body, notes=notes,
            score_kind=self.score_kind, raw_score_kind=self.rule.raw_kind, score_space=self.score_space,
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
        memory = memory_from_item(item)
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
            raise StoreUnavailable(f"Mem0 get_all failed: {failure_text(exc, self.secrets)}") from exc
        return [memory_from_item(item) for item in results_list(body, "Mem0 get_all")[offset : offset + limit]]

    # Mem0's write history (connectors.mem0.history): what ADD / UPDATE / DELETE did.
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
    return Mem0LibraryStore.from_config(config, app_threshold=optional_threshold(app_threshold))


inbound.register_reader(
    inbound.Reader(
        "Mem0 config", load_config, (InvalidRequest,), ".json",
        {"vector_store": {"provider": "qdrant", "config": {"path": "/tmp/memlens-probe", "embedding_model_dims": 384}}},
        rows=False, qualname=f"{__name__}.load_config",
    )
)
