"""A floor file (``memlens-floor.json``) uploaded on a page, read by the one floor-file
reader (dashboard/floor_config.py, ``FloorConfig.from_bytes``, through the inbound
boundary), its problems in an error box (ui/widgets/errors.py). Inspect and the
Quality page's misses apply what it holds: its rule that reads the whole turn, or
its floor."""

from __future__ import annotations

import hashlib
from typing import Any

import streamlit as st

from dashboard.floor_config import FloorConfig, FloorConfigError
from dashboard.ui.widgets.errors import show_error

HELP = (
    "The JSON Calibrate downloads (or `memlens calibrate --floor-config-out`). With a rule that reads the "
    "whole turn, each hit is kept or dropped by that rule, as the agent side decides it."
)


def uploaded_floor_file(key: str, container: Any = None) -> tuple[FloorConfig | None, bool]:
    """The floor file uploaded under ``key`` (None: none, or one that cannot be used,
    said in an error box), and whether it is new on this run (a page seeds its floor
    from a new file once; the reviewer's control moves it after). Read once per content."""
    where = container if container is not None else st
    upload = where.file_uploader("Floor file", type=["json"], key=key, help=HELP)
    memo_key = f"_floor_file_{key}"
    if upload is None:
        st.session_state.pop(memo_key, None)
        return None, False
    content = upload.getvalue()
    digest = hashlib.sha256(content).hexdigest()
    memo = st.session_state.get(memo_key)
    if memo is not None and memo[0] == digest:
        config, problem = memo[1], memo[2]
        new = False
    else:
        try:
            config, problem = FloorConfig.from_bytes(content, upload.name), None
        except FloorConfigError as exc:
            config, problem = None, str(exc)
        st.session_state[memo_key] = (digest, config, problem)
        new = config is not None
    if problem is not None:
        show_error(f"The floor file cannot be used: {problem}", container)
    return config, new
