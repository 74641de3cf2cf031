"""A store choice and its settings as URL parameters, and back.

A link names the store (``store=embedded``) and each public setting that differs
from the server's default under the setting's own name (``weights=...``,
``half_life_hours=...``), next to the Inspect parameters (query, user, k, floor).
Secrets never go into a link, and a store that takes one (a hosted service with an
API key) is not put into a link at all: opened from a link, its settings could send
the configured key's requests elsewhere, and the page would not reproduce the run
without the key anyway. ``cannot_link`` says so, and the page says which settings
to pick instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from connectors.registry import REGISTRY, ConfigField, StoreSpec

STORE_PARAM = "store"
# The parameters other parts of a link use: no store setting may take their name.
RESERVED = frozenset({"query", "user", "k", "floor", "set", "as_of", STORE_PARAM})
MAX_PARAM_CHARS = 2_000


def _public_fields(spec: StoreSpec) -> list[ConfigField]:
    return [f for f in spec.fields if f.kind != "secret" and f.name not in RESERVED]


def cannot_link(store: str) -> str | None:
    """Why a link cannot carry this store's settings, or None when it can."""
    spec = REGISTRY.get(store)
    if spec is None:
        return f"memlens has no store called {store!r}"
    secrets = [f.label for f in spec.fields if f.kind == "secret"]
    if secrets:
        return f"the {spec.title} store takes a secret ({', '.join(secrets)}), which never goes into a link"
    return None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def store_params(store: str, settings: Mapping[str, Any], defaults: Mapping[str, Any], *, always: bool) -> dict[str, str]:
    """The link parameters for ``store`` with ``settings``: ``store`` and every public
    setting whose text differs from ``defaults`` (what the server opens without
    them). ``always``: name the store even when it and its settings are the
    defaults (a run's link does; the address bar leaves a default store out). Empty
    for a store ``cannot_link`` refuses."""
    spec = REGISTRY.get(store)
    if spec is None or cannot_link(store):
        return {}
    params = {
        f.name: _text(settings.get(f.name))
        for f in _public_fields(spec)
        if f.name in settings and _text(settings.get(f.name)) != _text(defaults.get(f.name))
    }
    if params or always or store != defaults.get(STORE_PARAM):
        return {STORE_PARAM: store, **params}
    return {}


def _parse(field: ConfigField, raw: str) -> Any:
    """The setting a link's text stands for; ValueError says what is wrong."""
    if field.kind == "int":
        text = raw.strip()
        if not (text.lstrip("+-").isdigit() and len(text) < 12):
            raise ValueError("is not a whole number")
        return int(text)
    if field.kind == "float":
        value = float(raw)
        if not math.isfinite(value):
            raise ValueError("is not a finite number")
        return value
    if field.kind == "bool":
        if raw.lower() not in ("true", "false", "1", "0"):
            raise ValueError("is not true or false")
        return raw.lower() in ("true", "1")
    if field.kind == "choice" and raw not in field.choices:
        raise ValueError(f"is not one of {', '.join(field.choices)}")
    return raw


def settings_from_params(params: Mapping[str, str]) -> tuple[str | None, dict[str, Any], list[str]]:
    """(store, the settings the link gives, notes on the parts that cannot be used).

    No ``store`` parameter: (None, {}, []), and the page keeps its own choice. A
    store or setting the link gets wrong is named in a note and left out."""
    store = params.get(STORE_PARAM)
    if not store:
        return None, {}, []
    if store not in REGISTRY:
        known = ", ".join(sorted(REGISTRY))
        return None, {}, [f"The link's store {store[:40]!r} is not one memlens knows ({known}); it was not used."]
    if why := cannot_link(store):
        return None, {}, [f"The link names the {store} store, but {why}: pick it and its settings in the sidebar."]
    settings: dict[str, Any] = {}
    notes: list[str] = []
    for field in _public_fields(REGISTRY[store]):
        if field.name not in params:
            continue
        raw = params[field.name]
        if len(raw) > MAX_PARAM_CHARS:
            notes.append(f"The link's {field.name} is longer than {MAX_PARAM_CHARS:,} characters; it was not used.")
            continue
        try:
            settings[field.name] = _parse(field, raw)
        except ValueError as exc:
            reason = str(exc) if str(exc).startswith("is ") else "is not a number"
            notes.append(f"The link's {field.name} {raw[:40]!r} {reason}; the sidebar's value is used.")
    return store, settings, notes
