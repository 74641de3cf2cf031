"""A shared link's first view: the result, with the page's controls left as empty places.

The browser shows an element only once it has loaded and run the code for its kind,
and it shows the elements of one run together, once the code of all of them is in: in
a second browser session the result waited for the code of every kind of control on
the page (the sidebar's selectboxes, text and number inputs and checkbox, the query
form and its button, the floor slider), and came 0.9-1.0 s after Streamlit's own
floor (benchmarks/RESULTS.md, issue 24). So on a link's first run the page runs its controls as on any run (their
values are the link's, and the query runs with them), but each reaches the browser as
an empty element in the same place. The next run, which the page asks for once the
result is painted (inspect_view.ask_for_the_rest), draws them.

A widget tells the browser its value only on the run that set it from code (a link's
value is set that way), so the next run sets the held widgets' values again
(`values_again`): without it the controls came back empty.

This wraps the run's `enqueue` (Streamlit has no switch for it): the one place where
every element of a run passes on its way to the browser. The wrapper is the run's
own, so a run that ends early (another page, an error) leaves the next one as it is.
"""

from __future__ import annotations

import streamlit as st
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.state.common import user_key_from_element_id

# The element kinds that are controls; the code of each is its own download.
CONTROL_KINDS = frozenset(
    {
        "button",
        "checkbox",
        "multiselect",
        "number_input",
        "radio",
        "selectbox",
        "slider",
        "text_area",
        "text_input",
    }
)
# The kinds whose value code may set (Streamlit refuses it for a button's).
VALUE_KINDS = frozenset(
    {"checkbox", "color_picker", "date_input", "multiselect", "number_input", "radio", "selectbox", "slider"}
    | {"text_area", "text_input", "time_input"}
)
SIDEBAR = 1  # the first index of an element's path: 0 is the main area, 1 the sidebar


def as_placeholder(msg: ForwardMsg) -> str | None:
    """Make a control's element, and every element and block of the sidebar, an empty
    element or a plain container at the same path; anything else is left as it is.
    (A missing index is refused by the browser: the place must stay filled.)
    Returns the key of a widget so held whose value code may set, else None."""
    if msg.WhichOneof("type") != "delta":
        return None
    delta = msg.delta
    in_sidebar = msg.metadata.delta_path[:1] == [SIDEBAR]
    kind = delta.WhichOneof("type")
    if kind == "new_element":
        element = delta.new_element.WhichOneof("type")
        if not (in_sidebar or element in CONTROL_KINDS):
            return None
        key = user_key_from_element_id(getattr(delta.new_element, element).id) if element in VALUE_KINDS else None
        delta.new_element.Clear()
        delta.new_element.empty.SetInParent()
        return key
    if kind == "add_block" and (in_sidebar or delta.add_block.WhichOneof("type") == "form"):
        delta.add_block.Clear()
        delta.add_block.flex_container.SetInParent()
    return None


def send_controls_as_placeholders() -> list[str]:
    """For the rest of this run, the controls reach the browser as empty places.
    Returns the list (filled as the run goes on) of the held widgets' keys, for the
    next run's `values_again`."""
    held: list[str] = []
    ctx = get_script_run_ctx()
    if ctx is None:
        return held
    this_run = ctx.cursors  # a new dict at the start of every run
    # The class's own method bound to this context, not `ctx.enqueue`: that may be an
    # earlier run's wrapper, and wrappers must not pile up across runs.
    send = type(ctx).enqueue.__get__(ctx)

    def enqueue(msg: ForwardMsg) -> None:
        if ctx.cursors is this_run and (key := as_placeholder(msg)) is not None:
            held.append(key)
        send(msg)

    ctx.enqueue = enqueue  # type: ignore[method-assign]
    return held


def values_again(keys: list[str]) -> None:
    """Before the widgets are drawn: set each held widget's value again, the value it
    has, so that it reaches the browser with the widget."""
    state = st.session_state
    for key in keys:
        if key in state:
            state[key] = state[key]
