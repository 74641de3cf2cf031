"""memlens: `streamlit run dashboard/app.py`. Builds the navigation and nothing else."""

import sys
from pathlib import Path

# `streamlit run dashboard/app.py` puts dashboard/ on sys.path, not the project root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import streamlit as st  # noqa: E402

st.set_page_config(page_title="memlens", page_icon="🔎", layout="wide")
PAGES = Path(__file__).parent / "pages"
st.navigation(
    [
        st.Page(PAGES / "inspect.py", title="Inspect", icon="🔎", default=True, url_path="inspect"),
        st.Page(PAGES / "calibrate.py", title="Calibrate", icon="📏", url_path="calibrate"),
        st.Page(PAGES / "label.py", title="Label", icon="🏷️", url_path="label"),
        st.Page(PAGES / "quality.py", title="Quality", icon="🎯", url_path="quality"),
        st.Page(PAGES / "browse.py", title="Browse", icon="🗂️", url_path="browse"),
        st.Page(PAGES / "compare.py", title="Compare", icon="⚖️", url_path="compare"),
    ]
).run()
