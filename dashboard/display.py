"""How untrusted memory text is shown: clipped, and with Markdown made inert. Pure."""

from __future__ import annotations

import re

DEFAULT_TEXT_LIMIT = 2_000
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def clip_text(text: str, limit: int = DEFAULT_TEXT_LIMIT) -> tuple[str, bool]:
    """The first `limit` characters of `text`, and whether anything was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit] + "…", True


def inert_markdown(text: str) -> str:
    """Escape every character Markdown (or Streamlit's HTML-free renderer) acts on,
    so a memory reading `<script>` or `**bold**` is shown as those characters."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text).replace("\n", "  \n")
