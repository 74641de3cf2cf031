"""Reading a secret: st.secrets first, then the environment.

A module of its own, importing nothing of memlens: the access gate reads the password
with it on every page before the page's title, where the sidebar's imports (the store
registry, the caches, the label database) would hold the first paint back."""

from __future__ import annotations

import os

import streamlit as st


def secret_value(env_name: str | None) -> str | None:
    """A secret from st.secrets, else the environment; None when neither has it."""
    if not env_name:
        return None
    try:
        if env_name in st.secrets:
            return str(st.secrets[env_name])
    except Exception:  # no secrets.toml at all: that is the common case, not an error
        pass
    return os.environ.get(env_name) or None
