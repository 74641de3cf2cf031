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


def table_rows(markdown: object) -> list[dict[str, str]]:
    """The rows of a Markdown table as a reader sees them: header name to cell text."""
    from markdown_it import MarkdownIt

    rows: list[list[str]] = []
    for token in MarkdownIt("commonmark").enable("table").parse(str(markdown)):
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows:
            text = "".join(child.content for child in token.children or [] if child.type in ("text", "text_special"))
            rows[-1].append(text.replace(WORD_JOINER, ""))
    if not rows:
        return []
    header, *body = rows
    return [dict(zip(header, row, strict=True)) for row in body]


def markdown_table(at) -> list[dict[str, str]]:
    """The first Markdown table an AppTest page draws, as `table_rows` reads it (a
    shared link's first view draws its hits so: dashboard/ui/pages/inspect.py)."""
    for element in at.markdown:
        if rows := table_rows(element.value):
            return rows
    raise AssertionError("no Markdown table on the page")
