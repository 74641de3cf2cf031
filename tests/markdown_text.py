"""What a reader sees of Markdown the pages built with dashboard.display.inert_markdown:
the backslash escapes and the invisible word joiners taken out. Tests compare a page's
message with the words they expect through this."""

from __future__ import annotations

import re

from dashboard.display import WORD_JOINER

_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def seen(markdown: object) -> str:
    return _ESCAPE.sub(r"\1", str(markdown)).replace(WORD_JOINER, "")


def error_texts(at) -> list[str]:
    """Every error box of an AppTest page as its reader sees it."""
    return [seen(e.value) for e in at.error]
