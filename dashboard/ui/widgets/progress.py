"""A progress bar for long work in the page's own script run.

Streamlit's bar slides to each new value with a CSS transition. While an evaluation
runs, the bar moves about three times a second, and in a browser without a GPU each
slide is painted in software: on a 2-core machine that took about a tenth of a core
from the server doing the work (benchmarks/RESULTS.md, the evaluation notes). The
bar here jumps to each value instead; what it shows is the same."""

from __future__ import annotations

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

# A style-only st.html goes to the page's event container: it takes no room.
_NO_SLIDE = "<style>[data-testid='stProgress'] * {transition: none !important; animation: none !important}</style>"


def progress_bar(value: float, text: str) -> DeltaGenerator:
    """st.progress(value, text=text), drawn without the slide between values."""
    st.html(_NO_SLIDE)
    return st.progress(value, text=text)
