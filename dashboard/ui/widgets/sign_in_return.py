"""Sign-in returns to the page asked for.

Streamlit's sign-in (``st.login``) always comes back to the app's root, so a
reviewer who opened `/label` landed on Inspect. The gate remembers the address in
the browser tab's sessionStorage (this origin and tab only; it survives the round
trip through the provider) and, once signed in, the root sends the browser on to
it. Only a path on this server is followed (a leading "/", never "//")."""

from __future__ import annotations

import streamlit as st

_KEY = "memlens-after-sign-in"

_REMEMBER = f"""<script>
try {{ sessionStorage.setItem("{_KEY}", window.location.pathname + window.location.search); }} catch (e) {{}}
</script>"""

_RETURN = f"""<script>
try {{
  const next = sessionStorage.getItem("{_KEY}");
  if (next !== null) {{
    sessionStorage.removeItem("{_KEY}");
    const here = window.location.pathname + window.location.search;
    if (next.startsWith("/") && !next.startsWith("//") && next !== here) {{ window.location.replace(next); }}
  }}
}} catch (e) {{}}
</script>"""


def remember_page() -> None:
    """Before the Sign in button: the address to come back to."""
    st.sidebar.html(_REMEMBER, unsafe_allow_javascript=True)


def return_to_page() -> None:
    """Signed in: go on to the remembered address, once."""
    st.sidebar.html(_RETURN, unsafe_allow_javascript=True)
