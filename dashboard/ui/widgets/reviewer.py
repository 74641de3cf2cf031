"""Who is labelling: one identity for the browser session, the same on every page.

In order:

- signed in (Streamlit authentication): the identity the provider vouched for;
- else the name given in this browser session, on the Label page's form or in
  Inspect's sidebar box (either shows the other's);
- else ``MEMLENS_REVIEWER``, the name a deployment gives labels when nobody signs in;
- else nobody yet: the pages ask before the first label, and no label is written
  under a made-up name.

Behind the password gate, ``MEMLENS_REVIEWERS`` (environment or st.secrets) is the
operator's list of reviewer names: a name given on a page must be on it (matched
case-insensitively, kept in the list's spelling), so a typo cannot become a new
reviewer. Signed in, the provider's identity is used as it is.
"""

from __future__ import annotations

import os

import streamlit as st

from dashboard.display import inert_markdown
from dashboard.labels.resolution import REVIEWERS_ENV, listed_spelling, parse_names
from dashboard.ui.widgets import held_controls
from dashboard.ui.widgets.access import logged_in_identity
from dashboard.ui.widgets.secret_lookup import secret_value

REVIEWER_ENV = "MEMLENS_REVIEWER"
REVIEWER_KEY = "label_reviewer"  # the name given in this session (plain state, no widget's)
INSPECT_BOX = "reviewer"  # Inspect's sidebar text box
LABEL_BOX = "label_reviewer_input"  # the Label page's form
_CHANGING = "_reviewer_changing"
_REFUSED = "_reviewer_refused"  # why the last name given was not taken
ASK_TEXT = "Who is labelling? Your name goes with every label you give, so agreement between reviewers can be measured."


def operator_list() -> list[str]:
    """MEMLENS_REVIEWERS: the names a reviewer may give (empty: any name)."""
    return parse_names(secret_value(REVIEWERS_ENV))


def current() -> str | None:
    """The identity labels carry now, or None when nobody has said who they are."""
    if identity := logged_in_identity():
        return identity
    name = (st.session_state.get(REVIEWER_KEY) or "").strip()
    if name:
        return name
    default = (os.environ.get(REVIEWER_ENV) or "").strip()
    listed = operator_list()
    if default and listed:
        return listed_spelling(default, listed)  # a deployment default off the list names nobody
    return default or None


def _name(name: str) -> None:
    name = name.strip()
    st.session_state.pop(_REFUSED, None)
    listed = operator_list()
    if name and listed:
        spelled = listed_spelling(name, listed)
        if spelled is None:
            st.session_state[_REFUSED] = (
                f"{name!r} is not on this deployment's list of reviewers ({REVIEWERS_ENV}): check the "
                "spelling, or ask the operator to add the name."
            )
            st.session_state.pop(REVIEWER_KEY, None)
            return
        name = spelled
    if name:
        st.session_state[REVIEWER_KEY] = name
    else:
        st.session_state.pop(REVIEWER_KEY, None)


def _show_refusal() -> None:
    if refused := st.session_state.get(_REFUSED):
        from dashboard.ui.widgets.errors import show_error

        show_error(refused)


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
    _show_refusal()
    return current()


def _set_from_form() -> None:
    if (st.session_state.get(LABEL_BOX) or "").strip():
        _name(st.session_state[LABEL_BOX])
        if st.session_state.get(REVIEWER_KEY):
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
    _show_refusal()
    with st.form("reviewer_form"):
        st.text_input("Your name", key=LABEL_BOX)
        st.form_submit_button("Start labelling", on_click=_set_from_form)
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises; this keeps the type checker honest
