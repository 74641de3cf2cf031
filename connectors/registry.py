"""Every store memlens can open, opened, checked and fingerprinted in this one place.

The stores and their settings are declared in connectors/catalog.py (names kept here
for every caller: ConfigField, StoreSpec, STORES, REGISTRY); this module opens a store
by name, checks what a page's visitor typed, fingerprints the settings and fills in
the operator's secrets only where they belong.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from connectors.base import InvalidRequest, MemoryStore, StoreUnavailable
from connectors.catalog import REGISTRY, STORES, ConfigField, StoreSpec, load_target
from connectors.common.allowed import allowed_path, allowed_values, destination, path_roots
from connectors.common.typed_address import guarded_store


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
