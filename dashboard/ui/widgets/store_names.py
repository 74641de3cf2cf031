"""A store as a person names it, and its score space, from the fingerprint
(``name:hash``) that labels, sessions and runs carry.

A fingerprint is the machine key (URL parameters, exports and the app database keep
it); the page says ``Chroma · support_memories (localhost:8000)`` instead. The hash
cannot be read back, so the settings behind it are found among the settings this
server knows: the stores opened in this browser session, each store's server
defaults (what a new tab opens with), and the settings saved runs were made with.
Where none matches, the kind is named with the fingerprint beside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import streamlit as st

from connectors.base import ConnectorError
from connectors.common.score_spaces import ScoreSpace, store_space
from connectors.common.store_names import KIND_NAMES, store_name
from connectors.registry import REGISTRY, RUN_SETTINGS, fingerprint
from dashboard.database.model import LabelStoreError
from dashboard.display import inert_markdown
from dashboard.ui.widgets import cache
from dashboard.ui.widgets.sidebar import OPENED_SETTINGS, OPENED_SPACES, open_with_settings, server_settings

if TYPE_CHECKING:
    from dashboard.database.runs import RunInfo

_FOUND = "_store_settings_found"  # fingerprint -> (store kind, settings), once found
_SPACES = "_store_spaces_found"  # fingerprint -> ScoreSpace | None, once asked


def _known_settings(kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Settings of store kind `kind` this server knows, the likeliest first."""
    for name, config in st.session_state.get(OPENED_SETTINGS, {}).values():
        if name == kind:
            yield name, config
    yield kind, server_settings(kind)
    try:
        runs = cache.app_database().runs.all()
    except LabelStoreError:
        return
    for run in reversed(runs):
        if run.store == kind:
            yield run.store, {k: v for k, v in run.settings.items() if k not in RUN_SETTINGS}


def settings_of(store_id: str | None) -> tuple[str, dict[str, Any]] | None:
    """(store kind, settings) whose fingerprint is `store_id`, or None when this
    server knows no such settings."""
    kind = (store_id or "").split(":", 1)[0]
    if kind not in REGISTRY:
        return None
    found = st.session_state.setdefault(_FOUND, {})
    if store_id not in found:
        match = next(((n, c) for n, c in _known_settings(kind) if fingerprint(n, c) == store_id), None)
        if match is None:
            return None  # not remembered: a run saved later may name it
        found[store_id] = match
    return found[store_id]


def name_of(store_id: str | None) -> str:
    """``Chroma · support_memories (localhost:8000)`` for a fingerprint whose settings
    are known; else the kind and the fingerprint, ``Chroma (chroma:1a2b3c4d)``."""
    if not store_id:
        return "an unrecorded store"
    settings = settings_of(store_id)
    if settings is not None:
        return store_name(*settings)
    kind = store_id.split(":", 1)[0]
    return f"{KIND_NAMES.get(kind, kind)} ({store_id})" if kind in KIND_NAMES else store_id


def labels_space(stores: list[str]) -> ScoreSpace | None:
    """The score space of labels from the stores `stores` (their fingerprints): one
    store's, as opened in this session or found from its settings; None (unknown)
    for several stores or one this server cannot name."""
    from dashboard.calibration.report import labels_score_space  # not before the first paint (navigation.py)

    space = labels_score_space(stores, st.session_state.get(OPENED_SPACES))
    return space if space is not None or len(stores) != 1 else space_of(stores[0])


def space_of(store_id: str | None) -> ScoreSpace | None:
    """The score space of the store `store_id` names: as opened in this session,
    else opened now with the settings found for it (Chroma's space is its
    collection's distance setting, read from the collection). None when the
    settings are not known or the store cannot be opened."""
    if not store_id:
        return None
    opened = st.session_state.get(OPENED_SPACES, {})
    if store_id in opened:
        return opened[store_id]
    spaces = st.session_state.setdefault(_SPACES, {})
    if store_id not in spaces:
        settings = settings_of(store_id)
        if settings is None:
            return None
        try:
            spaces[store_id] = store_space(open_with_settings(*settings))
        except ConnectorError:
            spaces[store_id] = None  # said on the page; opening it in the sidebar records its space
    return spaces[store_id]


def run_description(info: RunInfo) -> str:
    """What a run was of, said where its hits are used (Calibrate): its store by name,
    the clock it ranked at, and whether its query text was kept (never exported)."""
    return (
        f"The hits of run {inert_markdown(info.name)}, on {inert_markdown(info.display_name)}, "
        + (f"ranked as of {inert_markdown(info.as_of)}" if info.as_of else "ranked at the run's own time")
        + ("; its query text is kept with the run, not in these exports." if info.keep_text else "; ids and scores only.")
    )
