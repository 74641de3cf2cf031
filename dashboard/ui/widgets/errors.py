"""The one way a page draws an error.

What an error says often comes from outside: a store's message, a file's line, a
database driver's text. It is shown as the characters it is (``inert_markdown``), so
a message holding ``**``, ``<b>``, ``:material/home:`` or a URL draws no formatting,
icon or link. Pages call these instead of ``st.error`` so the wording of the common
cases is written once.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.display import inert_markdown

OPEN_THE_STORE = "open the store"


def store_error_text(error: object, action: str = OPEN_THE_STORE) -> str:
    """"Cannot open the store: <error>": what the page could not do (`action`), and
    the store's (or the database's) own message."""
    return f"Cannot {action}: {error}"


def show_error(message: object, container: Any = None) -> None:
    """An error box holding `message` as plain text, in `container` (a column, the
    sidebar; the page when None)."""
    (container if container is not None else st).error(inert_markdown(str(message)))


def show_store_error(error: object, action: str = OPEN_THE_STORE, container: Any = None) -> None:
    """The error of a store or database that failed: "Cannot <action>: <error>"."""
    show_error(store_error_text(error, action), container)
