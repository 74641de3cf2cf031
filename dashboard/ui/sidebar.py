"""Sidebar widgets shared by the pages: which store, its settings, which user."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import streamlit as st

from connectors.base import ConnectorError, HasDefaultUser, MemoryStore, StoreUnavailable, SupportsUsers
from connectors.registry import (
    REGISTRY,
    ConfigField,
    fingerprint,
    offered_values,
    public_config,
    with_configured_secrets,
)
from dashboard.ui import cache

DEFAULT_STORE = "embedded"


@dataclass
class StoreChoice:
    name: str
    config: dict[str, Any]
    fingerprint: str
    store: MemoryStore | None
    error: str | None

    @property
    def connected(self) -> MemoryStore:
        """The open store, for code that runs once the page has stopped on ``error``;
        a store that failed to open raises StoreUnavailable, a ConnectorError the
        callers already show."""
        if self.store is None:
            raise StoreUnavailable(self.error or f"the {self.name} store is not open")
        return self.store


def secret_value(env_name: str | None) -> str | None:
    """A secret from st.secrets, else the environment; None when neither has it."""
    if not env_name:
        return None
    try:
        if env_name in st.secrets:
            return str(st.secrets[env_name])
    except Exception:  # no secrets.toml at all: that is the common case, not an error
        pass
    return os.environ.get(env_name) or None


def _default(field: ConfigField) -> Any:
    return os.environ.get(field.env) if field.env and os.environ.get(field.env) else field.default


def _configured_secret(store_name: str, field: ConfigField, key_prefix: str) -> str | None:
    """The configured secret, if it may go where the settings now point: a
    visitor who changes the URL does not get the operator's key sent there
    (the registry's with_configured_secrets decides, as it does for the CLI)."""
    configured = secret_value(field.env)
    if not configured or not field.env:
        return None
    spec = REGISTRY[store_name]
    bound = next((f for f in spec.fields if f.name == field.bound_to), None)
    if bound is None:
        st.caption(f"{field.label}: configured (from {field.env})")
        return configured
    # The bound field may be drawn after this one: its widget state holds what the
    # visitor typed (Streamlit stores it before the rerun), else the default.
    current = st.session_state.get(f"{key_prefix}cfg_{store_name}_{bound.name}", _default(bound))
    bound_secret = with_configured_secrets(store_name, {bound.name: current}, os.environ, {field.env: configured})
    if bound_secret.get(field.name):
        st.caption(f"{field.label}: configured (from {field.env}), sent only to this {bound.label}")
        return configured
    st.caption(
        f"The configured {field.label} is sent only to the {bound.label} it was configured with; "
        "enter a key to use another."
    )
    return None


def _field_widget(store_name: str, field: ConfigField, key_prefix: str = "") -> Any:
    # key_prefix lets one page draw two sets of settings (Compare's columns A and B).
    key = f"{key_prefix}cfg_{store_name}_{field.name}"
    if field.kind == "secret":
        configured = _configured_secret(store_name, field, key_prefix)
        if configured:
            return configured
        return st.text_input(field.label, type="password", key=key, help=field.help or None) or None
    if field.kind == "allowed":
        return _allowed_widget(field, key)
    default = _default(field)
    if field.kind == "int":
        return int(st.number_input(field.label, value=int(default or 0), step=1, key=key, help=field.help or None))
    if field.kind == "float":
        return float(st.number_input(field.label, value=float(default or 0.0), key=key, help=field.help or None))
    if field.kind == "bool":
        return st.checkbox(field.label, value=bool(default), key=key, help=field.help or None)
    if field.kind == "choice":
        index = field.choices.index(default) if default in field.choices else 0
        return st.selectbox(field.label, field.choices, index=index, key=key, help=field.help or None)
    return st.text_input(field.label, value=str(default or ""), key=key, help=field.help or None)


def _allowed_widget(field: ConfigField, key: str) -> str:
    """A selectbox of the values the operator allowed. A typed value is accepted by
    the widget only so that the page can say why it is refused (the registry
    refuses it before anything is imported)."""
    cache.operator_settings_loaded()
    offered = list(offered_values(field, os.environ))
    if not offered:
        st.caption(f"{field.label}: none configured; the operator sets {field.env} or {field.allowlist_env}.")
    chosen = st.selectbox(
        field.label, offered, index=0 if offered else None, key=key, help=field.help or None, accept_new_options=True
    )
    return str(chosen or "")


def choose_store(
    container: Any, *, key: str, label: str, settings_label: str, key_prefix: str = "", describe: bool = False
) -> StoreChoice:
    """A store selectbox (widget key `key`; the embedded store until one is chosen),
    the chosen store's settings in an expander (keys prefixed `key_prefix`), and the
    opened store, drawn in `container` (the sidebar, or one of Compare's columns)."""
    names = list(REGISTRY)
    if st.session_state.get(key) not in names:
        st.session_state[key] = DEFAULT_STORE if DEFAULT_STORE in names else names[0]
    name = container.selectbox(label, names, key=key, format_func=lambda n: REGISTRY[n].title if n in REGISTRY else n)
    spec = REGISTRY[name]
    config: dict[str, Any] = {}
    with container.expander(settings_label, expanded=False):
        if describe and spec.description:
            st.caption(spec.description)
        for config_field in spec.fields:
            config[config_field.name] = _field_widget(name, config_field, key_prefix)
    store, error = None, None
    try:
        store = cache.open_store(name, json.dumps(config, sort_keys=True, default=str))
    except ConnectorError as exc:
        error = str(exc)
    return StoreChoice(name, config, fingerprint(name, config), store, error)


def store_picker() -> StoreChoice:
    """The sidebar's `store` selectbox, the chosen store's settings, and the opened store."""
    return choose_store(st.sidebar, key="store", label="Store", settings_label="Store settings", describe=True)


def user_picker(store: MemoryStore | None) -> str | None:
    """The `user` widget: a list when the store can name its users, else free text."""
    users: list[str] = []
    preferred = None
    if isinstance(store, SupportsUsers):
        # Listed once per session and opened store, so a floor move or a label
        # click never reaches the store (for a remote store, a listing is a request).
        memo_key = f"_users_of_store_{id(store)}"
        if memo_key not in st.session_state:
            try:
                st.session_state[memo_key] = (store.users(), store.default_user if isinstance(store, HasDefaultUser) else None)
            except ConnectorError:
                pass  # not remembered: the next rerun tries again
        users, preferred = st.session_state.get(memo_key, ([], None))
        users = list(users)
    if users:
        current = st.session_state.get("user")
        if not current and preferred in users:
            st.session_state["user"] = preferred
        if current and current not in users:
            users = [current, *users]  # a shared link may name a user we cannot list
        return st.sidebar.selectbox("End user", users, key="user")
    return st.sidebar.text_input("End user id", key="user") or None


def safe_config_summary(choice: StoreChoice) -> dict[str, Any]:
    return public_config(choice.name, choice.config)
