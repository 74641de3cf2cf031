"""Keep every page behind app.py's navigation, even on a deep link.

Streamlit still honours its legacy "pages/ next to the main script" mode: until
some session has run app.py's st.navigation, a server started a moment ago
answers a link such as /label by running pages/label.py on its own, without
app.py, so the page gets the file-name sidebar and the narrow layout. DESIGN.md
puts the page scripts in dashboard/pages/, so each page calls
`through_app_navigation()` first: it switches the process to st.navigation mode
and reruns, and the rerun goes through app.py to the same page.
"""

from __future__ import annotations

import streamlit as st


def through_app_navigation() -> None:
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a Streamlit without the legacy mode has nothing to undo
        return
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()
