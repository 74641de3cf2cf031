"""Every store memlens can open, registered in this one place.

Factories are "module:callable" strings so that listing the stores imports no
connector module (and no ML stack): a page can paint before any store is opened.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connectors.base import InvalidRequest, MemoryStore, StoreUnavailable
from connectors.common.allowed import allowed_path, allowed_values, destination, path_roots
from connectors.common.typed_address import guarded_store


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
            ConfigField("base_url", "Base URL", "text", env="MEMORYSYNC_BASE_URL", default="", address=True),
            ConfigField("api_key", "API key", "secret", env="MEMORYSYNC_API_KEY", bound_to="base_url"),
            ConfigField(
                "end_user_id",
                "Default end user id",
                "text",
                env="MEMORYSYNC_END_USER_ID",
                default="",
                help="Sent as X-End-User-ID when no end user is chosen; API keys require one.",
            ),
            ConfigField("project_id", "Project id (optional)", "text", env="MEMORYSYNC_PROJECT_ID", default=""),
            ConfigField("timeout", "Timeout (seconds)", "float", env="MEMORYSYNC_TIMEOUT", default=10.0),
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
            ConfigField(
                "api_key", "API key (if the file has [auth])", "secret", env="MEMLENS_HTTP_JSON_API_KEY",
                bound_to="config_path",
            ),
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
            ConfigField(
                "app_threshold",
                "Threshold your app passes (empty: Mem0's default)",
                "text",
                env="MEMLENS_MEM0_THRESHOLD",
                default="",
            ),
        ),
    ),

    StoreSpec(
        name="mem0_platform",
        title="Mem0 Platform (hosted, REST)",
        factory="connectors.mem0.platform:open_platform",
        description="The Mem0 Platform v3 search API; each hit's score_breakdown is shown.",
        fields=(
            ConfigField("api_key", "API key", "secret", env="MEM0_API_KEY", bound_to="base_url"),
            ConfigField(
                "base_url", "Base URL", "text", env="MEMLENS_MEM0_URL", default="https://api.mem0.ai", address=True
            ),
            ConfigField("timeout", "Timeout (seconds)", "float", default=10.0),
            ConfigField("rerank", "Rerank", "bool", default=False),
            ConfigField(
                "app_threshold",
                "Threshold your app passes (empty: the v3 default, 0.1)",
                "text",
                env="MEMLENS_MEM0_THRESHOLD",
                default="",
            ),
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
            ConfigField("path", "Local folder (or leave empty and give a URL)", "path", env="MEMLENS_QDRANT_PATH", default=""),
            ConfigField("url", "Server URL", "text", env="MEMLENS_QDRANT_URL", default="", address=True),
            ConfigField("api_key", "API key (server only)", "secret", env="QDRANT_API_KEY", bound_to="url"),
            ConfigField("collection", "Collection", "text", env="MEMLENS_QDRANT_COLLECTION", default="memories"),
            ConfigField("vector_name", "Named vector (if the collection has several)", "text", default=""),
            ConfigField("id_field", "Payload key of the memory id (empty: point id)", "text", env="MEMLENS_QDRANT_ID_FIELD", default=""),
            ConfigField("text_field", "Payload key of the text", "text", default="text"),
            ConfigField("created_at_field", "Payload key of created_at", "text", default="created_at"),
            ConfigField("user_field", "Payload key of the user id", "text", default="user_id"),
            ConfigField("model", "Embedding model (empty: packaged all-MiniLM-L6-v2)", "text", default=""),
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
            ConfigField("path", "Persistent folder (or leave empty and give a URL)", "path", env="MEMLENS_CHROMA_PATH", default=""),
            ConfigField("url", "Server URL", "text", env="MEMLENS_CHROMA_URL", default="", address=True),
            ConfigField("collection", "Collection", "text", env="MEMLENS_CHROMA_COLLECTION", default="memories"),
            ConfigField("id_field", "Metadata key of the memory id (empty: Chroma id)", "text", default=""),
            ConfigField("text_field", "Metadata key of the text (document: the document)", "text", default="document"),
            ConfigField("created_at_field", "Metadata key of created_at", "text", default="created_at"),
            ConfigField("user_field", "Metadata key of the user id", "text", default="user_id"),
            ConfigField("model", "Embedding model (empty: packaged all-MiniLM-L6-v2)", "text", default=""),
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
            ConfigField("model", "Embedding model (empty: packaged all-MiniLM-L6-v2)", "text", default=""),
            ConfigField("timeout", "Statement timeout (seconds)", "float", default=10.0),
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
            ConfigField("path", "Database folder", "path", env="MEMLENS_LANCEDB_PATH", default=""),
            ConfigField("table", "Table", "text", env="MEMLENS_LANCEDB_TABLE", default="memories"),
            ConfigField("id_column", "Id column", "text", default="id"),
            ConfigField("text_column", "Text column", "text", default="text"),
            ConfigField("vector_column", "Vector column", "text", default="vector"),
            ConfigField("user_column", "User id column (empty: none)", "text", default="user_id"),
            ConfigField("created_at_column", "created_at column (empty: none)", "text", default="created_at"),
            ConfigField("distance_type", "Distance type", "choice", default="cosine", choices=("cosine", "l2", "dot"),
                        help="the one the table's vector index was built with"),
            ConfigField("model", "Embedding model (empty: packaged all-MiniLM-L6-v2)", "text", default=""),
        ),
    ),
]
REGISTRY: dict[str, StoreSpec] = {spec.name: spec for spec in STORES}


def create_store(
    name: str, config: dict[str, Any] | None = None, *, visitor_environ: Mapping[str, str] | None = None
) -> MemoryStore:
    """Open a store by registry name; unknown names raise ``StoreUnavailable``.

    ``visitor_environ``: the settings were typed by a page's visitor, so they are
    checked against what the operator allowed in that environment first
    (``check_visitor_settings``); the CLI's settings come from the operator."""
    try:
        spec = REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise StoreUnavailable(f"Unknown store {name!r}; known stores: {known}") from None
    config = dict(config or {})
    if visitor_environ is not None:
        config = check_visitor_settings(name, config, visitor_environ)
    factory = spec.load_factory()
    if config.get("typed_address") and not _takes_typed_address(factory):
        # A store reached through a client library: its failures are made one message here.
        del config["typed_address"]
        return guarded_store(spec.title, lambda: factory(**config))
    return factory(**config)


def _takes_typed_address(factory: Callable[..., Any]) -> bool:
    """Whether the factory makes a typed address's failures one message itself (the
    HTTP connectors do, in their request path; their factories pass **options on)."""
    parameters = inspect.signature(factory).parameters.values()
    return any(p.name == "typed_address" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


# ------------------------------------------------------------------ what a visitor may name


def offered_values(field: ConfigField, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values an "allowed" field may take: the ones the operator configured."""
    return allowed_values(environ, field.env or "", field.allowlist_env or "")


def operator_value(field: ConfigField, environ: Mapping[str, str]) -> Any:
    """The field's value as the operator configured it: its environment variable,
    else its default (what the settings widget starts from)."""
    return (environ.get(field.env) if field.env else None) or field.default


def path_setting_envs() -> tuple[str, ...]:
    """The environment variables in which the operator configures a store path."""
    return tuple(f.env for spec in STORES for f in spec.fields if f.kind == "path" and f.env)


def check_visitor_settings(name: str, config: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """``config`` with every path setting resolved, when each names a place under
    a directory the operator allowed (connectors/common/allowed.py decides) and each
    "allowed" setting is one the operator listed; else InvalidRequest naming the
    setting. Nothing is opened, imported or created before this passes. An
    ``address`` the visitor typed (not where the operator's settings point) is
    marked ``typed_address`` for the store's factory."""
    spec = REGISTRY[name]
    checked = dict(config)
    roots = path_roots(environ, path_setting_envs())
    for field in spec.fields:
        value = config.get(field.name)
        if field.address and value and destination(value) != destination(operator_value(field, environ)):
            checked["typed_address"] = True
        if field.kind == "path" and isinstance(value, str) and value.strip():
            checked[field.name] = str(allowed_path(value, field.name, roots))
        elif field.kind == "allowed" and (value or "") not in offered_values(field, environ):
            offered = offered_values(field, environ)
            raise InvalidRequest(
                f"{spec.title}: setting {field.name} = {str(value)[:100]!r} is not one the operator allowed "
                f"({', '.join(offered) if offered else f'none is configured: set {field.env}'})"
            )
    return checked


def public_config(name: str, config: dict[str, Any]) -> dict[str, Any]:
    """The config with every secret field removed: safe to show, log or hash."""
    spec = REGISTRY.get(name)
    secret = {f.name for f in spec.fields if f.kind == "secret"} if spec else set()
    return {k: v for k, v in sorted(config.items()) if k not in secret}


# Settings of a run rather than of the store: the time an embedded store ranks at
# (``as_of``) changes scores, not which store it is, so it is not in the fingerprint.
RUN_SETTINGS = ("as_of",)


def _canonical_value(field: ConfigField, value: Any) -> Any:
    if value is None:
        return None
    try:
        if field.kind == "path":
            text = str(value).strip()
            return str(Path(text).expanduser().resolve()) if text else ""
        if field.kind == "float":
            return float(value)
        if field.kind == "int":
            return int(value)
        if field.kind == "bool":
            return bool(value)
    except (TypeError, ValueError):
        return value
    if field.canonical and isinstance(value, str):
        canonical = load_target(field.canonical)(value)
        return value.strip() if canonical is None else canonical
    return value.strip() if isinstance(value, str) else value


def canonical_config(name: str, config: dict[str, Any]) -> dict[str, Any]:
    """The store's public settings in one form, whoever gathered them: every field of
    the store's spec (a missing one at its default), a path absolute, a number a
    number, a value with a ``canonical`` form in it (the embedded weights); settings
    the spec does not name are kept as given. No secret, no run setting."""
    spec = REGISTRY.get(name)
    public = {k: v for k, v in public_config(name, config).items() if k not in RUN_SETTINGS}
    for field in spec.fields if spec else ():
        if field.kind != "secret":
            public[field.name] = _canonical_value(field, public.get(field.name, field.default))
    return dict(sorted(public.items()))


def fingerprint(name: str, config: dict[str, Any]) -> str:
    """`name:hash` of the store's canonical public settings: labels and runs say which
    store they judged, and the page and the CLI give the same settings the same one."""
    blob = json.dumps(canonical_config(name, config), sort_keys=True, default=str)
    return f"{name}:{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


# ------------------------------------------------------------------ the embedded store's files
# The demo generators and `memlens import` need the embedded store itself, not a
# store chosen by name; they open it here so that no domain module imports a store.


def open_demo_store(directory: str | Path | None = None, **options: Any) -> Any:
    """The bundled demo memories in `<directory or data dir>/demo.sqlite` (an
    EmbeddedStore), imported on first open and again only when the file changes."""
    return load_target("connectors.embedded.factories:open_demo_store")(directory, **options)


def open_embedded_file(path: str | Path, **options: Any) -> Any:
    """An EmbeddedStore on `path`, created when missing: the target of an import."""
    return load_target("connectors.embedded.store:EmbeddedStore")(path, **options)


# Stores whose write path `memlens write-audit` replays messages into: the module
# with ``audit_config(path)`` and ``replay(config, infer, messages, folder)``.
WRITE_AUDIT_MODULES = {"mem0": "connectors.mem0.replay"}


def write_audit(store: str, name: str) -> Callable[..., Any]:
    """The write-audit function `name` (audit_config or replay) for `store`."""
    return load_target(f"{WRITE_AUDIT_MODULES[store]}:{name}")


# ------------------------------------------------------------------ secrets bound to a host


def _bound_field(spec: StoreSpec, secret: ConfigField) -> ConfigField | None:
    return next((f for f in spec.fields if f.name == secret.bound_to), None)


def configured_destination(spec: StoreSpec, secret: ConfigField, environ: Mapping[str, str]) -> str | None:
    """The destination a configured secret belongs with: its ``bound_to`` field's
    value from the environment, else that field's default; None for an unbound secret."""
    bound = _bound_field(spec, secret)
    return None if bound is None else destination(operator_value(bound, environ))


def configured_secret_allowed(
    spec: StoreSpec, secret: ConfigField, current_value: Any, environ: Mapping[str, str]
) -> bool:
    """May the secret configured in the environment or st.secrets be sent with the
    ``bound_to`` field set to ``current_value``? Only when it points where the
    operator configured it; a secret with no ``bound_to`` field goes anywhere."""
    if secret.bound_to is None:
        return True
    return destination(current_value) == configured_destination(spec, secret, environ)


def bound_value(spec: StoreSpec, secret: ConfigField, config: Mapping[str, Any], environ: Mapping[str, str]) -> Any:
    """Where the settings in ``config`` send ``secret``: its ``bound_to`` setting as
    given there, else what the store is opened with when it is not given (the
    operator's value)."""
    bound = _bound_field(spec, secret)
    if bound is None:
        return None
    given = config.get(bound.name)
    return given if given not in (None, "") else operator_value(bound, environ)


def with_configured_secrets(
    name: str, config: Mapping[str, Any], environ: Mapping[str, str], configured: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``config`` with each secret the operator configured (``configured``, keyed by
    environment variable; default ``environ``) filled in, only where the settings
    send it to the host it was configured with (``configured_secret_allowed``, the
    rule the app's settings widgets apply too). A secret given in ``config`` itself
    is the caller's own and is kept."""
    spec = REGISTRY.get(name)
    configured = environ if configured is None else configured
    full = dict(config)
    if spec is None:
        return full
    for secret in spec.fields:
        if secret.kind != "secret" or not secret.env or not configured.get(secret.env) or full.get(secret.name):
            continue
        if configured_secret_allowed(spec, secret, bound_value(spec, secret, full, environ), environ):
            full[secret.name] = configured[secret.env]
    return full
