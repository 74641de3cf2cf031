"""What a reader sees of text a page drew inert (dashboard.display.inert_markdown, as
every error box is drawn): the Markdown escapes and the invisible word joiners gone.
Tests compare what a user reads, and a secret must not be found in it either way."""

from __future__ import annotations

import re

from dashboard.display import WORD_JOINER


def plain(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown).replace(WORD_JOINER, "")


def error_texts(at) -> list[str]:
    """Every error box of the page as its reader sees it."""
    return [plain(e.value) for e in at.error]
