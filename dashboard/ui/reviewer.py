"""Who is labelling: one identity for the browser session, the same on every page.

In order:

- signed in (Streamlit authentication): the identity the provider vouched for;
- else the name given in this browser session, on the Label page's form or in
  Inspect's sidebar box (either shows the other's);
- else ``MEMLENS_REVIEWER``, the name a deployment gives labels when nobody signs in;
- else nobody yet: the pages ask before the first label, and no label is written
  under a made-up name.
"""

from __future__ import annotations

import os

import streamlit as st

from dashboard.display import inert_markdown
from dashboard.ui import held_controls
from dashboard.ui.access import logged_in_identity

REVIEWER_ENV = "MEMLENS_REVIEWER"
REVIEWER_KEY = "label_reviewer"  # the name given in this session (plain state, no widget's)
INSPECT_BOX = "reviewer"  # Inspect's sidebar text box
LABEL_BOX = "label_reviewer_input"  # the Label page's form
_CHANGING = "_reviewer_changing"
ASK_TEXT = "Who is labelling? Your name goes with every label you give, so agreement between reviewers can be measured."


def current() -> str | None:
    """The identity labels carry now, or None when nobody has said who they are."""
    if identity := logged_in_identity():
        return identity
    name = (st.session_state.get(REVIEWER_KEY) or "").strip()
    return name or (os.environ.get(REVIEWER_ENV) or "").strip() or None


def _name(name: str) -> None:
    name = name.strip()
    if name:
        st.session_state[REVIEWER_KEY] = name
    else:
        st.session_state.pop(REVIEWER_KEY, None)


def _typed_in_sidebar() -> None:
    _name(st.session_state.get(INSPECT_BOX) or "")


def sidebar_box() -> str | None:
    """Inspect's sidebar `reviewer` box: shows the session's reviewer (given on any
    page) and changes it for every page. Signed in, the identity instead."""
    if identity := logged_in_identity():
        return identity  # access.account_menu already says who is signed in, on every page
    if held_controls.holding():
        return current()  # a shared link's first view: the box is drawn on the next run
    name = current() or ""
    # Seeded on every run from the session's name: the box is the Inspect page's
    # widget, and the name may have been given on Label since.
    if st.session_state.get(INSPECT_BOX) != name:
        st.session_state[INSPECT_BOX] = name
    st.sidebar.text_input(
        "Reviewer",
        key=INSPECT_BOX,
        on_change=_typed_in_sidebar,
        placeholder="your name, for labels",
        help="Your name goes with every label you give; the same on every page of this browser session.",
    )
    return current()


def _set_from_form() -> None:
    if (st.session_state.get(LABEL_BOX) or "").strip():
        _name(st.session_state[LABEL_BOX])
        st.session_state.pop(_CHANGING, None)


def _change() -> None:
    st.session_state[_CHANGING] = True
    st.session_state[LABEL_BOX] = current() or ""


def require() -> str:
    """The identity labels carry, asked once per browser session when there is none
    (the page stops until a name is given); "Change reviewer" asks again."""
    identity = logged_in_identity()
    if identity:
        return identity  # access.account_menu already says who is signed in, on every page
    name = current()
    if name and not st.session_state.get(_CHANGING):
        st.sidebar.caption(f"Labelling as **{inert_markdown(name)}**")
        st.sidebar.button("Change reviewer", key="label_change_reviewer", on_click=_change)
        return name
    st.info(ASK_TEXT)
    with st.form("reviewer_form"):
        st.text_input("Your name", key=LABEL_BOX)
        st.form_submit_button("Start labelling", on_click=_set_from_form)
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises; this keeps the type checker honest
