"""memlens's pages: the script Streamlit runs for every visit (dashboard/app.py serves
it). Builds the navigation and nothing else; the pages are its neighbours here."""

import sys
from pathlib import Path

# Streamlit puts the script's folder on sys.path, not the project root.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamlit as st

# Material icons, not emoji: validating an emoji loads Streamlit's emoji catalogue
# (0.1-0.4 s), and this runs before the first paint.
st.set_page_config(page_title="memlens", page_icon=":material/search:", layout="wide")
PAGES = Path(__file__).parent

# Streamlit serves the default page at `/` only: a link to the default page's own
# name (`/inspect`) names no page, and Streamlit shows its "Page not found" dialog over
# the page. So Inspect lives at `/` (where shared `/?query=...` links point) and
# `/inspect` is a hidden page that forwards there with the link's parameters.
INSPECT = st.Page(PAGES / "inspect.py", title="Inspect", icon=":material/search:", default=True, url_path="")


def forward_to_inspect() -> None:
    st.switch_page(INSPECT, query_params=st.query_params.to_dict())


page = st.navigation(
    [
        INSPECT,
        st.Page(forward_to_inspect, title="Inspect", url_path="inspect", visibility="hidden"),
        st.Page(PAGES / "calibrate.py", title="Calibrate", icon=":material/straighten:", url_path="calibrate"),
        st.Page(PAGES / "label.py", title="Label", icon=":material/label:", url_path="label"),
        st.Page(PAGES / "quality.py", title="Quality", icon=":material/target:", url_path="quality"),
        st.Page(PAGES / "browse.py", title="Browse", icon=":material/folder_open:", url_path="browse"),
        st.Page(PAGES / "compare.py", title="Compare", icon=":material/balance:", url_path="compare"),
        st.Page(PAGES / "monitor.py", title="Monitor", icon=":material/monitoring:", url_path="monitor"),
    ]
)
# Every page, deep links included, is behind the password or sign-in when one is
# configured; a page added later cannot forget it.
from dashboard.ui.widgets import session  # noqa: E402
from dashboard.ui.widgets.access import account_menu, require_access, show_setting_errors  # noqa: E402

session.on_page(page.url_path)

require_access()
account_menu()
show_setting_errors()
page.run()
