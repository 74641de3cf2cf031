"""memlens: `streamlit run dashboard/app.py`.

Streamlit finds `app` below (an st.App) and serves dashboard/views/navigation.py, the
script every visit runs, with it. Its lifespan gets the server ready before the
server answers: the embedding model, the default store and the first view's modules
are open by the time a health check or a shared link gets an answer
(dashboard/ui/widgets/start_up.py says what and why).
"""

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

# `streamlit run dashboard/app.py` puts dashboard/ on sys.path, not the project root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import streamlit as st

from dashboard.ui.widgets.start_up import get_ready


@asynccontextmanager
async def get_ready_first(_app: st.App) -> AsyncIterator[None]:
    # On a thread: the model's start and the store's open would hold the event loop.
    await asyncio.to_thread(get_ready)
    yield


app = st.App(Path(__file__).parent / "views" / "navigation.py", lifespan=get_ready_first)
