"""How untrusted memory text is shown: clipped, and with Markdown made inert; the
hits table the Inspect and Browse pages draw. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from connectors.base import Hit

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_TEXT_LIMIT = 2_000
TABLE_TEXT_CHARS = 300  # memory text in a table cell: enough to recognise it
# How many decimals a page shows of a score or score component: 0.587 and 0.58 are
# different answers to "does it pass a 0.585 floor?", a fourth decimal is noise.
SHOWN_DECIMALS = 3
SCORE_FORMAT = f"%.{SHOWN_DECIMALS}f"  # the printf form Streamlit's number columns take
MISSING_CELL = "-"  # what a table shows where a value is missing (Streamlit's own default is "None")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")
# What a link's destination keeps as it is; the rest (spaces, brackets, <, >,
# backslashes, backticks, quotes) is percent-encoded. A URL built by urlencode is
# left unchanged.
_URL_SAFE = "/?#&=%:@!$*+,;~"


def clip_text(text: str, limit: int = DEFAULT_TEXT_LIMIT) -> tuple[str, bool]:
    """The first `limit` characters of `text`, and whether anything was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit] + "…", True


# Streamlit's Markdown makes a picture or a link of some plain text even when every
# special character in it is escaped: `:name:` shortcodes (emoji, Material icons, its
# logo), bare URLs, www. addresses and e-mail addresses. An invisible word joiner
# after the colon, the "www" or the "@" stops each of them.
_AUTO_MARKUP = re.compile(r":(?=[\w+\-]|//)|(?i:\bwww)(?=\.)|@(?=\w)")
WORD_JOINER = "\u2060"


def inert_markdown(text: str) -> str:
    """Escape every character Markdown (or Streamlit's HTML-free renderer) acts on,
    so a memory reading `<script>`, `**bold**`, `:material/home:` or a URL is shown as
    those characters (with an invisible word joiner inside shortcodes and addresses)."""
    text = _AUTO_MARKUP.sub(lambda match: match.group(0) + WORD_JOINER, text)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text).replace("\n", "  \n")


def bounded_json(value: Any, *, max_items: int = 100, max_chars: int = DEFAULT_TEXT_LIMIT) -> tuple[Any, bool]:
    """A copy of decoded JSON small enough to draw: lists and objects cut to their
    first `max_items` entries (a marker says how many more there were), strings cut to
    `max_chars`. Returns the copy and whether anything was cut."""
    if isinstance(value, str):
        return clip_text(value, max_chars)
    if isinstance(value, dict):
        items = list(value.items())
        bounded, cut = {}, len(items) > max_items
        for key, item in items[:max_items]:
            bounded[str(key)], item_cut = bounded_json(item, max_items=max_items, max_chars=max_chars)
            cut |= item_cut
        if len(items) > max_items:
            bounded["…"] = f"{len(items) - max_items:,} more keys not shown"
        return bounded, cut
    if isinstance(value, (list, tuple)):
        shown, cut = [], len(value) > max_items
        for item in value[:max_items]:
            bounded_item, item_cut = bounded_json(item, max_items=max_items, max_chars=max_chars)
            shown.append(bounded_item)
            cut |= item_cut
        if len(value) > max_items:
            shown.append(f"… {len(value) - max_items:,} more items not shown")
        return shown, cut
    return value, False


def code_span(text: str) -> str:
    """`text` as one Markdown code span whatever backticks it holds: the fence is one
    backtick longer than the longest run inside, and a space pads an edge backtick
    (CommonMark strips one space from each side of such a span)."""
    # A line ending inside a code span is read as a space, so this shows the same; but a
    # blank line would end the paragraph first and leave the rest to be read as Markdown.
    text = " ".join(text.splitlines()) if "\n" in text or "\r" in text else text
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" or (text[:1] == " " and text[-1:] == " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def inert_list(items: Iterable[object]) -> str:
    """A Markdown bullet list of `items`, each on one line and inert (a line break
    inside one would end its bullet and start text read as Markdown)."""
    return "\n".join(f"- {inert_markdown(' '.join(str(item).split()))}" for item in items)


def inert_link(text: str, url: str) -> str:
    """A Markdown link showing `text` inert, to `url` when it is a path on this server
    or an http(s) address (anything else, a `javascript:` one say, is shown as the
    text alone). Characters that would end the destination are percent-encoded."""
    lowered = url.strip().lower()
    on_server = url.startswith("/") and not url.startswith("//")
    if not (on_server or lowered.startswith(("http://", "https://"))):
        return inert_markdown(text)
    return f"[{inert_markdown(text)}]({quote(url, safe=_URL_SAFE)})"


def _cell(text: str) -> str:
    """One Markdown table cell: on one line (a line break would end the row) and inert."""
    return inert_markdown(" ".join(text.split()))


def hits_markdown_table(hits: list[Hit], kept_ids: set[str]) -> str:
    """The hits as a Markdown table: rank, id, status, score, clipped text. Drawn by
    Streamlit's Markdown element, whose code every page has loaded already, where the
    interactive table's grid code is half a megabyte to fetch and run first."""
    lines = ["| rank | memory id | status | score | text |", "|---:|---|---|---:|---|"]
    for hit in hits:
        score = MISSING_CELL if hit.score is None else f"{hit.score:.{SHOWN_DECIMALS}f}"
        status = "kept" if hit.memory_id in kept_ids else "dropped"
        text = clip_text(hit.text, TABLE_TEXT_CHARS)[0]
        lines.append(f"| {hit.rank} | {_cell(hit.memory_id)} | {status} | {score} | {_cell(text)} |")
    return "\n".join(lines)


def hits_frame(hits: list[Hit], kept_ids: set[str] | None = None, *, breakdown: bool = False) -> pd.DataFrame:
    """One row per hit: rank, id, clipped text, score (and the raw score when the
    connector mapped it). With `breakdown`, a column per score component any hit
    reports; with `kept_ids`, a status column saying whether the floor kept it."""
    components: list[str] = []
    if breakdown:
        for hit in hits:
            components += [c for c in hit.breakdown if c not in components]
    rows = []
    for hit in hits:
        row: dict[str, Any] = {
            "rank": hit.rank,
            "memory id": hit.memory_id,
            "text": clip_text(hit.text, TABLE_TEXT_CHARS)[0],
            "score": hit.score,
        }
        if hit.raw_score is not None and hit.raw_score != hit.score:
            row["raw score"] = hit.raw_score
        row.update({c: hit.breakdown.get(c) for c in components})
        if kept_ids is not None:
            row["status"] = "kept" if hit.memory_id in kept_ids else "dropped"
        rows.append(row)
    # pandas is imported here, not with the module: the pages import this module
    # before their first paint (see dashboard/views/navigation.py), and pandas takes 0.3 s or more.
    import pandas as pd

    return pd.DataFrame(rows)
