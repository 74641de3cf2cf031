"""Sidebar widgets shared by the pages: which store, its settings, which user."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import streamlit as st

from connectors.base import ConnectorError, HasDefaultUser, MemoryStore, StoreUnavailable, SupportsUsers
from connectors.common.score_spaces import store_space
from connectors.common.store_names import store_name
from connectors.embedding import warm_up_in_background
from connectors.registry import (
    REGISTRY,
    ConfigField,
    fingerprint,
    offered_values,
    public_config,
    with_configured_secrets,
)
from dashboard import store_link
from dashboard.display import clip_text, code_span, inert_markdown
from dashboard.ui.widgets import cache, held_controls, session
from dashboard.ui.widgets.secret_lookup import secret_value

DEFAULT_STORE = "embedded"  # without an operator's MEMLENS_DEFAULT_STORE
DEFAULT_STORE_ENV = "MEMLENS_DEFAULT_STORE"
OPENED_SPACES = "_opened_score_spaces"  # fingerprint -> ScoreSpace of each store opened in this session
OPENED_SETTINGS = "_opened_store_settings"  # fingerprint -> (store kind, settings), for ui/widgets/store_names.py


def default_store() -> str:
    """The store a new browser session starts on: the operator's MEMLENS_DEFAULT_STORE
    (environment or .streamlit/secrets.toml) when it names a store memlens knows, else
    the embedded store. A team on Chroma sets it once, instead of every new tab opening
    on the embedded demo and saying its labels were drawn on another store."""
    cache.operator_settings_loaded()
    chosen = (os.environ.get(DEFAULT_STORE_ENV) or "").strip()
    return chosen if chosen in REGISTRY else DEFAULT_STORE


@dataclass
class StoreChoice:
    name: str
    config: dict[str, Any]
    fingerprint: str
    store: MemoryStore | None
    error: str | None

    @property
    def display_name(self) -> str:
        """``Chroma · support_memories (localhost:8000)``: what the page calls this store."""
        return store_name(self.name, public_config(self.name, self.config))

    @property
    def connected(self) -> MemoryStore:
        """The open store, for code that runs once the page has stopped on ``error``;
        a store that failed to open raises StoreUnavailable, a ConnectorError the
        callers already show."""
        if self.store is None:
            raise StoreUnavailable(self.error or f"the {self.name} store is not open")
        return self.store


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
        _caption(f"{field.label}: configured (from {field.env})")
        return configured
    # The bound field may be drawn after this one: its widget state holds what the
    # visitor typed (Streamlit stores it before the rerun), else the default.
    current = st.session_state.get(f"{key_prefix}cfg_{store_name}_{bound.name}", _default(bound))
    bound_secret = with_configured_secrets(store_name, {bound.name: current}, os.environ, {field.env: configured})
    if bound_secret.get(field.name):
        _caption(f"{field.label}: configured (from {field.env}), sent only to this {bound.label}")
        return configured
    _caption(
        f"The configured {field.label} is sent only to the {bound.label} it was configured with; "
        "enter a key to use another."
    )
    return None


def _caption(text: str) -> None:
    """A note beside a setting's widget: drawn with the widgets, not without them."""
    if not held_controls.holding():
        st.caption(inert_markdown(text))  # labels, variable names and descriptions hold `_` and `.`



def _field_widget(store_name: str, field: ConfigField, key_prefix: str = "") -> Any:
    # key_prefix lets one page draw two sets of settings (Compare's columns A and B).
    key = f"{key_prefix}cfg_{store_name}_{field.name}"
    if field.kind == "secret":
        configured = _configured_secret(store_name, field, key_prefix)
        if configured:
            return configured
        session.seed(key, "")
        typed = held_controls.drawn(st.text_input)(field.label, type="password", key=key, help=field.help or None)
        session.keep(key, typed)
        return typed or None
    if field.kind == "allowed":
        chosen = _allowed_widget(field, key)
        session.keep(key, chosen)
        return chosen
    # The value comes from the session (what was set on any page), else the default:
    # the widgets take no value= of their own, which would win on another page.
    session.seed(key, _seed_value(field))
    help_text = field.help or None
    if field.kind == "int":
        value: Any = int(held_controls.drawn(st.number_input)(field.label, step=1, key=key, help=help_text))
    elif field.kind == "float":
        value = float(held_controls.drawn(st.number_input)(field.label, key=key, help=help_text))
    elif field.kind == "bool":
        value = held_controls.drawn(st.checkbox)(field.label, key=key, help=help_text)
    elif field.kind == "choice":
        value = held_controls.drawn(st.selectbox)(field.label, field.choices, key=key, help=help_text)
    else:
        value = held_controls.drawn(st.text_input)(field.label, key=key, help=help_text)
    session.keep(key, value)
    return value


def _seed_value(field: ConfigField) -> Any:
    """The widget value of a setting nobody has set: the server's default, as the
    widget kind holds it."""
    default = _default(field)
    if field.kind == "int":
        return int(default or 0)
    if field.kind == "float":
        return float(default or 0.0)
    if field.kind == "bool":
        return bool(default)
    if field.kind == "choice":
        return default if default in field.choices else field.choices[0]
    return str(default or "")


def open_with_settings(store_name: str, config: dict[str, Any]) -> MemoryStore:
    """The store opened with `config`, through the cache. The settings' text is the
    cache's key, so it is written here only: start-up (ui/widgets/start_up.py) and the sidebar
    must hit the same entry."""
    return cache.open_store(store_name, json.dumps(config, sort_keys=True, default=str))


def first_visit_settings(store_name: str) -> dict[str, Any] | None:
    """The settings `choose_store` opens `store_name` with for a visitor who has set
    none: each field's server default, as its widget returns it. None when a field is
    a secret or an operator's list, whose value depends on the visitor's session.
    Start-up opens the default store with these (ui/widgets/start_up.py)."""
    cache.operator_settings_loaded()  # defaults may come from .streamlit/secrets.toml
    fields = REGISTRY[store_name].fields
    if any(field.kind in ("secret", "allowed") for field in fields):
        return None
    return {field.name: _seed_value(field) for field in fields}


def _allowed_widget(field: ConfigField, key: str) -> str:
    """A selectbox of the values the operator allowed. A typed value is accepted by
    the widget only so that the page can say why it is refused (the registry
    refuses it before anything is imported)."""
    cache.operator_settings_loaded()
    offered = list(offered_values(field, os.environ))
    if not offered:
        _caption(f"{field.label}: none configured; the operator sets {field.env} or {field.allowlist_env}.")
    chosen = held_controls.drawn(st.selectbox)(
        field.label, offered, index=0 if offered else None, key=key, help=field.help or None, accept_new_options=True
    )
    return str(chosen or "")


def choose_store(
    container: Any, *, key: str, label: str, settings_label: str, key_prefix: str = "", describe: bool = False
) -> StoreChoice:
    """A store selectbox (widget key `key`; the embedded store until one is chosen),
    the chosen store's settings in an expander (keys prefixed `key_prefix`), and the
    opened store, drawn in `container` (the sidebar, or one of Compare's columns).
    The choice and the settings are the browser session's (see ui/widgets/session.py): set
    on one page, every page that draws them shows them."""
    names = list(REGISTRY)
    first = default_store()
    session.seed(key, first if first in names else names[0])
    if st.session_state.get(key) not in names:
        st.session_state[key] = first if first in names else names[0]
    name = held_controls.drawn(container.selectbox)(
        label, names, key=key, format_func=lambda n: REGISTRY[n].title if n in REGISTRY else n
    )
    session.keep(key, name)
    spec = REGISTRY[name]
    config: dict[str, Any] = {}
    with held_controls.section(container.expander, settings_label, expanded=False):
        if describe and spec.description:
            _caption(spec.description)
        for config_field in spec.fields:
            config[config_field.name] = _field_widget(name, config_field, key_prefix)
    store, error = None, None
    try:
        store = open_with_settings(name, config)
    except ConnectorError as exc:
        error = str(exc)
    choice = StoreChoice(name, config, fingerprint(name, config), store, error)
    if store is not None:
        # Calibrate's floor JSON names the score space of the store its labels came
        # from; a label row carries the store's fingerprint only, so remember each
        # opened store's space by it.
        st.session_state.setdefault(OPENED_SPACES, {})[choice.fingerprint] = store_space(store)
        st.session_state.setdefault(OPENED_SETTINGS, {})[choice.fingerprint] = (name, public_config(name, config))
    # A person's name for the store, beside the id that labels and runs carry.
    if not held_controls.holding():
        container.caption(f"{inert_markdown(choice.display_name)} · id {code_span(choice.fingerprint)}")
    return choice


STORE_KEY = "store"


def _restore_store_from_url() -> None:
    """Once per browser session: the store and settings a link names (see
    dashboard/store_link.py), written where the sidebar's widgets read them; the
    parts of the link that cannot be used are said on the page."""
    if not session.first_run("store_link"):
        return
    store, settings, notes = store_link.settings_from_params(st.query_params.to_dict())
    if store is not None:
        session.set_widget(STORE_KEY, store)
        for name, value in settings.items():
            session.set_widget(f"cfg_{store}_{name}", value)
    session.remember("store_link_notes", notes)


def store_picker(*, keep_notes: bool = False) -> StoreChoice:
    """The sidebar's `store` selectbox, the chosen store's settings, and the opened store.

    What the page says about a link's store settings is said once, or again on the
    next run with `keep_notes` (Inspect's first view of a link, which the full page
    replaces a moment later)."""
    _restore_store_from_url()
    choice = choose_store(st.sidebar, key=STORE_KEY, label="Store", settings_label="Store settings", describe=True)
    for note in session.notes_to_say("store_link_notes", again_next_run=keep_notes):
        st.warning(inert_markdown(note))  # it quotes the link's own text
    return choice


def server_settings(store: str) -> dict[str, Any]:
    """The public settings `store` opens with where nobody has set any: each field's
    server default (the operator's environment), as its widget holds it."""
    return {f.name: _seed_value(f) for f in REGISTRY[store].fields if f.kind != "secret"}


def _server_defaults(store: str) -> dict[str, Any]:
    return {STORE_KEY: default_store(), **server_settings(store)}


def store_url_params(choice: StoreChoice) -> dict[str, str]:
    """The address bar's form of the chosen store and its settings: what differs
    from the server's defaults (nothing for the default store as it opens)."""
    if choice.name not in REGISTRY:
        return {}
    return store_link.store_params(choice.name, choice.config, _server_defaults(choice.name), always=False)


def run_link_params(store: str, settings: dict[str, Any]) -> dict[str, str]:
    """The link form of the store and settings a run was made with (its public
    settings); empty when ``store_link.cannot_link`` refuses the store."""
    if store not in REGISTRY:
        return {}
    return store_link.store_params(store, settings, _server_defaults(store), always=True)


def set_store_setting(store: str, field: str, value: Any) -> None:
    """Set one of a store's sidebar settings from code (Quality's "Use ... weights"):
    every page's sidebar shows it from the next run on."""
    session.set_widget(f"cfg_{store}_{field}", value)


def warm_model(store_name: str) -> None:
    """Start opening the packaged embedding model, on a thread of its own and once per
    process, when the store named `store_name` uses it; an unknown name does nothing."""
    if uses_packaged_model(store_name):
        warm_up_in_background()


def uses_packaged_model(store_name: str) -> bool:
    """Whether the store named `store_name` embeds its queries with the packaged
    model; False for an unknown name."""
    spec = REGISTRY.get(store_name)
    return spec is not None and spec.local_model


def store_users(store: MemoryStore | None) -> list[str] | None:
    """The users the store can list, or None when it cannot (or the listing
    failed). Listed once per session and opened store, so a floor move or a label
    click never reaches the store (for a remote store, a listing is a request)."""
    if not isinstance(store, SupportsUsers):
        return None
    memo_key = f"_users_of_store_{id(store)}"
    if memo_key not in st.session_state:
        try:
            st.session_state[memo_key] = (store.users(), store.default_user if isinstance(store, HasDefaultUser) else None)
        except ConnectorError:
            return None  # not remembered: the next rerun tries again
    return list(st.session_state[memo_key][0])


def user_picker(store: MemoryStore | None) -> str | None:
    """The `user` widget: a list when the store can name its users, else free text.

    A user the store does not hold (a link's `user=nobody`) is not added to the
    list: the page says so, names the users it does hold, and picks one of them."""
    users = store_users(store) or []
    if users:
        preferred = st.session_state[f"_users_of_store_{id(store)}"][1]
        fallback = preferred if preferred in users else users[0]
        session.seed("user", fallback)
        current = st.session_state.get("user")
        if current and current not in users:
            # what the warning names (the page draws it on later runs too), and the user shown instead
            session.remember("unknown_user", ((current, users[:MAX_USERS_NAMED], len(users)), fallback))
            current = None
        if not current:
            st.session_state["user"] = fallback
        user: str | None = held_controls.drawn(st.sidebar.selectbox)("End user", users, key="user")
        # Said until another user is picked, not only on the run that replaced it.
        note = session.recall("unknown_user")
        if note and note[1] == user:
            asked, named, count = note[0]
            st.warning(_unknown_user_text(asked, named, count, note[1]))
        elif note:
            session.remember("unknown_user", None)
    else:
        session.seed("user", "")
        user = held_controls.drawn(st.sidebar.text_input)("End user id", key="user") or None
    session.keep("user", user or "")
    return user


MAX_USERS_NAMED = 10


def missing_users_warning(store: MemoryStore | None, asked: list[str | None]) -> str | None:
    """What to say before questions are run for users the store does not hold
    (their questions can only come back empty), or None when it holds them all or
    cannot list its users."""
    held = store_users(store)
    if held is None:
        return None
    from dashboard.evaluation.judged_sets import users_missing  # not before the first paint (navigation.py)

    missing = users_missing(asked, held)
    if not missing:
        return None
    asked_users = {user for user in asked if user}
    shown = ", ".join(missing[:MAX_USERS_NAMED]) + (f" and {len(missing) - MAX_USERS_NAMED:,} more" if len(missing) > MAX_USERS_NAMED else "")
    said = (
        f"This store holds none of the {len(asked_users):,} user(s) these questions are asked for "
        f"({inert_markdown(shown)}); it holds {len(held):,} other user(s). "
        if len(missing) == len(asked_users)
        else f"This store does not hold {len(missing):,} of the {len(asked_users):,} users these questions are "
        f"asked for: {inert_markdown(shown)}. "
    )
    return (
        said
        + "Their questions can only come back empty and would count as misses: is this the store the set was made for?"
    )


def _unknown_user_text(user: str, named: list[str], count: int, fallback: str) -> str:
    """`named`: the store's first users, `count`: how many it holds."""
    shown = ", ".join(named[:MAX_USERS_NAMED])
    more = f" and {count - MAX_USERS_NAMED:,} more" if count > MAX_USERS_NAMED else ""
    return (
        f"The user {inert_markdown(repr(clip_text(user, 40)[0]))} is not in this store, which holds "
        f"{count:,} user(s): {inert_markdown(shown)}{more}. Showing {inert_markdown(fallback)} instead; "
        "pick a user in the sidebar."
    )
