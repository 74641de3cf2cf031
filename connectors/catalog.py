"""The stores memlens can open and the settings each one takes, declared once.

A setting several stores share (a server URL, its API key, the collection, the
embedding model, the payload keys, a timeout, the threshold an app passes) is built
by one function here, so its label, kind and default are written in one place; the
registry (connectors/registry.py) opens, checks and fingerprints stores from this list.

Factories are "module:callable" strings so that listing the stores imports no
connector module (and no ML stack): a page can paint before any store is opened.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connectors.base import MemoryStore


@dataclass(frozen=True)
class ConfigField:
    """One setting a store needs; the sidebar draws a widget per field.

    kind: "text" | "secret" | "int" | "float" | "path" | "choice" | "bool" | "allowed".
    A "path" names a file or folder on the server: a visitor's value must lie
    under a directory the operator allowed (``check_visitor_settings``). An
    "allowed" value is one the operator listed (``env`` plus the comma-separated
    ``allowlist_env``, see ``offered_values``): code to import, never typed text.
    A "secret" is read from ``env`` (or st.secrets under the same name) and is
    never part of the fingerprint, a URL, a log line or an export. ``bound_to``
    names the field (a URL, or the file that holds one) the configured secret
    belongs with: the secret goes only to that field's configured host, never to
    one a visitor types in (see ``configured_secret_allowed``).
    """

    name: str
    label: str
    kind: str = "text"
    env: str | None = None
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] = ()
    bound_to: str | None = None
    # "module:callable" turning a value into its canonical text for the fingerprint
    # (imported only when a fingerprint is taken); it returns None for a value it cannot read.
    canonical: str | None = None
    allowlist_env: str | None = None
    address: bool = False  # a URL the store is reached at (see check_visitor_settings)


@dataclass(frozen=True)
class StoreSpec:
    name: str  # registry key and the `store` widget's value, e.g. "embedded"
    title: str  # what the sidebar shows
    factory: str  # "module:callable", imported only when the store is opened
    fields: tuple[ConfigField, ...] = ()
    description: str = ""
    local_model: bool = False  # embeds queries with the packaged model: warm it up early
    clock: bool = False  # takes ``as_of``, the time its recency is computed at (an evaluation's clock)

    def load_factory(self) -> Callable[..., MemoryStore]:
        return load_target(self.factory)


def load_target(target: str) -> Callable[..., Any]:
    """The callable a "module:callable" string names, imported now. Only targets
    written in this module (or set by the operator) reach here, never typed text."""
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


# ------------------------------------------------------------------ settings several stores share


def server_url(env: str, label: str = "Server URL", default: str = "", name: str = "url") -> ConfigField:
    """The address of a store's server: a URL a visitor may type (``address``)."""
    return ConfigField(name, label, "text", env=env, default=default, address=True)


def api_key(env: str, bound_to: str, label: str = "API key") -> ConfigField:
    """A key read from the environment, sent only to where ``bound_to`` points."""
    return ConfigField("api_key", label, "secret", env=env, bound_to=bound_to)


def collection(env: str) -> ConfigField:
    return ConfigField("collection", "Collection", "text", env=env, default="memories")


def local_folder(env: str, label: str) -> ConfigField:
    return ConfigField("path", label, "path", env=env, default="")


def embedding_model() -> ConfigField:
    """The model the vectors were built with; empty is the packaged one."""
    return ConfigField("model", "Embedding model (empty: packaged all-MiniLM-L6-v2)", "text", default="")


def timeout(label: str = "Timeout (seconds)", env: str | None = None) -> ConfigField:
    return ConfigField("timeout", label, "float", env=env, default=10.0)


def app_threshold(label: str) -> ConfigField:
    """The threshold the user's app passes to Mem0, shown beside memlens' own floor."""
    return ConfigField("app_threshold", label, "text", env="MEMLENS_MEM0_THRESHOLD", default="")


def payload_keys(where: str, text_default: str, id_env: str | None = None) -> tuple[ConfigField, ...]:
    """Where a vector collection keeps each memory's id, text, time and user:
    ``where`` is "Payload" (Qdrant) or "Metadata" (Chroma)."""
    text_label = f"{where} key of the text" + (" (document: the document)" if text_default == "document" else "")
    own_id = "point id" if where == "Payload" else "Chroma id"
    return (
        ConfigField("id_field", f"{where} key of the memory id (empty: {own_id})", "text", env=id_env, default=""),
        ConfigField("text_field", text_label, "text", default=text_default),
        ConfigField("created_at_field", f"{where} key of created_at", "text", default="created_at"),
        ConfigField("user_field", f"{where} key of the user id", "text", default="user_id"),
    )


# ------------------------------------------------------------------ the stores


STORES: list[StoreSpec] = [
    StoreSpec(
        name="embedded",
        title="Embedded (SQLite + MiniLM)",
        factory="connectors.embedded.factories:open_store",
        local_model=True,
        clock=True,
        description="A local SQLite file of memories with all-MiniLM-L6-v2 embeddings. "
        "Leave the file empty for the bundled demo data.",
        fields=(
            ConfigField("db_path", "SQLite file (empty: demo data)", "path", env="MEMLENS_EMBEDDED_DB", default=""),
            ConfigField(
                "weights",
                "Weights",
                "text",
                default="semantic=0.6,recency=0.15,importance=0.15,usage=0.1",
                help="component=weight pairs; normalised to sum to 1",
                canonical="connectors.embedded.weights:canonical_weights",
            ),
            ConfigField("half_life_hours", "Recency half-life (hours)", "float", default=72.0),
        ),
    ),

    StoreSpec(
        name="memorysync",
        title="MemorySync (hosted, REST)",
        factory="connectors.http.memorysync:open_store",
        description="A hosted MemorySync project, read from its raw responses so each score's "
        "scoring_breakdown is shown. Every query bumps usage counts in production.",
        fields=(
            server_url("MEMORYSYNC_BASE_URL", "Base URL", name="base_url"),
            api_key("MEMORYSYNC_API_KEY", bound_to="base_url"),
            ConfigField(
                "end_user_id",
                "Default end user id",
                "text",
                env="MEMORYSYNC_END_USER_ID",
                default="",
                help="Sent as X-End-User-ID when no end user is chosen; API keys require one.",
            ),
            ConfigField("project_id", "Project id (optional)", "text", env="MEMORYSYNC_PROJECT_ID", default=""),
            timeout(env="MEMORYSYNC_TIMEOUT"),
            ConfigField(
                "max_retries", "Retries on 429 / 5xx", "int", env="MEMORYSYNC_MAX_RETRIES", default=2
            ),
        ),
    ),

    StoreSpec(
        name="http_json",
        title="HTTP JSON service (TOML-described)",
        factory="connectors.http.json_service:open_store",
        description="An in-house memory service described by a small TOML file "
        "(URL, body template, dotted paths to the results); see docs/stores.md.",
        fields=(
            ConfigField("config_path", "Service TOML file", "path", env="MEMLENS_HTTP_JSON_CONFIG", default=""),
            api_key("MEMLENS_HTTP_JSON_API_KEY", bound_to="config_path", label="API key (if the file has [auth])"),
        ),
    ),

    StoreSpec(
        name="mem0",
        title="Mem0 (open-source library)",
        factory="connectors.mem0.library:open_library",
        description="A mem0ai Memory opened from your Mem0 config file, searched with threshold 0 "
        "and explain=True; the page says which threshold Mem0 itself would apply.",
        fields=(
            ConfigField(
                "config",
                "Mem0 config file (YAML or JSON)",
                "path",
                env="MEMLENS_MEM0_CONFIG",
                default="",
                help="The dict you pass to Memory.from_config, saved as a file.",
            ),
            app_threshold("Threshold your app passes (empty: Mem0's default)"),
        ),
    ),

    StoreSpec(
        name="mem0_platform",
        title="Mem0 Platform (hosted, REST)",
        factory="connectors.mem0.platform:open_platform",
        description="The Mem0 Platform v3 search API; each hit's score_breakdown is shown.",
        fields=(
            api_key("MEM0_API_KEY", bound_to="base_url"),
            server_url("MEMLENS_MEM0_URL", "Base URL", default="https://api.mem0.ai", name="base_url"),
            timeout(),
            ConfigField("rerank", "Rerank", "bool", default=False),
            app_threshold("Threshold your app passes (empty: the v3 default, 0.1)"),
        ),
    ),

    StoreSpec(
        name="qdrant",
        title="Qdrant collection",
        factory="connectors.vector.qdrant:open_store",
        local_model=True,
        description="A Qdrant collection (local folder or server URL) queried with the model it was "
        "built with; distances are turned into higher-is-better scores, the raw value kept.",
        fields=(
            local_folder("MEMLENS_QDRANT_PATH", "Local folder (or leave empty and give a URL)"),
            server_url("MEMLENS_QDRANT_URL"),
            api_key("QDRANT_API_KEY", bound_to="url", label="API key (server only)"),
            collection("MEMLENS_QDRANT_COLLECTION"),
            ConfigField("vector_name", "Named vector (if the collection has several)", "text", default=""),
            *payload_keys("Payload", text_default="text", id_env="MEMLENS_QDRANT_ID_FIELD"),
            embedding_model(),
        ),
    ),

    StoreSpec(
        name="chroma",
        title="Chroma collection",
        factory="connectors.vector.chroma:open_store",
        local_model=True,
        description="A Chroma collection (persistent folder or server URL) queried with the model it "
        "was built with; l2 / cosine / ip distances become higher-is-better scores, the raw value kept.",
        fields=(
            local_folder("MEMLENS_CHROMA_PATH", "Persistent folder (or leave empty and give a URL)"),
            server_url("MEMLENS_CHROMA_URL"),
            collection("MEMLENS_CHROMA_COLLECTION"),
            *payload_keys("Metadata", text_default="document"),
            embedding_model(),
        ),
    ),

    StoreSpec(
        name="pgvector",
        title="PostgreSQL + pgvector table",
        factory="connectors.vector.pgvector:open_store",
        local_model=True,
        description="A PostgreSQL table (or view) with a pgvector column, read-only, described by "
        "its columns or a preset (Mem0's pgvector backend, LangGraph's PostgresStore); distances "
        "become higher-is-better scores, the raw value kept.",
        fields=(
            ConfigField("url", "Connection URL", "secret", env="MEMLENS_PGVECTOR_URL"),
            ConfigField(
                "preset",
                "Table layout",
                "choice",
                default="custom",
                choices=("custom", "mem0", "langgraph"),
                help="mem0: Mem0's pgvector backend; langgraph: LangGraph's PostgresStore. "
                "Settings you fill in below override the preset.",
            ),
            ConfigField("table", "Table or view (schema.table)", "text", env="MEMLENS_PGVECTOR_TABLE", default=""),
            ConfigField("id_column", "Id column", "text", default="", help="column, or column.key for a JSONB key"),
            ConfigField("text_column", "Text column", "text", default=""),
            ConfigField("embedding_column", "Embedding column (vector)", "text", default=""),
            ConfigField("user_column", "User column (- for none)", "text", default=""),
            ConfigField("user_value", "User value template", "text", default="", help="e.g. memories.{user_id}"),
            ConfigField("created_at_column", "created_at column (- for none)", "text", default=""),
            ConfigField("metadata_column", "Metadata column, JSONB (- for none)", "text", default=""),
            ConfigField("vector_table", "Separate table of embeddings (optional)", "text", default=""),
            ConfigField("join_columns", "Columns joining the two tables", "text", default=""),
            ConfigField(
                "operator", "Distance operator", "choice", default="<=>", choices=("<=>", "<->", "<#>"),
                help="<=> cosine, <-> L2, <#> negative inner product: the one the table's index uses",
            ),
            embedding_model(),
            timeout("Statement timeout (seconds)"),
        ),
    ),

    StoreSpec(
        name="langgraph",
        title="LangGraph store",
        factory="connectors.vector.langgraph_store:open_store",
        description="A LangGraph BaseStore (InMemoryStore, PostgresStore, ...) built by your own "
        "module:function, searched under one namespace per end user with the store's own embedding.",
        fields=(
            ConfigField(
                "factory", "Store factory (module:function)", "allowed", env="MEMLENS_LANGGRAPH_FACTORY", default="",
                allowlist_env="MEMLENS_LANGGRAPH_FACTORIES",
                help="One of the functions the operator allowed (MEMLENS_LANGGRAPH_FACTORY, "
                "MEMLENS_LANGGRAPH_FACTORIES) that returns the BaseStore your agent reads.",
            ),
            ConfigField("namespace", "Namespace template", "text", default="memories,{user_id}",
                        help='comma-separated, or a tuple: ("memories", "{user_id}")'),
            ConfigField("text_field", "Field of the value holding the text (dotted for nested)", "text", default="text"),
        ),
    ),

    StoreSpec(
        name="lancedb",
        title="LanceDB table",
        factory="connectors.vector.lancedb_store:open_store",
        local_model=True,
        description="A table in a local LanceDB folder queried with the model it was built with; "
        "l2 / cosine / dot distances become higher-is-better scores, the raw value kept.",
        fields=(
            local_folder("MEMLENS_LANCEDB_PATH", "Database folder"),
            ConfigField("table", "Table", "text", env="MEMLENS_LANCEDB_TABLE", default="memories"),
            ConfigField("id_column", "Id column", "text", default="id"),
            ConfigField("text_column", "Text column", "text", default="text"),
            ConfigField("vector_column", "Vector column", "text", default="vector"),
            ConfigField("user_column", "User id column (empty: none)", "text", default="user_id"),
            ConfigField("created_at_column", "created_at column (empty: none)", "text", default="created_at"),
            ConfigField("distance_type", "Distance type", "choice", default="cosine", choices=("cosine", "l2", "dot"),
                        help="the one the table's vector index was built with"),
            embedding_model(),
        ),
    ),
]
REGISTRY: dict[str, StoreSpec] = {spec.name: spec for spec in STORES}
