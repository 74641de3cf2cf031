"""The one redaction every message goes through before anyone sees it.

``redact(value, secrets)`` replaces

- every known secret (an API key, a database password) wherever it appears,
- the password of any URL written ``scheme://user:password@host`` (multi-host
  URLs such as ``postgresql://u:pw@h1:5432,h2:5433/db`` included),
- the value of ``password=``, ``api_key=``, ``token=`` style parameters, in a query
  string or a ``key=value`` connection string,

with ``***``, in strings, dict keys and values and lists. It never raises: a URL it
cannot parse is rewritten by pattern, not parsed.

Redact first, cut afterwards: a secret that straddles a cut would no longer match
and its prefix would survive. ``exception_text`` gives an exception's whole chain
(``__cause__`` / ``__context__``) redacted, for pages and logs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "***"

# user:password@ in any scheme://... ; stops at the first "@" so "u:p@h1,h2" works.
# One slash is enough: a URL passed where a file path was expected comes back from
# pathlib as "postgresql:/user:pw@host/db".
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*:/{1,2}[^\s:/@]*):(?P<secret>[^\s@/]*)@")
_SECRET_PARAMS = re.compile(
    r"(?P<head>\b(?:password|passwd|pwd|api[_-]?key|access[_-]?token|token|secret)\s*=\s*)"
    r"(?P<secret>'[^']*'|\"[^\"]*\"|[^\s&;,'\"]+)",
    re.IGNORECASE,
)


def _redact_text(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}:{REDACTED}@", text)
    return _SECRET_PARAMS.sub(lambda m: f"{m['head']}{REDACTED}", text)


def redact(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """`value` with secrets, URL passwords and password-like parameters replaced by ***."""
    # Longest first, so a secret that contains another is replaced whole.
    known = sorted({s for s in secrets if s}, key=len, reverse=True)
    return _walk(value, known)


def _walk(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return _redact_text(value, secrets)
    if isinstance(value, dict):
        return {_walk(k, secrets): _walk(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(v, secrets) for v in value]
    return value


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    return str(redact(str(text), secrets))


def exception_text(exc: BaseException, secrets: Iterable[str | None] = (), *, limit: int = 5) -> str:
    """``Type: message`` for the exception and up to ``limit`` causes, redacted."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(parts) < limit:
        seen.add(id(current))
        message = str(current)
        parts.append(f"{type(current).__name__}: {message}" if message else type(current).__name__)
        current = current.__cause__ or current.__context__
    return redact_text(" <- ".join(parts), secrets)


def shorten(text: str, limit: int) -> str:
    """Whitespace collapsed and cut to ``limit`` characters (call after redacting)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def terminal_line(text: Any) -> str:
    """``text`` as one line that a terminal shows and does not obey: control
    characters (escape sequences, bell, backspace, newlines), bidi overrides and
    line separators are written as escapes (``\\x1b``, ``\\n``, ``\\u202e``)."""
    return "".join(_terminal_char(char) for char in str(text))


# C0 and C1 controls and DEL, but not the tab, line feed and carriage return that
# multi-line output and progress lines use.
_CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: str) -> str:
    """``text`` with its lines kept and every other control character (escape
    sequences, bell, backspace, bidi overrides) written as an escape: what the
    command line writes to a terminal."""
    return _CONTROL_IN_TEXT.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def _terminal_char(char: str) -> str:
    if char.isprintable() or char == " ":
        return char
    return char.encode("unicode_escape").decode("ascii")
