"""Who may see memory text (who is labelling: ui/widgets/reviewer.py).

A page that shows memory text calls ``require_access()`` first:

- Streamlit authentication configured (an ``[auth]`` section in secrets.toml):
  the viewer must be logged in (``st.login``); their identity names their labels.
- else a password in ``MEMLENS_PASSWORD`` (environment or st.secrets): asked once
  per browser session; only a hash of it is kept in the session.
- else the page is open (the local demo).

The password is compared in constant time and never shown, logged or echoed.
Repeated wrong passwords from one client lock it out for a growing time
(dashboard/password_throttle.py); each failure is logged with the client's address,
never with what was typed.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math

import streamlit as st

from dashboard.password_throttle import FailureThrottle
from dashboard.ui.widgets.secret_lookup import secret_value

log = logging.getLogger(__name__)
# one for the server process: every session of one client shares its record
THROTTLE = FailureThrottle()

# navigation.py runs the gate, the account menu and the setting check on every page before
# the page's title. On a server where none of them has anything to say they import
# nothing more of memlens: the label cache, the database modules and the store
# registry (60-100 ms on a new server) wait until the page needs them.
PASSWORD_ENV = "MEMLENS_PASSWORD"
# The app database's setting (dashboard/database/connection.py LABELS_URL_ENV, which a
# test keeps equal), named here so that checking whether it is set imports nothing.
LABELS_URL_ENV = "MEMLENS_LABELS_URL"
_GRANTED = "_access_granted"


def auth_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets.toml at all
        return False


def logged_in_identity() -> str | None:
    """The signed-in user's e-mail (or name) when authentication is configured."""
    if not auth_configured():
        return None
    try:
        if st.user.is_logged_in:
            identity = st.user.get("email") or st.user.get("name")
            return str(identity) if identity else None
    except Exception:
        return None
    return None


def _digest(password: str) -> str:
    return hashlib.sha256(password.encode("utf-8")).hexdigest()


def _client() -> str:
    """The address the browser connects from; Streamlit gives none for localhost."""
    try:
        address = st.context.ip_address
    except Exception:  # no connection context (a bare script run)
        return "localhost"
    return address if isinstance(address, str) and address else "localhost"


def _check_password(password: str) -> None:
    entered = st.session_state.get("access_password") or ""
    st.session_state["access_password"] = ""  # never keep what was typed
    client = _client()
    wait = THROTTLE.wait(client)
    if wait > 0:
        # refused unread: a locked client learns nothing from trying again
        log.warning("memlens password: attempt from %s refused, locked for %.0f s more", client, wait)
        st.session_state["access_error"] = f"Too many wrong passwords: try again in {math.ceil(wait)} s."
        return
    if hmac.compare_digest(entered.encode("utf-8"), password.encode("utf-8")):
        THROTTLE.succeeded(client)
        st.session_state[_GRANTED] = _digest(password)
        st.session_state.pop("access_error", None)
        return
    failures, locked = THROTTLE.failed(client)
    log.warning("memlens password: wrong password from %s (%d in a row; locked for %g s)", client, failures, locked)
    st.session_state["access_error"] = "Wrong password." + (
        f" Too many wrong passwords: try again in {math.ceil(locked)} s." if locked else ""
    )


def require_access() -> None:
    """Stop the page unless the viewer may see memory text (see the module doc)."""
    if auth_configured():
        if logged_in_identity():
            return
        st.info("This page shows memory text. Sign in to continue.")
        st.button("Sign in", key="access_login", on_click=st.login)
        from dashboard.ui.widgets.sign_in_return import remember_page

        remember_page()  # sign-in comes back to the root: come back here instead
        st.stop()
    password = secret_value(PASSWORD_ENV)
    if not password:
        return
    # A hash, not the password, marks the session; changing the password locks it again.
    if st.session_state.get(_GRANTED) == _digest(password):
        return
    st.info("This page shows memory text. Enter the memlens password to continue.")
    with st.form("access_form"):
        st.text_input("Password", type="password", key="access_password")
        st.form_submit_button("Unlock", on_click=_check_password, args=(password,))
    if error := st.session_state.get("access_error"):
        from dashboard.ui.widgets.errors import show_error

        show_error(error)
    st.stop()


def account_menu() -> None:
    """Who is signed in, and a Sign out button (``st.logout``); navigation.py draws it
    once per run, after the gate."""
    identity = logged_in_identity()
    if identity:
        from dashboard.display import code_span

        # Said once, here, for every page: labels carry this identity (ui/widgets/reviewer.py
        # adds no second line). A code span keeps it inert without the word joiner
        # inert_markdown puts after '@' (no autolink), so the address reads and copies as given.
        st.sidebar.caption(f"Signed in as {code_span(identity)}; your labels carry this identity.")
        st.sidebar.button("Sign out", key="access_logout", on_click=st.logout)
        from dashboard.ui.widgets.sign_in_return import return_to_page

        return_to_page()


def show_setting_errors() -> None:
    """A deployment setting that cannot work (MEMLENS_LABELS_URL naming no database
    memlens opens), said on every page, not only where labels are read: otherwise
    labels would silently stop being shared."""
    if not secret_value(LABELS_URL_ENV):
        return  # labels.sqlite in the data directory: nothing to check
    from dashboard.ui.widgets import cache
    from dashboard.ui.widgets.errors import show_error

    if problem := cache.labels_setting_error():
        show_error(problem)
