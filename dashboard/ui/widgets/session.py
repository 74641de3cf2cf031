"""What one browser session carries from page to page.

Streamlit keeps a widget's value only while the page that draws it runs: a widget
on another page is another widget even under the same key (its id includes the
page), and a run that does not draw a widget drops its value. So every value the
pages share (the store and its settings, the reviewer, the Inspect floor, the
judged set) has a plain copy here, under a key no widget uses, and the widgets
that show it are seeded from that copy before they are drawn.

Pages call ``seed(key, default)`` just before drawing a shared widget and
``keep(key, value)`` just after (``widget`` does both), and read a shared widget's
value on a page that does not draw it with ``value``; a value that is not a widget's
is read and written with ``recall`` and ``remember``.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

_PLAIN = "_shared_"
_PAGE = _PLAIN + "page"


def on_page(page: str) -> None:
    """Called by the navigation script before the page runs, with the page's url path
    (what `st.navigation` returned): the page this run draws."""
    st.session_state[_PAGE] = page


def page() -> str:
    """The page this run draws ("" for Inspect, at `/`)."""
    return str(st.session_state.get(_PAGE, ""))


def recall(name: str, default: Any = None) -> Any:
    """A shared value that is not a widget's (see ``remember``)."""
    return st.session_state.get(_PLAIN + name, default)


def remember(name: str, value: Any) -> None:
    st.session_state[_PLAIN + name] = value


def notes_to_say(name: str, *, again_next_run: bool = False) -> list[str]:
    """The notes remembered under `name`, to be said on this run and forgotten after
    it; with `again_next_run`, kept for the next run too (a shared link's first view,
    which the full page replaces a moment later, must not be the only place they are
    said)."""
    notes = recall(name, [])
    if not again_next_run:
        remember(name, [])
    return notes


def seed(key: str, default: Any) -> None:
    """Before drawing the widget keyed ``key``: give it the session's value.

    On the page that last drew it, the widget's own state is the newest word (the
    reviewer's last change, or a callback that set it) and is left alone. On any
    other page, or once Streamlit has dropped it, the widget gets the value kept
    by ``keep``; before anything was kept, ``default``."""
    state = st.session_state
    kept = state.get(_PLAIN + "widget_" + key)
    if kept is None:
        if key not in state:
            state[key] = default
        return
    value, page_drawn_on = kept
    if page_drawn_on != page() or key not in state:
        state[key] = value


def keep(key: str, value: Any) -> None:
    """After drawing the widget keyed ``key``: its value is the session's now."""
    st.session_state[_PLAIN + "widget_" + key] = (value, page())


def widget(draw: Any, key: str, default: Any, *args: Any, **kwargs: Any) -> Any:
    """Draw a shared widget: ``draw(*args, key=key, **kwargs)`` between ``seed`` and
    ``keep``, e.g. ``widget(st.sidebar.number_input, "k", 5, "k (results)")``."""
    seed(key, default)
    value = draw(*args, key=key, **kwargs)
    keep(key, value)
    return value


def value(key: str, default: Any) -> Any:
    """A shared widget's value on a page that may not draw it (Calibrate reads Inspect's
    floor): the copy ``keep`` made, else a value set before any page drew the widget,
    else ``default``."""
    kept = st.session_state.get(_PLAIN + "widget_" + key)
    return kept[0] if kept is not None else st.session_state.get(key, default)


def set_widget(key: str, value: Any) -> None:
    """Change a shared widget's value from code (a button's callback): the widget on
    this page and every other page that draws it show it."""
    st.session_state[key] = value
    keep(key, value)


def sync_url(wanted: dict[str, str]) -> None:
    """Make the address bar read ``wanted`` and nothing else, so a copied link
    reproduces the page; written only when it differs, as every write is a browser
    history entry."""
    if {key: st.query_params.get(key) for key in wanted} != wanted or set(st.query_params) - set(wanted):
        st.query_params.from_dict(wanted)


def first_run(name: str) -> bool:
    """True once per browser session for ``name`` (reading a link's parameters)."""
    flag = _PLAIN + "done_" + name
    if st.session_state.get(flag):
        return False
    st.session_state[flag] = True
    return True

