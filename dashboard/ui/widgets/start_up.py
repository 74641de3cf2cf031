"""Getting the server ready before it answers: the embedding model, the default
store, and the modules a shared link's first run imports.

dashboard/app.py runs `get_ready` in Streamlit's start-up hook (the lifespan of
st.App), before the server answers its health check. A server that answers is then
one that shows a link's first result as fast as it shows a second visitor's: the
first visitor no longer pays the model's start (0.4-0.7 s), the store's open and the
imports (benchmarks/RESULTS.md, issue 24). From process start to that first result
nothing is saved; the wait moves from the visitor to the start-up, where a
deployment's readiness check waits for it.

Nothing here may keep the server from starting: a step that fails is logged and
left for the page that needs it, which shows the error as it always has.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable

from streamlit.logger import get_logger

# Streamlit's logger: its lines go where the server's own go, at its log level.
log = get_logger(__name__)

# What a `?query=` link's first run imports after Streamlit's own modules: the
# navigation's access gate, the Inspect page's first view, and the module that holds
# the caches. The rest of the page (charts, pandas, the judge's client) is imported
# by the follow-up run, once the result is on screen, and is left to it.
# tests/ui/test_start_up.py checks that the first run imports nothing more.
FIRST_RUN_MODULES = (
    "dashboard.ui.widgets.access",
    "dashboard.ui.widgets.cache",
    "dashboard.ui.widgets.sidebar",
    "dashboard.ui.widgets.session",
    "dashboard.ui.widgets.reviewer",
    "dashboard.ui.widgets.errors",
    "dashboard.ui.pages.inspect",
    "dashboard.ui.pages.inspect_labels",
    "dashboard.ui.pages.inspect_panels",
    "dashboard.ui.widgets.score_notes",
    "dashboard.floor",
)


def get_ready() -> dict[str, float]:
    """Open what the default store's first query needs; seconds per step done (a step
    that failed, or had nothing to do, is missing). Never raises."""
    steps: dict[str, Callable[[], bool]] = {
        "modules": _import_first_run_modules,
        "model": _open_model,
        "store": _open_default_store,
    }
    took: dict[str, float] = {}
    for name, step in steps.items():
        started = time.perf_counter()
        try:
            done = step()
        except Exception as exc:  # the page that needs it shows it
            log.warning("memlens start-up: %s not ready (%s: %s); the page will say why", name, type(exc).__name__, exc)
            continue
        if done:
            took[name] = time.perf_counter() - started
    log.info("memlens start-up: %s", ", ".join(f"{name} ready in {s:.2f} s" for name, s in took.items()))
    return took


def _import_first_run_modules() -> bool:
    for module in FIRST_RUN_MODULES:
        importlib.import_module(module)
    return True


def _open_model() -> bool:
    """The packaged model, when the default store embeds its queries with it."""
    from connectors.embedding import model_loader
    from dashboard.ui.widgets.sidebar import default_store, uses_packaged_model

    if not uses_packaged_model(default_store()):
        return False
    model_loader.encoder(None)
    return True


def _open_default_store() -> bool:
    """The default store with the settings a first visit's sidebar gives it, opened as
    the sidebar opens it, so the page's first run finds it in the cache. Not when
    those settings depend on the visitor's session."""
    from dashboard.ui.widgets.sidebar import default_store, first_visit_settings, open_with_settings

    store = default_store()
    settings = first_visit_settings(store)
    if settings is None:
        return False
    open_with_settings(store, settings)
    return True
