"""A shared link's first view: the result before the page's controls.

The browser shows the elements of one run together, once it has loaded the code of
every kind among them. In a second browser session the result waited for the code of
every kind of control on the page (the sidebar's selectboxes, text and number inputs
and checkbox, the query form and its button, the floor slider), and came 0.9-1.0 s
after Streamlit's own floor (benchmarks/RESULTS.md, issue 24). So on a link's first
run the page draws no control at all: each control's value is read from the session,
where the link's values were written (`drawn`), the query runs with them, and the
result goes out alone. The run the page asks for once the result is painted
(pages/inspect.py, ask_for_the_rest) draws the controls. A widget created under a key the
session already holds shows that value, so they come back as the link set them.

Public Streamlit API only: nothing here reaches into how a run sends its elements,
so a Streamlit release cannot break the first view.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import streamlit as st

from dashboard.ui.widgets import session

# The page whose controls are held, for the rest of the run that set it: a flag of the
# session alone would hold another page's controls if the reviewer moved on before the
# Inspect page asked for the rest.
_HELD_ON = "_controls_held_on_page"


def hold() -> None:
    """From now until `release`, this page's controls are not drawn."""
    st.session_state[_HELD_ON] = session.page()


def release() -> None:
    """Draw the controls again."""
    st.session_state.pop(_HELD_ON, None)


def holding() -> bool:
    state = st.session_state
    return _HELD_ON in state and state[_HELD_ON] == session.page()


def drawn(draw: Callable[..., Any]) -> Callable[..., Any]:
    """The widget function `draw`; while the controls are held, a stand-in taking the
    same arguments that draws nothing and returns the value the session holds under
    the widget's key (what the widget would return once drawn)."""
    if not holding():
        return draw

    def value_in_session(*_args: Any, key: str, **_kwargs: Any) -> Any:
        return st.session_state.get(key)

    return value_in_session


def section(open_section: Callable[..., AbstractContextManager[Any]], *args: Any, **kwargs: Any) -> AbstractContextManager[Any]:
    """An expander or form around controls (`section(st.form, "query_form")`); while
    the controls are held, nothing is drawn and the controls inside draw nothing
    either."""
    return nullcontext() if holding() else open_section(*args, **kwargs)

