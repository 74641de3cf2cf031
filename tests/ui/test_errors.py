"""Errors on a page are drawn one way (dashboard/ui/widgets/errors.py): a store's message that
holds markup is shown as the characters it is made of, in the common wording.

A store's text reaches the page through its error messages as well as its results: a
server's error body, a file's line, a driver's message. markdown-it with raw HTML
allowed stands in for the browser's Markdown, as in test_hostile_inspect."""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_text import error_texts
from streamlit.testing.v1 import AppTest

from dashboard.display import WORD_JOINER

RENDER = MarkdownIt("commonmark", {"html": True})
TAGS = re.compile(r"<[^>]+>")
HOSTILE = "**bold** <b>tag</b> :material/home: [link](https://evil.example) www.evil.example\n# heading"


def page():
    from connectors.base import BadResponse
    from dashboard.ui.widgets.errors import show_error, show_store_error

    show_store_error(BadResponse("**bold** <b>tag</b> :material/home: [link](https://evil.example) www.evil.example\n# heading"))
    show_error("The label database cannot be read: it said *no*.")


def test_a_store_error_is_drawn_as_its_characters_in_the_common_wording():
    at = AppTest.from_function(page).run()
    assert not at.exception
    assert error_texts(at) == [f"Cannot open the store: {HOSTILE}".replace("\n", "  \n"),
                               "The label database cannot be read: it said *no*."]
    rendered = RENDER.render(at.error[0].value)
    # No element, link or heading comes from the store's words; a reader sees them all.
    assert not re.search(r"<(b|strong|em|a|h1)\b", rendered), rendered
    seen = html.unescape(TAGS.sub("", rendered)).replace(WORD_JOINER, "")
    for part in ("**bold**", "<b>tag</b>", ":material/home:", "[link](https://evil.example)", "# heading"):
        assert part in seen, (part, seen)


ROOT = Path(__file__).resolve().parents[2]
# The one list drawn as Markdown on purpose: each violation in it is inert already.
MARKDOWN_ERRORS = {("dashboard/ui/widgets/rerank_panel.py", "show_pasted_ranking")}


def error_calls(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, enclosing function) of every `<anything>.error(...)` call."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "error":
            found.append((node.lineno, function))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "<module>")
    return found


def test_pages_draw_errors_only_through_the_errors_module():
    direct = []
    for path in sorted([*(ROOT / "dashboard/ui").rglob("*.py"), *(ROOT / "dashboard/views").glob("*.py")]):
        where = str(path.relative_to(ROOT))
        if where == "dashboard/ui/widgets/errors.py":
            continue
        for line, function in error_calls(ast.parse(path.read_text(encoding="utf-8"))):
            if (where, function) not in MARKDOWN_ERRORS:
                direct.append(f"{where}:{line} in {function}")
    assert not direct, "draw errors with dashboard.ui.widgets.errors.show_error / show_store_error:\n" + "\n".join(direct)
