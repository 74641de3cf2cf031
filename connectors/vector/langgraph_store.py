"""A LangGraph store (``BaseStore``): what LangGraph and LangMem agents read memories from.

The store is built by a small Python function the user names as ``module:function``
(it returns a ``BaseStore`` with an embedding index, e.g. an ``InMemoryStore`` or a
``PostgresStore``), so memlens reads the very store the agent uses, with the agent's
own embedding. Naming the function runs that module, so only the operator names
it: ``MEMLENS_LANGGRAPH_FACTORY`` (environment, or a root-level key of
``.streamlit/secrets.toml``, which Streamlit copies into the environment) and the
comma-separated allowlist ``MEMLENS_LANGGRAPH_FACTORIES``. ``load_factory`` refuses
any other name before importing anything, whoever passes it (the page offers the
allowed ones in a selectbox, but the check is here so no caller can skip it).

Memories live under a namespace; the template (``memories,{user_id}``, or the tuple
form ``("memories", "{user_id}")``) says which one belongs to an end user. A query is
``store.search(namespace, query=..., limit=k)``; each item's ``key`` is the memory id,
its ``score`` the score (the store's similarity, cosine by default: higher is better,
kept as is and as the raw value), and one field of its ``value`` (dotted for nested
keys) the text.
"""

from __future__ import annotations

import ast
import importlib
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from connectors.base import (
    Hit,
    InvalidRequest,
    Memory,
    QueryResult,
    ScoreKind,
    StoreUnavailable,
    as_datetime,
    check_query,
)
from connectors.common.allowed import allowed_values
from connectors.common.failures import call_library
from connectors.common.score_spaces import space_for

USER = "{user_id}"
USERS_SCAN_LIMIT = 10_000
FACTORY_ENV = "MEMLENS_LANGGRAPH_FACTORY"
FACTORIES_ENV = "MEMLENS_LANGGRAPH_FACTORIES"


def parse_namespace(template: str) -> tuple[str, ...]:
    """``memories,{user_id}`` or ``("memories", "{user_id}")`` as a tuple of parts."""
    text = (template or "").strip()
    if text.startswith("("):
        try:
            parts = ast.literal_eval(text)
        except (ValueError, SyntaxError) as exc:
            raise InvalidRequest(f"LangGraph: setting namespace = {template!r} is not a tuple of strings") from exc
        if isinstance(parts, str):
            parts = (parts,)
    else:
        parts = tuple(p.strip() for p in text.split(",") if p.strip())
    if not parts or not all(isinstance(p, str) and p for p in parts):
        raise InvalidRequest(f"LangGraph: setting namespace = {template!r} must name at least one non-empty part")
    return tuple(parts)


def allowed_factories(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The factories the operator allowed, in order: MEMLENS_LANGGRAPH_FACTORY, then
    each of the comma-separated MEMLENS_LANGGRAPH_FACTORIES (duplicates once)."""
    return allowed_values(os.environ if environ is None else environ, FACTORY_ENV, FACTORIES_ENV)


def load_factory(path: str, environ: Mapping[str, str] | None = None) -> Any:
    """Call ``module:function`` and return what it built (the error names the setting).

    Only a factory the operator allowed (``allowed_factories``) is imported: a
    name typed into the page would otherwise import any module and call any
    zero-argument function on the server (``os:abort``)."""
    path = (path or "").strip()
    allowed = allowed_factories(environ)
    if path not in allowed:
        offer = f"allowed here: {', '.join(allowed)}" if allowed else "none is configured"
        raise InvalidRequest(
            f"LangGraph: setting factory = {path[:100]!r} is not a factory the operator allowed ({offer}); "
            f"the server runs only those named in {FACTORY_ENV} or {FACTORIES_ENV}"
        )
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise InvalidRequest(f"LangGraph: setting factory = {path!r} must be module:function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise StoreUnavailable(f"LangGraph: setting factory = {path!r}: cannot import {module_name!r} ({exc})") from exc
    function = getattr(module, attr, None)
    if not callable(function):
        raise InvalidRequest(f"LangGraph: setting factory = {path!r}: {module_name} has no function {attr!r}")
    try:
        return function()
    except Exception as exc:
        raise StoreUnavailable(f"LangGraph: setting factory = {path!r} failed: {type(exc).__name__}: {exc}") from exc


def _field(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


class LangGraphStore:
    """A ``BaseStore`` searched under one namespace per end user, read-only."""

    name = "langgraph"
    score_kind = ScoreKind.SIMILARITY
    score_space = space_for("langgraph")

    def __init__(self, store: Any, *, namespace: str = "memories,{user_id}", text_field: str = "text"):
        try:
            from langgraph.store.base import BaseStore
        except ImportError as exc:
            raise StoreUnavailable("LangGraph is not installed: `pip install 'memlens[langgraph]'`.") from exc
        if not isinstance(store, BaseStore):
            raise InvalidRequest(f"LangGraph: setting factory returned a {type(store).__name__}, not a BaseStore")
        self.store = store
        self.template = parse_namespace(namespace)
        self.text_field = (text_field or "text").strip()
        self._check_index()

    def _check_index(self) -> None:
        """A store whose embedder disagrees with its index's dims ranks nonsense silently."""
        index = getattr(self.store, "index_config", None)
        if not index:
            raise InvalidRequest(
                "LangGraph: the store the factory built has no embedding index (index={'dims': ..., 'embed': ...}), "
                "so it cannot search by meaning"
            )
        # BaseStore wraps the index's `embed` as an Embeddings object in `.embeddings`
        embeddings = getattr(self.store, "embeddings", None)
        if embeddings is None or not hasattr(embeddings, "embed_query"):
            return
        dims = len(self._call("embed a probe", embeddings.embed_query, "probe"))
        if index.get("dims") and dims != index["dims"]:
            raise InvalidRequest(
                f"LangGraph: the store's index says dims={index['dims']} but its embed function returns "
                f"{dims}-dimension vectors: fix the factory's index settings"
            )

    def _namespace(self, user_id: str | None) -> tuple[str, ...]:
        if user_id:
            return tuple(part.replace(USER, user_id) for part in self.template)
        # no user: search every namespace under the fixed part before the user
        fixed = []
        for part in self.template:
            if USER in part:
                break
            fixed.append(part)
        return tuple(fixed)

    def _user_of(self, namespace: tuple[str, ...]) -> str | None:
        for part, actual in zip(self.template, namespace, strict=False):
            if USER in part:
                before, _, after = part.partition(USER)
                if actual.startswith(before) and actual.endswith(after):
                    return actual[len(before) : len(actual) - len(after) if after else None]
        return None

    def _call(self, what: str, fn, *args, **kwargs):
        """Run one call of the store (or its embedder), its failure translated by type
        (connectors/common/failures.py): a store or embedding service that refuses the
        connection is StoreUnavailable, one that does not answer StoreTimeout."""
        return call_library("LangGraph", what, None, fn, *args, **kwargs)

    def _text(self, item: Any) -> str:
        value = _field(item.value, self.text_field)
        if value is None:
            keys = ", ".join(sorted(item.value)) if isinstance(item.value, dict) else type(item.value).__name__
            raise InvalidRequest(
                f"LangGraph: setting text_field = {self.text_field!r}: item {item.key!r} has no such field "
                f"(its value has: {keys})"
            )
        return str(value)

    def _memory(self, item: Any) -> Memory:
        return Memory(
            memory_id=str(item.key),
            text=self._text(item),
            user_id=self._user_of(tuple(item.namespace)),
            created_at=as_datetime(item.created_at) if isinstance(item.created_at, str) else item.created_at,
            metadata={"namespace": list(item.namespace), **(item.value if isinstance(item.value, dict) else {})},
        )

    # -------------------------------------------------------------- protocol

    def query(self, text: str, *, user_id: str | None, k: int = 5) -> QueryResult:
        check_query(text, k)
        namespace = self._namespace(user_id)
        started = time.perf_counter()
        items = self._call("search", self.store.search, namespace, query=text, limit=int(k))
        latency_ms = (time.perf_counter() - started) * 1000
        hits = []
        for rank, item in enumerate(items, 1):
            memory = self._memory(item)
            score = float(item.score) if item.score is not None else None
            hits.append(
                Hit(
                    memory_id=memory.memory_id,
                    rank=rank,
                    text=memory.text,
                    score=score,
                    raw_score=score,
                    created_at=memory.created_at,
                    metadata={**memory.metadata, "user_id": memory.user_id},
                )
            )
        raw = {
            "namespace": list(namespace),
            "items": [{"key": i.key, "namespace": list(i.namespace), "score": i.score} for i in items],
        }
        return QueryResult.listing(
            text, hits, latency_ms=latency_ms, raw=raw,
            score_kind=ScoreKind.SIMILARITY,
            raw_score_kind="the store's similarity (cosine unless its index says otherwise)",
            score_space=self.score_space,
        )

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None:
        # Only namespaces that exist: InMemoryStore.get creates the namespace it is asked
        # about, and an inspector must not change the store it reads.
        prefix = self._namespace(user_id) if user_id else self._namespace(None)
        namespaces = self._call("list namespaces", self.store.list_namespaces, prefix=prefix, limit=USERS_SCAN_LIMIT)
        for namespace in namespaces:
            if user_id and tuple(namespace) != prefix:
                continue
            item = self._call("get", self.store.get, namespace, memory_id)
            if item is not None:
                return self._memory(item)
        return None

    def users(self) -> list[str]:
        namespaces = self._call("list namespaces", self.store.list_namespaces, prefix=self._namespace(None), limit=USERS_SCAN_LIMIT)
        return sorted({u for ns in namespaces if (u := self._user_of(tuple(ns)))})

    def list(self, *, user_id: str | None, limit: int = 100, offset: int = 0) -> list[Memory]:
        items = self._call("list", self.store.search, self._namespace(user_id), limit=int(limit), offset=int(offset))
        return [self._memory(item) for item in items]

    def close(self) -> None:
        pass  # the factory's store belongs to the user's code


def open_store(factory: str = "", namespace: str = "memories,{user_id}", text_field: str = "text") -> LangGraphStore:
    """Registry factory: build the store with the user's function, then wrap it."""
    return LangGraphStore(load_factory(factory), namespace=namespace, text_field=text_field)


def minilm_embed(texts: Sequence[str]) -> list[list[float]]:
    """The packaged all-MiniLM-L6-v2 as a LangGraph ``embed`` function (unit-length
    vectors, 384 dims): ``InMemoryStore(index={"dims": 384, "embed": minilm_embed})``."""
    from connectors.embedding import model_loader as embedding

    return embedding.encode(list(texts)).tolist()
